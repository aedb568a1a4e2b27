from __future__ import annotations

from reconciler.cluster import workload_owner_keys
from reconciler.manager import (
    CONTROLLER_UID_INDEX,
    CREATE_PRIORITY,
    RELEASE_PRIORITY,
    START_PRIORITY,
    WORKLOAD_OWNER_INDEX,
    ReconcilerControllers,
)
from shared.config import ManagedKind
from shared.frameworks.registry import FrameworkRegistry
from shared.kube import GroupVersionKind
from shared.kube.informer import Store, StoreView, index_by_controller_uid

JOB = GroupVersionKind("batch", "v1", "Job")


def workload_owned_by(api_version: str, kind: str, name: str, uid: str) -> dict:
    return {
        "metadata": {
            "name": "wl",
            "namespace": "ns",
            "ownerReferences": [
                {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": True}
            ],
        }
    }


def jobs_store(*jobs: dict) -> StoreView:
    store = Store({CONTROLLER_UID_INDEX: index_by_controller_uid})
    for job in jobs:
        store.upsert(job)
    return StoreView(store)


def test_workload_event_wakes_its_owner_job() -> None:
    keys = ReconcilerControllers._job_keys_for_workload(JOB, jobs_store())
    assert keys(workload_owned_by("batch/v1", "Job", "sample", "u1")) == ["ns/sample"]


def test_workload_event_wakes_child_jobs_of_its_owner() -> None:
    child = {
        "metadata": {
            "name": "child",
            "namespace": "ns",
            "ownerReferences": [
                {
                    "apiVersion": "jobset.x-k8s.io/v1alpha2",
                    "kind": "JobSet",
                    "name": "parent",
                    "uid": "p-uid",
                    "controller": True,
                }
            ],
        }
    }
    unrelated = {"metadata": {"name": "other", "namespace": "ns"}}
    keys = ReconcilerControllers._job_keys_for_workload(JOB, jobs_store(child, unrelated))
    assert keys(workload_owned_by("jobset.x-k8s.io/v1alpha2", "JobSet", "parent", "p-uid")) == ["ns/child"]


def admitted_workload(*conditions: str) -> dict:
    workload = workload_owned_by("batch/v1", "Job", "sample", "u1")
    workload["status"] = {
        "conditions": [{"type": kind, "status": "True", "reason": kind, "message": ""} for kind in conditions]
    }
    return workload


def test_a_start_waiting_on_an_admitted_workload_goes_first() -> None:
    registry = FrameworkRegistry.from_managed_kinds([ManagedKind(JOB, "jobs", "batch/job", None)])

    def job(suspend: bool) -> StoreView:
        return jobs_store(
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {"name": "sample", "namespace": "ns"},
                "spec": {"suspend": suspend},
            }
        )

    waiting = ReconcilerControllers._start_waits(registry, job(suspend=True))
    assert waiting(admitted_workload("QuotaReserved", "Admitted"), "ns/sample") == START_PRIORITY
    assert waiting(admitted_workload("QuotaReserved"), "ns/sample") == 0  # not admitted yet
    assert waiting(admitted_workload("Admitted", "Finished"), "ns/sample") == 0
    assert waiting(admitted_workload("QuotaReserved", "Admitted"), "ns/gone") == 0  # job not cached
    started = ReconcilerControllers._start_waits(registry, job(suspend=False))
    assert started(admitted_workload("QuotaReserved", "Admitted"), "ns/sample") == 0  # already running
    broken = ReconcilerControllers._start_waits(
        registry, jobs_store({"metadata": {"name": "sample", "namespace": "ns"}})
    )
    assert (
        broken(admitted_workload("Admitted"), "ns/sample") == 0
    )  # unreadable: ordinary lane, never an error


def test_a_job_change_that_unblocks_kueue_goes_before_bookkeeping() -> None:
    registry = FrameworkRegistry.from_managed_kinds([ManagedKind(JOB, "jobs", "batch/job", None)])
    workloads = Store({WORKLOAD_OWNER_INDEX: workload_owner_keys})
    rule = ReconcilerControllers._job_change_unblocks(registry, JOB, StoreView(workloads))

    def job(*conditions: str) -> dict:
        status = {"conditions": [{"type": kind, "status": "True"} for kind in conditions]}
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "sample", "namespace": "ns", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
            "spec": {"suspend": True},
            "status": status,
        }

    assert rule(job(), "ns/sample") == CREATE_PRIORITY  # no Workload yet: nothing can be admitted
    unqueued = job()
    del unqueued["metadata"]["labels"]
    assert rule(unqueued, "ns/sample") == 0  # not Kueue's (manageJobsWithoutQueueName is off)
    everyone = ReconcilerControllers._job_change_unblocks(
        registry, JOB, StoreView(workloads), queued_only=False
    )
    assert everyone(unqueued, "ns/sample") == CREATE_PRIORITY
    assert rule(job("Complete"), "ns/sample") == 0  # finished before it had one: nothing to unblock
    workloads.upsert(admitted_workload("QuotaReserved", "Admitted"))
    assert rule(job(), "ns/sample") == 0  # bookkeeping (PodsReady, echoes)
    assert rule(job("Complete"), "ns/sample") == RELEASE_PRIORITY  # its quota waits for Finished
    workloads.upsert(admitted_workload("Admitted", "Finished"))
    assert rule(job("Complete"), "ns/sample") == 0
    assert rule({"metadata": {"name": "sample", "namespace": "ns"}}, "ns/sample") == 0  # unreadable
    # a start uses quota already reserved; a release lets the next pending Workload in; a create
    # only adds one to the pending ones
    assert START_PRIORITY > RELEASE_PRIORITY > CREATE_PRIORITY > 0
