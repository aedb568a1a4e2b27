"""Cached objects that share their repeated parts: an informer transform that keeps less per object.

A controller's informers hold every object of their kinds for the process's whole life, so memory per
cached object is memory per job. Most of a job's JSON is the same as its neighbours': the pod
template's ``spec`` (image, command, resources, restart policy), its Workload's copy of that template,
the strings ``"batch/v1"``, ``"Job"``, the namespace, condition reasons. Decoded as is, each object
holds its own copy of each.

``SharedParts`` is an informer ``transform`` (client-go's ``SetTransform``): it drops
``metadata.managedFields`` (as ``strip_managed_fields``) and replaces, in the fresh object the watch
decoded, every string by one shared copy (``sys.intern``: the uid of a job appears in its metadata,
its selector, its template's labels and its Workload's ownerReferences) and every dict or list below
the top level that is equal, element for element and in the same key order, to one seen recently by
the shared one. Structure and values are unchanged; only identity changes.

Invariants:

* The object handed in is the watch's own, fresh from JSON and not yet seen by anyone: it is changed
  in place (its containers are replaced by equal ones) and returned.
* Shared parts are read only, as every cached object already is (``shared.kube.informer``: cached
  objects are never mutated; ``copy.deepcopy`` or ``json_tree_copy`` before changing one). A part
  is shared only with parts equal in content *and key order*, so serialising a cached object gives
  the same bytes as before.
* The table of shared parts is bounded (``capacity`` entries, least recently used dropped first), so
  a stream of unique parts (metadata with its uid, conditions with their timestamps) costs at most the
  table, never a leak. Parts are keyed by the hash of their JSON bytes (a few microseconds per event)
  and a hit is checked for equality, so a hash collision only goes unshared.
* The top level and ``metadata`` are never shared as a whole (each object has its own name and uid);
  their members may be.
"""

from __future__ import annotations

import sys
from collections import OrderedDict
from typing import Any, Final

import orjson

__all__ = ["DEFAULT_CAPACITY", "SharedParts"]

#: shared parts remembered (least recently used dropped first)
DEFAULT_CAPACITY: Final = 8192
#: strings longer than this are left alone: long strings (messages, annotations) rarely repeat
_MAX_INTERNED = 256
#: containers whose JSON is longer are not looked up whole (their members still are)
_MAX_SHARED_BYTES = 16384
_intern = sys.intern


class SharedParts:
    """``transform(obj) -> obj`` for ``Informer(transform=...)``; one instance per process, passed to
    every informer, shares parts across kinds (a job's pod template with its Workload's)."""

    #: ``Informer`` cuts managedFields out of the watch's bytes before parsing when its transform
    #: drops them anyway (``shared.kube.watch.loads_without_managed_fields``)
    drops_managed_fields: Final = True

    __slots__ = ("_capacity", "_parts")

    def __init__(self, *, capacity: int = DEFAULT_CAPACITY) -> None:
        self._capacity = capacity
        #: hash of a part's JSON bytes -> the part (8 bytes of key per entry, not the bytes)
        #: (an OrderedDict: dropping the oldest entry of a plain dict leaves a hole that every later
        #: ``next(iter(...))`` walks over, a quarter of this transform's time at capacity)
        self._parts: OrderedDict[int, Any] = OrderedDict()

    def __len__(self) -> int:
        return len(self._parts)

    def __call__(self, obj: dict[str, Any]) -> dict[str, Any]:
        metadata = obj.get("metadata")
        if isinstance(metadata, dict):
            metadata.pop("managedFields", None)
        for key, value in obj.items():
            if key == "metadata" and isinstance(value, dict):
                for field, inner in value.items():
                    value[field] = self._share(inner)
            else:
                obj[key] = self._share(value)
        return obj

    def _share(self, value: Any) -> Any:
        if isinstance(value, str):
            return _intern(value) if len(value) <= _MAX_INTERNED else value
        if not isinstance(value, dict | list) or not value:
            return value
        try:
            encoded = orjson.dumps(value)
        except TypeError:  # not JSON (a transform upstream put something else in): keep it as is
            return value
        if len(encoded) > _MAX_SHARED_BYTES:  # large parts rarely repeat whole; their members may
            return self._share_members(value)
        digest = hash(encoded)
        parts = self._parts
        known = parts.get(digest)
        if known is not None:
            parts.move_to_end(digest)  # most recently used last
            if known == value:  # equal hashes of equal bytes; a collision is merely not shared
                return known
        self._share_members(value)
        if known is None:
            if len(parts) >= self._capacity:
                parts.popitem(last=False)
            parts[digest] = value
        return value

    def _share_members(self, value: dict[str, Any] | list[Any]) -> dict[str, Any] | list[Any]:
        if isinstance(value, dict):
            for key, inner in value.items():
                if isinstance(inner, str | dict | list):
                    value[key] = self._share(inner)
        else:
            for index, inner in enumerate(value):
                if isinstance(inner, str | dict | list):
                    value[index] = self._share(inner)
        return value
