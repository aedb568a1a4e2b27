"""What the webhook needs to know about the cluster, answered from memory.

Admission is latency critical and the API server waits for us (``timeoutSeconds`` <= 10), so every
question the defaulting and validation rules ask - a Namespace's labels, whether a LocalQueue exists,
which ClusterQueue a LocalQueue points to, which controllers run a ClusterQueue's AdmissionChecks,
whether a WorkloadPriorityClass exists, an owner object - is answered from informer caches: no API
round trip per admission in steady state (Kueue answers the same questions from its queue manager
and scheduler cache).

``Lookups`` is the protocol the rules use; it is synchronous on purpose (a cache read never waits).
``InMemoryLookups`` is a plain implementation for tests and for the informer-fed adapter: the
informers' event handlers call its ``put_*``/``delete_*`` methods, so one class serves both.
``synced`` gates ``/readyz``: a webhook that answered before its caches were filled would, e.g.,
not default ``managedBy`` for a job behind a MultiKueue check.

Owner caches may be filled on demand, as controller-runtime's cache starts an informer for a kind
on the first ``Get`` of it and blocks that ``Get`` until it has synced: ``owner`` then raises
``OwnerCacheNotReady`` for a kind whose cache is not filled yet (and starts filling it), the caller
awaits ``wait_owner_cache`` off the synchronous path and asks again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["InMemoryLookups", "Lookups", "ObjectKey", "OwnerCacheNotReady"]


@dataclass(frozen=True)
class ObjectKey:
    """An owner object: apiVersion, kind, namespace, name."""

    api_version: str
    kind: str
    namespace: str
    name: str


class OwnerCacheNotReady(Exception):
    """``owner`` was asked about a kind whose cache has not listed yet (it is being filled)."""

    def __init__(self, *, api_version: str, kind: str) -> None:
        super().__init__(f"the cache of {api_version}, Kind={kind} has not synced yet")
        self.api_version = api_version
        self.kind = kind


class Lookups(Protocol):
    def synced(self) -> bool:
        """True once every cache has listed its objects at least once."""

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        """The Namespace's labels, ``None`` when the Namespace is unknown."""

    def local_queue_exists(self, namespace: str, name: str) -> bool: ...

    def cluster_queue_for(self, namespace: str, local_queue: str) -> str | None:
        """``spec.clusterQueue`` of the LocalQueue, ``None`` when it does not exist."""

    def admission_check_controllers(self, cluster_queue: str) -> Sequence[str]:
        """``spec.controllerName`` of every existing AdmissionCheck the ClusterQueue uses."""

    def workload_priority_class_exists(self, name: str) -> bool: ...

    def owner(self, key: ObjectKey) -> Mapping[str, Any] | None:
        """The owner object (raw dict), ``None`` when it is not in the cache; raises
        ``OwnerCacheNotReady`` when the cache of its kind has not synced yet."""

    async def wait_owner_cache(self, *, api_version: str, kind: str, timeout_seconds: float) -> bool:
        """Wait until the cache of that kind has synced; ``False`` when ``timeout_seconds`` passed first."""


@dataclass
class InMemoryLookups:
    namespaces: dict[str, dict[str, str]] = field(default_factory=dict)
    #: (namespace, LocalQueue name) -> ClusterQueue name
    local_queues: dict[tuple[str, str], str] = field(default_factory=dict)
    #: ClusterQueue name -> AdmissionCheck names (``spec.admissionChecks`` / strategy rules)
    cluster_queue_checks: dict[str, list[str]] = field(default_factory=dict)
    #: AdmissionCheck name -> controllerName
    admission_checks: dict[str, str] = field(default_factory=dict)
    priority_classes: set[str] = field(default_factory=set)
    owners: dict[ObjectKey, dict[str, Any]] = field(default_factory=dict)
    is_synced: bool = True

    def synced(self) -> bool:
        return self.is_synced

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        return self.namespaces.get(namespace)

    def local_queue_exists(self, namespace: str, name: str) -> bool:
        return (namespace, name) in self.local_queues

    def cluster_queue_for(self, namespace: str, local_queue: str) -> str | None:
        return self.local_queues.get((namespace, local_queue))

    def admission_check_controllers(self, cluster_queue: str) -> Sequence[str]:
        checks = self.cluster_queue_checks.get(cluster_queue, [])
        return [self.admission_checks[name] for name in checks if name in self.admission_checks]

    def workload_priority_class_exists(self, name: str) -> bool:
        return name in self.priority_classes

    def owner(self, key: ObjectKey) -> Mapping[str, Any] | None:
        return self.owners.get(key)

    async def wait_owner_cache(self, *, api_version: str, kind: str, timeout_seconds: float) -> bool:
        return True

    # --- writers (tests, informer event handlers) -----------------------------------------------
    def put_owner(self, obj: dict[str, Any]) -> None:
        metadata = obj.get("metadata") or {}
        key = ObjectKey(obj["apiVersion"], obj["kind"], metadata.get("namespace", ""), metadata["name"])
        self.owners[key] = obj
