"""Conformance: a custom resource's structural-schema defaults and its status subresource.

Defaults are applied on create, on update, in nested objects and list items, and on read (an
object stored before a default was added gets it when read); with a status subresource the main
resource ignores ``status`` and ``/status`` takes nothing else. Compared with kube-apiserver 1.36.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from tests.devcluster.conftest import KubeTarget
from tests.devcluster.helpers import CRDS, MERGE_PATCH, crd_established, eventually, namespaced_crd


def _schema(*, with_mode_default: bool) -> dict[str, Any]:
    mode: dict[str, Any] = {"type": "string"}
    if with_mode_default:
        mode["default"] = "fast"
    return {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "default": {},
                "properties": {
                    "replicas": {"type": "integer", "default": 1},
                    "mode": mode,
                    "policy": {
                        "type": "object",
                        "default": {},
                        "properties": {"retries": {"type": "integer", "default": 3}},
                    },
                    "ports": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string"},
                                "protocol": {"type": "string", "default": "TCP"},
                            },
                        },
                    },
                },
            },
            "status": {
                "type": "object",
                "properties": {
                    "phase": {"type": "string", "default": "Pending"},
                    "count": {"type": "integer"},
                },
            },
        },
    }


def _crd(group: str, *, with_mode_default: bool = False) -> dict[str, Any]:
    return namespaced_crd(
        group,
        names={"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
        versions=[
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": _schema(with_mode_default=with_mode_default)},
            }
        ],
    )


@pytest.fixture
def gizmos(kube: KubeTarget, namespace: str) -> Iterator[tuple[str, str]]:
    """(collection URL, CRD group): a CRD of its own per test, so a schema change stays local."""
    group = f"g{secrets.token_hex(4)}.example.com"
    assert kube.client.post(CRDS, json=_crd(group)).status_code == 201
    eventually(lambda: crd_established(kube.client, f"gizmos.{group}"))
    eventually(lambda: kube.client.get(f"/apis/{group}/v1/namespaces/{namespace}/gizmos").status_code == 200)
    yield f"/apis/{group}/v1/namespaces/{namespace}/gizmos", group
    kube.client.delete(f"{CRDS}/gizmos.{group}")


def _gizmo(name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"kind": "Gizmo", "metadata": {"name": name}}
    if spec:
        body["spec"] = spec
    return body


def test_defaults_fill_a_create_at_every_level(kube: KubeTarget, gizmos: tuple[str, str]) -> None:
    url, group = gizmos
    response = kube.client.post(url, json={**_gizmo("g"), "apiVersion": f"{group}/v1"})
    assert response.status_code == 201, response.text
    assert response.json()["spec"] == {"replicas": 1, "policy": {"retries": 3}}
    with_items = {
        "apiVersion": f"{group}/v1",
        **_gizmo("h", replicas=2, ports=[{"name": "a"}, {"name": "b", "protocol": "UDP"}]),
    }
    created = kube.client.post(url, json=with_items).json()
    assert created["spec"]["ports"] == [{"name": "a", "protocol": "TCP"}, {"name": "b", "protocol": "UDP"}]
    assert created["spec"]["replicas"] == 2


def test_defaults_fill_an_update_and_a_patch(kube: KubeTarget, gizmos: tuple[str, str]) -> None:
    url, group = gizmos
    created = kube.client.post(url, json={"apiVersion": f"{group}/v1", **_gizmo("g", replicas=5)}).json()
    emptied = {**created, "spec": {"policy": {}}}
    updated = kube.client.put(f"{url}/g", json=emptied)
    assert updated.status_code == 200, updated.text
    assert updated.json()["spec"] == {"replicas": 1, "policy": {"retries": 3}}
    removed = kube.client.patch(
        f"{url}/g", json={"spec": {"policy": None, "replicas": 7}}, headers=MERGE_PATCH
    )
    assert removed.status_code == 200, removed.text
    assert removed.json()["spec"] == {"replicas": 7, "policy": {"retries": 3}}


def test_defaults_added_to_the_schema_later_appear_when_read(
    kube: KubeTarget, gizmos: tuple[str, str]
) -> None:
    """kube-apiserver also defaults what it reads from storage: objects stored before a default
    existed show it on get, list and watch, and keep their resourceVersion."""
    url, group = gizmos
    created = kube.client.post(url, json={"apiVersion": f"{group}/v1", **_gizmo("old")}).json()
    assert "mode" not in created["spec"]
    crd = kube.client.get(f"{CRDS}/gizmos.{group}").json()
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = _schema(with_mode_default=True)
    assert kube.client.put(f"{CRDS}/gizmos.{group}", json=crd).status_code == 200

    def defaulted() -> dict[str, Any] | None:
        got = kube.client.get(f"{url}/old").json()
        return got if got["spec"].get("mode") == "fast" else None

    read = eventually(defaulted)
    assert read["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]
    [listed] = kube.client.get(url).json()["items"]
    assert listed["spec"]["mode"] == "fast"


def test_main_resource_ignores_status_and_status_takes_nothing_else(
    kube: KubeTarget, gizmos: tuple[str, str]
) -> None:
    url, group = gizmos
    created = kube.client.post(
        url, json={"apiVersion": f"{group}/v1", **_gizmo("s", replicas=2), "status": {"count": 9}}
    ).json()
    assert "status" not in created
    with_status = {**created, "status": {"count": 1}}
    updated = kube.client.put(f"{url}/s", json=with_status).json()
    assert "status" not in updated
    assert updated["metadata"]["generation"] == 1
    via_status = {**updated, "spec": {"replicas": 9}, "status": {"count": 4}}
    via_status["metadata"] = {**updated["metadata"], "labels": {"via": "status"}}
    written = kube.client.put(f"{url}/s/status", json=via_status)
    assert written.status_code == 200, written.text
    body = written.json()
    assert body["status"] == {"count": 4, "phase": "Pending"}, "status defaults apply too"
    assert body["spec"]["replicas"] == 2
    assert "labels" not in body["metadata"]
    assert body["metadata"]["generation"] == 1
    patched = kube.client.patch(
        f"{url}/s", json={"spec": {"replicas": 3}, "status": {"count": 0}}, headers=MERGE_PATCH
    )
    assert patched.json()["status"] == {"count": 4, "phase": "Pending"}
    assert patched.json()["metadata"]["generation"] == 2
