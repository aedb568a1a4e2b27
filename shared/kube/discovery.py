"""Discovery and REST mapping: from a GroupVersionKind to the URL of its resource.

Kueue-bridge serves kinds it learns from configuration (any Job-like CRD), so the mapping from a
kind to its plural, its scope and its subresources cannot be compiled in; it is read from the API
server's discovery documents (``/api/v1``, ``/apis``, ``/apis/{group}/{version}``).

Invariants:

* One group-version document is fetched per group-version and cached; the cache is keyed by
  group-version, so resolving ten kinds of one group costs one request.
* A miss (group-version unknown, or kind not in the cached document) **refetches** that
  group-version: a CRD installed after start-up becomes mappable without a restart. Refetches of the
  same group-version are spaced by ``miss_refresh_interval`` so a controller asking again and again
  for a kind that does not exist cannot flood discovery.
* A kind that is still unknown after a refresh raises ``UnknownKindError`` naming the GVK.
* ``register()`` lets a caller seed mappings (tests, or kinds known to exist), bypassing discovery.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any
from urllib.parse import quote

from shared.kube.clock import Clock
from shared.kube.errors import NotFound, UnknownKindError
from shared.kube.gvk import GroupVersionKind

__all__ = ["DiscoveryFetch", "RESTMapper", "ResourceInfo"]

DiscoveryFetch = Callable[[str], Awaitable[dict[str, Any]]]
"""GET a discovery path and return the decoded JSON (raises ``NotFound`` for unknown paths)."""


@dataclass(frozen=True)
class ResourceInfo:
    """How one kind is served: plural, scope, verbs and subresources."""

    gvk: GroupVersionKind
    plural: str
    namespaced: bool
    verbs: frozenset[str] = field(default_factory=frozenset)
    subresources: frozenset[str] = field(default_factory=frozenset)
    singular: str = ""
    short_names: tuple[str, ...] = ()

    @property
    def group_version_path(self) -> str:
        gvk = self.gvk
        return f"/apis/{gvk.group}/{gvk.version}" if gvk.group else f"/api/{gvk.version}"

    @cached_property
    def resource_label(self) -> str:
        """``plural`` or ``plural.group``: the metrics label and log name of this resource (per request)."""
        return f"{self.plural}.{self.gvk.group}" if self.gvk.group else self.plural

    def label_for(self, subresource: str | None) -> str:
        """``resource_label``, with ``/subresource`` when a request goes to one (``workloads.kueue.x-k8s.io/status``):
        kube-apiserver counts status writes apart from object writes, and so do our metrics."""
        return f"{self.resource_label}/{subresource}" if subresource else self.resource_label

    @cached_property
    def _cluster_collection(self) -> str:
        return f"{self.group_version_path}/{self.plural}"

    @cached_property
    def _namespaces_prefix(self) -> str:
        return f"{self.group_version_path}/namespaces/"

    def path(
        self, *, namespace: str | None = None, name: str | None = None, subresource: str | None = None
    ) -> str:
        """The URL path of the collection, an object or an object's subresource (per-request hot path)."""
        if self.namespaced and namespace:
            base = f"{self._namespaces_prefix}{_segment(namespace)}/{self.plural}"
        else:
            base = self._cluster_collection
        if name is None:
            if subresource:
                raise ValueError(f"{self.gvk}: subresource {subresource!r} needs an object name")
            return base
        if not name:
            raise ValueError(f"{self.gvk}: empty object name")
        return f"{base}/{_segment(name)}/{subresource}" if subresource else f"{base}/{_segment(name)}"


_PLAIN_SEGMENT = re.compile(r"[A-Za-z0-9._-]+")


def _segment(value: str) -> str:
    """URL-escape a path segment; Kubernetes names almost never need it, so check first (hot path)."""
    return value if _PLAIN_SEGMENT.fullmatch(value) and value not in (".", "..") else quote(value, safe="")


def _parse_group_version(document: dict[str, Any], *, group: str, version: str) -> dict[str, ResourceInfo]:
    """Kind -> ResourceInfo from an ``APIResourceList``; subresources are folded into their parent."""
    resources = document.get("resources")
    if not isinstance(resources, list):
        return {}
    subresources: dict[str, set[str]] = {}
    mains: list[dict[str, Any]] = []
    for entry in resources:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            continue
        name: str = entry["name"]
        if "/" in name:
            parent, _, sub = name.partition("/")
            subresources.setdefault(parent, set()).add(sub)
        else:
            mains.append(entry)
    by_kind: dict[str, ResourceInfo] = {}
    for entry in mains:
        kind = entry.get("kind")
        if not isinstance(kind, str) or not kind:
            continue
        # A kind can be served by several resources (rare, e.g. aliases); the first one wins.
        if kind in by_kind:
            continue
        verbs = entry.get("verbs")
        short = entry.get("shortNames")
        by_kind[kind] = ResourceInfo(
            gvk=GroupVersionKind(group, version, kind),
            plural=entry["name"],
            namespaced=bool(entry.get("namespaced", False)),
            verbs=frozenset(v for v in verbs if isinstance(v, str))
            if isinstance(verbs, list)
            else frozenset(),
            subresources=frozenset(subresources.get(entry["name"], ())),
            singular=str(entry.get("singularName") or ""),
            short_names=tuple(s for s in short if isinstance(s, str)) if isinstance(short, list) else (),
        )
    return by_kind


class RESTMapper:
    """Resolves GVKs through cached discovery documents, refreshing on a miss."""

    def __init__(self, *, fetch: DiscoveryFetch, clock: Clock, miss_refresh_interval: float = 1.0) -> None:
        self._fetch = fetch
        self._clock = clock
        self._miss_refresh_interval = miss_refresh_interval
        self._by_group_version: dict[tuple[str, str], dict[str, ResourceInfo]] = {}
        self._fetched_at: dict[tuple[str, str], float] = {}
        self._static: dict[GroupVersionKind, ResourceInfo] = {}
        self._locks: dict[tuple[str, str], asyncio.Lock] = {}

    def register(self, infos: Iterable[ResourceInfo]) -> None:
        for info in infos:
            self._static[info.gvk] = info

    def cached(self, gvk: GroupVersionKind) -> ResourceInfo | None:
        """The mapping if already known, without any request."""
        info = self._static.get(gvk)
        if info is not None:
            return info
        return self._by_group_version.get((gvk.group, gvk.version), {}).get(gvk.kind)

    async def resolve(self, gvk: GroupVersionKind) -> ResourceInfo:
        info = self.cached(gvk)
        if info is not None:
            return info
        key = (gvk.group, gvk.version)
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            info = self.cached(gvk)  # another task may have refreshed while we waited
            if info is not None:
                return info
            last = self._fetched_at.get(key)
            if last is None or self._clock.now() - last >= self._miss_refresh_interval:
                await self._refresh_group_version(gvk.group, gvk.version)
            info = self.cached(gvk)
        if info is None:
            served = (gvk.group, gvk.version) in self._by_group_version and bool(self._by_group_version[key])
            detail = (
                f"group-version {gvk.api_version} has no kind {gvk.kind!r}"
                if served
                else f"group-version {gvk.api_version} is not served"
            )
            raise UnknownKindError(gvk, detail)
        return info

    async def _refresh_group_version(self, group: str, version: str) -> None:
        path = f"/apis/{group}/{version}" if group else f"/api/{version}"
        self._fetched_at[(group, version)] = self._clock.now()
        try:
            document = await self._fetch(path)
        except NotFound:
            self._by_group_version[(group, version)] = {}
            return
        self._by_group_version[(group, version)] = _parse_group_version(
            document, group=group, version=version
        )

    async def server_groups(self) -> dict[str, list[str]]:
        """Group -> served versions, from ``/apis`` (plus the core group from ``/api``)."""
        groups: dict[str, list[str]] = {}
        core = await self._fetch("/api")
        groups[""] = [v for v in core.get("versions") or [] if isinstance(v, str)]
        document = await self._fetch("/apis")
        for group in document.get("groups") or []:
            if not isinstance(group, dict) or not isinstance(group.get("name"), str):
                continue
            versions = [
                v["version"]
                for v in group.get("versions") or []
                if isinstance(v, dict) and isinstance(v.get("version"), str)
            ]
            groups[group["name"]] = versions
        return groups
