"""The resource registry: which kinds exist, how they are addressed, and the discovery documents.

A :class:`ResourceType` is one *resource* (``jobs.batch``), stored once and served under each of its
``versions`` (the first is the preferred one). Built-in types are registered at start
(:mod:`devcluster.apiserver.registry.builtins`); CustomResourceDefinitions add and remove types at run time
(:mod:`devcluster.apiserver.customresources.definitions`), so discovery documents are rendered from the
registry on every request
rather than cached: clients such as kubectl re-read discovery after installing a CRD and must see it
at once. Discovery answers in the legacy (un-aggregated) format that every client understands.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ALL_VERBS", "Registry", "ResourceType"]

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")

#: validator hook: (object, old object or None) -> list of causes; see
#: devcluster.apiserver.validation.objectmeta
ObjectHook = Callable[[dict[str, Any], dict[str, Any] | None], Any]


@dataclass(slots=True)
class ResourceType:
    """One API resource. Mutable only through the registry (CRD updates replace the instance)."""

    group: str
    versions: tuple[str, ...]
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    #: subresources served, e.g. {"status"}; ``status`` isolates spec writes from status writes
    subresources: frozenset[str] = frozenset()
    #: True for compiled-in kinds: strategic merge patch is allowed only on these
    builtin: bool = True
    #: whether metadata.generation is maintained (spec changes bump it)
    tracks_generation: bool = False
    #: ``"subdomain"`` (most kinds), ``"label"`` (namespaces) or ``"path"`` (core Events: any path segment)
    name_rule: str = "subdomain"
    #: DELETE answers with the deleted object instead of a Success Status
    returns_deleted_object: bool = False
    #: extra field selector paths beyond metadata.name / metadata.namespace
    selectable_fields: tuple[str, ...] = ()
    #: per-version structural schemas for custom resources (see
    #: devcluster.apiserver.customresources.definitions)
    schemas: dict[str, Any] = field(default_factory=dict)
    #: custom resources: per-version field types for server-side apply (fieldtypes.LazyFieldTypes)
    field_types: Any = None
    #: the CRD's uid for custom resources ("" for built-ins)
    crd_uid: str = ""
    #: stored as another resource (group, plural) and converted on the way (events.k8s.io Events)
    served_from: tuple[str, str] | None = None
    #: custom resources: version -> its ``additionalPrinterColumns`` (see devcluster.apiserver.output.crd_printer)
    printer_columns: dict[str, tuple[dict[str, Any], ...]] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str]:
        return (self.group, self.plural)

    @property
    def preferred_version(self) -> str:
        return self.versions[0]

    def api_version(self, version: str) -> str:
        return f"{self.group}/{version}" if self.group else version

    @property
    def qualified_resource(self) -> str:
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    def discovery_entries(self) -> list[dict[str, Any]]:
        main: dict[str, Any] = {
            "name": self.plural,
            "singularName": self.singular,
            "namespaced": self.namespaced,
            "kind": self.kind,
            "verbs": list(self.verbs),
        }
        if self.short_names:
            main["shortNames"] = list(self.short_names)
        if self.categories:
            main["categories"] = list(self.categories)
        entries = [main]
        for sub in sorted(self.subresources):
            sub_verbs = ["get", "patch", "update"] if sub in {"status", "scale"} else ["update"]
            entries.append(
                {
                    "name": f"{self.plural}/{sub}",
                    "singularName": "",
                    "namespaced": self.namespaced,
                    "kind": "Scale" if sub == "scale" else self.kind,
                    "verbs": sub_verbs,
                }
            )
        return entries


class Registry:
    """Resource types by (group, plural) and by (group, version, plural); group order preserved."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[str, str], ResourceType] = {}
        self._by_gvr: dict[tuple[str, str, str], ResourceType] = {}
        self._by_gvk: dict[tuple[str, str, str], ResourceType] = {}

    def register(self, rtype: ResourceType) -> None:
        self.unregister(rtype.key)
        self._by_key[rtype.key] = rtype
        for version in rtype.versions:
            self._by_gvr[(rtype.group, version, rtype.plural)] = rtype
            self._by_gvk[(rtype.group, version, rtype.kind)] = rtype

    def unregister(self, key: tuple[str, str]) -> ResourceType | None:
        old = self._by_key.pop(key, None)
        if old is not None:
            for version in old.versions:
                self._by_gvr.pop((old.group, version, old.plural), None)
                self._by_gvk.pop((old.group, version, old.kind), None)
        return old

    def get(self, key: tuple[str, str]) -> ResourceType | None:
        return self._by_key.get(key)

    def lookup(self, *, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_gvr.get((group, version, plural))

    def by_kind(self, *, group: str, version: str, kind: str) -> ResourceType | None:
        return self._by_gvk.get((group, version, kind))

    def __iter__(self) -> Iterator[ResourceType]:
        return iter(list(self._by_key.values()))

    # -- discovery ---------------------------------------------------------------------------------
    def _group_versions(self) -> dict[str, list[str]]:
        groups: dict[str, list[str]] = {}
        for rtype in self._by_key.values():
            versions = groups.setdefault(rtype.group, [])
            for version in rtype.versions:
                if version not in versions:
                    versions.append(version)
        return groups

    def has_group_version(self, group: str, version: str) -> bool:
        return version in self._group_versions().get(group, [])

    def api_versions(self, *, server_address: str) -> dict[str, Any]:
        return {
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
        }

    def api_group(self, group: str) -> dict[str, Any] | None:
        versions = self._group_versions().get(group)
        if not versions or not group:
            return None
        ordered = sorted(versions, key=_version_priority)
        entries = [{"groupVersion": f"{group}/{v}", "version": v} for v in ordered]
        return {
            "kind": "APIGroup",
            "apiVersion": "v1",
            "name": group,
            "versions": entries,
            "preferredVersion": entries[0],
        }

    def api_group_list(self) -> dict[str, Any]:
        groups = []
        for group in self._group_versions():
            if not group:
                continue
            doc = self.api_group(group)
            if doc is not None:
                doc.pop("kind")
                doc.pop("apiVersion")
                groups.append(doc)
        return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}

    def resource_list(self, group: str, version: str) -> dict[str, Any] | None:
        if not self.has_group_version(group, version):
            return None
        resources: list[dict[str, Any]] = []
        for rtype in self._by_key.values():
            if rtype.group == group and version in rtype.versions:
                resources.extend(rtype.discovery_entries())
        return {
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": f"{group}/{version}" if group else version,
            "resources": resources,
        }


def _version_priority(version: str) -> tuple[int, int, int, str]:
    """Kubernetes version ordering: GA > beta > alpha, higher numbers first."""
    import re

    match = re.fullmatch(r"v(\d+)(?:(alpha|beta)(\d+))?", version)
    if not match:
        return (3, 0, 0, version)
    major = int(match.group(1))
    stage = {"alpha": 2, "beta": 1, None: 0}[match.group(2)]
    minor = int(match.group(3) or 0)
    return (stage, -major, -minor, version)
