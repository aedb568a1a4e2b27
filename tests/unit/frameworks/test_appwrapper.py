"""AppWrapper adapter: pod-set inference/declaration, podSetInfos run/restore, Finished and conditions."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from shared.frameworks.appwrapper import AppWrapperAdapter
from shared.frameworks.base import AdapterError, GenericJob, JobWithManagedBy
from shared.kueue.podset import PodSetInfo, PodSetInfoError

POD_SPEC = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}


def component(template: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"template": template, **extra}


def make_appwrapper(*components: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    aw: dict[str, Any] = {
        "apiVersion": "workload.codeflare.dev/v1beta2",
        "kind": "AppWrapper",
        "metadata": {"name": "aw", "namespace": "ns"},
        "spec": {"suspend": True, "components": list(components)},
    }
    if status is not None:
        aw["status"] = status
    return aw


def batch_job(parallelism: int = 2, completions: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "parallelism": parallelism,
        "template": {"metadata": {"labels": {"a": "b"}}, "spec": POD_SPEC},
    }
    if completions is not None:
        spec["completions"] = completions
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": spec}


def pytorch_job() -> dict[str, Any]:
    replica = {"template": {"spec": POD_SPEC}}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, **replica},
                "Worker": {"replicas": 3, **replica},
            }
        },
    }


SERVICE = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "svc"},
    "spec": {"ports": [{"port": 80}]},
}
POD = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"x": "y"}}, "spec": POD_SPEC}


def test_interfaces() -> None:
    adapter = AppWrapperAdapter(make_appwrapper(component(POD)))
    assert isinstance(adapter, GenericJob)
    assert isinstance(adapter, JobWithManagedBy)


def test_inferred_pod_sets_skip_pod_less_components() -> None:
    aw = make_appwrapper(
        component(SERVICE), component(batch_job(4, 3)), component(pytorch_job()), component(POD)
    )
    pod_sets = [p.to_wire() for p in AppWrapperAdapter(aw).pod_sets()]
    assert [(p["name"], p["count"]) for p in pod_sets] == [("aw-0", 3), ("aw-1", 1), ("aw-2", 3), ("aw-3", 1)]
    assert pod_sets[0]["template"] == {"metadata": {"labels": {"a": "b"}}, "spec": POD_SPEC}
    assert pod_sets[0]["topologyRequest"] == {"podIndexLabel": "batch.kubernetes.io/job-completion-index"}
    assert pod_sets[1]["topologyRequest"] == {"podIndexLabel": "training.kubeflow.org/replica-index"}
    assert pod_sets[3]["template"] == {"metadata": {"labels": {"x": "y"}}, "spec": POD_SPEC}
    assert "topologyRequest" not in pod_sets[3]


def test_inferred_jobset_and_raycluster() -> None:
    jobset = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "spec": {
            "replicatedJobs": [
                {
                    "name": "w",
                    "replicas": 2,
                    "template": {"spec": {"parallelism": 3, "template": {"spec": POD_SPEC}}},
                }
            ]
        },
    }
    ray = {
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "spec": {
            "headGroupSpec": {"template": {"spec": POD_SPEC}},
            "workerGroupSpecs": [{"replicas": 5, "template": {"spec": POD_SPEC}}],
        },
    }
    pod_sets = AppWrapperAdapter(make_appwrapper(component(jobset), component(ray))).pod_sets()
    assert [(p.name, p.count) for p in pod_sets] == [("aw-0", 6), ("aw-1", 1), ("aw-2", 5)]
    assert pod_sets[0].topology_request == {
        "podIndexLabel": "batch.kubernetes.io/job-completion-index",
        "subGroupCount": 2,
        "subGroupIndexLabel": "jobset.sigs.k8s.io/job-index",
    }


def test_declared_pod_sets_win_over_inference_and_status_wins_over_both() -> None:
    crd = {
        "apiVersion": "example.com/v1",
        "kind": "Thing",
        "spec": {"pods": [{"template": {"spec": POD_SPEC}}]},
    }
    declared = [{"path": "template.spec.pods[0].template", "replicas": 4}]
    aw = make_appwrapper(component(crd, podSets=declared))
    assert [(p.name, p.count) for p in AppWrapperAdapter(aw).pod_sets()] == [("aw-0", 4)]
    aw["status"] = {
        "componentStatus": [
            {
                "name": "t",
                "kind": "Thing",
                "apiVersion": "example.com/v1",
                "podSets": [{"path": "template.spec.pods[0].template", "replicas": 2}],
            }
        ]
    }
    assert [(p.name, p.count) for p in AppWrapperAdapter(aw).pod_sets()] == [("aw-0", 2)]


def test_no_pod_sets_is_an_error_naming_components() -> None:
    with pytest.raises(AdapterError) as caught:
        AppWrapperAdapter(make_appwrapper(component(SERVICE))).pod_sets()
    assert caught.value.path == "spec.components"


@pytest.mark.parametrize(
    ("components", "path"),
    [
        (
            [
                component(
                    {"apiVersion": "x/v1", "kind": "T", "spec": {}},
                    podSets=[{"path": "template.spec.missing"}],
                )
            ],
            "spec.components[0].template.spec.missing",
        ),
        (
            [component({"apiVersion": "x/v1", "kind": "T"}, podSets=[{"replicas": 1}])],
            "spec.components[0].podSets[0].path",
        ),
        (
            [component({"apiVersion": "x/v1", "kind": "T"}, podSets=[{"path": "template..x"}])],
            "spec.components[0].podSets",
        ),
        (
            [component(batch_job() | {"spec": {"parallelism": "2"}})],
            "spec.components[0].template.spec.parallelism",
        ),
        (["not-a-component"], "spec.components[0]"),
        ([{"podSets": []}], "spec.components[0].template"),
    ],
)
def test_malformed_components_name_the_path(components, path) -> None:
    with pytest.raises(AdapterError) as caught:
        AppWrapperAdapter(make_appwrapper(*components)).pod_sets()
    assert caught.value.path == path


def test_run_writes_pod_set_infos_per_component_and_restore_clears_them() -> None:
    aw = make_appwrapper(component(SERVICE), component(pytorch_job()), component(POD))
    original = copy.deepcopy(aw)
    infos = [
        PodSetInfo(
            name=f"aw-{i}",
            count=1,
            labels={"kueue.x-k8s.io/podset": f"aw-{i}"},
            node_selector={"zone": "a"} if i else {},
        )
        for i in range(3)
    ]
    adapter = AppWrapperAdapter(aw)
    adapter.run_with_pod_sets_info(infos)
    assert aw["spec"]["suspend"] is False
    components = aw["spec"]["components"]
    assert "podSetInfos" not in components[0]
    assert components[1]["podSetInfos"] == [
        {"labels": {"kueue.x-k8s.io/podset": "aw-0"}},
        {"labels": {"kueue.x-k8s.io/podset": "aw-1"}, "nodeSelector": {"zone": "a"}},
    ]
    assert components[2]["podSetInfos"] == [
        {"labels": {"kueue.x-k8s.io/podset": "aw-2"}, "nodeSelector": {"zone": "a"}}
    ]
    adapter.suspend()
    assert adapter.restore_pod_sets_info([]) is True
    assert aw == original
    assert adapter.restore_pod_sets_info([]) is False


def test_run_with_wrong_info_count_writes_nothing() -> None:
    aw = make_appwrapper(component(pytorch_job()))
    before = copy.deepcopy(aw)
    with pytest.raises(PodSetInfoError, match=r"^invalid podset infos: expecting 2 podsets, got 1$"):
        AppWrapperAdapter(aw).run_with_pod_sets_info([PodSetInfo(name="aw-0", count=1)])
    assert aw == before


def cond(kind: str, status: str = "True") -> dict[str, str]:
    return {"type": kind, "status": status}


@pytest.mark.parametrize(
    ("status", "finished", "success", "message"),
    [
        ({}, False, False, ""),
        ({"phase": "Running"}, False, False, ""),
        ({"phase": "Succeeded"}, True, True, "AppWrapper finished successfully"),
        (
            {"phase": "Failed", "conditions": [cond("ResourcesDeployed")]},
            False,
            False,
            "Still deleting resources for failed AppWrapper",
        ),
        (
            {"phase": "Failed", "conditions": [cond("ResourcesDeployed", "False")]},
            True,
            False,
            "AppWrapper failed",
        ),
        ({"phase": "Failed"}, True, False, "AppWrapper failed"),
    ],
)
def test_finished(status, finished, success, message) -> None:
    state = AppWrapperAdapter(make_appwrapper(component(POD), status=status)).finished()
    assert (state.finished, state.success, state.message) == (finished, success, message)


def test_active_and_pods_ready_follow_conditions() -> None:
    aw = make_appwrapper(
        component(POD), status={"conditions": [cond("QuotaReserved"), cond("PodsReady", "False")]}
    )
    adapter = AppWrapperAdapter(aw)
    assert (adapter.is_active(), adapter.pods_ready()) == (True, False)
    aw["status"]["conditions"] = [cond("QuotaReserved", "False"), cond("PodsReady")]
    assert (adapter.is_active(), adapter.pods_ready()) == (False, True)


def test_managed_by() -> None:
    aw = make_appwrapper(component(POD))
    adapter = AppWrapperAdapter(aw)
    assert adapter.can_default_managed_by() is True
    adapter.set_managed_by("workload.codeflare.dev/appwrapper-controller")
    assert adapter.can_default_managed_by() is True
    adapter.set_managed_by("kueue.x-k8s.io/multikueue")
    assert (adapter.can_default_managed_by(), adapter.managed_by()) == (False, "kueue.x-k8s.io/multikueue")
