"""What the job reconciler needs from a cluster, as three small protocols.

The reconcile logic (``reconciler.job_reconciler``) speaks only to these ports. Production binds them
to informer caches and the async client in ``shared.kube`` (``reconciler.cluster``); tests bind them
to an in-memory fake. Keeping the seam this narrow is what lets every Kueue rule be unit-tested
without a server, while the end-to-end tests on the devcluster prove the binding.

Invariants:

* **Reads may be stale; writes are checked.** ``ClusterReader`` answers from caches. Every write of
  an object we read carries its ``resourceVersion`` (an optimistic lock), so acting on a stale read
  fails with ``Conflict`` and the key is retried after the cache caught up — never a lost update.
* **Objects are raw dicts** in and out (``WireDict``); models are applied by the caller.
* **Events never fail a reconcile**: ``EventSink.record`` is fire-and-forget.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from shared.constants import WORKLOAD_GVK
from shared.kube import GroupVersionKind
from shared.models.base import WireDict

__all__ = [
    "WORKLOAD_GVK",
    "ClusterReader",
    "ClusterWriter",
    "ConflictError",
    "EventSink",
    "InvalidError",
    "JobKey",
    "JobStillActiveError",
    "NotFoundError",
]


class NotFoundError(Exception):
    """The object addressed by a write does not exist (any more)."""


class ConflictError(Exception):
    """The object changed since it was read (resourceVersion precondition failed) or already exists."""


class JobStillActiveError(Exception):
    """A stop has to wait: the job still has active pods, and its API server refuses the template
    restore until the job controller has deleted them (batch/v1 Job on kube-apiserver 1.36).

    Raised where Kueue's stop returns the refused write's error, so callers stop where Kueue's do
    (a Workload is neither deleted nor released from its finalizer before the job is back as it was
    created). The controller retries it with backoff like a conflict, without an error log or a
    Warning event: it is an expected state, not a fault, and the job's status update that reports
    the pods gone wakes the reconcile as well.
    """


class InvalidError(Exception):
    """The API server rejected a write as invalid (422): retrying the same write cannot help.

    ``message`` is the server's (``Job.batch "low" is invalid: spec.template: ...``); ``fields`` the
    paths its ``details.causes`` name, so the Warning event can say which field was refused.
    """

    def __init__(self, message: str, *, fields: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.fields = fields


@dataclass(frozen=True, order=True)
class JobKey:
    """The unit of work: one job of one kind, by namespace and name."""

    gvk: GroupVersionKind
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.gvk.kind}.{self.gvk.group or 'core'} {self.namespace}/{self.name}"


class ClusterReader(Protocol):
    async def get(self, gvk: GroupVersionKind, namespace: str | None, name: str) -> WireDict | None:
        """The object, or ``None`` when it does not exist. May be served from a cache."""

    async def workloads_owned_by(
        self, *, namespace: str, owner_gvk: GroupVersionKind, owner_name: str
    ) -> list[WireDict]:
        """Workloads in ``namespace`` with an ownerReference to ``owner_gvk``/``owner_name``."""

    async def list_priority_classes(self) -> list[WireDict]:
        """Every scheduling.k8s.io/v1 PriorityClass (for the cluster's globalDefault)."""


class ClusterWriter(Protocol):
    """Writes return the stored object; ``read_back=False`` says the caller drops it (a writer may
    then return ``{}`` and save parsing the answer)."""

    async def create(
        self, gvk: GroupVersionKind, namespace: str | None, body: WireDict, *, read_back: bool = True
    ) -> WireDict: ...

    async def update(
        self,
        gvk: GroupVersionKind,
        namespace: str | None,
        body: WireDict,
        *,
        subresource: str | None = None,
        read_back: bool = True,
    ) -> WireDict:
        """PUT with the body's ``metadata.resourceVersion`` as precondition."""

    async def merge_patch(
        self,
        gvk: GroupVersionKind,
        namespace: str | None,
        name: str,
        patch: WireDict,
        *,
        subresource: str | None = None,
        read_back: bool = True,
    ) -> WireDict: ...

    async def apply_status(
        self,
        gvk: GroupVersionKind,
        namespace: str | None,
        body: WireDict,
        *,
        field_manager: str,
        read_back: bool = True,
    ) -> WireDict:
        """Forced server-side apply of the status subresource as ``field_manager``; a
        ``metadata.resourceVersion`` in the body is a precondition (Conflict when stale)."""

    async def delete(
        self, gvk: GroupVersionKind, namespace: str | None, name: str, *, uid: str | None = None
    ) -> None:
        """Delete (background propagation), optionally only if the UID still matches."""


class EventSink(Protocol):
    def record(self, *, regarding: WireDict, event_type: str, reason: str, message: str) -> None:
        """Queue a Kubernetes event about ``regarding``; never raises, never blocks."""
