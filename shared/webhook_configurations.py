"""Render the Mutating/ValidatingWebhookConfigurations for the configured frameworks.

One webhook entry per framework GVK (its plural resource from the registry), so a kind can be
removed from the configuration without touching the others:

* mutating on CREATE (Kueue's job webhooks), validating on CREATE and UPDATE;
* ``failurePolicy: Fail`` (an unqueued job must not slip past Kueue), ``sideEffects: None``,
  ``timeoutSeconds``: :data:`WEBHOOK_TIMEOUT_SECONDS` (see there for the figures it comes from),
  ``admissionReviewVersions: [v1]``,
  ``matchPolicy: Equivalent`` (a request for another served version of the kind is converted to the
  one we serve);
* ``namespaceSelector`` excluding ``kube-system`` and our own namespace (Kueue's kustomization does
  the same), so a broken webhook can never block the control plane or its own recovery;
* on the validating webhooks, ``matchConditions`` that leave out the **job reconciler's own
  updates** (:data:`RECONCILER_UPDATES_SKIPPED`): it only starts, stops and finalizes jobs, and those
  writes change none of the fields our validation guards (queue name, priority class, prebuilt
  workload, maximum execution time, elastic-job and admission-gate annotations, ``managedBy``);
  the API server's own validation of the kind still applies. Kueue's webhook runs in the process of
  its controller, so it cannot be down while the controller writes; ours is a separate Deployment,
  and without this a webhook outage with ``failurePolicy: Fail`` would stop the reconciler from
  suspending a preempted job. It also saves one admission round trip per started job (a third of the
  webhook's calls in ``bench/reconciler_cpu.py --real``). Requests are told apart by the user the
  API server authenticated (``shared.identities``); in ``make dev`` every process shares one user, so
  there the validating webhook still sees the reconciler's updates and the e2e suites keep checking
  that they would pass;
* ``clientConfig`` is a Service (in-cluster) or a URL (local runs against the devcluster); the
  ``caBundle`` is injected later by the cert rotator or ``kueue-bridge certs inject``.

It lives in ``shared`` because three parties render or read the same objects: ``kueue-bridge webhook
manifests`` (the webhook's own command), ``kueue-bridge manifests`` and ``kueue-bridge preflight``
(which compares what is registered with what should be).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Protocol

from shared.identities import service_account_username
from shared.kube import GroupVersionKind
from shared.labelselector import system_namespaces_excluded

__all__ = [
    "MUTATING_CONFIGURATION_NAME",
    "RECONCILER_UPDATES_SKIPPED",
    "VALIDATING_CONFIGURATION_NAME",
    "WEBHOOK_NAME_SUFFIX",
    "WEBHOOK_TIMEOUT_SECONDS",
    "WebhookKind",
    "reconciler_updates_skipped",
    "render_webhook_configurations",
    "webhook_name",
]

MUTATING_CONFIGURATION_NAME: Final = "kueue-bridge-mutating-webhook-configuration"
VALIDATING_CONFIGURATION_NAME: Final = "kueue-bridge-validating-webhook-configuration"
#: Every webhook we register is named ``<m|v><kind>.<group or core>`` + this suffix.
WEBHOOK_NAME_SUFFIX: Final = ".kueue-bridge.x-k8s.io"
#: ``timeoutSeconds`` of every webhook (the API server allows 1 to 30). Measured (docs/installing.md,
#: bench/webhook_latency.py): p99 14 ms at saturation (about 2,000 admissions/s) and 26 ms at half that rate
#: on a busy 2-core host; the slowest path, an AppWrapper's SubjectAccessReviews, has a deadline of its
#: own of 5 s (webhook.serving.admission_review.ACCESS_REVIEW_TIMEOUT). 10 s is twice that deadline: an answer always
#: arrives before the API server gives up, and an unreachable webhook fails a create within 10 s
#: rather than the maximum 30.
WEBHOOK_TIMEOUT_SECONDS: Final = 10
#: The name of the validating webhooks' match condition that leaves out the job reconciler's own
#: updates (module docstring); a qualified name, as the API server requires.
RECONCILER_UPDATES_SKIPPED: Final = "not-an-update-by-the-job-reconciler"


def reconciler_updates_skipped(namespace: str) -> dict[str, str]:
    """The ``matchConditions`` entry: call the webhook unless the request is an UPDATE made by the job
    reconciler's ServiceAccount in ``namespace`` (a CREATE by it would still be validated)."""
    username = service_account_username("reconciler", namespace=namespace)
    return {
        "name": RECONCILER_UPDATES_SKIPPED,
        "expression": f"!(request.operation == 'UPDATE' && request.userInfo.username == '{username}')",
    }


class WebhookKind(Protocol):
    """A kind to register webhooks for: its GVK and plural resource name."""

    @property
    def gvk(self) -> GroupVersionKind: ...

    @property
    def plural(self) -> str: ...


def webhook_name(gvk: GroupVersionKind, *, mutating: bool) -> str:
    """``mjob.batch.kueue-bridge.x-k8s.io``: our webhook's name for ``gvk``."""
    return f"{'m' if mutating else 'v'}{gvk.kind.lower()}.{gvk.group or 'core'}{WEBHOOK_NAME_SUFFIX}"


def _client_config(
    *, path: str, url: str | None, service: str | None, namespace: str, port: int
) -> dict[str, Any]:
    if url is not None:
        return {"url": url.rstrip("/") + path}
    return {"service": {"name": service, "namespace": namespace, "path": path, "port": port}}


def _webhook(
    framework: WebhookKind, *, mutating: bool, client_config: dict[str, Any], namespace: str, timeout: int
) -> dict[str, Any]:
    return {
        "name": webhook_name(framework.gvk, mutating=mutating),
        "admissionReviewVersions": ["v1"],
        "clientConfig": client_config,
        "failurePolicy": "Fail",
        "matchPolicy": "Equivalent",
        "sideEffects": "None",
        "timeoutSeconds": timeout,
        "namespaceSelector": system_namespaces_excluded(namespace),
        **({} if mutating else {"matchConditions": [reconciler_updates_skipped(namespace)]}),
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
    frameworks: Sequence[WebhookKind],
    *,
    namespace: str,
    url: str | None = None,
    service: str | None = None,
    port: int = 443,
    timeout_seconds: int = WEBHOOK_TIMEOUT_SECONDS,
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
                    _webhook(
                        f,
                        mutating=mutating,
                        client_config=client_config,
                        namespace=namespace,
                        timeout=timeout_seconds,
                    )
                    for f in frameworks
                ],
            }
        )
    return documents
