from __future__ import annotations

from reconciler.cluster import workload_owner_keys
from reconciler.manager import CONTROLLER_UID_INDEX, WORKLOAD_OWNER_INDEX, ReconcilerManager
from shared.config import ManagedKind
from shared.frameworks.base import GroupVersionKind
from shared.frameworks.registry import FrameworkRegistry
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
    keys = ReconcilerManager._job_keys_for_workload(JOB, jobs_store())
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
    keys = ReconcilerManager._job_keys_for_workload(JOB, jobs_store(child, unrelated))
    assert keys(workload_owned_by("jobset.x-k8s.io/v1alpha2", "JobSet", "parent", "p-uid")) == ["ns/child"]


def admitted_workload(*conditions: str) -> dict:
    workload = workload_owned_by("batch/v1", "Job", "sample", "u1")
    workload["status"] = {
        "conditions": [{"type": kind, "status": "True", "reason": kind, "message": ""} for kind in conditions]
    }
    return workload


def test_a_start_waiting_on_an_admitted_workload_is_urgent() -> None:
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

    waiting = ReconcilerManager._start_waits(registry, job(suspend=True))
    assert waiting(admitted_workload("QuotaReserved", "Admitted"), "ns/sample")
    assert not waiting(admitted_workload("QuotaReserved"), "ns/sample")  # not admitted yet
    assert not waiting(admitted_workload("Admitted", "Finished"), "ns/sample")
    assert not waiting(admitted_workload("QuotaReserved", "Admitted"), "ns/gone")  # job not cached
    started = ReconcilerManager._start_waits(registry, job(suspend=False))
    assert not started(admitted_workload("QuotaReserved", "Admitted"), "ns/sample")  # already running
    broken = ReconcilerManager._start_waits(
        registry, jobs_store({"metadata": {"name": "sample", "namespace": "ns"}})
    )
    assert not broken(admitted_workload("Admitted"), "ns/sample")  # unreadable: ordinary lane, never an error


def test_a_job_change_is_urgent_when_it_unblocks_kueue() -> None:
    registry = FrameworkRegistry.from_managed_kinds([ManagedKind(JOB, "jobs", "batch/job", None)])
    workloads = Store({WORKLOAD_OWNER_INDEX: workload_owner_keys})
    rule = ReconcilerManager._job_change_unblocks(registry, JOB, StoreView(workloads))

    def job(*conditions: str) -> dict:
        status = {"conditions": [{"type": kind, "status": "True"} for kind in conditions]}
        return {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": "sample", "namespace": "ns", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
            "spec": {"suspend": True},
            "status": status,
        }

    assert rule(job(), "ns/sample")  # no Workload yet: it must be created before anything is admitted
    unqueued = job()
    del unqueued["metadata"]["labels"]
    assert not rule(unqueued, "ns/sample")  # not Kueue's (manageJobsWithoutQueueName is off)
    everyone = ReconcilerManager._job_change_unblocks(registry, JOB, StoreView(workloads), queued_only=False)
    assert everyone(unqueued, "ns/sample")
    assert not rule(job("Complete"), "ns/sample")  # finished before it had one: nothing to unblock
    workloads.upsert(admitted_workload("QuotaReserved", "Admitted"))
    assert not rule(job(), "ns/sample")  # bookkeeping (PodsReady, echoes)
    assert rule(job("Complete"), "ns/sample")  # finished: its Workload's quota waits for Finished
    workloads.upsert(admitted_workload("Admitted", "Finished"))
    assert not rule(job("Complete"), "ns/sample")
    assert not rule({"metadata": {"name": "sample", "namespace": "ns"}}, "ns/sample")  # unreadable
