"""Finding the top-most Kueue-managed ancestor of a job (Kueue's ``FindAncestorJobManagedByKueue``).

A job created by another managed job (a batch Job inside a JobSet inside an AppWrapper) must not get
its own Workload: quota is reserved once, by the top-most managed ancestor, and children are merely
kept suspended until that ancestor's Workload is admitted. Getting this wrong double-counts quota
(kueue #4860) or leaves children running unadmitted.

Walk: follow *controller* ownerReferences upward within the namespace. Stop (returning the best
candidate so far) when there is no controller owner, the owner's kind is not one Kueue knows, or the
fetched owner's UID differs from the reference (a stale reference). A hop is a candidate when its
kind is managed here (enabled) and either ``manageJobsWithoutQueueName`` is on or it carries a
queue name. Errors: a cycle, an owner that cannot be fetched, or more than
``MANAGED_OWNERS_CHAIN_LIMIT`` hops (the caller records the ``JobNestingTooDeep`` warning).

Kinds are matched by API group and kind, not version: an owner reference written with an older
served version of the same kind is the same owner.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from reconciler.ports import ClusterReader
from shared.constants import MANAGED_OWNERS_CHAIN_LIMIT, QUEUE_LABEL
from shared.jobmeta import controller_owner_ref
from shared.kube import GroupVersionKind
from shared.models.base import WireDict

__all__ = [
    "REPLICA_SET_KIND",
    "AncestorNotFoundError",
    "ChainLimitReachedError",
    "CyclicOwnershipError",
    "OwnerKinds",
    "find_managed_ancestor",
]

GroupKind = tuple[str, str]

REPLICA_SET_KIND: GroupKind = ("apps", "ReplicaSet")


class CyclicOwnershipError(Exception):
    """The controller ownerReferences form a cycle."""


class AncestorNotFoundError(Exception):
    """A controller owner named by a job could not be fetched."""


class ChainLimitReachedError(Exception):
    """More than ``MANAGED_OWNERS_CHAIN_LIMIT`` ancestors were walked."""


@dataclass(frozen=True)
class OwnerKinds:
    """Which owner kinds the walk follows (``known``) and which of them Kueue manages here."""

    known: Collection[GroupKind]
    managed: Collection[GroupKind]


def _queue_name(obj: WireDict) -> str:
    return str(((obj.get("metadata") or {}).get("labels") or {}).get(QUEUE_LABEL) or "")


async def find_managed_ancestor(
    *,
    job: WireDict,
    reader: ClusterReader,
    owner_kinds: OwnerKinds,
    manage_jobs_without_queue_name: bool,
) -> WireDict | None:
    """The highest managed ancestor of ``job``, or ``None`` when ``job`` is top-level."""
    metadata = job.get("metadata") or {}
    namespace = str(metadata.get("namespace") or "")
    seen: set[str] = set()
    current = job
    top_level: WireDict | None = None
    while True:
        uid = str((current.get("metadata") or {}).get("uid") or "")
        if uid in seen:
            raise CyclicOwnershipError(f"cyclic ownership found at uid {uid}")
        seen.add(uid)
        reference = controller_owner_ref(current)
        if reference is None:
            return top_level
        owner_gvk = GroupVersionKind.of(reference)
        group_kind = (owner_gvk.group, owner_gvk.kind)
        if group_kind not in owner_kinds.known and group_kind != REPLICA_SET_KIND:
            return top_level
        owner_name = str(reference.get("name") or "")
        try:
            owner = await reader.get(owner_gvk, namespace, owner_name)
        except Exception as exc:  # surfaced as a retryable reconcile error
            raise AncestorNotFoundError(f"workload owner not found: {owner_gvk.kind} {owner_name}") from exc
        if owner is None:
            raise AncestorNotFoundError(
                f"workload owner not found: {owner_gvk.kind} {namespace}/{owner_name}"
            )
        if str((owner.get("metadata") or {}).get("uid") or "") != str(reference.get("uid") or ""):
            return top_level
        if group_kind in owner_kinds.managed and (manage_jobs_without_queue_name or _queue_name(owner)):
            top_level = owner
        current = owner
        if len(seen) > MANAGED_OWNERS_CHAIN_LIMIT:
            raise ChainLimitReachedError(
                f"managed owners chain limit reached: more than {MANAGED_OWNERS_CHAIN_LIMIT} ancestors"
            )
