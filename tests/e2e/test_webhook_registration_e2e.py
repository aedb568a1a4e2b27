"""The webhook registers its configurations only once it serves with its certificate.

``kueue-bridge webhook --register-configurations`` (every install in a cluster): until a replica
answers ``/readyz`` over TLS with a certificate of the CA it registers, no configuration exists, so
a webhook that cannot serve (no certificate, one it cannot read, one of another CA) never blocks a
create; once one serves, the configurations appear with that CA and an owner, and the API server
sends our kinds to it; ``unregister`` removes them again.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from pathlib import Path
from typing import Any

import pytest

from certs import generate_ca
from shared.config import parse_config
from shared.kube import KubeClient, NotFound
from shared.kube.kinds import JOB_GVK
from shared.webhook_configurations import render_webhook_configurations
from tests.e2e.conftest import kube_client
from tests.e2e.test_webhook_e2e import CONFIG, NS, Stack, issue, job, open_stack, running_webhook
from webhook.__main__ import CONFIGURATION_NAMES
from webhook.registration import (
    OWNER_GVK,
    WEBHOOK_CONFIGURATION_GVKS,
    register_when_serving,
    serves_with_ca,
    unregister_webhook_configurations,
)
from webhook.settings_from_config import settings_from_config

pytestmark = [pytest.mark.e2e, pytest.mark.needs_shared]

OWNER = "kueue-bridge-webhook"


async def registered(client: KubeClient) -> dict[str, dict[str, Any]]:
    found = {}
    for kind, name in CONFIGURATION_NAMES.items():
        with contextlib.suppress(NotFound):
            found[kind] = await client.get(WEBHOOK_CONFIGURATION_GVKS[kind], name)
    return found


def documents(url: str) -> list[dict[str, Any]]:
    config = parse_config(CONFIG, source="e2e")
    return render_webhook_configurations(
        settings_from_config(config).frameworks, namespace=config.namespace, url=url
    )


async def test_a_webhook_that_cannot_serve_registers_nothing_and_creates_still_work(
    devcluster, shared_dir: Path, tmp_path: Path
) -> None:
    async with open_stack(devcluster, shared_dir, tmp_path) as stack:
        await unregister_webhook_configurations(stack.client, CONFIGURATION_NAMES)
        other_ca = tmp_path / "other-ca.crt"
        other_ca.write_bytes(generate_ca().cert_pem)
        unreadable = tmp_path / "missing" / "ca.crt"
        # nothing listens there / a server whose certificate another CA signed / no CA file at all
        free_port = stack.webhook.server.port + 1
        assert not await serves_with_ca(port=free_port, ca_file=stack.cert_dir / "ca.crt")
        assert not await serves_with_ca(port=stack.webhook.server.port, ca_file=other_ca)
        assert not await serves_with_ca(port=stack.webhook.server.port, ca_file=unreadable)
        stop = asyncio.Event()
        asyncio.get_running_loop().call_later(0.5, stop.set)
        await register_when_serving(
            stack.client,
            documents(stack.url),
            port=stack.webhook.server.port,
            ca_file=other_ca,
            owner_name=None,
            stop=stop,
            interval=0.05,
        )
        assert await registered(stack.client) == {}
        created = await stack.client.create(JOB_GVK, job("unblocked", queue="lq"), namespace=NS)
        assert created["spec"].get("suspend") is not True  # nobody was asked: the create just works


async def test_serving_replica_registers_with_its_ca_and_owner_and_unregister_removes_them(
    devcluster, shared_dir: Path, tmp_path: Path
) -> None:
    config = parse_config(CONFIG, source="e2e")
    async with open_stack(devcluster, shared_dir, tmp_path) as opened:
        stack: Stack = opened
        await unregister_webhook_configurations(stack.client, CONFIGURATION_NAMES)
        owner = await stack.client.create(OWNER_GVK, {"metadata": {"name": OWNER}, "rules": []})
        # a second replica with its own certificate of the same CA, registering as production does
        second_dir = tmp_path / "second"
        issue(second_dir, stack.ca)
        async with running_webhook(
            config, kubeconfig=devcluster.kubeconfig_path, cert_dir=second_dir
        ) as second:
            await register_when_serving(
                stack.client,
                documents(stack.url),
                port=second.server.port,
                ca_file=second_dir / "ca.crt",
                owner_name=OWNER,
                stop=asyncio.Event(),
                interval=0.05,
            )
        found = await registered(stack.client)
        assert set(found) == set(CONFIGURATION_NAMES)
        bundle = base64.b64encode(stack.ca.cert_pem).decode()
        for configuration in found.values():
            assert configuration["metadata"]["ownerReferences"] == [
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRole",
                    "name": OWNER,
                    "uid": owner["metadata"]["uid"],
                }
            ]
            assert {hook["clientConfig"]["caBundle"] for hook in configuration["webhooks"]} == {bundle}
        await stack.client.create(JOB_GVK, job("queued", queue="lq-none"), namespace=NS)
        stored = await stack.client.get(JOB_GVK, "queued", namespace=NS)
        assert stored["spec"]["suspend"] is True  # the API server called the registered webhook
        assert sorted(await unregister_webhook_configurations(stack.client, CONFIGURATION_NAMES)) == sorted(
            f"{kind}/{name}" for kind, name in CONFIGURATION_NAMES.items()
        )
        assert await registered(stack.client) == {}
        after = await stack.client.create(JOB_GVK, job("after", queue="lq-none"), namespace=NS)
        assert after["spec"].get("suspend") is not True
        async with kube_client(devcluster.kubeconfig_path) as other:
            assert await unregister_webhook_configurations(other, CONFIGURATION_NAMES) == []
