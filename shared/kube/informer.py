"""Informers: a watched, indexed, in-memory cache of one kind, with event handlers.

Controllers read from the cache instead of the API server (reads are free and consistent with the
events they were woken by), look objects up through indexes (every Workload owned by a job UID,
every job in a namespace) and react to changes through handlers.

Invariants:

* One ``Watch`` feeds one ``Store``; the store is mutated only by the informer's own task, so
  readers on the same event loop always see a consistent snapshot between awaits.
* Indexes are updated together with the item: ``by_index`` never returns a key that is not in the
  store, nor misses one that is.
* Handlers get ``on_add(obj)``, ``on_update(old, new)`` and ``on_delete(last_known)``. A relist after
  410 calls ``on_delete`` for objects that vanished in the gap. Every ``resync_period``
  ``on_update(obj, obj)`` is called for every cached object (client-go's resync), a safety net for
  missed edge-triggered work. A handler that raises is logged and does not stop the informer or the
  other handlers. Handlers are synchronous and must be quick (enqueue a key, nothing more).
* ``has_synced`` turns true after the first full list has been stored and handled; handlers added
  later are first told about every cached object as adds (as client-go does).
* Callers get a read-only ``StoreView``. Cached objects are shared, not copied (copying every object
  would double the memory and the CPU of every event): **never mutate them**; ``copy.deepcopy`` (or
  re-read from the API) before changing one.
* An optional ``transform`` (client-go's ``SetTransform``) is applied to every object the watch
  delivers, before it is stored or handed to a handler; ``strip_managed_fields`` is the usual one:
  a controller that never reads ``metadata.managedFields`` keeps a third less per object, and an
  update sent without them leaves the server's untouched (kube-apiserver's field manager keeps the
  live object's managedFields when a request carries none). ``shared.kube.compaction.SharedParts``
  drops them too and shares the parts cached objects repeat (pod templates, strings). The watch
  applies it as it decodes (``Watch(transform=...)``): a list's items page by page, so a relist
  holds one page of whole objects at a time, not every page until the last arrives.
  ``kueue-bridge:`` client-go's reflector lists every page, then transforms on ``Replace``; with
  every page alive at once, the parts the transform frees were scattered across a heap that
  CPython's allocator keeps (a cold start's RSS grew by what all pages decoded whole).
* ``metadata_only`` caches ``PartialObjectMetadata`` objects (client-go's metadata informers,
  controller-runtime's ``OnlyMetadata``): for a cache whose readers look at ``metadata`` alone, the
  server sends and we decode a fraction of each object. A server that cannot answer that way sends
  whole objects (a superset, read the same way).
"""

from __future__ import annotations

import asyncio
import builtins
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from shared.kube.client import KubeClient
from shared.kube.clock import Clock
from shared.kube.gvk import GroupVersionKind
from shared.kube.watch import EventType, Watch, WatchSettings, object_key

__all__ = [
    "CONTROLLER_RESYNC_PERIOD",
    "EventHandler",
    "Indexer",
    "Informer",
    "Store",
    "StoreView",
    "index_by_controller_uid",
    "index_by_label",
    "index_by_namespace",
    "strip_managed_fields",
]

logger = logging.getLogger(__name__)

CONTROLLER_RESYNC_PERIOD: Final = 10 * 3600.0
"""The controllers' resync period: controller-runtime's default ``SyncPeriod``, which Kueue's
manager keeps. A safety net, not a clock (time-based work requeues itself): every cached object is
handed to the controllers again at once, ~3 s of CPU per 10,000 Jobs with their Workloads."""

Obj = dict[str, Any]
Indexer = Callable[[Obj], Iterable[str]]
"""Index values of an object (zero, one or several)."""


def index_by_namespace(obj: Obj) -> list[str]:
    namespace = (obj.get("metadata") or {}).get("namespace")
    return [namespace] if namespace else []


def index_by_controller_uid(obj: Obj) -> list[str]:
    """The UID of the controlling owner (``ownerReferences[].controller: true``)."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, dict) and ref.get("controller") and ref.get("uid"):
            return [str(ref["uid"])]
    return []


def strip_managed_fields(obj: Obj) -> Obj:
    """Drop ``metadata.managedFields`` (in place: the object is the watch's own, fresh from JSON)."""
    metadata = obj.get("metadata")
    if isinstance(metadata, dict):
        metadata.pop("managedFields", None)
    return obj


def index_by_label(label: str) -> Indexer:
    """Index objects by the value of one label."""

    def index(obj: Obj) -> list[str]:
        value = ((obj.get("metadata") or {}).get("labels") or {}).get(label)
        return [value] if isinstance(value, str) else []

    return index


@dataclass(frozen=True)
class EventHandler:
    on_add: Callable[[Obj], None] | None = None
    on_update: Callable[[Obj, Obj], None] | None = None
    on_delete: Callable[[Obj], None] | None = None


class Store:
    """Key -> object with secondary indexes. Mutated only by its informer."""

    def __init__(self, indexers: Mapping[str, Indexer] | None = None) -> None:
        self._items: dict[str, Obj] = {}
        self._indexers: dict[str, Indexer] = dict(indexers or {})
        self._indices: dict[str, dict[str, set[str]]] = {name: {} for name in self._indexers}
        self._values: dict[str, dict[str, tuple[str, ...]]] = {name: {} for name in self._indexers}

    def add_indexer(self, name: str, indexer: Indexer) -> None:
        if name in self._indexers:
            raise ValueError(f"indexer {name!r} already exists")
        self._indexers[name] = indexer
        self._indices[name] = {}
        self._values[name] = {}
        for key, obj in self._items.items():
            self._index(name, key, obj)

    def _index_values(self, name: str, key: str, obj: Obj) -> tuple[str, ...]:
        try:
            return tuple(dict.fromkeys(self._indexers[name](obj)))
        except Exception:
            logger.exception(
                "indexer failed; object left out of the index", extra={"index": name, "key": key}
            )
            return ()

    def _index(self, name: str, key: str, obj: Obj) -> None:
        self._add_values(name, key, self._index_values(name, key, obj))

    def _add_values(self, name: str, key: str, values: tuple[str, ...]) -> None:
        if values:
            self._values[name][key] = values
            index = self._indices[name]
            for value in values:
                index.setdefault(value, set()).add(key)

    def _unindex_from(self, name: str, key: str) -> None:
        index = self._indices[name]
        for value in self._values[name].pop(key, ()):
            keys = index.get(value)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del index[value]

    def _unindex(self, key: str) -> None:
        for name in self._values:
            self._unindex_from(name, key)

    def upsert(self, obj: Obj) -> Obj | None:
        """Store ``obj``; an update whose index values did not change (the usual case: an object's
        owner or labels rarely move) leaves that index alone instead of removing and re-adding."""
        key = object_key(obj)
        old = self._items.get(key)
        self._items[key] = obj
        for name in self._indexers:
            if old is None:
                self._index(name, key, obj)
                continue
            values = self._index_values(name, key, obj)
            if values == self._values[name].get(key, ()):
                continue
            self._unindex_from(name, key)
            self._add_values(name, key, values)
        return old

    def delete(self, key: str) -> Obj | None:
        old = self._items.pop(key, None)
        if old is not None:
            self._unindex(key)
        return old

    def get(self, key: str) -> Obj | None:
        return self._items.get(key)

    def keys(self) -> builtins.list[str]:
        return list(self._items)

    def list(self) -> builtins.list[Obj]:
        return list(self._items.values())

    def by_index(self, name: str, value: str) -> builtins.list[Obj]:
        index = self._indices.get(name)
        if index is None:
            raise KeyError(f"no index named {name!r} (have: {sorted(self._indices)})")
        keys = index.get(value)
        if not keys:  # the usual answer for child-job lookups: no sort, no list building
            return []
        if len(keys) == 1:
            return [self._items[key] for key in keys]
        return [self._items[key] for key in sorted(keys)]

    def index_values(self, name: str) -> builtins.list[str]:
        return sorted(self._indices[name])

    def __len__(self) -> int:
        return len(self._items)

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._items))


class StoreView:
    """Read-only access to an informer's store."""

    __slots__ = ("_store",)

    def __init__(self, store: Store) -> None:
        self._store = store

    def get(self, key: str) -> Obj | None:
        return self._store.get(key)

    @property
    def lookup(self) -> Callable[[str], Obj | None]:
        """``get`` as the store's own dict lookup, without the two wrapper calls: for readers that
        look objects up several times per reconcile pass. Valid for the store's whole life (its
        dict is changed in place, never replaced)."""
        return self._store._items.get

    def get_by_name(self, name: str, namespace: str | None = None) -> Obj | None:
        return self._store.get(f"{namespace}/{name}" if namespace else name)

    def keys(self) -> builtins.list[str]:
        return self._store.keys()

    def list(self) -> builtins.list[Obj]:
        return self._store.list()

    def by_index(self, name: str, value: str) -> builtins.list[Obj]:
        return self._store.by_index(name, value)

    def index_values(self, name: str) -> builtins.list[str]:
        return self._store.index_values(name)

    def __len__(self) -> int:
        return len(self._store)

    def __contains__(self, key: object) -> bool:
        return key in self._store

    def __iter__(self) -> Iterator[str]:
        return iter(self._store)


class Informer:
    """Run ``run()`` as a task; read through ``store``; react through ``add_handler``."""

    def __init__(
        self,
        client: KubeClient,
        gvk: GroupVersionKind,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        indexers: Mapping[str, Indexer] | None = None,
        resync_period: float | None = None,
        watch_settings: WatchSettings | None = None,
        clock: Clock | None = None,
        transform: Callable[[Obj], Obj] | None = None,
        metadata_only: bool = False,
    ) -> None:
        self.gvk = gvk
        self.clock: Clock = clock or client.clock
        self.resync_period = resync_period
        self._store = Store(indexers)
        self.store = StoreView(self._store)
        self._handlers: list[EventHandler] = []
        self._synced = asyncio.Event()
        self.watch = Watch(
            client,
            gvk,
            namespace=namespace,
            label_selector=label_selector,
            field_selector=field_selector,
            settings=watch_settings or WatchSettings(),
            clock=self.clock,
            metadata_only=metadata_only,
            # the transform would drop them right after parsing: cut them before (watch.py)
            drop_managed_fields=transform is strip_managed_fields
            or getattr(transform, "drops_managed_fields", False) is True,
            transform=transform,
        )

    @property
    def has_synced(self) -> bool:
        return self._synced.is_set()

    async def wait_synced(self, timeout_seconds: float | None = None) -> bool:
        """Wait until the first list is stored; ``False`` if ``timeout_seconds`` passed first."""
        try:
            await self.clock.wait_for(self._synced.wait(), timeout_seconds)
        except TimeoutError:
            return False
        return True

    def add_indexer(self, name: str, indexer: Indexer) -> None:
        self._store.add_indexer(name, indexer)

    def add_handler(self, handler: EventHandler) -> None:
        self._handlers.append(handler)
        if self.has_synced and handler.on_add is not None:
            for obj in self._store.list():
                self._call(handler.on_add, obj)

    def _call(self, fn: Callable[..., None], *args: Obj) -> None:
        try:
            fn(*args)
        except Exception:
            self._handler_failed(args[-1])

    # The dispatches call each handler inside their own ``try`` rather than through ``_call``: one
    # Python-level call less per handler per event, the same logging when a handler raises.
    def _dispatch_add(self, obj: Obj) -> None:
        for handler in self._handlers:
            on_add = handler.on_add
            if on_add is not None:
                try:
                    on_add(obj)
                except Exception:
                    self._handler_failed(obj)

    def _dispatch_update(self, old: Obj, new: Obj) -> None:
        for handler in self._handlers:
            on_update = handler.on_update
            if on_update is not None:
                try:
                    on_update(old, new)
                except Exception:
                    self._handler_failed(new)

    def _dispatch_delete(self, obj: Obj) -> None:
        for handler in self._handlers:
            on_delete = handler.on_delete
            if on_delete is not None:
                try:
                    on_delete(obj)
                except Exception:
                    self._handler_failed(obj)

    def _handler_failed(self, obj: Obj) -> None:
        """Log the exception being handled (a handler raised for ``obj``)."""
        logger.exception("event handler failed", extra={"resource": str(self.gvk), "key": object_key(obj)})

    def resync(self) -> None:
        """Call ``on_update(obj, obj)`` for every cached object."""
        for obj in self._store.list():
            self._dispatch_update(obj, obj)

    async def _resync_loop(self, period: float) -> None:
        await self._synced.wait()
        while True:
            await self.clock.sleep(period)
            self.resync()

    async def run(self) -> None:
        """Consume the watch until cancelled."""
        resync_task = (
            asyncio.create_task(self._resync_loop(self.resync_period)) if self.resync_period else None
        )
        try:
            async for event in self.watch.events():
                if event.type is EventType.SYNCED:
                    self._synced.set()
                    continue
                obj = event.object
                if event.type is EventType.DELETED:
                    self._store.delete(object_key(obj))
                    self._dispatch_delete(obj)  # final state, or last known for a relist delete
                else:
                    old = self._store.upsert(obj)
                    if old is None:
                        self._dispatch_add(obj)
                    else:
                        self._dispatch_update(old, obj)
        finally:
            if resync_task is not None:
                resync_task.cancel()
