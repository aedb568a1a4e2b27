"""Admission checks in the Kueue stand-in (LOCAL RUNS ONLY): the Workload controller's side.

A ClusterQueue's ``admissionChecksStrategy.admissionChecks`` are listed on each Workload holding
quota in it as ``Pending`` entries of ``status.admissionChecks``; ``Admitted`` is True ("The
workload is admitted") only once every one of them is ``Ready``, else False
``UnsatisfiedAdmissionChecks`` "The workload has not all checks ready" (Kueue's
``workload.SyncAdmittedCondition``). No admission-check controller runs here: tests, users and
kueue-bridge's MultiKueue controller flip the states.

``evict`` is Kueue's ``prepareForEviction`` (``pkg/workload/evict``), what *every* eviction writes in
one go -- a check in Retry, a preemption, a stopped queue alike: ``Evicted=True`` with the reason
and message, ``clusterName``/``nominatedClusterNames``/``unhealthyNodes`` cleared, and every non-Pending check reset to
``Pending`` "Reset to Pending after eviction. Previously: <state>" (``retryCount`` + 1 for Retry).
An eviction that left a MultiKueue check ``Ready`` with its cluster recorded would let the Workload
be admitted again on the strength of a copy that MultiKueue removes once the quota is released (it
then finds the "Admitting remote no longer exists").

``check_based_eviction`` is Kueue's ``reconcileCheckBasedEviction``: a ``Rejected`` check sets
``DeactivationTarget`` reason ``AdmissionCheck`` "AdmissionCheck in Rejected state: "<name>"
(<message>)"; a ``Retry`` check evicts the Workload (reason ``AdmissionCheck`` "Evicted due to
AdmissionCheck in Retry state: ...").
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from devcluster.standin.scheduling_stats import count_eviction
from shared.constants import CheckState, Condition, Reason
from shared.kube.conditions import is_object_condition_true, set_object_condition, writable_status
from shared.kube.times import format_time

__all__ = ["check_based_eviction", "check_names", "checks_message", "evict", "sync_admitted"]


def check_names(cluster_queue: dict[str, Any]) -> list[str]:
    strategy = (cluster_queue.get("spec") or {}).get("admissionChecksStrategy") or {}
    return [rule["name"] for rule in strategy.get("admissionChecks") or [] if rule.get("name")]


def sync_admitted(workload: dict[str, Any], check_names: list[str], now: datetime) -> bool:
    """Add Pending entries for the ClusterQueue's checks; Admitted=True iff all of them are Ready."""
    status = writable_status(workload)
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
    admitted, reason, message = (
        ("True", Reason.ADMITTED, "The workload is admitted")
        if ready
        else ("False", Reason.UNSATISFIED_ADMISSION_CHECKS, "The workload has not all checks ready")
    )
    changed |= set_object_condition(
        workload, condition_type=Condition.ADMITTED, status=admitted, reason=reason, message=message, now=now
    )
    return changed


def checks_message(checks: list[dict[str, Any]], state: str) -> str:
    """Kueue's ``buildAdmissionChecksMessage``."""
    parts = [
        f'"{check.get("name")}" ({check["message"]})' if check.get("message") else f'"{check.get("name")}"'
        for check in sorted(checks, key=lambda item: str(item.get("name", "")))
    ]
    noun = "AdmissionChecks" if len(checks) > 1 else "AdmissionCheck"
    return f"{noun} in {state} state: {'; '.join(parts)}"


def check_based_eviction(workload: dict[str, Any], now: datetime) -> bool:
    """Rejected -> DeactivationTarget, Retry -> evicted with the checks reset; True when changed."""
    if is_object_condition_true(workload, Condition.EVICTED):
        return False
    checks = [c for c in writable_status(workload).get("admissionChecks") or [] if isinstance(c, dict)]
    rejected = [c for c in checks if c.get("state") == CheckState.REJECTED]
    if rejected:
        return set_object_condition(
            workload,
            condition_type=Condition.DEACTIVATION_TARGET,
            status="True",
            reason=Reason.ADMISSION_CHECK,
            message=checks_message(rejected, CheckState.REJECTED),
            now=now,
        )
    retry = [c for c in checks if c.get("state") == CheckState.RETRY]
    if not retry:
        return False
    evict(
        workload,
        reason=Reason.ADMISSION_CHECK,
        message=f"Evicted due to {checks_message(retry, CheckState.RETRY)}",
        now=now,
    )
    count_eviction(workload, Reason.ADMISSION_CHECK)
    return True


def evict(workload: dict[str, Any], *, reason: str, message: str, now: datetime) -> None:
    """Kueue's ``prepareForEviction`` (module doc); the caller counts the eviction."""
    set_object_condition(
        workload, condition_type=Condition.EVICTED, status="True", reason=reason, message=message, now=now
    )
    status = writable_status(workload)
    status.pop("clusterName", None)
    status.pop("nominatedClusterNames", None)
    status.pop("unhealthyNodes", None)
    checks = [c for c in status.get("admissionChecks") or [] if isinstance(c, dict)]
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
