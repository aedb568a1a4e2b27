"""Admission checks in the Kueue stand-in (LOCAL RUNS ONLY): the Workload controller's side.

A ClusterQueue's ``admissionChecksStrategy.admissionChecks`` are listed on each Workload holding
quota in it as ``Pending`` entries of ``status.admissionChecks``; ``Admitted`` is True ("The
workload is admitted") only once every one of them is ``Ready``, else False
``UnsatisfiedAdmissionChecks`` "The workload has not all checks ready" (Kueue's
``workload.SyncAdmittedCondition``). No admission-check controller runs: tests and users flip the
states themselves.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from devcluster.standin.conditions import format_time, set_condition, status_of
from shared.constants import CheckState, Condition, Reason

__all__ = ["check_names", "sync_admitted"]


def check_names(cluster_queue: dict[str, Any]) -> list[str]:
    strategy = (cluster_queue.get("spec") or {}).get("admissionChecksStrategy") or {}
    return [rule["name"] for rule in strategy.get("admissionChecks") or [] if rule.get("name")]


def sync_admitted(workload: dict[str, Any], check_names: list[str], now: datetime) -> bool:
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
