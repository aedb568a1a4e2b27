from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import httpx
import pytest
from prometheus_client import CollectorRegistry

from shared.kube import (
    ClientSettings,
    FakeClock,
    GroupVersionKind,
    HttpxTransport,
    KubeClient,
    KubeMetrics,
    ResourceInfo,
)
from shared.kube.auth import BearerTokenAuth, StaticTokenSource
from shared.kube.clock import settle
from shared.kube.events import EventRecorder, EventSettings, Reporter
from tests.unit.kube.conftest import make_client
from tests.unit.kube.fakeapi import FakeApi, status_body

VERBS = frozenset({"create", "get", "list", "patch", "update", "delete"})
EVENTS_V1 = ResourceInfo(
    gvk=GroupVersionKind("events.k8s.io", "v1", "Event"), plural="events", namespaced=True, verbs=VERBS
)
CORE = ResourceInfo(gvk=GroupVersionKind("", "v1", "Event"), plural="events", namespaced=True, verbs=VERBS)

JOB = {
    "apiVersion": "batch/v1",
    "kind": "Job",
    "metadata": {"name": "job-1", "namespace": "team-a", "uid": "u-1", "resourceVersion": "7"},
}


@contextlib.asynccontextmanager
async def recording(
    api: FakeApi, clock: FakeClock, metrics: KubeMetrics | None = None, queue_size: int = 100
) -> AsyncIterator[EventRecorder]:
    client: KubeClient = make_client(api, clock=clock, metrics=metrics)
    recorder = EventRecorder(
        client,
        EventSettings(
            reporting_controller="batch-kueue-controller", reporting_instance="pod-0", queue_size=queue_size
        ),
        clock=clock,
        metrics=metrics,
    )
    task = asyncio.create_task(recorder.run())
    try:
        yield recorder
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await client.aclose()


def recorder_for(
    client: KubeClient, clock: FakeClock, metrics: KubeMetrics | None = None, *, queue_size: int = 10_000
) -> EventRecorder:
    """A recorder whose writers are not running until the test starts them."""
    settings = EventSettings(reporting_controller="c", reporting_instance="i", queue_size=queue_size)
    return EventRecorder(client, settings, clock=clock, metrics=metrics)


def stored(api: FakeApi, resource: str) -> list[dict[str, object]]:
    return [obj for (res, _, _), obj in api.objects.items() if res == resource]


async def test_records_events_k8s_io_events(clock: FakeClock) -> None:
    api = FakeApi([EVENTS_V1, CORE])
    async with recording(api, clock) as recorder:
        recorder.normal(JOB, reason="CreatedWorkload", note="Created Workload: team-a/job-job-1-abcde")
        await recorder.flush()
    [event] = stored(api, "events.events.k8s.io")
    assert event["type"] == "Normal"
    assert event["reason"] == "CreatedWorkload"
    assert event["action"] == "CreatedWorkload"
    assert event["note"] == "Created Workload: team-a/job-job-1-abcde"
    assert event["regarding"] == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "namespace": "team-a",
        "name": "job-1",
        "uid": "u-1",
        "resourceVersion": "7",
    }
    assert event["reportingController"] == "batch-kueue-controller"
    assert event["reportingInstance"] == "pod-0"
    assert event["eventTime"] == "2025-01-01T00:00:00.000000Z"
    assert event["metadata"]["namespace"] == "team-a"  # type: ignore[index]
    assert str(event["metadata"]["name"]).startswith("job-1.")  # type: ignore[index]
    assert stored(api, "events") == []


async def test_falls_back_to_core_v1_when_events_api_is_missing(clock: FakeClock) -> None:
    api = FakeApi([CORE])
    async with recording(api, clock) as recorder:
        recorder.warning(JOB, reason="ErrWorkloadCompose", note="podSets[0]: bad")
        await recorder.flush()
    [event] = stored(api, "events")
    assert event["involvedObject"]["name"] == "job-1"  # type: ignore[index]
    assert event["message"] == "podSets[0]: bad"
    assert event["type"] == "Warning"
    assert event["count"] == 1
    assert event["source"] == {"component": "batch-kueue-controller"}


async def test_core_repeats_within_the_window_patch_the_count_each_time(clock: FakeClock) -> None:
    """core/v1 (client-go tools/record): the message is part of the key; every repeat is written."""
    api = FakeApi([CORE])
    async with recording(api, clock) as recorder:
        for _ in range(3):
            recorder.normal(JOB, reason="Suspended", note="Kueue suspended the job")
            await recorder.flush()
            await clock.advance(10)
        recorder.normal(JOB, reason="Suspended", note="a different message")
        await recorder.flush()
        events = stored(api, "events")
        assert len(events) == 2
        series_event = next(e for e in events if e["message"] == "Kueue suspended the job")
        assert series_event["count"] == 3
        assert series_event["lastTimestamp"] == "2025-01-01T00:00:20Z"
        assert len([r for r in api.requests if r.method == "PATCH"]) == 2

        await clock.advance(400)  # past the series window: a new event
        recorder.normal(JOB, reason="Suspended", note="Kueue suspended the job")
        await recorder.flush()
        assert len(stored(api, "events")) == 3


async def test_isomorphic_events_become_one_series_like_client_go_tools_events(clock: FakeClock) -> None:
    """events.k8s.io (client-go tools/events): one Event; the second occurrence is patched at once,
    later ones are written when the series has been quiet for the window; the note is not compared."""
    api = FakeApi([EVENTS_V1])
    async with recording(api, clock) as recorder:
        for note in ("Workload 'team-a/wl' is declared finished", "same", "same", "a different note"):
            recorder.normal(JOB, reason="FinishedWorkload", note=note)
            await recorder.flush()
            await clock.advance(10)
        [event] = stored(api, "events.events.k8s.io")
        assert event["note"] == "Workload 'team-a/wl' is declared finished"
        assert event["series"] == {"count": 2, "lastObservedTime": "2025-01-01T00:00:10.000000Z"}
        assert len([r for r in api.requests if r.method == "PATCH"]) == 1

        await clock.advance(800)  # quiet for a window, then the next 6-minute check writes the count
        await settle()
        [event] = stored(api, "events.events.k8s.io")
        assert event["series"] == {"count": 4, "lastObservedTime": "2025-01-01T00:00:30.000000Z"}

        recorder.normal(JOB, reason="FinishedWorkload", note="again")
        await recorder.flush()
        assert len(stored(api, "events.events.k8s.io")) == 2, "after the series, a new Event"


async def test_events_about_another_resource_version_are_new_events(clock: FakeClock) -> None:
    api = FakeApi([EVENTS_V1])
    later = {**JOB, "metadata": {**JOB["metadata"], "resourceVersion": "8"}}  # type: ignore[dict-item]
    async with recording(api, clock) as recorder:
        for job in (JOB, later):
            recorder.normal(job, reason="Started", note="Admitted by clusterQueue cq")
            await recorder.flush()
    events = stored(api, "events.events.k8s.io")
    assert sorted(e["regarding"]["resourceVersion"] for e in events) == ["7", "8"]  # type: ignore[index]
    assert all("series" not in e for e in events)


def test_reporter_instance_is_the_controller_and_host_like_client_go_new_recorder() -> None:
    reporter = Reporter.on_host("batch/job-kueue-controller", host="vm")
    assert reporter == Reporter("batch/job-kueue-controller", "batch/job-kueue-controller-vm")
    assert Reporter.on_host("c").instance.startswith("c-")


async def test_an_event_names_its_reporter_and_reporters_are_separate_series(clock: FakeClock) -> None:
    """client-go's getKey has reportingController and reportingInstance: two reporters saying the same
    thing about the same object are two Events; without a reporter the settings' pair is used."""
    api = FakeApi([EVENTS_V1, CORE])
    job_reporter = Reporter.on_host("batch/job-kueue-controller", host="vm")
    async with recording(api, clock) as recorder:
        for reporter in (job_reporter, None, job_reporter):
            recorder.normal(JOB, reason="Started", note="Admitted by clusterQueue cq", action=None)
            recorder.event(JOB, type="Normal", reason="Stopped", note="stop", reporter=reporter)
            await recorder.flush()
    stopped = sorted(
        (
            (e["reportingController"], e["reportingInstance"], e.get("series", {}).get("count", 1))  # type: ignore[attr-defined]
            for e in stored(api, "events.events.k8s.io")
            if e["reason"] == "Stopped"
        ),
        key=str,
    )
    assert stopped == [
        ("batch-kueue-controller", "pod-0", 1),
        ("batch/job-kueue-controller", "batch/job-kueue-controller-vm", 2),
    ]


async def test_core_v1_events_name_the_reporter_too(clock: FakeClock) -> None:
    api = FakeApi([CORE])
    async with recording(api, clock) as recorder:
        recorder.event(
            JOB, type="Normal", reason="Started", note="n", reporter=Reporter("a/b-kueue-controller", "x")
        )
        await recorder.flush()
    [event] = stored(api, "events")
    assert (event["source"], event["reportingComponent"], event["reportingInstance"]) == (
        {"component": "a/b-kueue-controller"},
        "a/b-kueue-controller",
        "x",
    )


async def test_series_event_deleted_meanwhile_is_recreated(clock: FakeClock) -> None:
    api = FakeApi([EVENTS_V1])
    async with recording(api, clock) as recorder:
        recorder.normal(JOB, reason="Started", note="Admitted by clusterQueue cq")
        await recorder.flush()
        for key in list(api.objects):
            api.objects.pop(key)
        recorder.normal(JOB, reason="Started", note="Admitted by clusterQueue cq")
        await recorder.flush()
    assert len(stored(api, "events.events.k8s.io")) == 1


async def test_full_queue_drops_without_blocking_and_counts(
    clock: FakeClock, registry: CollectorRegistry
) -> None:
    api = FakeApi([EVENTS_V1])
    metrics = KubeMetrics(registry)
    client = make_client(api, clock=clock, metrics=metrics)
    recorder = recorder_for(client, clock, metrics, queue_size=2)
    accepted = [recorder.normal(JOB, reason="Started", note=str(i)) for i in range(5)]  # no writer running
    assert accepted == [True, True, False, False, False]
    assert registry.get_sample_value("kueue_bridge_events_dropped_total", {"reason": "queue_full"}) == 3.0
    await client.aclose()


async def test_api_failures_are_counted_and_do_not_stop_the_recorder(
    clock: FakeClock, registry: CollectorRegistry
) -> None:
    api = FakeApi([EVENTS_V1])
    api.fail_when(
        lambda r: r.method == "POST",
        lambda r: httpx.Response(403, content=status_body(403, "Forbidden", "events is forbidden")),
        times=1,
    )
    async with recording(api, clock, KubeMetrics(registry)) as recorder:
        recorder.normal(JOB, reason="Started", note="first")
        recorder.normal(JOB, reason="Started", note="second")
        await recorder.flush()
    assert registry.get_sample_value("kueue_bridge_events_dropped_total", {"reason": "api_error"}) == 1.0
    assert [e["note"] for e in stored(api, "events.events.k8s.io")] == ["second"]


async def test_long_notes_are_truncated_and_cluster_scoped_objects_use_default(clock: FakeClock) -> None:
    api = FakeApi([EVENTS_V1])
    cluster_queue = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
    }
    async with recording(api, clock) as recorder:
        recorder.warning(cluster_queue, reason="Bad", note="x" * 5000)
        await recorder.flush()
        await settle()
    [event] = stored(api, "events.events.k8s.io")
    assert len(str(event["note"])) == 1024
    assert event["metadata"]["namespace"] == "default"  # type: ignore[index]


def gated_client(api: FakeApi, clock: FakeClock, gate: InFlightGate) -> KubeClient:
    return KubeClient(
        server="https://fake.invalid:6443",
        transport=HttpxTransport(httpx.MockTransport(gate.handle)),
        auth=BearerTokenAuth(StaticTokenSource("t0ken")),
        settings=ClientSettings(qps=0, burst=1),
        clock=clock,
    )


class InFlightGate:
    """Holds every POST until ``wanted`` are in flight at once (or a deadline passes), then lets
    them all through in arrival order; counts the most seen in flight."""

    def __init__(self, api: FakeApi, *, wanted: int, deadline: float = 2.0) -> None:
        self.api = api
        self.deadline = deadline
        self.wanted = wanted
        self.in_flight = 0
        self.most_in_flight = 0
        self.open = asyncio.Event()

    async def handle(self, request: httpx.Request) -> httpx.Response:
        if request.method == "POST":
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            if self.in_flight >= self.wanted:
                self.open.set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.open.wait(), timeout=self.deadline)  # a deadline, not a sleep
            self.in_flight -= 1
        return await self.api.handle(request)


@contextlib.asynccontextmanager
async def run_recorder(recorder: EventRecorder) -> AsyncIterator[None]:
    task = asyncio.create_task(recorder.run())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def test_different_events_are_written_concurrently(clock: FakeClock) -> None:
    api = FakeApi([EVENTS_V1])
    gate = InFlightGate(api, wanted=4)
    client = gated_client(api, clock, gate)
    recorder = recorder_for(client, clock)
    async with run_recorder(recorder):
        for index in range(6):
            job = {"kind": "Job", "metadata": {"name": f"job-{index}", "namespace": "a", "uid": f"u-{index}"}}
            recorder.normal(job, reason="Started", note="x")
        await recorder.flush()
    await client.aclose()
    assert gate.most_in_flight >= 4
    assert len(stored(api, "events.events.k8s.io")) == 6


async def test_repeats_queued_together_become_one_series_with_many_writers(clock: FakeClock) -> None:
    api = FakeApi([EVENTS_V1])
    # the gate would let two creates of the same event through together
    gate = InFlightGate(api, wanted=2, deadline=0.2)
    client = gated_client(api, clock, gate)
    recorder = recorder_for(client, clock)
    async with run_recorder(recorder):
        for _ in range(5):
            recorder.normal(JOB, reason="Suspended", note="Kueue suspended the job")
        await recorder.flush()
    await client.aclose()
    [event] = stored(api, "events.events.k8s.io")
    assert event["series"]["count"] == 2  # type: ignore[index]  # the rest is written when quiet
    assert gate.most_in_flight == 1


async def test_pending_events_can_be_dropped_when_a_bounded_flush_gives_up(
    clock: FakeClock, registry: CollectorRegistry
) -> None:
    api = FakeApi([EVENTS_V1])
    metrics = KubeMetrics(registry)
    client = make_client(api, clock=clock, metrics=metrics)
    recorder = recorder_for(client, clock, metrics)
    for index in range(3):  # no writer runs: nothing can be written
        recorder.normal(JOB, reason="Started", note=str(index))
    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.01):
            await recorder.flush()
    assert recorder.drop_pending() == 3
    assert recorder.pending == 0
    async with asyncio.timeout(1.0):
        await recorder.flush()  # nothing left to wait for
    assert registry.get_sample_value("kueue_bridge_events_dropped_total", {"reason": "shutdown"}) == 3.0
    assert api.objects == {}
    await client.aclose()
