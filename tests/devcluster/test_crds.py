"""Conformance: CustomResourceDefinitions, with the real CRDs this project integrates with."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.devcluster.conftest import KubeTarget
from tests.devcluster.helpers import CRDS, crd_established, eventually, namespaced_crd, status_of

CONTAINERS = [{"name": "c", "image": "busybox"}]


def _install(kube: KubeTarget, crd: dict[str, Any]) -> dict[str, Any]:
    response = kube.client.post(CRDS, json=crd)
    if response.status_code == 409:
        response = kube.client.get(f"{CRDS}/{crd['metadata']['name']}")
    assert response.status_code in {200, 201}, response.text[:500]
    installed: dict[str, Any] = response.json()
    return installed


@pytest.fixture
def real_crds(kube: KubeTarget, shared_dir: Path) -> list[dict[str, Any]]:
    installed = []
    for path in sorted((shared_dir / "crds").glob("*/*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            if document and document.get("kind") == "CustomResourceDefinition":
                installed.append(_install(kube, document))
    for crd in installed:
        eventually(functools.partial(crd_established, kube.client, crd["metadata"]["name"]))
    # kube-apiserver's create answer has no conditions yet (its controllers set them just after)
    return [kube.client.get(f"{CRDS}/{crd['metadata']['name']}").json() for crd in installed]


def _create(kube: KubeTarget, path: str, body: dict[str, Any]) -> dict[str, Any]:
    response = kube.client.post(path, json=body)
    assert response.status_code == 201, response.text[:1000]
    created: dict[str, Any] = response.json()
    return created


@pytest.mark.needs_shared
def test_real_crds_install_and_serve_their_kinds(
    kube: KubeTarget, namespace: str, real_crds: list[dict[str, Any]]
) -> None:
    for crd in real_crds:
        spec = crd["spec"]
        for version in spec["versions"]:
            listing = kube.client.get(f"/apis/{spec['group']}/{version['name']}").json()
            names = {r["name"] for r in listing["resources"]}
            assert spec["names"]["plural"] in names
            if "status" in (version.get("subresources") or {}):
                assert f"{spec['names']['plural']}/status" in names
        conditions = {c["type"]: c["status"] for c in crd["status"]["conditions"]}
        assert conditions["NamesAccepted"] == "True"
        assert crd["status"]["acceptedNames"]["kind"] == spec["names"]["kind"]

    workload = _create(
        kube,
        f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{namespace}/workloads",
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {"name": "wl"},
            "spec": {
                "queueName": "q",
                "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": CONTAINERS}}}],
            },
        },
    )
    assert workload["metadata"]["generation"] == 1
    _create(
        kube,
        f"/apis/jobset.x-k8s.io/v1alpha2/namespaces/{namespace}/jobsets",
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "metadata": {"name": "js"},
            "spec": {
                "replicatedJobs": [
                    {
                        "name": "w",
                        "replicas": 1,
                        "template": {
                            "spec": {
                                "template": {"spec": {"restartPolicy": "Never", "containers": CONTAINERS}}
                            }
                        },
                    }
                ]
            },
        },
    )
    _create(
        kube,
        f"/apis/workload.codeflare.dev/v1beta2/namespaces/{namespace}/appwrappers",
        {
            "apiVersion": "workload.codeflare.dev/v1beta2",
            "kind": "AppWrapper",
            "metadata": {"name": "aw"},
            "spec": {
                "components": [
                    {
                        "template": {
                            "apiVersion": "batch/v1",
                            "kind": "Job",
                            "metadata": {"name": "j"},
                            "spec": {
                                "template": {"spec": {"restartPolicy": "Never", "containers": CONTAINERS}}
                            },
                        }
                    }
                ]
            },
        },
    )
    _create(
        kube,
        f"/apis/tekton.dev/v1/namespaces/{namespace}/pipelineruns",
        {
            "apiVersion": "tekton.dev/v1",
            "kind": "PipelineRun",
            "metadata": {"name": "pr"},
            "spec": {"pipelineRef": {"name": "p"}},
        },
    )
    old_version = kube.client.get(f"/apis/kueue.x-k8s.io/v1beta1/namespaces/{namespace}/workloads/wl").json()
    assert old_version["apiVersion"] == "kueue.x-k8s.io/v1beta1"
    assert old_version["metadata"]["uid"] == workload["metadata"]["uid"]


def _widget_crd(group: str = "example.com") -> dict[str, Any]:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "size": {"type": "integer", "minimum": 0},
                    "color": {"type": "string", "default": "blue"},
                },
            },
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
    }
    return namespaced_crd(
        group,
        names={"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
        versions=[
            {
                "name": version,
                "served": True,
                "storage": version == "v1",
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": schema},
            }
            for version in ("v1", "v1alpha1")
        ],
    )


@pytest.fixture
def widgets(kube: KubeTarget, namespace: str) -> Any:
    _install(kube, _widget_crd())
    eventually(lambda: crd_established(kube.client, "widgets.example.com"))
    yield f"/apis/example.com/v1/namespaces/{namespace}/widgets"
    kube.client.delete(f"{CRDS}/widgets.example.com")


def test_custom_resource_semantics(kube: KubeTarget, widgets: str) -> None:
    created = _create(
        kube,
        widgets,
        {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w"},
            "spec": {"size": 1, "unknown": True},
            "status": {"ready": True},
        },
    )
    assert created["spec"] == {"size": 1, "color": "blue"}
    assert "status" not in created
    assert created["metadata"]["generation"] == 1
    status = kube.client.patch(
        f"{widgets}/w/status",
        json={"status": {"ready": True}},
        headers={"content-type": "application/merge-patch+json"},
    ).json()
    assert status["status"] == {"ready": True}
    assert status["metadata"]["generation"] == 1
    # a custom resource's /status takes status only: not the spec, not metadata
    via_status = {**status, "spec": {"size": 9}, "status": {"ready": False}}
    via_status["metadata"] = {**status["metadata"], "labels": {"via": "status"}}
    written = kube.client.put(f"{widgets}/w/status", json=via_status)
    assert written.status_code == 200, written.text
    assert (written.json()["status"], written.json()["spec"]["size"]) == ({"ready": False}, 1)
    assert "labels" not in written.json()["metadata"]
    spec = kube.client.patch(
        f"{widgets}/w", json={"spec": {"size": 2}}, headers={"content-type": "application/merge-patch+json"}
    ).json()
    assert spec["metadata"]["generation"] == 2


def test_custom_resource_is_served_in_every_version(kube: KubeTarget, widgets: str) -> None:
    _create(kube, widgets, {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}})
    alpha = kube.client.get(widgets.replace("/v1/", "/v1alpha1/") + "/w").json()
    assert alpha["apiVersion"] == "example.com/v1alpha1"
    listing = kube.client.get(widgets.replace("/v1/", "/v1alpha1/")).json()
    assert listing["kind"] == "WidgetList"
    assert listing["items"][0]["apiVersion"] == "example.com/v1alpha1"


def test_schema_violation_is_422_with_kube_message(kube: KubeTarget, widgets: str) -> None:
    response = kube.client.post(
        widgets,
        json={
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "bad"},
            "spec": {"size": -1},
        },
    )
    assert response.status_code == 422
    status = status_of(response)
    assert status["message"].startswith('Widget.example.com "bad" is invalid: spec.size: Invalid value: -1')
    assert status["details"]["causes"][0]["field"] == "spec.size"


def test_strategic_merge_patch_on_custom_resource_is_415(kube: KubeTarget, widgets: str) -> None:
    _create(kube, widgets, {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}})
    response = kube.client.patch(
        f"{widgets}/w",
        json={"spec": {"size": 3}},
        headers={"content-type": "application/strategic-merge-patch+json"},
    )
    assert response.status_code == 415
    status = status_of(response)
    assert status["reason"] == "UnsupportedMediaType"
    assert status["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"
    )


def test_deleting_a_crd_removes_its_objects_and_endpoints(kube: KubeTarget, namespace: str) -> None:
    _install(kube, _widget_crd("gone.example.com"))
    eventually(lambda: crd_established(kube.client, "widgets.gone.example.com"))
    url = f"/apis/gone.example.com/v1/namespaces/{namespace}/widgets"
    _create(kube, url, {"apiVersion": "gone.example.com/v1", "kind": "Widget", "metadata": {"name": "w"}})
    kube.client.delete(f"{CRDS}/widgets.gone.example.com")
    eventually(lambda: kube.client.get(f"{CRDS}/widgets.gone.example.com").status_code == 404, timeout=30)
    assert kube.client.get(url).status_code == 404
    assert kube.client.get("/apis/gone.example.com/v1").status_code == 404


def test_invalid_crd_is_rejected(kube: KubeTarget) -> None:
    crd = _widget_crd("bad.example.com")
    crd["metadata"]["name"] = "wrong-name.bad.example.com"
    response = kube.client.post(CRDS, json=crd)
    assert response.status_code == 422


@pytest.mark.needs_shared
def test_a_custom_resource_without_its_kind_is_refused(
    kube: KubeTarget, namespace: str, real_crds: list[dict[str, Any]]
) -> None:
    """kube-apiserver infers the kind of a built-in object from the URL, not a custom resource's."""
    body = {"metadata": {"name": "no-kind"}, "spec": {}}
    response = kube.client.post("/apis/kueue.x-k8s.io/v1beta2/resourceflavors", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["message"].startswith(
        "the object provided is unrecognized (must be of type ResourceFlavor): Object 'Kind' is missing in '"
    )
    built_in = kube.client.post(
        f"/api/v1/namespaces/{namespace}/configmaps", json={"metadata": {"name": "no-kind"}}
    )
    assert built_in.status_code == 201, built_in.text
