"""Small helpers shared by the devcluster conformance tests (no fixtures here)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any, Final

import httpx
import orjson


def job_manifest(name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "template": {
                "spec": {"restartPolicy": "Never", "containers": [{"name": "main", "image": "busybox"}]}
            },
            **spec,
        },
    }
    return body


MERGE_PATCH = {"content-type": "application/merge-patch+json"}
#: a ``spec.managedBy`` no controller owns: kube's job controller leaves such Jobs, and their status,
#: to the test (so the same tests run against a real cluster)
CONFORMANCE_MANAGER = "example.com/conformance"


def jobs_url(namespace: str, name: str = "", subresource: str = "") -> str:
    return "/".join(p for p in (f"/apis/batch/v1/namespaces/{namespace}/jobs", name, subresource) if p)


def create_job(client: httpx.Client, namespace: str, name: str, **spec: Any) -> dict[str, Any]:
    """Create a Job managed by :data:`CONFORMANCE_MANAGER` (unless ``managedBy`` is given)."""
    spec.setdefault("managedBy", CONFORMANCE_MANAGER)
    response = client.post(jobs_url(namespace), json=job_manifest(name, **spec))
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def patch_job(
    client: httpx.Client, namespace: str, name: str, patch: dict[str, Any], *, status: bool = False
) -> httpx.Response:
    """A JSON merge patch of the Job, or of its ``/status`` subresource."""
    url = jobs_url(namespace, name, "status" if status else "")
    return client.patch(url, json=patch, headers=MERGE_PATCH)


def server_minor(client: httpx.Client) -> int:
    """The Kubernetes minor version the target reports (``/version``; GKE writes e.g. ``"36+"``)."""
    minor = str(client.get("/version").json()["minor"])
    return int("".join(ch for ch in minor if ch.isdigit()))


def configmap(name: str, labels: dict[str, str] | None = None, **extra_meta: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, **extra_meta}
    if labels:
        meta["labels"] = labels
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}


def eventually(check: Callable[[], Any], *, timeout: float = 10.0, interval: float = 0.02) -> Any:
    """Poll ``check`` until it returns something truthy; fail with its last value at the deadline."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = check()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s (last value: {last!r})")


def watch(client: httpx.Client, path: str, **params: Any) -> list[dict[str, Any]]:
    """All events of a watch that the server ends itself (pass timeoutSeconds)."""
    events = []
    query = {
        "watch": "true",
        **{k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in params.items()},
    }
    with client.stream("GET", path, params=query) as response:
        assert response.status_code == 200, response.read()
        for line in response.iter_lines():
            if line.strip():
                events.append(orjson.loads(line))
    return events


def status_of(response: httpx.Response) -> dict[str, Any]:
    body: dict[str, Any] = response.json()
    assert body["kind"] == "Status", body
    assert body["code"] == response.status_code
    return body


def configmap_webhook(
    name: str, namespace: str, client_config: dict[str, Any], *, operations: list[str], **extra: Any
) -> dict[str, Any]:
    """A webhook of a configuration for ConfigMaps of ``namespace`` only (the tests' objects), failing
    closed; ``extra`` adds or replaces fields (``matchConditions``, ``failurePolicy``...)."""
    return {
        "name": name,
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "failurePolicy": "Fail",
        "clientConfig": client_config,
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "rules": [
            {"apiGroups": [""], "apiVersions": ["v1"], "operations": operations, "resources": ["configmaps"]}
        ],
        **extra,
    }


def send_admission_response(handler: BaseHTTPRequestHandler, response: dict[str, Any]) -> None:
    """Answer a webhook call (from a test's HTTP handler) with an AdmissionReview holding ``response``."""
    body = json.dumps(
        {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}
    ).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


#: the CustomResourceDefinition collection
CRDS: Final = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def crd_established(client: httpx.Client, name: str) -> bool:
    """Whether CRD ``name`` has its ``Established`` condition True: its kinds are served."""
    status = client.get(f"{CRDS}/{name}").json().get("status") or {}
    return any(c["type"] == "Established" and c["status"] == "True" for c in status.get("conditions") or [])


def namespaced_crd(group: str, *, names: dict[str, Any], versions: list[dict[str, Any]]) -> dict[str, Any]:
    """A namespaced CustomResourceDefinition ``<plural>.<group>`` serving ``versions``."""
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{names['plural']}.{group}"},
        "spec": {"group": group, "scope": "Namespaced", "names": names, "versions": versions},
    }
