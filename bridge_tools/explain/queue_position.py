"""Where a pending Workload is in its queues: from Kueue's visibility API, else estimated Kueue's way.

**Visibility API** (``visibility.kueue.x-k8s.io``, Kueue's ``VisibilityOnDemand``): ``GET
.../clusterqueues/<cq>/pendingworkloads`` lists the ClusterQueue's pending Workloads in Kueue's own
queue order with ``positionInClusterQueue`` and ``positionInLocalQueue``; a user who may only see
their LocalQueue gets the same from ``.../namespaces/<ns>/localqueues/<lq>/pendingworkloads``. Both
are read in pages of :data:`PAGE` until the Workload is found. The answer is Kueue's, so it is not
labelled.

**Estimated** when the API is not served (or not readable): the Workloads this user can list that
Kueue's queue holds (active, no quota reserved, not finished, not evicted and waiting for their
requeue backoff), in the ClusterQueue of the LocalQueues that point at it, ordered as Kueue's
``baseCompareFunc`` (``pkg/cache/queue/cluster_queue.go``) orders its heap:

1. higher effective priority first (``spec.priority``, plus the ``kueue.x-k8s.io/priority-boost``
   annotation when the ``PriorityBoost`` gate is on);
2. then the older queue-order timestamp (``Ordering.GetQueueOrderTimestamp``): the ``Evicted``
   condition's time for a Workload evicted by a PodsReady timeout (with
   ``waitForPodsReady.requeuingStrategy.timestamp: Eviction``, the default) or by an admission
   check; with ``PrioritySortingWithinCohort`` off, a Workload preempted ``InCohortReclaimWhileBorrowing``
   goes just after its preemptor; else ``creationTimestamp``;
3. then the UID.

What the estimate cannot see, and says: the Workload Kueue keeps first while it preempts for it,
admission fair sharing (Kueue orders by LocalQueue usage first), and Workloads this user may not
list. The order is the same for both queueing strategies; what differs is what it means: under
``StrictFIFO`` the Workloads ahead block this one, under ``BestEffortFIFO`` one that does not fit is
set aside and does not.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from bridge_tools.explain.cluster_view import LOCAL_QUEUE, WORKLOAD, ClusterView
from shared.config import Configuration
from shared.constants import PRIORITY_BOOST_ANNOTATION, Condition, Reason
from shared.kube.conditions import is_true, object_condition
from shared.kube.times import parse_time

__all__ = [
    "PAGE",
    "QueueOrdering",
    "QueuePosition",
    "is_queued",
    "kueue_queue_order",
    "queue_order_timestamp",
    "queue_position",
]

WireDict = dict[str, Any]
PAGE: Final = 1000
_EPOCH: Final = datetime(1970, 1, 1).astimezone()


@dataclass(frozen=True)
class QueueOrdering:
    """The settings Kueue's queue order depends on (Kueue's, mirrored in kueue-bridge's config)."""

    eviction_timestamp: bool = True
    priority_boost: bool = False
    priority_sorting_within_cohort: bool = True
    admission_fair_sharing: bool = False

    @classmethod
    def from_config(cls, config: Configuration) -> QueueOrdering:
        return cls(
            eviction_timestamp=config.wait_for_pods_ready.requeuing_strategy.timestamp == "Eviction",
            priority_boost=config.feature_gate("PriorityBoost", default=False),
            priority_sorting_within_cohort=config.feature_gate("PrioritySortingWithinCohort", default=True),
            admission_fair_sharing=bool(config.admission_fair_sharing),
        )


@dataclass(frozen=True)
class QueuePosition:
    """0-based positions and queue lengths; ``estimated`` unless Kueue's visibility API said so."""

    cluster_queue: str
    index: int
    pending: int | None
    local_queue: str
    local_index: int | None
    local_pending: int | None
    estimated: bool
    source: str

    def summary(self) -> str:
        """``2 of 5 pending in the ClusterQueue, 1 of 3 in LocalQueue ns/q``."""
        of = f" of {self.pending}" if self.pending is not None else ""
        text = f"{self.index + 1}{of} pending in the ClusterQueue"
        if self.local_index is not None:
            local_of = f" of {self.local_pending}" if self.local_pending is not None else ""
            text += f", {self.local_index + 1}{local_of} in LocalQueue {self.local_queue}"
        return text


def _condition(workload: WireDict, condition_type: str) -> WireDict | None:
    """The condition of that type when it is ``True``."""
    found = object_condition(workload, condition_type)
    return found if found is not None and is_true(found) else None


def is_queued(workload: WireDict) -> bool:
    """Whether Kueue's queue holds it: active, no quota, not finished, not waiting for a requeue."""
    if (workload.get("spec") or {}).get("active") is False:
        return False
    if _condition(workload, Condition.QUOTA_RESERVED) or _condition(workload, Condition.FINISHED):
        return False
    return (
        _condition(workload, Condition.EVICTED) is None
        or _condition(workload, Condition.REQUEUED) is not None
    )


def _time(value: object) -> datetime:
    parsed = parse_time(value) if isinstance(value, str) else None
    return parsed or _EPOCH


def queue_order_timestamp(workload: WireDict, *, ordering: QueueOrdering) -> datetime:
    """Kueue's ``GetQueueOrderTimestamp``."""
    evicted = _condition(workload, Condition.EVICTED)
    reason = (evicted or {}).get("reason")
    if evicted is not None and ordering.eviction_timestamp and reason == Reason.PODS_READY_TIMEOUT:
        return _time(evicted.get("lastTransitionTime"))
    if evicted is not None and reason == Reason.ADMISSION_CHECK:
        return _time(evicted.get("lastTransitionTime"))
    if not ordering.priority_sorting_within_cohort:
        preempted = _condition(workload, "Preempted")
        if preempted is not None and preempted.get("reason") == Reason.IN_COHORT_RECLAIM_WHILE_BORROWING:
            return _time(preempted.get("lastTransitionTime")) + timedelta(milliseconds=1)
    return _time((workload.get("metadata") or {}).get("creationTimestamp"))


def _priority(workload: WireDict, *, ordering: QueueOrdering) -> int:
    priority = (workload.get("spec") or {}).get("priority")
    base = priority if isinstance(priority, int) else 0
    if ordering.priority_boost:
        boost = ((workload.get("metadata") or {}).get("annotations") or {}).get(PRIORITY_BOOST_ANNOTATION)
        try:
            return base + int(boost) if boost else base
        except ValueError:
            return base
    return base


def kueue_queue_order(workloads: Iterable[WireDict], *, ordering: QueueOrdering) -> list[WireDict]:
    """``workloads`` in Kueue's queue order (priority, queue-order timestamp, UID)."""

    def key(workload: WireDict) -> tuple[int, datetime, str]:
        return (
            -_priority(workload, ordering=ordering),
            queue_order_timestamp(workload, ordering=ordering),
            str((workload.get("metadata") or {}).get("uid") or ""),
        )

    return sorted(workloads, key=key)


def _same(item: WireDict, *, name: str, namespace: str) -> bool:
    metadata = item.get("metadata") or {}
    return bool(metadata.get("name") == name and metadata.get("namespace") == namespace)


def _int(value: object) -> int | None:
    return value if isinstance(value, int) else None


async def _from_visibility(
    view: ClusterView, *, cluster_queue: str, namespace: str, local_queue: str, name: str
) -> QueuePosition | None:
    where = f"{namespace}/{local_queue}"
    for offset in range(0, 100 * PAGE, PAGE):
        items = await view.pending_workloads(cluster_queue, offset=offset, limit=PAGE)
        if items is None:
            break
        for item in items:
            if _same(item, name=name, namespace=namespace):
                return QueuePosition(
                    cluster_queue=cluster_queue,
                    index=_int(item.get("positionInClusterQueue")) or 0,
                    pending=len(items) + offset if len(items) < PAGE else None,
                    local_queue=where,
                    local_index=_int(item.get("positionInLocalQueue")),
                    local_pending=None,
                    estimated=False,
                    source="Kueue's visibility API",
                )
        if len(items) < PAGE:
            return None
    for offset in range(0, 100 * PAGE, PAGE):
        items = await view.local_queue_pending_workloads(namespace, local_queue, offset=offset, limit=PAGE)
        if items is None:
            return None
        for item in items:
            if _same(item, name=name, namespace=namespace):
                return QueuePosition(
                    cluster_queue=cluster_queue,
                    index=_int(item.get("positionInClusterQueue")) or 0,
                    pending=None,
                    local_queue=where,
                    local_index=_int(item.get("positionInLocalQueue")),
                    local_pending=len(items) + offset if len(items) < PAGE else None,
                    estimated=False,
                    source="Kueue's visibility API (LocalQueue)",
                )
        if len(items) < PAGE:
            return None
    return None


def _estimate_note(ordering: QueueOrdering, reason: str) -> str:
    when = "creation time (eviction time after a PodsReady timeout or an admission check)"
    if not ordering.eviction_timestamp:
        when = "creation time (eviction time after an admission check)"
    note = f"estimated ({reason}) in Kueue's order: priority, then {when}, over the Workloads you can list"
    if ordering.admission_fair_sharing:
        note += "; admission fair sharing (LocalQueue usage first) is not simulated"
    return note


async def queue_position(
    view: ClusterView,
    *,
    cluster_queue: str,
    namespace: str,
    local_queue: str,
    name: str,
    ordering: QueueOrdering,
) -> QueuePosition | None:
    """The Workload's position (see the module docstring); ``None`` when it is not queued there."""
    found = await _from_visibility(
        view, cluster_queue=cluster_queue, namespace=namespace, local_queue=local_queue, name=name
    )
    if found is not None:
        return found
    queues = {
        (str((lq.get("metadata") or {}).get("namespace")), str((lq.get("metadata") or {}).get("name")))
        for lq in await view.items(LOCAL_QUEUE)
        if (lq.get("spec") or {}).get("clusterQueue") == cluster_queue
    }
    pending = kueue_queue_order(
        (
            item
            for item in await view.items(WORKLOAD)
            if is_queued(item)
            and (
                str((item.get("metadata") or {}).get("namespace")),
                str((item.get("spec") or {}).get("queueName")),
            )
            in queues
        ),
        ordering=ordering,
    )
    index = next((i for i, item in enumerate(pending) if _same(item, name=name, namespace=namespace)), None)
    if index is None:
        return None
    same_queue = [
        item
        for item in pending
        if (item.get("metadata") or {}).get("namespace") == namespace
        and (item.get("spec") or {}).get("queueName") == local_queue
    ]
    local_index = next(i for i, item in enumerate(same_queue) if _same(item, name=name, namespace=namespace))
    return QueuePosition(
        cluster_queue=cluster_queue,
        index=index,
        pending=len(pending),
        local_queue=f"{namespace}/{local_queue}",
        local_index=local_index,
        local_pending=len(same_queue),
        estimated=True,
        source=_estimate_note(ordering, view.visibility_problem(cluster_queue)),
    )
