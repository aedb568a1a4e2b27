"""The Secret store and caBundle injector backed by a real API server.

The official ``kubernetes`` package only loads the kubeconfig (or in-cluster service account: exec
auth and token refresh come for free); requests go through ``httpx`` with raw JSON, so we never
round-trip an object through a generated model (kubernetes 37's pydantic models drop or reject
fields they do not know). These calls happen at start-up and every 12 hours, never on the admission
path. When ``shared.kube``'s async client lands, an implementation of the same two
protocols (``SecretStore``, ``CABundleInjector``) can replace this module without touching the rotator.

caBundle injection is a JSON patch per configuration: for every webhook whose ``caBundle`` differs,
a ``test`` of the webhook's name at its index (so a concurrent reorder fails instead of patching the
wrong entry) and an ``add`` of ``/webhooks/<i>/clientConfig/caBundle``. Configurations that are
already correct are not written at all.
"""

from __future__ import annotations

import base64
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Self

import httpx
import orjson

from certs.rotation import ConflictError, StoredSecret
from shared.kube.auth import BearerTokenAuth, ConfigurationTokenSource

__all__ = [
    "KubeAPI",
    "WebhookConfigRef",
    "ca_bundle_patch",
]

MUTATING = "MutatingWebhookConfiguration"
VALIDATING = "ValidatingWebhookConfiguration"


def ca_bundle_patch(configuration: dict[str, Any], *, ca_cert_pem: bytes) -> list[dict[str, Any]]:
    """The JSON patch that sets every webhook's caBundle to ``ca_cert_pem`` (empty when already set)."""
    wanted = base64.b64encode(ca_cert_pem).decode("ascii")
    ops: list[dict[str, Any]] = []
    webhooks = configuration.get("webhooks") or []
    for index, webhook in enumerate(webhooks):
        if not isinstance(webhook, dict):
            continue
        client_config = webhook.get("clientConfig")
        if isinstance(client_config, dict) and client_config.get("caBundle") == wanted:
            continue
        ops.append({"op": "test", "path": f"/webhooks/{index}/name", "value": webhook.get("name")})
        if not isinstance(client_config, dict):
            ops.append(
                {"op": "add", "path": f"/webhooks/{index}/clientConfig", "value": {"caBundle": wanted}}
            )
        else:
            ops.append({"op": "add", "path": f"/webhooks/{index}/clientConfig/caBundle", "value": wanted})
    return ops


@dataclass(frozen=True)
class WebhookConfigRef:
    """One of our webhook configurations; ``kind`` None means "whichever kind has this name"."""

    name: str
    kind: str | None = None

    def __post_init__(self) -> None:
        if self.kind not in (None, MUTATING, VALIDATING):
            raise ValueError(f"unknown webhook configuration kind {self.kind!r}")


def _ssl_context(configuration: Any) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, configuration.key_file)
    return context


class KubeAPI:
    """``SecretStore`` + ``CABundleInjector`` over an ``httpx.AsyncClient``. Close it (``async with``)."""

    def __init__(self, *, http: httpx.AsyncClient, webhook_configs: Sequence[WebhookConfigRef] = ()) -> None:
        self._http = http
        self.webhook_configs = tuple(webhook_configs)

    @classmethod
    def from_kubeconfig(
        cls, *, kubeconfig: str | None, webhook_configs: Sequence[WebhookConfigRef] = ()
    ) -> KubeAPI:
        """From a kubeconfig file, or the in-cluster service account when ``kubeconfig`` is None."""
        from kubernetes import client as k8s  # slow to import; only needed to read kubeconfigs
        from kubernetes import config as k8s_config

        configuration = k8s.Configuration()
        if kubeconfig:
            k8s_config.load_kube_config(  # type: ignore[no-untyped-call]
                config_file=kubeconfig, client_configuration=configuration
            )
        else:
            k8s_config.load_incluster_config(  # type: ignore[no-untyped-call]
                client_configuration=configuration
            )
        http = httpx.AsyncClient(
            base_url=configuration.host,
            verify=_ssl_context(configuration),
            # the kubernetes library keeps the token under "BearerToken" (token kubeconfigs, in-cluster
            # service accounts) or "authorization": shared.kube's source reads both, per request
            auth=BearerTokenAuth(ConfigurationTokenSource(configuration)),
            timeout=httpx.Timeout(10.0),
        )
        return cls(http=http, webhook_configs=webhook_configs)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.aclose()

    # --- SecretStore ---------------------------------------------------------------------------
    async def read_secret(self, *, namespace: str, name: str) -> StoredSecret | None:
        response = await self._http.get(f"/api/v1/namespaces/{namespace}/secrets/{name}")
        if response.status_code == 404:
            return None
        response.raise_for_status()
        secret = orjson.loads(response.content)
        metadata = secret.get("metadata") or {}
        return StoredSecret(
            data=dict(secret.get("data") or {}), resource_version=metadata.get("resourceVersion")
        )

    async def write_secret(
        self, *, namespace: str, name: str, data: dict[str, str], resource_version: str | None
    ) -> None:
        metadata: dict[str, Any] = {"name": name, "namespace": namespace}
        body = {"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "type": "Opaque", "data": data}
        if resource_version is None:
            response = await self._http.post(
                f"/api/v1/namespaces/{namespace}/secrets", content=orjson.dumps(body), headers=_JSON
            )
        else:
            metadata["resourceVersion"] = resource_version
            response = await self._http.put(
                f"/api/v1/namespaces/{namespace}/secrets/{name}", content=orjson.dumps(body), headers=_JSON
            )
        if response.status_code == 409:
            raise ConflictError(response.text)
        response.raise_for_status()

    # --- CABundleInjector ----------------------------------------------------------------------
    async def inject_ca_bundle(self, *, ca_cert_pem: bytes) -> None:
        await self.inject_now(ca_cert_pem=ca_cert_pem)

    async def inject_now(self, *, ca_cert_pem: bytes) -> list[str]:
        """Patch every configured webhook configuration; returns ``Kind/name`` of those changed.

        Raises ``LookupError`` naming a configuration that exists under neither kind.
        """
        changed = []
        for ref in self.webhook_configs:
            found = False
            for kind in (MUTATING, VALIDATING) if ref.kind is None else (ref.kind,):
                url = f"{_ADMISSION_API}/{_PLURAL[kind]}/{ref.name}"
                response = await self._http.get(url)
                if response.status_code == 404:
                    continue
                response.raise_for_status()
                found = True
                ops = ca_bundle_patch(orjson.loads(response.content), ca_cert_pem=ca_cert_pem)
                if ops:
                    patched = await self._http.patch(url, content=orjson.dumps(ops), headers=_JSON_PATCH)
                    patched.raise_for_status()
                    changed.append(f"{kind}/{ref.name}")
            if not found:
                raise LookupError(f"webhook configuration {ref.name!r} not found")
        return changed


_JSON = {"Content-Type": "application/json"}
_JSON_PATCH = {"Content-Type": "application/json-patch+json"}
_ADMISSION_API = "/apis/admissionregistration.k8s.io/v1"
_PLURAL = {MUTATING: "mutatingwebhookconfigurations", VALIDATING: "validatingwebhookconfigurations"}
