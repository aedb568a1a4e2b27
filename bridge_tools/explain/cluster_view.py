"""A read-only, memoised view of the cluster for one explanation (or one ``make dev`` refresh).

``explain`` follows a chain (job -> Workload -> LocalQueue -> ClusterQueue -> ...) whose next hop
depends on the previous answer, and the ``make dev`` table explains several jobs against the same
queues. One ``ClusterView`` per run asks the API server each question at most once and hands every
caller the same answer, so a table refresh costs a handful of requests, not a handful per job, and
all the evidence of one explanation comes from one coherent set of reads.

Invariants:

* **Never writes.** Only GET/LIST (and the visibility API's GET).
* **The visibility API is optional.** Not served (Kueue's ``VisibilityOnDemand`` off) or forbidden to
  this user, it answers ``None`` and ``visibility_problem`` says which.
* **Absence is data, not an error.** ``get`` answers ``None`` for a missing object *and* for a kind
  the server does not serve (no Kueue CRDs installed is a finding, not a crash); ``items`` answers
  ``[]`` likewise and ``served`` says which it was. Every other API error propagates: a Forbidden
  read must not be reported as "does not exist".
* Callers must not mutate what they get (it is shared); copy before handing to an adapter.
"""

from __future__ import annotations

from typing import Final

from shared.constants import (
    ADMISSION_CHECK_GVK,
    CLUSTER_QUEUE_GVK,
    COHORT_GVK,
    LOCAL_QUEUE_GVK,
    MULTIKUEUE_CLUSTER_GVK,
    MULTIKUEUE_CONFIG_GVK,
    RESOURCE_FLAVOR_GVK,
    WORKLOAD_GVK,
    WORKLOAD_PRIORITY_CLASS_GVK,
)
from shared.kube import (
    CORE_EVENT,
    LEASE,
    MUTATING_WEBHOOK_CONFIGURATION_GVK,
    NAMESPACE_GVK,
    PRIORITY_CLASS_GVK,
    Forbidden,
    GroupVersionKind,
    KubeClient,
    NotFound,
    UnknownKindError,
)
from shared.models.base import WireDict

__all__ = [
    "ADMISSION_CHECK",
    "CLUSTER_QUEUE",
    "COHORT",
    "EVENT",
    "LEASE",
    "LOCAL_QUEUE",
    "MULTIKUEUE_CLUSTER",
    "MULTIKUEUE_CONFIG",
    "MUTATING_WEBHOOK_CONFIGURATION",
    "NAMESPACE",
    "PRIORITY_CLASS",
    "RESOURCE_FLAVOR",
    "VISIBILITY_GROUP",
    "WORKLOAD",
    "WORKLOAD_PRIORITY_CLASS",
    "ClusterView",
]

WORKLOAD: Final = WORKLOAD_GVK
LOCAL_QUEUE: Final = LOCAL_QUEUE_GVK
CLUSTER_QUEUE: Final = CLUSTER_QUEUE_GVK
COHORT: Final = COHORT_GVK
RESOURCE_FLAVOR: Final = RESOURCE_FLAVOR_GVK
ADMISSION_CHECK: Final = ADMISSION_CHECK_GVK
WORKLOAD_PRIORITY_CLASS: Final = WORKLOAD_PRIORITY_CLASS_GVK
MULTIKUEUE_CONFIG: Final = MULTIKUEUE_CONFIG_GVK
MULTIKUEUE_CLUSTER: Final = MULTIKUEUE_CLUSTER_GVK
NAMESPACE: Final = NAMESPACE_GVK
EVENT: Final = CORE_EVENT
PRIORITY_CLASS: Final = PRIORITY_CLASS_GVK
MUTATING_WEBHOOK_CONFIGURATION: Final = MUTATING_WEBHOOK_CONFIGURATION_GVK
VISIBILITY_GROUP: Final = "visibility.kueue.x-k8s.io"
_VISIBILITY_VERSIONS: Final = ("v1beta2", "v1beta1")


class ClusterView:
    """Memoised reads through one ``KubeClient`` (see the module docstring)."""

    def __init__(self, client: KubeClient) -> None:
        self._client = client
        self._objects: dict[tuple[GroupVersionKind, str | None, str], WireDict | None] = {}
        self._lists: dict[tuple[GroupVersionKind, str | None], list[WireDict]] = {}
        self._unserved: set[GroupVersionKind] = set()
        self._events: dict[tuple[str, str], list[WireDict]] = {}
        self._pending: dict[tuple[str, ...], list[WireDict] | None] = {}
        self._visibility_problems: dict[str, str] = {}

    async def served(self, gvk: GroupVersionKind) -> bool:
        """Whether the API server serves ``gvk`` (its CRD is installed)."""
        if gvk in self._unserved:
            return False
        try:
            await self._client.resource(gvk)
        except UnknownKindError:
            self._unserved.add(gvk)
            return False
        return True

    async def get(self, gvk: GroupVersionKind, name: str, *, namespace: str | None = None) -> WireDict | None:
        key = (gvk, namespace, name)
        if key in self._objects:
            return self._objects[key]
        found: WireDict | None = None
        if name and await self.served(gvk):
            try:
                found = await self._client.get(gvk, name, namespace=namespace)
            except NotFound:
                found = None
        self._objects[key] = found
        return found

    async def items(self, gvk: GroupVersionKind, *, namespace: str | None = None) -> list[WireDict]:
        key = (gvk, namespace)
        if key not in self._lists:
            items: list[WireDict] = []
            if await self.served(gvk):
                try:
                    items = (await self._client.list_all(gvk, namespace=namespace)).items
                except NotFound:  # a namespace that does not exist lists as 404 on some servers
                    items = []
            self._lists[key] = items
        return self._lists[key]

    async def events_about(self, *, uid: str, namespace: str) -> list[WireDict]:
        """The core/v1 Events whose ``involvedObject`` is the object with ``uid`` (any API writes them)."""
        key = (namespace, uid)
        if key not in self._events:
            self._events[key] = (
                (
                    await self._client.list_all(
                        EVENT, namespace=namespace, field_selector=f"involvedObject.uid={uid}"
                    )
                ).items
                if uid
                else []
            )
        return self._events[key]

    async def _visibility(
        self, key: tuple[str, ...], paths: list[str], *, params: dict[str, str]
    ) -> list[WireDict] | None:
        if key in self._pending:
            return self._pending[key]
        found: list[WireDict] | None = None
        for path in paths:
            try:
                summary = await self._client.request(
                    "GET", path, verb="get", resource="pendingworkloads", params=params
                )
            except NotFound:
                self._visibility_problems.setdefault(key[1], "Kueue's visibility API is not served")
                continue
            except Forbidden:
                self._visibility_problems[key[1]] = "you may not read Kueue's visibility API"
                break
            items = summary.get("items") if isinstance(summary, dict) else None
            found = [item for item in items or [] if isinstance(item, dict)]
            break
        self._pending[key] = found
        return found

    async def pending_workloads(
        self, cluster_queue: str, *, offset: int = 0, limit: int = 1000
    ) -> list[WireDict] | None:
        """Kueue's visibility API for ``cluster_queue`` (items in queue order), ``None`` if not served."""
        paths = [
            f"/apis/{VISIBILITY_GROUP}/{version}/clusterqueues/{cluster_queue}/pendingworkloads"
            for version in _VISIBILITY_VERSIONS
        ]
        params = {"limit": str(limit), "offset": str(offset)}
        return await self._visibility(("cq", cluster_queue, str(offset)), paths, params=params)

    async def local_queue_pending_workloads(
        self, namespace: str, local_queue: str, *, offset: int = 0, limit: int = 1000
    ) -> list[WireDict] | None:
        """The same for one LocalQueue (what a user with only LocalQueue access may read)."""
        paths = [
            f"/apis/{VISIBILITY_GROUP}/{version}/namespaces/{namespace}/localqueues/{local_queue}/pendingworkloads"
            for version in _VISIBILITY_VERSIONS
        ]
        params = {"limit": str(limit), "offset": str(offset)}
        return await self._visibility(("lq", f"{namespace}/{local_queue}", str(offset)), paths, params=params)

    def visibility_problem(self, cluster_queue: str) -> str:
        """Why the visibility API gave nothing for ``cluster_queue`` (empty when it did)."""
        return self._visibility_problems.get(cluster_queue, "Kueue's visibility API is not served")
