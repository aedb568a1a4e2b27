"""Kueue v1beta1 <-> v1beta2 conversion on wire dicts (``shared.models.conversion``)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from shared.models import (
    ConversionError,
    Workload,
    cluster_queue_from_v1beta1,
    cluster_queue_to_v1beta1,
    convert_from_v1beta1,
    convert_to_v1beta1,
    local_queue_from_v1beta1,
    local_queue_to_v1beta1,
    multikueue_cluster_from_v1beta1,
    multikueue_cluster_to_v1beta1,
    parse_admission_check,
    parse_cluster_queue,
    parse_local_queue,
    parse_multikueue_cluster,
    parse_multikueue_config,
    parse_resource_flavor,
    parse_workload,
    parse_workload_priority_class,
    workload_from_v1beta1,
    workload_to_v1beta1,
)
from tests.unit.models.crd_json_schema import crd_file_for, load_crd_json_schema, schema_errors
from tests.unit.models.examples import full_examples
from tests.unit.models.test_workload_round_trip import GOLDEN_WORKLOADS, _items

V1 = "kueue.x-k8s.io/v1beta1"
V2 = "kueue.x-k8s.io/v1beta2"


def _v1beta1_workload() -> dict[str, Any]:
    return {
        "apiVersion": V1,
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "ns"},
        "futureTopLevel": 1,
        "spec": {
            "queueName": "q",
            "priorityClassName": "high",
            "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass",
            "priority": 100,
            "podSets": [
                {"name": "main", "count": 2, "template": {"spec": {"containers": []}}, "futurePodSet": 2}
            ],
        },
        "status": {
            "accumulatedPastExexcutionTimeSeconds": 42,
            "futureStatus": "s",
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [
                    {
                        "name": "main",
                        "count": 2,
                        "topologyAssignment": {
                            "levels": ["kubernetes.io/hostname"],
                            "domains": [
                                {"values": ["node-1"], "count": 1},
                                {"values": ["node-2"], "count": 1},
                            ],
                        },
                    }
                ],
            },
        },
    }


def _v1beta2_workload() -> dict[str, Any]:
    return {
        "apiVersion": V2,
        "kind": "Workload",
        "metadata": {"name": "w", "namespace": "ns"},
        "futureTopLevel": 1,
        "spec": {
            "queueName": "q",
            "priorityClassRef": {"group": "kueue.x-k8s.io", "kind": "WorkloadPriorityClass", "name": "high"},
            "priority": 100,
            "podSets": [
                {"name": "main", "count": 2, "template": {"spec": {"containers": []}}, "futurePodSet": 2}
            ],
        },
        "status": {
            "accumulatedPastExecutionTimeSeconds": 42,
            "futureStatus": "s",
            "admission": {
                "clusterQueue": "cq",
                "podSetAssignments": [
                    {
                        "name": "main",
                        "count": 2,
                        "topologyAssignment": {
                            "levels": ["kubernetes.io/hostname"],
                            "slices": [
                                {
                                    "domainCount": 2,
                                    "podCounts": {"universal": 1},
                                    "valuesPerLevel": [
                                        {"individual": {"prefix": "node-", "roots": ["1", "2"]}}
                                    ],
                                }
                            ],
                        },
                    }
                ],
            },
        },
    }


# --- Workload ------------------------------------------------------------------------------------


def test_workload_v1beta1_to_v1beta2_translates_every_difference_and_keeps_unknown_fields() -> None:
    assert workload_from_v1beta1(_v1beta1_workload()) == _v1beta2_workload()


def test_workload_v1beta2_to_v1beta1_translates_every_difference_and_keeps_unknown_fields() -> None:
    assert workload_to_v1beta1(_v1beta2_workload()) == _v1beta1_workload()


@pytest.mark.parametrize(
    ("source", "group", "kind"),
    [
        ("kueue.x-k8s.io/workloadpriorityclass", "kueue.x-k8s.io", "WorkloadPriorityClass"),
        ("scheduling.k8s.io/priorityclass", "scheduling.k8s.io", "PriorityClass"),
    ],
)
def test_each_priority_class_source_maps_to_its_ref_and_back(source: str, group: str, kind: str) -> None:
    v1beta1 = {
        "apiVersion": V1,
        "kind": "Workload",
        "spec": {"priorityClassName": "p", "priorityClassSource": source},
    }
    v1beta2 = {
        "apiVersion": V2,
        "kind": "Workload",
        "spec": {"priorityClassRef": {"group": group, "kind": kind, "name": "p"}},
    }
    assert workload_from_v1beta1(v1beta1) == v1beta2
    assert workload_to_v1beta1(v1beta2) == v1beta1


def test_empty_priority_class_source_means_no_priority_class() -> None:
    v1beta1 = {
        "apiVersion": V1,
        "kind": "Workload",
        "spec": {"priorityClassName": "p", "priorityClassSource": ""},
    }
    assert workload_from_v1beta1(v1beta1) == {"apiVersion": V2, "kind": "Workload", "spec": {}}


def test_a_ref_with_an_unknown_group_kind_pair_gives_no_v1beta1_priority_fields() -> None:
    ref = {"group": "kueue.x-k8s.io", "kind": "PriorityClass", "name": "p"}
    v1beta2 = {"apiVersion": V2, "kind": "Workload", "spec": {"priorityClassRef": ref}}
    assert workload_to_v1beta1(v1beta2) == {"apiVersion": V1, "kind": "Workload", "spec": {}}


def test_the_misspelt_execution_time_field_is_renamed_both_ways() -> None:
    v1beta1 = {"apiVersion": V1, "kind": "Workload", "status": {"accumulatedPastExexcutionTimeSeconds": 7}}
    v1beta2 = {"apiVersion": V2, "kind": "Workload", "status": {"accumulatedPastExecutionTimeSeconds": 7}}
    assert workload_from_v1beta1(v1beta1) == v1beta2
    assert workload_to_v1beta1(v1beta2) == v1beta1
    status = parse_workload(v1beta1).status
    assert status is not None
    assert status.accumulated_past_execution_time_seconds == 7


def test_v1beta2_only_fields_are_dropped_and_v1beta1_required_fields_filled() -> None:
    v1beta2 = {
        "apiVersion": V2,
        "kind": "Workload",
        "spec": {
            "preemptionGates": [{"name": "g"}],
            "podSets": [
                {
                    "template": {},
                    "topologyRequest": {
                        "required": "rack",
                        "podsetSliceRequiredTopologyConstraints": [{"topology": "rack", "size": 2}],
                    },
                }
            ],
        },
        "status": {
            "preemptionGates": [
                {"name": "g", "position": "Open", "lastTransitionTime": "2026-11-22T02:34:03Z"}
            ],
            "admission": {"clusterQueue": "cq", "podSetAssignments": [{"count": 1}]},
        },
    }
    assert workload_to_v1beta1(v1beta2) == {
        "apiVersion": V1,
        "kind": "Workload",
        "spec": {"podSets": [{"template": {}, "count": 1, "topologyRequest": {"required": "rack"}}]},
        "status": {"admission": {"clusterQueue": "cq", "podSetAssignments": [{"count": 1, "name": "main"}]}},
    }


def test_conditions_are_copied_verbatim() -> None:
    conditions = [
        {"type": "WaitingForReplacementPods", "status": "True", "reason": "NodeFailures", "message": "m"}
    ]
    v1beta2 = {"apiVersion": V2, "kind": "Workload", "status": {"conditions": conditions}}
    assert workload_to_v1beta1(v1beta2)["status"]["conditions"] == conditions
    assert workload_from_v1beta1(workload_to_v1beta1(v1beta2)) == v1beta2


def test_input_is_not_mutated_and_output_shares_nothing_with_it() -> None:
    source = _v1beta1_workload()
    converted = workload_from_v1beta1(source)
    assert source == _v1beta1_workload()
    converted["spec"]["podSets"][0]["template"]["spec"]["containers"].append({"name": "x"})
    assert source == _v1beta1_workload()


def test_an_object_already_in_the_target_version_is_returned_unchanged() -> None:
    assert workload_from_v1beta1(_v1beta2_workload()) == _v1beta2_workload()
    assert workload_to_v1beta1(_v1beta1_workload()) == _v1beta1_workload()
    assert parse_workload(_v1beta2_workload()) == parse_workload(_v1beta1_workload())


def test_wrong_api_version_or_kind_raises_naming_the_field() -> None:
    with pytest.raises(ConversionError) as wrong_version:
        workload_from_v1beta1({"apiVersion": "kueue.x-k8s.io/v1alpha1", "kind": "Workload"})
    assert wrong_version.value.path == "apiVersion"
    with pytest.raises(ConversionError) as wrong_kind:
        workload_to_v1beta1({"apiVersion": V2, "kind": "LocalQueue"})
    assert wrong_kind.value.path == "kind"
    with pytest.raises(ConversionError) as unknown_kind:
        convert_to_v1beta1({"apiVersion": V2, "kind": "Job"})
    assert unknown_kind.value.path == "kind"


def test_a_malformed_topology_assignment_raises_naming_its_path() -> None:
    wire = _v1beta2_workload()
    wire["status"]["admission"]["podSetAssignments"][0]["topologyAssignment"]["slices"][0]["domainCount"] = 3
    with pytest.raises(ConversionError) as error:
        workload_to_v1beta1(wire)
    assert error.value.path == (
        "status.admission.podSetAssignments[0].topologyAssignment.slices[0].valuesPerLevel[0].individual.roots"
    )


def test_odd_shapes_are_left_for_the_model_to_reject() -> None:
    odd = {"apiVersion": V1, "kind": "Workload", "spec": "not an object", "status": {"admission": []}}
    converted = workload_from_v1beta1(odd)
    assert converted == {**odd, "apiVersion": V2}


@pytest.mark.needs_shared
@pytest.mark.parametrize("file_name", GOLDEN_WORKLOADS)
def test_golden_workloads_survive_a_trip_through_v1beta1(golden_dir: Path, file_name: str) -> None:
    for item in _items(golden_dir / file_name):
        v1beta1 = workload_to_v1beta1(item)
        assert v1beta1["apiVersion"] == V1
        assert workload_from_v1beta1(v1beta1) == item
        assert parse_workload(v1beta1) == Workload.from_wire(item)


def _without_unknown_fields(wire: dict[str, Any]) -> dict[str, Any]:
    del wire["futureTopLevel"]
    del wire["spec"]["podSets"][0]["futurePodSet"]
    del wire["status"]["futureStatus"]
    return wire


@pytest.mark.needs_shared
def test_converted_workloads_match_each_crd_version(kueue_crd_dir: Path) -> None:
    crd = crd_file_for(kueue_crd_dir, plural="workloads")
    v1beta1_schema = load_crd_json_schema(crd, version="v1beta1")
    v1beta2_schema = load_crd_json_schema(crd, version="v1beta2")
    v1beta1 = _without_unknown_fields(_v1beta1_workload())
    v1beta2 = _without_unknown_fields(_v1beta2_workload())
    assert schema_errors(v1beta1_schema, v1beta1) == []
    assert schema_errors(v1beta2_schema, workload_from_v1beta1(v1beta1)) == []
    assert (
        schema_errors(v1beta2_schema, as_v1beta1 := workload_to_v1beta1(v1beta2)) != []
    )  # versions differ ...
    assert schema_errors(v1beta1_schema, as_v1beta1) == []  # ... and the converted object fits its own


# --- ClusterQueue, Cohort, LocalQueue ----------------------------------------------------------------


def test_cluster_queue_v1beta1_to_v1beta2() -> None:
    v1beta1 = {
        "apiVersion": V1,
        "kind": "ClusterQueue",
        "spec": {
            "cohort": "all",
            "admissionChecks": ["a", "b"],
            "flavorFungibility": {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"},
            "futureSpec": 1,
        },
        "status": {
            "pendingWorkloadsStatus": {"lastChangeTime": "2026-11-22T02:34:03Z"},
            "fairSharing": {"weightedShare": 1, "admissionFairSharingStatus": {"consumedResources": {}}},
            "pendingWorkloads": 3,
        },
    }
    assert cluster_queue_from_v1beta1(v1beta1) == {
        "apiVersion": V2,
        "kind": "ClusterQueue",
        "spec": {
            "cohortName": "all",
            "admissionChecksStrategy": {"admissionChecks": [{"name": "a"}, {"name": "b"}]},
            "flavorFungibility": {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "MayStopSearch"},
            "futureSpec": 1,
        },
        "status": {"fairSharing": {"weightedShare": 1}, "pendingWorkloads": 3},
    }
    assert parse_cluster_queue(v1beta1).spec.admission_check_names() == ["a", "b"]


def test_cluster_queue_v1beta2_to_v1beta1() -> None:
    strategy = {"admissionChecks": [{"name": "a", "onFlavors": ["f"]}]}
    v1beta2 = {
        "apiVersion": V2,
        "kind": "ClusterQueue",
        "spec": {
            "cohortName": "all",
            "admissionChecksStrategy": strategy,
            "concurrentAdmissionPolicy": {"migration": {"mode": "TryPreferredFlavors"}},
        },
    }
    assert cluster_queue_to_v1beta1(v1beta2) == {
        "apiVersion": V1,
        "kind": "ClusterQueue",
        "spec": {"cohort": "all", "admissionChecksStrategy": strategy},
    }


def test_cohort_drops_the_v1beta1_admission_fair_sharing_status() -> None:
    v1beta1 = {
        "apiVersion": V1,
        "kind": "Cohort",
        "status": {"fairSharing": {"admissionFairSharingStatus": {}}},
    }
    assert convert_from_v1beta1(v1beta1) == {
        "apiVersion": V2,
        "kind": "Cohort",
        "status": {"fairSharing": {}},
    }


def test_local_queue_flavor_usage_is_renamed_and_flavors_dropped() -> None:
    usage = [{"name": "f", "resources": [{"name": "cpu", "total": "1"}]}]
    v1beta1 = {
        "apiVersion": V1,
        "kind": "LocalQueue",
        "status": {"flavorUsage": usage, "flavors": [{"name": "f"}]},
    }
    v1beta2 = {"apiVersion": V2, "kind": "LocalQueue", "status": {"flavorsUsage": usage}}
    assert local_queue_from_v1beta1(v1beta1) == v1beta2
    assert local_queue_to_v1beta1(v1beta2) == {
        "apiVersion": V1,
        "kind": "LocalQueue",
        "status": {"flavorUsage": usage},
    }
    status = parse_local_queue(v1beta1).status
    assert status is not None
    assert status.flavors_usage is not None
    assert status.flavors_usage[0].resources[0].total == "1"


# --- MultiKueue, AdmissionCheck, unchanged kinds ----------------------------------------------------


def test_multikueue_cluster_kubeconfig_moves_under_cluster_source() -> None:
    kube_config = {"location": "worker-1", "locationType": "Secret"}
    v1beta1 = {"apiVersion": V1, "kind": "MultiKueueCluster", "spec": {"kubeConfig": kube_config}}
    v1beta2 = {
        "apiVersion": V2,
        "kind": "MultiKueueCluster",
        "spec": {"clusterSource": {"kubeConfig": kube_config}},
    }
    assert multikueue_cluster_from_v1beta1(v1beta1) == v1beta2
    assert multikueue_cluster_to_v1beta1(v1beta2) == v1beta1
    parsed = parse_multikueue_cluster(v1beta1).spec.cluster_source.kube_config
    assert parsed is not None
    assert parsed.location == "worker-1"


def test_multikueue_cluster_profile_ref_and_empty_kubeconfig() -> None:
    v1beta1 = {
        "apiVersion": V1,
        "kind": "MultiKueueCluster",
        "spec": {
            "kubeConfig": {"location": "", "locationType": "Secret"},
            "clusterProfileRef": {"name": "p"},
        },
    }
    v1beta2 = {
        "apiVersion": V2,
        "kind": "MultiKueueCluster",
        "spec": {"clusterSource": {"clusterProfileRef": {"name": "p"}}},
    }
    assert multikueue_cluster_from_v1beta1(v1beta1) == v1beta2
    assert multikueue_cluster_to_v1beta1(v1beta2) == {
        "apiVersion": V1,
        "kind": "MultiKueueCluster",
        "spec": {"clusterProfileRef": {"name": "p"}},
    }


def test_kinds_with_v1beta2_or_v1beta1_only_fields() -> None:
    config = {
        "apiVersion": V2,
        "kind": "MultiKueueConfig",
        "spec": {"clusters": ["a"], "quotaManagement": "Manual"},
    }
    assert convert_to_v1beta1(config) == {
        "apiVersion": V1,
        "kind": "MultiKueueConfig",
        "spec": {"clusters": ["a"]},
    }
    check = {
        "apiVersion": V1,
        "kind": "AdmissionCheck",
        "spec": {"controllerName": "c", "retryDelayMinutes": 15},
    }
    assert convert_from_v1beta1(check) == {
        "apiVersion": V2,
        "kind": "AdmissionCheck",
        "spec": {"controllerName": "c"},
    }
    assert parse_admission_check(check).spec.controller_name == "c"
    assert parse_multikueue_config({**config, "apiVersion": V1}).spec.clusters == ["a"]


@pytest.mark.parametrize(
    "kind", ["ResourceFlavor", "WorkloadPriorityClass", "Topology", "ProvisioningRequestConfig"]
)
def test_identical_kinds_only_change_api_version(kind: str) -> None:
    body = {"metadata": {"name": "x"}, "spec": {"anything": [1]}, "value": 3}
    v1beta1 = {"apiVersion": V1, "kind": kind, **copy.deepcopy(body)}
    v1beta2 = {"apiVersion": V2, "kind": kind, **copy.deepcopy(body)}
    assert convert_from_v1beta1(v1beta1) == v1beta2
    assert convert_to_v1beta1(v1beta2) == v1beta1


def test_parsers_accept_either_version() -> None:
    flavor = {"apiVersion": V1, "kind": "ResourceFlavor", "spec": {"nodeLabels": {"a": "b"}}}
    assert parse_resource_flavor(flavor).spec.node_labels == {"a": "b"}
    priority = {"apiVersion": V1, "kind": "WorkloadPriorityClass", "value": 7}
    assert parse_workload_priority_class(priority).value == 7
    with pytest.raises(ConversionError):
        parse_resource_flavor({"apiVersion": V2, "kind": "ClusterQueue"})


def test_a_full_v1beta2_workload_loses_only_the_documented_fields_through_v1beta1() -> None:
    _, example = full_examples()["Workload"]
    wire = Workload.model_validate(example).to_wire()
    back = workload_from_v1beta1(workload_to_v1beta1(wire))
    expected = copy.deepcopy(wire)
    del expected["spec"]["preemptionGates"]
    del expected["status"]["preemptionGates"]
    del expected["spec"]["podSets"][0]["topologyRequest"]["podsetSliceRequiredTopologyConstraints"]
    assert back == expected


@pytest.mark.parametrize(
    "kind", ["LocalQueue", "ClusterQueue", "ResourceFlavor", "AdmissionCheck", "WorkloadPriorityClass"]
)
def test_other_full_objects_survive_a_trip_through_v1beta1(kind: str) -> None:
    model_class, example = full_examples()[kind]
    wire = model_class.model_validate(example).model_dump(by_alias=True, exclude_none=True, mode="json")
    expected = copy.deepcopy(wire)
    if kind == "ClusterQueue":
        del expected["spec"]["concurrentAdmissionPolicy"]
    assert convert_from_v1beta1(convert_to_v1beta1(wire)) == expected
