"""Conformance: CRD validation ratcheting (KEP-4008; on by default since 1.30, GA in 1.33).

A CRD's schema is tightened after an object was stored under the lenient one; updates that leave
the now-invalid values alone are accepted, changing one of them is denied with the create-time
cause. Runs against a real cluster too (``KUEUE_BRIDGE_TEST_KUBECONFIG``, 1.30 or later).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.devcluster.conftest import KubeTarget
from tests.devcluster.helpers import CRDS, crd_established, eventually, server_minor, status_of

GROUP = "ratchet.example.com"
CRD_NAME = f"gadgets.{GROUP}"
MERGE = {"content-type": "application/merge-patch+json"}


def _schema(*, strict: bool) -> dict[str, Any]:
    size: dict[str, Any] = {"type": "integer"}
    tag: dict[str, Any] = {"type": "string"}
    port: dict[str, Any] = {"type": "integer"}
    if strict:
        size["minimum"] = 0
        tag["pattern"] = "^[a-z]+$"
        port["minimum"] = 1
    return {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "size": size,
                    "note": {"type": "string"},
                    "tags": {"type": "array", "items": tag},
                    "ports": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {
                            "type": "object",
                            "required": ["name"],
                            "properties": {"name": {"type": "string"}, "port": port},
                        },
                    },
                },
            },
            "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
        },
    }


def _crd(*, strict: bool) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": _schema(strict=strict)},
                }
            ],
        },
    }


def _gadget(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{GROUP}/v1", "kind": "Gadget", "metadata": {"name": name}, "spec": spec}


def _tighten(kube: KubeTarget, url: str) -> None:
    """Replace the CRD's schema by the strict one and wait until writes are checked against it."""
    current = kube.client.get(f"{CRDS}/{CRD_NAME}").json()
    current["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = _schema(strict=True)
    response = kube.client.put(f"{CRDS}/{CRD_NAME}", json=current)
    assert response.status_code == 200, response.text[:500]

    def strict_schema_served() -> bool:
        probe = kube.client.post(url, json=_gadget("probe", size=-1))
        if probe.status_code == 201:  # an API server still serving the old schema
            kube.client.delete(f"{url}/probe")
            return False
        return probe.status_code == 422

    eventually(strict_schema_served, timeout=30)


@pytest.fixture
def gadgets(kube: KubeTarget, namespace: str) -> Iterator[str]:
    if not kube.is_devcluster and server_minor(kube.client) < 30:
        pytest.skip("CRDValidationRatcheting is on by default from Kubernetes 1.30")
    response = kube.client.post(CRDS, json=_crd(strict=False))
    assert response.status_code == 201, response.text[:500]
    eventually(lambda: crd_established(kube.client, CRD_NAME), timeout=30)
    url = f"/apis/{GROUP}/v1/namespaces/{namespace}/gadgets"
    yield url
    kube.client.delete(f"{CRDS}/{CRD_NAME}")


def _patch(kube: KubeTarget, url: str, body: dict[str, Any]) -> httpx.Response:
    return kube.client.patch(url, json=body, headers=MERGE)


def _denied(response: httpx.Response, *causes: tuple[str, str]) -> None:
    assert response.status_code == 422, response.text[:500]
    status = status_of(response)
    assert status["reason"] == "Invalid"
    assert status["message"].startswith('Gadget.ratchet.example.com "g" is invalid: ')
    found = [(c["field"], c["message"]) for c in status["details"]["causes"]]
    assert found == list(causes)


def test_unchanged_invalid_values_ratchet_and_changed_ones_are_denied(kube: KubeTarget, gadgets: str) -> None:
    stored = {"size": -1, "tags": ["UP", "ok"], "ports": [{"name": "a", "port": 0}]}
    created = kube.client.post(gadgets, json=_gadget("g", **copy.deepcopy(stored)))
    assert created.status_code == 201, created.text[:500]
    _tighten(kube, gadgets)
    object_url = f"{gadgets}/g"

    untouched = _patch(kube, object_url, {"spec": {"note": "spec changed elsewhere"}})
    assert untouched.status_code == 200, untouched.text[:500]
    assert untouched.json()["spec"]["size"] == -1
    status_write = _patch(kube, f"{object_url}/status", {"status": {"phase": "Running"}})
    assert status_write.status_code == 200, status_write.text[:500]

    _denied(
        _patch(kube, object_url, {"spec": {"size": -2}}),
        ("spec.size", "Invalid value: -2: spec.size in body should be greater than or equal to 0"),
    )
    # list-map items correlate by key: the unchanged "a" ratchets, the new "b" is checked
    new_port = {"spec": {"ports": [{"name": "a", "port": 0}, {"name": "b", "port": 0}]}}
    _denied(
        _patch(kube, object_url, new_port),
        (
            "spec.ports[1].port",
            "Invalid value: 0: spec.ports[1].port in body should be greater than or equal to 1",
        ),
    )
    # an atomic list is only correlated as a whole: changing "ok" revalidates "UP" too
    _denied(
        _patch(kube, object_url, {"spec": {"tags": ["UP", "fine"]}}),
        ("spec.tags[0]", "Invalid value: \"UP\": spec.tags[0] in body should match '^[a-z]+$'"),
    )
    assert kube.client.get(object_url).json()["spec"] == {**stored, "note": "spec changed elsewhere"}
