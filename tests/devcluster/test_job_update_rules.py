"""Conformance: batch/v1 Job create and update rules, as kube-apiserver 1.36 enforces them.

Every test here also runs against a real cluster (``KUEUE_BRIDGE_TEST_KUBECONFIG``); its Jobs name a
``spec.managedBy`` no controller owns, so the cluster's job controller leaves their status to the
test. Tests of behaviour new in 1.36 (mutable scheduling directives after a start, mutable container
resources, the ``spec.template.spec`` error path) skip on older servers.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.devcluster.conftest import KubeTarget
from tests.devcluster.helpers import (
    CONFORMANCE_MANAGER,
    create_job,
    job_manifest,
    jobs_url,
    patch_job,
    server_minor,
    status_of,
)

NOW = "2026-01-01T00:00:00Z"
STRATEGIC = {"content-type": "application/strategic-merge-patch+json"}
NODE_AFFINITY = {
    "requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}]
    }
}
#: what Kueue writes into a template when it starts a Job: each may change while safely suspended
SCHEDULING_CHANGES: dict[str, dict[str, Any]] = {
    "nodeSelector": {"spec": {"nodeSelector": {"zone": "a"}}},
    "tolerations": {"spec": {"tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}]}},
    "schedulingGates": {"spec": {"schedulingGates": [{"name": "example.com/gate"}]}},
    "nodeAffinity": {"spec": {"affinity": {"nodeAffinity": NODE_AFFINITY}}},
    "labels": {"metadata": {"labels": {"kueue.x-k8s.io/podset": "main"}}},
    "annotations": {"metadata": {"annotations": {"example.com/flavor": "spot"}}},
}


def template_patch(change: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return {"spec": {"template": change, **spec}}


def contains(actual: Any, expected: Any) -> bool:
    if isinstance(expected, dict):
        return isinstance(actual, dict) and all(contains(actual.get(k), v) for k, v in expected.items())
    return bool(actual == expected)


def causes(response: Any) -> list[dict[str, Any]]:
    assert response.status_code == 422, response.text
    body = status_of(response)
    assert body["reason"] == "Invalid"
    found: list[dict[str, Any]] = body["details"]["causes"]
    return found


def immutable_template_cause(response: Any, *, name: str, field: str) -> dict[str, Any]:
    """The 422 kube answers for a forbidden template change (the bad value is a Go-typed dump)."""
    (cause,) = causes(response)
    assert cause["field"] == field
    assert cause["reason"] == "FieldValueInvalid"
    assert cause["message"].startswith("Invalid value: ")
    assert cause["message"].endswith(": field is immutable")
    assert status_of(response)["message"].startswith(
        f'Job.batch "{name}" is invalid: {field}: Invalid value: '
    )
    return cause


def started_then_suspended(kube: KubeTarget, namespace: str, name: str) -> None:
    """A Job the job controller started (``startTime``) and that was then suspended."""
    create_job(kube.client, namespace, name, suspend=False)
    assert (
        patch_job(kube.client, namespace, name, {"status": {"startTime": NOW}}, status=True).status_code
        == 200
    )
    assert patch_job(kube.client, namespace, name, {"spec": {"suspend": True}}).status_code == 200


def needs_1_36(kube: KubeTarget) -> None:
    if server_minor(kube.client) < 36:
        pytest.skip("kube-apiserver < 1.36 has the pre-KEP-5440 template rules")


# --- the pod template --------------------------------------------------------------------------------


@pytest.mark.parametrize("directive", sorted(SCHEDULING_CHANGES))
def test_scheduling_directives_change_while_suspended_and_never_started(
    kube: KubeTarget, namespace: str, directive: str
) -> None:
    create_job(kube.client, namespace, "held", suspend=True)
    response = patch_job(kube.client, namespace, "held", template_patch(SCHEDULING_CHANGES[directive]))
    assert response.status_code == 200, response.text
    assert contains(response.json()["spec"]["template"], SCHEDULING_CHANGES[directive])


def test_container_resources_change_while_suspended(kube: KubeTarget, namespace: str) -> None:
    needs_1_36(kube)
    create_job(kube.client, namespace, "resize", suspend=True)
    patch = template_patch(
        {"spec": {"containers": [{"name": "main", "resources": {"requests": {"cpu": "2"}}}]}}
    )
    response = kube.client.patch(jobs_url(namespace, "resize"), json=patch, headers=STRATEGIC)
    assert response.status_code == 200, response.text
    assert response.json()["spec"]["template"]["spec"]["containers"][0]["resources"] == {
        "requests": {"cpu": "2"}
    }


def test_other_changes_of_a_suspended_template_are_reported_on_its_spec(
    kube: KubeTarget, namespace: str
) -> None:
    needs_1_36(kube)
    create_job(kube.client, namespace, "image", suspend=True)
    patch = template_patch({"spec": {"containers": [{"name": "main", "image": "busybox:2"}]}})
    response = kube.client.patch(jobs_url(namespace, "image"), json=patch, headers=STRATEGIC)
    immutable_template_cause(response, name="image", field="spec.template.spec")


@pytest.mark.parametrize(
    "change",
    [
        SCHEDULING_CHANGES["nodeSelector"],
        SCHEDULING_CHANGES["labels"],
        {
            "spec": {
                "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "2"}}}]
            }
        },
    ],
    ids=["nodeSelector", "labels", "resources"],
)
def test_the_template_of_a_running_job_is_immutable(
    kube: KubeTarget, namespace: str, change: dict[str, Any]
) -> None:
    create_job(kube.client, namespace, "running", suspend=False)
    response = patch_job(kube.client, namespace, "running", template_patch(change))
    immutable_template_cause(response, name="running", field="spec.template")


def test_suspending_and_changing_the_template_in_one_write_is_rejected(
    kube: KubeTarget, namespace: str
) -> None:
    create_job(kube.client, namespace, "both", suspend=False)
    patch = template_patch(SCHEDULING_CHANGES["nodeSelector"], suspend=True)
    immutable_template_cause(
        patch_job(kube.client, namespace, "both", patch), name="both", field="spec.template"
    )
    assert kube.client.get(jobs_url(namespace, "both")).json()["spec"]["suspend"] is False, (
        "nothing was written"
    )


def test_a_suspended_job_that_still_has_its_start_time_keeps_its_template(
    kube: KubeTarget, namespace: str
) -> None:
    """The production bug: suspended, ``startTime`` still set, no ``Suspended=True`` yet -> 422."""
    started_then_suspended(kube, namespace, "stopping")
    response = patch_job(
        kube.client, namespace, "stopping", template_patch(SCHEDULING_CHANGES["nodeSelector"])
    )
    immutable_template_cause(response, name="stopping", field="spec.template")


def test_clearing_the_start_time_of_a_suspended_job_reopens_its_template(
    kube: KubeTarget, namespace: str
) -> None:
    """Kueue's stop order: suspend, remove ``startTime`` on /status, then restore the template."""
    started_then_suspended(kube, namespace, "stopped")
    assert (
        patch_job(kube.client, namespace, "stopped", {"status": {"startTime": None}}, status=True).status_code
        == 200
    )
    response = patch_job(
        kube.client, namespace, "stopped", template_patch(SCHEDULING_CHANGES["nodeSelector"])
    )
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(("active", "accepted"), [(0, True), (1, False)])
def test_a_job_marked_suspended_without_active_pods_may_change_its_template(
    kube: KubeTarget, namespace: str, active: int, accepted: bool
) -> None:
    needs_1_36(kube)
    started_then_suspended(kube, namespace, "marked")
    suspended = {"type": "Suspended", "status": "True", "reason": "JobSuspended", "message": "Job suspended"}
    status = {"status": {"conditions": [{**suspended, "lastTransitionTime": NOW}], "active": active}}
    assert patch_job(kube.client, namespace, "marked", status, status=True).status_code == 200
    response = patch_job(kube.client, namespace, "marked", template_patch(SCHEDULING_CHANGES["nodeSelector"]))
    if accepted:
        assert response.status_code == 200, response.text
    else:
        immutable_template_cause(response, name="marked", field="spec.template")


def test_a_suspended_job_with_active_pods_keeps_its_template_after_its_start_time_is_cleared(
    kube: KubeTarget, namespace: str
) -> None:
    """Kueue stopping a started Job: suspend, clear ``startTime``; the pods are still being deleted."""
    create_job(kube.client, namespace, "stopping", suspend=False)
    running = {"status": {"startTime": NOW, "active": 1}}
    assert patch_job(kube.client, namespace, "stopping", running, status=True).status_code == 200
    assert patch_job(kube.client, namespace, "stopping", {"spec": {"suspend": True}}).status_code == 200
    cleared = {"status": {"startTime": None}}
    assert patch_job(kube.client, namespace, "stopping", cleared, status=True).status_code == 200
    change = template_patch(SCHEDULING_CHANGES["nodeSelector"])
    response = patch_job(kube.client, namespace, "stopping", change)
    immutable_template_cause(response, name="stopping", field="spec.template")
    gone = {"status": {"active": 0}}
    assert patch_job(kube.client, namespace, "stopping", gone, status=True).status_code == 200
    response = patch_job(kube.client, namespace, "stopping", change)
    assert response.status_code == 200, response.text


# --- the other spec fields ---------------------------------------------------------------------------

INDEXED: dict[str, Any] = {"completionMode": "Indexed", "completions": 2, "parallelism": 2}
FAIL_ON_42 = {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]}


@pytest.mark.parametrize(
    ("created", "patch", "field", "message"),
    [
        ({"completions": 2, "parallelism": 1}, {"completions": 3}, "spec.completions", "Invalid value: 3"),
        (INDEXED, {"completionMode": "NonIndexed"}, "spec.completionMode", 'Invalid value: "NonIndexed"'),
        (
            {**INDEXED, "backoffLimitPerIndex": 1},
            {"backoffLimitPerIndex": 2},
            "spec.backoffLimitPerIndex",
            "Invalid value: 2",
        ),
        ({}, {"managedBy": "example.com/other"}, "spec.managedBy", 'Invalid value: "example.com/other"'),
        ({}, {"managedBy": None}, "spec.managedBy", "Invalid value: null"),
        (
            {"podFailurePolicy": FAIL_ON_42},
            {"podFailurePolicy": {"rules": []}},
            "spec.podFailurePolicy",
            None,
        ),
        (
            {**INDEXED, "successPolicy": {"rules": [{"succeededCount": 1}]}},
            {"successPolicy": {"rules": [{"succeededCount": 2}]}},
            "spec.successPolicy",
            None,
        ),
        ({}, {"selector": {"matchLabels": {"extra": "x"}}}, "spec.selector", None),
    ],
    ids=[
        "completions",
        "completionMode",
        "backoffLimitPerIndex",
        "managedBy",
        "managedBy-removed",
        "podFailurePolicy",
        "successPolicy",
        "selector",
    ],
)
def test_immutable_spec_fields(
    kube: KubeTarget,
    namespace: str,
    created: dict[str, Any],
    patch: dict[str, Any],
    field: str,
    message: str | None,
) -> None:
    create_job(kube.client, namespace, "fixed", suspend=True, **created)
    found = causes(patch_job(kube.client, namespace, "fixed", {"spec": patch}))
    immutable = [c for c in found if c["field"] == field and c["message"].endswith(": field is immutable")]
    assert len(immutable) == 1, found
    (cause,) = immutable
    assert cause["reason"] == "FieldValueInvalid"
    if message is not None:
        assert cause["message"] == f"{message}: field is immutable"


def test_indexed_completions_change_only_in_tandem_with_parallelism(kube: KubeTarget, namespace: str) -> None:
    create_job(kube.client, namespace, "elastic", suspend=True, **INDEXED)
    scaled = patch_job(kube.client, namespace, "elastic", {"spec": {"completions": 3, "parallelism": 3}})
    assert scaled.status_code == 200, scaled.text
    response = patch_job(kube.client, namespace, "elastic", {"spec": {"completions": 4}})
    (cause,) = causes(response)
    assert (cause["field"], cause["message"]) == (
        "spec.completions",
        "Invalid value: 4: can only be modified in tandem with spec.parallelism",
    )


def test_parallelism_and_suspend_are_mutable(kube: KubeTarget, namespace: str) -> None:
    create_job(kube.client, namespace, "scale", suspend=True, completions=4, parallelism=1)
    response = patch_job(kube.client, namespace, "scale", {"spec": {"parallelism": 3, "suspend": False}})
    assert response.status_code == 200, response.text
    assert (response.json()["spec"]["parallelism"], response.json()["spec"]["suspend"]) == (3, False)


# --- create ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("spec", "field", "reason", "message"),
    [
        (
            {"completionMode": "Bogus"},
            "spec.completionMode",
            "FieldValueNotSupported",
            'Unsupported value: "Bogus": supported values: "NonIndexed", "Indexed"',
        ),
        (
            {"completionMode": "Indexed", "parallelism": 2},
            "spec.completions",
            "FieldValueRequired",
            "Required value: when completion mode is Indexed",
        ),
        (
            {"backoffLimitPerIndex": 1},
            "spec.backoffLimitPerIndex",
            "FieldValueInvalid",
            "Invalid value: 1: requires indexed completion mode",
        ),
        (
            {"parallelism": -1},
            "spec.parallelism",
            "FieldValueInvalid",
            "Invalid value: -1: must be greater than or equal to 0",
        ),
        (
            {"managedBy": "not-a-path"},
            "spec.managedBy",
            "FieldValueInvalid",
            'Invalid value: "not-a-path": must be a domain-prefixed path (such as "acme.io/foo")',
        ),
        (
            {"managedBy": "example.com/" + "x" * 60},
            "spec.managedBy",
            "FieldValueTooLong",
            "Too long: may not be more than 63 bytes",
        ),
        (
            {"podReplacementPolicy": "Sometimes"},
            "spec.podReplacementPolicy",
            "FieldValueNotSupported",
            'Unsupported value: "Sometimes": supported values: "Failed", "TerminatingOrFailed"',
        ),
        ({"manualSelector": True}, "spec.selector", "FieldValueRequired", "Required value"),
    ],
    ids=[
        "completionMode",
        "indexed-needs-completions",
        "backoffLimitPerIndex-needs-indexed",
        "negative-parallelism",
        "managedBy-format",
        "managedBy-length",
        "podReplacementPolicy",
        "manual-selector-missing",
    ],
)
def test_create_rules(
    kube: KubeTarget, namespace: str, spec: dict[str, Any], field: str, reason: str, message: str
) -> None:
    body = job_manifest("bad", suspend=True, **{"managedBy": CONFORMANCE_MANAGER, **spec})
    found = causes(kube.client.post(jobs_url(namespace), json=body))
    assert {"field": field, "reason": reason, "message": message} in found


def test_template_labels_conflicting_with_the_generated_ones_are_rejected(
    kube: KubeTarget, namespace: str
) -> None:
    body = job_manifest("mislabelled", suspend=True, managedBy=CONFORMANCE_MANAGER)
    body["spec"]["template"]["metadata"] = {"labels": {"controller-uid": "not-the-uid"}}
    found = causes(kube.client.post(jobs_url(namespace), json=body))
    cause = next(c for c in found if c["field"] == "spec.template.metadata.labels[controller-uid]")
    assert cause["reason"] == "FieldValueInvalid"
    assert cause["message"].startswith('Invalid value: {"')
    assert "must be '" in cause["message"]
