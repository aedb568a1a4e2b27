"""Workload construction and priority resolution (reference §2.7, §2.10)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from shared.models.workload import PodSet, PriorityClassRef, Workload
from shared.workload_builder import (
    PriorityNotFound,
    PriorityUpdate,
    ResolvedPriority,
    WorkloadConstructionError,
    classify_priority_update,
    construct_workload,
    global_default_priority_class,
    pod_priority_class_name,
    priority_class_names,
    priority_state_equal,
    priority_value,
    propagate_admission_gated_by,
    resolve_priority,
)
from tests.unit.kueue.helpers import BATCH_JOB_GVK, batch_job_pod_sets

NO_PRIORITY = ResolvedPriority(ref=None, value=0)


def lookup(table: dict[str, int]) -> Any:
    return table.get


def job(
    *, labels: dict[str, str] | None = None, annotations: dict[str, str] | None = None, uid: str = "u-1"
) -> dict:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "train",
            "namespace": "ns",
            "uid": uid,
            "labels": labels or {},
            "annotations": annotations or {},
        },
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}},
    }


def pod_sets() -> list[PodSet]:
    return [PodSet(name="main", count=1, template={"spec": {"containers": [{"name": "c", "image": "i"}]}})]


# --- golden ----------------------------------------------------------------------------------------------


@pytest.mark.needs_shared
def test_golden_workload_is_reproduced(golden: dict) -> None:
    source = golden["job-create-response"]
    priority = resolve_priority(
        wpc_label="",
        pod_priority_class_name=pod_priority_class_name(batch_job_pod_sets(source)),
        wpc_lookup=lookup({}),
        pc_lookup=lookup({}),
        global_default=None,
    )
    assert isinstance(priority, ResolvedPriority)
    built = construct_workload(
        job=source, gvk=BATCH_JOB_GVK, pod_sets=batch_job_pod_sets(source), priority=priority
    ).to_wire()

    expected = golden["workload-admitted"]
    server_set = {"creationTimestamp", "generation", "resourceVersion", "uid"}
    expected_metadata = {key: value for key, value in expected["metadata"].items() if key not in server_set}
    expected_spec = dict(expected["spec"])
    assert expected_spec.pop("active") is True  # the CRD default, since we leave it unset
    assert built["apiVersion"] == expected["apiVersion"]
    assert built["kind"] == expected["kind"]
    assert built["metadata"] == expected_metadata
    assert built["spec"] == expected_spec
    assert "status" not in built


# --- construct_workload ------------------------------------------------------------------------------------


def test_metadata_and_spec_from_the_job() -> None:
    source = job(
        labels={
            "kueue.x-k8s.io/queue-name": "lq",
            "kueue.x-k8s.io/max-exec-time-seconds": "600",
            "team": "ml",
            "not-copied": "x",
        },
        annotations={
            "provreq.kueue.x-k8s.io/ValidUntilSeconds": "60",
            "kueue.x-k8s.io/admission-gated-by": "example.com/gate",
            "other": "y",
        },
    )
    before = copy.deepcopy(source)
    ref = PriorityClassRef(group="kueue.x-k8s.io", kind="WorkloadPriorityClass", name="high")
    wl = construct_workload(
        job=source,
        gvk=BATCH_JOB_GVK,
        pod_sets=pod_sets(),
        priority=ResolvedPriority(ref=ref, value=1000),
        label_keys_to_copy=["team", "missing"],
    )
    assert wl.metadata.name is not None
    assert wl.metadata.name.startswith("job-train-")
    assert wl.metadata.namespace == "ns"
    assert wl.metadata.labels == {"team": "ml", "kueue.x-k8s.io/job-uid": "u-1"}
    assert wl.metadata.annotations == {
        "provreq.kueue.x-k8s.io/ValidUntilSeconds": "60",
        "kueue.x-k8s.io/admission-gated-by": "example.com/gate",
    }
    assert wl.metadata.finalizers == ["kueue.x-k8s.io/resource-in-use"]
    assert [r.to_wire() for r in wl.metadata.owner_references or []] == [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "train",
            "uid": "u-1",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert wl.spec.queue_name == "lq"
    assert wl.spec.maximum_execution_time_seconds == 600
    assert wl.spec.priority_class_ref == ref
    assert wl.spec.priority == 1000
    assert wl.spec.active is None
    assert source == before


def test_invalid_job_uid_is_not_a_label() -> None:
    wl = construct_workload(
        job=job(uid="x" * 64), gvk=BATCH_JOB_GVK, pod_sets=pod_sets(), priority=NO_PRIORITY
    )
    assert wl.metadata.labels is None
    assert wl.metadata.owner_references is not None
    assert wl.metadata.owner_references[0].uid == "x" * 64


def test_optional_fields_are_absent_on_the_wire() -> None:
    wire = construct_workload(
        job=job(), gvk=BATCH_JOB_GVK, pod_sets=pod_sets(), priority=NO_PRIORITY
    ).to_wire()
    assert "annotations" not in wire["metadata"]
    assert set(wire["spec"]) == {"podSets", "priority"}
    assert wire["spec"]["priority"] == 0


def test_invalid_max_exec_time_label_is_left_out() -> None:
    source = job(labels={"kueue.x-k8s.io/max-exec-time-seconds": "-1"})
    wl = construct_workload(job=source, gvk=BATCH_JOB_GVK, pod_sets=pod_sets(), priority=NO_PRIORITY)
    assert wl.spec.maximum_execution_time_seconds is None


def test_admission_gated_by_and_custom_metric_annotations_follow_their_gates() -> None:
    source = job(annotations={"kueue.x-k8s.io/admission-gated-by": "example.com/g", "cost": "7"})
    off = construct_workload(
        job=source, gvk=BATCH_JOB_GVK, pod_sets=pod_sets(), priority=NO_PRIORITY, admission_gated_by=False
    )
    assert off.metadata.annotations is None
    on = construct_workload(
        job=source,
        gvk=BATCH_JOB_GVK,
        pod_sets=pod_sets(),
        priority=NO_PRIORITY,
        annotation_keys_to_copy=["cost"],
        custom_metric_labels=True,
    )
    assert on.metadata.annotations == {"kueue.x-k8s.io/admission-gated-by": "example.com/g", "cost": "7"}


def test_pod_sets_are_copied_sanitised_and_min_count_follows_partial_admission() -> None:
    source_sets = [
        PodSet(
            name="main",
            count=4,
            min_count=2,
            template={
                "spec": {
                    "containers": [
                        {"name": "c", "env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]}
                    ]
                }
            },
        )
    ]
    wl = construct_workload(job=job(), gvk=BATCH_JOB_GVK, pod_sets=source_sets, priority=NO_PRIORITY)
    assert wl.spec.pod_sets[0].template["spec"]["containers"][0]["env"] == [{"name": "A", "value": "2"}]
    assert wl.spec.pod_sets[0].min_count == 2
    assert len(source_sets[0].template["spec"]["containers"][0]["env"]) == 2
    no_partial = construct_workload(
        job=job(), gvk=BATCH_JOB_GVK, pod_sets=source_sets, priority=NO_PRIORITY, partial_admission=False
    )
    assert no_partial.spec.pod_sets[0].min_count is None
    assert source_sets[0].min_count == 2


def test_name_extra_and_short_names() -> None:
    plain = construct_workload(job=job(), gvk=BATCH_JOB_GVK, pod_sets=pod_sets(), priority=NO_PRIORITY)
    elastic = construct_workload(
        job=job(), gvk=BATCH_JOB_GVK, pod_sets=pod_sets(), priority=NO_PRIORITY, name_extra="2"
    )
    assert plain.metadata.name != elastic.metadata.name
    long_job = job()
    long_job["metadata"]["name"] = "n" * 100
    short = construct_workload(
        job=long_job, gvk=BATCH_JOB_GVK, pod_sets=pod_sets(), priority=NO_PRIORITY, max_name_length=63
    )
    assert short.metadata.name is not None
    assert len(short.metadata.name) == 63


def test_job_without_name_is_rejected_with_the_path() -> None:
    nameless = job()
    del nameless["metadata"]["name"]
    with pytest.raises(WorkloadConstructionError, match=r"^metadata\.name: "):
        construct_workload(job=nameless, gvk=BATCH_JOB_GVK, pod_sets=pod_sets(), priority=NO_PRIORITY)


# --- priority ------------------------------------------------------------------------------------------------


def test_workload_priority_class_label_wins() -> None:
    resolved = resolve_priority(
        wpc_label="high",
        pod_priority_class_name="pod-pc",
        wpc_lookup=lookup({"high": 1000}),
        pc_lookup=lookup({"pod-pc": 5}),
        global_default=("default-pc", 1),
    )
    assert resolved == ResolvedPriority(
        ref=PriorityClassRef(group="kueue.x-k8s.io", kind="WorkloadPriorityClass", name="high"), value=1000
    )


def test_missing_workload_priority_class_is_reported_with_kueue_texts() -> None:
    resolved = resolve_priority(
        wpc_label="ghost",
        pod_priority_class_name="pod-pc",
        wpc_lookup=lookup({}),
        pc_lookup=lookup({"pod-pc": 5}),
        global_default=None,
    )
    assert resolved == PriorityNotFound(kind="WorkloadPriorityClass", name="ghost")
    assert isinstance(resolved, PriorityNotFound)
    assert resolved.event_reason == "WorkloadPriorityClassNotFound"
    assert resolved.event_message == 'WorkloadPriorityClass "ghost" not found'
    assert resolved.error_message == 'workloadpriorityclasses.kueue.x-k8s.io "ghost" not found'


def test_pod_priority_class_then_missing_pod_priority_class() -> None:
    resolved = resolve_priority(
        wpc_label="",
        pod_priority_class_name="pod-pc",
        wpc_lookup=lookup({}),
        pc_lookup=lookup({"pod-pc": 5}),
        global_default=("d", 1),
    )
    assert resolved == ResolvedPriority(
        ref=PriorityClassRef(group="scheduling.k8s.io", kind="PriorityClass", name="pod-pc"), value=5
    )
    missing = resolve_priority(
        wpc_label="",
        pod_priority_class_name="gone",
        wpc_lookup=lookup({}),
        pc_lookup=lookup({}),
        global_default=("d", 1),
    )
    assert isinstance(missing, PriorityNotFound)
    assert missing.event_reason is None
    assert missing.error_message == 'priorityclasses.scheduling.k8s.io "gone" not found'


def test_global_default_then_zero() -> None:
    with_default = resolve_priority(
        wpc_label="",
        pod_priority_class_name="",
        wpc_lookup=lookup({}),
        pc_lookup=lookup({}),
        global_default=("d", 7),
    )
    assert with_default == ResolvedPriority(
        ref=PriorityClassRef(group="scheduling.k8s.io", kind="PriorityClass", name="d"), value=7
    )
    nothing = resolve_priority(
        wpc_label="",
        pod_priority_class_name="",
        wpc_lookup=lookup({}),
        pc_lookup=lookup({}),
        global_default=None,
    )
    assert nothing == ResolvedPriority(ref=None, value=0)


def test_zero_valued_class_is_found_not_missing() -> None:
    resolved = resolve_priority(
        wpc_label="zero",
        pod_priority_class_name="",
        wpc_lookup=lookup({"zero": 0}),
        pc_lookup=lookup({}),
        global_default=None,
    )
    assert isinstance(resolved, ResolvedPriority)
    assert resolved.value == 0


def test_global_default_priority_class_picks_the_lowest_default() -> None:
    classes = [
        {"metadata": {"name": "a"}, "value": 100, "globalDefault": True},
        {"metadata": {"name": "b"}, "value": 10, "globalDefault": True},
        {"metadata": {"name": "c"}, "value": 1},
        {"metadata": {"name": "d"}, "value": 1, "globalDefault": False},
        {"metadata": "broken", "value": 0, "globalDefault": True},
        {"metadata": {"name": "e"}, "value": "5", "globalDefault": True},
    ]
    assert global_default_priority_class(classes) == ("b", 10)
    assert global_default_priority_class([]) is None


def test_pod_priority_class_name_is_the_first_template_that_has_one() -> None:
    sets = [
        PodSet(name="a", template={"spec": {}}),
        PodSet(name="b", template={"spec": {"priorityClassName": "p1"}}),
        PodSet(name="c", template={"spec": {"priorityClassName": "p2"}}),
    ]
    assert pod_priority_class_name(sets) == "p1"
    assert pod_priority_class_name([PodSet(name="a", template={"spec": "bad"})]) == ""


# --- existing Workloads: priority updates and admission gates ------------------------------------------------


def existing(ref: dict[str, str] | None = None, *, priority: int = 0, reserved: bool = False) -> Workload:
    spec: dict[str, Any] = {"podSets": [], "priority": priority}
    if ref is not None:
        spec["priorityClassRef"] = ref
    status = {"conditions": [{"type": "QuotaReserved", "status": "True"}]} if reserved else {}
    return Workload.from_wire({"metadata": {"name": "wl"}, "spec": spec, "status": status})


WPC_HIGH = {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"}
POD_PC = {"group": "scheduling.k8s.io", "kind": "PriorityClass", "name": "high"}


@pytest.mark.parametrize(
    ("label", "wl", "expected"),
    [
        ("high", existing(WPC_HIGH), PriorityUpdate.SAME_CLASS),
        ("low", existing(WPC_HIGH), PriorityUpdate.NEEDS_CLASS_CHANGE),
        ("low", existing(WPC_HIGH, reserved=True), PriorityUpdate.NEEDS_CLASS_CHANGE),
        ("", existing(WPC_HIGH), PriorityUpdate.NEEDS_CLASS_CHANGE),
        ("low", existing(POD_PC), PriorityUpdate.SKIP),
        ("low", existing(None), PriorityUpdate.NEEDS_CLASS_CHANGE),
        ("", existing(None), PriorityUpdate.SAME_CLASS),
        ("low", existing(None, reserved=True), PriorityUpdate.SKIP),
    ],
)
def test_classify_priority_update(label: str, wl: Workload, expected: PriorityUpdate) -> None:
    assert classify_priority_update(wpc_label=label, workload=wl) is expected


def test_priority_state_equal_compares_ref_and_value() -> None:
    ref = PriorityClassRef.from_wire(WPC_HIGH)
    assert priority_state_equal(existing(WPC_HIGH, priority=5), ResolvedPriority(ref=ref, value=5))
    assert not priority_state_equal(existing(WPC_HIGH, priority=4), ResolvedPriority(ref=ref, value=5))
    assert not priority_state_equal(existing(POD_PC, priority=5), ResolvedPriority(ref=ref, value=5))
    assert priority_state_equal(existing(None), NO_PRIORITY)


def test_propagate_admission_gated_by_sets_changes_and_removes() -> None:
    wl = existing()
    gated = job(annotations={"kueue.x-k8s.io/admission-gated-by": "example.com/a"})
    assert propagate_admission_gated_by(gated, wl) is True
    assert wl.metadata.annotations == {"kueue.x-k8s.io/admission-gated-by": "example.com/a"}
    assert propagate_admission_gated_by(gated, wl) is False
    assert propagate_admission_gated_by(job(), wl) is True
    assert wl.metadata.annotations == {}
    assert propagate_admission_gated_by(job(), existing()) is False


class _Job:
    """A job without its own priority-class source (pod templates only)."""

    def __init__(self, obj: dict[str, Any]) -> None:
        self.obj = obj


class _JobWithPriorityClass(_Job):
    """A kind that keeps its pod PriorityClass outside the templates (``JobWithPriorityClass``)."""

    def __init__(self, obj: dict[str, Any], priority_class: str | None) -> None:
        super().__init__(obj)
        self._priority_class = priority_class

    def priority_class(self) -> str | None:
        return self._priority_class


TEMPLATED = [PodSet(name="a", template={"spec": {"priorityClassName": "from-template"}})]


def test_priority_class_names_label_first_then_the_kinds_source_then_the_templates() -> None:
    labelled = job(labels={"kueue.x-k8s.io/priority-class": "wpc"})
    assert priority_class_names(_Job(labelled), pod_sets=TEMPLATED) == ("wpc", "")  # type: ignore[arg-type]
    assert priority_class_names(_JobWithPriorityClass(labelled, "own"), pod_sets=TEMPLATED) == ("wpc", "")  # type: ignore[arg-type]
    assert priority_class_names(_JobWithPriorityClass(job(), "own"), pod_sets=TEMPLATED) == ("", "own")  # type: ignore[arg-type]
    assert priority_class_names(_Job(job()), pod_sets=TEMPLATED) == ("", "from-template")  # type: ignore[arg-type]


def test_a_kinds_empty_priority_class_source_is_not_backed_by_the_templates() -> None:
    # Kueue's customPriorityFunc is the answer when the kind has one: explain used to fall back to the
    # pod templates here, and could name a class the reconciler never reads
    for empty in ("", None):
        job_with_source = _JobWithPriorityClass(job(), empty)
        assert priority_class_names(job_with_source, pod_sets=TEMPLATED) == ("", "")  # type: ignore[arg-type]


def test_priority_value_of_a_fetched_class() -> None:
    assert priority_value(None) is None
    assert priority_value({"value": 7}) == 7
    assert priority_value({"value": True}) == 0
    assert priority_value({}) == 0
