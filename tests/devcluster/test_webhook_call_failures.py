"""What the API server answers when it cannot call a webhook (conformance: devcluster and real).

``kueue-bridge preflight`` probes our webhooks with a dry-run create and reads these answers: a
``failurePolicy: Fail`` webhook the API server cannot call makes the request fail with
``Internal error occurred: failed calling webhook "<name>": <cause>``, whether the ``caBundle`` is
not PEM (kube-apiserver cannot even build a client) or nothing listens.
"""

from __future__ import annotations

import base64
import secrets
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.devcluster.conftest import KubeTarget
from tests.devcluster.helpers import configmap_webhook

PATH = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"


def configuration(name: str, namespace: str, client_config: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [
            configmap_webhook(
                "mcall.conformance.example.com", namespace, client_config, operations=["CREATE"]
            )
        ],
    }


@pytest.fixture
def registered(kube: KubeTarget, namespace: str) -> Iterator[Any]:
    names: list[str] = []

    def register(client_config: dict[str, Any]) -> None:
        name = f"conf-call-{secrets.token_hex(4)}"
        response = kube.client.post(PATH, json=configuration(name, namespace, client_config))
        assert response.status_code == 201, response.text
        names.append(name)

    yield register
    for name in names:
        kube.client.delete(f"{PATH}/{name}")


def dry_run_create(kube: KubeTarget, namespace: str) -> dict[str, Any]:
    """A dry-run create, repeated until the webhook answers it: kube-apiserver reads webhook
    configurations from an informer, so one just registered is called a moment later (longer on a
    loaded machine); until then the create is admitted (dry run: nothing is stored)."""
    deadline = time.monotonic() + 30.0
    while True:
        response = kube.client.post(
            f"/api/v1/namespaces/{namespace}/configmaps",
            params={"dryRun": "All"},
            json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "probe"}},
        )
        if response.status_code != 201 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert response.status_code == 500, response.text
    status: dict[str, Any] = response.json()
    assert status["reason"] == "InternalError"
    return status


def test_a_cabundle_that_is_not_pem_fails_the_call_before_dialing(
    kube: KubeTarget, namespace: str, registered: Any
) -> None:
    not_pem = base64.b64encode(b"not a certificate").decode()
    registered({"url": "https://127.0.0.1:1/mutate", "caBundle": not_pem})
    status = dry_run_create(kube, namespace)
    assert status["message"] == (
        'Internal error occurred: failed calling webhook "mcall.conformance.example.com": '
        "could not get REST client: unable to load root certificates: unable to parse bytes as PEM block"
    )


def test_nothing_listening_fails_the_call_with_the_dial_error(
    kube: KubeTarget, namespace: str, registered: Any
) -> None:
    registered({"url": "https://127.0.0.1:1/mutate"})
    status = dry_run_create(kube, namespace)
    assert status["message"] == (
        'Internal error occurred: failed calling webhook "mcall.conformance.example.com": failed to call webhook: '
        'Post "https://127.0.0.1:1/mutate?timeout=10s": dial tcp 127.0.0.1:1: connect: connection refused'
    )
    assert status["details"] == {
        "causes": [{"message": status["message"].removeprefix("Internal error occurred: ")}]
    }


def test_webhook_configurations_themselves_are_never_sent_to_webhooks(
    kube: KubeTarget, namespace: str, registered: Any
) -> None:
    """kube-apiserver exempts its admission configuration kinds from webhooks (a broken webhook could
    otherwise never be removed): with a failing webhook in force for ConfigMaps *and* for webhook
    configurations, writing a webhook configuration still succeeds."""
    name = f"conf-exempt-{secrets.token_hex(4)}"
    hook = configmap_webhook(
        "mexempt.conformance.example.com", namespace, {"url": "https://127.0.0.1:1/mutate"}, operations=["*"]
    )
    hook["rules"].append(
        {
            "apiGroups": ["admissionregistration.k8s.io"],
            "apiVersions": ["*"],
            "operations": ["*"],
            "resources": ["*"],
        }
    )
    response = kube.client.post(
        PATH,
        json={
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": name},
            "webhooks": [hook],
        },
    )
    assert response.status_code == 201, response.text
    try:
        dry_run_create(kube, namespace)  # the failing webhook is in force (ConfigMaps fail)
        other = configuration(
            f"conf-other-{secrets.token_hex(4)}", namespace, {"url": "https://127.0.0.1:1/x"}
        )
        created = kube.client.post(PATH, params={"dryRun": "All"}, json=other)
        assert created.status_code == 201, created.text
        updated = kube.client.patch(
            f"{PATH}/{name}",
            json={"metadata": {"labels": {"touched": "yes"}}},
            headers={"Content-Type": "application/merge-patch+json"},
        )
        assert updated.status_code == 200, updated.text
    finally:
        deleted = kube.client.delete(f"{PATH}/{name}")
    assert deleted.status_code == 200, deleted.text
