"""The golden Job's whole life through the reconciler: create, admit, deactivate, finish, delete."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from reconciler.job_reconciler import JobReconciler
from reconciler.ports import JobStillActiveError
from shared.frameworks.base import GenericJob, StopStep
from shared.frameworks.batch_job import BatchJobAdapter
from shared.kueue.podset import PodSetInfo
from tests.unit.reconciler.conftest import UID, admit, golden_job, job_key, set_condition
from tests.unit.reconciler.fakes import FakeCluster

WORKLOAD = "job-sample-43252"
WAIT_FOR_START = ("False", "WaitForStart", "Not all pods are ready or succeeded")


def condition_of(obj: dict[str, Any], condition_type: str) -> tuple[str, str, str] | None:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition["type"] == condition_type:
            return condition["status"], condition["reason"], condition["message"]
    return None


async def run_admitted_golden_job(cluster: FakeCluster, reconciler: JobReconciler) -> dict[str, Any]:
    """The golden job created, given its Workload, admitted as Kueue does, and started."""
    job = golden_job()
    cluster.add(job)
    await converge(reconciler)
    admit(cluster, WORKLOAD)
    await converge(reconciler)
    return job


def evict(cluster: FakeCluster, *, reason: str, message: str) -> None:
    """Kueue's workload controller / preemptor: Evicted=True on the golden Workload."""
    set_condition(
        cluster,
        WORKLOAD,
        {
            "type": "Evicted",
            "status": "True",
            "reason": reason,
            "message": message,
            "lastTransitionTime": "2026-11-22T02:34:14Z",
        },
    )


async def converge(reconciler: JobReconciler, *, rounds: int = 6) -> None:
    """Reconcile ``rounds`` times; a stop waiting for the job's pods is requeued, as the controller does."""
    for _ in range(rounds):
        with contextlib.suppress(JobStillActiveError):
            await reconciler.reconcile(job_key())


async def test_creates_the_workload_kueue_would_create(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    cluster.add(golden_job())
    await reconciler.reconcile(job_key())
    workload = cluster.find("Workload", "golden", WORKLOAD)
    assert workload is not None, [w.name for w in cluster.writes]
    assert workload["metadata"]["labels"] == {"kueue.x-k8s.io/job-uid": UID}
    assert workload["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]
    assert workload["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "sample",
            "uid": UID,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert workload["spec"]["queueName"] == "golden-q"
    assert workload["spec"]["priority"] == 0
    assert workload["spec"]["podSets"][0]["count"] == 2
    assert "controller-uid" not in workload["spec"]["podSets"][0]["template"]["metadata"]["labels"]
    assert cluster.events[-1].reason == "CreatedWorkload"
    assert cluster.events[-1].message == f"Created Workload: golden/{WORKLOAD}"


async def test_pending_workload_gets_pods_ready_wait_for_start(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    cluster.add(golden_job())
    await converge(reconciler)
    workload = cluster.find("Workload", "golden", WORKLOAD)
    assert workload is not None
    assert condition_of(workload, "PodsReady") == WAIT_FOR_START
    writes_before = len(cluster.writes)
    await converge(reconciler)
    assert len(cluster.writes) == writes_before, "a converged job makes no more API writes"


async def test_a_workload_admitted_before_its_wait_for_start_gets_it_before_the_job_starts(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    """Kueue admits the new Workload before the pass that writes ``PodsReady=False WaitForStart``:
    as Kueue's step 5, that pass writes the condition and returns; the next one starts the job."""
    cluster.add(golden_job())
    await reconciler.reconcile(job_key())
    admit(cluster, WORKLOAD)
    writes_before = len(cluster.writes)
    await reconciler.reconcile(job_key())
    assert [(w.kind, w.subresource) for w in cluster.writes[writes_before:]] == [("Workload", "status")]
    workload = cluster.find("Workload", "golden", WORKLOAD)
    assert workload is not None
    assert condition_of(workload, "PodsReady") == WAIT_FOR_START
    job = cluster.find("Job", "golden", "sample")
    assert job is not None and job["spec"]["suspend"] is True
    await reconciler.reconcile(job_key())
    job = cluster.find("Job", "golden", "sample")
    assert job is not None and job["spec"]["suspend"] is False
    assert [e.message for e in cluster.events if e.reason == "Started"] == [
        "Admitted by clusterQueue golden-cq"
    ]


async def test_admission_starts_the_job_like_kueue(cluster: FakeCluster, reconciler: JobReconciler) -> None:
    await run_admitted_golden_job(cluster, reconciler)
    job = cluster.find("Job", "golden", "sample")
    assert job is not None
    assert job["spec"]["suspend"] is False
    template = job["spec"]["template"]
    assert template["spec"]["nodeSelector"] == {"instance-type": "spot", "zone": "a"}
    assert template["spec"]["tolerations"] == [{"effect": "NoSchedule", "key": "spot", "operator": "Exists"}]
    assert template["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "main"
    assert template["metadata"]["labels"]["kueue.x-k8s.io/local-queue-name"] == "golden-q"
    assert template["metadata"]["labels"]["kueue.x-k8s.io/cluster-queue-name"] == "golden-cq"
    assert template["metadata"]["annotations"] == {"team": "ml", "kueue.x-k8s.io/workload": WORKLOAD}
    started = [e for e in cluster.events if e.reason == "Started"]
    assert [e.message for e in started] == ["Admitted by clusterQueue golden-cq"]


async def test_deactivation_stops_and_restores_exactly(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    original = await run_admitted_golden_job(cluster, reconciler)
    evict(cluster, reason="Deactivated", message="The workload is deactivated")
    await converge(reconciler)
    job = cluster.find("Job", "golden", "sample")
    assert job is not None
    assert job["spec"]["suspend"] is True
    assert job["spec"]["template"] == original["spec"]["template"], "templates restored exactly"
    assert "kueue.x-k8s.io/stopping" not in (job["metadata"].get("annotations") or {})
    stopped = [e for e in cluster.events if e.reason == "Stopped"]
    assert [e.message for e in stopped] == ["The workload is deactivated"]
    workload = cluster.find("Workload", "golden", WORKLOAD)
    assert workload is not None
    assert "admission" not in workload["status"]
    assert condition_of(workload, "Requeued") == ("False", "Deactivated", "The workload is deactivated")
    assert condition_of(workload, "QuotaReserved") == (
        "False",
        "PendingEvaluation",
        "The workload is deactivated",
    )
    assert condition_of(workload, "Admitted") == ("False", "NoReservation", "The workload has no reservation")


async def test_preemption_requeues(cluster: FakeCluster, reconciler: JobReconciler) -> None:
    await run_admitted_golden_job(cluster, reconciler)
    evict(cluster, reason="Preempted", message="Preempted to accommodate a workload")
    await converge(reconciler)
    workload = cluster.find("Workload", "golden", WORKLOAD)
    assert workload is not None
    assert condition_of(workload, "Requeued") == ("True", "Preempted", "Preempted to accommodate a workload")


async def test_quota_is_kept_while_pods_are_active(cluster: FakeCluster, reconciler: JobReconciler) -> None:
    await run_admitted_golden_job(cluster, reconciler)
    job_key_tuple = next(k for k in cluster.objects if k[1] == "Job")
    cluster.objects[job_key_tuple]["status"] = {"active": 2}
    evict(cluster, reason="Preempted", message="preempted")
    await converge(reconciler)
    workload = cluster.find("Workload", "golden", WORKLOAD)
    assert workload is not None
    assert "admission" in workload["status"], "quota released only once the job has no active pods"
    cluster.objects[job_key_tuple]["status"] = {}
    await converge(reconciler)
    workload = cluster.find("Workload", "golden", WORKLOAD)
    assert workload is not None
    assert "admission" not in workload["status"]


async def test_finished_job_finishes_the_workload_then_releases_it(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    await run_admitted_golden_job(cluster, reconciler)
    job_key_tuple = next(k for k in cluster.objects if k[1] == "Job")
    cluster.objects[job_key_tuple]["status"] = {
        "succeeded": 4,
        "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True"},
            {"type": "Complete", "status": "True", "message": "Reached expected number of succeeded pods"},
        ],
    }
    await reconciler.reconcile(job_key())
    workload = cluster.find("Workload", "golden", WORKLOAD)
    assert workload is not None
    assert condition_of(workload, "Finished") == (
        "True",
        "Succeeded",
        "Reached expected number of succeeded pods",
    )
    assert workload["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use"], (
        "finalizer goes on the next pass"
    )
    await reconciler.reconcile(job_key())
    workload = cluster.find("Workload", "golden", WORKLOAD)
    assert workload is not None
    assert workload["metadata"]["finalizers"] == []
    finished = [e.message for e in cluster.events if e.reason == "FinishedWorkload"]
    assert finished[0] == f"Workload 'golden/{WORKLOAD}' is declared finished"


async def test_deleted_job_orphans_are_finished_and_released(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    cluster.add(golden_job())
    await converge(reconciler)
    del cluster.objects[next(k for k in cluster.objects if k[1] == "Job")]
    await reconciler.reconcile(job_key())
    workload = cluster.find("Workload", "golden", WORKLOAD)
    assert workload is not None
    assert condition_of(workload, "Finished") == (
        "True",
        "OwnerNotFound",
        "The workload's owner no longer exists",
    )
    assert workload["metadata"]["finalizers"] == []


@pytest.mark.parametrize("queue", [None, ""])
async def test_job_without_queue_name_is_ignored(
    cluster: FakeCluster, reconciler: JobReconciler, queue: str | None
) -> None:
    cluster.add(golden_job(queue=queue))
    await converge(reconciler)
    assert cluster.writes == []


async def test_namespace_not_selected_is_ignored(
    cluster: FakeCluster, make_reconciler: Callable[..., JobReconciler]
) -> None:
    class NoNamespaces:
        def matches(self, labels: dict[str, str]) -> bool:
            return False

    cluster.add(golden_job())
    await make_reconciler(namespace_selector=NoNamespaces()).reconcile(job_key())
    assert cluster.writes == []


async def test_running_job_without_workload_is_stopped(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    cluster.add(golden_job(suspend=False))
    await reconciler.reconcile(job_key())
    job = cluster.find("Job", "golden", "sample")
    assert job is not None
    assert job["spec"]["suspend"] is True
    assert [e.message for e in cluster.events if e.reason == "Stopped"] == [
        "Missing Workload; unable to restore pod templates"
    ]


async def test_workload_created_after_a_stop_reflects_the_stopped_job(
    cluster: FakeCluster, make_reconciler: Callable[..., JobReconciler]
) -> None:
    """As Kueue (``PodSets()`` is read again in ``handleJobWithNoWorkload``): pod sets computed before
    the stop in the same pass are not reused when stopping changed the job."""

    class ShrinkOnSuspend(BatchJobAdapter):
        def stop_steps(self, infos: Sequence[PodSetInfo]) -> list[StopStep]:
            steps = super().stop_steps(infos)
            if self.obj["spec"].get("parallelism") != 1:
                steps.append(StopStep({"spec": {"parallelism": 1}}, phase="restore"))
            return steps

    class ShrinkingAdapters:
        def adapter_for(self, obj: dict[str, Any]) -> GenericJob:
            return ShrinkOnSuspend(obj)

    cluster.add(golden_job(suspend=False))
    await make_reconciler(adapters=ShrinkingAdapters()).reconcile(job_key())
    workload = cluster.find("Workload", "golden", WORKLOAD)
    assert workload is not None
    assert [pod_set["count"] for pod_set in workload["spec"]["podSets"]] == [1]


async def test_stale_job_write_surfaces_conflict(cluster: FakeCluster, reconciler: JobReconciler) -> None:
    """A decision taken on a stale read must not be applied: the resourceVersion lock trips."""
    from reconciler.ports import ConflictError

    cluster.add(golden_job(suspend=False))
    original_get = cluster.get

    async def stale_get(gvk, namespace, name):
        obj = await original_get(gvk, namespace, name)
        if obj is not None and gvk.kind == "Job":
            obj = copy.deepcopy(obj)
            obj["metadata"]["resourceVersion"] = "1"
        return obj

    cluster.get = stale_get  # type: ignore[method-assign]
    with pytest.raises(ConflictError):
        await reconciler.reconcile(job_key())
