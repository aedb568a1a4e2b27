from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from shared.kube import FakeClock, GroupVersionKind, KubeClient, WatchSettings
from shared.kube.clock import settle
from shared.kube.informer import (
    EventHandler,
    Informer,
    Store,
    StoreView,
    index_by_controller_uid,
    index_by_label,
    index_by_namespace,
    strip_managed_fields,
)
from tests.unit.kube.conftest import make_client
from tests.unit.kube.fakeapi import FakeApi

CM = GroupVersionKind("", "v1", "ConfigMap")
RESOURCE = "configmaps"


def cm(
    name: str, *, namespace: str = "ns", labels: dict[str, str] | None = None, owner: str | None = None
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels or {}}
    if owner:
        metadata["ownerReferences"] = [
            {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "other", "controller": False},
            {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": owner, "controller": True},
        ]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str, str | None]] = []

    def handler(self) -> EventHandler:
        return EventHandler(
            on_add=lambda o: self.calls.append(("add", o["metadata"]["name"], None)),
            on_update=lambda old, new: self.calls.append(
                ("update", new["metadata"]["name"], old["metadata"]["resourceVersion"])
            ),
            on_delete=lambda o: self.calls.append(("delete", o["metadata"]["name"], None)),
        )


@pytest.fixture
async def kube(fake_api: FakeApi, clock: FakeClock) -> AsyncIterator[KubeClient]:
    client = make_client(fake_api, clock=clock)
    yield client
    await client.aclose()


@contextlib.asynccontextmanager
async def running(informer: Informer) -> AsyncIterator[Informer]:
    task = asyncio.create_task(informer.run())
    try:
        yield informer
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def test_store_indexes_follow_updates_and_deletes() -> None:
    store = Store(
        {"namespace": index_by_namespace, "owner": index_by_controller_uid, "team": index_by_label("team")}
    )
    store.upsert(cm("a", labels={"team": "x"}, owner="u1"))
    store.upsert(cm("b", namespace="other", labels={"team": "x"}))
    assert [o["metadata"]["name"] for o in store.by_index("team", "x")] == ["a", "b"]
    assert [o["metadata"]["name"] for o in store.by_index("owner", "u1")] == ["a"]
    assert store.by_index("owner", "other") == []  # not the controller
    store.upsert(cm("a", labels={"team": "y"}))
    assert [o["metadata"]["name"] for o in store.by_index("team", "x")] == ["b"]
    assert store.by_index("owner", "u1") == []
    store.delete("other/b")
    assert store.index_values("team") == ["y"]
    assert store.index_values("namespace") == ["ns"]
    with pytest.raises(KeyError, match="no index named 'nope'"):
        store.by_index("nope", "x")


def test_an_update_that_keeps_its_index_values_returns_the_new_object() -> None:
    store = Store({"owner": index_by_controller_uid, "team": index_by_label("team")})
    store.upsert(cm("a", labels={"team": "x"}, owner="u1"))
    updated = cm("a", labels={"team": "x", "other": "1"}, owner="u1")
    store.upsert(updated)
    assert store.by_index("owner", "u1") == [updated] and store.by_index("team", "x") == [updated]
    store.upsert(cm("b", labels={"team": "x"}, owner="u1"))
    store.upsert(cm("a", labels={}, owner="u1"))  # one index changes, the other does not
    assert [o["metadata"]["name"] for o in store.by_index("owner", "u1")] == ["a", "b"]
    assert [o["metadata"]["name"] for o in store.by_index("team", "x")] == ["b"]
    store.delete("ns/b")
    store.delete("ns/a")
    assert store.index_values("owner") == [] and store.index_values("team") == []


def test_a_views_lookup_answers_as_get_after_every_change() -> None:
    store = Store()
    view = StoreView(store)
    lookup = view.lookup  # taken once, as a reader keeps it
    assert lookup("ns/a") is None
    first = cm("a")
    store.upsert(first)
    assert lookup("ns/a") is first is view.get("ns/a")
    second = cm("a", labels={"team": "x"})
    store.upsert(second)
    assert lookup("ns/a") is second is view.get("ns/a")
    store.delete("ns/a")
    assert lookup("ns/a") is None and view.get("ns/a") is None


def test_custom_indexer_added_later_indexes_existing_objects_and_a_failing_one_is_contained() -> None:
    store = Store()
    store.upsert(cm("a"))
    store.add_indexer("name-length", lambda o: [str(len(o["metadata"]["name"]))])
    assert [o["metadata"]["name"] for o in store.by_index("name-length", "1")] == ["a"]
    store.add_indexer("broken", lambda o: [o["spec"]["missing"]])
    store.upsert(cm("bb"))
    assert store.by_index("broken", "x") == []
    assert "ns/bb" in store


async def test_informer_caches_syncs_and_calls_handlers(
    fake_api: FakeApi, kube: KubeClient, clock: FakeClock
) -> None:
    fake_api.put_object(RESOURCE, cm("a", owner="u1"))
    informer = Informer(kube, CM, namespace="ns", indexers={"owner": index_by_controller_uid}, clock=clock)
    recorder = Recorder()
    informer.add_handler(recorder.handler())
    assert not informer.has_synced
    async with running(informer):
        assert await informer.wait_synced(timeout_seconds=5)
        assert informer.has_synced
        assert recorder.calls == [("add", "a", None)]
        old_version = informer.store.get("ns/a")["metadata"]["resourceVersion"]
        fake_api.put_object(RESOURCE, cm("a", owner="u2"))
        fake_api.remove_object(RESOURCE, "ns", "a")
        fake_api.put_object(RESOURCE, cm("b"))
        await settle()
        assert recorder.calls[1:] == [("update", "a", old_version), ("delete", "a", None), ("add", "b", None)]
        assert informer.store.keys() == ["ns/b"]
        assert informer.store.by_index("owner", "u2") == []
        assert informer.store.get_by_name("b", "ns") is informer.store.get("ns/b")


async def test_a_transform_shapes_what_is_stored_and_what_handlers_see(
    fake_api: FakeApi, kube: KubeClient, clock: FakeClock
) -> None:
    managed = [{"manager": "kubectl", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {}}]
    with_fields = cm("a")
    with_fields["metadata"]["managedFields"] = managed
    fake_api.put_object(RESOURCE, with_fields)
    informer = Informer(kube, CM, clock=clock, transform=strip_managed_fields)
    seen: list[dict[str, Any]] = []
    informer.add_handler(
        EventHandler(on_add=seen.append, on_update=lambda old, new: seen.append(new), on_delete=seen.append)
    )
    async with running(informer):
        await informer.wait_synced()
        updated = cm("a", labels={"v": "2"})
        updated["metadata"]["managedFields"] = managed
        fake_api.put_object(RESOURCE, updated)
        fake_api.remove_object(RESOURCE, "ns", "a")
        await settle()
    assert len(seen) == 3
    assert all("managedFields" not in obj["metadata"] for obj in seen)
    assert seen[1]["metadata"]["labels"] == {"v": "2"}


async def test_a_transform_runs_once_per_object_each_listed_page_before_the_next_is_read(
    fake_api: FakeApi, kube: KubeClient, clock: FakeClock
) -> None:
    for i in range(5):
        fake_api.put_object(RESOURCE, cm(f"c{i}"))

    def pages_read() -> int:
        return sum(1 for r in fake_api.requests if r.method == "GET" and r.params.get("limit") == "2")

    calls: list[tuple[str, int]] = []

    def transform(obj: dict[str, Any]) -> dict[str, Any]:
        assert "transformed" not in obj, "transformed twice"
        calls.append((obj["metadata"]["name"], pages_read()))
        obj["transformed"] = True
        return obj

    informer = Informer(kube, CM, clock=clock, transform=transform, watch_settings=WatchSettings(page_size=2))
    async with running(informer):
        await informer.wait_synced()
        fake_api.put_object(RESOURCE, cm("c0", labels={"v": "2"}))
        await settle()
    assert calls == [("c0", 1), ("c1", 1), ("c2", 2), ("c3", 2), ("c4", 3), ("c0", 3)]
    assert all(obj.get("transformed") for obj in informer.store.list())
    assert informer.store.get("ns/c0")["metadata"]["labels"] == {"v": "2"}  # type: ignore[index]


def test_strip_managed_fields_leaves_everything_else() -> None:
    obj = cm("a", labels={"x": "y"})
    obj["metadata"]["managedFields"] = [{"manager": "m"}]
    assert strip_managed_fields(obj) == cm("a", labels={"x": "y"})
    assert strip_managed_fields({"kind": "NoMetadata"}) == {"kind": "NoMetadata"}


async def test_wait_synced_times_out_on_the_clock(
    fake_api: FakeApi, kube: KubeClient, clock: FakeClock
) -> None:
    informer = Informer(kube, CM, clock=clock)
    waiter = asyncio.create_task(informer.wait_synced(timeout_seconds=3))
    await clock.advance(3.5)
    assert await waiter is False


async def test_handler_added_after_sync_gets_existing_objects(
    fake_api: FakeApi, kube: KubeClient, clock: FakeClock
) -> None:
    fake_api.put_object(RESOURCE, cm("a"))
    informer = Informer(kube, CM, clock=clock)
    async with running(informer):
        await informer.wait_synced()
        late = Recorder()
        informer.add_handler(late.handler())
        assert late.calls == [("add", "a", None)]


async def test_relist_after_gone_reports_deletes_to_handlers(
    fake_api: FakeApi, kube: KubeClient, clock: FakeClock
) -> None:
    fake_api.put_object(RESOURCE, cm("a"))
    fake_api.put_object(RESOURCE, cm("b"))
    informer = Informer(kube, CM, clock=clock)
    recorder = Recorder()
    informer.add_handler(recorder.handler())
    async with running(informer):
        await informer.wait_synced()
        fake_api.disconnect_watches()
        fake_api.remove_object(RESOURCE, "ns", "a", record=False)
        fake_api.compact()
        await clock.advance(1.0)
        assert recorder.calls[-1] == ("delete", "a", None)
        assert informer.store.keys() == ["ns/b"]


async def test_resync_calls_update_with_the_same_object(
    fake_api: FakeApi, kube: KubeClient, clock: FakeClock
) -> None:
    fake_api.put_object(RESOURCE, cm("a"))
    informer = Informer(kube, CM, clock=clock, resync_period=30.0)
    recorder = Recorder()
    informer.add_handler(recorder.handler())
    async with running(informer):
        await informer.wait_synced()
        await clock.advance(29.0)
        assert [c[0] for c in recorder.calls] == ["add"]
        await clock.advance(1.5)
        assert [c[0] for c in recorder.calls] == ["add", "update"]


async def test_a_failing_handler_does_not_stop_the_others(
    fake_api: FakeApi, kube: KubeClient, clock: FakeClock
) -> None:
    informer = Informer(kube, CM, clock=clock)

    def explode(obj: dict[str, Any]) -> None:
        raise RuntimeError("handler bug")

    informer.add_handler(EventHandler(on_add=explode))
    recorder = Recorder()
    informer.add_handler(recorder.handler())
    async with running(informer):
        await informer.wait_synced()
        fake_api.put_object(RESOURCE, cm("a"))
        await settle()
        assert recorder.calls == [("add", "a", None)]


def test_store_view_is_read_only() -> None:
    store = Store()
    store.upsert(cm("a"))
    view = StoreView(store)
    assert not hasattr(view, "upsert")
    assert not hasattr(view, "delete")
    with pytest.raises(AttributeError):
        view.extra = 1  # type: ignore[attr-defined]
    assert list(view) == ["ns/a"]
    assert len(view) == 1
