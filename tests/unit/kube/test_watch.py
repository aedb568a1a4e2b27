from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx
import orjson
import pytest
from prometheus_client import CollectorRegistry

from shared.kube import FakeClock, GroupVersionKind, KubeClient, KubeMetrics
from shared.kube.clock import settle
from shared.kube.watch import EventType, Watch, WatchEvent, WatchSettings
from tests.unit.kube.conftest import make_client
from tests.unit.kube.fakeapi import FakeApi

CM = GroupVersionKind("", "v1", "ConfigMap")
RESOURCE = "configmaps"


def cm(name: str, **data: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "ns"},
        "data": dict(data),
    }


@dataclass
class Running:
    watch: Watch
    events: list[WatchEvent] = field(default_factory=list)

    def seen(self) -> list[tuple[str, str]]:
        return [(e.type.value, e.object.get("metadata", {}).get("name", "")) for e in self.events]

    def take(self) -> list[tuple[str, str]]:
        seen = self.seen()
        self.events.clear()
        return seen


def watch_requests(api: FakeApi) -> list[dict[str, str]]:
    return [r.params for r in api.requests if r.params.get("watch") == "true"]


def list_requests(api: FakeApi) -> list[dict[str, str]]:
    return [
        r.params
        for r in api.requests
        if r.method == "GET" and r.path.endswith("/configmaps") and "watch" not in r.params
    ]


@pytest.fixture
async def kube(fake_api: FakeApi, clock: FakeClock, metrics: KubeMetrics) -> AsyncIterator[KubeClient]:
    client = make_client(fake_api, clock=clock, metrics=metrics)
    yield client
    await client.aclose()


@pytest.fixture
async def running(kube: KubeClient, clock: FakeClock) -> AsyncIterator[Running]:
    watch = Watch(kube, CM, namespace="ns", settings=WatchSettings(inactivity_timeout=70.0), clock=clock)
    state = Running(watch)

    async def consume() -> None:
        async for event in watch.events():
            state.events.append(event)

    task = asyncio.create_task(consume())
    await settle()
    yield state
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


@pytest.fixture
def seeded(fake_api: FakeApi) -> FakeApi:
    fake_api.put_object(RESOURCE, cm("a"))
    fake_api.put_object(RESOURCE, cm("b"))
    return fake_api


def restarts(registry: CollectorRegistry, reason: str) -> float:
    return (
        registry.get_sample_value(
            "kueue_bridge_watch_restarts_total", {"resource": RESOURCE, "reason": reason}
        )
        or 0.0
    )


async def test_lists_then_watches_from_the_list_version(seeded: FakeApi, running: Running) -> None:
    assert running.take() == [("ADDED", "a"), ("ADDED", "b"), ("SYNCED", "")]
    listed_at = str(seeded.rv)
    [params] = watch_requests(seeded)
    assert params["resourceVersion"] == listed_at
    assert params["allowWatchBookmarks"] == "true"
    seeded.put_object(RESOURCE, cm("c"))
    seeded.put_object(RESOURCE, cm("a", changed="yes"))
    seeded.remove_object(RESOURCE, "ns", "b")
    await settle()
    assert running.take() == [("ADDED", "c"), ("MODIFIED", "a"), ("DELETED", "b")]
    assert running.watch.resource_version == str(seeded.rv)


@pytest.mark.parametrize("gone_as_event", [True, False], ids=["error-event", "http-410"])
async def test_410_relists_and_synthesises_deleted_for_objects_removed_in_the_gap(
    seeded: FakeApi, running: Running, clock: FakeClock, registry: CollectorRegistry, gone_as_event: bool
) -> None:
    seeded.gone_as_event = gone_as_event
    running.take()
    # The connection drops; while we are away b is deleted, a changes, d appears, history is compacted.
    seeded.disconnect_watches()
    seeded.remove_object(RESOURCE, "ns", "b", record=False)
    seeded.put_object(RESOURCE, cm("a", v="2"), record=False)
    seeded.put_object(RESOURCE, cm("d"), record=False)
    seeded.compact()
    await clock.advance(1.0)
    assert sorted(running.take()) == [("ADDED", "d"), ("DELETED", "b"), ("MODIFIED", "a"), ("SYNCED", "")]
    assert len(list_requests(seeded)) == 2
    assert restarts(registry, "gone") == 1.0
    assert {o["metadata"]["name"] for o in running.watch._known.values()} == {"a", "d"}
    seeded.put_object(RESOURCE, cm("e"))
    await settle()
    assert running.take() == [("ADDED", "e")]


async def test_disconnect_resumes_from_the_last_version_without_relisting(
    seeded: FakeApi, running: Running, clock: FakeClock
) -> None:
    running.take()
    seeded.put_object(RESOURCE, cm("c"))
    await settle()
    seen_version = str(seeded.rv)
    seeded.disconnect_watches()
    await clock.advance(1.0)
    assert watch_requests(seeded)[-1]["resourceVersion"] == seen_version
    assert len(list_requests(seeded)) == 1
    assert running.take() == [("ADDED", "c")]


async def test_silent_watch_reconnects_after_the_inactivity_timeout(
    seeded: FakeApi,
    running: Running,
    clock: FakeClock,
    registry: CollectorRegistry,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG, logger="shared.kube.watch")
    running.take()
    await clock.advance(69.0)
    assert len(watch_requests(seeded)) == 1
    await clock.advance(2.0)
    assert len(watch_requests(seeded)) == 2
    assert restarts(registry, "inactivity") == 1.0
    # a quiet resource is normal: the reconnect is DEBUG, never a WARNING every 70 s
    quiet = [r for r in caplog.records if "inactivity timeout" in r.getMessage()]
    assert [r.levelno for r in quiet] == [logging.DEBUG]
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(seeded.watchers) == 1  # the stale stream was closed
    seeded.put_object(RESOURCE, cm("c"))
    await settle()
    assert running.take() == [("ADDED", "c")]


async def test_a_reconnect_that_fails_after_the_inactivity_timeout_is_a_warning(
    seeded: FakeApi, running: Running, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="shared.kube.watch")
    running.take()
    seeded.fail_when(
        lambda r: r.params.get("watch") == "true",
        lambda r: httpx.Response(503, json={"kind": "Status", "code": 503, "message": "etcd is down"}),
        times=1,
    )
    await clock.advance(71.0)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == ["watch request failed"]


async def test_time_the_consumer_spends_between_events_is_not_inactivity(
    seeded: FakeApi, kube: KubeClient, clock: FakeClock, registry: CollectorRegistry
) -> None:
    """The timeout runs only while the watch waits for the server, as one around each read did."""
    watch = Watch(kube, CM, namespace="ns", settings=WatchSettings(inactivity_timeout=70.0), clock=clock)
    seen: list[str] = []
    go_on = asyncio.Event()

    async def slow_consumer() -> None:
        async for event in watch.events():
            seen.append(event.object.get("metadata", {}).get("name", ""))
            if seen[-1] == "c":
                await go_on.wait()  # busy elsewhere: the stream is not read meanwhile

    task = asyncio.create_task(slow_consumer())
    await settle()
    seeded.put_object(RESOURCE, cm("c"))
    await settle()
    assert seen[-1] == "c"
    await clock.advance(200.0)
    go_on.set()
    seeded.put_object(RESOURCE, cm("d"))
    await settle()
    assert seen[-1] == "d"
    assert not task.done(), "the consumer was not cancelled"
    assert restarts(registry, "inactivity") == 0.0
    assert len(watch_requests(seeded)) == 1
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def test_bookmarks_advance_the_resume_version(
    seeded: FakeApi, running: Running, clock: FakeClock
) -> None:
    running.take()
    seeded.put_object(RESOURCE, cm("other"), record=False)  # the version moves on without an event for us
    seeded.send_bookmark()
    await settle()
    assert running.watch.resource_version == str(seeded.rv)
    assert running.take() == []  # bookmarks are not passed on
    seeded.disconnect_watches()
    await clock.advance(1.0)
    assert watch_requests(seeded)[-1]["resourceVersion"] == str(seeded.rv)


@pytest.mark.parametrize(
    "garbage",
    [
        b"{not json at all\n",
        b'{"type": "ADDED"}\n',
        b'{"type":"WHAT","object":{}}\n',
        b"<html><body>502</body></html>\n",
    ],
    ids=["not-json", "no-object", "unknown-type", "html"],
)
async def test_malformed_lines_restart_the_watch_without_crashing(
    seeded: FakeApi,
    running: Running,
    clock: FakeClock,
    registry: CollectorRegistry,
    garbage: bytes,
    caplog: pytest.LogCaptureFixture,
) -> None:
    running.take()
    version = running.watch.resource_version
    seeded.send_raw(garbage)
    await clock.advance(1.0)
    assert restarts(registry, "malformed") == 1.0
    assert "malformed watch data" in caplog.text
    assert watch_requests(seeded)[-1]["resourceVersion"] == version
    seeded.put_object(RESOURCE, cm("c"))
    await settle()
    assert running.take() == [("ADDED", "c")]


async def test_events_split_across_chunks_and_packed_in_one_chunk(
    seeded: FakeApi, running: Running, clock: FakeClock, registry: CollectorRegistry
) -> None:
    running.take()

    def line(kind: str, name: str, version: str) -> bytes:
        obj = cm(name)
        obj["metadata"]["resourceVersion"] = version  # type: ignore[index]
        return orjson.dumps({"type": kind, "object": obj}) + b"\n"

    packed = line("ADDED", "p1", "901") + b"\n" + line("ADDED", "p2", "902") + line("MODIFIED", "p1", "903")
    seeded.send_raw(packed)
    split = line("ADDED", "s1", "904")
    seeded.send_raw(split[:10])
    seeded.send_raw(split[10:-1])
    seeded.send_raw(b"\n" + line("DELETED", "p2", "905")[:-1])
    await clock.advance(1.0)
    assert running.take() == [("ADDED", "p1"), ("ADDED", "p2"), ("MODIFIED", "p1"), ("ADDED", "s1")]
    seeded.send_raw(b"\n")
    await clock.advance(1.0)
    assert running.take() == [("DELETED", "p2")]
    assert running.watch.resource_version == "905"
    assert restarts(registry, "malformed") == 0.0


async def test_truncated_json_at_end_of_stream_restarts(
    seeded: FakeApi, running: Running, clock: FakeClock, registry: CollectorRegistry
) -> None:
    running.take()
    seeded.send_raw(b'{"type":"ADDED","object":{"metadata":{"na')
    seeded.disconnect_watches()
    await clock.advance(1.0)
    assert restarts(registry, "malformed") == 1.0
    seeded.put_object(RESOURCE, cm("c"))
    await settle()
    assert running.take() == [("ADDED", "c")]


async def test_html_watch_response_and_list_errors_back_off_and_recover(
    fake_api: FakeApi, kube: KubeClient, clock: FakeClock, registry: CollectorRegistry
) -> None:
    fake_api.put_object(RESOURCE, cm("a"))
    fake_api.fail_when(
        lambda r: r.params.get("watch") == "true",
        lambda r: httpx.Response(200, content=b"<html>proxy</html>"),
        times=2,
    )
    fake_api.fail_when(
        lambda r: "watch" not in r.params and r.method == "GET" and r.path.endswith("configmaps"),
        lambda r: httpx.Response(403, content=b"<html>denied</html>"),
        times=1,
    )
    watch = Watch(kube, CM, namespace="ns", clock=clock)
    events: list[WatchEvent] = []

    async def consume() -> None:
        async for event in watch.events():
            events.append(event)

    task = asyncio.create_task(consume())
    await clock.advance_in_steps(30.0, step=0.5)
    assert [e.type for e in events] == [EventType.ADDED, EventType.SYNCED]
    assert restarts(registry, "list_error") == 1.0
    assert restarts(registry, "malformed") == 2.0
    fake_api.put_object(RESOURCE, cm("b"))
    await settle()
    assert events[-1].object["metadata"]["name"] == "b"
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def test_non_410_error_event_resumes(
    seeded: FakeApi, running: Running, clock: FakeClock, registry: CollectorRegistry
) -> None:
    running.take()
    seeded.send_raw(b'{"type":"ERROR","object":{"kind":"Status","code":500,"message":"boom"}}\n')
    await clock.advance(1.0)
    assert restarts(registry, "error") == 1.0
    assert len(list_requests(seeded)) == 1


async def test_cancel_closes_the_stream(seeded: FakeApi, kube: KubeClient, clock: FakeClock) -> None:
    watch = Watch(kube, CM, namespace="ns", clock=clock)

    async def consume() -> None:
        async for _ in watch.events():
            pass

    task = asyncio.create_task(consume())
    await settle()
    assert len(seeded.watchers) == 1
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert task.cancelled()
    assert seeded.watchers == []
