"""The Secret store and caBundle injector on the process's ``shared.kube`` client.

The rotator talks to the API server through the same ``KubeClient`` as the rest of its process (the
webhook passes its own), so one process opens one client to one API server: raw dicts, typed errors,
the client's retries and rate limit. These calls happen at start-up and every 12 hours, never on the
admission path.

caBundle injection is a JSON patch per configuration: for every webhook whose ``caBundle`` differs,
a ``test`` of the webhook's name at its index (so a concurrent reorder fails instead of patching the
wrong entry) and an ``add`` of ``/webhooks/<i>/clientConfig/caBundle``. Configurations that are
already correct are not written at all.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from certs.rotation import ConflictError, StoredSecret
from shared.kube import (
    MUTATING_WEBHOOK_CONFIGURATION_GVK,
    SECRET_GVK,
    VALIDATING_WEBHOOK_CONFIGURATION_GVK,
    AlreadyExists,
    Conflict,
    KubeClient,
    NotFound,
    PatchType,
)

__all__ = [
    "KubeAPI",
    "WebhookConfigRef",
    "ca_bundle_patch",
]

MUTATING = "MutatingWebhookConfiguration"
VALIDATING = "ValidatingWebhookConfiguration"
_CONFIGURATIONS: Final = {
    MUTATING: MUTATING_WEBHOOK_CONFIGURATION_GVK,
    VALIDATING: VALIDATING_WEBHOOK_CONFIGURATION_GVK,
}


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


class KubeAPI:
    """``SecretStore`` + ``CABundleInjector`` over a ``KubeClient`` (owned and closed by the caller)."""

    def __init__(
        self,
        *,
        client: KubeClient,
        webhook_configs: Sequence[WebhookConfigRef] = (),
        missing_ok: bool = False,
    ) -> None:
        """``missing_ok``: a configuration that does not exist (yet) is skipped, not an error (the
        webhook registers them itself once it serves, ``webhook.registration``)."""
        self._client = client
        self.webhook_configs = tuple(webhook_configs)
        self.missing_ok = missing_ok

    # --- SecretStore ---------------------------------------------------------------------------
    async def read_secret(self, *, namespace: str, name: str) -> StoredSecret | None:
        try:
            secret = await self._client.get(SECRET_GVK, name, namespace=namespace)
        except NotFound:
            return None
        metadata = secret.get("metadata") or {}
        return StoredSecret(
            data=dict(secret.get("data") or {}), resource_version=metadata.get("resourceVersion")
        )

    async def write_secret(
        self, *, namespace: str, name: str, data: dict[str, str], resource_version: str | None
    ) -> None:
        metadata: dict[str, Any] = {"name": name, "namespace": namespace}
        body = {"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "type": "Opaque", "data": data}
        try:
            if resource_version is None:
                await self._client.create(SECRET_GVK, body, namespace=namespace, decode=False)
            else:
                await self._client.update(
                    SECRET_GVK, body, namespace=namespace, resource_version=resource_version, decode=False
                )
        except (Conflict, AlreadyExists) as exc:  # another replica wrote first: re-read and decide again
            raise ConflictError(str(exc)) from exc

    # --- CABundleInjector ----------------------------------------------------------------------
    async def inject_ca_bundle(self, *, ca_cert_pem: bytes) -> None:
        await self.inject_now(ca_cert_pem=ca_cert_pem)

    async def inject_now(self, *, ca_cert_pem: bytes) -> list[str]:
        """Patch every configured webhook configuration; returns ``Kind/name`` of those changed.

        Raises ``LookupError`` naming a configuration that exists under neither kind (unless
        ``missing_ok``).
        """
        changed = []
        for ref in self.webhook_configs:
            found = False
            for kind in (MUTATING, VALIDATING) if ref.kind is None else (ref.kind,):
                gvk = _CONFIGURATIONS[kind]
                try:
                    configuration = await self._client.get(gvk, ref.name)
                except NotFound:
                    continue
                found = True
                ops = ca_bundle_patch(configuration, ca_cert_pem=ca_cert_pem)
                if ops:
                    await self._client.patch(gvk, ref.name, ops, patch_type=PatchType.JSON, decode=False)
                    changed.append(f"{kind}/{ref.name}")
            if not found and not self.missing_ok:
                raise LookupError(f"webhook configuration {ref.name!r} not found")
        return changed
