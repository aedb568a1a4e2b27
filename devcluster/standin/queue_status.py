"""ClusterQueue and LocalQueue status for the Kueue stand-in (LOCAL RUNS ONLY), as Kueue writes it.

``kueuectl list clusterqueue`` / ``list localqueue`` and every dashboard read these, so the stand-in
writes what Kueue's clusterqueue and localqueue controllers write (``pkg/controller/core``; compared
field by field with real Kueue ff69552 and v0.19.2 on the kit, ``tests/real/test_kueuectl.py``):

* **ClusterQueue** ``status``: ``pendingWorkloads`` (Workloads waiting in its queues: active, no
  quota reserved, not evicted unless requeued, in a LocalQueue that exists and is not stopped),
  ``reservingWorkloads`` (quota reserved), ``admittedWorkloads`` (also ``Admitted``),
  ``flavorsReservation`` / ``flavorsUsage`` (every flavor and resource of its resource groups, in
  spec order, the summed usage of the reserving / admitted Workloads as ``total``, ``borrowed``
  "0": no cohorts here), and the ``Active`` condition: ``Ready`` "Can admit new workloads", or
  False with the first blocker's reason, ``Stopped`` (``spec.stopPolicy`` not ``None``) and
  ``FlavorNotFound`` "Can't admit new workloads: references missing ResourceFlavor(s): a,b." (all
  blockers' messages joined by ", "), or ``Terminating`` "Can't admit new workloads; clusterQueue
  is terminating" once deleted.
* **LocalQueue** ``status``: the same counts and usages for its own Workloads (``pendingWorkloads``
  0 when stopped; the usages list the ClusterQueue's flavors and resources, without ``borrowed``,
  and are left out when the ClusterQueue does not exist) and ``Active``: ``Ready`` "Can submit new
  workloads to localQueue", or False: ``Stopped`` "LocalQueue is stopped",
  ``ClusterQueueDoesNotExist`` / ``ClusterQueueIsInactive`` "Can't submit new workloads to
  clusterQueue".
* Both are written with a full ``PUT /status`` (Kueue's ``Status().Update``) only when something
  changed; a condition's ``lastTransitionTime`` moves only when its status does, and its
  ``observedGeneration`` is the queue's generation.
* The ClusterQueue carries Kueue's ``kueue.x-k8s.io/resource-in-use`` finalizer, removed once it is
  being deleted and no Workload reserves quota in it.

Not modelled: fair-sharing status, admission checks' effect on ``Active`` (missing or inactive
AdmissionChecks), the ResourceFlavor finalizer.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, Final

from devcluster.standin.client import ApiClient, Resource
from devcluster.standin.preemption import usage_of
from shared.constants import API_GROUP, RESOURCE_IN_USE_FINALIZER, Condition
from shared.kube.conditions import is_object_condition_true, set_object_condition
from shared.kueue.quantity import format_usage

__all__ = [
    "CLUSTER_QUEUES",
    "LOCAL_QUEUES",
    "RESOURCE_FLAVORS",
    "QueueActivity",
    "QueueStatusWriter",
    "QueueTally",
    "cluster_queue_activity",
    "cluster_queue_status",
    "local_queue_activity",
    "local_queue_status",
    "tally_workloads",
]

CLUSTER_QUEUES: Final = Resource(API_GROUP, "v1beta2", "clusterqueues")
LOCAL_QUEUES: Final = Resource(API_GROUP, "v1beta2", "localqueues")
RESOURCE_FLAVORS: Final = Resource(API_GROUP, "v1beta2", "resourceflavors")
ACTIVE: Final = "Active"
_READY: Final = "Ready"
_STOPPED: Final = "Stopped"
_FLAVOR_NOT_FOUND: Final = "FlavorNotFound"
_TERMINATING: Final = "Terminating"
_CQ_MISSING: Final = "ClusterQueueDoesNotExist"
_CQ_INACTIVE: Final = "ClusterQueueIsInactive"
_CANNOT_SUBMIT: Final = "Can't submit new workloads to clusterQueue"

UsageKey = tuple[str, str]
QueueKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class QueueActivity:
    """A queue's ``Active`` condition: whether it takes Workloads, Kueue's reason and message."""

    active: bool
    reason: str
    message: str


@dataclass
class QueueTally:
    """What one queue counts: pending, reserving and admitted Workloads and their usage."""

    pending: int = 0
    reserving: int = 0
    admitted: int = 0
    reserved: dict[UsageKey, Decimal] = field(default_factory=dict)
    used: dict[UsageKey, Decimal] = field(default_factory=dict)

    def charge(self, admission: Mapping[str, Any], *, admitted: bool) -> None:
        self.reserving += 1
        usage = usage_of(admission)
        _add(self.reserved, usage)
        if admitted:
            self.admitted += 1
            _add(self.used, usage)


def _add(totals: dict[UsageKey, Decimal], usage: Mapping[UsageKey, Decimal]) -> None:
    for key, amount in usage.items():
        totals[key] = totals.get(key, Decimal(0)) + amount


def _stopped(queue: Mapping[str, Any]) -> bool:
    return str((queue.get("spec") or {}).get("stopPolicy") or "None") != "None"


def _flavor_names(cluster_queue: Mapping[str, Any]) -> list[str]:
    names: list[str] = []
    for group in (cluster_queue.get("spec") or {}).get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            name = str(flavor.get("name", ""))
            if name not in names:
                names.append(name)
    return names


def cluster_queue_activity(cluster_queue: Mapping[str, Any], *, flavors: Iterable[str]) -> QueueActivity:
    """Kueue's ``inactiveReason`` for the stand-in's blockers (stop policy, missing flavors, deletion)."""
    if (cluster_queue.get("metadata") or {}).get("deletionTimestamp"):
        return QueueActivity(False, _TERMINATING, "Can't admit new workloads; clusterQueue is terminating")
    reasons: list[str] = []
    messages: list[str] = []
    if _stopped(cluster_queue):
        reasons.append(_STOPPED)
        messages.append("is stopped")
    existing = set(flavors)
    missing = [name for name in _flavor_names(cluster_queue) if name not in existing]
    if missing:
        reasons.append(_FLAVOR_NOT_FOUND)
        messages.append(f"references missing ResourceFlavor(s): {','.join(missing)}")
    if reasons:
        return QueueActivity(False, reasons[0], f"Can't admit new workloads: {', '.join(messages)}.")
    return QueueActivity(True, _READY, "Can admit new workloads")


def local_queue_activity(
    local_queue: Mapping[str, Any], *, cluster_queue_active: bool | None
) -> QueueActivity:
    """``cluster_queue_active`` is ``None`` when the LocalQueue's ClusterQueue does not exist."""
    if _stopped(local_queue):
        return QueueActivity(False, _STOPPED, "LocalQueue is stopped")
    if cluster_queue_active is None:
        return QueueActivity(False, _CQ_MISSING, _CANNOT_SUBMIT)
    if not cluster_queue_active:
        return QueueActivity(False, _CQ_INACTIVE, _CANNOT_SUBMIT)
    return QueueActivity(True, _READY, "Can submit new workloads to localQueue")


def _flavor_usage(
    cluster_queue: Mapping[str, Any], totals: Mapping[UsageKey, Decimal], *, borrowed: bool
) -> list[dict[str, Any]]:
    """Every flavor and resource of the ClusterQueue's resource groups, in spec order, with totals."""
    listed: list[dict[str, Any]] = []
    for group in (cluster_queue.get("spec") or {}).get("resourceGroups") or []:
        for flavor in group.get("flavors") or []:
            name = str(flavor.get("name", ""))
            resources = []
            for entry in flavor.get("resources") or []:
                resource = str(entry.get("name", ""))
                usage: dict[str, Any] = {
                    "name": resource,
                    "total": format_usage(resource, totals.get((name, resource), Decimal(0))),
                }
                if borrowed:
                    usage["borrowed"] = "0"
                resources.append(usage)
            listed.append({"name": name, "resources": resources})
    return listed


def _with_active(
    queue: Mapping[str, Any], status: dict[str, Any], activity: QueueActivity, now: datetime
) -> dict[str, Any]:
    """``status`` with the queue's current conditions and ``Active`` set (apimachinery's rules)."""
    holder = {"metadata": queue.get("metadata") or {}, "status": status}
    status["conditions"] = copy.deepcopy((queue.get("status") or {}).get("conditions") or [])
    set_object_condition(
        holder,
        condition_type=ACTIVE,
        status="True" if activity.active else "False",
        reason=activity.reason,
        message=activity.message,
        now=now,
    )
    return status


def cluster_queue_status(
    cluster_queue: Mapping[str, Any], *, activity: QueueActivity, tally: QueueTally, now: datetime
) -> dict[str, Any]:
    """The ``status`` Kueue's clusterqueue controller writes for these counts."""
    status: dict[str, Any] = {
        "pendingWorkloads": tally.pending,
        "reservingWorkloads": tally.reserving,
        "admittedWorkloads": tally.admitted,
        "flavorsReservation": _flavor_usage(cluster_queue, tally.reserved, borrowed=True),
        "flavorsUsage": _flavor_usage(cluster_queue, tally.used, borrowed=True),
    }
    return _with_active(cluster_queue, status, activity, now)


def local_queue_status(
    local_queue: Mapping[str, Any],
    *,
    cluster_queue: Mapping[str, Any] | None,
    activity: QueueActivity,
    tally: QueueTally,
    now: datetime,
) -> dict[str, Any]:
    """The ``status`` Kueue's localqueue controller writes for these counts."""
    status: dict[str, Any] = {
        "pendingWorkloads": 0 if _stopped(local_queue) else tally.pending,
        "reservingWorkloads": tally.reserving,
        "admittedWorkloads": tally.admitted,
    }
    if cluster_queue is not None:
        status["flavorsReservation"] = _flavor_usage(cluster_queue, tally.reserved, borrowed=False)
        status["flavorsUsage"] = _flavor_usage(cluster_queue, tally.used, borrowed=False)
    return _with_active(local_queue, status, activity, now)


def tally_workloads(
    workloads: Iterable[dict[str, Any]],
    *,
    local_queues: Mapping[QueueKey, Mapping[str, Any]],
    is_pending: Callable[[dict[str, Any]], bool],
) -> tuple[dict[str, QueueTally], dict[QueueKey, QueueTally]]:
    """Per ClusterQueue and per LocalQueue: who reserves quota (and is admitted), who is pending.

    ``workloads`` are the live (not finished) ones; ``is_pending`` says which the scheduler would
    consider (a deleted one never). A reservation counts for the ClusterQueue of its admission and
    for the Workload's LocalQueue; a pending Workload for its LocalQueue, unless that is missing or
    stopped, and then for the LocalQueue's ClusterQueue (Kueue's queue manager).
    """
    by_cluster_queue: dict[str, QueueTally] = {}
    by_local_queue: dict[QueueKey, QueueTally] = {}
    pending: list[dict[str, Any]] = []
    for workload in workloads:
        admission = (workload.get("status") or {}).get("admission")
        if not admission or not is_object_condition_true(workload, Condition.QUOTA_RESERVED):
            if not (workload.get("metadata") or {}).get("deletionTimestamp") and is_pending(workload):
                pending.append(workload)
            continue
        admitted = is_object_condition_true(workload, Condition.ADMITTED)
        cq = str(admission.get("clusterQueue", ""))
        by_cluster_queue.setdefault(cq, QueueTally()).charge(admission, admitted=admitted)
        local = by_local_queue.setdefault(_local_queue_key(workload), QueueTally())
        local.charge(admission, admitted=admitted)
    for workload in pending:
        key = _local_queue_key(workload)
        local_queue = local_queues.get(key)
        if local_queue is None or _stopped(local_queue):
            continue
        by_local_queue.setdefault(key, QueueTally()).pending += 1
        cq = str((local_queue.get("spec") or {}).get("clusterQueue", ""))
        by_cluster_queue.setdefault(cq, QueueTally()).pending += 1
    return by_cluster_queue, by_local_queue


def _local_queue_key(workload: Mapping[str, Any]) -> QueueKey:
    namespace = str((workload.get("metadata") or {}).get("namespace", ""))
    return namespace, str((workload.get("spec") or {}).get("queueName", ""))


class QueueStatusWriter:
    """Writes the queues' status and the ClusterQueue finalizer when they differ from what is stored."""

    def __init__(self, *, client: ApiClient) -> None:
        self._client = client

    async def sync(
        self,
        *,
        cluster_queues: Mapping[str, dict[str, Any]],
        local_queues: Mapping[QueueKey, dict[str, Any]],
        activities: Mapping[str, QueueActivity],
        by_cluster_queue: Mapping[str, QueueTally],
        by_local_queue: Mapping[QueueKey, QueueTally],
        now: datetime,
    ) -> None:
        for name, cluster_queue in cluster_queues.items():
            tally = by_cluster_queue.get(name) or QueueTally()
            if not await self._sync_finalizer(cluster_queue, reserving=tally.reserving):
                continue
            wanted = cluster_queue_status(cluster_queue, activity=activities[name], tally=tally, now=now)
            if wanted != (cluster_queue.get("status") or {}):
                await self._client.replace_status(CLUSTER_QUEUES, {**cluster_queue, "status": wanted})
        for key, local_queue in local_queues.items():
            cq_name = str((local_queue.get("spec") or {}).get("clusterQueue", ""))
            target = cluster_queues.get(cq_name)
            activity = local_queue_activity(
                local_queue, cluster_queue_active=None if target is None else activities[cq_name].active
            )
            wanted = local_queue_status(
                local_queue,
                cluster_queue=target,
                activity=activity,
                tally=by_local_queue.get(key) or QueueTally(),
                now=now,
            )
            if wanted != (local_queue.get("status") or {}):
                await self._client.replace_status(LOCAL_QUEUES, {**local_queue, "status": wanted})

    async def _sync_finalizer(self, cluster_queue: dict[str, Any], *, reserving: int) -> bool:
        """Kueue's finalizer on a live ClusterQueue, dropped once a deleted one holds no quota.

        Returns whether the ClusterQueue is still there to write the status of (unchanged by this
        call: a write here makes the pass's copy stale, so its status waits for the next pass).
        """
        metadata = cluster_queue.get("metadata") or {}
        finalizers = list(metadata.get("finalizers") or [])
        deleting = bool(metadata.get("deletionTimestamp"))
        if not deleting and RESOURCE_IN_USE_FINALIZER not in finalizers:
            finalizers.append(RESOURCE_IN_USE_FINALIZER)
        elif deleting and RESOURCE_IN_USE_FINALIZER in finalizers and reserving == 0:
            finalizers.remove(RESOURCE_IN_USE_FINALIZER)
        else:
            return True
        await self._client.replace(
            CLUSTER_QUEUES, {**cluster_queue, "metadata": {**metadata, "finalizers": finalizers}}
        )
        return False
