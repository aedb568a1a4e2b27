"""In-memory object store: one table per resource, a global revision, bounded watch history.

Invariants (the ones clients rely on, as with etcd behind kube-apiserver):

* ``revision`` is global and strictly increasing; every write gets the next one and it becomes the
  object's ``metadata.resourceVersion`` (a DELETED event carries the revision of the delete).
* Stored objects are never mutated after :meth:`Store.commit`: readers, watch events and history
  share them. Writers build a new dict and commit it.
* Each table keeps the last ``history_size`` events. ``floor`` is the revision after which the
  history is complete; a watch resuming at a revision below it must get 410 Expired, because events
  it has not seen are gone (kube's watch cache answers the same).
* Fan-out is synchronous within the commit (single event loop, no locks): an event is handed to
  every watcher of the table before ``commit`` returns, and serialised at most once per
  (type, apiVersion) however many watchers receive it (see :class:`StoredEvent.frame`).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import Any, Protocol

import orjson

__all__ = [
    "ADDED",
    "DELETED",
    "MODIFIED",
    "Persistence",
    "ResourceTable",
    "Store",
    "StoredEvent",
    "WatchSink",
]

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"

ObjectKey = tuple[str, str]  # (namespace or "", name)
TableKey = tuple[str, str]  # (group, plural)


class StoredEvent:
    """One committed change; ``prev`` is the object before it (None for ADDED)."""

    __slots__ = ("_frames", "obj", "prev", "revision", "type")

    def __init__(self, *, type: str, obj: dict[str, Any], prev: dict[str, Any] | None, revision: int) -> None:
        self.type = type
        self.obj = obj
        self.prev = prev
        self.revision = revision
        self._frames: dict[tuple[str, str], bytes] = {}

    def frame(
        self,
        *,
        event_type: str,
        api_version: str,
        convert: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> bytes:
        """The newline-terminated watch frame, serialised once per (type, apiVersion).

        ``convert`` turns the stored form into the served one when they differ in more than
        apiVersion (events.k8s.io Events); the apiVersion still identifies the cached frame.
        """
        cache_key = (event_type, api_version)
        cached = self._frames.get(cache_key)
        if cached is None:
            if convert is not None:
                obj = convert(self.obj)
            elif self.obj.get("apiVersion") == api_version:
                obj = self.obj
            else:
                obj = {**self.obj, "apiVersion": api_version}
            cached = b'{"type":"' + event_type.encode() + b'","object":' + orjson.dumps(obj) + b"}\n"
            self._frames[cache_key] = cached
        return cached


class WatchSink(Protocol):
    def offer(self, event: StoredEvent) -> None: ...

    def close(self) -> None: ...


class Persistence(Protocol):
    def put(self, *, table: TableKey, key: ObjectKey, obj: dict[str, Any], revision: int) -> None: ...

    def delete(self, *, table: TableKey, key: ObjectKey, revision: int) -> None: ...


class ResourceTable:
    __slots__ = ("floor", "history", "objects", "watchers")

    def __init__(self, *, history_size: int, floor: int) -> None:
        self.objects: dict[ObjectKey, dict[str, Any]] = {}
        self.history: deque[StoredEvent] = deque(maxlen=history_size)
        self.floor = floor
        self.watchers: set[WatchSink] = set()

    def events_after(self, revision: int) -> list[StoredEvent]:
        return [event for event in self.history if event.revision > revision]

    def objects_at(self, revision: int) -> dict[ObjectKey, dict[str, Any]]:
        """The objects as they were at ``revision`` (>= ``floor``): the current ones with every
        later event undone, newest first (an ADDED removed, a MODIFIED or DELETED put back)."""
        objects = dict(self.objects)
        for event in reversed(self.history):
            if event.revision <= revision:
                break
            meta = event.obj["metadata"]
            key = (meta.get("namespace") or "", meta["name"])
            if event.prev is None:
                objects.pop(key, None)
            else:
                objects[key] = event.prev
        return objects

    def sorted_items(self, namespace: str | None = None) -> list[tuple[ObjectKey, dict[str, Any]]]:
        """Objects in etcd key order (namespace, then name), optionally one namespace only."""
        if namespace is None:
            return sorted(self.objects.items())
        return sorted((k, v) for k, v in self.objects.items() if k[0] == namespace)


class Store:
    """All tables; ``listeners`` see every committed event (the garbage collector uses this)."""

    def __init__(
        self, *, history_size: int, persistence: Persistence | None = None, revision: int = 0
    ) -> None:
        self.history_size = history_size
        self.revision = revision
        self.persistence = persistence
        self.tables: dict[TableKey, ResourceTable] = {}
        self.listeners: list[Callable[[TableKey, StoredEvent], None]] = []

    def table(self, key: TableKey) -> ResourceTable:
        table = self.tables.get(key)
        if table is None:
            table = self.tables[key] = ResourceTable(history_size=self.history_size, floor=self.revision)
        return table

    def get(self, table: TableKey, key: ObjectKey) -> dict[str, Any] | None:
        found = self.tables.get(table)
        return None if found is None else found.objects.get(key)

    def load(self, table: TableKey, key: ObjectKey, obj: dict[str, Any]) -> None:
        """Insert an object read back from persistence: no event, no new revision."""
        self.table(table).objects[key] = obj

    def commit(
        self, *, table: TableKey, key: ObjectKey, event_type: str, obj: dict[str, Any]
    ) -> dict[str, Any]:
        """Store (or, for DELETED, remove) ``obj``; stamps and returns it with its new revision."""
        target = self.table(table)
        self.revision += 1
        revision = self.revision
        prev = target.objects.get(key)
        if event_type == DELETED:
            obj = {**obj, "metadata": {**obj["metadata"], "resourceVersion": str(revision)}}
            target.objects.pop(key, None)
            if self.persistence is not None:
                self.persistence.delete(table=table, key=key, revision=revision)
        else:
            obj["metadata"]["resourceVersion"] = str(revision)
            target.objects[key] = obj
            if self.persistence is not None:
                self.persistence.put(table=table, key=key, obj=obj, revision=revision)
        event = StoredEvent(type=event_type, obj=obj, prev=prev, revision=revision)
        history = target.history
        evicting = history.maxlen is not None and len(history) == history.maxlen
        history.append(event)
        if evicting:
            # kube's watch cache: a resume below (oldest event - 1) is "too old"
            target.floor = history[0].revision - 1
        for watcher in list(target.watchers):
            watcher.offer(event)
        for listener in self.listeners:
            listener(table, event)
        return obj

    def drop_table(self, table: TableKey) -> None:
        """Forget a resource entirely (its CRD is gone); open watches end."""
        found = self.tables.pop(table, None)
        if found is not None:
            for watcher in list(found.watchers):
                watcher.close()

    def iter_all(self) -> Iterator[tuple[TableKey, ObjectKey, dict[str, Any]]]:
        for table_key, table in list(self.tables.items()):
            for key, obj in list(table.objects.items()):
                yield table_key, key, obj
