"""``Informer`` on the devcluster: cache, indexes and handlers stay consistent under a write burst.

The informer watches through a ``FaultProxy`` whose connections are cut in the middle of the burst,
so the cache must also survive a resume. At the end the cache must equal what the server lists
(same keys, same resourceVersions), the handler-maintained mirror must equal the cache, and every
index must agree with a recomputation from the cached objects.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from pathlib import Path
from typing import Any

from devcluster.server import ThreadedDevCluster
from shared.kube import EventHandler, Informer, KubeClient, index_by_label, index_by_namespace, object_key
from tests.component.kube.conftest import CONFIGMAP, FAST_RETRY, eventually, proxied_client

OBJECTS = 120
GROUPS = [f"g{i}" for i in range(4)]
CONCURRENCY = 16


def cached(informer: Informer, key: str) -> dict[str, Any]:
    obj = informer.store.get(key)
    assert obj is not None, key
    return obj


class Mirror:
    """What handlers were told, replayed into a dict; any impossible sequence is recorded."""

    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.violations: list[str] = []

    def on_add(self, obj: dict[str, Any]) -> None:
        key = object_key(obj)
        if key in self.objects:
            self.violations.append(f"add of known {key}")
        self.objects[key] = obj

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        key = object_key(new)
        if self.objects.get(key) is not old:
            self.violations.append(f"update of {key} with an old object that is not the cached one")
        self.objects[key] = new

    def on_delete(self, obj: dict[str, Any]) -> None:
        if self.objects.pop(object_key(obj), None) is None:
            self.violations.append(f"delete of unknown {object_key(obj)}")

    def handler(self) -> EventHandler:
        return EventHandler(on_add=self.on_add, on_update=self.on_update, on_delete=self.on_delete)


async def bounded(calls: list[Any]) -> None:
    semaphore = asyncio.Semaphore(CONCURRENCY)

    async def one(call: Any) -> None:
        async with semaphore:
            await call

    await asyncio.gather(*(one(call) for call in calls))


async def test_informer_stays_consistent_under_a_burst(
    devcluster: ThreadedDevCluster, client: KubeClient, namespace: str, tmp_path: Path
) -> None:
    rng = random.Random(7)
    async with proxied_client(devcluster, tmp_path) as (watching, proxy):
        informer = Informer(
            watching,
            CONFIGMAP,
            namespace=namespace,
            label_selector="app=burst",
            indexers={"group": index_by_label("group"), "namespace": index_by_namespace},
            watch_settings=FAST_RETRY,
        )
        mirror = Mirror()
        informer.add_handler(mirror.handler())
        task = asyncio.create_task(informer.run())
        try:
            assert await informer.wait_synced(timeout_seconds=20)
            names = [f"cm-{i}" for i in range(OBJECTS)]
            await bounded(
                [
                    client.create(
                        CONFIGMAP,
                        {"metadata": {"name": n, "labels": {"app": "burst", "group": rng.choice(GROUPS)}}},
                        namespace=namespace,
                    )
                    for n in names
                ]
            )
            await proxy.cut()  # the watch resumes in the middle of the burst
            await bounded(
                [
                    client.patch(
                        CONFIGMAP,
                        n,
                        {"metadata": {"labels": {"group": rng.choice(GROUPS)}}, "data": {"round": str(r)}},
                        namespace=namespace,
                    )
                    for r in range(2)
                    for n in names
                ]
            )
            doomed = rng.sample(names, OBJECTS // 3)
            await bounded([client.delete(CONFIGMAP, n, namespace=namespace) for n in doomed])
            await client.patch(  # leaves the selector: the informer must see it as deleted
                CONFIGMAP,
                names[0] if names[0] not in doomed else names[1],
                {"metadata": {"labels": {"app": "other"}}},
                namespace=namespace,
            )

            async def converged() -> bool:
                server = await client.list_all(CONFIGMAP, namespace=namespace, label_selector="app=burst")
                expected = {object_key(o): o["metadata"]["resourceVersion"] for o in server.items}
                in_cache = {
                    key: cached(informer, key)["metadata"]["resourceVersion"] for key in informer.store
                }
                return in_cache == expected

            await eventually(converged, what="the informer cache to match the server")
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    assert proxy.connections_cut >= 1
    assert mirror.violations == []
    assert mirror.objects.keys() == set(informer.store.keys())
    assert all(mirror.objects[key] is informer.store.get(key) for key in mirror.objects)
    for group in GROUPS:
        expected = sorted(
            key for key in informer.store if cached(informer, key)["metadata"]["labels"]["group"] == group
        )
        assert sorted(object_key(o) for o in informer.store.by_index("group", group)) == expected
    assert {object_key(o) for o in informer.store.by_index("namespace", namespace)} == set(
        informer.store.keys()
    )

    late = Mirror()
    informer.add_handler(late.handler())  # a handler added after sync is told about every cached object
    assert late.objects.keys() == set(informer.store.keys())


async def test_a_metadata_only_informer_caches_each_objects_metadata(
    client: KubeClient, namespace: str
) -> None:
    """``metadata_only``: the list and the watch ask for ``PartialObjectMetadata``; the cache holds
    each object's metadata (labels, uid, resourceVersion) and nothing of its body, and follows
    changes like any informer."""
    await client.create(
        CONFIGMAP,
        {"metadata": {"name": "listed", "labels": {"a": "1"}}, "data": {"k": "v"}},
        namespace=namespace,
    )
    informer = Informer(client, CONFIGMAP, namespace=namespace, watch_settings=FAST_RETRY, metadata_only=True)
    task = asyncio.create_task(informer.run())
    try:
        assert await informer.wait_synced(timeout_seconds=20)
        listed = cached(informer, f"{namespace}/listed")
        assert (listed["kind"], listed["apiVersion"]) == ("PartialObjectMetadata", "meta.k8s.io/v1")
        assert "data" not in listed and listed["metadata"]["labels"] == {"a": "1"}
        assert listed["metadata"]["uid"]
        await client.create(
            CONFIGMAP, {"metadata": {"name": "watched"}, "data": {"k": "v"}}, namespace=namespace
        )
        patched = await client.patch(
            CONFIGMAP, "listed", {"metadata": {"labels": {"a": "2"}}, "data": {"k": "w"}}, namespace=namespace
        )

        async def followed() -> bool:
            watched = informer.store.get(f"{namespace}/watched")
            listed = cached(informer, f"{namespace}/listed")
            return (
                watched is not None
                and listed["metadata"]["resourceVersion"] == patched["metadata"]["resourceVersion"]
            )

        await eventually(followed, what="the metadata-only informer to see the create and the patch")
        for obj in (cached(informer, f"{namespace}/watched"), cached(informer, f"{namespace}/listed")):
            assert obj["kind"] == "PartialObjectMetadata" and set(obj) == {"kind", "apiVersion", "metadata"}
        assert cached(informer, f"{namespace}/listed")["metadata"]["labels"] == {"a": "2"}
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
