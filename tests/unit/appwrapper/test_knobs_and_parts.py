"""The phase machine's pure parts: fault-tolerance knobs, conditions, component objects, pod counts."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from appwrapper import model
from appwrapper.components import ComponentError, build_component, expected_pod_count, template_path
from appwrapper.conditions import clear_condition, transition_time
from appwrapper.faulttolerance import FaultTolerance, Knobs, validate
from appwrapper.summary import PodSummary, summarize_components, summarize_pods
from shared.kube.conditions import set_condition
from tests.unit.appwrapper.fakes import appwrapper, batch_job, pod

NOW = datetime(2025, 1, 1, 12, 0, 0, 700000, tzinfo=UTC)


def test_vocabulary_is_appwrappers() -> None:
    assert [p.value for p in model.Phase] == [
        "",
        "Suspended",
        "Resuming",
        "Running",
        "Resetting",
        "Suspending",
        "Succeeded",
        "Failed",
        "Terminating",
    ]
    assert model.FINALIZER == "workload.codeflare.dev/finalizer"
    assert model.APPWRAPPER_LABEL == "workload.codeflare.dev/appwrapper"
    assert model.RETRY_LIMIT_ANNOTATION == "workload.codeflare.dev.appwrapper/retryLimit"
    assert model.FORCEFUL_DELETION_GRACE_PERIOD_ANNOTATION == (
        "workload.codeflare.dev.appwrapper/forcefulDeletionGracePeriodDuration"
    )


# --- knobs ---------------------------------------------------------------------------------------


def knobs(**annotations: str) -> Knobs:
    return Knobs(annotations, config=FaultTolerance())


def test_defaults_are_the_operators() -> None:
    k = knobs()
    assert (k.admission_grace, k.warmup_grace, k.failure_grace, k.retry_pause) == (
        timedelta(minutes=1),
        timedelta(minutes=5),
        timedelta(minutes=1),
        timedelta(seconds=90),
    )
    assert (k.retry_limit, k.forceful_deletion_grace, k.deletion_on_failure_grace, k.success_ttl) == (
        3,
        timedelta(minutes=10),
        timedelta(0),
        timedelta(days=7),
    )
    assert (k.terminal_exit_codes, k.retryable_exit_codes) == ((), ())


@pytest.mark.parametrize(
    ("annotation", "value", "attribute", "expected"),
    [
        (model.ADMISSION_GRACE_PERIOD_ANNOTATION, "2m30s", "admission_grace", timedelta(seconds=150)),
        (model.ADMISSION_GRACE_PERIOD_ANNOTATION, "-5s", "admission_grace", timedelta(0)),
        (model.WARMUP_GRACE_PERIOD_ANNOTATION, "48h", "warmup_grace", timedelta(hours=24)),
        (model.FAILURE_GRACE_PERIOD_ANNOTATION, "soon", "failure_grace", timedelta(minutes=1)),
        (model.RETRY_PAUSE_PERIOD_ANNOTATION, "1s", "retry_pause", timedelta(seconds=1)),
        (model.FORCEFUL_DELETION_GRACE_PERIOD_ANNOTATION, "0", "forceful_deletion_grace", timedelta(0)),
        (model.DELETION_ON_FAILURE_GRACE_PERIOD_ANNOTATION, "x", "deletion_on_failure_grace", timedelta(0)),
        (
            model.DELETION_ON_FAILURE_GRACE_PERIOD_ANNOTATION,
            "90m",
            "deletion_on_failure_grace",
            timedelta(minutes=90),
        ),
        (model.SUCCESS_TTL_ANNOTATION, "1h", "success_ttl", timedelta(hours=1)),
        (model.SUCCESS_TTL_ANNOTATION, "800h", "success_ttl", timedelta(days=7)),  # may only shorten
        (model.SUCCESS_TTL_ANNOTATION, "0s", "success_ttl", timedelta(days=7)),
        (model.RETRY_LIMIT_ANNOTATION, "0", "retry_limit", 0),
        (model.RETRY_LIMIT_ANNOTATION, "-1", "retry_limit", -1),
        (model.RETRY_LIMIT_ANNOTATION, " 2", "retry_limit", 3),  # Atoi refuses spaces: the default
        (model.RETRY_LIMIT_ANNOTATION, "4294967297", "retry_limit", 1),  # int32(...) wraps as Go's does
        (model.TERMINAL_EXIT_CODES_ANNOTATION, "3,x,42", "terminal_exit_codes", (3, 42)),
        (model.RETRYABLE_EXIT_CODES_ANNOTATION, "1", "retryable_exit_codes", (1,)),
    ],
)
def test_annotations(annotation: str, value: str, attribute: str, expected: Any) -> None:
    assert getattr(knobs(**{annotation: value}), attribute) == expected


def test_configuration_rules() -> None:
    assert validate(FaultTolerance()) == []
    assert validate(
        FaultTolerance(admission_grace_period=timedelta(hours=2), grace_period_maximum=timedelta(hours=1))
    ) == [
        "admissionGracePeriod 2h0m0s exceeds gracePeriodMaximum 1h0m0s",
        "admissionGracePeriod 2h0m0s exceeds warmupGracePeriod 5m0s",
    ]
    assert validate(FaultTolerance(success_ttl=timedelta(0))) == ["successTTL 0s is not a positive duration"]


# --- conditions ----------------------------------------------------------------------------------


def test_set_condition_keeps_the_transition_time_while_the_status_holds() -> None:
    conditions: list[dict[str, Any]] = []
    set_condition(conditions, condition_type="Unhealthy", status="True", reason="A", message="m", now=NOW)
    assert conditions == [
        {
            "type": "Unhealthy",
            "status": "True",
            "lastTransitionTime": "2025-01-01T12:00:00Z",
            "reason": "A",
            "message": "m",
        }
    ]
    later = NOW + timedelta(minutes=5)
    set_condition(conditions, condition_type="Unhealthy", status="True", reason="B", message="", now=later)
    assert conditions[0]["lastTransitionTime"] == "2025-01-01T12:00:00Z"
    assert (conditions[0]["reason"], conditions[0]["message"]) == ("B", "")
    clear_condition(conditions, condition_type="Unhealthy", reason="C", now=later)
    assert conditions[0]["status"] == "False"
    assert conditions[0]["lastTransitionTime"] == "2025-01-01T12:05:00Z"
    clear_condition(conditions, condition_type="Unhealthy", reason="D", now=later + timedelta(hours=1))
    assert conditions[0]["reason"] == "C"  # clearing a condition that is not True changes nothing
    assert transition_time(conditions, "Unhealthy", default=NOW) == datetime(2025, 1, 1, 12, 5, tzinfo=UTC)
    assert transition_time(conditions, "Missing", default=NOW) == NOW


# --- building components -------------------------------------------------------------------------


def admitted(*templates: dict[str, Any], infos: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    aw = appwrapper(*templates, suspend=False)
    aw["status"] = {
        "componentStatus": [
            {"podSets": [{"path": "template.spec.template", "replicas": 2}]} for _ in templates
        ]
    }
    if infos is not None:
        aw["spec"]["components"][0]["podSetInfos"] = infos
    return aw


def test_scheduling_gates_are_deduplicated_by_name_and_annotations_merged() -> None:
    job = batch_job()
    job["spec"]["template"]["spec"]["schedulingGates"] = [{"name": "a"}]
    job["spec"]["template"]["metadata"] = {"annotations": {"keep": "me"}}
    obj = build_component(
        admitted(job, infos=[{"schedulingGates": [{"name": "a"}, {"name": "b"}], "annotations": {"x": "y"}}]),
        0,
    )
    template = obj["spec"]["template"]
    assert template["spec"]["schedulingGates"] == [{"name": "a"}, {"name": "b"}]
    assert template["metadata"]["annotations"] == {"keep": "me", "x": "y"}
    assert template["metadata"]["labels"] == {"workload.codeflare.dev/appwrapper": "aw"}
    assert obj["metadata"]["namespace"] == "ns"


def test_a_node_selector_conflict_is_an_error_naming_the_component() -> None:
    job = batch_job()
    job["spec"]["template"]["spec"]["nodeSelector"] = {"zone": "a"}
    with pytest.raises(ComponentError) as caught:
        build_component(admitted(job, infos=[{"nodeSelector": {"zone": "b"}}]), 0)
    assert str(caught.value) == (
        "spec.components[0].template: conflict updating nodeSelector: conflict for key=zone, value1=a, value2=b"
    )


def test_an_object_label_of_the_user_wins_over_the_appwrapper_label() -> None:
    job = batch_job()
    job["metadata"]["labels"] = {"workload.codeflare.dev/appwrapper": "other"}
    assert build_component(admitted(job), 0)["metadata"]["labels"] == {
        "workload.codeflare.dev/appwrapper": "other"
    }


def test_another_controller_and_another_namespace_are_refused() -> None:
    job = batch_job()
    job["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d", "uid": "u", "controller": True}
    ]
    with pytest.raises(ComponentError, match="is already owned by another Deployment controller d"):
        build_component(admitted(job), 0)
    elsewhere = batch_job()
    elsewhere["metadata"]["namespace"] = "other"
    with pytest.raises(
        ComponentError, match='component namespace "other" is different from appwrapper namespace "ns"'
    ):
        build_component(admitted(elsewhere), 0)


def test_pod_set_paths_are_rooted_at_template() -> None:
    assert template_path("template") is None
    assert template_path("template.spec.replicatedJobs[1].template").text == "spec.replicatedJobs[1].template"  # type: ignore[union-attr]
    with pytest.raises(ValueError, match="first element of the path must be 'template'"):
        template_path("spec.template")
    assert (
        expected_pod_count(
            [{"podSets": [{"path": "template", "replicas": 3}, {"path": "template"}]}, {"podSets": []}]
        )
        == 4
    )


def test_building_does_not_touch_the_appwrapper() -> None:
    aw = admitted(batch_job(), infos=[{"nodeSelector": {"a": "b"}}])
    before = copy.deepcopy(aw)
    build_component(aw, 0)
    assert aw == before


# --- counting ------------------------------------------------------------------------------------


def test_components_count_deployed_and_failed() -> None:
    failed_job = {**batch_job(), "status": {"conditions": [{"type": "Failed", "status": "True"}]}}
    deleting = {**batch_job(), "metadata": {"name": "x", "deletionTimestamp": "2025-01-01T00:00:00Z"}}
    pytorch = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "status": {"conditions": [{"type": "Failed", "status": "True"}]},
    }
    ray = {"apiVersion": "ray.io/v1", "kind": "RayCluster", "status": {"state": "failed"}}
    summary = summarize_components(6, [failed_job, deleting, None, pytorch, ray, batch_job()])
    assert (summary.expected, summary.deployed, summary.failed) == (6, 4, 2)


def test_jobs_are_counted_from_their_status_and_their_pods_only_for_exit_codes() -> None:
    job = {
        **batch_job(),
        "metadata": {"name": "job", "uid": "j1"},
        "status": {"active": 3, "ready": 1, "succeeded": 2, "failed": 1},
    }
    pods = [
        pod("of-the-job", "Failed", exit_code=7, owner_uid="j1"),
        pod("lone", "Running"),
        pod("done", "Succeeded"),
        {
            **pod("going", "Running"),
            "metadata": {**pod("going", "Running")["metadata"], "deletionTimestamp": "x"},
        },
    ]
    assert summarize_pods(expected=5, pods=pods, jobs=[job], terminal_codes=(7,)) == PodSummary(
        expected=5, pending=2, running=2, succeeded=3, failed=1, terminal_failure=True
    )
    assert not summarize_pods(
        expected=1, pods=[pod("p", "Failed", exit_code=1)], retryable_codes=(1,)
    ).terminal_failure
    assert summarize_pods(
        expected=1, pods=[pod("p", "Failed", exit_code=2)], retryable_codes=(1,)
    ).terminal_failure
