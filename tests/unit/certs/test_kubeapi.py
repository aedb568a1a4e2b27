from __future__ import annotations

import base64
from typing import Any

import httpx
import orjson
import pytest

from certs.kubeapi import KubeAPI, WebhookConfigRef, ca_bundle_patch
from certs.rotation import ConflictError

CA = b"-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n"
B64 = base64.b64encode(CA).decode()


def config(*bundles: str | None) -> dict[str, Any]:
    return {
        "webhooks": [
            {"name": f"w{i}", "clientConfig": {"caBundle": b} if b else {}} for i, b in enumerate(bundles)
        ]
    }


def test_patch_sets_only_webhooks_that_differ() -> None:
    ops = ca_bundle_patch(config(B64, None, "old"), ca_cert_pem=CA)
    assert ops == [
        {"op": "test", "path": "/webhooks/1/name", "value": "w1"},
        {"op": "add", "path": "/webhooks/1/clientConfig/caBundle", "value": B64},
        {"op": "test", "path": "/webhooks/2/name", "value": "w2"},
        {"op": "add", "path": "/webhooks/2/clientConfig/caBundle", "value": B64},
    ]
    assert ca_bundle_patch(config(B64), ca_cert_pem=CA) == []
    assert ca_bundle_patch({}, ca_cert_pem=CA) == []


def test_unknown_kind_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown webhook configuration kind"):
        WebhookConfigRef(name="x", kind="Nope")


class FakeServer:
    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}
        self.patches: list[tuple[str, list[Any]]] = []

    def handler(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if request.method == "GET":
            obj = self.objects.get(path)
            return httpx.Response(200, json=obj) if obj else httpx.Response(404, json={})
        if request.method == "PATCH":
            assert request.headers["content-type"] == "application/json-patch+json"
            self.patches.append((path, orjson.loads(request.content)))
            return httpx.Response(200, json={})
        if request.method == "POST":
            body = orjson.loads(request.content)
            self.objects[f"{path}/{body['metadata']['name']}"] = body | {
                "metadata": body["metadata"] | {"resourceVersion": "1"}
            }
            return httpx.Response(201, json=body)
        if request.method == "PUT":
            body = orjson.loads(request.content)
            if self.objects[path]["metadata"]["resourceVersion"] != body["metadata"]["resourceVersion"]:
                return httpx.Response(409, json={})
            self.objects[path] = body
            return httpx.Response(200, json=body)
        return httpx.Response(405)


async def test_inject_patches_whichever_kind_exists() -> None:
    server = FakeServer()
    server.objects["/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/kb"] = config(None)
    server.objects["/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/kb"] = config(B64)
    http = httpx.AsyncClient(transport=httpx.MockTransport(server.handler), base_url="https://k8s")
    async with KubeAPI(http=http, webhook_configs=[WebhookConfigRef(name="kb")]) as api:
        assert await api.inject_now(ca_cert_pem=CA) == ["ValidatingWebhookConfiguration/kb"]
        api.webhook_configs = (WebhookConfigRef(name="missing"),)
        with pytest.raises(LookupError, match="'missing' not found"):
            await api.inject_now(ca_cert_pem=CA)


async def test_secret_create_replace_and_conflict() -> None:
    server = FakeServer()
    http = httpx.AsyncClient(transport=httpx.MockTransport(server.handler), base_url="https://k8s")
    async with KubeAPI(http=http) as api:
        assert await api.read_secret(namespace="ns", name="s") is None
        await api.write_secret(namespace="ns", name="s", data={"a": "Yg=="}, resource_version=None)
        stored = await api.read_secret(namespace="ns", name="s")
        assert stored is not None and stored.data == {"a": "Yg=="} and stored.resource_version == "1"
        with pytest.raises(ConflictError):
            await api.write_secret(namespace="ns", name="s", data={}, resource_version="0")
