"""A Workload read from a cluster and written back is the same object, unknown fields included."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from shared.models.base import KubeModel
from shared.models.queue import ClusterQueue, LocalQueue
from shared.models.workload import Admission, PodSet, PodSetAssignment, Workload, WorkloadSpec

GOLDEN_WORKLOADS = ["workload-admitted.yaml", "workload-after-deactivation.yaml", "workload-finished.yaml"]


def _items(path: Path) -> list[dict[str, Any]]:
    """The objects of a fixture: the items of a ``kind: List``, or the documents themselves."""
    objects: list[dict[str, Any]] = []
    for document in yaml.safe_load_all(path.read_text()):
        if document.get("kind") == "List":
            objects.extend(document["items"])
        else:
            objects.append(document)
    return objects


def _workload_with_unknown_fields() -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "futureTopLevel": {"x": 1},
        "metadata": {
            "name": "job-sample-1",
            "namespace": "ns",
            "managedFields": [{"manager": "kueue", "operation": "Update"}],
            "labels": {"a": "b"},
        },
        "spec": {
            "futureSpecField": [1, 2],
            "queueName": "q",
            "podSets": [
                {
                    "name": "main",
                    "count": 2,
                    "futurePodSetField": "keep me",
                    "template": {
                        "metadata": {"creationTimestamp": None},
                        "spec": {"containers": [{"name": "c", "futureContainerField": True}]},
                    },
                }
            ],
            "priorityClassRef": {
                "group": "kueue.x-k8s.io",
                "kind": "WorkloadPriorityClass",
                "name": "p",
                "x": 1,
            },
            "priority": 5,
        },
        "status": {
            "futureStatusField": "kept",
            "admission": {
                "clusterQueue": "cq",
                "futureAdmissionField": {"nested": [1]},
                "podSetAssignments": [
                    {"name": "main", "count": 2, "flavors": {"cpu": "f"}, "futureAssignmentField": 7}
                ],
            },
            "conditions": [
                {
                    "type": "QuotaReserved",
                    "status": "True",
                    "reason": "QuotaReserved",
                    "message": "m",
                    "lastTransitionTime": "2026-11-22T02:34:03Z",
                    "observedGeneration": 1,
                    "futureConditionField": "c",
                }
            ],
            "admissionChecks": [
                {
                    "name": "ac",
                    "state": "Pending",
                    "message": "",
                    "lastTransitionTime": "2026-11-22T02:34:03Z",
                    "futureCheckField": 1,
                    "podSetUpdates": [{"name": "main", "futureUpdateField": 2}],
                }
            ],
        },
    }


def test_round_trip_keeps_unknown_fields_everywhere() -> None:
    wire = _workload_with_unknown_fields()
    original = copy.deepcopy(wire)
    workload = Workload.from_wire(wire)
    assert workload.to_wire() == original
    assert wire == original  # parsing does not mutate the input


def test_read_modify_write_changes_only_what_was_modified() -> None:
    workload = Workload.from_wire(_workload_with_unknown_fields())
    workload.spec.active = False
    assert workload.status is not None
    assert workload.status.admission is not None
    workload.status.admission.pod_set_assignments[0].count = 1
    expected = _workload_with_unknown_fields()
    expected["spec"]["active"] = False
    expected["status"]["admission"]["podSetAssignments"][0]["count"] = 1
    assert workload.to_wire() == expected


def test_unknown_fields_are_reachable_as_model_extra() -> None:
    workload = Workload.from_wire(_workload_with_unknown_fields())
    assert workload.model_extra == {"futureTopLevel": {"x": 1}}
    assert workload.spec.pod_sets[0].model_extra == {"futurePodSetField": "keep me"}


def test_python_and_wire_names_are_both_accepted() -> None:
    by_alias = Workload.from_wire({"spec": {"queueName": "q", "podSets": [{"minCount": 1}]}})
    by_name = Workload.model_validate({"spec": {"queue_name": "q", "pod_sets": [{"min_count": 1}]}})
    assert by_alias == by_name
    assert by_alias.spec.pod_sets[0].name == "main"  # CRD default


def test_a_built_workload_serialises_without_nulls() -> None:
    workload = Workload(
        spec=WorkloadSpec(queue_name="q", pod_sets=[PodSet(name="main", count=3, template={"spec": {}})]),
    )
    assert workload.to_wire() == {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {},
        "spec": {"podSets": [{"name": "main", "template": {"spec": {}}, "count": 3}], "queueName": "q"},
    }


def test_pod_set_assignment_name_defaults_to_main_as_in_the_crd() -> None:
    admission = Admission.from_wire({"clusterQueue": "cq", "podSetAssignments": [{"count": 1}]})
    assert admission.pod_set_assignments == [PodSetAssignment(name="main", count=1)]


def test_a_wrong_kind_or_api_version_is_rejected_naming_the_field() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError) as wrong_version:
        Workload.from_wire({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload"})
    assert [error["loc"] for error in wrong_version.value.errors()] == [("apiVersion",)]
    with pytest.raises(ValidationError) as bad_count:
        Workload.from_wire({"spec": {"podSets": [{"count": "many"}]}})
    assert [error["loc"] for error in bad_count.value.errors()] == [("spec", "podSets", 0, "count")]


# --- golden objects from a real Kueue ---------------------------------------------------------------


@pytest.mark.needs_shared
@pytest.mark.parametrize("file_name", GOLDEN_WORKLOADS)
def test_golden_workloads_parse_and_serialise_exactly(golden_dir: Path, file_name: str) -> None:
    items = _items(golden_dir / file_name)
    assert [item["kind"] for item in items] == ["Workload"]
    for item in items:
        workload = Workload.from_wire(item)
        assert workload.to_wire() == item


@pytest.mark.needs_shared
def test_golden_workload_fields_are_typed(golden_dir: Path) -> None:
    [item] = _items(golden_dir / "workload-finished.yaml")
    workload = Workload.from_wire(item)
    assert workload.metadata.owner_references is not None
    assert workload.metadata.owner_references[0].kind == "Job"
    assert workload.spec.pod_sets[0].topology_request == {
        "podIndexLabel": "batch.kubernetes.io/job-completion-index"
    }
    assert workload.status is not None
    assert workload.status.accumulated_past_execution_time_seconds == 11
    assert workload.status.admission is not None
    assert workload.status.admission.pod_set_assignments[0].flavors == {
        "cpu": "golden-spot",
        "memory": "golden-spot",
    }
    assert [condition.type for condition in workload.status.conditions or []] == [
        "QuotaReserved",
        "Evicted",
        "Admitted",
        "Requeued",
        "Finished",
        "PodsReady",
    ]


@pytest.mark.needs_shared
def test_golden_setup_objects_round_trip(golden_dir: Path) -> None:
    models: dict[str, type[KubeModel]] = {"ClusterQueue": ClusterQueue, "LocalQueue": LocalQueue}
    items = _items(golden_dir / "setup.yaml")
    assert sorted(item["kind"] for item in items) == [
        "ClusterQueue",
        "LocalQueue",
        "Namespace",
        "ResourceFlavor",
    ]
    for item in items:
        if item["kind"] in models:  # the others are read as raw dicts only
            assert models[item["kind"]].from_wire(item).to_wire() == item
    [cluster_queue] = [ClusterQueue.from_wire(item) for item in items if item["kind"] == "ClusterQueue"]
    quotas = (
        cluster_queue.spec.resource_groups[0].flavors[0].resources
        if cluster_queue.spec.resource_groups
        else []
    )
    assert [(quota.name, quota.nominal_quota) for quota in quotas] == [("cpu", 10), ("memory", "10Gi")]
