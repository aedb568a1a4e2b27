"""Where the add-ons read the objects a pass looks at (LOCAL RUNS ONLY): a fresh LIST, or a watch.

A pass of the Kueue stand-in looks at every Workload, ClusterQueue and LocalQueue, a pass of the job
runner at every Job. :class:`ListedObjects` lists them anew for every pass: simple, always exact, and
what the unit tests drive through a fake transport. It is also expensive once many objects are
stored: with 500 finished Jobs kept on the manager of ``bench/multikueue_dispatch.py``, the two add-ons'
lists (encoded by the API server, decoded by the add-on, five times a second each) were a quarter
of that devcluster's CPU. :class:`WatchedObjects` is what a real controller does instead: it lists
once, follows a watch, and hands each pass copies of what it keeps.

Invariants of :class:`WatchedObjects`:

* **Read your writes.** Every object the add-ons' own client writes is recorded at once
  (:meth:`~devcluster.standin.client.ApiClient.add_write_observer`), so a pass never sees an older
  state of what an earlier pass wrote: a Workload admitted a moment ago and still pending in a
  stale cache would be charged no quota, and a second Workload could be admitted in its place.
* **Never backwards.** An object is replaced only by a newer resourceVersion (the devcluster's are
  integers from one counter), so a watch event that arrives after the write-through never undoes it.
* **Copies out.** :meth:`WatchedObjects.list` returns copies of the objects ``keep`` accepts (the
  passes change what they read before writing it); the cache itself is only changed by the watch
  and the write observer. Filtering first keeps the copying proportional to the live objects.
* **Lists again when the watch cannot go on** (``410 Gone``, a broken stream, an API error), after
  a short pause; until the first list has answered, a pass waits. A resource whose CRD is not
  installed (404) is empty, and is listed again until it is.
* ``changed`` is set on every change, so a controller can run its next pass at once instead of at
  the end of its poll interval (:func:`~devcluster.standin.client.run_passes`).

The watch goes over the network (HTTPS) even when the other requests go to the API server's ASGI app
in-process: httpx's ASGI transport answers only once the response is complete, and a watch never is.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol

import httpx
import orjson

from devcluster.standin.client import ApiClient, ApiError, Objects, Resource

__all__ = ["Keep", "ListedObjects", "ObjectSource", "WatchedObjects"]

Keep = Callable[[dict[str, Any]], bool]
"""Which objects a pass wants (the others are neither copied nor returned)."""

_RELIST_PAUSE: Final = 0.5
_WATCH_SECONDS: Final = 300
_OPEN_GRACE: Final = 2.0

_log = logging.getLogger(__name__)


class ObjectSource(Protocol):
    async def list(self, resource: Resource, *, keep: Keep | None = None) -> list[dict[str, Any]]:
        """The objects of ``resource`` that ``keep`` accepts (all without it), the caller's to change."""
        ...


class ListedObjects:
    """A LIST per call: exact, and the only source a fake transport without watches can serve."""

    def __init__(self, *, client: ApiClient) -> None:
        self._client = client

    async def list(self, resource: Resource, *, keep: Keep | None = None) -> list[dict[str, Any]]:
        items = await self._client.list(resource)
        return items if keep is None else [item for item in items if keep(item)]


def _key(obj: dict[str, Any]) -> tuple[str, str]:
    metadata = obj.get("metadata") or {}
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


def _version(obj: dict[str, Any]) -> int:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


class _Cache:
    """The objects of one resource, by (namespace, name), each with its JSON encoding: a pass
    decodes its copies from those bytes, encoded once per change instead of once per pass."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], tuple[dict[str, Any], bytes]] = {}
        self.synced = asyncio.Event()

    def reset(self, items: Objects) -> None:
        self.objects = {_key(item): (item, orjson.dumps(item)) for item in items}

    def put(self, obj: dict[str, Any]) -> bool:
        key = _key(obj)
        current = self.objects.get(key)
        if current is not None and _version(current[0]) >= _version(obj):
            return False
        self.objects[key] = (obj, orjson.dumps(obj))
        return True

    def delete(self, obj: dict[str, Any]) -> bool:
        key = _key(obj)
        current = self.objects.get(key)
        if current is None or _version(current[0]) > _version(obj):
            return False
        del self.objects[key]
        return True


class WatchedObjects:
    """List-then-watch caches of ``resources`` on one client (see the module docstring)."""

    def __init__(self, *, client: ApiClient, resources: Sequence[Resource]) -> None:
        self._client = client
        self._caches = {resource: _Cache() for resource in resources}
        self.changed = asyncio.Event()
        client.add_write_observer(self._written)
        self._stopping = False
        self._opening = 0  # requests between their start and their response's headers
        self._settled = asyncio.Event()
        self._settled.set()

    async def run(self) -> None:
        """Follow every resource until :meth:`stop` (or cancelled)."""
        await asyncio.gather(*(self._follow(resource) for resource in self._caches))

    async def stop(self, task: asyncio.Task[None]) -> None:
        """End ``task`` (running :meth:`run`) without cutting a connection in its TLS handshake.

        A request cancelled while its connection is being opened can leave the socket open (httpcore
        does not close it), and an API server stopping next would wait for it; so no request is
        started any more, the ones being opened are given a moment to get their answer's headers,
        and only then is the task cancelled (a watch cancelled while reading closes cleanly).
        """
        self._stopping = True
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(_OPEN_GRACE):
                await self._settled.wait()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    def _opening_started(self) -> None:
        self._opening += 1
        self._settled.clear()

    def _opening_ended(self) -> None:
        self._opening -= 1
        if self._opening == 0:
            self._settled.set()

    async def list(self, resource: Resource, *, keep: Keep | None = None) -> list[dict[str, Any]]:
        cache = self._caches.get(resource)
        if cache is None:
            raise KeyError(f"{resource.plural} is not watched")
        await cache.synced.wait()
        return [orjson.loads(raw) for obj, raw in cache.objects.values() if keep is None or keep(obj)]

    def _written(self, resource: Resource, obj: dict[str, Any]) -> None:
        cache = self._caches.get(resource)
        # the caller keeps (and may change) the object it wrote: the cache keeps its own copy
        if cache is not None and cache.synced.is_set() and cache.put(orjson.loads(orjson.dumps(obj))):
            self.changed.set()

    async def _follow(self, resource: Resource) -> None:
        cache = self._caches[resource]
        while not self._stopping:
            try:
                version = await self._relist(resource, cache)
                while version:
                    version = await self._watch(resource, cache, version)
            except ApiError as exc:
                if exc.status_code != 404:
                    _log.warning("watch of %s ended: %s; listing again", resource.plural, exc)
                elif not cache.synced.is_set():  # the CRD is not installed (yet): nothing to see
                    cache.synced.set()
            except (httpx.HTTPError, ValueError) as exc:
                _log.warning("watch of %s ended: %s; listing again", resource.plural, exc)
            await asyncio.sleep(_RELIST_PAUSE)

    async def _relist(self, resource: Resource, cache: _Cache) -> str:
        if self._stopping:
            return ""
        self._opening_started()
        try:
            items, version = await self._client.list_with_version(resource)
        finally:
            self._opening_ended()
        cache.reset(items)
        cache.synced.set()
        self.changed.set()
        return version

    async def _watch(self, resource: Resource, cache: _Cache, version: str) -> str:
        """One watch from ``version``; the version to go on from, or "" to list again."""
        if self._stopping:
            return ""
        opening = True

        def opened() -> None:
            nonlocal opening
            if opening:
                opening = False
                self._opening_ended()

        self._opening_started()
        try:
            async for event_type, obj in self._client.watch(
                resource, resource_version=version, timeout_seconds=_WATCH_SECONDS, opened=opened
            ):
                version = self._apply(cache, event_type, obj, version)
                if not version:
                    return ""
        finally:
            opened()
        return version

    def _apply(self, cache: _Cache, event_type: str, obj: dict[str, Any], version: str) -> str:
        """One watch event into the cache; the version to go on from, or "" to list again."""
        if event_type == "ERROR":
            return ""  # 410 Gone (or another watch error): the history is lost, list again
        version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
        if event_type != "BOOKMARK" and (cache.delete(obj) if event_type == "DELETED" else cache.put(obj)):
            self.changed.set()
        return version
