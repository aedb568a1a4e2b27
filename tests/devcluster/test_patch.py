"""Conformance: merge patch, JSON patch, strategic merge patch (415 on CRs) and server-side apply."""

from __future__ import annotations

from tests.devcluster.conftest import KubeTarget
from tests.devcluster.helpers import configmap, status_of

MERGE = {"content-type": "application/merge-patch+json"}
JSON_PATCH = {"content-type": "application/json-patch+json"}
STRATEGIC = {"content-type": "application/strategic-merge-patch+json"}
APPLY = {"content-type": "application/apply-patch+yaml"}


def _pod(name: str) -> dict:
    return {
        "metadata": {"name": name, "labels": {"a": "1", "b": "2"}},
        "spec": {
            "containers": [
                {
                    "name": "one",
                    "image": "busybox:1",
                    "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}],
                },
                {"name": "two", "image": "busybox:2"},
            ]
        },
    }


def test_merge_patch_merges_maps_and_deletes_nulls(kube: KubeTarget, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    kube.client.post(url, json=configmap("m", labels={"a": "1", "b": "2"}))
    patched = kube.client.patch(
        f"{url}/m", json={"metadata": {"labels": {"a": None, "c": "3"}}}, headers=MERGE
    )
    assert patched.status_code == 200
    assert patched.json()["metadata"]["labels"] == {"b": "2", "c": "3"}


def test_json_patch_applies_operations_and_reports_failures(kube: KubeTarget, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    kube.client.post(url, json=configmap("j"))
    ops = [
        {"op": "add", "path": "/data/new", "value": "x"},
        {"op": "replace", "path": "/data/k", "value": "y"},
    ]
    assert kube.client.patch(f"{url}/j", json=ops, headers=JSON_PATCH).json()["data"] == {
        "k": "y",
        "new": "x",
    }
    failing = kube.client.patch(
        f"{url}/j", json=[{"op": "test", "path": "/data/k", "value": "nope"}], headers=JSON_PATCH
    )
    assert failing.status_code == 422
    assert status_of(failing)["reason"] == "Invalid"
    malformed = kube.client.patch(f"{url}/j", json={"op": "add"}, headers=JSON_PATCH)
    assert malformed.status_code == 400


def test_merge_patch_removing_the_last_label_leaves_no_labels(kube: KubeTarget, namespace: str) -> None:
    """Go decodes into ObjectMeta, whose empty maps are omitted: ``labels`` goes, not ``{}``."""
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    kube.client.post(url, json=configmap("last", labels={"a": "1"}, annotations={"n": "v"}))
    patch = {"metadata": {"labels": {"a": None}, "annotations": {"n": None}}}
    patched = kube.client.patch(f"{url}/last", json=patch, headers=MERGE)
    assert patched.status_code == 200, patched.text
    for meta in (patched.json()["metadata"], kube.client.get(f"{url}/last").json()["metadata"]):
        assert "labels" not in meta
        assert "annotations" not in meta


def test_json_patch_replace_of_a_missing_key_adds_it(kube: KubeTarget, namespace: str) -> None:
    """kube-apiserver's JSON patch library (evanphx/json-patch v4) only checks the parent exists."""
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    kube.client.post(url, json=configmap("r", labels={"a": "1"}))
    ops = [
        {"op": "replace", "path": "/data/new", "value": "x"},
        {"op": "replace", "path": "/metadata/labels/b", "value": "2"},
    ]
    patched = kube.client.patch(f"{url}/r", json=ops, headers=JSON_PATCH)
    assert patched.status_code == 200, patched.text
    assert patched.json()["data"] == {"k": "v", "new": "x"}
    assert patched.json()["metadata"]["labels"] == {"a": "1", "b": "2"}
    missing_parent = [{"op": "replace", "path": "/metadata/annotations/x", "value": "y"}]
    failing = kube.client.patch(f"{url}/r", json=missing_parent, headers=JSON_PATCH)
    assert failing.status_code == 422
    body = status_of(failing)
    assert (body["reason"], body["message"]) == (
        "Invalid",
        "the server rejected our request due to an error in our request",
    )


def test_strategic_merge_patch_merges_containers_by_name(kube: KubeTarget, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/pods"
    assert kube.client.post(url, json=_pod("smp")).status_code == 201
    patch = {"spec": {"containers": [{"name": "two", "image": "busybox:9"}]}}
    patched = kube.client.patch(f"{url}/smp", json=patch, headers=STRATEGIC)
    assert patched.status_code == 200, patched.text
    one, two = patched.json()["spec"]["containers"]
    assert (one["name"], one["image"], two["name"], two["image"]) == ("one", "busybox:1", "two", "busybox:9")
    assert one["env"] == [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]


def test_pod_spec_is_immutable_but_for_images_and_a_few_fields(kube: KubeTarget, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/pods"
    assert kube.client.post(url, json=_pod("fixed")).status_code == 201
    env = {"spec": {"containers": [{"name": "one", "env": [{"name": "Y", "value": "3"}]}]}}
    refused = kube.client.patch(f"{url}/fixed", json=env, headers=STRATEGIC)
    assert refused.status_code == 422
    [cause] = status_of(refused)["details"]["causes"]
    assert (cause["field"], cause["reason"]) == ("spec", "FieldValueForbidden")
    assert cause["message"].startswith(
        "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
        "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions "
        "to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was "
        "previously negative)\n"
    )
    removed = kube.client.patch(
        f"{url}/fixed",
        json={"spec": {"containers": [{"name": "two", "$patch": "delete"}]}},
        headers=STRATEGIC,
    )
    assert removed.status_code == 422
    assert status_of(removed)["message"] == (
        'Pod "fixed" is invalid: spec.containers: Forbidden: pod updates may not add or remove containers'
    )
    deadline = kube.client.patch(
        f"{url}/fixed", json={"spec": {"activeDeadlineSeconds": 5}}, headers=STRATEGIC
    )
    assert deadline.status_code == 200, deadline.text
    assert deadline.json()["spec"]["activeDeadlineSeconds"] == 5


def test_strategic_merge_patch_merges_conditions_by_type_in_kubes_order(
    kube: KubeTarget, namespace: str
) -> None:
    url = f"/api/v1/namespaces/{namespace}/pods/cond/status"
    assert kube.client.post(f"/api/v1/namespaces/{namespace}/pods", json=_pod("cond")).status_code == 201
    first = {
        "status": {
            "conditions": [{"type": "PodScheduled", "status": "False"}, {"type": "Ready", "status": "False"}]
        }
    }
    assert kube.client.patch(url, json=first, headers=STRATEGIC).status_code == 200
    second = {
        "status": {"conditions": [{"type": "Custom", "status": "True"}, {"type": "Ready", "status": "True"}]}
    }
    merged = kube.client.patch(url, json=second, headers=STRATEGIC).json()["status"]["conditions"]
    # the patch's items in its order; a new one goes before the live-only items after it
    assert [(c["type"], c["status"]) for c in merged] == [
        ("Custom", "True"),
        ("PodScheduled", "False"),
        ("Ready", "True"),
    ]
    delete = {"status": {"conditions": [{"type": "PodScheduled", "$patch": "delete"}]}}
    remaining = kube.client.patch(url, json=delete, headers=STRATEGIC).json()["status"]["conditions"]
    assert [c["type"] for c in remaining] == ["Custom", "Ready"]


def test_strategic_merge_patch_replace_directive(kube: KubeTarget, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/pods"
    assert kube.client.post(url, json=_pod("dir")).status_code == 201
    replace_labels = {"metadata": {"labels": {"$patch": "replace", "only": "this"}}}
    pod = kube.client.patch(f"{url}/dir", json=replace_labels, headers=STRATEGIC).json()
    assert pod["metadata"]["labels"] == {"only": "this"}


def test_strategic_merge_patch_unions_finalizers_new_first(kube: KubeTarget, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    kube.client.post(url, json=configmap("f", finalizers=["a.example.com/x"]))
    patched = kube.client.patch(
        f"{url}/f", json={"metadata": {"finalizers": ["b.example.com/y"]}}, headers=STRATEGIC
    ).json()
    assert patched["metadata"]["finalizers"] == ["b.example.com/y", "a.example.com/x"]
    again = kube.client.patch(
        f"{url}/f",
        json={"metadata": {"finalizers": ["a.example.com/x", "c.example.com/z"]}},
        headers=STRATEGIC,
    ).json()
    assert again["metadata"]["finalizers"] == ["b.example.com/y", "a.example.com/x", "c.example.com/z"]
    kube.client.patch(f"{url}/f", json={"metadata": {"finalizers": None}}, headers=MERGE)


def test_unknown_patch_content_type_is_415(kube: KubeTarget, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    kube.client.post(url, json=configmap("ct"))
    response = kube.client.patch(f"{url}/ct", content=b"{}", headers={"content-type": "text/plain"})
    assert response.status_code == 415
    assert status_of(response)["reason"] == "UnsupportedMediaType"


def test_patch_of_missing_object_is_404(kube: KubeTarget, namespace: str) -> None:
    response = kube.client.patch(f"/api/v1/namespaces/{namespace}/configmaps/none", json={}, headers=MERGE)
    assert response.status_code == 404


def test_patch_with_stale_resource_version_conflicts(kube: KubeTarget, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    kube.client.post(url, json=configmap("p"))
    response = kube.client.patch(
        f"{url}/p", json={"metadata": {"resourceVersion": "1"}, "data": {"k": "z"}}, headers=MERGE
    )
    assert response.status_code == 409


def test_server_side_apply_creates_then_updates_and_records_manager(kube: KubeTarget, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps/applied"
    manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: '1'\n"
    created = kube.client.patch(
        url, params={"fieldManager": "tester"}, content=manifest.encode(), headers=APPLY
    )
    assert created.status_code == 201, created.text
    managers = {(m["manager"], m["operation"]) for m in created.json()["metadata"]["managedFields"]}
    assert ("tester", "Apply") in managers
    updated = kube.client.patch(
        url, params={"fieldManager": "tester"}, content=manifest.replace("'1'", "'2'").encode(), headers=APPLY
    )
    assert updated.status_code == 200
    assert updated.json()["data"] == {"a": "2"}


def test_apply_without_field_manager_is_rejected(kube: KubeTarget, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps/nofm"
    response = kube.client.patch(
        url, content=b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: nofm}\n", headers=APPLY
    )
    assert response.status_code == 422
    assert "fieldManager: Required value: is required for apply patch" in status_of(response)["message"]
