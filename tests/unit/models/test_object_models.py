"""Queues and MultiKueue objects: defaults, helpers and exports."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import pytest
from pydantic import ValidationError

import shared.models
from shared.models.base import KubeModel
from shared.models.meta import LabelSelector
from shared.models.multikueue import KubeConfigSource, MultiKueueCluster, MultiKueueConfig
from shared.models.queue import ClusterQueue, ClusterQueueSpec, LocalQueue, ResourceQuota


@pytest.mark.parametrize(
    ("model_class", "api_version", "kind"),
    [
        (LocalQueue, "kueue.x-k8s.io/v1beta2", "LocalQueue"),
        (ClusterQueue, "kueue.x-k8s.io/v1beta2", "ClusterQueue"),
        (MultiKueueConfig, "kueue.x-k8s.io/v1beta2", "MultiKueueConfig"),
        (MultiKueueCluster, "kueue.x-k8s.io/v1beta2", "MultiKueueCluster"),
    ],
)
def test_api_version_and_kind_default_and_are_enforced(
    model_class: type[KubeModel], api_version: str, kind: str
) -> None:
    built = model_class().to_wire()
    assert (built["apiVersion"], built["kind"]) == (api_version, kind)
    with pytest.raises(ValidationError) as error:
        model_class.from_wire({"apiVersion": "example.com/v1", "kind": kind})
    assert [item["loc"] for item in error.value.errors()] == [("apiVersion",)]
    with pytest.raises(ValidationError) as error:
        model_class.from_wire({"apiVersion": api_version, "kind": "Other"})
    assert [item["loc"] for item in error.value.errors()] == [("kind",)]


def test_quantities_keep_their_wire_form() -> None:
    quotas: list[dict[str, Any]] = [
        {"name": "cpu", "nominalQuota": 10},
        {"name": "memory", "nominalQuota": "10Gi"},
    ]
    parsed = [ResourceQuota.from_wire(quota) for quota in quotas]
    assert [quota.nominal_quota for quota in parsed] == [10, "10Gi"]
    assert [quota.to_wire() for quota in parsed] == quotas
    assert ResourceQuota.from_wire({"name": "cpu", "nominalQuota": "10"}).nominal_quota == "10"


def test_an_empty_namespace_selector_is_not_the_same_as_none() -> None:
    everything = ClusterQueue.from_wire({"spec": {"namespaceSelector": {}}})
    nothing = ClusterQueue.from_wire({"spec": {}})
    assert everything.spec.namespace_selector == LabelSelector()
    assert everything.to_wire()["spec"] == {"namespaceSelector": {}}
    assert nothing.spec.namespace_selector is None


def test_admission_check_names_come_from_the_strategy() -> None:
    spec = ClusterQueueSpec.from_wire(
        {
            "admissionChecksStrategy": {
                "admissionChecks": [{"name": "mk"}, {"name": "prov", "onFlavors": ["f"]}]
            }
        }
    )
    assert spec.admission_check_names() == ["mk", "prov"]
    assert ClusterQueueSpec().admission_check_names() == []


def test_kubeconfig_location_type_defaults_to_secret_like_the_crd() -> None:
    assert KubeConfigSource(location="w1").effective_location_type == "Secret"
    assert KubeConfigSource(location="/etc/k", location_type="Path").effective_location_type == "Path"
    assert KubeConfigSource(location="w1").to_wire() == {"location": "w1"}


def test_a_new_enum_value_from_a_newer_kueue_does_not_break_parsing() -> None:
    queue = ClusterQueue.from_wire({"spec": {"queueingStrategy": "SomethingNew", "stopPolicy": "Pause"}})
    assert (queue.spec.queueing_strategy, queue.spec.stop_policy) == ("SomethingNew", "Pause")


def test_every_module_exports_a_sorted_all_of_what_exists() -> None:
    for info in pkgutil.iter_modules(shared.models.__path__):
        module = importlib.import_module(f"shared.models.{info.name}")
        exported = module.__all__
        # ruff's RUF022 order: CONSTANTS, then Classes, then functions, each alphabetical
        assert exported == sorted(
            exported, key=lambda name: (0 if name.isupper() else 1 if name[0].isupper() else 2, name)
        )
        for name in exported:
            assert hasattr(module, name), f"shared.models.{info.name}.__all__ names missing {name}"
