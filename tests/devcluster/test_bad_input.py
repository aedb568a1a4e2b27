"""Conformance: hostile input gets a Kubernetes Status, never a 500, a crash or a partial write."""

from __future__ import annotations

import pytest

from tests.devcluster.conftest import KubeTarget
from tests.devcluster.helpers import configmap, create_job, job_manifest, patch_job, status_of


def _alive(kube: KubeTarget) -> None:
    assert kube.client.get("/api/v1/namespaces/default").status_code == 200


def test_body_over_three_mebibytes_is_413(kube: KubeTarget, namespace: str) -> None:
    body = configmap("huge")
    body["data"] = {"k": "x" * (3 * 1024 * 1024 + 10)}
    response = kube.client.post(f"/api/v1/namespaces/{namespace}/configmaps", json=body)
    assert response.status_code == 413
    assert status_of(response)["reason"] == "RequestEntityTooLarge"
    assert kube.client.get(f"/api/v1/namespaces/{namespace}/configmaps/huge").status_code == 404
    _alive(kube)


@pytest.mark.parametrize("garbage", [b"{not json", b"\xff\xfe\x00", b"[1, 2, 3]", b"null", b"42", b""])
def test_garbage_bodies_are_400(kube: KubeTarget, namespace: str, garbage: bytes) -> None:
    response = kube.client.post(
        f"/api/v1/namespaces/{namespace}/configmaps",
        content=garbage,
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 400, response.text
    assert status_of(response)["reason"] == "BadRequest"
    _alive(kube)


def test_wrong_content_type_is_415(kube: KubeTarget, namespace: str) -> None:
    response = kube.client.post(
        f"/api/v1/namespaces/{namespace}/configmaps",
        content=b"name=x",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 415
    assert status_of(response)["reason"] == "UnsupportedMediaType"


def test_yaml_bodies_are_accepted(kube: KubeTarget, namespace: str) -> None:
    manifest = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  a: b\n"
    response = kube.client.post(
        f"/api/v1/namespaces/{namespace}/configmaps",
        content=manifest,
        headers={"content-type": "application/yaml"},
    )
    assert response.status_code == 201


@pytest.mark.parametrize(
    "body",
    [
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "kind-mismatch"}},
        {"apiVersion": "v2", "kind": "ConfigMap", "metadata": {"name": "version-mismatch"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": "not-an-object"},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "other"}},
    ],
)
def test_mismatched_objects_are_400(kube: KubeTarget, namespace: str, body: dict) -> None:
    response = kube.client.post(f"/api/v1/namespaces/{namespace}/configmaps", json=body)
    assert response.status_code == 400, response.text
    _alive(kube)


@pytest.mark.parametrize(
    "metadata",
    [
        {"name": ""},
        {"name": "x" * 300},
        {"name": "ok", "labels": {"a": 5}},
        {"name": "ok", "labels": ["not", "a", "map"]},
        {"name": "ok", "finalizers": "nope"},
        {"name": "ok", "ownerReferences": [{"kind": "X"}]},
        {"name": 12},
    ],
)
def test_invalid_metadata_is_422_without_partial_write(
    kube: KubeTarget, namespace: str, metadata: dict
) -> None:
    response = kube.client.post(
        f"/api/v1/namespaces/{namespace}/configmaps",
        json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata},
    )
    assert response.status_code == 422, response.text
    listing = kube.client.get(f"/api/v1/namespaces/{namespace}/configmaps").json()["items"]
    assert [item["metadata"]["name"] for item in listing] == ["kube-root-ca.crt"]


def test_unsupported_methods_are_405(kube: KubeTarget, namespace: str) -> None:
    response = kube.client.put(f"/api/v1/namespaces/{namespace}/configmaps", json={})
    assert response.status_code == 405
    assert status_of(response)["reason"] == "MethodNotAllowed"


def test_bad_query_parameters_are_400(kube: KubeTarget, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    assert kube.client.get(url, params={"limit": "many"}).status_code == 400
    assert kube.client.post(url, params={"dryRun": "Sometimes"}, json=configmap("d")).status_code == 400
    response = kube.client.request("DELETE", f"{url}/x", params={"propagationPolicy": "Sideways"})
    assert response.status_code in {404, 422}


@pytest.mark.parametrize(
    "spec",
    [
        {"template": "x"},
        {"parallelism": "2"},
        {"selector": [1]},
        {"selector": {"matchExpressions": [{"key": ["a"], "operator": "In", "values": ["b"]}]}},
        {"managedBy": 5},
        {"completionMode": {"a": 1}},
        {"podReplacementPolicy": ["Failed"]},
    ],
)
def test_job_spec_fields_of_the_wrong_shape_are_rejected(
    kube: KubeTarget, namespace: str, spec: dict
) -> None:
    body = job_manifest("odd", suspend=True, **spec)
    response = kube.client.post(f"/apis/batch/v1/namespaces/{namespace}/jobs", json=body)
    assert response.status_code in (400, 422), response.text
    status_of(response)
    _alive(kube)


@pytest.mark.parametrize(
    "status",
    [
        "x",
        {"conditions": 5},
        {"conditions": ["x", 5]},
        {"uncountedTerminatedPods": {"succeeded": [{"a": 1}]}},
        {"startTime": 5},
        {"active": "x"},
        {"completedIndexes": ["0"]},
    ],
)
def test_job_status_of_the_wrong_shape_never_breaks_the_server(
    kube: KubeTarget, namespace: str, status: object
) -> None:
    """Kube refuses these at decoding (400); the devcluster may say 422 or store an ignorable value."""
    create_job(kube.client, namespace, "odd", suspend=True)
    response = patch_job(kube.client, namespace, "odd", {"status": status}, status=True)
    assert response.status_code in (200, 400, 422), response.text
    if response.status_code != 200:
        status_of(response)
    _alive(kube)
    assert kube.client.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/odd").status_code == 200
