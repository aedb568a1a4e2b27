"""batch/v1 Job adapter: the tables of reference §7 and §3.4, and the golden objects from real Kueue."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from shared.constants import STOPPING_ANNOTATION
from shared.frameworks.base import (
    AdapterError,
    FieldError,
    GenericJob,
    JobWithCustomStop,
    JobWithManagedBy,
    JobWithPodLabelSelector,
    JobWithReclaimablePods,
    JobWithValidation,
    ReclaimablePodCount,
)
from shared.frameworks.batch_job import BatchJobAdapter, parse_index_intervals
from shared.kueue.podset import PodSetInfo, PodSetInfoConflictError, PodSetInfoError
from shared.merge_patch import apply_merge_patch

MIN_PARALLELISM = "kueue.x-k8s.io/job-min-parallelism"
SYNC_COMPLETIONS = "kueue.x-k8s.io/job-completions-equal-parallelism"


def make_job(
    *,
    parallelism: int | None = 1,
    completions: int | None = None,
    annotations: dict[str, str] | None = None,
    status: dict[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    job: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "sample", "namespace": "ns"},
        "spec": {
            "template": {
                "metadata": {"labels": {"app": "sample"}},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
            },
            **spec,
        },
    }
    if parallelism is not None:
        job["spec"]["parallelism"] = parallelism
    if completions is not None:
        job["spec"]["completions"] = completions
    if annotations:
        job["metadata"]["annotations"] = dict(annotations)
    if status is not None:
        job["status"] = status
    return job


def admission_info(**overrides: Any) -> PodSetInfo:
    values: dict[str, Any] = {
        "name": "main",
        "count": 2,
        "labels": {"kueue.x-k8s.io/podset": "main"},
        "annotations": {"kueue.x-k8s.io/workload": "job-sample-12345"},
        "node_selector": {"instance-type": "spot"},
        "tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
    }
    values.update(overrides)
    return PodSetInfo(**values)


def restore_info_for(job: dict[str, Any]) -> PodSetInfo:
    template = job["spec"]["template"]
    return PodSetInfo(
        name="main",
        count=job["spec"].get("parallelism", 1),
        labels=dict(template["metadata"].get("labels", {})),
        annotations=dict(template["metadata"].get("annotations", {})),
        node_selector=dict(template["spec"].get("nodeSelector", {})),
    )


def test_implements_the_optional_interfaces_kueue_lists_for_batch_job() -> None:
    adapter = BatchJobAdapter(make_job())
    for protocol in (
        GenericJob,
        JobWithReclaimablePods,
        JobWithCustomStop,
        JobWithManagedBy,
        JobWithPodLabelSelector,
        JobWithValidation,
    ):
        assert isinstance(adapter, protocol), protocol


# --- IsSuspended / Suspend / IsActive ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("suspend", "stopping", "expected"),
    [
        (None, None, False),
        (False, None, False),
        (True, None, True),
        (True, "true", False),  # half-finished stop: not suspended yet
        (True, "false", True),
        (False, "true", False),
    ],
)
def test_is_suspended_honours_the_stopping_annotation(suspend, stopping, expected) -> None:
    job = make_job(annotations={STOPPING_ANNOTATION: stopping} if stopping else None)
    if suspend is not None:
        job["spec"]["suspend"] = suspend
    assert BatchJobAdapter(job).is_suspended() is expected


def test_suspend_sets_spec_suspend() -> None:
    job = make_job()
    BatchJobAdapter(job).suspend()
    assert job["spec"]["suspend"] is True


@pytest.mark.parametrize(
    ("status", "expected"), [(None, False), ({}, False), ({"active": 0}, False), ({"active": 2}, True)]
)
def test_is_active(status, expected) -> None:
    assert BatchJobAdapter(make_job(status=status)).is_active() is expected


# --- PodSets -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("parallelism", "completions", "count"),
    [(None, None, 1), (1, None, 1), (3, None, 3), (3, 2, 2), (2, 4, 2), (4, 4, 4), (5, 0, 0)],
)
def test_pod_set_count_is_min_of_parallelism_and_completions(parallelism, completions, count) -> None:
    [pod_set] = BatchJobAdapter(make_job(parallelism=parallelism, completions=completions)).pod_sets()
    assert pod_set.name == "main"
    assert pod_set.count == count


@pytest.mark.parametrize(
    ("annotation", "min_count"), [(None, None), ("2", 2), ("abc", None), ("+3", 3), (" 3", None)]
)
def test_pod_set_min_count_from_min_parallelism_annotation(annotation, min_count) -> None:
    job = make_job(parallelism=4, annotations={MIN_PARALLELISM: annotation} if annotation else None)
    assert BatchJobAdapter(job).pod_sets()[0].min_count == min_count


def test_pod_set_template_drops_job_controller_labels_but_keeps_job_name() -> None:
    job = make_job()
    job["spec"]["template"]["metadata"]["labels"] = {
        "app": "sample",
        "controller-uid": "u",
        "job-name": "sample",
        "batch.kubernetes.io/controller-uid": "u",
        "batch.kubernetes.io/job-name": "sample",
    }
    [pod_set] = BatchJobAdapter(job).pod_sets()
    assert pod_set.template["metadata"]["labels"] == {
        "app": "sample",
        "batch.kubernetes.io/job-name": "sample",
    }
    assert "controller-uid" in job["spec"]["template"]["metadata"]["labels"], "the job itself is untouched"


def test_pod_set_template_drops_a_label_map_left_empty() -> None:
    job = make_job()
    job["spec"]["template"]["metadata"]["labels"] = {"controller-uid": "u"}
    assert "labels" not in BatchJobAdapter(job).pod_sets()[0].template["metadata"]


def test_pod_set_topology_request_carries_the_completion_index_label() -> None:
    [pod_set] = BatchJobAdapter(make_job()).pod_sets()
    assert pod_set.topology_request == {"podIndexLabel": "batch.kubernetes.io/job-completion-index"}


def test_pod_set_topology_request_reads_tas_annotations() -> None:
    job = make_job()
    job["spec"]["template"]["metadata"]["annotations"] = {
        "kueue.x-k8s.io/podset-required-topology": "cloud.com/rack",
        "kueue.x-k8s.io/podset-slice-required-topology": "cloud.com/block",
        "kueue.x-k8s.io/podset-slice-size": "2",
        "kueue.x-k8s.io/podset-group-name": "g",
    }
    assert BatchJobAdapter(job).pod_sets()[0].topology_request == {
        "required": "cloud.com/rack",
        "podSetSliceRequiredTopology": "cloud.com/block",
        "podSetSliceSize": 2,
        "podIndexLabel": "batch.kubernetes.io/job-completion-index",
        "podSetGroupName": "g",
    }


def test_pod_set_with_bad_unconstrained_annotation_names_it() -> None:
    job = make_job()
    job["spec"]["template"]["metadata"]["annotations"] = {
        "kueue.x-k8s.io/podset-unconstrained-topology": "yes"
    }
    with pytest.raises(AdapterError) as caught:
        BatchJobAdapter(job).pod_sets()
    assert (
        caught.value.path
        == "spec.template.metadata.annotations[kueue.x-k8s.io/podset-unconstrained-topology]"
    )
    assert 'strconv.ParseBool: parsing "yes": invalid syntax' in caught.value.message


@pytest.mark.needs_shared
def test_pod_sets_match_the_golden_workload(golden_dir: Path) -> None:
    """Undo the admission on the admitted Job; its pod sets are then exactly the Workload's."""
    job = yaml.safe_load((golden_dir / "job-admitted.yaml").read_text())
    workload = yaml.safe_load((golden_dir / "workload-admitted.yaml").read_text())["items"][0]
    expected = workload["spec"]["podSets"]
    template = expected[0]["template"]
    stored = PodSetInfo(
        name="main",
        count=2,
        labels=dict(template["metadata"]["labels"]),
        annotations=dict(template["metadata"]["annotations"]),
        node_selector=dict(template["spec"]["nodeSelector"]),
    )
    adapter = BatchJobAdapter(job)
    assert adapter.restore_pod_sets_info([stored]) is True
    assert [pod_set.to_wire() for pod_set in adapter.pod_sets()] == expected


@pytest.mark.needs_shared
def test_stop_steps_reproduce_the_golden_deactivated_job(golden_dir: Path) -> None:
    job = yaml.safe_load((golden_dir / "job-admitted.yaml").read_text())
    after = yaml.safe_load((golden_dir / "job-after-deactivation.yaml").read_text())
    workload = yaml.safe_load((golden_dir / "workload-admitted.yaml").read_text())["items"][0]
    template = workload["spec"]["podSets"][0]["template"]
    stored = PodSetInfo(
        name="main",
        count=2,
        labels=dict(template["metadata"]["labels"]),
        annotations=dict(template["metadata"]["annotations"]),
        node_selector=dict(template["spec"]["nodeSelector"]),
    )
    for step in BatchJobAdapter(job).stop_steps([stored]):
        job = apply_merge_patch(job, step.merge_patch)
    assert job["spec"] == after["spec"]
    assert "annotations" not in job["metadata"]
    assert BatchJobAdapter(job).stop_steps([stored]) == []


# --- RunWithPodSetsInfo / RestorePodSetsInfo -----------------------------------------------------


def test_run_unsuspends_and_injects_admission() -> None:
    job = make_job(parallelism=2)
    job["spec"]["suspend"] = True
    BatchJobAdapter(job).run_with_pod_sets_info([admission_info()])
    assert job["spec"]["suspend"] is False
    template = job["spec"]["template"]
    assert template["metadata"]["labels"] == {"app": "sample", "kueue.x-k8s.io/podset": "main"}
    assert template["spec"]["nodeSelector"] == {"instance-type": "spot"}
    assert job["spec"]["parallelism"] == 2


@pytest.mark.parametrize("count", [0, 2])
def test_run_requires_exactly_one_info(count) -> None:
    job = make_job()
    job["spec"]["suspend"] = True
    with pytest.raises(PodSetInfoError, match=f"^invalid podset infos: expecting 1 podset, got {count}$"):
        BatchJobAdapter(job).run_with_pod_sets_info([admission_info()] * count)


def test_run_conflicting_node_selector_is_a_permanent_error() -> None:
    job = make_job()
    job["spec"]["template"]["spec"]["nodeSelector"] = {"instance-type": "on-demand"}
    with pytest.raises(PodSetInfoConflictError):
        BatchJobAdapter(job).run_with_pod_sets_info([admission_info()])


def test_run_with_partial_admission_sets_parallelism_and_completions() -> None:
    job = make_job(
        parallelism=5,
        completions=5,
        completionMode="Indexed",
        annotations={MIN_PARALLELISM: "2", SYNC_COMPLETIONS: "true"},
    )
    BatchJobAdapter(job).run_with_pod_sets_info([admission_info(count=3)])
    assert (job["spec"]["parallelism"], job["spec"]["completions"]) == (3, 3)


def test_run_with_partial_admission_keeps_completions_without_sync() -> None:
    job = make_job(parallelism=5, completions=10, annotations={MIN_PARALLELISM: "2"})
    BatchJobAdapter(job).run_with_pod_sets_info([admission_info(count=3)])
    assert (job["spec"]["parallelism"], job["spec"]["completions"]) == (3, 10)


def test_run_restore_round_trip_returns_the_exact_original_object() -> None:
    job = make_job(
        parallelism=5,
        completions=5,
        completionMode="Indexed",
        annotations={MIN_PARALLELISM: "2", SYNC_COMPLETIONS: "1"},
    )
    job["spec"]["suspend"] = True
    job["spec"]["template"]["spec"]["nodeSelector"] = {"zone": "a"}
    original = copy.deepcopy(job)
    stored = restore_info_for(original)
    adapter = BatchJobAdapter(job)
    adapter.run_with_pod_sets_info([admission_info(count=3)])
    assert job != original
    adapter.suspend()
    assert adapter.restore_pod_sets_info([stored]) is True
    assert job == original
    assert adapter.restore_pod_sets_info([stored]) is False


def test_restore_with_no_infos_is_a_no_op() -> None:
    job = make_job()
    assert BatchJobAdapter(job).restore_pod_sets_info([]) is False


def test_restore_keeps_the_live_job_controller_labels() -> None:
    job = make_job()
    job["spec"]["template"]["metadata"]["labels"].update(
        {"controller-uid": "u1", "kueue.x-k8s.io/podset": "main"}
    )
    BatchJobAdapter(job).restore_pod_sets_info([PodSetInfo(name="main", count=1, labels={"app": "sample"})])
    assert job["spec"]["template"]["metadata"]["labels"] == {"app": "sample", "controller-uid": "u1"}


# --- Stop (three steps) --------------------------------------------------------------------------


def running_job(*, active: int = 0) -> tuple[dict[str, Any], PodSetInfo]:
    """A started Job (its pods already gone unless ``active``) with the admission merged in."""
    job = make_job(parallelism=2, status={"startTime": "2026-01-01T00:00:00Z", "active": active})
    job["spec"]["suspend"] = True
    stored = restore_info_for(job)
    BatchJobAdapter(job).run_with_pod_sets_info([admission_info()])
    return job, stored


def test_stop_steps_are_suspend_then_clear_start_time_then_restore() -> None:
    job, stored = running_job()
    before = copy.deepcopy(job)
    steps = BatchJobAdapter(job).stop_steps([stored])
    assert job == before, "stop_steps computes; it does not mutate"
    assert [step.subresource for step in steps] == [None, "status", None]
    assert steps[0].merge_patch == {
        "metadata": {"annotations": {STOPPING_ANNOTATION: "true"}},
        "spec": {"suspend": True},
    }
    assert steps[1].merge_patch == {"status": {"startTime": None}}
    restore = steps[2].merge_patch
    assert restore["metadata"] == {"annotations": None}
    assert restore["spec"]["template"]["spec"]["nodeSelector"] is None
    for step in steps:
        job = apply_merge_patch(job, step.merge_patch)
    assert job["spec"]["suspend"] is True
    assert "startTime" not in job["status"]
    assert job["spec"]["template"]["metadata"]["labels"] == {"app": "sample"}
    assert BatchJobAdapter(job).stop_steps([stored]) == []


def test_the_restore_waits_until_no_pod_is_active() -> None:
    """kube-apiserver 1.36 refuses a template change while ``status.active`` > 0 (measured)."""
    job, stored = running_job(active=2)
    steps = BatchJobAdapter(job).stop_steps([stored])
    assert [step.phase for step in steps] == ["suspend", "reset-status"]
    for step in steps:
        job = apply_merge_patch(job, step.merge_patch)
    assert BatchJobAdapter(job).is_suspended() is False, "the stopping mark stays until the restore"
    assert [step.phase for step in BatchJobAdapter(job).stop_steps([stored])] == ["suspend"]
    job["status"]["active"] = 0
    steps = BatchJobAdapter(job).stop_steps([stored])
    assert [step.phase for step in steps] == ["suspend", "restore"]
    for step in steps:
        job = apply_merge_patch(job, step.merge_patch)
    assert BatchJobAdapter(job).is_suspended() is True
    assert job["spec"]["template"]["metadata"]["labels"] == {"app": "sample"}


@pytest.mark.parametrize("crash_after", [1, 2])
def test_stop_resumes_after_a_crash_between_steps(crash_after) -> None:
    job, stored = running_job()
    first_plan = BatchJobAdapter(job).stop_steps([stored])
    for step in first_plan[:crash_after]:
        job = apply_merge_patch(job, step.merge_patch)
    # the process restarts: the annotation says the stop is unfinished, so the job is not suspended
    assert BatchJobAdapter(job).is_suspended() is False
    for step in BatchJobAdapter(job).stop_steps([stored]):
        job = apply_merge_patch(job, step.merge_patch)
    assert BatchJobAdapter(job).is_suspended() is True
    assert STOPPING_ANNOTATION not in job["metadata"].get("annotations", {})
    assert job["spec"]["template"]["metadata"]["labels"] == {"app": "sample"}
    assert BatchJobAdapter(job).stop_steps([stored]) == []


def test_stop_of_a_suspended_job_without_start_time_only_restores() -> None:
    job = make_job()
    job["spec"]["suspend"] = True
    job["spec"]["template"]["metadata"]["labels"]["kueue.x-k8s.io/podset"] = "main"
    steps = BatchJobAdapter(job).stop_steps([PodSetInfo(name="main", count=1, labels={"app": "sample"})])
    assert len(steps) == 1
    assert steps[0].merge_patch == {
        "spec": {"template": {"metadata": {"labels": {"kueue.x-k8s.io/podset": None}}}}
    }


# --- Finished / PodsReady -----------------------------------------------------------------------


def cond(kind: str, status: str = "True", message: str = "") -> dict[str, str]:
    return {"type": kind, "status": status, "message": message}


@pytest.mark.parametrize(
    ("conditions", "finished", "success", "message"),
    [
        ([], False, False, ""),
        ([cond("Complete", message="done")], True, True, "done"),
        ([cond("Failed", message="BackoffLimitExceeded")], True, False, "BackoffLimitExceeded"),
        ([cond("Complete", "False")], False, False, ""),
        ([cond("SuccessCriteriaMet")], False, False, ""),
        ([cond("FailureTarget")], False, False, ""),
        ([cond("SuccessCriteriaMet"), cond("Complete", message="ok")], True, True, "ok"),
        ([cond("Suspended"), cond("Failed", message="x"), cond("Complete")], True, False, "x"),
    ],
)
def test_finished(conditions, finished, success, message) -> None:
    state = BatchJobAdapter(make_job(status={"conditions": conditions})).finished()
    assert (state.finished, state.success, state.message) == (finished, success, message)


@pytest.mark.parametrize(
    ("parallelism", "completions", "status", "ready"),
    [
        (2, None, {}, False),
        (2, None, {"ready": 1}, False),
        (2, None, {"ready": 2}, True),
        (2, None, {"ready": 1, "succeeded": 1}, True),
        (3, None, {"ready": 1, "succeeded": 1, "uncountedTerminatedPods": {"succeeded": ["u1"]}}, True),
        (4, 2, {"ready": 2}, True),
        (1, None, None, False),
    ],
)
def test_pods_ready(parallelism, completions, status, ready) -> None:
    job = make_job(parallelism=parallelism, completions=completions, status=status)
    assert BatchJobAdapter(job).pods_ready() is ready


# --- ReclaimablePods ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("parallelism", "completions", "status", "expected"),
    [
        (1, None, {"succeeded": 1}, 0),  # single pod: nothing to reclaim
        (3, 10, {}, 0),
        (3, 10, {"succeeded": 5}, 0),  # 5 remaining >= 3 parallel
        (3, 10, {"succeeded": 8}, 1),  # 2 remaining < 3
        (3, 10, {"succeeded": 10}, 3),
        (3, None, {"succeeded": 1}, 1),  # completions defaults to parallelism
        (3, 4, {"succeeded": 6}, 3),  # more succeeded than completions: remaining clamps to 0
    ],
)
def test_reclaimable_pods_non_indexed(parallelism, completions, status, expected) -> None:
    job = make_job(parallelism=parallelism, completions=completions, status=status)
    want = [ReclaimablePodCount("main", expected)] if expected else []
    assert BatchJobAdapter(job).reclaimable_pods() == want


@pytest.mark.parametrize(
    ("completions", "completed", "failed", "expected"),
    [
        (6, "", "", 0),
        (6, "0-2", "", 1),  # 3 terminal, 3 remaining, parallelism 4 -> 1
        (6, "1,3-5", "", 2),  # 4 terminal
        (6, "0-2", "2-3", 2),  # overlapping sets are counted once: {0,1,2,3}
        (6, "0-1", "4", 1),
        (6, "0-9", "", 4),  # indexes >= completions are ignored
        (6, "x,1,5-3,2", "", 0),  # malformed/descending parts skipped: {1,2} -> 4 remaining == parallelism
        (6, "0-5", "", 4),
    ],
)
def test_reclaimable_pods_indexed(completions, completed, failed, expected) -> None:
    status: dict[str, Any] = {"completedIndexes": completed, "succeeded": 99}
    if failed:
        status["failedIndexes"] = failed
    job = make_job(parallelism=4, completions=completions, completionMode="Indexed", status=status)
    want = [ReclaimablePodCount("main", expected)] if expected else []
    assert BatchJobAdapter(job).reclaimable_pods() == want


def test_parse_index_intervals() -> None:
    assert parse_index_intervals("1,3-5", limit=10) == [(1, 1), (3, 5)]
    assert parse_index_intervals("1,3-5", limit=4) == [(1, 1), (3, 3)]
    assert parse_index_intervals("", limit=4) == []
    assert parse_index_intervals("a,-1,2-", limit=4) == []


# --- ManagedBy / selector ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("managed_by", "can_default"),
    [
        (None, True),
        ("kubernetes.io/job-controller", True),
        ("kueue.x-k8s.io/multikueue", False),
        ("other", False),
    ],
)
def test_can_default_managed_by(managed_by, can_default) -> None:
    job = make_job(managedBy=managed_by) if managed_by else make_job()
    assert BatchJobAdapter(job).can_default_managed_by() is can_default


def test_set_managed_by_writes_and_removes() -> None:
    job = make_job()
    adapter = BatchJobAdapter(job)
    adapter.set_managed_by("kueue.x-k8s.io/multikueue")
    assert job["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
    assert adapter.managed_by() == "kueue.x-k8s.io/multikueue"
    adapter.set_managed_by(None)
    assert "managedBy" not in job["spec"]


def test_pod_label_selector() -> None:
    assert BatchJobAdapter(make_job()).pod_label_selector() == "batch.kubernetes.io/job-name=sample"


# --- validation (§3.4) ---------------------------------------------------------------------------

MIN_PATH = f"metadata.annotations[{MIN_PARALLELISM}]"
SYNC_PATH = f"metadata.annotations[{SYNC_COMPLETIONS}]"


@pytest.mark.parametrize(
    ("annotations", "spec", "errors"),
    [
        ({}, {}, []),
        ({MIN_PARALLELISM: "2"}, {"parallelism": 4}, []),
        (
            {MIN_PARALLELISM: "abc"},
            {"parallelism": 4},
            [FieldError(MIN_PATH, "Invalid value", 'strconv.Atoi: parsing "abc": invalid syntax', "abc")],
        ),
        (
            {MIN_PARALLELISM: "4"},
            {"parallelism": 4},
            [FieldError(MIN_PATH, "Invalid value", "should be between 0 and 3", 4)],
        ),
        (
            {MIN_PARALLELISM: "0"},
            {"parallelism": 4},
            [FieldError(MIN_PATH, "Invalid value", "should be between 0 and 3", 0)],
        ),
        (
            {MIN_PARALLELISM: "2", "kueue.x-k8s.io/elastic-job": "true"},
            {"parallelism": 4},
            [
                FieldError(
                    MIN_PATH,
                    "Invalid value",
                    "partial admission and elastic job cannot be used together",
                    "2",
                )
            ],
        ),
        (
            {SYNC_COMPLETIONS: "maybe"},
            {},
            [
                FieldError(
                    SYNC_PATH, "Invalid value", 'strconv.ParseBool: parsing "maybe": invalid syntax', "maybe"
                )
            ],
        ),
        ({SYNC_COMPLETIONS: "false"}, {}, []),
        ({SYNC_COMPLETIONS: "true"}, {"completionMode": "Indexed", "parallelism": 3, "completions": 3}, []),
        (
            {SYNC_COMPLETIONS: "true"},
            {"parallelism": 3, "completions": 3},
            [FieldError(SYNC_PATH, "Invalid value", "should not be enabled for NonIndexed jobs", "true")],
        ),
        (
            {SYNC_COMPLETIONS: "true"},
            {"completionMode": "Indexed", "parallelism": 3, "completions": 4},
            [
                FieldError(
                    "spec.completions",
                    "Invalid value",
                    f"should be equal to parallelism when {SYNC_COMPLETIONS} annotation is true",
                    4,
                )
            ],
        ),
    ],
)
def test_validate_on_create(annotations, spec, errors) -> None:
    parallelism = spec.pop("parallelism", 1)
    job = make_job(parallelism=parallelism, annotations=annotations, **spec)
    assert BatchJobAdapter(job).validate_on_create() == errors


def test_validate_on_update_parallelism_is_frozen_while_running_with_partial_admission() -> None:
    old = make_job(parallelism=4, annotations={MIN_PARALLELISM: "2"})
    new = make_job(parallelism=3, annotations={MIN_PARALLELISM: "2"})
    assert BatchJobAdapter(new).validate_on_update(old) == [
        FieldError(
            "spec.parallelism",
            "Forbidden",
            "cannot change when partial admission is enabled and the job is not suspended",
        )
    ]
    old["spec"]["suspend"] = True
    assert BatchJobAdapter(new).validate_on_update(old) == []


def test_validate_on_update_revalidates_min_parallelism_only_when_changed() -> None:
    old = make_job(parallelism=4, annotations={MIN_PARALLELISM: "9"})
    new = make_job(parallelism=4, annotations={MIN_PARALLELISM: "9"})
    assert BatchJobAdapter(new).validate_on_update(old) == []
    new["metadata"]["annotations"][MIN_PARALLELISM] = "8"
    assert BatchJobAdapter(new).validate_on_update(old) == [
        FieldError(MIN_PATH, "Invalid value", "should be between 0 and 3", 8)
    ]


def test_validate_on_update_sync_flag_is_immutable_while_running() -> None:
    old = make_job(parallelism=2, completions=2, completionMode="Indexed")
    new = make_job(
        parallelism=2, completions=2, completionMode="Indexed", annotations={SYNC_COMPLETIONS: "true"}
    )
    assert BatchJobAdapter(new).validate_on_update(old) == [
        FieldError(SYNC_PATH, "Forbidden", "field is immutable while the job is not suspended")
    ]
    old["spec"]["suspend"] = new["spec"]["suspend"] = True
    assert BatchJobAdapter(new).validate_on_update(old) == []


# --- malformed objects ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mutate", "call", "path"),
    [
        (lambda j: j["spec"].pop("template"), "pod_sets", "spec.template"),
        (lambda j: j["spec"].update(template="x"), "pod_sets", "spec.template"),
        (lambda j: j["spec"].update(parallelism="2"), "pod_sets", "spec.parallelism"),
        (lambda j: j["spec"].update(completions=1.5), "pod_sets", "spec.completions"),
        (lambda j: j.update(spec=[]), "pod_sets", "spec"),
        (lambda j: j["spec"].update(suspend="yes"), "is_suspended", "spec.suspend"),
        (lambda j: j["metadata"].update(annotations=["a"]), "min_pods_count", "metadata.annotations"),
        (lambda j: j.update(status={"active": "1"}), "is_active", "status.active"),
        (lambda j: j.update(status={"conditions": {}}), "finished", "status.conditions"),
        (lambda j: j.update(status={"conditions": ["Complete"]}), "finished", "status.conditions[0]"),
        (lambda j: j.update(status={"ready": True}), "pods_ready", "status.ready"),
        (
            lambda j: j.update(status={"uncountedTerminatedPods": {"succeeded": "u"}}),
            "pods_ready",
            "status.uncountedTerminatedPods.succeeded",
        ),
        (lambda j: j.update(status={"succeeded": "1"}), "reclaimable_pods", "status.succeeded"),
        (lambda j: j["spec"].update(managedBy=1), "managed_by", "spec.managedBy"),
        (lambda j: j["spec"]["template"].update(metadata="m"), "pod_sets", "spec.template.metadata"),
        (
            lambda j: j["spec"]["template"]["metadata"].update(labels=["l"]),
            "pod_sets",
            "spec.template.metadata.labels",
        ),
        (
            lambda j: j["spec"]["template"]["metadata"].update(labels={"a": 1}),
            "pod_sets",
            "spec.template.metadata.labels.a",
        ),
        (
            lambda j: j["spec"]["template"]["spec"].update(tolerations={}),
            "pod_sets",
            "spec.template.spec.tolerations",
        ),
        (
            lambda j: j["spec"]["template"]["spec"].update(nodeSelector="n"),
            "pod_sets",
            "spec.template.spec.nodeSelector",
        ),
    ],
)
def test_malformed_job_raises_adapter_error_naming_the_path(mutate, call, path) -> None:
    job = make_job()
    mutate(job)
    with pytest.raises(AdapterError) as caught:
        getattr(BatchJobAdapter(job), call)()
    assert caught.value.path == path


def test_run_on_malformed_template_raises_adapter_error_before_writing_the_template() -> None:
    job = make_job()
    job["spec"]["template"]["spec"]["tolerations"] = "none"
    with pytest.raises(AdapterError) as caught:
        BatchJobAdapter(job).run_with_pod_sets_info([admission_info()])
    assert caught.value.path == "spec.template.spec.tolerations"


def test_pod_set_template_is_independent_of_the_job_both_ways() -> None:
    job = make_job(parallelism=2)
    job["spec"]["template"]["metadata"]["labels"]["controller-uid"] = "uid-1"
    original = copy.deepcopy(job)
    adapter = BatchJobAdapter(job)
    [pod_set] = adapter.pod_sets()
    assert job == original  # stripping the job-controller labels did not touch the job
    adapter.run_with_pod_sets_info([admission_info()])
    assert pod_set.template == {
        "metadata": {"labels": {"app": "sample"}},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
    }  # a start merges into the job, never into a pod set already handed out
    pod_set.template["spec"]["containers"][0]["image"] = "changed"
    assert job["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox"


def test_stop_steps_leave_the_job_untouched() -> None:
    job = make_job(parallelism=2, status={"startTime": "2026-01-01T00:00:00Z"})
    adapter = BatchJobAdapter(job)
    adapter.run_with_pod_sets_info([admission_info()])
    before = copy.deepcopy(job)
    assert adapter.stop_steps([restore_info_for(make_job(parallelism=2))])
    assert job == before
