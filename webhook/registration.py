"""Create or update our webhook configurations, with the CA to trust, through the API server.

For installs without a Service and without internal certificate management (docker-compose, local
runs against any API server): ``kueue-bridge webhook register`` renders the configurations
(``shared.webhook_configurations``), sets every ``clientConfig.caBundle`` and writes them, so no ``kubectl`` is
needed. Idempotent: an existing configuration is replaced (``update`` with its resourceVersion, so
a concurrent writer makes us fail loudly instead of being overwritten); run it again after the CA
changes.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Mapping, Sequence
from typing import Any, Final

from shared.kube import GroupVersionKind, KubeClient, NotFound

__all__ = ["WEBHOOK_CONFIGURATION_GVKS", "register_webhook_configurations", "with_ca_bundle"]

WEBHOOK_CONFIGURATION_GVKS: Final = {
    kind: GroupVersionKind("admissionregistration.k8s.io", "v1", kind)
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
}


def with_ca_bundle(document: Mapping[str, Any], *, ca_pem: bytes) -> dict[str, Any]:
    """A copy of ``document`` whose every webhook trusts ``ca_pem``."""
    result = copy.deepcopy(dict(document))
    bundle = base64.b64encode(ca_pem).decode("ascii")
    for hook in result.get("webhooks") or []:
        hook.setdefault("clientConfig", {})["caBundle"] = bundle
    return result


async def register_webhook_configurations(
    client: KubeClient, documents: Sequence[Mapping[str, Any]], *, ca_pem: bytes
) -> list[str]:
    """Create or replace each configuration; returns ``Kind/name`` of each one written."""
    written = []
    for document in documents:
        kind = document["kind"]
        gvk = WEBHOOK_CONFIGURATION_GVKS[kind]
        body = with_ca_bundle(document, ca_pem=ca_pem)
        name = body["metadata"]["name"]
        try:
            current = await client.get(gvk, name)
        except NotFound:
            await client.create(gvk, body)
        else:
            body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            await client.update(gvk, body)
        written.append(f"{kind}/{name}")
    return written
