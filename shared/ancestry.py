"""The top-most Kueue-managed ancestor of a job: Kueue's ``FindAncestorJobManagedByKueue``.

Mirrors ``IntegrationManager.FindAncestorJobManagedByKueue`` (``pkg/controller/jobframework``),
with ``isKnownOwner`` / ``getJobTypeForOwner`` as the two kind sets of ``OwnerKinds``.

A job created by another managed job (a batch Job inside a JobSet inside an AppWrapper) must not get
its own Workload, and the webhook must not suspend it: quota is reserved once, by the top-most
managed ancestor (kueue #4860). The webhook (``WorkloadShouldBeSuspended``) and the reconciler
(``ReconcileGenericJob``) ask the same question; this module is the one answer.

The walk follows *controller* ownerReferences upward, always in the job's namespace:

* it stops, returning the best candidate so far, at an object without a controller owner, at an
  owner whose kind is not known (``OwnerKinds.known``, plus ``apps/v1`` ReplicaSet, which Kueue always
  knows: Pod -> ReplicaSet -> Deployment), and at a fetched owner whose UID differs from the
  reference's (a stale reference);
* a fetched owner is the new candidate when its kind is managed (``OwnerKinds.managed``) and either
  ``manageJobsWithoutQueueName`` is on or it carries a queue-name label;
* errors: a UID seen twice (``CyclicOwnershipError``), an owner that cannot be fetched
  (``OwnerNotFoundError``), more than ``MANAGED_OWNERS_CHAIN_LIMIT`` objects walked
  (``ChainLimitReachedError``; the reconciler records the ``JobNestingTooDeep`` Warning).

Kinds are matched on the reference's exact ``apiVersion`` and ``kind``, as Kueue's
``ownerReferenceMatchingGVK``: an owner reference written with another version of a kind is not that
kind's owner.

The rule is a synchronous generator (``walk_owner_chain``) that yields each owner it needs and is
sent the fetched object back, so the one rule serves both the webhook's synchronous informer
lookups (``find_managed_ancestor``) and the reconciler's awaited cache reads
(``find_managed_ancestor_async``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Generator, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from shared.constants import MANAGED_OWNERS_CHAIN_LIMIT
from shared.jobmeta import controller_owner_ref, job_namespace, queue_name
from shared.kueue_integrations import KUEUE_INTEGRATIONS

__all__ = [
    "KUEUE_INTEGRATION_OWNERS",
    "REPLICA_SET_OWNER",
    "AncestryError",
    "ChainLimitReachedError",
    "CyclicOwnershipError",
    "OwnerKey",
    "OwnerKinds",
    "OwnerNotFoundError",
    "OwnerRef",
    "find_managed_ancestor",
    "find_managed_ancestor_async",
    "kueue_owner_kinds",
    "walk_owner_chain",
]

#: ``(apiVersion, kind)`` of an owner reference
OwnerKey = tuple[str, str]

#: Kueue's ``isKnownOwner`` always knows ``apps/v1`` ReplicaSet (the hop from Pod to Deployment)
REPLICA_SET_OWNER: Final[OwnerKey] = ("apps/v1", "ReplicaSet")


class AncestryError(Exception):
    """The walk cannot answer; ``str()`` is Kueue's error text."""


class CyclicOwnershipError(AncestryError):
    """The controller ownerReferences form a cycle (Kueue's ``ErrCyclicOwnership``)."""

    def __init__(self) -> None:
        super().__init__("cyclic ownership")


class ChainLimitReachedError(AncestryError):
    """More than ``MANAGED_OWNERS_CHAIN_LIMIT`` objects walked (``ErrManagedOwnersChainLimitReached``)."""

    def __init__(self) -> None:
        super().__init__("managed owner chain limit reached")


@dataclass(frozen=True)
class OwnerRef:
    """An owner the walk needs: the controller reference's apiVersion, kind and name, in the job's
    namespace."""

    api_version: str
    kind: str
    namespace: str
    name: str


class OwnerNotFoundError(AncestryError):
    """A known controller owner could not be fetched (``ErrWorkloadOwnerNotFound``); ``owner`` names it."""

    def __init__(self, owner: OwnerRef) -> None:
        super().__init__(f"workload owner not found: {owner.kind} {owner.namespace}/{owner.name}")
        self.owner = owner


@dataclass(frozen=True)
class OwnerKinds:
    """Owner kinds by ``(apiVersion, kind)``: which the walk follows and which of them are managed.

    ``known`` is Kueue's ``isKnownOwner`` (every registered integration and external framework,
    enabled or not; ReplicaSet is added by the walk); ``managed`` is ``getJobTypeForOwner`` non-nil
    (the enabled ones). A managed kind is followed even when ``known`` omits it.
    """

    known: Collection[OwnerKey]
    managed: Collection[OwnerKey]

    def follows(self, key: OwnerKey) -> bool:
        return key in self.known or key in self.managed or key == REPLICA_SET_OWNER


#: every kind Kueue registers as an integration: known owners whether or not they are enabled
KUEUE_INTEGRATION_OWNERS: Final[frozenset[OwnerKey]] = frozenset(i.owner_key for i in KUEUE_INTEGRATIONS)


def kueue_owner_kinds(managed: Iterable[OwnerKey]) -> OwnerKinds:
    """Kueue's owner kinds when ``managed`` are the enabled ones: Kueue knows all its integrations
    (a child of a JobSet that real Kueue manages, or that is disabled, is still walked through)."""
    managed_kinds = frozenset(managed)
    return OwnerKinds(known=KUEUE_INTEGRATION_OWNERS | managed_kinds, managed=managed_kinds)


def _uid(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata")
    # ``type(...) is dict`` first: an ABC isinstance is a Python-level call (hot path: admission)
    uid = metadata.get("uid") if type(metadata) is dict or isinstance(metadata, Mapping) else None
    return uid if isinstance(uid, str) else ""


#: an owner object as the lookup returns it (the walk hands back one of these)
Owner = TypeVar("Owner", bound=Mapping[str, Any])


def walk_owner_chain(
    job: Mapping[str, Any], *, owner_kinds: OwnerKinds, manage_jobs_without_queue_name: bool
) -> Generator[OwnerRef, Owner | None, Owner | None]:
    """``FindAncestorJobManagedByKueue`` as a generator: yields each owner to fetch, is sent the
    fetched owner (``None``: it does not exist), returns the top-most managed ancestor (``None``:
    the job is top-level)."""
    namespace = job_namespace(job)
    seen: set[str] = set()
    current: Mapping[str, Any] = job
    top: Owner | None = None
    while True:
        uid = _uid(current)
        if uid in seen:
            raise CyclicOwnershipError()
        seen.add(uid)
        reference = controller_owner_ref(current)
        if reference is None:
            return top
        api_version, kind, name = reference.get("apiVersion"), reference.get("kind"), reference.get("name")
        if not (isinstance(api_version, str) and isinstance(kind, str) and isinstance(name, str)):
            return top
        key = (api_version, kind)
        if not owner_kinds.follows(key):
            return top
        owner = OwnerRef(api_version, kind, namespace, name)
        parent = yield owner
        if parent is None:
            raise OwnerNotFoundError(owner)
        reference_uid = reference.get("uid")
        if _uid(parent) != (reference_uid if isinstance(reference_uid, str) else ""):
            return top
        if key in owner_kinds.managed and (manage_jobs_without_queue_name or queue_name(parent)):
            top = parent
        current = parent
        if len(seen) > MANAGED_OWNERS_CHAIN_LIMIT:
            raise ChainLimitReachedError()


def find_managed_ancestor(
    job: Mapping[str, Any],
    *,
    owner_kinds: OwnerKinds,
    manage_jobs_without_queue_name: bool,
    lookup: Callable[[OwnerRef], Owner | None],
) -> Owner | None:
    """The top-most managed ancestor of ``job`` (``None``: top-level), fetching owners with ``lookup``
    (``None`` when the owner does not exist; its exceptions propagate)."""
    if controller_owner_ref(job) is None:
        return None  # most jobs: nothing to walk
    walk: Generator[OwnerRef, Owner | None, Owner | None] = walk_owner_chain(
        job, owner_kinds=owner_kinds, manage_jobs_without_queue_name=manage_jobs_without_queue_name
    )
    try:
        owner = next(walk)
        while True:
            owner = walk.send(lookup(owner))
    except StopIteration as done:
        ancestor: Owner | None = done.value
        return ancestor


async def find_managed_ancestor_async(
    job: Mapping[str, Any],
    *,
    owner_kinds: OwnerKinds,
    manage_jobs_without_queue_name: bool,
    lookup: Callable[[OwnerRef], Awaitable[Owner | None]],
) -> Owner | None:
    """``find_managed_ancestor`` with an awaited ``lookup``."""
    if controller_owner_ref(job) is None:
        return None
    walk: Generator[OwnerRef, Owner | None, Owner | None] = walk_owner_chain(
        job, owner_kinds=owner_kinds, manage_jobs_without_queue_name=manage_jobs_without_queue_name
    )
    try:
        owner = next(walk)
        while True:
            owner = walk.send(await lookup(owner))
    except StopIteration as done:
        ancestor: Owner | None = done.value
        return ancestor
