"""Declarative adapter configuration errors and behaviours; the framework registry."""

from __future__ import annotations

from typing import Any

import pytest

from shared.frameworks.base import (
    AdapterConfigError,
    AdapterError,
    GenericJob,
    JobWithManagedBy,
    JobWithPriorityClass,
)
from shared.frameworks.batch_job import BatchJobAdapter
from shared.frameworks.declarative import DeclarativeFramework
from shared.frameworks.registry import (
    DeclarativeKind,
    FrameworkRegistry,
    InvalidExternalNameError,
    UnknownFrameworkError,
    UnmanagedKindError,
    builtin_gvk,
    builtin_plural,
    parse_external_name,
)
from shared.frameworks.spec import DeclarativeAdapterSpec
from shared.kube import GroupVersionKind
from shared.kueue.podset import PodSetInfo

GVK = GroupVersionKind("ml.example.com", "v1", "Run")
POD = {"spec": {"containers": [{"name": "c", "image": "i"}]}}


def spec(**overrides: Any) -> DeclarativeAdapterSpec:
    base: dict[str, Any] = {
        "suspend": {"path": "spec.status", "suspendedValue": "Pending", "runningValue": None},
        "podSets": [{"template": "spec.template", "count": {"path": "spec.replicas"}}],
        "finished": "has(object.status) && has(object.status.done) && object.status.done",
    }
    base.update(overrides)
    return DeclarativeAdapterSpec.model_validate(base)


def run_obj(**spec_fields: Any) -> dict[str, Any]:
    return {
        "apiVersion": "ml.example.com/v1",
        "kind": "Run",
        "metadata": {"name": "r"},
        "spec": {"template": POD, **spec_fields},
    }


@pytest.mark.parametrize(
    ("overrides", "field"),
    [
        ({"finished": "object.status.("}, "cfg.finished"),
        ({"podsReady": "1 +"}, "cfg.podsReady"),
        ({"priorityClass": "'a' +"}, "cfg.priorityClass"),
        ({"suspend": {"path": "spec..suspend"}}, "cfg.suspend.path"),
        ({"managedBy": {"path": "spec[x"}}, "cfg.managedBy.path"),
        ({"podSets": [{"template": "spec.template"}, {"template": "spec.]"}]}, "cfg.podSets[1].template"),
        ({"podSets": [{"forEach": "spec.", "template": "t"}]}, "cfg.podSets[0].forEach"),
        (
            {"podSets": [{"template": "t", "count": {"expression": "size("}}]},
            "cfg.podSets[0].count.expression",
        ),
        ({"podSets": [{"template": "t", "minCount": {"path": "a..b"}}]}, "cfg.podSets[0].minCount.path"),
        ({"podSets": [{"template": "t", "name": {"expression": "'"}}]}, "cfg.podSets[0].name.expression"),
        ({"podSets": [{"template": "t", "name": {"path": "[x"}}]}, "cfg.podSets[0].name.path"),
        (
            {"podSets": [{"template": "t", "topologyRequest": {"subGroupCount": {"expression": ")"}}}]},
            "cfg.podSets[0].topologyRequest.subGroupCount.expression",
        ),
    ],
)
def test_bad_config_fails_at_construction_naming_the_field(overrides, field) -> None:
    with pytest.raises(AdapterConfigError) as caught:
        DeclarativeFramework(spec(**overrides), gvk=GVK, field="cfg")
    assert caught.value.path == field


def test_run_with_null_running_value_removes_the_suspend_field() -> None:
    obj = run_obj(status="Pending", replicas=2)
    adapter = DeclarativeFramework(spec(), gvk=GVK)(obj)
    assert adapter.is_suspended() is True
    adapter.run_with_pod_sets_info([PodSetInfo(name="main", count=2)])
    assert "status" not in obj["spec"]
    assert adapter.is_suspended() is False
    adapter.suspend()
    assert obj["spec"]["status"] == "Pending"


def test_suspend_compares_json_values_strictly() -> None:
    framework = DeclarativeFramework(spec(suspend={"path": "spec.suspend"}), gvk=GVK)
    assert framework(run_obj(suspend=True)).is_suspended() is True
    assert framework(run_obj(suspend=1)).is_suspended() is False


def test_optional_interfaces_only_when_configured() -> None:
    plain = DeclarativeFramework(spec(), gvk=GVK)(run_obj())
    assert isinstance(plain, GenericJob)
    assert not isinstance(plain, JobWithManagedBy)
    assert not isinstance(plain, JobWithPriorityClass)
    both = DeclarativeFramework(
        spec(
            managedBy={"path": "spec.managedBy"}, priorityClass="has(object.spec.pc) ? object.spec.pc : null"
        ),
        gvk=GVK,
    )
    adapter = both(run_obj(pc="high"))
    assert isinstance(adapter, JobWithManagedBy)
    assert isinstance(adapter, JobWithPriorityClass)
    assert adapter.priority_class() == "high"
    other = both(run_obj())
    assert isinstance(other, JobWithPriorityClass)
    assert other.priority_class() is None
    assert adapter.can_default_managed_by() is True
    adapter.set_managed_by("kueue.x-k8s.io/multikueue")
    assert adapter.can_default_managed_by() is False


def test_for_each_literal_names_are_indexed_and_counts_default() -> None:
    framework = DeclarativeFramework(
        spec(
            podSets=[
                {
                    "name": "w",
                    "forEach": "spec.groups",
                    "template": "template",
                    "count": {"path": "n", "default": 2},
                }
            ]
        ),
        gvk=GVK,
    )
    obj = run_obj(groups=[{"template": POD}, {"template": POD, "n": 5}])
    assert [(p.name, p.count) for p in framework(obj).pod_sets()] == [("w-0", 2), ("w-1", 5)]


@pytest.mark.parametrize(
    ("pod_sets", "obj", "path"),
    [
        ([{"forEach": "spec.groups", "template": "template"}], run_obj(groups=[]), "spec.groups"),
        (
            [{"template": "spec.template", "count": {"path": "spec.replicas"}}],
            run_obj(replicas=-1),
            "spec.replicas",
        ),
        (
            [{"template": "spec.template", "count": {"expression": "-1"}}],
            run_obj(),
            "adapter.podSets[0].count.expression",
        ),
        (
            [{"template": "spec.template"}, {"template": "spec.template"}],
            run_obj(),
            "adapter.podSets[1].name",
        ),
        ([{"template": "spec.missing"}], run_obj(), "spec.missing"),
        (
            [{"forEach": "spec.groups", "name": {"path": "name"}, "template": "template"}],
            run_obj(groups=[{"template": POD}]),
            "spec.groups[0].name",
        ),
    ],
)
def test_pod_set_errors_name_the_path(pod_sets, obj, path) -> None:
    with pytest.raises(AdapterError) as caught:
        DeclarativeFramework(spec(podSets=pod_sets), gvk=GVK)(obj).pod_sets()
    assert caught.value.path == path


def test_cel_runtime_errors_name_the_config_field() -> None:
    framework = DeclarativeFramework(spec(active="object.status.active > 0"), gvk=GVK, field="cfg")
    with pytest.raises(AdapterError) as caught:
        framework(run_obj()).is_active()
    assert caught.value.path == "cfg.active"


# --- registry ------------------------------------------------------------------------------------


def test_builtin_names_kinds_and_plurals() -> None:
    assert builtin_gvk("batch/job") == GroupVersionKind("batch", "v1", "Job")
    assert str(builtin_gvk("tekton.dev/pipelinerun")) == "tekton.dev/v1, Kind=PipelineRun"
    assert [
        builtin_plural(n)
        for n in (
            "batch/job",
            "jobset.x-k8s.io/jobset",
            "workload.codeflare.dev/appwrapper",
            "tekton.dev/pipelinerun",
        )
    ] == [
        "jobs",
        "jobsets",
        "appwrappers",
        "pipelineruns",
    ]
    with pytest.raises(UnknownFrameworkError, match=r'unknown framework "kubeflow\.org/mpijob"'):
        builtin_gvk("kubeflow.org/mpijob")


@pytest.mark.parametrize(
    ("name", "gvk"),
    [
        (
            "TrainingRun.v1alpha1.ml.example.com",
            GroupVersionKind("ml.example.com", "v1alpha1", "TrainingRun"),
        ),
        ("Job.v1.batch", GroupVersionKind("batch", "v1", "Job")),
    ],
)
def test_parse_external_name(name, gvk) -> None:
    assert parse_external_name(name) == gvk


@pytest.mark.parametrize("name", ["Job", "Job.v1", "Job..batch", ".v1.batch", "Job.v1."])
def test_parse_external_name_rejects(name) -> None:
    with pytest.raises(InvalidExternalNameError, match="is not a valid GVK"):
        parse_external_name(name)


def test_registry_dispatches_on_api_version_and_kind() -> None:
    registry = FrameworkRegistry(
        builtin=["batch/job"], declarative=[DeclarativeKind(GVK, spec(), plural="runz")]
    )
    assert isinstance(registry.adapter_for({"apiVersion": "batch/v1", "kind": "Job"}), BatchJobAdapter)
    obj = run_obj()
    adapter = registry.adapter_for(obj)
    assert adapter.obj is obj and adapter.gvk == GVK
    assert registry.plural_for(GVK) == "runz"
    assert set(registry.gvks) == {GVK, GroupVersionKind("batch", "v1", "Job")}
    assert len(registry) == 2 and GVK in registry
    with pytest.raises(UnmanagedKindError, match=r'"jobset.x-k8s.io/v1alpha2, Kind=JobSet"'):
        registry.adapter_for({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet"})


@pytest.mark.parametrize(
    ("obj", "path"),
    [
        ({"kind": "Job"}, "apiVersion"),
        ({"apiVersion": "batch/v1"}, "kind"),
        ({"apiVersion": 1, "kind": "Job"}, "apiVersion"),
        ({"apiVersion": "a/b/c", "kind": "Job"}, "apiVersion"),
    ],
)
def test_registry_bad_type_meta_names_the_field(obj, path) -> None:
    with pytest.raises(AdapterError) as caught:
        FrameworkRegistry(builtin=["batch/job"]).adapter_for(obj)
    assert caught.value.path == path


def test_registry_configuration_errors() -> None:
    with pytest.raises(UnknownFrameworkError):
        FrameworkRegistry(builtin=["nope"])
    with pytest.raises(AdapterConfigError, match="already handled"):
        FrameworkRegistry(
            builtin=["batch/job"],
            declarative=[DeclarativeKind(GroupVersionKind("batch", "v1", "Job"), spec())],
        )
    with pytest.raises(AdapterConfigError) as caught:
        FrameworkRegistry(declarative=[DeclarativeKind(GVK, spec(finished="("), field="x.adapter")])
    assert caught.value.path == "x.adapter.finished"


def test_registry_guesses_plurals_like_apimachinery() -> None:
    kinds = [
        DeclarativeKind(GroupVersionKind("g", "v1", kind), spec()) for kind in ("Policy", "Class", "Run")
    ]
    assert [f.plural for f in FrameworkRegistry(declarative=kinds)] == ["policies", "classes", "runs"]
