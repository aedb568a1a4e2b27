from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from shared.constants import Condition, Reason
from shared.kube.conditions import find_condition_view as find_condition
from shared.models.workload import Admission, AdmissionCheckState, PodSetAssignment, Workload
from shared.workload_state import (
    desired_pods_ready,
    desired_pods_ready_condition,
    eviction_condition,
    finish_workload,
    has_quota_reservation,
    is_active,
    is_admitted,
    pods_ready_up_to_date,
    set_requeued_condition,
    sync_admitted_condition,
    truncate_condition_message,
    unset_quota_reservation,
)

T0 = datetime(2026, 11, 22, 2, 34, 3, tzinfo=UTC)


def reserved_workload(*, checks: list[AdmissionCheckState] | None = None) -> Workload:
    workload = Workload.from_wire(
        {
            "metadata": {"name": "job-sample-43252", "namespace": "golden", "generation": 1},
            "spec": {"queueName": "golden-q", "podSets": [{"name": "main", "count": 2, "template": {}}]},
            "status": {
                "conditions": [
                    {
                        "type": "QuotaReserved",
                        "status": "True",
                        "reason": "QuotaReserved",
                        "message": "Quota reserved in ClusterQueue golden-cq",
                        "lastTransitionTime": "2026-11-22T02:34:03Z",
                    }
                ]
            },
        }
    )
    assert workload.status is not None
    workload.status.admission = Admission(
        cluster_queue="golden-cq", pod_set_assignments=[PodSetAssignment(name="main", count=2)]
    )
    workload.status.admission_checks = checks
    return workload


def condition(workload: Workload, condition_type: str) -> Any:
    assert workload.status is not None
    return find_condition(workload.status.conditions, condition_type)


def test_sync_admits_when_reserved_and_no_checks() -> None:
    workload = reserved_workload()
    assert sync_admitted_condition(workload, now=T0)
    admitted = condition(workload, Condition.ADMITTED)
    assert (admitted.status, admitted.reason, admitted.message) == (
        "True",
        "Admitted",
        "The workload is admitted",
    )
    assert admitted.observed_generation == 1
    assert not sync_admitted_condition(workload, now=T0 + timedelta(seconds=5)), "idempotent"


def test_sync_waits_for_every_admission_check() -> None:
    workload = reserved_workload(
        checks=[AdmissionCheckState(name="mk", state="Pending"), AdmissionCheckState(name="b", state="Ready")]
    )
    assert sync_admitted_condition(workload, now=T0)
    assert not is_admitted(workload)
    pending = condition(workload, Condition.ADMITTED)
    assert (pending.status, pending.reason, pending.message) == (
        "False",
        "UnsatisfiedAdmissionChecks",
        "The workload has not all checks ready",
    )
    assert not sync_admitted_condition(workload, now=T0), "idempotent"
    assert workload.status is not None and workload.status.admission_checks is not None
    workload.status.admission_checks[0].state = "Ready"
    assert sync_admitted_condition(workload, now=T0)
    assert is_admitted(workload)


def test_unset_quota_clears_admission_and_accumulates_execution_time() -> None:
    workload = reserved_workload()
    sync_admitted_condition(workload, now=T0)
    changed = unset_quota_reservation(
        workload,
        reason=Reason.PENDING_EVALUATION,
        message="The workload is deactivated",
        now=T0 + timedelta(11),
    )
    assert changed
    assert workload.status is not None
    assert workload.status.admission is None
    assert not has_quota_reservation(workload)
    admitted = condition(workload, Condition.ADMITTED)
    assert (admitted.status, admitted.reason, admitted.message) == (
        "False",
        "NoReservation",
        "The workload has no reservation",
    )
    assert workload.status.accumulated_past_execution_time_seconds == 11 * 24 * 3600
    quota = condition(workload, Condition.QUOTA_RESERVED)
    assert (quota.status, quota.reason) == ("False", "PendingEvaluation")


def test_requeued_and_finished_conditions() -> None:
    workload = reserved_workload()
    set_requeued_condition(workload, reason="Preempted", message="preempted", requeued=True, now=T0)
    assert condition(workload, Condition.REQUEUED).status == "True"
    finish_workload(workload, reason=Reason.SUCCEEDED, message="Job finished successfully", now=T0)
    finished = condition(workload, Condition.FINISHED)
    assert (finished.status, finished.reason) == ("True", "Succeeded")


@pytest.mark.parametrize(
    ("admitted", "pods_ready", "previous_reason", "previous_status", "expected"),
    [
        (False, True, None, None, ("False", "WaitForStart")),
        (True, True, None, None, ("True", "Started")),
        (True, True, "WaitForRecovery", "False", ("True", "Recovered")),
        (True, False, None, None, ("False", "WaitForStart")),
        (True, False, "Started", "True", ("False", "WaitForRecovery")),
        (True, False, "WaitForRecovery", "False", ("False", "WaitForRecovery")),
        (True, False, "PodsReady", "False", ("False", "WaitForStart")),
    ],
)
def test_pods_ready_condition_table(
    admitted: bool,
    pods_ready: bool,
    previous_reason: str | None,
    previous_status: str | None,
    expected: tuple[str, str],
) -> None:
    workload = reserved_workload()
    if admitted:
        sync_admitted_condition(workload, now=T0)
    if previous_reason is not None:
        assert workload.status is not None and workload.status.conditions is not None
        workload.status.conditions.append(
            find_condition(workload.status.conditions, "QuotaReserved").model_copy(  # type: ignore[union-attr]
                update={"type": "PodsReady", "status": previous_status, "reason": previous_reason}
            )
        )
    desired = desired_pods_ready_condition(workload=workload, pods_ready=pods_ready)
    assert (desired.status, desired.reason) == expected
    # the reconciler decides on the Workload as read (a wire dict): the same answer
    wire = workload.to_wire()
    assert desired_pods_ready(wire, pods_ready=pods_ready) == (
        desired.status,
        desired.reason,
        desired.message,
    )
    up_to_date = previous_reason is not None and (previous_status, previous_reason) == expected
    assert pods_ready_up_to_date(wire, pods_ready=pods_ready) is up_to_date
    assert pods_ready_up_to_date(workload, pods_ready=pods_ready) is up_to_date


def test_sync_leaves_a_fresh_workload_without_conditions_alone() -> None:
    workload = Workload.from_wire({"metadata": {"name": "w"}, "spec": {"podSets": []}})
    assert not sync_admitted_condition(workload, now=T0)
    assert workload.status is None or not workload.status.conditions


def test_inactive_and_eviction_helpers() -> None:
    workload = reserved_workload()
    assert is_active(workload)
    workload.spec.active = False
    assert not is_active(workload)
    assert eviction_condition(workload) is None


def test_truncates_long_messages() -> None:
    message = truncate_condition_message("x" * 40_000)
    assert len(message) == 32 * 1024
    assert message.endswith("...")


def single_object(path: Path) -> dict[str, Any]:
    """Golden files are either one object or a ``kind: List`` holding one."""
    document: dict[str, Any] = yaml.safe_load(path.read_text())
    if document.get("kind") == "List":
        items: list[dict[str, Any]] = document["items"]
        return items[0]
    return document


def test_golden_deactivation_shapes_reproduced(golden_dir: Path) -> None:
    """Replaying Kueue's deactivation on the golden admitted Workload gives the golden conditions."""
    admitted_wire = single_object(golden_dir / "workload-admitted.yaml")
    expected_wire = single_object(golden_dir / "workload-after-deactivation.yaml")
    workload = Workload.from_wire(admitted_wire)
    now = T0 + timedelta(seconds=11)
    unset_quota_reservation(workload, reason="Deactivated", message="The workload is deactivated", now=now)
    set_requeued_condition(
        workload, reason="Deactivated", message="The workload is deactivated", requeued=False, now=now
    )
    expected = {
        c["type"]: (c["status"], c["reason"], c["message"]) for c in expected_wire["status"]["conditions"]
    }
    assert workload.status is not None
    for got in workload.status.conditions or []:
        if got.type in ("QuotaReserved", "Admitted", "Requeued"):
            assert (got.status, got.reason, got.message) == expected[got.type]
    assert workload.status.admission is None
    assert workload.status.accumulated_past_execution_time_seconds == 11
