"""Watch streams: initial state or history replay, live events, bookmarks, timeouts, 410 Expired.

A :class:`Watcher` is registered on its resource table and receives every committed event
synchronously (see :mod:`devcluster.apiserver.storage.store`); it filters by namespace and selectors and
queues
``(type, event)`` pairs; the streaming coroutine turns them into frames that are serialised once per
event and apiVersion, however many watchers share them.

Semantics follow kube-apiserver's watch cache:

* no ``resourceVersion`` or ``"0"`` (or ``sendInitialEvents=true``): synthetic ADDED events for the
  current objects, then changes; with ``sendInitialEvents`` and ``allowWatchBookmarks`` the initial
  burst ends with a BOOKMARK annotated ``k8s.io/initial-events-end: "true"`` (the streaming-list
  protocol), without bookmarks there is no marker. Known difference: kube 1.36 also sends that
  marker for a plain watch from the current state with bookmarks; doing so here changed the
  start-up timing of the devcluster's own clients (tests/e2e/test_docs_tools.py's explain
  example), so it waits for a closer look.
* ``resourceVersion=N``: every event after N from the table's history, then live events; when N is
  older than the history window the stream carries one ERROR event with a 410 ``Expired`` Status
  ``too old resource version: N (M)`` and ends, exactly what client-go reflectors expect.
* With selectors, an update that makes an object match is sent as ADDED and one that makes it stop
  matching as DELETED.
* ``allowWatchBookmarks``: a BOOKMARK with the current resourceVersion every ``bookmark_interval``
  seconds while idle and one just before ``timeoutSeconds`` ends the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

import orjson

from devcluster.apiserver.errors import expired
from devcluster.apiserver.registry.resources import ResourceType
from devcluster.apiserver.request.query_options import flag, integer
from devcluster.apiserver.selectors import Selector
from devcluster.apiserver.storage.store import ADDED, DELETED, MODIFIED, ResourceTable, Store, StoredEvent

__all__ = ["Watcher", "stream_watch"]

Send = Callable[[dict[str, Any]], Awaitable[None]]
Receive = Callable[[], Awaitable[dict[str, Any]]]

_MAX_BACKLOG = 100_000


class Watcher:
    __slots__ = ("closed", "matches", "namespace", "queue", "wake")

    def __init__(self, *, namespace: str | None, selector: Selector) -> None:
        self.namespace = namespace
        self.matches = None if selector.empty else selector.matches
        self.queue: deque[tuple[str, StoredEvent]] = deque()
        self.wake = asyncio.Event()
        self.closed = False

    def offer(self, event: StoredEvent) -> None:
        obj = event.obj
        if self.namespace is not None and obj["metadata"].get("namespace") != self.namespace:
            return
        event_type: str | None = event.type
        if self.matches is not None:
            now = self.matches(obj)
            if event.type == MODIFIED:
                before = event.prev is not None and self.matches(event.prev)
                event_type = MODIFIED if now and before else ADDED if now else DELETED if before else None
            elif not now:
                event_type = None
        if event_type is None:
            return
        if len(self.queue) >= _MAX_BACKLOG:  # a consumer this slow relists, as with kube
            self.close()
            return
        self.queue.append((event_type, event))
        self.wake.set()

    def close(self) -> None:
        self.closed = True
        self.wake.set()


def _bookmark(rtype: ResourceType, api_version: str, revision: int, *, initial_end: bool = False) -> bytes:
    meta: dict[str, Any] = {"resourceVersion": str(revision)}
    if initial_end:
        meta["annotations"] = {"k8s.io/initial-events-end": "true"}
    return (
        orjson.dumps(
            {"type": "BOOKMARK", "object": {"kind": rtype.kind, "apiVersion": api_version, "metadata": meta}}
        )
        + b"\n"
    )


def expired_frame(message: str) -> bytes:
    return orjson.dumps({"type": "ERROR", "object": expired(message).to_status()}) + b"\n"


def _added_frame(obj: dict[str, Any], api_version: str) -> bytes:
    if obj.get("apiVersion") != api_version:
        obj = {**obj, "apiVersion": api_version}
    return b'{"type":"ADDED","object":' + orjson.dumps(obj) + b"}\n"


async def stream_watch(
    *,
    store: Store,
    rtype: ResourceType,
    version: str,
    namespace: str | None,
    selector: Selector,
    params: dict[str, str],
    bookmark_interval: float,
    max_seconds: float,
    send: Send,
    receive: Receive,
    served_as: tuple[str, Callable[[dict[str, Any]], dict[str, Any]]] | None = None,
    render: Callable[[str, dict[str, Any]], bytes] | None = None,
) -> None:
    """``served_as`` = (apiVersion, converter) when the stored kind is served in another shape;
    ``render(event_type, stored_object)`` writes each event's frame itself (Tables, per watcher)."""
    api_version = rtype.api_version(version)
    convert = None
    if served_as is not None:
        api_version, convert = served_as
    table: ResourceTable = store.table(rtype.key)
    watcher = Watcher(namespace=namespace, selector=selector)
    bookmarks = flag(params, "allowWatchBookmarks")
    initial_events = flag(params, "sendInitialEvents")
    raw_rv = params.get("resourceVersion", "")
    timeout = min(float(integer(params, "timeoutSeconds") or max_seconds), max_seconds)
    first: list[bytes] = []
    start_rv: int | None = None
    if raw_rv not in {"", "0"} and not initial_events:
        try:
            start_rv = int(raw_rv)
        except ValueError:
            start_rv = -1
    if start_rv is not None and start_rv < table.floor:
        first.append(expired_frame(f"too old resource version: {start_rv} ({table.floor})"))
        await _start(send)
        await send({"type": "http.response.body", "body": first[0], "more_body": False})
        return
    # registration and the initial snapshot happen with no await in between: nothing is missed
    table.watchers.add(watcher)
    try:
        if start_rv is None:
            for _key, obj in table.sorted_items(namespace):
                if watcher.matches is None or watcher.matches(obj):
                    if render is not None:
                        first.append(render(ADDED, obj))
                    else:
                        first.append(_added_frame(convert(obj) if convert else obj, api_version))
            if initial_events and bookmarks:
                first.append(_bookmark(rtype, api_version, store.revision, initial_end=True))
        else:
            for event in table.events_after(start_rv):
                watcher.offer(event)
        await _start(send)
        if first:
            await send({"type": "http.response.body", "body": b"".join(first), "more_body": True})
        await _pump(
            watcher,
            store,
            rtype,
            api_version,
            bookmarks,
            bookmark_interval,
            timeout,
            send,
            receive,
            convert,
            render,
        )
    finally:
        table.watchers.discard(watcher)


async def _start(send: Send) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": 200,
            "headers": [(b"content-type", b"application/json"), (b"cache-control", b"no-cache, private")],
        }
    )


async def _pump(
    watcher: Watcher,
    store: Store,
    rtype: ResourceType,
    api_version: str,
    bookmarks: bool,
    bookmark_interval: float,
    lifetime: float,
    send: Send,
    receive: Receive,
    convert: Callable[[dict[str, Any]], dict[str, Any]] | None,
    render: Callable[[str, dict[str, Any]], bytes] | None = None,
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + lifetime
    next_bookmark = loop.time() + bookmark_interval

    async def _watch_disconnect() -> None:
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                watcher.close()
                return

    disconnect = asyncio.create_task(_watch_disconnect())
    try:
        while not watcher.closed:
            if watcher.queue:
                chunks = []
                while watcher.queue:
                    event_type, event = watcher.queue.popleft()
                    if render is not None:
                        chunks.append(render(event_type, event.obj))
                        continue
                    chunks.append(
                        event.frame(event_type=event_type, api_version=api_version, convert=convert)
                    )
                await send({"type": "http.response.body", "body": b"".join(chunks), "more_body": True})
                continue
            now = loop.time()
            if now >= deadline:
                if bookmarks:
                    await send(
                        {
                            "type": "http.response.body",
                            "body": _bookmark(rtype, api_version, store.revision),
                            "more_body": True,
                        }
                    )
                break
            if bookmarks and now >= next_bookmark:
                await send(
                    {
                        "type": "http.response.body",
                        "body": _bookmark(rtype, api_version, store.revision),
                        "more_body": True,
                    }
                )
                next_bookmark = now + bookmark_interval
                continue
            wait = deadline - now
            if bookmarks:
                wait = min(wait, next_bookmark - now)
            watcher.wake.clear()
            if watcher.queue or watcher.closed:
                continue
            # asyncio.timeout: Python 3.11's wait_for can swallow a cancel (see shared.kube.clock)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(max(wait, 0.001)):
                    await watcher.wake.wait()
        if not (disconnect.done() and watcher.closed):
            await send({"type": "http.response.body", "body": b"", "more_body": False})
    finally:
        disconnect.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await disconnect
