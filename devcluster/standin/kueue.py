"""A Kueue stand-in for LOCAL RUNS ONLY: admits Workloads on the devcluster like Kueue's scheduler.

Production always runs the real Kueue. This stand-in exists so that ``kueue-bridge`` can be run and
tested end to end on the embedded devcluster without a Go toolchain or container images. It plays
the parts of Kueue that kueue-bridge's job reconciler relies on and nothing more, writing the
Workload ``/status`` subresource through HTTP requests like any client (so a write races, conflicts and is
validated exactly like the real controller's):

* **Scheduler.** Pending Workloads (``spec.active`` not false, no ``QuotaReserved=True``, not
  ``Finished``; an evicted one only once ``Requeued=True``) are admitted per ClusterQueue in
  Kueue's order, higher ``spec.priority`` first, then by creationTimestamp (BestEffortFIFO: one
  that does not fit does not block later ones; StrictFIFO stops at it) within nominal quota. One
  that does not fit preempts lower-priority admitted Workloads of its ClusterQueue when its
  ``preemption.withinClusterQueue`` allows (:mod:`.preemption`). Every requested resource takes the first flavor of the
  resource group covering it; usage is Kueue's per-pod requests times ``count``. Admission writes
  ``status.admission`` and ``QuotaReserved=True`` "Quota reserved in ClusterQueue <cq>", turns a
  true ``Evicted``/``Preempted`` into False "Previously: <message>", and syncs ``Admitted``
  (True "The workload is admitted" when every admission check of the ClusterQueue is Ready).
  Quota is released when a Workload finishes, disappears, or loses its reservation.
* **Elastic slices.** A scale-up slice is admitted in place of the slice it replaces, which is
  then finished ``WorkloadSliceReplaced`` (``slices``).
* **Reasons of ``QuotaReserved=False``** are Kueue 0.20's with its default feature gates
  (UnadmittedWorkloadsObservability, Beta, on since 0.19; the deprecated ``Pending`` /
  ``Inadmissible`` are what it writes with the gate off): ``WaitingForQuota`` when the request fits
  the nominal quota but not the unused quota, ``ExceedsMaxQuota`` when it exceeds the nominal quota
  (no cohorts here: Kueue's maximum capacity), ``NoMatchingFlavor`` when no resource group covers a
  requested resource, ``WaitingForPreemptedWorkloads`` "<that message>. Pending the preemption of
  <n> workload(s)" once it preempts (victims still being evicted count, as in Kueue's
  ``IssuePreemptions``); the scheduler's Warning event has the same reason.
* **Workload controller.** Missing LocalQueue/ClusterQueue -> ``QuotaReserved=False`` reason
  ``Misconfigured`` with Kueue's "LocalQueue <q> doesn't exist" / "ClusterQueue <cq> doesn't exist". Deactivation
  (``spec.active=false``) of a reserved Workload -> ``Evicted=True`` reason ``Deactivated`` "The
  workload is deactivated" plus ``schedulingStats.evictions``, with ``clusterName`` and the
  nominations cleared and the checks reset as in every eviction (``checks.evict``); once the *job reconciler* has
  released the reservation (as with real Kueue, the stand-in never does that part),
  ``QuotaReserved=False`` reason ``Deactivated``. Reactivation of a Workload evicted as Deactivated
  -> ``Requeued=True`` reason ``Reactivated`` "The workload was reactivated", then normal admission.
* **Admission checks** (:mod:`.checks`): a ``Retry`` check evicts the Workload and resets its
  checks; once the job reconciler has released the quota (``Requeued=False`` reason
  ``AdmissionCheck``) it is requeued (``Requeued=True`` ``BackoffFinished`` "The workload backoff was
  finished"; the backoff itself is not modelled). A ``Rejected`` check sets ``DeactivationTarget``;
  any ``DeactivationTarget`` (also MultiKueue's ``EvictedOnManagerCluster`` on a worker)
  deactivates the Workload (``spec.active: false``), whose eviction then reads
  ``DeactivatedDueTo<reason>`` "The workload is deactivated due to <message>" and drops the target.

* **Field managers.** The scheduler's admission, every eviction (a check in ``Retry``, a
  deactivation, a preemption) and a ``Rejected`` check's ``DeactivationTarget`` are written as Kueue
  writes them, ``PatchAdmissionStatus``:
  a forced server-side apply of ``/status`` as ``kueue-admission`` carrying the admission state only
  (``shared.kueue.admission_apply``). The eviction clears ``clusterName`` and ``nominatedClusterNames`` by
  leaving them out, so, as on a real cluster, a field that another manager owns (written by an
  update, or applied under another name) survives it. The stand-in's other writes replace
  ``/status`` (PUT, as its own manager), as Kueue's check sync does.

* **Queues.** ClusterQueue and LocalQueue status as Kueue's queue controllers write it, at the end
  of each pass (:mod:`.queue_status`); a ClusterQueue whose flavors are missing, that is stopped or
  being deleted, and a stopped LocalQueue admit nothing (their Workloads: ``QuotaReserved=False``
  reason ``Suspended`` "ClusterQueue <cq> is inactive" / "LocalQueue <q> is inactive").

* **Events.** Kueue's Workload events (QuotaReserved, Admitted, the pending Warning,
  EvictedDueToDeactivated, EvictedDueToPreempted, Preempted, PreemptedWorkload,
  WorkloadSliceReplaced) with its reporting controllers and messages (:mod:`.workload_events`).

* **Namespace selection.** A ClusterQueue admits only Workloads from the namespaces its
  ``namespaceSelector`` selects: ``{}`` selects every namespace, no selector none (the CRD's
  "nothing selector"). Any other Workload stays pending as Kueue's scheduler leaves it:
  ``QuotaReserved=False`` reason ``Misconfigured`` "workload namespace doesn't match ClusterQueue
  selector", with the pending Warning. Namespace labels are read only for a non-empty selector.

Not modelled: cohorts/borrowing and preemption beyond the ClusterQueue, partial admission, TAS, the
draining of ``HoldAndDrain`` stop policies, requeue backoff. One pass is :meth:`KueueStandin.reconcile_once`: it looks at
every Workload that is not finished, in queue order. Passes run shortly after a watched change
(``objects`` / ``wake``, see :mod:`.objects`) and at least every ``poll_interval`` seconds (0.2),
instead of Kueue's per-object reconciles: simpler, and the same outcome.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, Final

import httpx
from pydantic import ValidationError

from devcluster.standin.checks import check_based_eviction, check_names, evict, sync_admitted
from devcluster.standin.client import ApiClient, Resource, run_passes
from devcluster.standin.jobrunner import JOBS, DeclarativeCompletion, JobRunner
from devcluster.standin.objects import ListedObjects, ObjectSource, WatchedObjects
from devcluster.standin.preemption import (
    mark_preempted,
    preemption_message,
    preemption_victims,
    queue_order,
    usage_of,
)
from devcluster.standin.queue_status import (
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    RESOURCE_FLAVORS,
    QueueActivity,
    QueueStatusWriter,
    cluster_queue_activity,
    tally_workloads,
)
from devcluster.standin.scheduling_stats import count_eviction
from devcluster.standin.slices import replaced_slice, retire_replaced_slice, slice_key
from devcluster.standin.workload_events import WorkloadEvents
from shared.constants import API_GROUP, Condition, Reason
from shared.kube.conditions import (
    is_false,
    is_object_condition_true,
    is_true,
    object_condition,
    remove_condition,
    set_object_condition,
    writable_conditions,
    writable_status,
)
from shared.kube.times import utc_now
from shared.kueue.admission_apply import ADMISSION_FIELD_MANAGER, admission_status_apply
from shared.kueue.quantity import format_usage, parse_quantity, pod_set_requests
from shared.labelselector import LabelSelector

__all__ = [
    "CLUSTER_QUEUES",
    "LOCAL_QUEUES",
    "NAMESPACES",
    "NAMESPACE_MISMATCH_MESSAGE",
    "RESOURCE_FLAVORS",
    "WORKLOADS",
    "KueueStandin",
    "start_addons",
]

WORKLOADS: Final = Resource(API_GROUP, "v1beta2", "workloads")
NAMESPACES: Final = Resource("", "v1", "namespaces")
NAMESPACE_MISMATCH_MESSAGE: Final = "workload namespace doesn't match ClusterQueue selector"
_DEACTIVATED_MESSAGE: Final = "The workload is deactivated"
_REACTIVATED_MESSAGE: Final = "The workload was reactivated"
_BACKOFF_FINISHED: Final = "BackoffFinished"
_SUSPENDED: Final = "Suspended"  # QuotaReserved=False: the Workload's queue does not admit
_BACKOFF_FINISHED_MESSAGE: Final = "The workload backoff was finished"

_log = logging.getLogger(__name__)


def _set_requeued(workload: dict[str, Any], *, reason: str, message: str, now: datetime) -> bool:
    """``Requeued=True`` (Kueue's ``SetRequeuedCondition(wl, reason, message, true)``): the Workload
    may be queued again; whether the condition changed."""
    return set_object_condition(
        workload, condition_type=Condition.REQUEUED, status="True", reason=reason, message=message, now=now
    )


def _set_quota_not_reserved(workload: dict[str, Any], *, reason: str, message: str, now: datetime) -> bool:
    """``QuotaReserved=False`` with ``reason``/``message`` (Kueue's ``SetQuotaReservation`` without an
    admission): why the Workload waits; whether the condition changed."""
    return set_object_condition(
        workload,
        condition_type=Condition.QUOTA_RESERVED,
        status="False",
        reason=reason,
        message=message,
        now=now,
    )


class _Quota:
    """Nominal quota and current usage of one ClusterQueue, per (flavor, resource)."""

    def __init__(self, cluster_queue: dict[str, Any]) -> None:
        self.flavor_for: dict[str, str] = {}
        self.nominal: dict[tuple[str, str], Decimal] = {}
        self.used: dict[tuple[str, str], Decimal] = {}
        for group in (cluster_queue.get("spec") or {}).get("resourceGroups") or []:
            flavors = group.get("flavors") or []
            if not flavors:
                continue
            first = flavors[0]
            for resource in group.get("coveredResources") or []:
                self.flavor_for.setdefault(resource, first.get("name", ""))
            for entry in first.get("resources") or []:
                self.nominal[(first.get("name", ""), entry["name"])] = parse_quantity(
                    entry.get("nominalQuota", 0)
                )

    def charge(self, admission: dict[str, Any], *, sign: int = 1) -> None:
        for key, amount in usage_of(admission).items():
            self.used[key] = self.used.get(key, Decimal(0)) + sign * amount

    def free(self, key: tuple[str, str]) -> Decimal:
        return self.nominal.get(key, Decimal(0)) - self.used.get(key, Decimal(0))


@dataclass(slots=True)
class _Target:
    """A ClusterQueue as one pass admits to it: its name and object, the quota its admitted
    Workloads leave, and those Workloads (preemption candidates)."""

    name: str
    cluster_queue: dict[str, Any]
    quota: _Quota
    admitted: list[dict[str, Any]] = field(default_factory=list)


class KueueStandin:
    """One controller playing Kueue's scheduler and workload controller (see module doc)."""

    def __init__(
        self,
        *,
        client: ApiClient,
        clock: Callable[[], datetime] = utc_now,
        poll_interval: float = 0.2,
        missing_queue_reason: str = Reason.MISCONFIGURED,
        objects: ObjectSource | None = None,
        wake: asyncio.Event | None = None,
    ) -> None:
        self._client = client
        self._objects: ObjectSource = objects or ListedObjects(client=client)
        self._wake = wake
        self._clock = clock
        self._poll_interval = poll_interval
        self._missing_queue_reason = missing_queue_reason
        # events are written at the end of the pass, after every admission of it (see .recorder)
        self._events = WorkloadEvents(client=client, clock=clock, deferred=True)
        self._queue_status = QueueStatusWriter(client=client)

    async def run(self) -> None:
        await run_passes(
            self.reconcile_once,
            interval=self._poll_interval,
            what="kueue stand-in",
            log=_log,
            wake=self._wake,
        )

    async def reconcile_once(self) -> None:
        """One full pass: workload-controller duties first, then FIFO admission per ClusterQueue;
        the pass's events last."""
        try:
            await self._reconcile_workloads()
        finally:
            await self._events.flush()

    async def _reconcile_workloads(self) -> None:
        now = self._clock()
        cluster_queues = {
            cq["metadata"]["name"]: cq
            for cq in await self._objects.list(CLUSTER_QUEUES)
            if cq.get("metadata")
        }
        local_queues = {
            (lq["metadata"].get("namespace", ""), lq["metadata"]["name"]): lq
            for lq in await self._objects.list(LOCAL_QUEUES)
            if lq.get("metadata")
        }
        flavors = {
            f["metadata"]["name"] for f in await self._objects.list(RESOURCE_FLAVORS) if f.get("metadata")
        }
        activities = {
            name: cluster_queue_activity(cq, flavors=flavors) for name, cq in cluster_queues.items()
        }
        # a finished Workload holds no quota and is never looked at again: not even copied
        live = await self._objects.list(
            WORKLOADS, keep=lambda w: not is_object_condition_true(w, Condition.FINISHED)
        )
        workloads = sorted(live, key=queue_order)
        by_key = {slice_key(workload): workload for workload in workloads}
        targets = {name: _Target(name, cq, _Quota(cq)) for name, cq in cluster_queues.items()}
        for workload in workloads:
            admission = (workload.get("status") or {}).get("admission")
            if (
                admission
                and is_object_condition_true(workload, Condition.QUOTA_RESERVED)
                and not is_object_condition_true(workload, Condition.FINISHED)
            ):
                target = targets.get(admission.get("clusterQueue", ""))
                if target is not None:
                    target.quota.charge(admission)
                    target.admitted.append(workload)
        blocked: set[str] = set()
        selection = _NamespaceSelection(self._objects)
        for workload in workloads:
            if is_object_condition_true(workload, Condition.FINISHED) or (workload.get("metadata") or {}).get(
                "deletionTimestamp"
            ):
                continue
            if await self._workload_controller(workload, cluster_queues, now):
                continue
            if not self._is_pending(workload):
                continue
            namespace = workload["metadata"].get("namespace", "")
            queue_name = (workload.get("spec") or {}).get("queueName", "")
            local_queue = local_queues.get((namespace, queue_name))
            if local_queue is None:
                await self._mark_inadmissible(workload, f"LocalQueue {queue_name} doesn't exist", now)
                continue
            if str((local_queue.get("spec") or {}).get("stopPolicy") or "None") != "None":
                await self._mark_suspended(workload, f"LocalQueue {queue_name} is inactive", now)
                continue
            cq_name = (local_queue.get("spec") or {}).get("clusterQueue", "")
            cluster_queue = cluster_queues.get(cq_name)
            if cluster_queue is None:
                await self._mark_inadmissible(workload, f"ClusterQueue {cq_name} doesn't exist", now)
                continue
            if not activities[cq_name].active:
                await self._mark_suspended(workload, f"ClusterQueue {cq_name} is inactive", now)
                continue
            if not await selection.selects(cluster_queue, namespace):
                await self._mark_pending(
                    workload, self._missing_queue_reason, NAMESPACE_MISMATCH_MESSAGE, now
                )
                continue
            if cq_name in blocked:
                continue
            fits = await self._try_admit(
                workload,
                targets[cq_name],
                now,
                replaced=replaced_slice(workload, by_key=by_key, cluster_queue=cq_name),
            )
            strict = (cluster_queue.get("spec") or {}).get("queueingStrategy") == "StrictFIFO"
            if not fits and strict:
                blocked.add(cq_name)
        await self._write_queue_status(workloads, cluster_queues, local_queues, activities, now)

    async def _write_queue_status(
        self,
        workloads: list[dict[str, Any]],
        cluster_queues: dict[str, dict[str, Any]],
        local_queues: dict[tuple[str, str], dict[str, Any]],
        activities: dict[str, QueueActivity],
        now: datetime,
    ) -> None:
        """The queues' counts and usage after this pass's writes (:mod:`.queue_status`)."""
        by_cluster_queue, by_local_queue = tally_workloads(
            workloads, local_queues=local_queues, is_pending=self._is_pending
        )
        await self._queue_status.sync(
            cluster_queues=cluster_queues,
            local_queues=local_queues,
            activities=activities,
            by_cluster_queue=by_cluster_queue,
            by_local_queue=by_local_queue,
            now=now,
        )

    # --- workload controller -----------------------------------------------------------------------
    async def _workload_controller(
        self, workload: dict[str, Any], cluster_queues: dict[str, dict[str, Any]], now: datetime
    ) -> bool:
        """Deactivation, reactivation, check-based eviction and admission-check sync; True when it wrote."""
        active = (workload.get("spec") or {}).get("active") is not False
        reserved = is_object_condition_true(workload, Condition.QUOTA_RESERVED)
        evicted = object_condition(workload, Condition.EVICTED)
        target = object_condition(workload, Condition.DEACTIVATION_TARGET)
        was_admitted = is_object_condition_true(workload, Condition.ADMITTED)
        deactivating = False
        changed = False
        admission_write = False  # an eviction or a DeactivationTarget: Kueue's kueue-admission apply
        message = _DEACTIVATED_MESSAGE
        if active and is_true(target):
            workload.setdefault("spec", {})["active"] = False
            await self._client.replace(WORKLOADS, workload)
            return True
        if not active:
            if reserved and not is_object_condition_true(workload, Condition.EVICTED):
                reason = Reason.DEACTIVATED
                if is_true(target):
                    reason = f"{Reason.DEACTIVATED}DueTo{target.get('reason', '')}"
                    message = f"{_DEACTIVATED_MESSAGE} due to {target.get('message', '')}"
                    remove_condition(writable_conditions(workload), Condition.DEACTIVATION_TARGET)
                evict(workload, reason=reason, message=message, now=now)
                count_eviction(workload, Reason.DEACTIVATED, str((target or {}).get("reason", "")))
                changed = deactivating = admission_write = True
            elif not reserved:
                changed = _set_quota_not_reserved(
                    workload, reason=Reason.DEACTIVATED, message=_DEACTIVATED_MESSAGE, now=now
                )
        elif (
            evicted is not None
            and is_true(evicted)
            and str(evicted.get("reason", "")).startswith(Reason.DEACTIVATED)
            and not reserved
            and not is_object_condition_true(workload, Condition.REQUEUED)
        ):
            changed = _set_requeued(
                workload, reason=Reason.REACTIVATED, message=_REACTIVATED_MESSAGE, now=now
            )
        elif _requeued_false(workload, Reason.ADMISSION_CHECK) and not reserved:
            changed = _set_requeued(
                workload, reason=_BACKOFF_FINISHED, message=_BACKOFF_FINISHED_MESSAGE, now=now
            )
        elif reserved and not is_object_condition_true(workload, Condition.FINISHED):
            changed = admission_write = check_based_eviction(workload, now)
            admission = (workload.get("status") or {}).get("admission") or {}
            cluster_queue = cluster_queues.get(admission.get("clusterQueue", ""))
            if not changed and cluster_queue is not None:
                changed = sync_admitted(workload, check_names(cluster_queue), now)
        if changed:
            stored = await (
                self._apply_admission(workload)
                if admission_write
                else self._client.replace_status(WORKLOADS, workload)
            )
            if stored is not None and deactivating:
                await self._events.deactivated(stored, message=message)
            elif (
                stored is not None
                and not was_admitted
                and is_object_condition_true(stored, Condition.ADMITTED)
            ):
                cq_name = ((stored.get("status") or {}).get("admission") or {}).get("clusterQueue", "")
                await self._events.admitted_by_checks(stored, cluster_queue=cq_name, now=now)
        return changed

    async def _apply_admission(self, workload: dict[str, Any]) -> dict[str, Any] | None:
        """Kueue's ``PatchAdmissionStatus``: ``workload``'s admission state force-applied to ``/status``
        as ``kueue-admission`` (strict: a stale read is a 409, retried next pass). What that manager
        applied before and leaves out now -- an eviction's ``clusterName`` and
        ``nominatedClusterNames`` -- is removed only where no other manager owns it too."""
        return await self._client.apply_status(
            WORKLOADS, admission_status_apply(workload), field_manager=ADMISSION_FIELD_MANAGER
        )

    @staticmethod
    def _is_pending(workload: dict[str, Any]) -> bool:
        if (workload.get("spec") or {}).get("active") is False:
            return False
        if is_object_condition_true(workload, Condition.QUOTA_RESERVED):
            return False
        return not is_object_condition_true(workload, Condition.EVICTED) or is_object_condition_true(
            workload, Condition.REQUEUED
        )

    async def _mark_inadmissible(self, workload: dict[str, Any], message: str, now: datetime) -> None:
        await self._set_not_reserved(workload, self._missing_queue_reason, message, now)

    async def _mark_suspended(self, workload: dict[str, Any], message: str, now: datetime) -> None:
        """A stopped LocalQueue or an inactive ClusterQueue: Kueue's ``Suspended`` (``Inadmissible``
        with the legacy reasons)."""
        legacy = self._missing_queue_reason != Reason.MISCONFIGURED
        await self._set_not_reserved(
            workload, self._missing_queue_reason if legacy else _SUSPENDED, message, now
        )

    async def _set_not_reserved(
        self, workload: dict[str, Any], reason: str, message: str, now: datetime
    ) -> dict[str, Any] | None:
        """``QuotaReserved=False`` with ``reason``/``message``; the status is written only on change
        (the stored Workload is returned then)."""
        if _set_quota_not_reserved(workload, reason=reason, message=message, now=now):
            return await self._client.replace_status(WORKLOADS, workload)
        return None

    # --- scheduler ---------------------------------------------------------------------------------
    async def _try_admit(
        self,
        workload: dict[str, Any],
        target: _Target,
        now: datetime,
        *,
        replaced: dict[str, Any] | None = None,
    ) -> bool:
        # a scale-up slice may use the quota of the slice it replaces (Kueue: a preemption target)
        freed: dict[str, Any] = ((replaced.get("status") or {}).get("admission") or {}) if replaced else {}
        target.quota.charge(freed, sign=-1)
        others = [candidate for candidate in target.admitted if candidate is not replaced]
        stored = await self._admit_within(workload, target, now, admitted=others)
        retired_slice = (
            await self._client.replace_status(WORKLOADS, replaced)
            if replaced is not None
            and stored is not None
            and retire_replaced_slice(replaced, new_slice=stored, now=now)
            else None
        )
        retired = retired_slice is not None
        if retired_slice is not None:
            finished = object_condition(retired_slice, Condition.FINISHED) or {}
            await self._events.slice_replaced(retired_slice, message=str(finished.get("message", "")))
        if not retired:
            target.quota.charge(freed)  # not admitted, or the old slice still holds its quota
        return stored is not None

    async def _admit_within(
        self, workload: dict[str, Any], target: _Target, now: datetime, *, admitted: list[dict[str, Any]]
    ) -> dict[str, Any] | None:
        """Admit ``workload`` within ``target``'s quota (preempting among ``admitted`` if it does not
        fit): the stored Workload, or ``None``."""
        cq_name, cluster_queue, quota = target.name, target.cluster_queue, target.quota
        assignments: list[dict[str, Any]] = []
        wanted: dict[tuple[str, str], Decimal] = {}
        for pod_set in (workload.get("spec") or {}).get("podSets") or []:
            name = pod_set.get("name", "main")
            requests = pod_set_requests(pod_set)
            flavors: dict[str, str] = {}
            for resource, amount in requests.items():
                flavor = quota.flavor_for.get(resource)
                if flavor is None:
                    message = f"couldn't assign flavors to pod set {name}: resource {resource} unavailable in ClusterQueue"
                    await self._mark_pending(workload, Reason.NO_MATCHING_FLAVOR, message, now)
                    return None
                flavors[resource] = flavor
                assumed = wanted.get((flavor, resource), Decimal(0))
                maximum = quota.nominal.get((flavor, resource), Decimal(0))
                if assumed + amount > maximum:  # flavorassigner fitsResourceQuota's NoFit
                    message = (
                        f"couldn't assign flavors to pod set {name}: insufficient quota for {resource} in "
                        f"flavor {flavor}, previously considered podsets requests "
                        f"({format_usage(resource, assumed)}) + current podset request "
                        f"({format_usage(resource, amount)}) > maximum capacity ({format_usage(resource, maximum)})"
                    )
                    await self._mark_pending(workload, Reason.EXCEEDS_MAX_QUOTA, message, now)
                    return None
                wanted[(flavor, resource)] = assumed + amount
            assignments.append(
                {
                    "name": name,
                    "flavors": flavors,
                    "resourceUsage": {
                        resource: format_usage(resource, amount) for resource, amount in requests.items()
                    },
                    "count": int(pod_set.get("count", 1)),
                }
            )
        shortfall = {
            key: amount - quota.free(key) for key, amount in wanted.items() if amount > quota.free(key)
        }
        if shortfall:
            (flavor, resource), short = next(iter(shortfall.items()))
            missing = format_usage(resource, short + min(quota.free((flavor, resource)), Decimal(0)))
            message = (
                f"couldn't assign flavors to pod set {assignments[0]['name'] if assignments else 'main'}: "
                f"insufficient unused quota for {resource} in flavor {flavor}, {missing} more needed"
            )
            preempted = await self._preempt_for(workload, target, admitted, shortfall, now)
            if preempted:
                message = f"{message}. Pending the preemption of {preempted} workload(s)"
                await self._mark_pending(workload, Reason.WAITING_FOR_PREEMPTED_WORKLOADS, message, now)
            else:
                await self._mark_pending(workload, Reason.WAITING_FOR_QUOTA, message, now)
            return None
        admission = {"clusterQueue": cq_name, "podSetAssignments": assignments}
        status = writable_status(workload)
        status["admission"] = admission
        set_object_condition(
            workload,
            condition_type=Condition.QUOTA_RESERVED,
            status="True",
            reason=Reason.QUOTA_RESERVED,
            message=f"Quota reserved in ClusterQueue {cq_name}",
            now=now,
        )
        for condition_type in (Condition.EVICTED, Condition.PREEMPTED):
            previous = object_condition(workload, condition_type)
            if is_true(previous):
                set_object_condition(
                    workload,
                    condition_type=condition_type,
                    status="False",
                    reason=Reason.QUOTA_RESERVED,
                    message=f"Previously: {previous.get('message', '')}",
                    now=now,
                )
        sync_admitted(workload, check_names(cluster_queue), now)
        # the scheduler's applyAdmission is PatchAdmissionStatus too: kueue-admission owns the
        # admission, so the job controller's eviction apply, which leaves it out, removes it
        stored = await self._apply_admission(workload)
        if stored is None:
            return None
        quota.charge(admission)
        await self._events.admitted_by_scheduler(stored, cluster_queue=cq_name, now=now)
        return stored

    async def _preempt_for(
        self,
        workload: dict[str, Any],
        target: _Target,
        admitted: list[dict[str, Any]],
        shortfall: dict[tuple[str, str], Decimal],
        now: datetime,
    ) -> int:
        """Preempt for ``workload``; how many Workloads are being preempted for it (already evicted
        ones included)."""
        victims = preemption_victims(
            preemptor=workload, cluster_queue=target.cluster_queue, admitted=admitted, shortfall=shortfall
        )
        message = preemption_message(workload, cluster_queue=target.name)
        for victim in victims or []:
            if mark_preempted(victim, message=message, now=now):
                stored = await self._apply_admission(victim)
                if stored is not None:
                    await self._events.preempted(
                        stored, preemptor=workload, cluster_queue=target.name, message=message
                    )
        return len(victims or [])

    async def _mark_pending(self, workload: dict[str, Any], reason: str, message: str, now: datetime) -> bool:
        """The scheduler's ``requeueAndUpdate``: ``QuotaReserved=False`` and a Warning, same reason."""
        stored = await self._set_not_reserved(workload, reason, message, now)
        if stored is not None:
            await self._events.pending(stored, reason=reason, message=message)
        return False


class _NamespaceSelection:
    """Whether a ClusterQueue's ``namespaceSelector`` selects a namespace, for one pass.

    ``metav1.LabelSelectorAsSelector``: no selector selects nothing, ``{}`` everything; the
    namespaces' labels are listed at most once a pass, and only for a non-empty selector.
    """

    def __init__(self, objects: ObjectSource) -> None:
        self._objects = objects
        self._labels: dict[str, dict[str, str]] | None = None

    async def selects(self, cluster_queue: dict[str, Any], namespace: str) -> bool:
        selector = (cluster_queue.get("spec") or {}).get("namespaceSelector")
        if selector is None:
            return False
        if not selector:
            return True
        if self._labels is None:
            self._labels = {
                ns["metadata"]["name"]: (ns["metadata"].get("labels") or {})
                for ns in await self._objects.list(NAMESPACES)
                if ns.get("metadata")
            }
        try:
            parsed = LabelSelector.model_validate(selector)
        except ValidationError:
            return False  # the API server validates the selector; an invalid one selects nothing
        return parsed.matches(self._labels.get(namespace, {}))


def _requeued_false(workload: dict[str, Any], reason: str) -> bool:
    requeued = object_condition(workload, Condition.REQUEUED)
    return requeued is not None and is_false(requeued) and requeued.get("reason") == reason


async def _cancel(task: asyncio.Task[None]) -> None:
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


async def start_addons(
    *,
    url: str,
    token: str,
    ca_file: str,
    kueue_standin: bool,
    job_runner: bool,
    clock: Callable[[], datetime] = utc_now,
    poll_interval: float = 0.2,
    default_run_seconds: float = 2.0,
    declarative: Sequence[DeclarativeCompletion] = (),
    transport: httpx.AsyncBaseTransport | None = None,
    watch: bool = True,
) -> contextlib.AsyncExitStack:
    """Start the requested add-ons as asyncio tasks; ``await stack.aclose()`` stops them.

    With ``watch`` (the default) each add-on reads from a watched cache of its objects
    (:class:`~devcluster.standin.objects.WatchedObjects`) and runs a pass soon after a change; without
    it, every pass lists them (for a transport that cannot stream a watch).
    """
    stack = contextlib.AsyncExitStack()
    client = ApiClient(url=url, token=token, ca_file=ca_file, transport=transport)
    stack.push_async_callback(client.aclose)

    def watched(*resources: Resource) -> WatchedObjects | None:
        if not watch:
            return None
        objects = WatchedObjects(client=client, resources=resources)
        stack.push_async_callback(
            objects.stop, asyncio.create_task(objects.run(), name="devcluster-addon-watches")
        )
        return objects

    if kueue_standin:
        objects = watched(WORKLOADS, CLUSTER_QUEUES, LOCAL_QUEUES, RESOURCE_FLAVORS, NAMESPACES)
        standin = KueueStandin(
            client=client,
            clock=clock,
            poll_interval=poll_interval,
            objects=objects,
            wake=objects.changed if objects else None,
        )
        stack.push_async_callback(
            _cancel, asyncio.create_task(standin.run(), name="devcluster-kueue-standin")
        )
    if job_runner:
        jobs = watched(JOBS)
        runner = JobRunner(
            client=client,
            clock=clock,
            poll_interval=poll_interval,
            default_run_seconds=default_run_seconds,
            declarative=declarative,
            objects=jobs,
            wake=jobs.changed if jobs else None,
        )
        stack.push_async_callback(_cancel, asyncio.create_task(runner.run(), name="devcluster-job-runner"))
    return stack
