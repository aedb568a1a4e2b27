"""``Watch`` over real HTTPS: list+watch, bookmarks, resume after a dropped connection, 410 relist.

A ``FaultProxy`` sits between the watching client and the devcluster so a test can drop the TCP
connection under a live watch; writes go through a second, direct client. Watches are driven by a
``Collector`` task that records every event; tests poll it with a deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from devcluster.server import ThreadedDevCluster
from shared.kube import EventType, KubeClient, Watch, WatchEvent
from tests.component.kube.conftest import (
    CONFIGMAP,
    FAST_RETRY,
    NAMESPACE,
    eventually,
    make_client,
    proxied_client,
)


def configmap(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "data": {"v": "0"}}


class Collector:
    """Runs ``watch.events()`` in a task and keeps what it yields."""

    def __init__(self, watch: Watch) -> None:
        self.watch = watch
        self.events: list[WatchEvent] = []
        self._task: asyncio.Task[None] | None = None

    async def _consume(self) -> None:
        async for event in self.watch.events():
            self.events.append(event)

    def start(self) -> None:
        self._task = asyncio.create_task(self._consume())

    async def stop(self) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task

    def names(self, kind: EventType) -> list[str]:
        return [e.object["metadata"]["name"] for e in self.events if e.type is kind]

    def count(self, kind: EventType) -> int:
        return sum(1 for e in self.events if e.type is kind)

    async def wait_for(self, what: str, predicate: Callable[[], bool], within_seconds: float = 20.0) -> None:
        async def check() -> bool:
            return predicate()

        await eventually(check, what=what, within_seconds=within_seconds)


def restarts(client: KubeClient, reason: str) -> float:
    assert client.metrics is not None
    value = client.metrics.registry.get_sample_value(
        "kueue_bridge_watch_restarts_total", {"resource": "configmaps", "reason": reason}
    )
    return value or 0.0


async def next_event(events: AsyncIterator[WatchEvent]) -> WatchEvent:
    return await asyncio.wait_for(anext(events), timeout=20)


@contextlib.asynccontextmanager
async def collecting(watch: Watch) -> AsyncIterator[Collector]:
    collector = Collector(watch)
    collector.start()
    try:
        yield collector
    finally:
        await collector.stop()


async def test_list_then_watch_from_the_list_version(client: KubeClient, namespace: str) -> None:
    await client.create(CONFIGMAP, configmap("before"), namespace=namespace)
    async with collecting(Watch(client, CONFIGMAP, namespace=namespace, label_selector="")) as seen:
        await seen.wait_for("the initial list", lambda: seen.count(EventType.SYNCED) == 1)
        listed_version = seen.watch.resource_version
        assert "before" in seen.names(EventType.ADDED)
        await client.create(CONFIGMAP, configmap("after"), namespace=namespace)
        await client.patch(CONFIGMAP, "before", {"data": {"v": "1"}}, namespace=namespace)
        await client.delete(CONFIGMAP, "after", namespace=namespace)
        await seen.wait_for("the deletion", lambda: "after" in seen.names(EventType.DELETED))
        after_sync = seen.events[seen.events.index(WatchEvent(EventType.SYNCED, {})) + 1 :]
        assert [(e.type, e.object["metadata"]["name"]) for e in after_sync] == [
            (EventType.ADDED, "after"),
            (EventType.MODIFIED, "before"),
            (EventType.DELETED, "after"),
        ]
        assert int(seen.watch.resource_version) > int(listed_version)  # devcluster versions are integers


async def test_raw_stream_from_a_list_version_sees_only_later_changes(
    client: KubeClient, namespace: str
) -> None:
    await client.create(CONFIGMAP, configmap("old"), namespace=namespace)
    listed = await client.list(CONFIGMAP, namespace=namespace)
    await client.create(CONFIGMAP, configmap("new"), namespace=namespace)
    info = await client.resource(CONFIGMAP)
    stream = await client.open_stream(
        info.path(namespace=namespace),
        params={
            "watch": "true",
            "resourceVersion": listed["metadata"]["resourceVersion"],
            "timeoutSeconds": "1",
        },
        resource=info.resource_label,
    )
    try:
        body = b"".join([chunk async for chunk in stream.chunks()])
    finally:
        await stream.aclose()
    names = [line for line in body.split(b"\n") if line.strip()]
    assert len(names) == 1 and b'"new"' in names[0] and b'"ADDED"' in names[0]


async def test_resume_after_a_dropped_connection_without_relist(
    devcluster: ThreadedDevCluster, client: KubeClient, namespace: str, tmp_path: Path
) -> None:
    async with proxied_client(devcluster, tmp_path) as (watching, proxy):
        watch = Watch(watching, CONFIGMAP, namespace=namespace, settings=FAST_RETRY)
        async with collecting(watch) as seen:
            await seen.wait_for("the initial list", lambda: seen.count(EventType.SYNCED) == 1)
            await client.create(CONFIGMAP, configmap("one"), namespace=namespace)
            await seen.wait_for("one", lambda: "one" in seen.names(EventType.ADDED))
            await proxy.cut()
            await client.create(CONFIGMAP, configmap("two"), namespace=namespace)
            await seen.wait_for("two, after the reconnect", lambda: "two" in seen.names(EventType.ADDED))
            assert proxy.connections_cut >= 1
            assert seen.count(EventType.SYNCED) == 1, "resumed from its version: no relist"
            assert restarts(watching, "gone") == 0
            assert seen.names(EventType.ADDED).count("one") == 1, "no duplicate events"


async def test_bookmarks_advance_the_resume_version(
    devcluster_factory: Callable[..., ThreadedDevCluster], tmp_path: Path
) -> None:
    cluster = devcluster_factory(bookmark_interval=0.1, watch_history_size=5)
    async with make_client(cluster) as writer, proxied_client(cluster, tmp_path) as (watching, proxy):
        for ns in ("quiet", "busy"):
            await writer.create(NAMESPACE, {"metadata": {"name": ns}})
        watch = Watch(watching, CONFIGMAP, namespace="quiet", settings=FAST_RETRY)
        async with collecting(watch) as seen:
            await seen.wait_for("the initial list", lambda: seen.count(EventType.SYNCED) == 1)
            # writes elsewhere in the same resource push the list version out of the history window
            for i in range(10):
                last = await writer.create(CONFIGMAP, configmap(f"elsewhere-{i}"), namespace="busy")
            latest = int(last["metadata"]["resourceVersion"])
            await seen.wait_for(
                "a bookmark carrying the latest version", lambda: int(watch.resource_version) >= latest
            )
            assert seen.count(EventType.ADDED) == 1  # only kube-root-ca.crt: bookmarks are not events
            await proxy.cut()
            await writer.create(CONFIGMAP, configmap("here"), namespace="quiet")
            await seen.wait_for(
                "the event after the reconnect", lambda: "here" in seen.names(EventType.ADDED)
            )
            assert seen.count(EventType.SYNCED) == 1, "resumed from the bookmark: no 410, no relist"
            assert restarts(watching, "gone") == 0


async def test_resume_from_a_compacted_version_relists_and_reports_the_gap_deletion(
    devcluster_factory: Callable[..., ThreadedDevCluster], tmp_path: Path
) -> None:
    cluster = devcluster_factory(watch_history_size=5)
    async with make_client(cluster) as writer, proxied_client(cluster, tmp_path) as (watching, proxy):
        await writer.create(NAMESPACE, {"metadata": {"name": "gap"}})
        for name in ("doomed", "kept"):
            await writer.create(CONFIGMAP, configmap(name), namespace="gap")
        watch = Watch(watching, CONFIGMAP, namespace="gap", settings=FAST_RETRY)
        seen = Collector(watch)
        events = watch.events()
        try:
            while (event := await next_event(events)).type is not EventType.SYNCED:
                seen.events.append(event)
            seen.events.append(event)
            await writer.create(CONFIGMAP, configmap("live"), namespace="gap")
            seen.events.append(await next_event(events))  # the watch stream is open and positioned
            assert seen.names(EventType.ADDED)[-1] == "live"
            await proxy.cut()  # the consumer is not reading: nothing below reaches the old stream
            await writer.delete(CONFIGMAP, "doomed", namespace="gap")
            await writer.patch(CONFIGMAP, "kept", {"data": {"v": "1"}}, namespace="gap")
            for i in range(8):
                await writer.create(CONFIGMAP, configmap(f"gap-{i}"), namespace="gap")
            while (event := await next_event(events)).type is not EventType.SYNCED:
                seen.events.append(event)
        finally:
            await events.aclose()
        assert restarts(watching, "gone") == 1, "the resume got 410 Gone and relisted"
        relisted = seen.events[seen.events.index(WatchEvent(EventType.SYNCED, {})) + 2 :]
        by_type: dict[EventType, set[str]] = {}
        for event in relisted:
            by_type.setdefault(event.type, set()).add(event.object["metadata"]["name"])
        assert by_type.get(EventType.DELETED) == {"doomed"}
        assert by_type.get(EventType.MODIFIED) == {"kept"}  # resourceVersion changed in the gap
        assert by_type.get(EventType.ADDED) == {f"gap-{i}" for i in range(8)}
        deleted = next(e for e in relisted if e.type is EventType.DELETED)
        assert deleted.object["metadata"]["name"] == "doomed"  # the last known state is reported


async def test_watch_closes_its_stream_when_cancelled(
    devcluster: ThreadedDevCluster, namespace: str, tmp_path: Path
) -> None:
    async with proxied_client(devcluster, tmp_path) as (watching, proxy):
        async with collecting(Watch(watching, CONFIGMAP, namespace=namespace)) as seen:
            await seen.wait_for("the watch to start", lambda: seen.count(EventType.SYNCED) == 1)

        async def closed() -> bool:
            await watching.get(NAMESPACE, namespace)  # keep-alive connection for ordinary requests only
            return proxy.open_connections <= 1

        await eventually(closed, what="the watch connection to close")
