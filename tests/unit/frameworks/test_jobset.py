"""JobSet adapter (Kueue's jobset_controller.go), and the declarative adapter reproducing it exactly."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from shared.frameworks.base import (
    AdapterError,
    GenericJob,
    JobWithManagedBy,
    JobWithPodLabelSelector,
    JobWithPriorityClass,
    JobWithReclaimablePods,
    ReclaimablePodCount,
)
from shared.frameworks.declarative import DeclarativeFramework
from shared.frameworks.jobset import JobSetAdapter
from shared.kueue.podset import PodSetInfo, PodSetInfoError, pod_set_info_from_pod_set
from tests.unit.frameworks.jobset_objects import JOBSET_DECLARATIVE_SPEC, JOBSET_LIKE_GVK, make_jobset

INDEX = "batch.kubernetes.io/job-completion-index"
JOB_INDEX = "jobset.sigs.k8s.io/job-index"


def info(name: str, zone: str) -> PodSetInfo:
    return PodSetInfo(
        name=name, count=1, labels={"kueue.x-k8s.io/podset": name}, node_selector={"zone": zone}
    )


INFOS = [info("driver", "a"), info("workers", "b"), info("ps", "c")]


def test_interfaces() -> None:
    adapter = JobSetAdapter(make_jobset())
    for protocol in (GenericJob, JobWithReclaimablePods, JobWithManagedBy, JobWithPodLabelSelector):
        assert isinstance(adapter, protocol)


def test_pod_sets_one_per_replicated_job() -> None:
    jobset = make_jobset()
    pod_sets = [pod_set.to_wire() for pod_set in JobSetAdapter(jobset).pod_sets()]
    assert [(p["name"], p["count"]) for p in pod_sets] == [("driver", 1), ("workers", 6), ("ps", 4)]
    assert pod_sets[0]["template"] == jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    assert pod_sets[0]["topologyRequest"] == {
        "podIndexLabel": INDEX,
        "subGroupCount": 1,
        "subGroupIndexLabel": JOB_INDEX,
    }
    assert pod_sets[1]["topologyRequest"] == {
        "required": "cloud.com/rack",
        "podIndexLabel": INDEX,
        "subGroupCount": 3,
        "subGroupIndexLabel": JOB_INDEX,
    }


def test_declarative_spec_for_jobset_produces_exactly_the_builtin_pod_sets() -> None:
    builtin = JobSetAdapter(make_jobset()).pod_sets()
    declarative = DeclarativeFramework(JOBSET_DECLARATIVE_SPEC, gvk=JOBSET_LIKE_GVK)(make_jobset()).pod_sets()
    assert [p.to_wire() for p in declarative] == [p.to_wire() for p in builtin]


@pytest.mark.parametrize(
    "status",
    [
        None,
        {"conditions": [{"type": "Completed", "status": "True", "message": "jobset completed"}]},
        {"conditions": [{"type": "Failed", "status": "True", "message": "boom"}]},
        {"conditions": [{"type": "Completed", "status": "False", "message": ""}]},
        {"replicatedJobsStatus": [{"name": "workers", "active": 2, "ready": 1, "succeeded": 0}]},
        {"replicatedJobsStatus": [{"name": "workers", "active": 0}]},
    ],
)
def test_declarative_jobset_agrees_with_builtin_on_state(status: dict[str, Any] | None) -> None:
    builtin = JobSetAdapter(make_jobset(status=status))
    declarative = DeclarativeFramework(JOBSET_DECLARATIVE_SPEC, gvk=JOBSET_LIKE_GVK)(
        make_jobset(status=status)
    )
    assert declarative.finished() == builtin.finished()
    assert declarative.is_active() == builtin.is_active()
    assert declarative.is_suspended() == builtin.is_suspended()
    assert isinstance(declarative, JobWithManagedBy)
    assert not isinstance(declarative, JobWithPriorityClass)
    assert declarative.can_default_managed_by() == builtin.can_default_managed_by()


def test_declarative_and_builtin_run_and_restore_identically() -> None:
    builtin_obj, declarative_obj = make_jobset(), make_jobset()
    original = copy.deepcopy(builtin_obj)
    declarative = DeclarativeFramework(JOBSET_DECLARATIVE_SPEC, gvk=JOBSET_LIKE_GVK)(declarative_obj)
    JobSetAdapter(builtin_obj).run_with_pod_sets_info(INFOS)
    declarative.run_with_pod_sets_info(INFOS)
    assert builtin_obj == declarative_obj
    assert builtin_obj["spec"]["suspend"] is False
    restore = [pod_set_info_from_pod_set(p) for p in JobSetAdapter(original).pod_sets()]
    JobSetAdapter(builtin_obj).suspend()
    declarative.suspend()
    assert JobSetAdapter(builtin_obj).restore_pod_sets_info(restore) is True
    assert declarative.restore_pod_sets_info(restore) is True
    assert builtin_obj == declarative_obj == original


def test_run_injects_each_info_into_its_replicated_job() -> None:
    jobset = make_jobset()
    JobSetAdapter(jobset).run_with_pod_sets_info(INFOS)
    zones = [
        rj["template"]["spec"]["template"]["spec"]["nodeSelector"]["zone"]
        for rj in jobset["spec"]["replicatedJobs"]
    ]
    assert zones == ["a", "b", "c"]


def test_run_with_wrong_info_count_is_permanent() -> None:
    with pytest.raises(PodSetInfoError, match=r"^invalid podset infos: expecting 3 podset, got 2$"):
        JobSetAdapter(make_jobset()).run_with_pod_sets_info(INFOS[:2])


def test_restore_with_wrong_info_count_changes_nothing() -> None:
    jobset = make_jobset()
    before = copy.deepcopy(jobset)
    assert JobSetAdapter(jobset).restore_pod_sets_info(INFOS[:1]) is False
    assert jobset == before


@pytest.mark.parametrize(
    ("statuses", "ready"),
    [
        ([], False),
        (
            [
                {"name": "driver", "ready": 1},
                {"name": "workers", "ready": 2, "succeeded": 1},
                {"name": "ps", "ready": 2},
            ],
            True,
        ),
        ([{"name": "driver", "ready": 1}, {"name": "workers", "ready": 3}], False),
    ],
)
def test_pods_ready_counts_replicas(statuses, ready) -> None:
    assert JobSetAdapter(make_jobset(status={"replicatedJobsStatus": statuses})).pods_ready() is ready


def test_reclaimable_pods() -> None:
    status = {
        "replicatedJobsStatus": [
            {"name": "driver", "succeeded": 0},
            {"name": "workers", "succeeded": 2},
            {"name": "ps", "succeeded": 5},  # more than replicas: ignored, as Kueue does
        ]
    }
    assert JobSetAdapter(make_jobset(status=status)).reclaimable_pods() == [ReclaimablePodCount("workers", 4)]
    assert JobSetAdapter(make_jobset()).reclaimable_pods() == []


def test_managed_by_and_selector() -> None:
    jobset = make_jobset()
    adapter = JobSetAdapter(jobset)
    assert adapter.can_default_managed_by() is True
    adapter.set_managed_by("kueue.x-k8s.io/multikueue")
    assert adapter.can_default_managed_by() is False
    adapter.set_managed_by(None)
    assert "managedBy" not in jobset["spec"]
    assert adapter.pod_label_selector() == "jobset.sigs.k8s.io/jobset-name=train"


@pytest.mark.parametrize(
    ("mutate", "call", "path"),
    [
        (lambda j: j["spec"].update(replicatedJobs={}), "pod_sets", "spec.replicatedJobs"),
        (lambda j: j["spec"]["replicatedJobs"].append("x"), "pod_sets", "spec.replicatedJobs[3]"),
        (lambda j: j["spec"]["replicatedJobs"][1].pop("name"), "pod_sets", "spec.replicatedJobs[1].name"),
        (
            lambda j: j["spec"]["replicatedJobs"][1].update(replicas="3"),
            "pod_sets",
            "spec.replicatedJobs[1].replicas",
        ),
        (
            lambda j: j["spec"]["replicatedJobs"][1]["template"]["spec"].update(
                parallelism=None, completions="2"
            ),
            "pod_sets",
            "spec.replicatedJobs[1].template.spec.completions",
        ),
        (
            lambda j: j["spec"]["replicatedJobs"][2]["template"].pop("spec"),
            "pod_sets",
            "spec.replicatedJobs[2].template.spec",
        ),
        (
            lambda j: j.update(status={"replicatedJobsStatus": [1]}),
            "is_active",
            "status.replicatedJobsStatus[0]",
        ),
        (
            lambda j: j.update(status={"replicatedJobsStatus": [{"active": "1"}]}),
            "is_active",
            "status.replicatedJobsStatus[0].active",
        ),
        (lambda j: j.update(status={"conditions": "Completed"}), "finished", "status.conditions"),
        (lambda j: j["spec"].update(suspend=1), "is_suspended", "spec.suspend"),
    ],
)
def test_malformed_jobset_names_the_path(mutate, call, path) -> None:
    jobset = make_jobset()
    mutate(jobset)
    with pytest.raises(AdapterError) as caught:
        getattr(JobSetAdapter(jobset), call)()
    assert caught.value.path == path
