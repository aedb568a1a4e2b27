from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import pytest
from prometheus_client import CollectorRegistry

from shared.kube import (
    AlreadyExists,
    Conflict,
    FakeClock,
    Forbidden,
    GroupVersionKind,
    KubeClient,
    KubeMetrics,
)
from shared.kube.clock import settle
from shared.kube.controller import Controller, Result
from shared.kube.errors import ServiceUnavailable
from shared.kube.informer import Informer
from shared.kube.observability import current_object_key, current_reconcile_id
from tests.unit.kube.conftest import make_client
from tests.unit.kube.fakeapi import FakeApi

CM = GroupVersionKind("", "v1", "ConfigMap")


class Probe:
    """A reconcile function that records calls and concurrency, and can be held open."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.active: dict[str, int] = {}
        self.max_active_per_key = 0
        self.max_active = 0
        self.gates: dict[str, asyncio.Event] = {}
        self.results: dict[str, list[Result | Exception]] = {}
        self.context: list[tuple[str | None, str | None]] = []

    async def __call__(self, key: str) -> Result | None:
        self.calls.append(key)
        self.context.append((current_object_key(), current_reconcile_id()))
        self.active[key] = self.active.get(key, 0) + 1
        self.max_active_per_key = max(self.max_active_per_key, self.active[key])
        self.max_active = max(self.max_active, sum(self.active.values()))
        try:
            gate = self.gates.get(key)
            if gate is not None:
                await gate.wait()
            outcomes = self.results.get(key)
            if outcomes:
                outcome = outcomes.pop(0)
                if isinstance(outcome, Exception):
                    raise outcome
                return outcome
            return None
        finally:
            self.active[key] -= 1


@contextlib.asynccontextmanager
async def started(controller: Controller) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(controller.run())
    await settle()
    try:
        yield task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_key_added_100_times_while_processing_is_reconciled_once_more_never_concurrently(
    clock: FakeClock,
) -> None:
    probe = Probe()
    probe.gates["ns/a"] = asyncio.Event()
    controller = Controller(name="c", reconcile=probe, clock=clock, workers=4)
    async with started(controller):
        controller.queue.add("ns/a")
        await settle()
        assert probe.calls == ["ns/a"]
        for _ in range(100):
            controller.queue.add("ns/a")
        await settle()
        assert probe.calls == ["ns/a"]  # three idle workers, yet nobody took the same key
        probe.gates["ns/a"].set()
        await settle()
        assert probe.calls == ["ns/a", "ns/a"]
        assert probe.max_active_per_key == 1


async def test_workers_bound_concurrency(clock: FakeClock) -> None:
    probe = Probe()
    gate = asyncio.Event()
    for key in "abcdef":
        probe.gates[key] = gate
    controller = Controller(name="c", reconcile=probe, clock=clock, workers=3)
    async with started(controller):
        for key in "abcdef":
            controller.queue.add(key)
        await settle()
        assert probe.max_active == 3
        gate.set()
        await settle()
        assert sorted(probe.calls) == list("abcdef")


async def test_results_requeue_after_and_errors_back_off(
    clock: FakeClock, registry: CollectorRegistry
) -> None:
    probe = Probe()
    probe.results["a"] = [Result.after(30)]
    probe.results["b"] = [RuntimeError("boom"), RuntimeError("boom")]
    probe.results["c"] = [Result.again()]
    controller = Controller(name="c", reconcile=probe, clock=clock, workers=2, metrics=KubeMetrics(registry))
    async with started(controller):
        for key in "abc":
            controller.queue.add(key)
        await settle()
        assert sorted(probe.calls) == ["a", "b", "c"]
        await clock.advance(1.0)  # b retried after 5ms then 10ms backoff, c after 5ms
        assert probe.calls.count("b") == 3
        assert probe.calls.count("c") == 2
        assert probe.calls.count("a") == 1
        await clock.advance(29.5)
        assert probe.calls.count("a") == 2
    sample = registry.get_sample_value
    assert sample("kueue_bridge_controller_runtime_reconcile_errors_total", {"controller": "c"}) == 2.0
    assert (
        sample(
            "kueue_bridge_controller_runtime_reconcile_total", {"controller": "c", "result": "requeue_after"}
        )
        == 1.0
    )
    assert (
        sample("kueue_bridge_controller_runtime_reconcile_total", {"controller": "c", "result": "requeue"})
        == 1.0
    )
    assert controller.queue.num_requeues("b") == 0  # forgotten after the success


async def test_a_conflict_is_requeued_with_backoff_counted_and_logged_at_debug_not_as_a_failure(
    clock: FakeClock, registry: CollectorRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    probe = Probe()
    stale = Conflict(
        code=409, message='workloads "w" is modified; please apply your changes to the latest version'
    )
    probe.results["ns/later"] = [stale, AlreadyExists(code=409, message="exists")]
    controller = Controller(name="c", reconcile=probe, clock=clock, workers=1, metrics=KubeMetrics(registry))
    caplog.set_level(logging.DEBUG, logger="shared.kube.controller")
    async with started(controller):
        controller.queue.add("ns/later")
        await settle()
        assert probe.calls == ["ns/later"]
        assert controller.queue.num_requeues("ns/later") == 1  # rate-limited, not immediate
        await clock.advance(0.004)
        assert probe.calls == ["ns/later"]
        await clock.advance(1.0)  # 5 ms, then 10 ms: retried twice, then done
        assert probe.calls == ["ns/later"] * 3
    assert controller.queue.num_requeues("ns/later") == 0
    sample = registry.get_sample_value
    assert sample("kueue_bridge_controller_runtime_reconcile_conflicts_total", {"controller": "c"}) == 2.0
    assert sample("kueue_bridge_controller_runtime_reconcile_errors_total", {"controller": "c"}) is None
    assert (
        sample("kueue_bridge_controller_runtime_reconcile_total", {"controller": "c", "result": "requeue"})
        == 2.0
    )
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    debug = [r for r in caplog.records if r.levelno == logging.DEBUG and "conflict" in r.getMessage()]
    assert len(debug) == 2
    assert "ns/later" in debug[0].getMessage() and "is modified" in debug[0].getMessage()
    assert debug[0].exc_info is None  # no traceback for a normal requeue


async def test_the_callers_own_conflict_type_is_a_conflict_and_other_errors_still_fail(
    clock: FakeClock, registry: CollectorRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    class PortConflict(Exception):
        pass

    probe = Probe()
    probe.results["a"] = [PortConflict("stale")]
    probe.results["b"] = [RuntimeError("boom")]
    controller = Controller(
        name="c", reconcile=probe, clock=clock, metrics=KubeMetrics(registry), conflicts=(PortConflict,)
    )
    async with started(controller):
        controller.queue.add("a")
        controller.queue.add("b")
        await clock.advance(1.0)
    sample = registry.get_sample_value
    assert sample("kueue_bridge_controller_runtime_reconcile_conflicts_total", {"controller": "c"}) == 1.0
    assert sample("kueue_bridge_controller_runtime_reconcile_errors_total", {"controller": "c"}) == 1.0
    failures = [r for r in caplog.records if r.getMessage() == "reconcile failed"]
    assert [r.levelno for r in failures] == [logging.ERROR]
    assert sorted(probe.calls) == ["a", "a", "b", "b"]


async def test_an_api_error_is_one_warning_per_run_of_identical_failures(
    clock: FakeClock, registry: CollectorRegistry, caplog: pytest.LogCaptureFixture
) -> None:
    """A denied write retried with backoff is one WARNING (key, reason, message), not one per retry;
    a different failure, or the same one after a success, is reported again."""
    denied = Forbidden(code=403, message='jobs "j" is forbidden: User "x" cannot update resource "jobs"')
    probe = Probe()
    probe.results["ns/j"] = [denied, denied, denied, Result(), ServiceUnavailable(code=503, message="etcd")]
    controller = Controller(name="c", reconcile=probe, clock=clock, workers=1, metrics=KubeMetrics(registry))
    caplog.set_level(logging.DEBUG, logger="shared.kube.controller")
    async with started(controller):
        controller.queue.add("ns/j")
        await clock.advance(1.0)
        controller.queue.add("ns/j")
        await clock.advance(1.0)
    assert probe.calls == ["ns/j"] * 6  # the last retry after the 503 succeeds
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        f"reconcile of ns/j denied: {denied}; retrying with backoff",
        "reconcile of ns/j failed: ServiceUnavailable (503): etcd; retrying with backoff",
    ]
    repeats = [r for r in caplog.records if r.levelno == logging.DEBUG and "denied" in r.getMessage()]
    assert len(repeats) == 2
    assert not [r for r in caplog.records if r.exc_info], "an API error is not a bug: no traceback"
    sample = registry.get_sample_value
    assert sample("kueue_bridge_controller_runtime_reconcile_errors_total", {"controller": "c"}) == 4.0


async def test_reconcile_runs_with_key_and_id_in_log_context(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    probe = Probe()
    probe.results["ns/x"] = [RuntimeError("bad")]
    controller = Controller(name="c", reconcile=probe, clock=clock)
    async with started(controller):
        controller.queue.add("ns/x")
        await settle()
    key, reconcile_id = probe.context[0]
    assert key == "ns/x"
    assert reconcile_id
    assert current_object_key() is None


async def test_waits_for_informers_then_reconciles_their_objects(fake_api: FakeApi, clock: FakeClock) -> None:
    fake_api.put_object("configmaps", {"metadata": {"name": "a", "namespace": "ns"}})
    kube: KubeClient = make_client(fake_api, clock=clock)
    informer = Informer(kube, CM, clock=clock)
    probe = Probe()
    controller = Controller(name="c", reconcile=probe, clock=clock)
    controller.watch(informer)
    informer_task = asyncio.create_task(informer.run())
    async with started(controller):
        await settle()
        assert controller.started
        assert probe.calls == ["ns/a"]
        fake_api.put_object("configmaps", {"metadata": {"name": "b", "namespace": "ns"}})
        await settle()
        assert probe.calls == ["ns/a", "ns/b"]
    informer_task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await informer_task
    await kube.aclose()


async def test_graceful_shutdown_drains_in_flight_work(clock: FakeClock) -> None:
    probe = Probe()
    probe.gates["a"] = asyncio.Event()
    controller = Controller(name="c", reconcile=probe, clock=clock, workers=1)
    run_task = asyncio.create_task(controller.run())
    await settle()
    controller.queue.add("a")
    controller.queue.add("b")
    await settle()
    shutdown = asyncio.create_task(controller.shutdown(drain_seconds=60))
    await settle()
    assert not shutdown.done()
    probe.gates["a"].set()
    await shutdown
    await run_task  # workers exit on their own
    assert probe.calls == ["a"]  # b was queued, not started: dropped


async def test_shutdown_cancels_reconciles_past_the_drain_deadline(clock: FakeClock) -> None:
    probe = Probe()
    probe.gates["a"] = asyncio.Event()  # never set
    controller = Controller(name="c", reconcile=probe, clock=clock, workers=1)
    run_task = asyncio.create_task(controller.run())
    await settle()
    controller.queue.add("a")
    await settle()
    shutdown = asyncio.create_task(controller.shutdown(drain_seconds=5))
    await clock.advance(6)
    await shutdown
    with contextlib.suppress(asyncio.CancelledError):
        await run_task
    assert probe.active["a"] == 0
