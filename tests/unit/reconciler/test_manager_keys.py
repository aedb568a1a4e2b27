from __future__ import annotations

from reconciler.manager import CONTROLLER_UID_INDEX, ReconcilerManager
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
