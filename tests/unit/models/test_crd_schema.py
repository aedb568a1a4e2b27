"""Every model emits only fields the real Kueue CRD (v1beta2) accepts.

The CRD's openAPIV3Schema is closed with ``additionalProperties: false`` (``crd_json_schema``) so a
field the API server would prune - a wrong alias, a snake_case name, a v1beta1 spelling - fails
validation with its path. Examples set every modelled field (checked by ``unset_fields``).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from shared.models.multikueue import MultiKueueCluster, MultiKueueConfig
from shared.models.queue import ClusterQueue, LocalQueue
from shared.models.workload import Workload
from tests.unit.models.crd_json_schema import (
    crd_file_for,
    load_crd_json_schema,
    schema_errors,
    to_json_schema,
)
from tests.unit.models.examples import full_examples, unset_fields

pytestmark = pytest.mark.needs_shared

CRD_PLURAL = {
    "Workload": "workloads",
    "LocalQueue": "localqueues",
    "ClusterQueue": "clusterqueues",
    "MultiKueueConfig": "multikueueconfigs",
    "MultiKueueCluster": "multikueueclusters",
}
KUEUE_MODELS: dict[str, type[BaseModel]] = {
    "Workload": Workload,
    "LocalQueue": LocalQueue,
    "ClusterQueue": ClusterQueue,
    "MultiKueueConfig": MultiKueueConfig,
    "MultiKueueCluster": MultiKueueCluster,
}


def _wire(kind: str) -> dict[str, Any]:
    model_class, example = full_examples()[kind]
    return model_class.model_validate(example).model_dump(by_alias=True, exclude_none=True, mode="json")


def _schema(kueue_crd_dir: Path, kind: str, version: str) -> dict[str, Any]:
    return load_crd_json_schema(crd_file_for(kueue_crd_dir, plural=CRD_PLURAL[kind]), version=version)


@pytest.mark.parametrize("kind", sorted(full_examples()))
def test_examples_set_every_modelled_field(kind: str) -> None:
    model_class, example = full_examples()[kind]
    namespaced = kind in {"Workload", "LocalQueue"}
    exempt = frozenset() if namespaced else frozenset({"metadata.namespace"})
    assert unset_fields(model_class.model_validate(example), exempt=exempt) == []


@pytest.mark.parametrize("kind", sorted(KUEUE_MODELS))
def test_full_object_is_accepted_by_the_v1beta2_crd(kueue_crd_dir: Path, kind: str) -> None:
    assert full_examples()[kind][0] is KUEUE_MODELS[kind]
    wire = _wire(kind)
    assert wire["apiVersion"] == "kueue.x-k8s.io/v1beta2"
    assert wire["kind"] == kind
    assert schema_errors(_schema(kueue_crd_dir, kind, "v1beta2"), wire) == []


@pytest.mark.parametrize(
    ("kind", "path", "wrong_name"),
    [
        ("Workload", ("spec",), "queue_name"),  # snake_case instead of the alias
        ("Workload", ("status",), "accumulatedPastExexcutionTimeSeconds"),  # the v1beta1 spelling
        ("Workload", ("spec", "podSets", 0), "minCounts"),
        ("ClusterQueue", ("spec",), "cohort"),  # v1beta1 name
        ("LocalQueue", ("status",), "flavorUsage"),  # v1beta1 name
        ("MultiKueueCluster", ("spec",), "kubeConfig"),  # v1beta1 place
    ],
)
def test_a_wrong_field_name_is_rejected_with_its_path(
    kueue_crd_dir: Path, kind: str, path: tuple[str | int, ...], wrong_name: str
) -> None:
    wire = _wire(kind)
    parent: Any = wire
    for part in path:
        parent = parent[part]
    parent[wrong_name] = copy.deepcopy(next(iter(parent.values())))
    errors = schema_errors(_schema(kueue_crd_dir, kind, "v1beta2"), wire)
    assert len(errors) == 1
    assert errors[0].startswith(".".join(str(part) for part in path) + ":")
    assert repr(wrong_name) in errors[0]


def test_unknown_field_inside_a_model_survives_to_wire_and_is_what_the_schema_catches(
    kueue_crd_dir: Path,
) -> None:
    _, example = full_examples()["Workload"]
    example["spec"]["pod_sets"][0]["topologyRequst"] = {}  # extra="allow" keeps it ...
    wire = Workload.model_validate(example).to_wire()
    assert wire["spec"]["podSets"][0]["topologyRequst"] == {}
    # ... and the closed schema reports it, so a typo in a model alias cannot go unnoticed.
    assert schema_errors(_schema(kueue_crd_dir, "Workload", "v1beta2"), wire) == [
        "spec.podSets.0: Additional properties are not allowed ('topologyRequst' was unexpected)"
    ]


# --- the schema conversion itself -----------------------------------------------------------------


def test_int_or_string_accepts_integers_and_strings_only() -> None:
    schema = to_json_schema(
        {
            "type": "object",
            "properties": {"quota": {"x-kubernetes-int-or-string": True, "pattern": "^[0-9]+(Gi)?$"}},
        }
    )
    assert schema_errors(schema, {"quota": 10}) == []
    assert schema_errors(schema, {"quota": "10Gi"}) == []
    assert schema_errors(schema, {"quota": "ten"}) != []
    assert schema_errors(schema, {"quota": [10]}) != []


def test_preserve_unknown_fields_and_embedded_resources_stay_open() -> None:
    schema = to_json_schema(
        {
            "type": "object",
            "properties": {
                "open": {
                    "type": "object",
                    "properties": {"a": {"type": "string"}},
                    "x-kubernetes-preserve-unknown-fields": True,
                },
                "embedded": {
                    "type": "object",
                    "properties": {"spec": {"type": "object"}},
                    "x-kubernetes-embedded-resource": True,
                },
                "maybe": {"type": "string", "nullable": True},
            },
        }
    )
    assert schema_errors(schema, {"open": {"a": "x", "b": 1}}) == []
    assert (
        schema_errors(schema, {"embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": {}}})
        == []
    )
    assert schema_errors(schema, {"embedded": {"status": {}}}) != []
    assert schema_errors(schema, {"maybe": None}) == []
    assert schema_errors(schema, {"closed": 1}) == [
        "<root>: Additional properties are not allowed ('closed' was unexpected)"
    ]
