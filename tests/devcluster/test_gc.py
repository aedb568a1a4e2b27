"""Conformance: garbage collection (background, foreground, orphan) and namespace deletion.

The API server's half (what a DELETE answers and marks) runs on both targets; the controllers' half
(kube-controller-manager's garbage collector and namespace controller; the devcluster's stand-ins)
is skipped on a real cluster without kube-controller-manager, naming the controller.
"""

from __future__ import annotations

from tests.devcluster.conftest import KubeTarget, needs_controller_manager
from tests.devcluster.helpers import MERGE_PATCH, configmap, eventually, job_manifest

GARBAGE_COLLECTOR = "the garbage collector"
NAMESPACE_CONTROLLER = "the namespace controller"


def _owned(name: str, owner: dict, *, block: bool = False) -> dict:
    ref = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
    }
    if block:
        ref["blockOwnerDeletion"] = True
    return configmap(name, ownerReferences=[ref])


def _setup(kube: KubeTarget, namespace: str, *, block: bool = False) -> str:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    owner = kube.client.post(url, json=configmap("owner")).json()
    for index in range(2):
        assert kube.client.post(url, json=_owned(f"dep{index}", owner, block=block)).status_code == 201
    return url


def _exists(kube: KubeTarget, url: str) -> bool:
    return kube.client.get(url).status_code == 200


def _hold(kube: KubeTarget, url: str) -> None:
    held = kube.client.patch(
        url, json={"metadata": {"finalizers": ["example.com/hold"]}}, headers=MERGE_PATCH
    )
    assert held.status_code == 200, held.text


def _release(kube: KubeTarget, url: str) -> None:
    released = kube.client.patch(url, json={"metadata": {"finalizers": None}}, headers=MERGE_PATCH)
    assert released.status_code == 200, released.text


def test_background_deletion_removes_the_owner_at_once(kube: KubeTarget, namespace: str) -> None:
    url = _setup(kube, namespace)
    deleted = kube.client.delete(f"{url}/owner", params={"propagationPolicy": "Background"})
    assert deleted.status_code == 200
    assert deleted.json()["status"] == "Success"
    assert deleted.json()["details"]["name"] == "owner"
    assert not _exists(kube, f"{url}/owner")


def test_background_deletion_collects_dependents(kube: KubeTarget, namespace: str) -> None:
    needs_controller_manager(kube, GARBAGE_COLLECTOR)
    url = _setup(kube, namespace)
    assert kube.client.delete(f"{url}/owner", params={"propagationPolicy": "Background"}).status_code == 200
    eventually(lambda: not _exists(kube, f"{url}/dep0") and not _exists(kube, f"{url}/dep1"))


def test_foreground_deletion_marks_the_owner_and_keeps_it(kube: KubeTarget, namespace: str) -> None:
    url = _setup(kube, namespace, block=True)
    _hold(kube, f"{url}/dep0")  # a blocking dependent that stays: the owner cannot go
    deleting = kube.client.delete(f"{url}/owner", params={"propagationPolicy": "Foreground"})
    assert deleting.status_code == 200
    meta = deleting.json()["metadata"]
    assert meta["finalizers"] == ["foregroundDeletion"]
    assert meta["deletionTimestamp"]
    assert meta["deletionGracePeriodSeconds"] == 0
    assert kube.client.get(f"{url}/owner").json()["metadata"]["finalizers"] == ["foregroundDeletion"]
    _release(kube, f"{url}/dep0")


def test_foreground_deletion_waits_for_blocking_dependents(kube: KubeTarget, namespace: str) -> None:
    needs_controller_manager(kube, GARBAGE_COLLECTOR)
    url = _setup(kube, namespace, block=True)
    _hold(kube, f"{url}/dep0")
    deleting = kube.client.delete(f"{url}/owner", params={"propagationPolicy": "Foreground"}).json()
    assert "foregroundDeletion" in deleting["metadata"]["finalizers"]
    eventually(lambda: not _exists(kube, f"{url}/dep1"))
    dep0 = kube.client.get(f"{url}/dep0").json()
    assert dep0["metadata"]["deletionTimestamp"]
    assert _exists(kube, f"{url}/owner")
    _release(kube, f"{url}/dep0")
    eventually(lambda: not _exists(kube, f"{url}/owner"))


def test_orphan_deletion_marks_the_owner(kube: KubeTarget, namespace: str) -> None:
    url = _setup(kube, namespace)
    deleting = kube.client.delete(f"{url}/owner", params={"propagationPolicy": "Orphan"})
    assert deleting.status_code == 200
    meta = deleting.json()["metadata"]
    assert (meta["finalizers"], meta["deletionGracePeriodSeconds"]) == (["orphan"], 0)
    assert meta["deletionTimestamp"]


def test_orphan_deletion_keeps_dependents_without_the_reference(kube: KubeTarget, namespace: str) -> None:
    needs_controller_manager(kube, GARBAGE_COLLECTOR)
    url = _setup(kube, namespace)
    kube.client.delete(f"{url}/owner", params={"propagationPolicy": "Orphan"})
    eventually(lambda: not _exists(kube, f"{url}/owner"))
    for name in ("dep0", "dep1"):
        dependent = kube.client.get(f"{url}/{name}").json()
        assert "ownerReferences" not in dependent["metadata"]


def test_jobs_are_deleted_with_the_orphan_policy_by_default(kube: KubeTarget, namespace: str) -> None:
    """batch/v1 keeps the old default: a plain DELETE of a Job orphans its dependents."""
    jobs = f"/apis/batch/v1/namespaces/{namespace}/jobs"
    created = kube.client.post(jobs, json=job_manifest("j", suspend=True)).json()
    deleting = kube.client.delete(f"{jobs}/j")
    assert deleting.status_code == 200
    meta = deleting.json()["metadata"]
    assert meta["finalizers"] == ["orphan"]
    assert meta["deletionTimestamp"]
    assert meta["generation"] == created["metadata"]["generation"] + 1


def test_jobs_orphan_their_dependents_by_default(kube: KubeTarget, namespace: str) -> None:
    needs_controller_manager(kube, GARBAGE_COLLECTOR)
    jobs = f"/apis/batch/v1/namespaces/{namespace}/jobs"
    job = kube.client.post(jobs, json=job_manifest("j", suspend=True)).json()
    ref = {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": job["metadata"]["uid"]}
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    kube.client.post(url, json=configmap("child", ownerReferences=[ref]))
    kube.client.delete(f"{jobs}/j")
    eventually(lambda: not _exists(kube, f"{jobs}/j"))
    assert "ownerReferences" not in kube.client.get(f"{url}/child").json()["metadata"]


def test_object_with_a_missing_owner_is_collected(kube: KubeTarget, namespace: str) -> None:
    needs_controller_manager(kube, GARBAGE_COLLECTOR)
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    ghost = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "ghost",
        "uid": "00000000-0000-0000-0000-000000000000",
    }
    kube.client.post(url, json=configmap("orphaned", ownerReferences=[ghost]))
    eventually(lambda: not _exists(kube, f"{url}/orphaned"))


def test_deleting_a_namespace_marks_it_terminating(kube: KubeTarget, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    kube.client.post(url, json=configmap("held", finalizers=["example.com/hold"]))
    deleting = kube.client.delete(f"/api/v1/namespaces/{namespace}")
    assert deleting.status_code == 200
    body = deleting.json()
    assert body["status"]["phase"] == "Terminating"
    assert body["spec"]["finalizers"] == ["kubernetes"]
    assert body["metadata"]["deletionTimestamp"]
    assert kube.client.get(f"/api/v1/namespaces/{namespace}").json()["status"]["phase"] == "Terminating"
    _release(kube, f"{url}/held")


def test_namespace_deletion_removes_contents_then_namespace(kube: KubeTarget, namespace: str) -> None:
    needs_controller_manager(kube, NAMESPACE_CONTROLLER)
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    kube.client.post(url, json=configmap("plain"))
    kube.client.post(url, json=configmap("held", finalizers=["example.com/hold"]))
    deleting = kube.client.delete(f"/api/v1/namespaces/{namespace}")
    assert deleting.status_code == 200
    assert deleting.json()["status"]["phase"] == "Terminating"
    eventually(lambda: not _exists(kube, f"{url}/plain"))
    assert kube.client.get(f"/api/v1/namespaces/{namespace}").json()["status"]["phase"] == "Terminating"
    _release(kube, f"{url}/held")
    eventually(lambda: kube.client.get(f"/api/v1/namespaces/{namespace}").status_code == 404, timeout=60)


def test_updating_a_terminating_namespace_keeps_it_terminating(kube: KubeTarget, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    kube.client.post(url, json=configmap("held", finalizers=["example.com/hold"]))
    kube.client.delete(f"/api/v1/namespaces/{namespace}")
    terminating = kube.client.get(f"/api/v1/namespaces/{namespace}").json()
    terminating["metadata"]["labels"]["touched"] = "yes"
    updated = kube.client.put(f"/api/v1/namespaces/{namespace}", json=terminating)
    assert updated.status_code == 200
    assert updated.json()["metadata"]["labels"]["touched"] == "yes"
    assert kube.client.get(f"/api/v1/namespaces/{namespace}").json()["status"]["phase"] == "Terminating"
    _release(kube, f"{url}/held")


def test_a_terminating_namespace_goes_once_its_last_object_does(kube: KubeTarget, namespace: str) -> None:
    needs_controller_manager(kube, NAMESPACE_CONTROLLER)
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    kube.client.post(url, json=configmap("held", finalizers=["example.com/hold"]))
    kube.client.delete(f"/api/v1/namespaces/{namespace}")
    terminating = kube.client.get(f"/api/v1/namespaces/{namespace}").json()
    terminating["metadata"]["labels"]["touched"] = "yes"
    assert kube.client.put(f"/api/v1/namespaces/{namespace}", json=terminating).status_code == 200
    _release(kube, f"{url}/held")
    eventually(lambda: kube.client.get(f"/api/v1/namespaces/{namespace}").status_code == 404, timeout=60)
