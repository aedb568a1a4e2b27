"""Conformance: garbage collection (background, foreground, orphan) and namespace deletion."""

from __future__ import annotations

from tests.devcluster.conftest import KubeTarget
from tests.devcluster.helpers import configmap, eventually


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


def test_background_deletion_collects_dependents(kube: KubeTarget, namespace: str) -> None:
    url = _setup(kube, namespace)
    assert kube.client.delete(f"{url}/owner", params={"propagationPolicy": "Background"}).status_code == 200
    assert not _exists(kube, f"{url}/owner")
    eventually(lambda: not _exists(kube, f"{url}/dep0") and not _exists(kube, f"{url}/dep1"))


def test_foreground_deletion_waits_for_blocking_dependents(kube: KubeTarget, namespace: str) -> None:
    url = _setup(kube, namespace, block=True)
    kube.client.patch(
        f"{url}/dep0",
        json={"metadata": {"finalizers": ["example.com/hold"]}},
        headers={"content-type": "application/merge-patch+json"},
    )
    deleting = kube.client.delete(f"{url}/owner", params={"propagationPolicy": "Foreground"}).json()
    assert "foregroundDeletion" in deleting["metadata"]["finalizers"]
    eventually(lambda: not _exists(kube, f"{url}/dep1"))
    dep0 = kube.client.get(f"{url}/dep0").json()
    assert dep0["metadata"]["deletionTimestamp"]
    assert _exists(kube, f"{url}/owner")
    kube.client.patch(
        f"{url}/dep0",
        json={"metadata": {"finalizers": None}},
        headers={"content-type": "application/merge-patch+json"},
    )
    eventually(lambda: not _exists(kube, f"{url}/owner"))


def test_orphan_deletion_keeps_dependents_without_the_reference(kube: KubeTarget, namespace: str) -> None:
    url = _setup(kube, namespace)
    kube.client.delete(f"{url}/owner", params={"propagationPolicy": "Orphan"})
    eventually(lambda: not _exists(kube, f"{url}/owner"))
    for name in ("dep0", "dep1"):
        dependent = kube.client.get(f"{url}/{name}").json()
        assert "ownerReferences" not in dependent["metadata"]


def test_jobs_orphan_their_dependents_by_default(kube: KubeTarget, namespace: str) -> None:
    jobs = f"/apis/batch/v1/namespaces/{namespace}/jobs"
    from tests.devcluster.helpers import job_manifest

    job = kube.client.post(jobs, json=job_manifest("j", suspend=True)).json()
    ref = {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": job["metadata"]["uid"]}
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    kube.client.post(url, json=configmap("child", ownerReferences=[ref]))
    kube.client.delete(f"{jobs}/j")
    eventually(lambda: not _exists(kube, f"{jobs}/j"))
    assert "ownerReferences" not in kube.client.get(f"{url}/child").json()["metadata"]


def test_object_with_a_missing_owner_is_collected(kube: KubeTarget, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    ghost = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "name": "ghost",
        "uid": "00000000-0000-0000-0000-000000000000",
    }
    kube.client.post(url, json=configmap("orphaned", ownerReferences=[ghost]))
    eventually(lambda: not _exists(kube, f"{url}/orphaned"))


def test_namespace_deletion_removes_contents_then_namespace(kube: KubeTarget, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    kube.client.post(url, json=configmap("plain"))
    kube.client.post(url, json=configmap("held", finalizers=["example.com/hold"]))
    deleting = kube.client.delete(f"/api/v1/namespaces/{namespace}")
    assert deleting.status_code == 200
    assert deleting.json()["status"]["phase"] == "Terminating"
    eventually(lambda: not _exists(kube, f"{url}/plain"))
    assert kube.client.get(f"/api/v1/namespaces/{namespace}").json()["status"]["phase"] == "Terminating"
    kube.client.patch(
        f"{url}/held",
        json={"metadata": {"finalizers": None}},
        headers={"content-type": "application/merge-patch+json"},
    )
    eventually(lambda: kube.client.get(f"/api/v1/namespaces/{namespace}").status_code == 404, timeout=60)


def test_updating_a_terminating_namespace_does_not_delete_it(kube: KubeTarget, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    kube.client.post(url, json=configmap("held", finalizers=["example.com/hold"]))
    kube.client.delete(f"/api/v1/namespaces/{namespace}")
    terminating = kube.client.get(f"/api/v1/namespaces/{namespace}").json()
    terminating["metadata"]["labels"]["touched"] = "yes"
    assert kube.client.put(f"/api/v1/namespaces/{namespace}", json=terminating).status_code == 200
    assert kube.client.get(f"/api/v1/namespaces/{namespace}").json()["status"]["phase"] == "Terminating"
    kube.client.patch(
        f"{url}/held",
        json={"metadata": {"finalizers": None}},
        headers={"content-type": "application/merge-patch+json"},
    )
    eventually(lambda: kube.client.get(f"/api/v1/namespaces/{namespace}").status_code == 404, timeout=60)
