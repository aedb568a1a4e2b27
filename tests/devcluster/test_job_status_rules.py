"""Conformance: batch/v1 Job ``/status`` rules, as kube-apiserver 1.36 enforces them.

Runs against a real cluster too (``KUEUE_BRIDGE_TEST_KUBECONFIG``): the Jobs name a ``spec.managedBy``
no controller owns, so only the test writes their status. Each case first makes the writes that set
the stage (all must be accepted), then the one under test.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.devcluster.conftest import KubeTarget
from tests.devcluster.helpers import create_job, patch_job, status_of

START = "2026-01-01T00:00:00Z"
LATER = "2026-01-01T00:05:00Z"
EARLIER = "2025-12-31T23:55:00Z"


def condition(condition_type: str, status: str = "True") -> dict[str, str]:
    return {
        "type": condition_type,
        "status": status,
        "reason": "Test",
        "message": "",
        "lastTransitionTime": START,
    }


SUCCEEDED: dict[str, Any] = {
    "startTime": START,
    "completionTime": LATER,
    "succeeded": 1,
    "conditions": [condition("SuccessCriteriaMet"), condition("Complete")],
}
FAILED: dict[str, Any] = {
    "startTime": START,
    "failed": 1,
    "conditions": [condition("FailureTarget"), condition("Failed")],
}


def write_status(kube: KubeTarget, namespace: str, name: str, status: dict[str, Any]) -> Any:
    return patch_job(kube.client, namespace, name, {"status": status}, status=True)


def rejected(response: Any, *, name: str, field: str, reason: str, message: str | None) -> None:
    assert response.status_code == 422, response.text
    body = status_of(response)
    assert body["reason"] == "Invalid"
    assert body["message"].startswith(f'Job.batch "{name}" is invalid: ')
    found = body["details"]["causes"]
    if message is None:
        assert any(c["field"] == field and c["reason"] == reason for c in found), found
        return
    assert {"field": field, "reason": reason, "message": message} in found
    assert f"{field}: {message}" in body["message"]


# --- startTime ---------------------------------------------------------------------------------------

START_TIME_FIXED = "field is immutable for unsuspended job once set"


@pytest.mark.parametrize(
    ("new_start", "shown"), [(None, "null"), (LATER, f'"{LATER}"')], ids=["removed", "changed"]
)
def test_start_time_is_fixed_while_the_job_is_unsuspended(
    kube: KubeTarget, namespace: str, new_start: str | None, shown: str
) -> None:
    create_job(kube.client, namespace, "running", suspend=False)
    assert write_status(kube, namespace, "running", {"startTime": START}).status_code == 200
    response = write_status(kube, namespace, "running", {"startTime": new_start})
    message = f"Invalid value: {shown}: {START_TIME_FIXED}"
    rejected(response, name="running", field="status.startTime", reason="FieldValueInvalid", message=message)
    assert status_of(response)["message"] == f'Job.batch "running" is invalid: status.startTime: {message}'


def test_start_time_is_removed_while_suspended(kube: KubeTarget, namespace: str) -> None:
    create_job(kube.client, namespace, "paused", suspend=False)
    assert write_status(kube, namespace, "paused", {"startTime": START}).status_code == 200
    assert patch_job(kube.client, namespace, "paused", {"spec": {"suspend": True}}).status_code == 200
    response = write_status(kube, namespace, "paused", {"startTime": None})
    assert response.status_code == 200, response.text
    assert "startTime" not in response.json()["status"]


def test_start_time_changes_in_the_write_that_resumes_the_job(kube: KubeTarget, namespace: str) -> None:
    create_job(kube.client, namespace, "resumed", suspend=False)
    assert write_status(kube, namespace, "resumed", {"startTime": START}).status_code == 200
    assert patch_job(kube.client, namespace, "resumed", {"spec": {"suspend": True}}).status_code == 200
    assert (
        write_status(kube, namespace, "resumed", {"conditions": [condition("Suspended")]}).status_code == 200
    )
    assert patch_job(kube.client, namespace, "resumed", {"spec": {"suspend": False}}).status_code == 200
    resume = {"startTime": LATER, "conditions": [condition("Suspended", "False")]}
    response = write_status(kube, namespace, "resumed", resume)
    assert response.status_code == 200, response.text
    assert response.json()["status"]["startTime"] == LATER


def test_the_job_controllers_own_writes_are_accepted(kube: KubeTarget, namespace: str) -> None:
    """Start, run and complete: what the devcluster's job runner writes must pass the same rules."""
    create_job(kube.client, namespace, "ok", suspend=False)
    running = {"startTime": START, "active": 1, "ready": 1}
    assert write_status(kube, namespace, "ok", running).status_code == 200
    done = {**SUCCEEDED, "active": None, "ready": 0, "uncountedTerminatedPods": {}}
    response = write_status(kube, namespace, "ok", done)
    assert response.status_code == 200, response.text


# --- every other rule: (stage, bad write, field, reason, message) ------------------------------------


def invalid(detail: str, value: str = "") -> str:
    return f"Invalid value: {value}: {detail}" if value else f"Invalid value: {detail}"


CASES: dict[str, tuple[list[dict[str, Any]], dict[str, Any], str, str, str | None]] = {
    "negative-active": (
        [],
        {"active": -1},
        "status.active",
        "FieldValueInvalid",
        invalid("must be greater than or equal to 0", "-1"),
    ),
    "negative-ready": (
        [],
        {"ready": -1},
        "status.ready",
        "FieldValueInvalid",
        invalid("must be greater than or equal to 0", "-1"),
    ),
    "more-ready-than-active": (
        [],
        {"active": 1, "ready": 2},
        "status.ready",
        "FieldValueInvalid",
        invalid("cannot set more ready pods than active", "2"),
    ),
    "failed-decreases": (
        [{"failed": 2}],
        {"failed": 1},
        "status.failed",
        "FieldValueInvalid",
        invalid("cannot decrease the failed counter", "1"),
    ),
    "succeeded-decreases": (
        [{"succeeded": 2}],
        {"succeeded": 1},
        "status.succeeded",
        "FieldValueInvalid",
        invalid("cannot decrease the succeeded counter", "1"),
    ),
    "complete-without-completion-time": (
        [],
        {**SUCCEEDED, "completionTime": None},
        "status.completionTime",
        "FieldValueRequired",
        "Required value: completionTime is required for Complete jobs",
    ),
    "completion-time-without-complete": (
        [],
        {"startTime": START, "completionTime": LATER},
        "status.completionTime",
        "FieldValueInvalid",
        invalid("cannot set completionTime when there is no Complete=True condition", f'"{LATER}"'),
    ),
    "completion-time-before-start": (
        [],
        {**SUCCEEDED, "completionTime": EARLIER},
        "status.completionTime",
        "FieldValueInvalid",
        None,
    ),
    "completion-time-mutated": (
        [SUCCEEDED],
        {"completionTime": "2026-01-01T00:06:00Z"},
        "status.completionTime",
        "FieldValueInvalid",
        invalid("field is immutable", '"2026-01-01T00:06:00Z"'),
    ),
    "complete-without-success-criteria": (
        [],
        {**SUCCEEDED, "conditions": [condition("Complete")]},
        "status.conditions",
        "FieldValueInvalid",
        invalid("cannot set Complete=True condition without the SuccessCriteriaMet=true condition"),
    ),
    "failed-without-failure-target": (
        [],
        {**FAILED, "conditions": [condition("Failed")]},
        "status.conditions",
        "FieldValueInvalid",
        invalid("cannot set Failed=True condition without the FailureTarget=true condition"),
    ),
    "complete-and-failed": (
        [],
        {
            **SUCCEEDED,
            "conditions": [*SUCCEEDED["conditions"], condition("FailureTarget"), condition("Failed")],
        },
        "status.conditions",
        "FieldValueInvalid",
        invalid("cannot set Complete=True and Failed=true conditions"),
    ),
    "complete-and-failure-target": (
        [],
        {**SUCCEEDED, "conditions": [*SUCCEEDED["conditions"], condition("FailureTarget")]},
        "status.conditions",
        "FieldValueInvalid",
        invalid("cannot set Complete=True and FailureTarget=true conditions"),
    ),
    "success-criteria-and-failed": (
        [],
        {**FAILED, "conditions": [condition("SuccessCriteriaMet"), *FAILED["conditions"]]},
        "status.conditions",
        "FieldValueInvalid",
        invalid("cannot set SuccessCriteriaMet=True and Failed=true conditions"),
    ),
    "success-criteria-disabled": (
        [{"conditions": [condition("SuccessCriteriaMet")]}],
        {"conditions": []},
        "status.conditions",
        "FieldValueInvalid",
        invalid("cannot disable the SuccessCriteriaMet=True condition"),
    ),
    "finished-with-uncounted-pods": (
        [],
        {**FAILED, "uncountedTerminatedPods": {"failed": ["a"]}},
        "status.uncountedTerminatedPods",
        "FieldValueInvalid",
        None,
    ),
    "terminal-condition-disabled": (
        [FAILED],
        {"conditions": [condition("FailureTarget")]},
        "status.conditions",
        "FieldValueInvalid",
        invalid("cannot disable the terminal Failed=True condition"),
    ),
    "finished-without-start-time": (
        [],
        {**FAILED, "startTime": None},
        "status.startTime",
        "FieldValueRequired",
        "Required value: startTime is required for finished job",
    ),
    "finished-with-active-pods": (
        [],
        {**FAILED, "active": 1},
        "status.active",
        "FieldValueInvalid",
        invalid("active>0 is invalid for finished job", "1"),
    ),
    "finished-with-terminating-pods": (
        [],
        {**FAILED, "terminating": 1},
        "status.terminating",
        "FieldValueInvalid",
        invalid("terminating>0 is invalid for finished job", "1"),
    ),
    "completed-indexes-of-a-non-indexed-job": (
        [],
        {"completedIndexes": "0"},
        "status.completedIndexes",
        "FieldValueInvalid",
        invalid("cannot set non-empty completedIndexes when non-indexed completion mode", '"0"'),
    ),
    "duplicate-uncounted-pod": (
        [],
        {"uncountedTerminatedPods": {"succeeded": ["a", "a"]}},
        "status.uncountedTerminatedPods.succeeded[1]",
        "FieldValueDuplicate",
        'Duplicate value: "a"',
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_status_rules(kube: KubeTarget, namespace: str, case: str) -> None:
    stage, write, field, reason, message = CASES[case]
    create_job(kube.client, namespace, "st", suspend=False, completions=2, parallelism=1)
    for status in [{"startTime": START}, *stage]:
        staged = write_status(kube, namespace, "st", status)
        assert staged.status_code == 200, staged.text
    rejected(
        write_status(kube, namespace, "st", write), name="st", field=field, reason=reason, message=message
    )
