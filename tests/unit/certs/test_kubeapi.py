from __future__ import annotations

import base64
from typing import Any

import pytest

from certs.kubeapi import KubeAPI, WebhookConfigRef, ca_bundle_patch
from certs.rotation import ConflictError
from shared.kube import ClientSettings, GroupVersionKind, HttpxTransport, KubeClient
from shared.kube.discovery import ResourceInfo
from tests.unit.kube.fakeapi import FakeApi

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


def _resource(group: str, kind: str, plural: str, *, namespaced: bool) -> ResourceInfo:
    verbs = frozenset({"get", "list", "create", "update", "patch", "delete"})
    return ResourceInfo(GroupVersionKind(group, "v1", kind), plural, namespaced, verbs)


def _api() -> FakeApi:
    """The fake API server of the client-runtime tests: discovery, 409s, JSON patches, as served."""
    return FakeApi(
        [
            _resource("", "Secret", "secrets", namespaced=True),
            _resource(
                "admissionregistration.k8s.io", "MutatingWebhookConfiguration", MUTATING, namespaced=False
            ),
            _resource(
                "admissionregistration.k8s.io", "ValidatingWebhookConfiguration", VALIDATING, namespaced=False
            ),
        ]
    )


def _client(api: FakeApi) -> KubeClient:
    return KubeClient(
        server="https://k8s.invalid",
        transport=HttpxTransport(api.transport()),
        settings=ClientSettings(qps=0),
    )


MUTATING = "mutatingwebhookconfigurations"
VALIDATING = "validatingwebhookconfigurations"


async def test_inject_patches_whichever_kind_exists() -> None:
    server = _api()
    server.put_object(
        f"{VALIDATING}.admissionregistration.k8s.io", {"metadata": {"name": "kb"}} | config(None)
    )
    server.put_object(f"{MUTATING}.admissionregistration.k8s.io", {"metadata": {"name": "kb"}} | config(B64))
    async with _client(server) as client:
        api = KubeAPI(client=client, webhook_configs=[WebhookConfigRef(name="kb")])
        assert await api.inject_now(ca_cert_pem=CA) == ["ValidatingWebhookConfiguration/kb"]
        patches = [r for r in server.requests if r.method == "PATCH"]
        assert [(r.path, r.headers["content-type"]) for r in patches] == [
            (f"/apis/admissionregistration.k8s.io/v1/{VALIDATING}/kb", "application/json-patch+json")
        ]
        stored = server.objects[(f"{VALIDATING}.admissionregistration.k8s.io", "", "kb")]
        assert stored["webhooks"][0]["clientConfig"]["caBundle"] == B64
        assert await api.inject_now(ca_cert_pem=CA) == []  # already current: nothing is written
        api.webhook_configs = (WebhookConfigRef(name="missing"),)
        with pytest.raises(LookupError, match="'missing' not found"):
            await api.inject_now(ca_cert_pem=CA)


async def test_secret_create_replace_and_conflict() -> None:
    server = _api()
    async with _client(server) as client:
        api = KubeAPI(client=client)
        assert await api.read_secret(namespace="ns", name="s") is None
        await api.write_secret(namespace="ns", name="s", data={"a": "Yg=="}, resource_version=None)
        stored = await api.read_secret(namespace="ns", name="s")
        assert stored is not None and stored.data == {"a": "Yg=="} and stored.resource_version
        with pytest.raises(ConflictError):  # created by another replica meanwhile (AlreadyExists)
            await api.write_secret(namespace="ns", name="s", data={}, resource_version=None)
        with pytest.raises(ConflictError):  # a stale resourceVersion (Conflict)
            await api.write_secret(namespace="ns", name="s", data={}, resource_version="0")
        await api.write_secret(
            namespace="ns", name="s", data={"b": "Yw=="}, resource_version=stored.resource_version
        )
        replaced = await api.read_secret(namespace="ns", name="s")
        assert replaced is not None and replaced.data == {"b": "Yw=="}
