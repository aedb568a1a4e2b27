"""The bodies of Kueue's Workload status applies (``prepareWorkloadPatch``, ``PatchStatus``, ``Finish``)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from shared.kueue.admission_apply import (
    ADMISSION_MANAGED_CONDITIONS,
    admission_status_apply,
    check_state_apply,
    finish_apply,
)


def _condition(kind: str) -> dict[str, Any]:
    return {"type": kind, "status": "True", "reason": kind, "message": "", "lastTransitionTime": "t"}


def _workload(**status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": "wl",
            "namespace": "ns",
            "uid": "u1",
            "generation": 3,
            "resourceVersion": "42",
            "labels": {"a": "b"},
            "annotations": {},
            "finalizers": ["kueue.x-k8s.io/resource-in-use"],
            "managedFields": [{"manager": "x"}],
            "ownerReferences": [{"name": "job"}],
        },
        "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 1}]},
        "status": status,
    }


def test_the_identity_and_strictly_the_resource_version_nothing_else_of_metadata_or_spec() -> None:
    body = admission_status_apply(_workload())
    assert body["metadata"] == {
        "name": "wl",
        "namespace": "ns",
        "uid": "u1",
        "generation": 3,
        "labels": {"a": "b"},
        "resourceVersion": "42",
    }
    assert "spec" not in body and body["status"] == {}
    assert "resourceVersion" not in admission_status_apply(_workload(), strict=False)["metadata"]


def test_the_whole_admission_state_and_only_it() -> None:
    admission = {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "count": 1}]}
    checks = [{"name": "mk", "state": "Ready", "message": "m", "lastTransitionTime": "t"}]
    workload = _workload(
        admission=admission,
        resourceRequests=[{"name": "main", "resources": {"cpu": "1"}}],
        requeueState={"count": 2},
        conditions=[
            _condition("Custom"),
            *(_condition(kind) for kind in reversed(ADMISSION_MANAGED_CONDITIONS)),
        ],
        accumulatedPastExecutionTimeSeconds=7,
        schedulingStats={"evictions": [{"reason": "Preempted", "count": 1}]},
        clusterName="w1",
        unhealthyNodes=[{"name": "n1"}],
        preemptionGates=[{"name": "g"}],
        admissionChecks=checks,
        reclaimablePods=[{"name": "main", "count": 1}],
    )
    status = admission_status_apply(workload)["status"]
    assert status == {
        "admission": admission,
        "requeueState": {"count": 2},
        "conditions": [_condition(kind) for kind in ADMISSION_MANAGED_CONDITIONS],  # Kueue's order
        "accumulatedPastExecutionTimeSeconds": 7,
        "schedulingStats": {"evictions": [{"reason": "Preempted", "count": 1}]},
        "clusterName": "w1",
        "unhealthyNodes": [{"name": "n1"}],
        "preemptionGates": [{"name": "g"}],
        "admissionChecks": checks,
    }
    status["admission"]["clusterQueue"] = "changed"
    assert admission["clusterQueue"] == "cq", "the body is a copy"


def test_requests_without_an_admission_and_empty_values_left_out() -> None:
    requests = [{"name": "main", "resources": {"cpu": "1"}}]
    status = admission_status_apply(
        _workload(
            resourceRequests=requests,
            requeueState={},
            nominatedClusterNames=[],
            clusterName="",
            schedulingStats={},
        )
    )["status"]
    assert status == {"resourceRequests": requests, "schedulingStats": {}}
    assert admission_status_apply(_workload(nominatedClusterNames=["w1", "w2"]))["status"] == {
        "nominatedClusterNames": ["w1", "w2"]
    }


def test_a_check_state_apply_holds_that_one_check() -> None:
    check = {"name": "mk", "state": "Retry", "message": "m", "lastTransitionTime": "t", "retryCount": 1}
    body = check_state_apply(_workload(clusterName="w1", admissionChecks=[check, {"name": "other"}]), check)
    assert body["status"] == {"admissionChecks": [check]}
    assert body["metadata"]["resourceVersion"] == "42"


def test_finish_sets_finished_on_a_copy_and_applies_the_whole_admission_state() -> None:
    admitted = _condition("QuotaReserved")
    workload = _workload(admission={"clusterQueue": "cq"}, conditions=[admitted])
    now = datetime(2026, 12, 7, 13, 0, tzinfo=UTC)
    body = finish_apply(workload, reason="Succeeded", message="done", now=now)
    assert body is not None
    assert body["status"]["admission"] == {"clusterQueue": "cq"}
    assert body["status"]["conditions"] == [
        admitted,
        {
            "type": "Finished",
            "status": "True",
            "observedGeneration": 3,
            "lastTransitionTime": "2026-12-07T13:00:00Z",
            "reason": "Succeeded",
            "message": "done",
        },
    ]
    assert workload["status"]["conditions"] == [admitted], "the cached object is left as it was"


def test_a_finished_workload_is_not_finished_again() -> None:
    workload = _workload(conditions=[_condition("Finished")])
    assert finish_apply(workload, reason="Failed", message="x", now=datetime.now(UTC)) is None
