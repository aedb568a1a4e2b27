"""Render the Mutating/ValidatingWebhookConfigurations for the configured frameworks.

One webhook entry per framework GVK (its plural resource from the registry), so a kind can be
removed from the configuration without touching the others:

* mutating on CREATE (Kueue's job webhooks), validating on CREATE and UPDATE;
* ``failurePolicy: Fail`` (an unqueued job must not slip past Kueue), ``sideEffects: None``,
  ``timeoutSeconds: 10`` (the API server's maximum), ``admissionReviewVersions: [v1]``,
  ``matchPolicy: Equivalent`` (a request for another served version of the kind is converted to the
  one we serve);
* ``namespaceSelector`` excluding ``kube-system`` and our own namespace (Kueue's kustomization does
  the same), so a broken webhook can never block the control plane or its own recovery;
* ``clientConfig`` is a Service (in-cluster) or a URL (local runs against the devcluster); the
  ``caBundle`` is injected later by the cert rotator or ``kueue-bridge certs inject``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from webhook.settings import Framework

__all__ = ["MUTATING_CONFIGURATION_NAME", "VALIDATING_CONFIGURATION_NAME", "render_webhook_configurations"]

MUTATING_CONFIGURATION_NAME = "kueue-bridge-mutating-webhook-configuration"
VALIDATING_CONFIGURATION_NAME = "kueue-bridge-validating-webhook-configuration"


def _client_config(
    *, path: str, url: str | None, service: str | None, namespace: str, port: int
) -> dict[str, Any]:
    if url is not None:
        return {"url": url.rstrip("/") + path}
    return {"service": {"name": service, "namespace": namespace, "path": path, "port": port}}


def _webhook(
    framework: Framework, *, mutating: bool, client_config: dict[str, Any], namespace: str
) -> dict[str, Any]:
    kind = framework.gvk.kind.lower()
    group = framework.gvk.group or "core"
    prefix = "m" if mutating else "v"
    return {
        "name": f"{prefix}{kind}.{group}.kueue-bridge.x-k8s.io",
        "admissionReviewVersions": ["v1"],
        "clientConfig": client_config,
        "failurePolicy": "Fail",
        "matchPolicy": "Equivalent",
        "sideEffects": "None",
        "timeoutSeconds": 10,
        "namespaceSelector": {
            "matchExpressions": [
                {
                    "key": "kubernetes.io/metadata.name",
                    "operator": "NotIn",
                    "values": ["kube-system", namespace],
                }
            ]
        },
        "rules": [
            {
                "apiGroups": [framework.gvk.group],
                "apiVersions": [framework.gvk.version],
                "operations": ["CREATE"] if mutating else ["CREATE", "UPDATE"],
                "resources": [framework.plural],
                "scope": "Namespaced",
            }
        ],
    }


def render_webhook_configurations(
    frameworks: Sequence[Framework],
    *,
    namespace: str,
    url: str | None = None,
    service: str | None = None,
    port: int = 443,
) -> list[dict[str, Any]]:
    """[MutatingWebhookConfiguration, ValidatingWebhookConfiguration] as dicts."""
    if (url is None) == (service is None):
        raise ValueError("give exactly one of url or service")
    documents = []
    for mutating, kind, name, path in (
        (True, "MutatingWebhookConfiguration", MUTATING_CONFIGURATION_NAME, "/mutate"),
        (False, "ValidatingWebhookConfiguration", VALIDATING_CONFIGURATION_NAME, "/validate"),
    ):
        client_config = _client_config(path=path, url=url, service=service, namespace=namespace, port=port)
        documents.append(
            {
                "apiVersion": "admissionregistration.k8s.io/v1",
                "kind": kind,
                "metadata": {"name": name, "labels": {"app.kubernetes.io/name": "kueue-bridge"}},
                "webhooks": [
                    _webhook(f, mutating=mutating, client_config=client_config, namespace=namespace)
                    for f in frameworks
                ],
            }
        )
    return documents
