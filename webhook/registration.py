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

Invariant: **a replica changes the registered rules only while every serving endpoint of the
webhook Service runs the configuration it registers.** Each replica answers ``GET /configuration``
with :func:`configuration_digest` of the configurations its own configuration renders; before a
write that changes which resources are intercepted (:func:`intercepted_resources`), the registering
replica reads the Service's EndpointSlices (every endpoint that is serving, terminating ones
included) and asks each one for its digest; any other digest, or no answer, and it waits and asks
again. Why: the API server sends a request to any endpoint behind the Service. During a rollout
that adds a kind, an old replica does not know the kind and admits it unchanged (for the webhook
an unknown kind is one being removed, or never configured: letting it through is right for both),
so if the rule for the new kind were registered while an old replica still served, a create of the
new kind could reach it and escape suspension. Waiting until only replicas of the new configuration
serve closes that window; a stale replica of an older configuration also cannot take a kind back
out of the rules while newer replicas serve. A write that changes no rule (a new caBundle or owner)
needs no agreement. ``kueue-bridge webhook wait-registered`` (the chart's post-install/post-upgrade
hook, ``hack/install/steps.sh``) then waits until the registered rules cover every configured kind,
so an install or upgrade does not return before objects of every configured kind are intercepted.

Writes are idempotent: an existing configuration is replaced (``update`` with its resourceVersion,
so a concurrent writer makes this fail loudly instead of being overwritten; the in-cluster loop
re-reads and tries again).
"""

from __future__ import annotations

import asyncio
import base64
import copy
import hashlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from shared.https_probe import https_get
from shared.kube import GroupVersionKind, KubeClient, KubeError, NotFound

__all__ = [
    "CONFIGURATION_PATH",
    "ENDPOINT_SLICE_GVK",
    "OWNER_GVK",
    "WEBHOOK_CONFIGURATION_GVKS",
    "ServiceRef",
    "configuration_digest",
    "endpoints_disagreeing",
    "intercepted_resources",
    "missing_resources",
    "owner_reference",
    "register_webhook_configurations",
    "register_when_serving",
    "registered_configurations",
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
ENDPOINT_SLICE_GVK: Final = GroupVersionKind("discovery.k8s.io", "v1", "EndpointSlice")
#: The path every replica answers with the digest of the configurations it renders (module doc).
CONFIGURATION_PATH: Final = "/configuration"
_PROBE_TIMEOUT: Final = 5.0


@dataclass(frozen=True)
class ServiceRef:
    """The webhook Service whose endpoints must agree before the rules change (module doc)."""

    namespace: str
    name: str


def _without_ca_bundles(document: Mapping[str, Any]) -> dict[str, Any]:
    result = copy.deepcopy(dict(document))
    for hook in result.get("webhooks") or []:
        (hook.get("clientConfig") or {}).pop("caBundle", None)
    return result


def configuration_digest(documents: Sequence[Mapping[str, Any]]) -> str:
    """sha256 of the rendered configurations (caBundles left out: every replica trusts the same CA)."""
    canonical = json.dumps([_without_ca_bundles(d) for d in documents], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def intercepted_resources(document: Mapping[str, Any] | None) -> frozenset[tuple[str, str, str]]:
    """``(webhook name, apiGroup, resource)`` for every rule of ``document`` (none for ``None``)."""
    found = set()
    for hook in (document or {}).get("webhooks") or []:
        for rule in hook.get("rules") or []:
            for group in rule.get("apiGroups") or []:
                for resource in rule.get("resources") or []:
                    found.add((hook.get("name", ""), group, resource))
    return frozenset(found)


def missing_resources(
    registered: Mapping[str, Mapping[str, Any] | None], documents: Sequence[Mapping[str, Any]]
) -> list[str]:
    """``Kind: group/resource`` the ``documents`` intercept and ``registered`` (by kind) does not;
    a registered configuration without a caBundle covers nothing (the API server cannot call it)."""
    missing = []
    for document in documents:
        kind = document["kind"]
        current = registered.get(kind)
        bundled = current is not None and all(
            (hook.get("clientConfig") or {}).get("caBundle") for hook in current.get("webhooks") or []
        )
        covered = (
            {(group, resource) for _, group, resource in intercepted_resources(current)} if bundled else set()
        )
        absent = {(group, resource) for _, group, resource in intercepted_resources(document)} - covered
        missing += [f"{kind}: {group or 'core'}/{resource}" for group, resource in sorted(absent)]
    return missing


async def registered_configurations(
    client: KubeClient, documents: Sequence[Mapping[str, Any]]
) -> dict[str, dict[str, Any] | None]:
    """The registered configuration of each of ``documents`` (by kind), ``None`` where there is none."""
    found: dict[str, dict[str, Any] | None] = {}
    for document in documents:
        kind = document["kind"]
        try:
            found[kind] = await client.get(WEBHOOK_CONFIGURATION_GVKS[kind], document["metadata"]["name"])
        except NotFound:
            found[kind] = None
    return found


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
    """Does the server on ``host:port`` answer ``/readyz`` 200 with a certificate signed by ``ca_file``?"""
    answer = await https_get(within=_PROBE_TIMEOUT, host=host, port=port, ca_file=ca_file, path="/readyz")
    return answer is not None and answer[0] == 200


def _serving(endpoint: Mapping[str, Any]) -> bool:
    """EndpointSlice semantics: ``serving`` unset means ``ready``; ``ready`` unset means ready."""
    conditions = endpoint.get("conditions") or {}
    serving = conditions.get("serving")
    if serving is None:
        serving = conditions.get("ready")
    return serving is not False


async def _digest_of(*, host: str, port: int, ca_file: Path) -> str | None:
    answer = await https_get(
        within=_PROBE_TIMEOUT, host=host, port=port, ca_file=ca_file, path=CONFIGURATION_PATH
    )
    if answer is None or answer[0] != 200:
        return None
    try:
        digest = json.loads(answer[1]).get("digest")
    except (ValueError, AttributeError):
        return None
    return digest if isinstance(digest, str) else None


async def endpoints_disagreeing(
    client: KubeClient, service: ServiceRef, *, digest: str, ca_file: Path
) -> list[str]:
    """``address:port`` of every serving endpoint of ``service`` whose configuration digest is not
    ``digest`` (or that does not answer). None when no endpoint serves: the first replica of an
    install serves before its readiness reaches the EndpointSlices, and a replica outside the
    cluster network (a local run against a cluster) never does; no replica of another
    configuration can be sent a request then."""
    slices = await client.list_all(
        ENDPOINT_SLICE_GVK,
        namespace=service.namespace,
        label_selector=f"kubernetes.io/service-name={service.name}",
    )
    targets = []
    for endpoint_slice in slices.items:
        ports = [p["port"] for p in endpoint_slice.get("ports") or [] if p.get("port")]
        for endpoint in endpoint_slice.get("endpoints") or []:
            if not _serving(endpoint):
                continue
            targets += [(address, port) for address in endpoint.get("addresses") or [] for port in ports]
    answers = await asyncio.gather(
        *(_digest_of(host=address, port=port, ca_file=ca_file) for address, port in targets)
    )
    return [
        f"{address}:{port}"
        for (address, port), found in zip(targets, answers, strict=True)
        if found != digest
    ]


async def _may_write(
    client: KubeClient,
    documents: Sequence[Mapping[str, Any]],
    *,
    service: ServiceRef | None,
    ca_file: Path,
) -> str | None:
    """``None`` when writing ``documents`` keeps the invariant (module doc), else why not yet."""
    if service is None:
        return None  # no Service (a URL): one process serves, nothing to agree with
    registered = await registered_configurations(client, documents)
    if all(intercepted_resources(registered.get(d["kind"])) == intercepted_resources(d) for d in documents):
        return None
    disagreeing = await endpoints_disagreeing(
        client, service, digest=configuration_digest(documents), ca_file=ca_file
    )
    if disagreeing:
        return "endpoints of another configuration still serve: " + ", ".join(sorted(disagreeing))
    return None


async def register_when_serving(
    client: KubeClient,
    documents: Sequence[Mapping[str, Any]],
    *,
    port: int,
    ca_file: Path,
    owner_name: str | None,
    stop: asyncio.Event,
    service: ServiceRef | None = None,
    interval: float = 2.0,
) -> None:
    """Wait until this replica serves with a certificate of ``ca_file``'s CA, then register once.

    With ``service``, a write that changes the intercepted resources also waits until every serving
    endpoint of ``service`` runs the same configuration (module doc: the invariant). Polls every
    ``interval`` seconds until ``stop``; an API error (RBAC not yet bound, a conflict with another
    replica writing the same configurations) is logged and retried. Registers once: after an
    uninstall's ``unregister`` a still-running replica must not bring them back.
    """
    announced = False
    waiting_for = ""
    while not stop.is_set():
        if await serves_with_ca(port=port, ca_file=ca_file):
            try:
                reason = await _may_write(client, documents, service=service, ca_file=ca_file)
                if reason is None:
                    owner = await owner_reference(client, owner_name) if owner_name else None
                    ca_pem = await asyncio.to_thread(ca_file.read_bytes)
                    written = await register_webhook_configurations(
                        client, documents, ca_pem=ca_pem, owner=owner
                    )
            except (KubeError, OSError) as exc:
                log.warning("registering the webhook configurations failed, retrying: %s", exc)
            else:
                if reason is None:
                    log.info("serving with its certificate: registered %s", ", ".join(written))
                    return
                if reason != waiting_for:
                    log.info(
                        "the registered rules change once every replica runs this configuration: %s", reason
                    )
                    waiting_for = reason
        elif not announced:
            log.info("webhook configurations are registered once this replica serves with its certificate")
            announced = True
        try:
            await asyncio.wait_for(stop.wait(), timeout=interval)
        except TimeoutError:
            continue
