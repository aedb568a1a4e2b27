"""Priority order and in-ClusterQueue preemption for the Kueue stand-in (LOCAL RUNS ONLY).

Kueue's scheduler heads each ClusterQueue with its highest-priority pending Workload (then the
oldest), and when one does not fit a ClusterQueue whose ``spec.preemption.withinClusterQueue`` is
``LowerPriority`` (or ``LowerOrNewerEqualPriority``) it evicts admitted Workloads of that queue to
make room: the lowest priority first, then the most recently admitted, just enough to fit. A victim
gets ``Preempted=True`` reason ``InClusterQueue`` and is evicted as every eviction is
(``checks.evict``: ``Evicted=True`` reason ``Preempted``, its checks reset to ``Pending`` and its
cluster forgotten), both with Kueue's message (``pkg/scheduler/preemption``:
``preemptionMessage``), and keeps its quota
until the job reconciler releases it (once the job has no active pods). The preemptor stays pending
until then; a victim already evicted counts as a preemption under way and is not evicted again.

Not modelled: cohorts (reclaim, borrowing, fair sharing), ``borrowWithinCohort``, preemption across
flavors, priority boosts. This is what kueue-bridge's stop path needs to be exercised end to end.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any, Final

from devcluster.standin.checks import evict
from devcluster.standin.scheduling_stats import count_eviction
from shared.constants import JOB_UID_LABEL, Condition, Reason
from shared.kube.conditions import is_object_condition_true, object_condition, set_object_condition
from shared.kueue.quantity import parse_quantity

__all__ = [
    "mark_preempted",
    "preemption_message",
    "preemption_victims",
    "queue_order",
    "usage_of",
]

_PREEMPTING_POLICIES: Final = frozenset({"LowerPriority", "LowerOrNewerEqualPriority"})

UsageKey = tuple[str, str]  # (flavor, resource)


def _priority(workload: Mapping[str, Any]) -> int:
    value = (workload.get("spec") or {}).get("priority")
    return value if isinstance(value, int) else 0


def _created(workload: Mapping[str, Any]) -> str:
    return str((workload.get("metadata") or {}).get("creationTimestamp", ""))


def queue_order(workload: Mapping[str, Any]) -> tuple[int, str, str, str]:
    """Kueue's queue order: higher priority first, then older (creation), then by name."""
    metadata = workload.get("metadata") or {}
    return (
        -_priority(workload),
        _created(workload),
        str(metadata.get("namespace", "")),
        str(metadata.get("name", "")),
    )


def usage_of(admission: Mapping[str, Any]) -> dict[UsageKey, Decimal]:
    used: dict[UsageKey, Decimal] = {}
    for assignment in admission.get("podSetAssignments") or []:
        flavors = assignment.get("flavors") or {}
        for resource, quantity in (assignment.get("resourceUsage") or {}).items():
            key = (str(flavors.get(resource, "")), str(resource))
            used[key] = used.get(key, Decimal(0)) + parse_quantity(quantity)
    return used


def _can_preempt(policy: str, *, preemptor: Mapping[str, Any], candidate: Mapping[str, Any]) -> bool:
    if _priority(candidate) < _priority(preemptor):
        return True
    return (
        policy == "LowerOrNewerEqualPriority"
        and _priority(candidate) == _priority(preemptor)
        and _created(candidate) > _created(preemptor)
    )


def _admitted_at(workload: dict[str, Any]) -> str:
    condition = object_condition(workload, Condition.QUOTA_RESERVED) or {}
    return str(condition.get("lastTransitionTime", ""))


def preemption_victims(
    *,
    preemptor: Mapping[str, Any],
    cluster_queue: Mapping[str, Any],
    admitted: Iterable[dict[str, Any]],
    shortfall: Mapping[UsageKey, Decimal],
) -> list[dict[str, Any]] | None:
    """The admitted Workloads to evict so ``preemptor`` fits, or ``None`` when preemption cannot help."""
    policy = ((cluster_queue.get("spec") or {}).get("preemption") or {}).get("withinClusterQueue", "Never")
    if policy not in _PREEMPTING_POLICIES:
        return None
    candidates = [w for w in admitted if _can_preempt(policy, preemptor=preemptor, candidate=w)]
    candidates.sort(key=_admitted_at, reverse=True)  # the most recently admitted first ...
    candidates.sort(key=_priority)  # ... within the lowest priority first (stable sort)
    freed: dict[UsageKey, Decimal] = {}
    victims: list[dict[str, Any]] = []
    for candidate in candidates:
        usage = usage_of((candidate.get("status") or {}).get("admission") or {})
        if not any(key in shortfall for key in usage):
            continue
        victims.append(candidate)
        for key, amount in usage.items():
            freed[key] = freed.get(key, Decimal(0)) + amount
        if all(freed.get(key, Decimal(0)) >= needed for key, needed in shortfall.items()):
            return victims
    return None


def preemption_message(preemptor: Mapping[str, Any], *, cluster_queue: str) -> str:
    """Kueue's ``preemptionMessage`` for in-ClusterQueue prioritization (a queue with no cohort)."""
    metadata = preemptor.get("metadata") or {}
    uid = metadata.get("uid") or "UNKNOWN"
    job_uid = (metadata.get("labels") or {}).get(JOB_UID_LABEL) or "UNKNOWN"
    path = f"/{cluster_queue}"
    return (
        f"Preempted to accommodate a workload (UID: {uid}, JobUID: {job_uid}) due to "
        f"prioritization in the ClusterQueue; preemptor path: {path}; preemptee path: {path}"
    )


def mark_preempted(victim: dict[str, Any], *, message: str, now: datetime) -> bool:
    """``Evicted=True``/``Preempted``, ``Preempted=True``/``InClusterQueue``; False if already evicted."""
    if is_object_condition_true(victim, Condition.EVICTED):
        return False
    set_object_condition(
        victim,
        condition_type=Condition.PREEMPTED,
        status="True",
        reason=Reason.IN_CLUSTER_QUEUE,
        message=message,
        now=now,
    )
    evict(victim, reason=Reason.PREEMPTED, message=message, now=now)
    count_eviction(victim, Reason.PREEMPTED)
    return True
