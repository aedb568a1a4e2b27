"""PodSetInfo from admission, merge into and restore of raw pod templates (Kueue ``pkg/podset``)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from shared.constants import BATCH_JOB_MANAGED_LABELS
from shared.kueue.podset import (
    PodSetGates,
    PodSetInfo,
    PodSetInfoConflictError,
    PodSetInfoError,
    UnknownFlavorError,
    bad_pod_sets_info_len_error,
    merge_into_template,
    merge_pod_set_info,
    pod_set_info_from_pod_set,
    pod_set_infos_from_admission,
    pod_set_infos_from_workload_spec,
    restore_template,
    tolerations_equal,
)
from shared.models.workload import PodSet, Workload
from tests.unit.kueue.helpers import SPOT_FLAVOR

SPOT_TOLERATION = {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}
GPU_FLAVOR = (
    {"accelerator": "a100"},
    [{"key": "gpu", "operator": "Equal", "value": "yes", "effect": "NoSchedule"}],
)


def workload(
    *,
    pod_sets: list[dict[str, Any]] | None = None,
    assignments: list[dict[str, Any]] | None = None,
    cluster_queue: str = "cq",
    checks: list[dict[str, Any]] | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> Workload:
    status: dict[str, Any] = {}
    if assignments is not None:
        status["admission"] = {"clusterQueue": cluster_queue, "podSetAssignments": assignments}
    if checks is not None:
        status["admissionChecks"] = checks
    return Workload.from_wire(
        {
            "metadata": {
                "name": "wl",
                "namespace": "ns",
                "labels": labels or {},
                "annotations": annotations or {},
            },
            "spec": {
                "queueName": "lq",
                "podSets": pod_sets or [{"name": "main", "count": 3, "template": {}}],
            },
            "status": status,
        }
    )


def single_assignment(**extra: Any) -> list[dict[str, Any]]:
    return [{"name": "main", "flavors": {"cpu": "spot", "memory": "spot"}, **extra}]


FLAVORS = {"spot": SPOT_FLAVOR["golden-spot"], "gpu": GPU_FLAVOR}


# --- golden fixture ------------------------------------------------------------------------------------


@pytest.mark.needs_shared
def test_golden_admission_info(golden: dict, golden_flavors: dict) -> None:
    infos = pod_set_infos_from_admission(
        workload=Workload.from_wire(golden["workload-admitted"]), flavors=golden_flavors
    )
    assert infos == [
        PodSetInfo(
            name="main",
            count=2,
            annotations={"kueue.x-k8s.io/workload": "job-sample-43252"},
            labels={
                "kueue.x-k8s.io/podset": "main",
                "kueue.x-k8s.io/local-queue-name": "golden-q",
                "kueue.x-k8s.io/cluster-queue-name": "golden-cq",
            },
            node_selector={"instance-type": "spot"},
            tolerations=[SPOT_TOLERATION],
        )
    ]


@pytest.mark.needs_shared
def test_golden_merge_then_restore_round_trip(golden: dict, golden_flavors: dict) -> None:
    original = golden["job-create-response"]["spec"]["template"]
    template = copy.deepcopy(original)
    admitted = Workload.from_wire(golden["workload-admitted"])
    [info] = pod_set_infos_from_admission(workload=admitted, flavors=golden_flavors)

    merge_into_template(template, info)
    assert template == golden["job-admitted"]["spec"]["template"]

    [restore] = pod_set_infos_from_workload_spec(Workload.from_wire(golden["workload-after-deactivation"]))
    assert restore_template(template, restore, keep_labels=BATCH_JOB_MANAGED_LABELS) is True
    assert template == golden["job-after-deactivation"]["spec"]["template"]
    assert template == original
    assert restore_template(template, restore, keep_labels=BATCH_JOB_MANAGED_LABELS) is False


@pytest.mark.needs_shared
def test_golden_user_template_merge_then_restore_is_identity(golden: dict, golden_flavors: dict) -> None:
    original = golden["job"]["spec"]["template"]
    template = copy.deepcopy(original)
    [info] = pod_set_infos_from_admission(
        workload=Workload.from_wire(golden["workload-admitted"]), flavors=golden_flavors
    )
    stored = pod_set_info_from_pod_set(PodSet(name="main", count=2, template=copy.deepcopy(original)))
    merge_into_template(template, info)
    assert template != original
    assert restore_template(template, stored) is True
    assert template == original


# --- pod_set_infos_from_admission ------------------------------------------------------------------


def test_no_admission_gives_no_infos() -> None:
    assert pod_set_infos_from_admission(workload=workload(), flavors=FLAVORS) == []
    assert pod_set_infos_from_admission(workload=workload(assignments=[]), flavors=FLAVORS) == []


def test_count_falls_back_to_the_spec_count() -> None:
    [info] = pod_set_infos_from_admission(workload=workload(assignments=single_assignment()), flavors=FLAVORS)
    assert info.count == 3
    [info] = pod_set_infos_from_admission(
        workload=workload(assignments=single_assignment(count=2)), flavors=FLAVORS
    )
    assert info.count == 2


def test_each_distinct_flavor_contributes_once() -> None:
    assignment = [{"name": "main", "flavors": {"cpu": "spot", "memory": "spot", "nvidia.com/gpu": "gpu"}}]
    [info] = pod_set_infos_from_admission(workload=workload(assignments=assignment), flavors=FLAVORS)
    assert info.node_selector == {"instance-type": "spot", "accelerator": "a100"}
    assert info.tolerations == [SPOT_TOLERATION, GPU_FLAVOR[1][0]]


def test_unknown_flavor_is_a_retryable_lookup_error() -> None:
    with pytest.raises(UnknownFlavorError, match='resourceflavor "spot" not found') as caught:
        pod_set_infos_from_admission(workload=workload(assignments=single_assignment()), flavors={})
    assert not isinstance(caught.value, PodSetInfoError)


def test_pairing_is_by_index_with_the_spec() -> None:
    pod_sets = [
        {"name": "driver", "count": 1, "template": {}},
        {"name": "workers", "count": 4, "template": {}},
    ]
    assignments = [
        {"name": "driver", "flavors": {"cpu": "spot"}},
        {"name": "workers", "flavors": {"cpu": "gpu"}},
    ]
    infos = pod_set_infos_from_admission(
        workload=workload(pod_sets=pod_sets, assignments=assignments), flavors=FLAVORS
    )
    assert [(info.name, info.count, info.labels["kueue.x-k8s.io/podset"]) for info in infos] == [
        ("driver", 1, "driver"),
        ("workers", 4, "workers"),
    ]


def test_more_assignments_than_pod_sets_is_a_permanent_error_naming_the_path() -> None:
    assignments = [*single_assignment(), {"name": "extra", "flavors": {}}]
    with pytest.raises(PodSetInfoError, match=r"status\.admission\.podSetAssignments\[1\]"):
        pod_set_infos_from_admission(workload=workload(assignments=assignments), flavors=FLAVORS)


def test_topology_assignment_adds_gate_and_unconstrained_annotation() -> None:
    assignment = single_assignment(topologyAssignment={"levels": ["rack"], "slices": []})
    [info] = pod_set_infos_from_admission(workload=workload(assignments=assignment), flavors=FLAVORS)
    assert info.scheduling_gates == [{"name": "kueue.x-k8s.io/topology"}]
    assert info.annotations == {
        "kueue.x-k8s.io/podset-unconstrained-topology": "true",
        "kueue.x-k8s.io/workload": "wl",
    }


def test_explicit_topology_request_is_not_unconstrained() -> None:
    pod_sets = [{"name": "main", "count": 1, "template": {}, "topologyRequest": {"required": "rack"}}]
    assignment = single_assignment(topologyAssignment={"levels": ["rack"]})
    [info] = pod_set_infos_from_admission(
        workload=workload(pod_sets=pod_sets, assignments=assignment), flavors=FLAVORS
    )
    assert "kueue.x-k8s.io/podset-unconstrained-topology" not in info.annotations
    assert info.scheduling_gates == [{"name": "kueue.x-k8s.io/topology"}]


def test_topology_aware_scheduling_off_adds_nothing_topological() -> None:
    assignment = single_assignment(topologyAssignment={"levels": ["rack"]})
    [info] = pod_set_infos_from_admission(
        workload=workload(assignments=assignment),
        flavors=FLAVORS,
        gates=PodSetGates(topology_aware_scheduling=False),
    )
    assert info.annotations == {}
    assert info.scheduling_gates == []


def test_cluster_queue_label_only_for_a_valid_dns1123_label() -> None:
    [info] = pod_set_infos_from_admission(
        workload=workload(assignments=single_assignment(), cluster_queue="team.a"), flavors=FLAVORS
    )
    assert info.labels == {"kueue.x-k8s.io/podset": "main", "kueue.x-k8s.io/local-queue-name": "lq"}


def test_queue_labels_off() -> None:
    [info] = pod_set_infos_from_admission(
        workload=workload(assignments=single_assignment()),
        flavors=FLAVORS,
        gates=PodSetGates(assign_queue_labels_for_pods=False),
    )
    assert info.labels == {"kueue.x-k8s.io/podset": "main"}


def test_multikueue_origin_marks_worker_pods() -> None:
    [info] = pod_set_infos_from_admission(
        workload=workload(
            assignments=single_assignment(), labels={"kueue.x-k8s.io/multikueue-origin": "mgr"}
        ),
        flavors=FLAVORS,
    )
    assert info.labels["kueue.x-k8s.io/multikueue-worker-workload-pod"] == "true"


def test_elastic_workload_gets_the_slice_name_annotation() -> None:
    elastic = {"kueue.x-k8s.io/elastic-job": "true"}
    [info] = pod_set_infos_from_admission(
        workload=workload(assignments=single_assignment(), annotations=elastic), flavors=FLAVORS
    )
    assert info.annotations["kueue.x-k8s.io/workload-slice-name"] == "wl"
    named = {**elastic, "kueue.x-k8s.io/workload-slice-name": "origin"}
    [info] = pod_set_infos_from_admission(
        workload=workload(assignments=single_assignment(), annotations=named), flavors=FLAVORS
    )
    assert info.annotations["kueue.x-k8s.io/workload-slice-name"] == "origin"
    [info] = pod_set_infos_from_admission(
        workload=workload(assignments=single_assignment(), annotations=elastic),
        flavors=FLAVORS,
        gates=PodSetGates(elastic_workload_slices=False),
    )
    assert "kueue.x-k8s.io/workload-slice-name" not in info.annotations


def test_admission_check_pod_set_updates_are_merged_for_the_matching_pod_set() -> None:
    checks: list[dict[str, Any]] = [
        {
            "name": "prov",
            "state": "Ready",
            "podSetUpdates": [
                {"name": "other", "labels": {"ignored": "x"}},
                {
                    "name": "main",
                    "labels": {"prov": "1"},
                    "annotations": {"a": "b"},
                    "nodeSelector": {"pool": "p1"},
                    "tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
                },
            ],
        },
        {
            "name": "second",
            "state": "Ready",
            "podSetUpdates": [{"name": "main", "nodeSelector": {"zone": "z"}}],
        },
    ]
    [info] = pod_set_infos_from_admission(
        workload=workload(assignments=single_assignment(), checks=checks), flavors=FLAVORS
    )
    assert info.labels["prov"] == "1"
    assert "ignored" not in info.labels
    assert info.annotations["a"] == "b"
    assert info.node_selector == {"instance-type": "spot", "pool": "p1", "zone": "z"}
    assert info.tolerations == [SPOT_TOLERATION]


def test_conflicting_pod_set_update_names_the_admission_check() -> None:
    checks = [
        {
            "name": "prov",
            "state": "Ready",
            "podSetUpdates": [{"name": "main", "nodeSelector": {"instance-type": "od"}}],
        }
    ]
    with pytest.raises(PodSetInfoConflictError) as caught:
        pod_set_infos_from_admission(
            workload=workload(assignments=single_assignment(), checks=checks), flavors=FLAVORS
        )
    assert str(caught.value) == (
        'in admission check "prov": invalid admission check PodSetUpdate: conflict for nodeSelector: '
        "conflict for key=instance-type, value1=spot, value2=od"
    )


# --- merge -------------------------------------------------------------------------------------------


def test_merge_conflict_with_the_template_leaves_it_unchanged() -> None:
    template = {"metadata": {"labels": {"app": "x"}}, "spec": {"nodeSelector": {"zone": "a"}}}
    before = copy.deepcopy(template)
    info = PodSetInfo(name="main", count=1, labels={"new": "1"}, node_selector={"zone": "b"})
    with pytest.raises(PodSetInfoConflictError) as caught:
        merge_into_template(template, info)
    assert str(caught.value) == (
        "invalid admission check PodSetUpdate: conflict for nodeSelector: conflict for key=zone, value1=a, value2=b"
    )
    assert template == before


@pytest.mark.parametrize(
    ("section", "template", "info"),
    [
        ("labels", {"metadata": {"labels": {"k": "1"}}}, PodSetInfo(name="m", count=1, labels={"k": "2"})),
        (
            "annotations",
            {"metadata": {"annotations": {"k": "1"}}},
            PodSetInfo(name="m", count=1, annotations={"k": "2"}),
        ),
    ],
)
def test_merge_conflict_sections(section: str, template: dict, info: PodSetInfo) -> None:
    with pytest.raises(
        PodSetInfoConflictError, match=f"conflict for {section}: conflict for key=k, value1=1, value2=2"
    ):
        merge_into_template(template, info)


def test_merge_same_value_is_not_a_conflict_and_appends_without_duplicates() -> None:
    template: dict[str, Any] = {
        "metadata": {"labels": {"zone": "a"}},
        "spec": {
            "nodeSelector": {"zone": "a"},
            "tolerations": [
                {"key": "spot", "effect": "NoSchedule", "operator": "Exists", "tolerationSeconds": 5}
            ],
            "schedulingGates": [{"name": "g1"}],
        },
    }
    info = PodSetInfo(
        name="main",
        count=1,
        labels={"zone": "a", "new": "x"},
        node_selector={"zone": "a"},
        tolerations=[SPOT_TOLERATION, {"key": "k", "value": "v", "effect": "NoExecute"}],
        scheduling_gates=[{"name": "g1"}, {"name": "g2"}],
    )
    merge_into_template(template, info)
    assert template["metadata"]["labels"] == {"zone": "a", "new": "x"}
    assert template["spec"]["tolerations"] == [
        {"key": "spot", "effect": "NoSchedule", "operator": "Exists", "tolerationSeconds": 5},
        {"key": "k", "value": "v", "effect": "NoExecute"},
    ]
    assert template["spec"]["schedulingGates"] == [{"name": "g1"}, {"name": "g2"}]


def test_merge_into_an_empty_template_creates_only_what_it_needs() -> None:
    template: dict[str, Any] = {}
    merge_into_template(template, PodSetInfo(name="main", count=1, labels={"a": "b"}))
    assert template == {"metadata": {"labels": {"a": "b"}}}
    untouched: dict[str, Any] = {"spec": {"containers": []}}
    merge_into_template(untouched, PodSetInfo(name="main", count=1))
    assert untouched == {"spec": {"containers": []}}


def test_merge_does_not_share_structures_with_the_info() -> None:
    info = PodSetInfo(name="main", count=1, tolerations=[{"key": "a", "operator": "Exists"}])
    template: dict[str, Any] = {}
    merge_into_template(template, info)
    template["spec"]["tolerations"][0]["key"] = "changed"
    assert info.tolerations == [{"key": "a", "operator": "Exists"}]


def test_elastic_stale_slice_annotation_is_overwritten_only_with_the_gate() -> None:
    template = {
        "metadata": {
            "annotations": {"kueue.x-k8s.io/workload-slice-name": "old", "kueue.x-k8s.io/workload": "wl-old"}
        }
    }
    info = PodSetInfo(
        name="main",
        count=1,
        annotations={"kueue.x-k8s.io/workload-slice-name": "new", "kueue.x-k8s.io/workload": "wl-new"},
    )
    merge_into_template(template, info)
    assert template["metadata"]["annotations"] == info.annotations
    stale = {"metadata": {"annotations": {"kueue.x-k8s.io/workload-slice-name": "old"}}}
    with pytest.raises(PodSetInfoConflictError):
        merge_into_template(stale, info, elastic_workload_slices=False)


def test_non_elastic_workload_annotation_still_conflicts() -> None:
    template = {"metadata": {"annotations": {"kueue.x-k8s.io/workload": "wl-old"}}}
    with pytest.raises(PodSetInfoConflictError):
        merge_into_template(
            template, PodSetInfo(name="main", count=1, annotations={"kueue.x-k8s.io/workload": "x"})
        )


def test_malformed_template_is_a_permanent_error_naming_the_path() -> None:
    with pytest.raises(PodSetInfoError, match=r"template\.spec\.tolerations"):
        merge_into_template({"spec": {"tolerations": "oops"}}, PodSetInfo(name="m", count=1))
    with pytest.raises(PodSetInfoError, match=r"template\.metadata"):
        merge_into_template({"metadata": ["x"]}, PodSetInfo(name="m", count=1))


def test_merge_pod_set_info_conflict_keeps_the_target() -> None:
    target = PodSetInfo(name="m", count=1, labels={"a": "1"}, annotations={"x": "y"})
    with pytest.raises(PodSetInfoConflictError, match="conflict for labels"):
        merge_pod_set_info(target, PodSetInfo(name="m", count=0, labels={"a": "2"}, annotations={"n": "v"}))
    assert target == PodSetInfo(name="m", count=1, labels={"a": "1"}, annotations={"x": "y"})


def test_tolerations_equal_treats_empty_operator_as_equal_and_ignores_seconds() -> None:
    assert tolerations_equal({"key": "a", "value": "1"}, {"key": "a", "value": "1", "operator": "Equal"})
    assert tolerations_equal({"key": "a", "tolerationSeconds": 1}, {"key": "a", "tolerationSeconds": 2})
    assert not tolerations_equal({"key": "a", "operator": "Exists"}, {"key": "a"})
    assert not tolerations_equal({"key": "a", "effect": "NoSchedule"}, {"key": "a", "effect": "NoExecute"})


# --- restore -----------------------------------------------------------------------------------------


def test_restore_removes_injected_fields_and_keeps_the_rest() -> None:
    template = {
        "metadata": {"labels": {"app": "x", "kueue.x-k8s.io/podset": "main"}, "annotations": {"w": "1"}},
        "spec": {
            "nodeSelector": {"zone": "a"},
            "tolerations": [SPOT_TOLERATION],
            "schedulingGates": [{"name": "kueue.x-k8s.io/topology"}],
            "affinity": {"nodeAffinity": {}},
            "containers": [{"name": "c"}],
        },
    }
    info = PodSetInfo(name="main", count=1, labels={"app": "x"})
    assert restore_template(template, info) is True
    assert template == {
        "metadata": {"labels": {"app": "x"}},
        "spec": {"affinity": {"nodeAffinity": {}}, "containers": [{"name": "c"}]},
    }
    assert restore_template(template, info) is False


def test_restore_keep_labels_only_keeps_labels_present_on_the_template() -> None:
    template = {"metadata": {"labels": {"job-name": "j", "kueue.x-k8s.io/podset": "main"}}}
    assert restore_template(
        template,
        PodSetInfo(name="m", count=1, labels={"app": "a"}),
        keep_labels=["job-name", "controller-uid"],
    )
    assert template["metadata"]["labels"] == {"app": "a", "job-name": "j"}


def test_restore_into_template_without_sections() -> None:
    template: dict[str, Any] = {}
    info = PodSetInfo(name="m", count=1, node_selector={"zone": "a"}, tolerations=[SPOT_TOLERATION])
    assert restore_template(template, info) is True
    assert template == {"spec": {"nodeSelector": {"zone": "a"}, "tolerations": [SPOT_TOLERATION]}}
    template["spec"]["tolerations"][0]["key"] = "mutated"
    assert info.tolerations == [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}]


def test_pod_set_info_from_pod_set_copies_the_template_data() -> None:
    pod_set = PodSet(
        name="workers",
        count=5,
        template={
            "metadata": {"labels": {"a": "b"}, "annotations": {"c": "d"}},
            "spec": {
                "nodeSelector": {"zone": "a"},
                "tolerations": [SPOT_TOLERATION],
                "schedulingGates": [{"name": "g"}],
            },
        },
    )
    info = pod_set_info_from_pod_set(pod_set)
    assert info == PodSetInfo(
        name="workers",
        count=5,
        labels={"a": "b"},
        annotations={"c": "d"},
        node_selector={"zone": "a"},
        tolerations=[SPOT_TOLERATION],
        scheduling_gates=[{"name": "g"}],
    )
    info.labels["x"] = "y"
    info.tolerations[0]["key"] = "changed"
    assert pod_set.template["metadata"]["labels"] == {"a": "b"}
    assert pod_set.template["spec"]["tolerations"] == [
        {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}
    ]


def test_bad_pod_sets_info_len_error_text() -> None:
    error = bad_pod_sets_info_len_error(want=1, got=2)
    assert isinstance(error, PodSetInfoError)
    assert str(error) == "invalid podset infos: expecting 1 podset, got 2"


def test_merge_into_template_never_aliases_the_info_or_keeps_its_own_state() -> None:
    info = PodSetInfo(
        name="main",
        count=1,
        labels={"kueue.x-k8s.io/podset": "main"},
        tolerations=[{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
        scheduling_gates=[{"name": "gate"}],
    )
    info_before = copy.deepcopy(info)
    template: dict[str, Any] = {
        "metadata": {"labels": {"app": "x"}},
        "spec": {"tolerations": [{"key": "own", "operator": "Exists"}]},
    }
    merge_into_template(template, info)
    assert info == info_before
    template["spec"]["tolerations"][1]["key"] = "changed"
    template["spec"]["schedulingGates"][0]["name"] = "changed"
    template["metadata"]["labels"]["extra"] = "y"
    assert info == info_before
    second: dict[str, Any] = {"metadata": {"labels": {"app": "x"}}}
    merge_into_template(second, info)  # the first call's working state does not leak into the next
    assert second == {
        "metadata": {"labels": {"app": "x", "kueue.x-k8s.io/podset": "main"}},
        "spec": {
            "tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
            "schedulingGates": [{"name": "gate"}],
        },
    }


def test_conflicting_merge_leaves_the_template_unchanged() -> None:
    template: dict[str, Any] = {"metadata": {"labels": {"kueue.x-k8s.io/podset": "other"}}}
    before = copy.deepcopy(template)
    with pytest.raises(PodSetInfoConflictError):
        merge_into_template(
            template, PodSetInfo(name="main", count=1, labels={"kueue.x-k8s.io/podset": "main"})
        )
    assert template == before
