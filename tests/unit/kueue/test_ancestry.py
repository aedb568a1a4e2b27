"""The ancestor walk (``FindAncestorJobManagedByKueue``): the rule, and the webhook and reconciler
giving the same answer through their own lookups.

The ``*_both_*`` tests are the cases on which the webhook's and the reconciler's walks used to
differ: kinds matched by apiVersion (Kueue's ``ownerReferenceMatchingGVK``), not by group, and every
kind Kueue registers followed by both, managed here or not.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import pytest

from reconciler.ancestry import find_managed_ancestor as reconciler_walk
from shared.ancestry import (
    ChainLimitReachedError,
    CyclicOwnershipError,
    OwnerKinds,
    OwnerNotFoundError,
    OwnerRef,
    find_managed_ancestor,
    kueue_owner_kinds,
)
from shared.constants import QUEUE_LABEL
from shared.kube import GroupVersionKind
from webhook.rules.defaulting import DefaultingError
from webhook.rules.defaulting import find_managed_ancestor as webhook_walk
from webhook.rules.lookups import InMemoryLookups
from webhook.rules.settings import WebhookSettings

JOB = ("batch/v1", "Job")
JOBSET = ("jobset.x-k8s.io/v1alpha2", "JobSet")
APPWRAPPER = ("workload.codeflare.dev/v1beta2", "AppWrapper")
DEPLOYMENT = ("apps/v1", "Deployment")
REPLICA_SET = ("apps/v1", "ReplicaSet")
POD = ("v1", "Pod")


def obj(
    kind: tuple[str, str], name: str, *, queue: str | None = None, owner: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "ns", "uid": f"uid-{name}"}
    if queue:
        metadata["labels"] = {QUEUE_LABEL: queue}
    if owner is not None:
        metadata["ownerReferences"] = [dict(owner)]
    return {"apiVersion": kind[0], "kind": kind[1], "metadata": metadata}


def ref(
    parent: Mapping[str, Any], *, api_version: str | None = None, controller: bool = True
) -> dict[str, Any]:
    return {
        "apiVersion": api_version or parent["apiVersion"],
        "kind": parent["kind"],
        "name": parent["metadata"]["name"],
        "uid": parent["metadata"]["uid"],
        "controller": controller,
    }


def chain(*links: tuple[tuple[str, str], str | None]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """``links`` from the job upward: (kind, queue). Returns the job and its owners, lowest first."""
    objects: list[dict[str, Any]] = []
    owner: dict[str, Any] | None = None
    for index, (kind, queue) in reversed(list(enumerate(links))):
        current = obj(kind, f"o{index}", queue=queue, owner=ref(owner) if owner else None)
        objects.insert(0, current)
        owner = current
    return objects[0], objects[1:]


def walk(
    job: Mapping[str, Any],
    owners: list[dict[str, Any]],
    *,
    managed: set[tuple[str, str]],
    mjwqn: bool = False,
) -> Mapping[str, Any] | None:
    store = {(o["apiVersion"], o["kind"], o["metadata"]["name"]): o for o in owners}
    return find_managed_ancestor(
        job,
        owner_kinds=kueue_owner_kinds(managed),
        manage_jobs_without_queue_name=mjwqn,
        lookup=lambda owner: store.get((owner.api_version, owner.kind, owner.name)),
    )


def name_of(found: Mapping[str, Any] | None) -> str | None:
    return None if found is None else found["metadata"]["name"]


# Kueue's documented examples (``FindAncestorJobManagedByKueue``'s doc comment): Job -> JobSet -> AppWrapper,
# "(q)" a queue-name label, JobSet disabled in the last row of each table.
@pytest.mark.parametrize(
    ("mjwqn", "queues", "jobset_enabled", "expected"),
    [
        (False, (None, None, None), True, None),
        (False, ("q", "q", None), True, "o1"),
        (False, ("q", None, "q"), True, "o2"),
        (False, ("q", "q", "q"), True, "o2"),
        (False, (None, None, "q"), False, "o2"),
        (True, (None, None, None), True, "o2"),
        (True, ("q", "q", None), True, "o2"),
        (True, ("q", None, "q"), True, "o2"),
        (True, ("q", "q", "q"), True, "o2"),
        (True, (None, None, None), False, "o2"),
    ],
)
def test_kueues_documented_examples(
    mjwqn: bool, queues: tuple[str | None, ...], jobset_enabled: bool, expected: str | None
) -> None:
    job, owners = chain((JOB, queues[0]), (JOBSET, queues[1]), (APPWRAPPER, queues[2]))
    managed = {JOB, APPWRAPPER} | ({JOBSET} if jobset_enabled else set())
    assert name_of(walk(job, owners, managed=managed, mjwqn=mjwqn)) == expected


def test_a_job_without_a_controller_owner_is_top_level_without_any_lookup() -> None:
    job = obj(JOB, "j", queue="q", owner=ref(obj(JOBSET, "p"), controller=False))

    def lookup(owner: OwnerRef) -> None:
        raise AssertionError(f"looked up {owner}")

    assert (
        find_managed_ancestor(
            job, owner_kinds=kueue_owner_kinds({JOB}), manage_jobs_without_queue_name=True, lookup=lookup
        )
        is None
    )


def test_errors_carry_kueues_texts() -> None:
    job, _ = chain((JOB, "q"), (JOBSET, "q"))
    with pytest.raises(OwnerNotFoundError) as missing:
        walk(job, [], managed={JOB, JOBSET})
    assert missing.value.owner == OwnerRef(*JOBSET, "ns", "o1")
    assert str(CyclicOwnershipError()) == "cyclic ownership"
    assert str(ChainLimitReachedError()) == "managed owner chain limit reached"
    with pytest.raises(ChainLimitReachedError):
        walk(*chain(*[(JOBSET, "q")] * 12), managed={JOBSET})
    assert name_of(walk(*chain(*[(JOBSET, "q")] * 11), managed={JOBSET})) == "o10"


# --- the webhook and the reconciler agree ------------------------------------------------------


class Reader:
    """The reconciler's ``ClusterReader`` over a list of objects (only ``get`` is used by the walk)."""

    def __init__(self, owners: list[dict[str, Any]]) -> None:
        self._store = {(o["apiVersion"], o["kind"], o["metadata"]["name"]): o for o in owners}

    async def get(self, gvk: GroupVersionKind, namespace: str | None, name: str) -> dict[str, Any] | None:
        return self._store.get((gvk.api_version, gvk.kind, name))


def both(
    job: dict[str, Any], owners: list[dict[str, Any]], *, managed: set[tuple[str, str]]
) -> tuple[str | None, str | None]:
    """(webhook's answer, reconciler's answer): the ancestor's name, or the error's type name."""
    lookups = InMemoryLookups()
    for owner in owners:
        lookups.put_owner(owner)
    settings = WebhookSettings(frameworks=(), extra_managed_owner_kinds=frozenset(managed))
    try:
        from_webhook = name_of(webhook_walk(job, settings=settings, lookups=lookups))
    except DefaultingError as exc:
        from_webhook = f"denied: {exc}"
    try:
        found = asyncio.run(
            reconciler_walk(
                job=job,
                reader=Reader(owners),  # type: ignore[arg-type]  # only get() is read
                owner_kinds=kueue_owner_kinds(managed),
                manage_jobs_without_queue_name=False,
            )
        )
        from_reconciler = name_of(found)
    except Exception as exc:
        from_reconciler = f"denied: {exc}"
    return from_webhook, from_reconciler


def test_both_match_an_owner_by_apiversion_not_by_group() -> None:
    # the reconciler matched on group: an owner reference naming another version of a managed kind
    # counted as that kind; Kueue compares apiVersion and kind exactly
    parent = obj(JOBSET, "parent", queue="q")
    job = obj(JOB, "child", queue="q", owner=ref(parent, api_version="jobset.x-k8s.io/v1alpha1"))
    assert both(job, [parent], managed={JOB, JOBSET}) == (None, None)
    job = obj(JOB, "child", queue="q", owner=ref(parent))
    assert both(job, [parent], managed={JOB, JOBSET}) == ("parent", "parent")


def test_both_walk_through_a_kind_kueue_knows_that_is_not_managed_here() -> None:
    # the webhook followed only managed kinds: it stopped at a JobSet real Kueue manages (or that is
    # disabled) and suspended a child whose AppWrapper is the managed ancestor
    job, owners = chain((JOB, "q"), (JOBSET, None), (APPWRAPPER, "q"))
    assert both(job, owners, managed={JOB, APPWRAPPER}) == ("o2", "o2")


def test_both_follow_a_replicaset_to_its_deployment() -> None:
    job, owners = chain((POD, "q"), (REPLICA_SET, None), (DEPLOYMENT, "q"))
    assert both(job, owners, managed={POD, DEPLOYMENT}) == ("o2", "o2")


def test_both_stop_at_a_kind_kueue_does_not_know() -> None:
    job, owners = chain((JOB, "q"), (("batch/v1", "CronJob"), "q"))
    assert both(job, owners, managed={JOB}) == (None, None)


def test_both_stop_at_a_stale_owner_reference() -> None:
    parent = obj(JOBSET, "parent", queue="q")
    stale = ref(parent) | {"uid": "an-older-uid"}
    assert both(obj(JOB, "child", queue="q", owner=stale), [parent], managed={JOB, JOBSET}) == (None, None)


def test_both_report_a_cycle_and_a_missing_owner() -> None:
    a, b = obj(JOBSET, "a", queue="q"), obj(JOBSET, "b", queue="q")
    a["metadata"]["ownerReferences"] = [ref(b)]
    b["metadata"]["ownerReferences"] = [ref(a)]
    job = obj(JOB, "child", queue="q", owner=ref(a))
    assert both(job, [a, b], managed={JOB, JOBSET}) == (
        "denied: cyclic ownership",
        "denied: cyclic ownership",
    )
    webhook, reconciler = both(job, [], managed={JOB, JOBSET})
    assert webhook == 'denied: JobSet.jobset.x-k8s.io "a" not found'  # the cache's NotFound, as Kueue
    assert reconciler == "denied: workload owner not found: JobSet ns/a"


def test_owner_kinds_follow_managed_kinds_even_when_known_omits_them() -> None:
    kinds = OwnerKinds(known=(), managed={JOBSET})
    assert kinds.follows(JOBSET) and kinds.follows(REPLICA_SET) and not kinds.follows(JOB)
