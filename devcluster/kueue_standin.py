"""A Kueue stand-in for LOCAL RUNS ONLY: admits Workloads on the devcluster like Kueue's scheduler.

Production always runs the real Kueue. This stand-in exists so that ``kueue-bridge`` can be run and
tested end to end on the embedded devcluster without a Go toolchain or container images. It plays
the parts of Kueue that kueue-bridge's job reconciler relies on and nothing more, writing the
Workload ``/status`` subresource over HTTPS like any client (so a write races, conflicts and is
validated exactly like the real controller's):

* **Scheduler.** Pending Workloads (``spec.active`` not false, no ``QuotaReserved=True``, not
  ``Finished``; an evicted one only once ``Requeued=True``) are admitted FIFO per ClusterQueue by
  creationTimestamp (BestEffortFIFO: one that does not fit does not block later ones; StrictFIFO
  stops at it) within nominal quota. Every requested resource takes the first flavor of the
  resource group covering it; usage is Kueue's per-pod requests times ``count``. Admission writes
  ``status.admission`` and ``QuotaReserved=True`` "Quota reserved in ClusterQueue <cq>", turns a
  true ``Evicted``/``Preempted`` into False "Previously: <message>", and syncs ``Admitted``
  (True "The workload is admitted" when every admission check of the ClusterQueue is Ready).
  Quota is released when a Workload finishes, disappears, or loses its reservation.
* **Workload controller.** Missing LocalQueue/ClusterQueue -> ``QuotaReserved=False`` with
  Kueue's "LocalQueue <q> doesn't exist" / "ClusterQueue <cq> doesn't exist". Deactivation
  (``spec.active=false``) of a reserved Workload -> ``Evicted=True`` reason ``Deactivated`` "The
  workload is deactivated" plus ``schedulingStats.evictions``; once the *job reconciler* has
  released the reservation (as with real Kueue, the stand-in never does that part),
  ``QuotaReserved=False`` reason ``Deactivated``. Reactivation of a Workload evicted as Deactivated
  -> ``Requeued=True`` reason ``Reactivated`` "The workload was reactivated", then normal admission.
* **Admission checks** (``reconcileCheckBasedEviction``, ``evict.go``): a reserved Workload is
  ``Admitted`` only when every check of its ClusterQueue is ``Ready``. A ``Retry`` check evicts it:
  ``Evicted=True`` reason ``AdmissionCheck`` "Evicted due to AdmissionCheck in Retry state: "<name>"
  (<message>)", ``clusterName``/``nominatedClusterNames`` cleared, every non-Pending check reset to
  ``Pending`` "Reset to Pending after eviction. Previously: <state>" (``retryCount`` + 1 for Retry);
  once the job reconciler has released the quota (``Requeued=False`` reason ``AdmissionCheck``) it
  is requeued (``Requeued=True`` ``BackoffFinished`` "The workload backoff was finished"; the
  backoff itself is not modelled). A ``Rejected`` check sets ``DeactivationTarget`` reason
  ``AdmissionCheck`` "AdmissionCheck in Rejected state: ..."; any ``DeactivationTarget`` (also
  MultiKueue's ``EvictedOnManagerCluster`` on a worker) deactivates the Workload (``spec.active:
  false``), whose eviction then reads ``DeactivatedDueTo<reason>`` "The workload is deactivated due
  to <message>" and drops the target.

Not modelled: cohorts/borrowing/preemption, partial admission, TAS, namespaceSelector and stopPolicy
of ClusterQueues, requeue backoff, events. Polling (``poll_interval`` seconds, default 0.2) instead
of watches keeps it simple; one pass is :meth:`KueueStandin.reconcile_once`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Any, Final

import httpx

from devcluster.jobrunner import DeclarativeCompletion, JobRunner
from devcluster.standin_client import ApiClient, Resource, poll_forever
from devcluster.standin_conditions import (
    find_condition,
    format_time,
    is_true,
    set_condition,
    status_of,
    utc_now,
)
from devcluster.standin_quantity import format_usage, parse_quantity, pod_set_requests
from shared.constants import API_GROUP, CheckState, Condition, Reason

__all__ = [
    "CLUSTER_QUEUES",
    "LOCAL_QUEUES",
    "WORKLOADS",
    "KueueStandin",
    "start_addons",
]

WORKLOADS: Final = Resource(API_GROUP, "v1beta2", "workloads")
CLUSTER_QUEUES: Final = Resource(API_GROUP, "v1beta2", "clusterqueues")
LOCAL_QUEUES: Final = Resource(API_GROUP, "v1beta2", "localqueues")
_DEACTIVATED_MESSAGE: Final = "The workload is deactivated"
_REACTIVATED_MESSAGE: Final = "The workload was reactivated"
_INADMISSIBLE: Final = "Inadmissible"
_BACKOFF_FINISHED: Final = "BackoffFinished"
_BACKOFF_FINISHED_MESSAGE: Final = "The workload backoff was finished"

_log = logging.getLogger(__name__)


def _creation_order(workload: dict[str, Any]) -> tuple[str, str, str]:
    metadata = workload.get("metadata") or {}
    return (metadata.get("creationTimestamp", ""), metadata.get("namespace", ""), metadata.get("name", ""))


def _check_names(cluster_queue: dict[str, Any]) -> list[str]:
    strategy = (cluster_queue.get("spec") or {}).get("admissionChecksStrategy") or {}
    return [rule["name"] for rule in strategy.get("admissionChecks") or [] if rule.get("name")]


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

    def charge(self, admission: dict[str, Any]) -> None:
        for assignment in admission.get("podSetAssignments") or []:
            flavors = assignment.get("flavors") or {}
            for resource, quantity in (assignment.get("resourceUsage") or {}).items():
                key = (flavors.get(resource, ""), resource)
                self.used[key] = self.used.get(key, Decimal(0)) + parse_quantity(quantity)


class KueueStandin:
    """One polling controller playing Kueue's scheduler and workload controller (see module doc)."""

    def __init__(
        self,
        *,
        client: ApiClient,
        clock: Callable[[], datetime] = utc_now,
        poll_interval: float = 0.2,
        missing_queue_reason: str = _INADMISSIBLE,
    ) -> None:
        self._client = client
        self._clock = clock
        self._poll_interval = poll_interval
        self._missing_queue_reason = missing_queue_reason

    async def run(self) -> None:
        await poll_forever(self.reconcile_once, interval=self._poll_interval, what="kueue stand-in", log=_log)

    async def reconcile_once(self) -> None:
        """One full pass: workload-controller duties first, then FIFO admission per ClusterQueue."""
        now = self._clock()
        cluster_queues = {
            cq["metadata"]["name"]: cq for cq in await self._client.list(CLUSTER_QUEUES) if cq.get("metadata")
        }
        local_queues = {
            (lq["metadata"].get("namespace", ""), lq["metadata"]["name"]): lq
            for lq in await self._client.list(LOCAL_QUEUES)
            if lq.get("metadata")
        }
        workloads = sorted(await self._client.list(WORKLOADS), key=_creation_order)
        quotas = {name: _Quota(cq) for name, cq in cluster_queues.items()}
        for workload in workloads:
            admission = (workload.get("status") or {}).get("admission")
            if (
                admission
                and is_true(workload, Condition.QUOTA_RESERVED)
                and not is_true(workload, Condition.FINISHED)
            ):
                quota = quotas.get(admission.get("clusterQueue", ""))
                if quota is not None:
                    quota.charge(admission)
        blocked: set[str] = set()
        for workload in workloads:
            if is_true(workload, Condition.FINISHED) or (workload.get("metadata") or {}).get(
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
            cq_name = (local_queue.get("spec") or {}).get("clusterQueue", "")
            cluster_queue = cluster_queues.get(cq_name)
            if cluster_queue is None:
                await self._mark_inadmissible(workload, f"ClusterQueue {cq_name} doesn't exist", now)
                continue
            if cq_name in blocked:
                continue
            admitted = await self._try_admit(workload, cq_name, cluster_queue, quotas[cq_name], now)
            strict = (cluster_queue.get("spec") or {}).get("queueingStrategy") == "StrictFIFO"
            if not admitted and strict:
                blocked.add(cq_name)

    # --- workload controller -----------------------------------------------------------------------
    async def _workload_controller(
        self, workload: dict[str, Any], cluster_queues: dict[str, dict[str, Any]], now: datetime
    ) -> bool:
        """Deactivation, reactivation, check-based eviction and admission-check sync; True when it wrote."""
        active = (workload.get("spec") or {}).get("active") is not False
        reserved = is_true(workload, Condition.QUOTA_RESERVED)
        evicted = find_condition(workload, Condition.EVICTED)
        target = find_condition(workload, Condition.DEACTIVATION_TARGET)
        changed = False
        if active and target is not None and target.get("status") == "True":
            workload.setdefault("spec", {})["active"] = False
            await self._client.replace(WORKLOADS, workload)
            return True
        if not active:
            if reserved and not is_true(workload, Condition.EVICTED):
                reason, message = Reason.DEACTIVATED, _DEACTIVATED_MESSAGE
                if target is not None and target.get("status") == "True":
                    reason = f"{Reason.DEACTIVATED}DueTo{target.get('reason', '')}"
                    message = f"{_DEACTIVATED_MESSAGE} due to {target.get('message', '')}"
                    _remove_condition(workload, Condition.DEACTIVATION_TARGET)
                changed = set_condition(
                    workload,
                    condition_type=Condition.EVICTED,
                    status="True",
                    reason=reason,
                    message=message,
                    now=now,
                )
                _count_eviction(workload, Reason.DEACTIVATED, str((target or {}).get("reason", "")))
            elif not reserved:
                changed = set_condition(
                    workload,
                    condition_type=Condition.QUOTA_RESERVED,
                    status="False",
                    reason=Reason.DEACTIVATED,
                    message=_DEACTIVATED_MESSAGE,
                    now=now,
                )
        elif (
            evicted is not None
            and evicted.get("status") == "True"
            and str(evicted.get("reason", "")).startswith(Reason.DEACTIVATED)
            and not reserved
            and not is_true(workload, Condition.REQUEUED)
        ):
            changed = set_condition(
                workload,
                condition_type=Condition.REQUEUED,
                status="True",
                reason=Reason.REACTIVATED,
                message=_REACTIVATED_MESSAGE,
                now=now,
            )
        elif _requeued_false(workload, Reason.ADMISSION_CHECK) and not reserved:
            changed = set_condition(
                workload,
                condition_type=Condition.REQUEUED,
                status="True",
                reason=_BACKOFF_FINISHED,
                message=_BACKOFF_FINISHED_MESSAGE,
                now=now,
            )
        elif reserved and not is_true(workload, Condition.FINISHED):
            changed = _check_based_eviction(workload, now)
            admission = (workload.get("status") or {}).get("admission") or {}
            cluster_queue = cluster_queues.get(admission.get("clusterQueue", ""))
            if not changed and cluster_queue is not None:
                changed = _sync_admitted(workload, _check_names(cluster_queue), now)
        if changed:
            await self._client.replace_status(WORKLOADS, workload)
        return changed

    @staticmethod
    def _is_pending(workload: dict[str, Any]) -> bool:
        if (workload.get("spec") or {}).get("active") is False:
            return False
        if is_true(workload, Condition.QUOTA_RESERVED):
            return False
        return not is_true(workload, Condition.EVICTED) or is_true(workload, Condition.REQUEUED)

    async def _mark_inadmissible(self, workload: dict[str, Any], message: str, now: datetime) -> None:
        await self._set_not_reserved(workload, self._missing_queue_reason, message, now)

    async def _set_not_reserved(
        self, workload: dict[str, Any], reason: str, message: str, now: datetime
    ) -> None:
        """``QuotaReserved=False`` with ``reason``/``message``; the status is written only on change."""
        if set_condition(
            workload,
            condition_type=Condition.QUOTA_RESERVED,
            status="False",
            reason=reason,
            message=message,
            now=now,
        ):
            await self._client.replace_status(WORKLOADS, workload)

    # --- scheduler ---------------------------------------------------------------------------------
    async def _try_admit(
        self,
        workload: dict[str, Any],
        cq_name: str,
        cluster_queue: dict[str, Any],
        quota: _Quota,
        now: datetime,
    ) -> bool:
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
                    return await self._mark_pending(workload, message, now)
                flavors[resource] = flavor
                wanted[(flavor, resource)] = wanted.get((flavor, resource), Decimal(0)) + amount
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
        for (flavor, resource), amount in wanted.items():
            free = quota.nominal.get((flavor, resource), Decimal(0)) - quota.used.get(
                (flavor, resource), Decimal(0)
            )
            if amount > free:
                missing = format_usage(resource, amount - max(free, Decimal(0)))
                message = (
                    f"couldn't assign flavors to pod set {assignments[0]['name'] if assignments else 'main'}: "
                    f"insufficient unused quota for {resource} in flavor {flavor}, {missing} more needed"
                )
                return await self._mark_pending(workload, message, now)
        admission = {"clusterQueue": cq_name, "podSetAssignments": assignments}
        status = status_of(workload)
        status["admission"] = admission
        set_condition(
            workload,
            condition_type=Condition.QUOTA_RESERVED,
            status="True",
            reason=Reason.QUOTA_RESERVED,
            message=f"Quota reserved in ClusterQueue {cq_name}",
            now=now,
        )
        for condition_type in (Condition.EVICTED, Condition.PREEMPTED):
            previous = find_condition(workload, condition_type)
            if previous is not None and previous.get("status") == "True":
                set_condition(
                    workload,
                    condition_type=condition_type,
                    status="False",
                    reason=Reason.QUOTA_RESERVED,
                    message=f"Previously: {previous.get('message', '')}",
                    now=now,
                )
        _sync_admitted(workload, _check_names(cluster_queue), now)
        if await self._client.replace_status(WORKLOADS, workload) is None:
            return False
        quota.charge(admission)
        return True

    async def _mark_pending(self, workload: dict[str, Any], message: str, now: datetime) -> bool:
        await self._set_not_reserved(workload, Reason.PENDING, message, now)
        return False


def _count_eviction(workload: dict[str, Any], reason: str, underlying_cause: str = "") -> None:
    stats = status_of(workload).setdefault("schedulingStats", {})
    evictions: list[dict[str, Any]] = stats.setdefault("evictions", [])
    for entry in evictions:
        if entry.get("reason") == reason and entry.get("underlyingCause", "") == underlying_cause:
            entry["count"] = int(entry.get("count", 0)) + 1
            return
    evictions.append({"reason": reason, "underlyingCause": underlying_cause, "count": 1})


def _remove_condition(workload: dict[str, Any], condition_type: str) -> None:
    status = status_of(workload)
    status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != condition_type]


def _requeued_false(workload: dict[str, Any], reason: str) -> bool:
    requeued = find_condition(workload, Condition.REQUEUED)
    return requeued is not None and requeued.get("status") == "False" and requeued.get("reason") == reason


def _checks_message(checks: list[dict[str, Any]], state: str) -> str:
    """Kueue's ``buildAdmissionChecksMessage``."""
    parts = [
        f'"{check.get("name")}" ({check["message"]})' if check.get("message") else f'"{check.get("name")}"'
        for check in sorted(checks, key=lambda item: str(item.get("name", "")))
    ]
    noun = "AdmissionChecks" if len(checks) > 1 else "AdmissionCheck"
    return f"{noun} in {state} state: {'; '.join(parts)}"


def _check_based_eviction(workload: dict[str, Any], now: datetime) -> bool:
    """Kueue's ``reconcileCheckBasedEviction``: Rejected -> DeactivationTarget, Retry -> evicted."""
    if is_true(workload, Condition.EVICTED):
        return False
    checks = [c for c in status_of(workload).get("admissionChecks") or [] if isinstance(c, dict)]
    rejected = [c for c in checks if c.get("state") == CheckState.REJECTED]
    if rejected:
        return set_condition(
            workload,
            condition_type=Condition.DEACTIVATION_TARGET,
            status="True",
            reason=Reason.ADMISSION_CHECK,
            message=_checks_message(rejected, CheckState.REJECTED),
            now=now,
        )
    retry = [c for c in checks if c.get("state") == CheckState.RETRY]
    if not retry:
        return False
    set_condition(
        workload,
        condition_type=Condition.EVICTED,
        status="True",
        reason=Reason.ADMISSION_CHECK,
        message=f"Evicted due to {_checks_message(retry, CheckState.RETRY)}",
        now=now,
    )
    status = status_of(workload)
    status.pop("clusterName", None)
    status.pop("nominatedClusterNames", None)
    for check in checks:
        previous = check.get("state")
        if previous == CheckState.PENDING:
            continue
        check["state"] = CheckState.PENDING
        check["message"] = f"Reset to Pending after eviction. Previously: {previous}"
        check["lastTransitionTime"] = format_time(now)
        if previous == CheckState.RETRY:
            check["retryCount"] = int(check.get("retryCount", 0)) + 1
        else:
            check.pop("retryCount", None)
    _count_eviction(workload, Reason.ADMISSION_CHECK)
    return True


def _sync_admitted(workload: dict[str, Any], check_names: list[str], now: datetime) -> bool:
    """Add Pending entries for the ClusterQueue's checks; Admitted=True iff all of them are Ready."""
    status = status_of(workload)
    changed = False
    states: list[dict[str, Any]] = status.setdefault("admissionChecks", []) if check_names else []
    known = {state.get("name") for state in states}
    for name in check_names:
        if name not in known:
            states.append(
                {
                    "name": name,
                    "state": CheckState.PENDING,
                    "message": "",
                    "lastTransitionTime": format_time(now),
                }
            )
            changed = True
    ready = all(
        state.get("state") == CheckState.READY for state in states if state.get("name") in check_names
    )
    if ready:
        changed |= set_condition(
            workload,
            condition_type=Condition.ADMITTED,
            status="True",
            reason=Reason.ADMITTED,
            message="The workload is admitted",
            now=now,
        )
    else:
        changed |= set_condition(
            workload,
            condition_type=Condition.ADMITTED,
            status="False",
            reason=Reason.UNSATISFIED_ADMISSION_CHECKS,
            message="The workload has not all checks ready",
            now=now,
        )
    return changed


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
) -> contextlib.AsyncExitStack:
    """Start the requested add-ons as asyncio tasks; ``await stack.aclose()`` stops them."""
    stack = contextlib.AsyncExitStack()
    client = ApiClient(url=url, token=token, ca_file=ca_file, transport=transport)
    stack.push_async_callback(client.aclose)
    if kueue_standin:
        standin = KueueStandin(client=client, clock=clock, poll_interval=poll_interval)
        stack.push_async_callback(
            _cancel, asyncio.create_task(standin.run(), name="devcluster-kueue-standin")
        )
    if job_runner:
        runner = JobRunner(
            client=client,
            clock=clock,
            poll_interval=poll_interval,
            default_run_seconds=default_run_seconds,
            declarative=declarative,
        )
        stack.push_async_callback(_cancel, asyncio.create_task(runner.run(), name="devcluster-job-runner"))
    return stack
