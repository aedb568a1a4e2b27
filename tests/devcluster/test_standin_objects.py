"""The add-ons' watched caches (devcluster.standin.objects) against a real devcluster.

ConfigMaps stand in for Workloads and Jobs: the cache is generic over resources, and a core kind
needs no CRD. Everything is awaited with a deadline (tests.polling), never slept on.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from devcluster.server import ThreadedDevCluster
from devcluster.standin.client import ApiClient, Resource
from devcluster.standin.objects import ListedObjects, WatchedObjects
from tests.polling import eventually

CONFIG_MAPS = Resource("", "v1", "configmaps")
WIDGETS = Resource("example.com", "v1", "widgets")  # no such CRD


def config_map(name: str, value: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": {"value": value},
    }


@pytest.fixture
async def client(devcluster: ThreadedDevCluster) -> AsyncIterator[ApiClient]:
    instance = ApiClient(url=devcluster.url, token=devcluster.token, ca_file=str(devcluster.ca_file))
    yield instance
    await instance.aclose()


@pytest.fixture
async def watched(client: ApiClient) -> AsyncIterator[WatchedObjects]:
    objects = WatchedObjects(client=client, resources=[CONFIG_MAPS, WIDGETS])
    task = asyncio.create_task(objects.run())
    yield objects
    await objects.stop(task)
    assert task.done()


async def values(objects: WatchedObjects) -> dict[str, str]:
    return {
        cm["metadata"]["name"]: cm["data"]["value"]
        for cm in await objects.list(CONFIG_MAPS)
        if cm["metadata"]["name"].startswith("t-")
    }


async def test_a_change_by_another_client_arrives_and_wakes_the_controller(
    devcluster: ThreadedDevCluster, client: ApiClient
) -> None:
    # created before the cache starts: the fixture's cache could list before this create landed,
    # and then (its first list empty, the create not its own write yet) see it only by the watch
    await client.create(CONFIG_MAPS, namespace="default", body=config_map("t-before", "1"))
    watched = WatchedObjects(client=client, resources=[CONFIG_MAPS, WIDGETS])
    task = asyncio.create_task(watched.run())
    try:
        await _first_list_then_another_writer(devcluster, watched)
    finally:
        await watched.stop(task)


async def _first_list_then_another_writer(devcluster: ThreadedDevCluster, watched: WatchedObjects) -> None:
    assert await values(watched) == {"t-before": "1"}, "the first list has what existed"
    watched.changed.clear()
    other = ApiClient(url=devcluster.url, token=devcluster.token, ca_file=str(devcluster.ca_file))
    try:  # another writer: its change can only be learnt through the watch
        await other.create(CONFIG_MAPS, namespace="default", body=config_map("t-after", "2"))
    finally:
        await other.aclose()
    async with asyncio.timeout(10):
        await watched.changed.wait()
    await eventually(lambda: _has(watched, {"t-before": "1", "t-after": "2"}), what="the watched create")


async def _has(objects: WatchedObjects, expected: dict[str, str]) -> bool:
    return await values(objects) == expected


async def test_the_clients_own_write_is_seen_by_the_next_read_at_once(
    client: ApiClient, watched: WatchedObjects
) -> None:
    await values(watched)  # synced
    created = await client.create(CONFIG_MAPS, namespace="default", body=config_map("t-mine", "1"))
    assert await values(watched) == {"t-mine": "1"}, "no wait for the watch: read your writes"
    created["data"]["value"] = "2"
    replaced = await client.replace(CONFIG_MAPS, created)
    assert replaced is not None
    assert await values(watched) == {"t-mine": "2"}


async def test_an_older_version_never_replaces_a_newer_one(
    client: ApiClient, watched: WatchedObjects
) -> None:
    await values(watched)
    first = await client.create(CONFIG_MAPS, namespace="default", body=config_map("t-old", "1"))
    first_copy = {**first, "metadata": dict(first["metadata"]), "data": dict(first["data"])}
    first["data"]["value"] = "2"
    assert await client.replace(CONFIG_MAPS, first) is not None
    watched._written(CONFIG_MAPS, first_copy)  # e.g. a late watch event of the first version
    assert await values(watched) == {"t-old": "2"}


async def test_copies_out_and_keep_filters(client: ApiClient, watched: WatchedObjects) -> None:
    await values(watched)
    for name, value in (("t-a", "keep"), ("t-b", "drop")):
        await client.create(CONFIG_MAPS, namespace="default", body=config_map(name, value))
    kept = await watched.list(CONFIG_MAPS, keep=lambda cm: cm.get("data", {}).get("value") == "keep")
    assert [cm["metadata"]["name"] for cm in kept] == ["t-a"]
    kept[0]["data"]["value"] = "changed by the pass"
    assert await values(watched) == {"t-a": "keep", "t-b": "drop"}, "the cache is not the caller's"


async def test_a_resource_without_its_crd_is_empty_and_a_list_agrees(
    client: ApiClient, watched: WatchedObjects
) -> None:
    async with asyncio.timeout(10):
        assert await watched.list(WIDGETS) == []
    assert await ListedObjects(client=client).list(WIDGETS) == []


async def test_deletions_leave_the_cache(client: ApiClient, watched: WatchedObjects) -> None:
    await client.create(CONFIG_MAPS, namespace="default", body=config_map("t-gone", "1"))
    await eventually(lambda: _has(watched, {"t-gone": "1"}), what="the create")
    response = await client._http.delete(CONFIG_MAPS.path(namespace="default", name="t-gone"))
    assert response.status_code == 200, response.text
    await eventually(lambda: _has(watched, {}), what="the watched delete")


async def test_an_in_process_transport_lets_other_tasks_run_between_requests() -> None:
    """An in-process transport never suspends the caller; without a turn after each request a
    pass of many writes would hold the event loop (and the API server's other clients)."""
    turns: list[int] = []

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"kind": "ConfigMapList", "items": []})

    async def other_client() -> None:
        while True:
            turns.append(len(turns))
            await asyncio.sleep(0)

    client = ApiClient(
        url="https://devcluster.test", token="t", ca_file=None, transport=httpx.MockTransport(answer)
    )
    task = asyncio.create_task(other_client())
    try:
        await asyncio.sleep(0)
        before = len(turns)
        for _ in range(5):
            await client.list(CONFIG_MAPS)
        assert len(turns) - before >= 5, "the other task ran between the requests"
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await client.aclose()


async def test_watch_events_split_across_chunks_are_put_back_together() -> None:
    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"7"'
        yield b'}}}\n\n{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}}\n{"type":"DEL'
        yield b'ETED","object":{"metadata":{"name":"a","resourceVersion":"10"}}}'

    def answer(request: httpx.Request) -> httpx.Response:
        assert request.url.params["resourceVersion"] == "5"
        assert request.url.params["watch"] == "true"
        return httpx.Response(200, content=chunks())

    client = ApiClient(
        url="https://devcluster.test", token="t", ca_file=None, watch_transport=httpx.MockTransport(answer)
    )
    opened: list[bool] = []
    try:
        events = [
            (kind, obj["metadata"]["resourceVersion"])
            async for kind, obj in client.watch(
                CONFIG_MAPS, resource_version="5", timeout_seconds=1, opened=lambda: opened.append(True)
            )
        ]
    finally:
        await client.aclose()
    assert events == [("ADDED", "7"), ("BOOKMARK", "9"), ("DELETED", "10")]
    assert opened == [True]
