"""The reconciler's lookup for the ancestor walk (``shared.ancestry``): owners read through the
``ClusterReader`` (the informer caches).

The rule itself (``FindAncestorJobManagedByKueue``) is ``shared.ancestry``; this module only fetches.
A read that fails is Kueue's ``errors.Join(ErrWorkloadOwnerNotFound, err)``: ``OwnerNotFoundError``
caused by the read's exception, a retryable reconcile error.
"""

from __future__ import annotations

from reconciler.ports import ClusterReader
from shared.ancestry import (
    ChainLimitReachedError,
    CyclicOwnershipError,
    OwnerKinds,
    OwnerNotFoundError,
    OwnerRef,
    find_managed_ancestor_async,
)
from shared.kube import GroupVersionKind
from shared.models.base import WireDict

__all__ = [
    "ChainLimitReachedError",
    "CyclicOwnershipError",
    "OwnerKinds",
    "OwnerNotFoundError",
    "find_managed_ancestor",
]


async def find_managed_ancestor(
    *,
    job: WireDict,
    reader: ClusterReader,
    owner_kinds: OwnerKinds,
    manage_jobs_without_queue_name: bool,
) -> WireDict | None:
    """The top-most managed ancestor of ``job``, or ``None`` when ``job`` is top-level."""

    async def lookup(owner: OwnerRef) -> WireDict | None:
        gvk = GroupVersionKind.from_api_version(owner.api_version, owner.kind)
        try:
            return await reader.get(gvk, owner.namespace, owner.name)
        except Exception as exc:  # surfaced as a retryable reconcile error
            raise OwnerNotFoundError(owner) from exc

    return await find_managed_ancestor_async(
        job,
        owner_kinds=owner_kinds,
        manage_jobs_without_queue_name=manage_jobs_without_queue_name,
        lookup=lookup,
    )
