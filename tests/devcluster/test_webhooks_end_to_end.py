"""Admission webhooks called by the devcluster itself (devcluster.apiserver.admission wired into the verbs).

A small HTTPS webhook server (stdlib http.server + a trustme CA) mutates ConfigMaps (adds a label)
and refuses those whose name starts with "deny"; the devcluster reaches it by URL and through
``ServerOptions.service_resolver`` for a ``service`` client config, as a real cluster would through
its Service.
"""

from __future__ import annotations

import base64
import json
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from tests.devcluster.helpers import send_admission_response

pytest.importorskip("devcluster.apiserver.admission")
trustme = pytest.importorskip("trustme")


class _Hook(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        review = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        request = review["request"]
        response: dict[str, Any] = {"uid": request["uid"], "allowed": True}
        if self.path.startswith("/mutate"):
            patch = [{"op": "add", "path": "/metadata/labels", "value": {"mutated": "yes"}}]
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(json.dumps(patch).encode()).decode()
        elif request["name"].startswith("deny"):
            response = {
                "uid": request["uid"],
                "allowed": False,
                "status": {"code": 403, "reason": "Forbidden", "message": "names starting with deny"},
            }
        send_admission_response(self, response)

    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture
def webhook_server() -> Iterator[tuple[str, bytes]]:
    ca = trustme.CA()
    cert = ca.issue_cert("hook.default.svc", "127.0.0.1")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    cert.configure_cert(context)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hook)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"127.0.0.1:{server.server_address[1]}", ca.cert_pem.bytes()
    server.shutdown()
    server.server_close()
    thread.join()


def _hook(name: str, client_config: dict[str, Any]) -> dict[str, Any]:
    return {
        "name": name,
        "admissionReviewVersions": ["v1"],
        "sideEffects": "None",
        "clientConfig": client_config,
        "rules": [
            {
                "operations": ["CREATE", "UPDATE"],
                "apiGroups": [""],
                "apiVersions": ["v1"],
                "resources": ["configmaps"],
            }
        ],
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "default"}},
    }


def test_mutating_and_validating_webhooks_are_called(devcluster_factory, webhook_server) -> None:
    address, ca_pem = webhook_server
    cluster = devcluster_factory(service_resolver={"default/hook": address})
    bundle = base64.b64encode(ca_pem).decode()
    with httpx.Client(
        base_url=cluster.url,
        verify=ssl.create_default_context(cafile=str(cluster.ca_file)),
        headers={"Authorization": f"Bearer {cluster.token}"},
    ) as client:
        mutating = {
            "metadata": {"name": "m"},
            "webhooks": [_hook("m.example.com", {"url": f"https://{address}/mutate", "caBundle": bundle})],
        }
        validating = {
            "metadata": {"name": "v"},
            "webhooks": [
                _hook(
                    "v.example.com",
                    {
                        "service": {"namespace": "default", "name": "hook", "path": "/validate"},
                        "caBundle": bundle,
                    },
                )
            ],
        }
        assert (
            client.post(
                "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations", json=mutating
            ).status_code
            == 201
        )
        assert (
            client.post(
                "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", json=validating
            ).status_code
            == 201
        )
        url = "/api/v1/namespaces/default/configmaps"
        created = client.post(url, json={"metadata": {"name": "ok"}})
        assert created.status_code == 201, created.text
        assert created.json()["metadata"]["labels"] == {"mutated": "yes"}
        denied = client.post(url, json={"metadata": {"name": "deny-me"}})
        assert denied.status_code == 403
        assert "names starting with deny" in denied.json()["message"]
        assert client.get(f"{url}/deny-me").status_code == 404
        elsewhere = client.post(
            "/api/v1/namespaces/kube-public/configmaps", json={"metadata": {"name": "deny-x"}}
        )
        assert elsewhere.status_code == 201
