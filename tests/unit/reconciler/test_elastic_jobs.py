"""Elastic batch Jobs through the reconciler, against Kueue's workload-slice behaviour.

The golden Job annotated ``kueue.x-k8s.io/elastic-job: "true"``: its slices are named with its
generation, a scale-up of the running Job creates a replacement slice without stopping it, Kueue's
scheduler (played here by ``scheduler_replaces``) admits the replacement and retires the old slice,
and a scale-down resizes the admitted slice in place.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from reconciler.job_reconciler import JobReconciler
from reconciler.manager import settings_from_config
from reconciler.ports import JobStillActiveError
from reconciler.workload_sync import NoMatchingWorkloadsError
from shared.config import parse_config
from shared.frameworks.base import GenericJob
from shared.frameworks.batch_job import BatchJobAdapter
from shared.frameworks.registry import FrameworkRegistry
from shared.kueue.workload_slicing import scheduler_replaced_message_for
from shared.models.workload import PodSet, Workload
from tests.unit.reconciler.conftest import UID, admit, golden_job, job_key, set_condition
from tests.unit.reconciler.fakes import FakeCluster

#: ``kueue_elastic_name`` in tests/unit/kueue/test_workload_slicing.py pins these against Kueue
FIRST_SLICE = "job-sample-7cb26"  # generation 1: as created
#: generation 3: the reconciler's start (unsuspend + template) was 2, the user's scale-up 3
SECOND_SLICE = "job-sample-2aa77"
PLAIN = "job-sample-43252"  # no generation hashed in

ELASTIC = "kueue.x-k8s.io/elastic-job"
SLICE_NAME = "kueue.x-k8s.io/workload-slice-name"
REPLACEMENT_FOR = "kueue.x-k8s.io/workload-slice-replacement-for"


def elastic_golden_job(**kwargs: Any) -> dict[str, Any]:
    job = golden_job(**kwargs)
    job["metadata"]["annotations"] = {ELASTIC: "true"}
    job["spec"]["template"]["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/elastic-job"}]
    return job


async def converge(reconciler: JobReconciler, *, rounds: int = 6) -> None:
    for _ in range(rounds):
        await reconciler.reconcile(job_key())


def workloads(cluster: FakeCluster) -> dict[str, dict[str, Any]]:
    return {wl["metadata"]["name"]: wl for wl in cluster.of_kind("Workload")}


def condition_of(obj: dict[str, Any], condition_type: str) -> tuple[str, str, str] | None:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition["type"] == condition_type:
            return condition["status"], condition["reason"], condition["message"]
    return None


def job_of(cluster: FakeCluster) -> dict[str, Any]:
    job = cluster.find("Job", "golden", "sample")
    assert job is not None
    return job


def scale(cluster: FakeCluster, *, parallelism: int, active: int) -> None:
    """The user changes ``spec.parallelism`` of the running Job; the API server bumps the generation."""
    key = next(k for k in cluster.objects if k[1] == "Job")
    stored = cluster.objects[key]
    stored["spec"]["parallelism"] = parallelism
    stored["metadata"]["generation"] += 1
    stored["status"] = {"active": active}
    stored["metadata"]["resourceVersion"] = str(int(stored["metadata"]["resourceVersion"]) + 1000)


def admit_slice(cluster: FakeCluster, name: str) -> None:
    """Kueue's scheduler admits slice ``name`` with the count its spec asks for."""
    admit(cluster, name)
    key = next(k for k in cluster.objects if k[1] == "Workload" and k[3] == name)
    stored = cluster.objects[key]
    stored["status"]["admission"]["podSetAssignments"][0]["count"] = stored["spec"]["podSets"][0]["count"]


def scheduler_replaces(cluster: FakeCluster, *, new: str, old: str) -> None:
    """``Scheduler.replaceWorkloadSlice``: admit ``new``, finish ``old`` ``WorkloadSliceReplaced``."""
    admit_slice(cluster, new)
    replacement = Workload.from_wire(workloads(cluster)[new])
    set_condition(
        cluster,
        old,
        {
            "type": "Finished",
            "status": "True",
            "reason": "WorkloadSliceReplaced",
            "message": scheduler_replaced_message_for(replacement),
            "lastTransitionTime": "2026-11-22T02:35:00Z",
        },
    )


async def run_elastic_job(cluster: FakeCluster, reconciler: JobReconciler) -> None:
    cluster.add(elastic_golden_job())
    await converge(reconciler)
    admit_slice(cluster, FIRST_SLICE)
    await converge(reconciler)
    assert job_of(cluster)["spec"]["suspend"] is False


async def test_first_slice_is_named_with_the_generation_and_annotated(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    cluster.add(elastic_golden_job())
    await reconciler.reconcile(job_key())
    assert list(workloads(cluster)) == [FIRST_SLICE]
    created = workloads(cluster)[FIRST_SLICE]
    assert created["metadata"]["annotations"] == {ELASTIC: "true", SLICE_NAME: FIRST_SLICE}
    assert [e.message for e in cluster.events if e.reason == "CreatedWorkload"] == [
        f"Created Workload: golden/{FIRST_SLICE}"
    ]


async def test_the_gate_off_makes_the_annotation_meaningless(
    cluster: FakeCluster, make_reconciler: Callable[..., JobReconciler]
) -> None:
    reconciler = make_reconciler(elastic_jobs_via_workload_slices=False)
    cluster.add(elastic_golden_job())
    await reconciler.reconcile(job_key())
    assert list(workloads(cluster)) == [PLAIN]
    assert workloads(cluster)[PLAIN]["metadata"].get("annotations") is None


async def test_start_stamps_the_chain_name_on_the_pod_template(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    await run_elastic_job(cluster, reconciler)
    annotations = job_of(cluster)["spec"]["template"]["metadata"]["annotations"]
    assert annotations[SLICE_NAME] == FIRST_SLICE
    assert annotations["kueue.x-k8s.io/workload"] == FIRST_SLICE


async def test_scale_up_creates_a_replacement_slice_and_keeps_the_job_running(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    await run_elastic_job(cluster, reconciler)
    template_before = job_of(cluster)["spec"]["template"]
    scale(cluster, parallelism=4, active=2)
    assert job_of(cluster)["metadata"]["generation"] == 3
    await reconciler.reconcile(job_key())

    assert sorted(workloads(cluster)) == sorted([FIRST_SLICE, SECOND_SLICE])
    new = workloads(cluster)[SECOND_SLICE]
    assert new["metadata"]["annotations"] == {
        ELASTIC: "true",
        REPLACEMENT_FOR: f"golden/{FIRST_SLICE}",
        SLICE_NAME: FIRST_SLICE,
    }
    assert new["spec"]["podSets"][0]["count"] == 4
    old = workloads(cluster)[FIRST_SLICE]
    assert old["spec"]["podSets"][0]["count"] == 2, "the admitted slice is left as it is"
    assert condition_of(old, "Admitted") == ("True", "Admitted", "The workload is admitted")

    await converge(reconciler)  # the replacement waits for quota: nothing may stop the job
    job = job_of(cluster)
    assert job["spec"]["suspend"] is False
    assert job["spec"]["template"] == template_before
    assert not [e for e in cluster.events if e.reason in ("Stopped", "DeletedWorkload")]
    assert condition_of(workloads(cluster)[SECOND_SLICE], "PodsReady") == (
        "False",
        "WaitForStart",
        "Not all pods are ready or succeeded",
    )
    assert condition_of(workloads(cluster)[FIRST_SLICE], "Finished") is None


async def test_scheduler_replacement_retires_the_old_slice_and_the_job_runs_on(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    await run_elastic_job(cluster, reconciler)
    scale(cluster, parallelism=4, active=2)
    await converge(reconciler)
    scheduler_replaces(cluster, new=SECOND_SLICE, old=FIRST_SLICE)
    writes_before = len(cluster.writes)

    await converge(reconciler)
    old = workloads(cluster)[FIRST_SLICE]
    new_uid = workloads(cluster)[SECOND_SLICE]["metadata"]["uid"]
    assert condition_of(old, "Finished") == (
        "True",
        "WorkloadSliceReplaced",
        f"Replaced to accommodate a workload (UID: {new_uid}, JobUID: {UID}) due to workload slice aggregation",
    )
    assert old["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use"], (
        "as in Kueue, a replaced slice keeps its finalizer until the job is deleted"
    )
    assert job_of(cluster)["spec"]["suspend"] is False
    assert len(cluster.writes) == writes_before, "running with its admitted slice: nothing to do"
    assert not [e for e in cluster.events if e.reason == "Stopped"]


async def test_reconciler_retires_a_replaced_slice_the_scheduler_left_behind(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    await run_elastic_job(cluster, reconciler)
    scale(cluster, parallelism=4, active=2)
    await converge(reconciler)
    admit_slice(cluster, SECOND_SLICE)  # admitted, but the old slice not finished (yet)
    await reconciler.reconcile(job_key())
    assert condition_of(workloads(cluster)[FIRST_SLICE], "Finished") == (
        "True",
        "WorkloadSliceReplaced",
        "Replaced to accommodate a new workload slice",
    )
    assert job_of(cluster)["spec"]["suspend"] is False


async def test_scale_down_updates_the_admitted_slice_in_place(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    await run_elastic_job(cluster, reconciler)
    scale(cluster, parallelism=1, active=2)
    await converge(reconciler)
    assert list(workloads(cluster)) == [FIRST_SLICE], "no new slice for a scale-down"
    current = workloads(cluster)[FIRST_SLICE]
    assert current["spec"]["podSets"][0]["count"] == 1
    assert condition_of(current, "QuotaReserved") == (
        "True",
        "QuotaReserved",
        "Quota reserved in ClusterQueue golden-cq",
    )
    assert job_of(cluster)["spec"]["suspend"] is False
    assert not [e for e in cluster.events if e.reason == "Stopped"]


async def test_pending_slice_follows_the_job_in_place(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    cluster.add(elastic_golden_job())
    await converge(reconciler)
    scale(cluster, parallelism=3, active=0)
    await converge(reconciler)
    assert list(workloads(cluster)) == [FIRST_SLICE], "a slice without quota is resized, not replaced"
    assert workloads(cluster)[FIRST_SLICE]["spec"]["podSets"][0]["count"] == 3


async def test_with_the_gate_off_a_scale_up_is_an_ordinary_mismatch(
    cluster: FakeCluster, make_reconciler: Callable[..., JobReconciler]
) -> None:
    reconciler = make_reconciler(elastic_jobs_via_workload_slices=False)
    cluster.add(elastic_golden_job())
    await converge(reconciler)
    admit_slice(cluster, PLAIN)
    await converge(reconciler)
    scale(cluster, parallelism=4, active=2)
    # the template is restored (and Stopped recorded) once the job controller reports no active
    # pod; until then the stop fails as Kueue's restore write does, before the Workload is deleted
    with pytest.raises(JobStillActiveError):
        await reconciler.reconcile(job_key())
    assert job_of(cluster)["spec"]["suspend"] is True
    assert job_of(cluster)["metadata"]["annotations"]["kueue.x-k8s.io/stopping"] == "true"
    assert not [e for e in cluster.events if e.reason == "Stopped"]
    assert list(workloads(cluster)) == [PLAIN], "the Workload to restore from is kept"
    scale(cluster, parallelism=4, active=0)
    with pytest.raises(NoMatchingWorkloadsError):  # Kueue returns ErrNoMatchingWorkloads: requeued
        await reconciler.reconcile(job_key())
    assert "kueue.x-k8s.io/stopping" not in (job_of(cluster)["metadata"].get("annotations") or {})
    assert [e.message for e in cluster.events if e.reason == "Stopped"] == [
        "No matching Workload; restoring pod templates according to existent Workload"
    ]


async def test_child_of_an_elastic_parent_is_suspended_only_on_eviction(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    cluster.add(elastic_golden_job())
    await converge(reconciler)  # the parent's slice exists but is not admitted
    parent = job_of(cluster)
    child = golden_job(name="child", uid="child-uid", suspend=False, queue=None)
    child["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "sample", "uid": UID, "controller": True}
    ]
    cluster.add(child)
    child_key = job_key("child")
    await reconciler.reconcile(child_key)
    stored_child = cluster.find("Job", "golden", "child")
    assert stored_child is not None and stored_child["spec"]["suspend"] is False, parent["metadata"]

    set_condition(
        cluster,
        FIRST_SLICE,
        {
            "type": "Evicted",
            "status": "True",
            "reason": "Preempted",
            "message": "Preempted to accommodate a workload",
            "lastTransitionTime": "2026-11-22T02:35:00Z",
        },
    )
    await reconciler.reconcile(child_key)
    stored_child = cluster.find("Job", "golden", "child")
    assert stored_child is not None and stored_child["spec"]["suspend"] is True


@pytest.mark.parametrize("gate", [None, True, False])
def test_the_reconciler_reads_the_gate_from_feature_gates(gate: bool | None) -> None:
    text = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
    if gate is not None:
        text += f"featureGates:\n  ElasticJobsViaWorkloadSlices: {str(gate).lower()}\n"
    config = parse_config(text, source="config.yaml")
    registry = FrameworkRegistry.from_managed_kinds(config.managed_kinds())
    settings = settings_from_config(config, registry=registry)
    assert settings.elastic_jobs_via_workload_slices is (True if gate is None else gate)


class RenamedPodSet(BatchJobAdapter):
    """A batch Job whose pod set is named by an annotation (stands for any kind whose pod set
    names can change, which takes an elastic job off the slice path)."""

    def pod_sets(self) -> list[PodSet]:
        pod_sets = super().pod_sets()
        pod_sets[0].name = (self.obj["metadata"].get("annotations") or {}).get("example.com/pod-set", "main")
        return pod_sets


async def test_renamed_pod_sets_fall_back_to_ordinary_matching_as_kueue(
    cluster: FakeCluster, make_reconciler: Callable[..., JobReconciler]
) -> None:
    class Adapters:
        def adapter_for(self, obj: dict[str, Any]) -> GenericJob:
            return RenamedPodSet(obj)

    reconciler = make_reconciler(adapters=Adapters())
    cluster.add(elastic_golden_job())
    await converge(reconciler)
    key = next(k for k in cluster.objects if k[3] == FIRST_SLICE)
    cluster.objects[key]["spec"]["active"] = False
    job = next(k for k in cluster.objects if k[1] == "Job")
    cluster.objects[job]["metadata"]["annotations"]["example.com/pod-set"] = "workers"
    cluster.objects[job]["spec"]["parallelism"] = 3  # ComparePodSets ignores names; the count differs
    await reconciler.reconcile(job_key())
    updated = workloads(cluster)[FIRST_SLICE]
    assert [(p["name"], p["count"]) for p in updated["spec"]["podSets"]] == [("workers", 3)]
    # Kueue's updateWorkloadToMatchJob takes prepareWorkloadSlice's branch, which skips keeping
    # spec.active: the update drops it (the API server defaults it to true again)
    assert "active" not in updated["spec"]
    assert [e.message for e in cluster.events if e.reason == "UpdatedWorkload"] == [
        f"Updated not matching Workload for suspended job: golden/{FIRST_SLICE}"
    ]
