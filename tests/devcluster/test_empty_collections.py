"""Empty maps and lists (conformance: devcluster and real kube-apiserver).

kube-apiserver serves built-in kinds from their Go structs: an empty map or list of an
``omitempty`` field is gone after any write, one without ``omitempty`` is ``null``, and empty
structs stay ``{}``. Custom resources keep the JSON they were written with, except their
``metadata`` (ObjectMeta). Each test checks the answer of the write and a later read, and watches
where the write path differs (create, update, merge patch, server-side apply).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from tests.devcluster.conftest import KubeTarget
from tests.devcluster.helpers import (
    CRDS,
    MERGE_PATCH,
    crd_established,
    eventually,
    jobs_url,
    namespaced_crd,
    watch,
)

APPLY = {"content-type": "application/apply-patch+yaml"}
EMPTY_METADATA: dict[str, Any] = {"labels": {}, "annotations": {}, "finalizers": [], "ownerReferences": []}


def _read_back(kube: KubeTarget, path: str) -> dict[str, Any]:
    response = kube.client.get(path)
    assert response.status_code == 200, response.text
    body: dict[str, Any] = response.json()
    return body


def _metadata_keys(obj: dict[str, Any]) -> set[str]:
    return set(obj["metadata"]) & set(EMPTY_METADATA)


def test_a_configmap_loses_its_empty_maps_on_every_write_path(kube: KubeTarget, namespace: str) -> None:
    base = f"/api/v1/namespaces/{namespace}/configmaps"
    created = kube.client.post(
        base,
        json={"metadata": {"name": "c", **EMPTY_METADATA}, "data": {}, "binaryData": {}},
    )
    assert created.status_code == 201, created.text
    for answer in (created.json(), _read_back(kube, f"{base}/c")):
        assert "data" not in answer and "binaryData" not in answer, answer
        assert _metadata_keys(answer) == set(), answer
    # a merge patch removing the last key leaves no map at all
    patched = kube.client.patch(
        f"{base}/c", json={"data": {"k": "v"}, "metadata": {"labels": {"a": "b"}}}, headers=MERGE_PATCH
    )
    assert patched.status_code == 200, patched.text
    emptied = kube.client.patch(
        f"{base}/c", json={"data": {"k": None}, "metadata": {"labels": {"a": None}}}, headers=MERGE_PATCH
    )
    assert emptied.status_code == 200, emptied.text
    assert "data" not in emptied.json() and "labels" not in emptied.json()["metadata"], emptied.text
    replaced = kube.client.put(
        f"{base}/c",
        json={**_read_back(kube, f"{base}/c"), "data": {}, "binaryData": {}},
    )
    assert replaced.status_code == 200, replaced.text
    assert "data" not in replaced.json() and "binaryData" not in replaced.json(), replaced.text
    applied = kube.client.patch(
        f"{base}/applied",
        params={"fieldManager": "conformance"},
        json={
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "applied", "labels": {}},
            "data": {},
        },
        headers=APPLY,
    )
    assert applied.status_code == 201, applied.text
    assert "data" not in applied.json() and "labels" not in applied.json()["metadata"], applied.text
    events = watch(
        kube.client, base, resourceVersion=created.json()["metadata"]["resourceVersion"], timeoutSeconds=1
    )
    assert events, "the watch saw the writes"
    for event in events:
        assert "binaryData" not in event["object"] and "annotations" not in event["object"]["metadata"], event


def test_a_job_pod_template_loses_empty_maps_and_lists_but_keeps_structs(
    kube: KubeTarget, namespace: str
) -> None:
    container = {
        "name": "main",
        "image": "busybox",
        "args": [],
        "command": [],
        "ports": [],
        "env": [],
        "resources": {"requests": {}, "limits": {}},
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "labels": {}},
        "spec": {
            "suspend": True,
            "podFailurePolicy": {"rules": []},
            "template": {
                "metadata": {"annotations": {}},
                "spec": {
                    "restartPolicy": "Never",
                    "nodeSelector": {},
                    "tolerations": [],
                    "volumes": [],
                    "imagePullSecrets": [],
                    "affinity": {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": []}},
                    "containers": [container],
                },
            },
        },
    }
    created = kube.client.post(jobs_url(namespace), json=job)
    assert created.status_code == 201, created.text
    for answer in (created.json(), _read_back(kube, jobs_url(namespace, "j"))):
        pod = answer["spec"]["template"]["spec"]
        for gone in ("nodeSelector", "tolerations", "volumes", "imagePullSecrets"):
            assert gone not in pod, (gone, pod)
        assert "annotations" not in answer["spec"]["template"]["metadata"], answer
        # a struct (and a pointer to one) given empty stays, its empty list does not
        assert pod["affinity"] == {"nodeAffinity": {}}, pod
        created_container = pod["containers"][0]
        for gone in ("args", "command", "ports", "env"):
            assert gone not in created_container, (gone, created_container)
        assert created_container["resources"] == {}, created_container
        # PodFailurePolicy.rules is `json:"rules"` (no omitempty): null, not absent
        assert answer["spec"]["podFailurePolicy"] == {"rules": None}, answer["spec"]
    # a suspended Job's template scheduling fields may change: emptied by a merge patch, they are gone
    template = jobs_url(namespace, "j")
    filled = {"metadata": {"annotations": {"a": "b"}}, "spec": {"nodeSelector": {"x": "y"}}}
    emptied = {"metadata": {"annotations": {"a": None}}, "spec": {"nodeSelector": {"x": None}}}
    for patch in (filled, emptied):
        patched = kube.client.patch(template, json={"spec": {"template": patch}}, headers=MERGE_PATCH)
        assert patched.status_code == 200, patched.text
    answer = patched.json()["spec"]["template"]
    assert "annotations" not in answer["metadata"] and "nodeSelector" not in answer["spec"], answer


def test_a_role_with_empty_rules_has_null_rules(kube: KubeTarget, namespace: str) -> None:
    roles = f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles"
    with_empty = kube.client.post(roles, json={"metadata": {"name": "empty"}, "rules": []})
    assert with_empty.status_code == 201, with_empty.text
    without = kube.client.post(roles, json={"metadata": {"name": "absent"}})
    assert without.status_code == 201, without.text
    for answer in (
        with_empty.json(),
        without.json(),
        _read_back(kube, f"{roles}/empty"),
        _read_back(kube, f"{roles}/absent"),
    ):
        # Role.rules is `json:"rules"`: an empty or missing list is served as null
        assert "rules" in answer and answer["rules"] is None, answer
    binding = {
        "metadata": {"name": "b"},
        "subjects": [],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "empty"},
    }
    bound = kube.client.post(
        f"/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/rolebindings", json=binding
    )
    assert bound.status_code == 201, bound.text
    assert "subjects" not in bound.json(), bound.text  # RoleBinding.subjects is omitempty


def test_a_lease_keeps_an_empty_spec_struct(kube: KubeTarget, namespace: str) -> None:
    leases = f"/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases"
    created = kube.client.post(leases, json={"metadata": {"name": "l", "labels": {}}, "spec": {}})
    assert created.status_code == 201, created.text
    for answer in (created.json(), _read_back(kube, f"{leases}/l")):
        assert answer["spec"] == {}, answer
        assert "labels" not in answer["metadata"], answer


def test_a_service_account_and_a_secret_lose_empty_lists_and_maps(kube: KubeTarget, namespace: str) -> None:
    account = kube.client.post(
        f"/api/v1/namespaces/{namespace}/serviceaccounts",
        json={"metadata": {"name": "sa"}, "secrets": [], "imagePullSecrets": []},
    )
    assert account.status_code == 201, account.text
    assert "secrets" not in account.json() and "imagePullSecrets" not in account.json(), account.text
    secret = kube.client.post(
        f"/api/v1/namespaces/{namespace}/secrets",
        json={"metadata": {"name": "s"}, "data": {}, "stringData": {}},
    )
    assert secret.status_code == 201, secret.text
    assert "data" not in secret.json() and "stringData" not in secret.json(), secret.text


def _empties_crd(group: str) -> dict[str, Any]:
    spec_schema = {
        "type": "object",
        "properties": {
            "selector": {"type": "object", "additionalProperties": {"type": "string"}},
            "items": {"type": "array", "items": {"type": "string"}},
            "options": {"type": "object", "properties": {"size": {"type": "integer"}}},
        },
    }
    return namespaced_crd(
        group,
        names={"plural": "empties", "singular": "empty", "kind": "Empty"},
        versions=[
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec_schema}}},
            }
        ],
    )


@pytest.fixture
def empties(kube: KubeTarget, namespace: str) -> Iterator[str]:
    group = f"e{secrets.token_hex(3)}.example.com"
    installed = kube.client.post(CRDS, json=_empties_crd(group))
    assert installed.status_code == 201, installed.text
    eventually(lambda: crd_established(kube.client, f"empties.{group}"))
    path = f"/apis/{group}/v1/namespaces/{namespace}/empties"
    eventually(lambda: kube.client.get(path).status_code == 200)
    yield path
    kube.client.delete(f"{CRDS}/empties.{group}")


def test_a_custom_resource_keeps_empty_maps_and_lists_outside_metadata(
    kube: KubeTarget, empties: str
) -> None:
    api_version = empties.split("/")[2] + "/v1"
    body = {
        "apiVersion": api_version,
        "kind": "Empty",
        "metadata": {"name": "e", "labels": {}, "annotations": {}},
        "spec": {"selector": {}, "items": [], "options": {}},
    }
    created = kube.client.post(empties, json=body)
    assert created.status_code == 201, created.text
    for answer in (created.json(), _read_back(kube, f"{empties}/e")):
        assert answer["spec"] == {"selector": {}, "items": [], "options": {}}, answer
        assert _metadata_keys(answer) == set(), answer
