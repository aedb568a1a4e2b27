"""Reconcile-table cases beyond the happy path: children, mismatches, prebuilt, priority, bad jobs."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.ancestry import ChainLimitReachedError, CyclicOwnershipError
from reconciler.job_reconciler import JobReconciler
from reconciler.priority import PriorityClassNotFoundError
from reconciler.workload_sync import NoMatchingWorkloadsError, PrebuiltWorkloadNotFoundError
from tests.unit.reconciler.conftest import UID, admit, golden_job, job_key
from tests.unit.reconciler.fakes import FakeCluster
from tests.unit.reconciler.test_job_lifecycle import WORKLOAD, condition_of, converge


def jobset(
    name: str, *, uid: str, queue: str | None = "golden-q", owner: dict[str, Any] | None = None
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": "golden", "uid": uid, "labels": {}}
    if queue:
        metadata["labels"]["kueue.x-k8s.io/queue-name"] = queue
    if owner:
        metadata["ownerReferences"] = [owner]
    return {"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": metadata, "spec": {}}


def owned_by(
    name: str, uid: str, kind: str = "JobSet", api_version: str = "jobset.x-k8s.io/v1alpha2"
) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": True}


def job_with_owner(
    owner: dict[str, Any], *, suspend: bool = False, queue: str | None = None
) -> dict[str, Any]:
    job = golden_job(name="child", uid="child-uid", suspend=suspend, queue=queue)
    job["metadata"]["ownerReferences"] = [owner]
    return job


async def test_child_of_unadmitted_ancestor_is_suspended_and_gets_no_workload(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    cluster.add(jobset("parent", uid="parent-uid"))
    cluster.add(job_with_owner(owned_by("parent", "parent-uid")))
    await reconciler.reconcile(job_key("child"))
    child = cluster.find("Job", "golden", "child")
    assert child is not None
    assert child["spec"]["suspend"] is True
    assert cluster.of_kind("Workload") == []
    assert [(e.reason, e.message) for e in cluster.events] == [
        ("Suspended", "Kueue managed child job suspended")
    ]


async def test_child_of_admitted_ancestor_keeps_running(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    cluster.add(jobset("parent", uid="parent-uid"))
    cluster.add(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {
                "name": "jobset-parent-x",
                "namespace": "golden",
                "ownerReferences": [owned_by("parent", "parent-uid")],
            },
            "spec": {"queueName": "golden-q", "podSets": []},
            "status": {
                "conditions": [{"type": "Admitted", "status": "True", "reason": "Admitted", "message": ""}]
            },
        }
    )
    cluster.add(job_with_owner(owned_by("parent", "parent-uid")))
    await reconciler.reconcile(job_key("child"))
    assert cluster.writes == []


async def test_child_of_unmanaged_owner_without_queue_is_ignored(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    cluster.add(jobset("parent", uid="parent-uid", queue=None))
    cluster.add(job_with_owner(owned_by("parent", "parent-uid")))
    await reconciler.reconcile(job_key("child"))
    assert cluster.writes == []


async def test_stale_owner_uid_makes_the_job_top_level(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    cluster.add(jobset("parent", uid="new-uid"))
    cluster.add(job_with_owner(owned_by("parent", "old-uid"), suspend=True, queue="golden-q"))
    await reconciler.reconcile(job_key("child"))
    assert len(cluster.of_kind("Workload")) == 1, "a job whose owner ref is stale gets its own Workload"


async def test_ownership_chain_too_deep_is_reported(cluster: FakeCluster, reconciler: JobReconciler) -> None:
    for index in range(12):
        owner = owned_by(f"js{index + 1}", f"uid{index + 1}") if index < 11 else None
        cluster.add(jobset(f"js{index}", uid=f"uid{index}", owner=owner))
    cluster.add(job_with_owner(owned_by("js0", "uid0")))
    with pytest.raises(ChainLimitReachedError):
        await reconciler.reconcile(job_key("child"))
    assert [(e.event_type, e.reason) for e in cluster.events] == [("Warning", "JobNestingTooDeep")]
    assert cluster.events[0].message == (
        "Terminated search for Kueue-managed Job because ancestor depth exceeded limit of 10"
    )


async def test_cyclic_ownership_is_an_error(cluster: FakeCluster, reconciler: JobReconciler) -> None:
    cluster.add(jobset("a", uid="ua", owner=owned_by("b", "ub")))
    cluster.add(jobset("b", uid="ub", owner=owned_by("a", "ua")))
    cluster.add(job_with_owner(owned_by("a", "ua")))
    with pytest.raises(CyclicOwnershipError):
        await reconciler.reconcile(job_key("child"))


def stale_workload(cluster: FakeCluster, *, reserved: bool) -> None:
    cluster.add(golden_job())
    job = cluster.find("Job", "golden", "sample")
    assert job is not None
    workload: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": "job-sample-old",
            "namespace": "golden",
            "finalizers": ["kueue.x-k8s.io/resource-in-use"],
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": "sample", "uid": UID, "controller": True}
            ],
        },
        "spec": {
            "queueName": "golden-q",
            "active": False,
            "podSets": [{"name": "main", "count": 9, "template": job["spec"]["template"]}],
        },
    }
    if reserved:
        workload["status"] = {
            "conditions": [
                {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": ""}
            ]
        }
    cluster.add(workload)


async def test_non_matching_unreserved_workload_is_updated_in_place(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    stale_workload(cluster, reserved=False)
    await reconciler.reconcile(job_key())
    workload = cluster.find("Workload", "golden", "job-sample-old")
    assert workload is not None
    assert workload["spec"]["podSets"][0]["count"] == 2
    assert workload["spec"]["active"] is False, "spec.active is preserved"
    assert [(e.reason, e.message) for e in cluster.events] == [
        ("UpdatedWorkload", "Updated not matching Workload for suspended job: golden/job-sample-old")
    ]


async def test_non_matching_reserved_workload_is_replaced(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    stale_workload(cluster, reserved=True)
    with pytest.raises(NoMatchingWorkloadsError, match="deleted 1 workloads"):
        await reconciler.reconcile(job_key())
    assert cluster.find("Workload", "golden", "job-sample-old") is None
    assert cluster.reasons() == ["DeletedWorkload"]
    await reconciler.reconcile(job_key())
    assert [w["metadata"]["name"] for w in cluster.of_kind("Workload")] == [WORKLOAD]


async def test_missing_workload_priority_class_blocks_creation(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    job = golden_job()
    job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "high"
    cluster.add(job)
    with pytest.raises(PriorityClassNotFoundError):
        await reconciler.reconcile(job_key())
    assert cluster.of_kind("Workload") == []
    assert [(e.event_type, e.reason, e.message) for e in cluster.events] == [
        ("Warning", "WorkloadPriorityClassNotFound", 'WorkloadPriorityClass "high" not found')
    ]
    cluster.add(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "WorkloadPriorityClass",
            "metadata": {"name": "high"},
            "value": 1000,
        }
    )
    await reconciler.reconcile(job_key())
    workload = cluster.find("Workload", "golden", WORKLOAD)
    assert workload is not None
    assert workload["spec"]["priorityClassRef"] == {
        "group": "kueue.x-k8s.io",
        "kind": "WorkloadPriorityClass",
        "name": "high",
    }
    assert workload["spec"]["priority"] == 1000


async def test_priority_label_change_is_followed(cluster: FakeCluster, reconciler: JobReconciler) -> None:
    for name, value in (("low", 10), ("high", 1000)):
        cluster.add(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "WorkloadPriorityClass",
                "metadata": {"name": name},
                "value": value,
            }
        )
    job = golden_job()
    job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "low"
    cluster.add(job)
    await converge(reconciler)
    key = next(k for k in cluster.objects if k[1] == "Job")
    cluster.objects[key]["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "high"
    await converge(reconciler)
    workload = cluster.find("Workload", "golden", WORKLOAD)
    assert workload is not None
    assert (workload["spec"]["priorityClassRef"]["name"], workload["spec"]["priority"]) == ("high", 1000)
    assert "Updated workload priority class: golden/" + WORKLOAD in [e.message for e in cluster.events]


async def test_global_default_priority_class_is_used(cluster: FakeCluster, reconciler: JobReconciler) -> None:
    for name, value in (("a", 50), ("b", 20)):
        cluster.add(
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": name},
                "value": value,
                "globalDefault": True,
            }
        )
    cluster.add(golden_job())
    await reconciler.reconcile(job_key())
    workload = cluster.find("Workload", "golden", WORKLOAD)
    assert workload is not None
    assert workload["spec"]["priorityClassRef"] == {
        "group": "scheduling.k8s.io",
        "kind": "PriorityClass",
        "name": "b",
    }
    assert workload["spec"]["priority"] == 20


async def test_malformed_job_gets_a_warning_and_no_workload(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    job = golden_job()
    job["spec"]["template"] = "not a template"
    cluster.add(job)
    result = await reconciler.reconcile(job_key())
    assert result.requeue_after is None
    assert cluster.of_kind("Workload") == []
    assert [(e.event_type, e.reason) for e in cluster.events] == [("Warning", "ErrWorkloadCompose")]
    assert "spec.template" in cluster.events[0].message


async def test_queue_name_change_on_suspended_job_moves_the_workload(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    cluster.add(golden_job())
    await converge(reconciler)
    key = next(k for k in cluster.objects if k[1] == "Job")
    cluster.objects[key]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "other-q"
    await converge(reconciler)
    workload = cluster.find("Workload", "golden", WORKLOAD)
    assert workload is not None
    assert workload["spec"]["queueName"] == "other-q"


async def test_conflicting_flavor_finishes_failed_to_start(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    job = golden_job()
    job["spec"]["template"]["spec"]["nodeSelector"]["instance-type"] = "on-demand"
    cluster.add(job)
    await converge(reconciler)
    admit(cluster, WORKLOAD)
    await reconciler.reconcile(job_key())
    workload = cluster.find("Workload", "golden", WORKLOAD)
    assert workload is not None
    finished = condition_of(workload, "Finished")
    assert finished is not None
    assert finished[:2] == ("True", "FailedToStart")
    assert "conflict for nodeSelector" in finished[2]
    stored = cluster.find("Job", "golden", "sample")
    assert stored is not None
    assert stored["spec"]["suspend"] is True


async def test_running_job_with_unadmitted_workload_is_stopped(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    cluster.add(golden_job())
    await converge(reconciler)
    key = next(k for k in cluster.objects if k[1] == "Job")
    cluster.objects[key]["spec"]["suspend"] = False
    await converge(reconciler)
    stored = cluster.find("Job", "golden", "sample")
    assert stored is not None
    assert stored["spec"]["suspend"] is True
    assert "Not admitted by cluster queue" in [e.message for e in cluster.events if e.reason == "Stopped"]


async def test_prebuilt_workload_missing_stops_the_job(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    job = golden_job(suspend=False)
    job["metadata"]["labels"]["kueue.x-k8s.io/prebuilt-workload-name"] = "prebuilt"
    cluster.add(job)
    with pytest.raises(PrebuiltWorkloadNotFoundError):
        await reconciler.reconcile(job_key())
    stored = cluster.find("Job", "golden", "sample")
    assert stored is not None
    assert stored["spec"]["suspend"] is True
    assert cluster.of_kind("Workload") == [], "prebuilt Workloads are never created by the reconciler"


async def test_prebuilt_workload_is_adopted_or_finished_out_of_sync(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    job = golden_job()
    job["metadata"]["labels"]["kueue.x-k8s.io/prebuilt-workload-name"] = "prebuilt"
    cluster.add(job)
    template = cluster.find("Job", "golden", "sample")["spec"]["template"]  # type: ignore[index]
    template["metadata"]["labels"] = {"app": "sample", "batch.kubernetes.io/job-name": "sample"}
    cluster.add(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {"name": "prebuilt", "namespace": "golden"},
            "spec": {
                "queueName": "golden-q",
                "podSets": [{"name": "main", "count": 2, "template": template}],
            },
        }
    )
    await reconciler.reconcile(job_key())
    adopted = cluster.find("Workload", "golden", "prebuilt")
    assert adopted is not None
    assert adopted["metadata"]["ownerReferences"][0]["uid"] == UID
    assert adopted["metadata"]["labels"] == {"kueue.x-k8s.io/job-uid": UID}
    assert condition_of(adopted, "Finished") is None
    key = next(k for k in cluster.objects if k[1] == "Job")
    cluster.objects[key]["spec"]["parallelism"] = 3
    with pytest.raises(PrebuiltWorkloadNotFoundError):
        await reconciler.reconcile(job_key())
    out_of_sync = cluster.find("Workload", "golden", "prebuilt")
    assert out_of_sync is not None
    assert condition_of(out_of_sync, "Finished") == (
        "True",
        "OutOfSync",
        "The prebuilt workload is out of sync with its user job",
    )
