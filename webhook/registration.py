"""Create, update and delete our webhook configurations, with the CA to trust, through the API server.

Two callers:

* ``kueue-bridge webhook register`` (installs without a Service and without internal certificate
  management: docker-compose, local runs against any API server) renders the configurations
  (``shared.webhook_configurations``), sets every ``clientConfig.caBundle`` and writes them once;
* ``kueue-bridge webhook --register-configurations`` in a cluster (the Helm chart, ``deploy/``, the
  release manifest): :func:`register_when_serving` writes them **only once this replica answers
  ``/readyz`` over TLS with a certificate that chains to the CA it registers**. Until a replica
  serves, nothing in the cluster calls the webhook, so a broken install (no certificate, an
  unreadable one, a crash loop, a missing image) never blocks anyone's writes, although the
  configurations say ``failurePolicy: Fail``. They carry an owner reference to a cluster-scoped
  object of the install (the webhook's ClusterRole), so deleting the install garbage-collects
  them; ``kueue-bridge webhook unregister`` (the chart's pre-delete hook) removes them before the
  webhook's pods go.

Writes are idempotent: an existing configuration is replaced (``update`` with its resourceVersion,
so a concurrent writer makes this fail loudly instead of being overwritten; the in-cluster loop
re-reads and tries again).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import copy
import logging
import ssl
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from shared.kube import GroupVersionKind, KubeClient, KubeError, NotFound

__all__ = [
    "OWNER_GVK",
    "WEBHOOK_CONFIGURATION_GVKS",
    "owner_reference",
    "register_webhook_configurations",
    "register_when_serving",
    "serves_with_ca",
    "unregister_webhook_configurations",
    "with_ca_bundle",
]

log = logging.getLogger("kueue_bridge.webhook.registration")

WEBHOOK_CONFIGURATION_GVKS: Final = {
    kind: GroupVersionKind("admissionregistration.k8s.io", "v1", kind)
    for kind in ("MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
}
#: The owner of registered configurations: a ClusterRole of the same install (cluster-scoped, as a
#: cluster-scoped dependent's owner must be).
OWNER_GVK: Final = GroupVersionKind("rbac.authorization.k8s.io", "v1", "ClusterRole")
_PROBE_TIMEOUT: Final = 5.0


def with_ca_bundle(document: Mapping[str, Any], *, ca_pem: bytes) -> dict[str, Any]:
    """A copy of ``document`` whose every webhook trusts ``ca_pem``."""
    result = copy.deepcopy(dict(document))
    bundle = base64.b64encode(ca_pem).decode("ascii")
    for hook in result.get("webhooks") or []:
        hook.setdefault("clientConfig", {})["caBundle"] = bundle
    return result


async def owner_reference(client: KubeClient, name: str) -> dict[str, Any]:
    """The ``ownerReferences`` entry naming ClusterRole ``name`` (read for its uid)."""
    owner = await client.get(OWNER_GVK, name)
    return {
        "apiVersion": OWNER_GVK.api_version,
        "kind": OWNER_GVK.kind,
        "name": name,
        "uid": owner["metadata"]["uid"],
    }


async def register_webhook_configurations(
    client: KubeClient,
    documents: Sequence[Mapping[str, Any]],
    *,
    ca_pem: bytes,
    owner: Mapping[str, Any] | None = None,
) -> list[str]:
    """Create or replace each configuration; returns ``Kind/name`` of each one written."""
    written = []
    for document in documents:
        kind = document["kind"]
        gvk = WEBHOOK_CONFIGURATION_GVKS[kind]
        body = with_ca_bundle(document, ca_pem=ca_pem)
        if owner is not None:
            body["metadata"]["ownerReferences"] = [dict(owner)]
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


async def unregister_webhook_configurations(client: KubeClient, names: Mapping[str, str]) -> list[str]:
    """Delete the configurations ``{kind: name}``; returns ``Kind/name`` of each one that existed."""
    deleted = []
    for kind, name in names.items():
        try:
            await client.delete(WEBHOOK_CONFIGURATION_GVKS[kind], name)
        except NotFound:
            continue
        deleted.append(f"{kind}/{name}")
    return deleted


async def serves_with_ca(*, port: int, ca_file: Path, host: str = "127.0.0.1") -> bool:
    """Does the server on ``host:port`` answer ``/readyz`` 200 with a certificate signed by ``ca_file``?

    The name is not checked (the certificate names the Service, we dial the loopback address);
    the chain is: that is what the API server will verify with the caBundle registered next.
    """
    try:
        context = ssl.create_default_context(cafile=str(ca_file))
    except (OSError, ssl.SSLError):
        return False
    context.check_hostname = False
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, ssl=context), timeout=_PROBE_TIMEOUT
        )
    except (OSError, ssl.SSLError, TimeoutError):
        return False
    try:
        writer.write(f"GET /readyz HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode("ascii"))
        await writer.drain()
        status_line = await asyncio.wait_for(reader.readline(), timeout=_PROBE_TIMEOUT)
    except (OSError, ssl.SSLError, TimeoutError):
        return False
    finally:
        writer.close()
        with contextlib.suppress(OSError, ssl.SSLError):
            await writer.wait_closed()
    parts = status_line.split()
    return len(parts) >= 2 and parts[1] == b"200"


async def register_when_serving(
    client: KubeClient,
    documents: Sequence[Mapping[str, Any]],
    *,
    port: int,
    ca_file: Path,
    owner_name: str | None,
    stop: asyncio.Event,
    interval: float = 2.0,
) -> None:
    """Wait until this replica serves with a certificate of ``ca_file``'s CA, then register once.

    Polls every ``interval`` seconds until ``stop``; an API error (RBAC not yet bound, a conflict
    with another replica writing the same configurations) is logged and retried. Registers once:
    after an uninstall's ``unregister`` a still-running replica must not bring them back.
    """
    announced = False
    while not stop.is_set():
        if await serves_with_ca(port=port, ca_file=ca_file):
            try:
                owner = await owner_reference(client, owner_name) if owner_name else None
                ca_pem = await asyncio.to_thread(ca_file.read_bytes)
                written = await register_webhook_configurations(client, documents, ca_pem=ca_pem, owner=owner)
            except (KubeError, OSError) as exc:
                log.warning("registering the webhook configurations failed, retrying: %s", exc)
            else:
                log.info("serving with its certificate: registered %s", ", ".join(written))
                return
        elif not announced:
            log.info("webhook configurations are registered once this replica serves with its certificate")
            announced = True
        try:
            await asyncio.wait_for(stop.wait(), timeout=interval)
        except TimeoutError:
            continue
