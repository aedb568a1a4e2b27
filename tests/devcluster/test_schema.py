"""StructuralSchema against the real CRDs in ../shared: pruning, defaulting and kube's field causes."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from devcluster.apiserver.customresources.schema import SchemaCause, StructuralSchema

pytestmark = pytest.mark.needs_shared


def _load_all(path: Path) -> list[dict[str, Any]]:
    with path.open() as handle:
        return [doc for doc in yaml.load_all(handle, Loader=yaml.CSafeLoader) if doc]


def _version_schema(crd_path: Path, version: str) -> StructuralSchema:
    (crd,) = _load_all(crd_path)
    for entry in crd["spec"]["versions"]:
        if entry["name"] == version:
            return StructuralSchema(entry["schema"]["openAPIV3Schema"])
    raise AssertionError(f"{crd_path.name} has no version {version}")


@pytest.fixture(scope="module")
def workload_schema(kueue_crd_dir: Path) -> StructuralSchema:
    return _version_schema(kueue_crd_dir / "kueue.x-k8s.io_workloads.yaml", "v1beta2")


@pytest.fixture(scope="module")
def cluster_queue_schema(kueue_crd_dir: Path) -> StructuralSchema:
    return _version_schema(kueue_crd_dir / "kueue.x-k8s.io_clusterqueues.yaml", "v1beta2")


def _workload(**spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "queueName": "golden-q",
        "podSets": [
            {
                "name": "main",
                "count": 2,
                "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
            }
        ],
    }
    body.update(spec)
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "wl", "namespace": "ns"},
        "spec": body,
    }


def _messages(causes: list[SchemaCause]) -> list[str]:
    return [cause.message for cause in causes]


def test_every_real_crd_version_compiles(shared_dir: Path) -> None:
    compiled = 0
    for crd_path in sorted((shared_dir / "crds").glob("*/*.yaml")):
        for crd in _load_all(crd_path):
            if crd.get("kind") != "CustomResourceDefinition":
                continue
            for entry in crd["spec"]["versions"]:
                StructuralSchema(entry["schema"]["openAPIV3Schema"])
                compiled += 1
    assert compiled >= 14


@pytest.mark.parametrize(
    "fixture", ["workload-admitted.yaml", "workload-after-deactivation.yaml", "workload-finished.yaml"]
)
def test_golden_workloads_survive_prune_default_and_validate_cleanly(
    workload_schema: StructuralSchema, golden_dir: Path, fixture: str
) -> None:
    (document,) = _load_all(golden_dir / fixture)
    objects = document["items"] if document.get("kind") == "List" else [document]
    for original in objects:
        written = copy.deepcopy(original)
        workload_schema.prune(written)
        workload_schema.apply_defaults(written)
        assert written == original
        assert workload_schema.validate(written) == []


def test_unknown_fields_are_pruned_at_every_level(workload_schema: StructuralSchema) -> None:
    obj = _workload(bogus=1)
    obj["metadata"]["unknownMeta"] = "kept: root metadata belongs to the registry"
    obj["topLevelBogus"] = {"x": 1}
    pod_set = obj["spec"]["podSets"][0]
    pod_set["extra"] = True
    pod_set["template"]["metadata"] = {"labels": {"a": "b"}, "bogusMeta": 1}
    pod_set["template"]["spec"]["containers"][0]["bogusContainerField"] = "x"
    obj["status"] = {"admission": {"clusterQueue": "cq", "podSetAssignments": [], "zzz": 1}, "what": 2}

    workload_schema.prune(obj)

    assert "topLevelBogus" not in obj
    assert "bogus" not in obj["spec"]
    assert obj["metadata"]["unknownMeta"].startswith("kept")
    assert "extra" not in pod_set
    assert pod_set["template"]["metadata"] == {"labels": {"a": "b"}}
    assert pod_set["template"]["spec"]["containers"][0] == {"name": "c", "image": "busybox"}
    assert obj["status"] == {"admission": {"clusterQueue": "cq", "podSetAssignments": []}}


def test_null_for_non_nullable_field_is_dropped_then_defaulted(workload_schema: StructuralSchema) -> None:
    obj = _workload(active=None, priority=None)
    workload_schema.prune(obj)
    workload_schema.apply_defaults(obj)
    assert obj["spec"]["active"] is True
    assert "priority" not in obj["spec"]


def test_workload_defaults_fill_absent_fields_inside_list_items(workload_schema: StructuralSchema) -> None:
    obj = _workload(podSets=[{"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}])
    workload_schema.apply_defaults(obj)
    assert obj["spec"]["active"] is True
    assert obj["spec"]["podSets"][0]["count"] == 1
    assert obj["spec"]["podSets"][0]["name"] == "main"
    assert workload_schema.validate(obj) == []


def test_defaults_never_overwrite_present_values(workload_schema: StructuralSchema) -> None:
    obj = _workload(active=False)
    obj["spec"]["podSets"][0]["count"] = 0
    workload_schema.apply_defaults(obj)
    assert obj["spec"]["active"] is False
    assert obj["spec"]["podSets"][0]["count"] == 0


def test_cluster_queue_defaults_apply_recursively(cluster_queue_schema: StructuralSchema) -> None:
    cq: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": "cq"},
        "spec": {"resourceGroups": []},
    }
    cluster_queue_schema.apply_defaults(cq)
    spec = cq["spec"]
    assert spec["queueingStrategy"] == "BestEffortFIFO"
    assert spec["stopPolicy"] == "None"
    assert spec["flavorFungibility"] == {"whenCanBorrow": "MayStopSearch", "whenCanPreempt": "TryNextFlavor"}
    assert spec["preemption"] == {
        "borrowWithinCohort": {"policy": "Never"},
        "reclaimWithinCohort": "Never",
        "withinClusterQueue": "Never",
    }
    assert "fairSharing" not in spec, "a default below an absent parent is not applied"


def test_minimum_violation_uses_kube_message(workload_schema: StructuralSchema) -> None:
    obj = _workload()
    obj["spec"]["podSets"][0]["count"] = -1
    (cause,) = workload_schema.validate(obj)
    assert cause == SchemaCause(
        field="spec.podSets[0].count",
        reason="FieldValueInvalid",
        message="spec.podSets[0].count: Invalid value: -1: "
        "spec.podSets[0].count in body should be greater than or equal to 0",
    )
    assert cause.body.startswith("Invalid value: -1: ")


def test_required_enum_too_long_and_too_many(
    workload_schema: StructuralSchema, cluster_queue_schema: StructuralSchema
) -> None:
    missing = _workload()
    del missing["spec"]["podSets"][0]["template"]
    assert _messages(workload_schema.validate(missing)) == ["spec.podSets[0].template: Required value"]

    long_name = _workload()
    long_name["spec"]["podSets"][0]["name"] = "a" * 64
    assert _messages(workload_schema.validate(long_name)) == [
        "spec.podSets[0].name: Too long: may not be more than 63 bytes"
    ]

    many = _workload()
    template = many["spec"]["podSets"][0]["template"]
    many["spec"]["podSets"] = [{"name": f"p{i}", "template": template} for i in range(19)]
    causes = workload_schema.validate(many)
    assert [(c.reason, c.message) for c in causes] == [
        ("FieldValueTooMany", "spec.podSets: Too many: 19: must have at most 18 items")
    ]

    cq = {"metadata": {"name": "cq"}, "spec": {"queueingStrategy": "Random"}}
    (cause,) = cluster_queue_schema.validate(cq)
    assert cause.reason == "FieldValueNotSupported"
    assert cause.message == (
        'spec.queueingStrategy: Unsupported value: "Random": supported values: "StrictFIFO", "BestEffortFIFO"'
    )


def test_type_mismatch_pattern_and_min_items(workload_schema: StructuralSchema) -> None:
    obj = _workload(queueName="Not_A_Name", active="yes")
    obj["spec"]["podSets"][0]["count"] = "two"
    causes = {c.field: c for c in workload_schema.validate(obj)}
    assert causes["spec.active"].reason == "FieldValueTypeInvalid"
    assert causes["spec.active"].message == (
        'spec.active: Invalid value: "string": spec.active in body must be of type boolean: "string"'
    )
    assert causes["spec.podSets[0].count"].message.endswith('must be of type integer: "string"')
    assert causes["spec.queueName"].reason == "FieldValueInvalid"
    assert causes["spec.queueName"].message.startswith(
        'spec.queueName: Invalid value: "Not_A_Name": spec.queueName in body should match \'^[a-z0-9]'
    )

    empty = _workload(podSets=[])
    assert _messages(workload_schema.validate(empty)) == [
        "spec.podSets: Invalid value: 0: spec.podSets in body should have at least 1 items"
    ]


def test_list_map_keys_must_be_unique(workload_schema: StructuralSchema) -> None:
    obj = _workload()
    obj["spec"]["podSets"].append(copy.deepcopy(obj["spec"]["podSets"][0]))
    (cause,) = workload_schema.validate(obj)
    assert cause.reason == "FieldValueDuplicate"
    assert cause.message == 'spec.podSets[1]: Duplicate value: {"name":"main"}'


def test_int_or_string_quantities_accept_both_forms(cluster_queue_schema: StructuralSchema) -> None:
    def cq(quota: Any) -> dict[str, Any]:
        flavor = {"name": "f", "resources": [{"name": "cpu", "nominalQuota": quota}]}
        return {"spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [flavor]}]}}

    assert cluster_queue_schema.validate(cq(10)) == []
    assert cluster_queue_schema.validate(cq("500m")) == []
    (cause,) = cluster_queue_schema.validate(cq(True))
    assert cause.message.endswith('must be of type integer,string: "boolean"')


def test_date_time_format_is_checked(workload_schema: StructuralSchema) -> None:
    condition = {
        "type": "Finished",
        "status": "True",
        "reason": "Succeeded",
        "message": "",
        "lastTransitionTime": "yesterday",
    }
    obj = _workload()
    obj["status"] = {"conditions": [condition]}
    (cause,) = workload_schema.validate(obj)
    assert cause.reason == "FieldValueTypeInvalid"
    assert cause.message == (
        'status.conditions[0].lastTransitionTime: Invalid value: "yesterday": '
        'status.conditions[0].lastTransitionTime in body must be of type date-time: "yesterday"'
    )
    condition["lastTransitionTime"] = "2026-11-22T02:34:03Z"
    assert workload_schema.validate(obj) == []


def test_embedded_resource_keeps_type_meta_and_prunes_metadata_to_object_meta(shared_dir: Path) -> None:
    schema = _version_schema(
        shared_dir / "crds/appwrapper/workload.codeflare.dev_appwrappers.yaml", "v1beta2"
    )
    wrapper: dict[str, Any] = {
        "apiVersion": "workload.codeflare.dev/v1beta2",
        "kind": "AppWrapper",
        "metadata": {"name": "aw"},
        "spec": {
            "components": [
                {
                    "template": {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "metadata": {"name": "j", "labels": {"a": "b"}, "notObjectMeta": 1},
                        "spec": {"anything": {"goes": True}},
                    },
                    "bogus": 1,
                }
            ]
        },
    }
    schema.prune(wrapper)
    (component,) = wrapper["spec"]["components"]
    assert "bogus" not in component
    assert component["template"] == {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "labels": {"a": "b"}},
        "spec": {"anything": {"goes": True}},
    }
    assert schema.validate(wrapper) == []


def test_preserve_unknown_fields_and_exclusive_bounds() -> None:
    raw: dict[str, Any] = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {
                    "ratio": {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 1},
                    "tags": {
                        "type": "array",
                        "items": {"type": "string"},
                        "x-kubernetes-list-type": "set",
                    },
                    "known": {"type": "object", "properties": {"a": {"type": "string"}}},
                },
            }
        },
    }
    schema = StructuralSchema(raw)
    obj = {"spec": {"free": {"form": 1}, "known": {"a": "x", "b": "pruned"}, "ratio": 0, "tags": ["x", "x"]}}
    schema.prune(obj)
    assert obj["spec"]["free"] == {"form": 1}
    assert obj["spec"]["known"] == {"a": "x"}
    assert _messages(schema.validate(obj)) == [
        "spec.ratio: Invalid value: 0: spec.ratio in body should be greater than 0",
        'spec.tags[1]: Duplicate value: "x"',
    ]
    obj["spec"].update(ratio=1.5, tags=["x"])
    assert _messages(schema.validate(obj)) == [
        "spec.ratio: Invalid value: 1.5: spec.ratio in body should be less than or equal to 1"
    ]
