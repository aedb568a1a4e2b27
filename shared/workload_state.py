"""Reading and changing a Workload's state the way Kueue's ``pkg/workload`` does.

Every component reasons about the same handful of facts — has quota been reserved, is the Workload
admitted, finished, evicted — and every writer must move conditions exactly as Kueue would, because
Kueue's scheduler and workload controller (or our devcluster stand-in) act on them. These functions
are pure: they read or mutate a ``Workload`` model in memory (the predicates read a raw Workload dict
too) and take ``now`` explicitly (fake clocks in tests). Callers decide how to persist the result (a status patch).

Invariants:

* ``Admitted`` is derived, never set by hand: it is True iff quota is reserved, every admission check
  is Ready and no delayed topology request is pending (``sync_admitted_condition``). Leaving the
  admitted state accumulates ``accumulatedPastExecutionTimeSeconds``.
* Clearing a quota reservation always clears ``status.admission`` and re-syncs ``Admitted`` in the
  same change (``unset_quota_reservation``), so no reader ever sees a half-evicted Workload.
* Condition messages are truncated to 32 KiB as ``api.TruncateConditionMessage`` does (bytes, then
  ``" ..."``).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from shared.constants import CheckState, Condition, Reason
from shared.kube import conditions as wire
from shared.kube.conditions import (
    FALSE,
    TRUE,
    conditions_of,
    find_condition_view,
    is_object_condition_true,
    is_true,
)
from shared.kube.conditions import find_condition as find_object_condition
from shared.kube.times import parse_time
from shared.models.condition import Condition as ConditionModel
from shared.models.workload import Workload, WorkloadStatus

__all__ = [
    "MAX_CONDITION_MESSAGE_LENGTH",
    "MAX_EVENT_MESSAGE_LENGTH",
    "PODS_NOT_READY_MESSAGE",
    "PODS_READY_MESSAGE",
    "PODS_WAITING_FOR_RECOVERY_MESSAGE",
    "desired_pods_ready",
    "desired_pods_ready_condition",
    "ensure_status",
    "eviction_condition",
    "finish_workload",
    "has_all_checks_ready",
    "has_quota_reservation",
    "is_active",
    "is_admitted",
    "is_evicted",
    "is_finished",
    "pods_ready_up_to_date",
    "set_requeued_condition",
    "set_workload_condition",
    "sync_admitted_condition",
    "truncate_condition_message",
    "truncate_event_message",
    "truncate_message",
    "unset_quota_reservation",
]

MAX_CONDITION_MESSAGE_LENGTH = 32 * 1024
MAX_EVENT_MESSAGE_LENGTH = 1024
PODS_NOT_READY_MESSAGE = "Not all pods are ready or succeeded"
PODS_WAITING_FOR_RECOVERY_MESSAGE = "At least one pod has failed, waiting for recovery"
PODS_READY_MESSAGE = "All pods reached readiness and the workload is running"


def truncate_message(message: str, *, limit: int) -> str:
    """Kueue's ``api.truncateMessage``: at most ``limit`` *bytes*, the cut marked with ``" ..."``.

    Go slices the UTF-8 bytes, so a cut inside a multi-byte character leaves invalid bytes, which Go's
    JSON encoder writes as one U+FFFD each; so do we.
    """
    encoded = message.encode("utf-8", errors="surrogatepass")
    if len(encoded) <= limit:
        return message
    suffix = " ..."
    kept = encoded[: limit - len(suffix)]
    text = kept.decode("utf-8", errors="ignore")
    dangling = len(kept) - len(text.encode("utf-8", errors="surrogatepass"))
    return text + "\ufffd" * dangling + suffix


def truncate_condition_message(message: str) -> str:
    """``api.TruncateConditionMessage``: 32 KiB."""
    return truncate_message(message, limit=MAX_CONDITION_MESSAGE_LENGTH)


def truncate_event_message(message: str) -> str:
    """``api.TruncateEventMessage``: events carry at most 1 KiB (bytes) of message."""
    return truncate_message(message, limit=MAX_EVENT_MESSAGE_LENGTH)


def ensure_status(workload: Workload) -> WorkloadStatus:
    if workload.status is None:
        workload.status = WorkloadStatus()
    if workload.status.conditions is None:
        workload.status.conditions = []
    return workload.status


def _conditions(workload: Workload) -> list[ConditionModel] | None:
    return workload.status.conditions if workload.status else None


def _is_true(workload: Workload | Mapping[str, Any], condition_type: str) -> bool:
    """A condition of a Workload model, or of a Workload read as a wire dict (the MultiKueue
    controller keeps its Workloads raw): the same rule for both. A wire dict is told by its exact
    type first: ``isinstance`` against a pydantic model class is an ``ABCMeta`` Python-level call."""
    if type(workload) is not dict and isinstance(workload, Workload):
        return is_true(find_condition_view(_conditions(workload), condition_type))
    return is_object_condition_true(workload, condition_type)


def has_quota_reservation(workload: Workload | Mapping[str, Any]) -> bool:
    return _is_true(workload, Condition.QUOTA_RESERVED)


def is_admitted(workload: Workload | Mapping[str, Any]) -> bool:
    return _is_true(workload, Condition.ADMITTED)


def is_finished(workload: Workload | Mapping[str, Any]) -> bool:
    return _is_true(workload, Condition.FINISHED)


def is_evicted(workload: Workload | Mapping[str, Any]) -> bool:
    return _is_true(workload, Condition.EVICTED)


def eviction_condition(workload: Workload) -> ConditionModel | None:
    condition = find_condition_view(_conditions(workload), Condition.EVICTED)
    return condition if is_true(condition) else None


def is_active(workload: Workload) -> bool:
    """``spec.active`` defaults to true (CRD default); only an explicit false deactivates."""
    return workload.spec.active is not False


def has_all_checks_ready(workload: Workload) -> bool:
    checks = workload.status.admission_checks if workload.status else None
    return all(check.state == CheckState.READY for check in checks or [])


def _has_pending_delayed_topology(workload: Workload) -> bool:
    admission = workload.status.admission if workload.status else None
    if admission is None:
        return False
    return any(psa.delayed_topology_request == "Pending" for psa in admission.pod_set_assignments)


def _seconds_between(earlier: str | None, now: datetime) -> int:
    start = parse_time(earlier)
    return max(0, int((now - start).total_seconds())) if start is not None else 0


def sync_admitted_condition(workload: Workload, *, now: datetime) -> bool:
    """Make ``Admitted`` agree with quota, checks and topology; return whether anything changed.

    Kueue HEAD with ``UnadmittedWorkloadsObservability`` (Beta, on): a Workload that has neither a
    ``QuotaReserved`` nor an ``Admitted`` condition is left alone; otherwise the condition is always
    recomputed (reasons ``NoReservation``, ``UnsatisfiedAdmissionChecks``,
    ``PendingDelayedTopologyRequests``).
    """
    has_reservation = has_quota_reservation(workload)
    checks_ready = has_all_checks_ready(workload)
    topology_ready = not _has_pending_delayed_topology(workload)
    currently_admitted = is_admitted(workload)
    conditions = _conditions(workload)
    if find_condition_view(conditions, Condition.QUOTA_RESERVED) is None and (
        find_condition_view(conditions, Condition.ADMITTED) is None
    ):
        return False
    admitted, reason, message = True, Reason.ADMITTED, "The workload is admitted"
    if not has_reservation:
        admitted, reason, message = False, Reason.NO_RESERVATION, "The workload has no reservation"
    elif not checks_ready:
        admitted, reason = False, Reason.UNSATISFIED_ADMISSION_CHECKS
        message = "The workload has not all checks ready"
    elif not topology_ready:
        admitted, reason = False, "PendingDelayedTopologyRequests"
        message = "There are pending delayed topology requests"
    workload_status = ensure_status(workload)
    if currently_admitted and not admitted:
        previous = find_condition_view(workload_status.conditions, Condition.ADMITTED)
        elapsed = _seconds_between(previous.last_transition_time if previous else None, now)
        workload_status.accumulated_past_execution_time_seconds = (
            workload_status.accumulated_past_execution_time_seconds or 0
        ) + elapsed
    return set_workload_condition(
        workload,
        ConditionModel(
            type=Condition.ADMITTED,
            status=TRUE if admitted else FALSE,
            reason=reason,
            message=message,
            observed_generation=workload.metadata.generation,
        ),
        now=now,
    )


def unset_quota_reservation(workload: Workload, *, reason: str, message: str, now: datetime) -> bool:
    """QuotaReserved=False with ``reason``, admission cleared, Admitted re-synced (one change)."""
    changed = _set_workload_condition(
        workload, Condition.QUOTA_RESERVED, status="False", reason=reason, message=message, now=now
    )
    workload_status = ensure_status(workload)
    if workload_status.admission is not None:
        workload_status.admission = None
        changed = True
    return sync_admitted_condition(workload, now=now) or changed


def set_requeued_condition(
    workload: Workload, *, reason: str, message: str, requeued: bool, now: datetime
) -> bool:
    return _set_workload_condition(
        workload,
        Condition.REQUEUED,
        status=TRUE if requeued else FALSE,
        reason=reason,
        message=message,
        now=now,
    )


def finish_workload(workload: Workload, *, reason: str, message: str, now: datetime) -> bool:
    """``Finished=True`` with ``reason`` (Succeeded, Failed, OutOfSync, OwnerNotFound, FailedToStart)."""
    return _set_workload_condition(
        workload, Condition.FINISHED, status=TRUE, reason=reason, message=message, now=now
    )


def _condition(
    workload: Workload | Mapping[str, Any], condition_type: str
) -> ConditionModel | Mapping[str, Any] | None:
    """A condition of a Workload model or wire dict, ``None`` when absent."""
    if type(workload) is not dict and isinstance(workload, Workload):  # a dict first, as ``_is_true``
        return find_condition_view(_conditions(workload), condition_type)
    return find_object_condition(conditions_of(workload), condition_type)


def _status_reason(condition: ConditionModel | Mapping[str, Any]) -> tuple[str, str]:
    if isinstance(condition, ConditionModel):
        return condition.status, condition.reason
    return str(condition.get("status")), str(condition.get("reason"))


def desired_pods_ready(workload: Workload | Mapping[str, Any], *, pods_ready: bool) -> tuple[str, str, str]:
    """``(status, reason, message)`` of the ``PodsReady`` condition the job controller wants
    (reference §2.8, waitForPodsReady), for a Workload model or wire dict alike: the reconciler
    compares it with the read Workload's and only builds a condition when they differ."""
    if not is_admitted(workload):
        return FALSE, Reason.WAIT_FOR_START, PODS_NOT_READY_MESSAGE
    current = _condition(workload, Condition.PODS_READY)
    reason = None if current is None else _status_reason(current)[1]
    if pods_ready:
        recovering = reason in (Reason.WAIT_FOR_RECOVERY, Reason.RECOVERED)
        return TRUE, Reason.RECOVERED if recovering else Reason.STARTED, PODS_READY_MESSAGE
    if current is None:
        return FALSE, Reason.WAIT_FOR_START, PODS_NOT_READY_MESSAGE
    if is_true(current) or reason == Reason.WAIT_FOR_RECOVERY:
        return FALSE, Reason.WAIT_FOR_RECOVERY, PODS_WAITING_FOR_RECOVERY_MESSAGE
    return FALSE, Reason.WAIT_FOR_START, PODS_NOT_READY_MESSAGE


def pods_ready_up_to_date(workload: Workload | Mapping[str, Any], *, pods_ready: bool) -> bool:
    """Whether the Workload's ``PodsReady`` condition has the wanted status and reason already."""
    status, reason, _ = desired_pods_ready(workload, pods_ready=pods_ready)
    current = _condition(workload, Condition.PODS_READY)
    return current is not None and _status_reason(current) == (status, reason)


def desired_pods_ready_condition(*, workload: Workload, pods_ready: bool) -> ConditionModel:
    """The ``PodsReady`` condition the job controller wants (``desired_pods_ready``)."""
    status, reason, message = desired_pods_ready(workload, pods_ready=pods_ready)
    return ConditionModel(
        type=Condition.PODS_READY,
        status=status,
        reason=reason,
        message=message,
        observed_generation=workload.metadata.generation,
    )


def _set_workload_condition(
    workload: Workload, condition_type: str, *, status: str, reason: str, message: str, now: datetime
) -> bool:
    """``set_workload_condition`` observing the Workload's generation, message truncated."""
    return set_workload_condition(
        workload,
        ConditionModel(
            type=condition_type,
            status=status,
            reason=reason,
            message=truncate_condition_message(message),
            observed_generation=workload.metadata.generation,
        ),
        now=now,
    )


def set_workload_condition(workload: Workload, new: ConditionModel, *, now: datetime) -> bool:
    """``meta.SetStatusCondition`` on the Workload model's conditions, with the one implementation's
    rules (``shared.kube.conditions.set_condition``) applied to the one condition it touches; whether
    anything changed. A condition object already in the list is updated in place (a caller holding
    it sees the change); a new one is appended."""
    conditions = ensure_status(workload).conditions
    assert conditions is not None
    existing = find_condition_view(conditions, new.type)
    current = [] if existing is None else [_wire_of(existing)]
    changed = wire.set_condition(
        current,
        condition_type=new.type,
        status=new.status,
        reason=new.reason,
        message=new.message,
        observed_generation=new.observed_generation,
        last_transition_time=new.last_transition_time,
        now=now,
    )
    if not changed:
        return False
    (result,) = current
    if existing is None:
        added = new.model_copy()
        added.last_transition_time = result["lastTransitionTime"]
        conditions.append(added)
    else:
        existing.status = result["status"]
        existing.last_transition_time = result.get("lastTransitionTime")
        existing.reason = result["reason"]
        existing.message = result["message"]
        existing.observed_generation = result.get("observedGeneration")
    return True


def _wire_of(condition: ConditionModel) -> dict[str, Any]:
    """The fields ``meta.SetStatusCondition`` compares, as the wire spells them."""
    wire_form: dict[str, Any] = {
        "type": condition.type,
        "status": condition.status,
        "reason": condition.reason,
        "message": condition.message,
    }
    if condition.last_transition_time is not None:
        wire_form["lastTransitionTime"] = condition.last_transition_time
    if condition.observed_generation:
        wire_form["observedGeneration"] = condition.observed_generation
    return wire_form
