"""``kueue-bridge multikueue`` as a process: probes, metrics, the Lease, hot standby, SIGTERM, bad config.

What an operator sees: the probe port answers ``/healthz``, ``/readyz`` and ``/metrics``; the Lease
``kueue-bridge-multikueue`` names the leader while a second replica waits; SIGTERM exits 0 and hands
the Lease over (empty ``holderIdentity``) so the standby takes it at once; a bad configuration
exits 1 naming the field.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from shared.kube import KubeClient, NotFound
from tests.e2e.conftest import eventually, install_crds, kube_client
from tests.e2e.test_reconciler_support import (
    LEASE,
    NAMESPACE,
    SYSTEM_NAMESPACE,
    ReconcilerProcess,
    running_processes,
    write_config,
)

pytestmark = [pytest.mark.e2e, pytest.mark.needs_shared]

LEASE_NAME = "kueue-bridge-multikueue"
MULTIKUEUE_CRDS = ("workloads", "admissionchecks", "multikueueconfigs", "multikueueclusters")


async def prepare(client: KubeClient, shared_dir: Path) -> None:
    await install_crds(
        client, [shared_dir / "crds" / "kueue" / f"kueue.x-k8s.io_{name}.yaml" for name in MULTIKUEUE_CRDS]
    )
    await client.create(NAMESPACE, {"metadata": {"name": SYSTEM_NAMESPACE}})


async def lease_holder(client: KubeClient) -> str | None:
    try:
        lease = await client.get(LEASE, LEASE_NAME, namespace=SYSTEM_NAMESPACE)
    except NotFound:
        return None
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


def multikueue_process(tmp_path: Path, devcluster: Any, identity: str) -> ReconcilerProcess:
    return ReconcilerProcess(
        config=write_config(tmp_path / "config.yaml"),
        kubeconfig=devcluster.kubeconfig_path,
        identity=identity,
        log_path=tmp_path / f"{identity}.log",
        component="multikueue",
    )


async def test_probes_lease_standby_and_sigterm_handover(
    devcluster: Any, shared_dir: Path, tmp_path: Path
) -> None:
    async with kube_client(devcluster.kubeconfig_path) as client:
        await prepare(client, shared_dir)
        first = multikueue_process(tmp_path, devcluster, "replica-a")
        second = multikueue_process(tmp_path, devcluster, "replica-b")
        with running_processes(first):
            # the deadlines here are safety nets: starting a process on a loaded machine takes long
            port = await eventually(
                lambda: asyncio.sleep(0, first.probe_port()),
                what="the probe port in the log",
                within_seconds=120,
            )
            await eventually(
                lambda: _holder_is(client, "replica-a"),
                what="replica-a holding the Lease",
                within_seconds=120,
            )
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
                assert (await http.get("/healthz")).status_code == 200

                async def ready() -> bool:
                    return (await http.get("/readyz")).status_code == 200

                await eventually(ready, what="/readyz once the caches synced", within_seconds=120)
                metrics = (await http.get("/metrics")).text
                assert (
                    'kueue_bridge_leader_election_master_status{name="kueue-bridge-multikueue"} 1.0'
                    in metrics
                )
                assert "kueue_bridge_rest_client_requests_total" in metrics
            with running_processes(second):
                await eventually(
                    lambda: asyncio.sleep(0, second.probe_port()),
                    what="the standby's probe port",
                    within_seconds=120,
                )
                assert await lease_holder(client) == "replica-a"
                first.terminate()
                assert await asyncio.to_thread(first.wait) == 0
                # released on the way out: never still held by the process that exited (the standby
                # may already have taken it); how soon the standby takes it depends on the load
                assert await lease_holder(client) in ("", "replica-b")
                await eventually(
                    lambda: _holder_is(client, "replica-b"),
                    what="the standby taking the Lease",
                    within_seconds=120,
                )
                second.terminate()
                assert await asyncio.to_thread(second.wait) == 0
                assert await lease_holder(client) == ""


async def _holder_is(client: KubeClient, identity: str) -> bool:
    return await lease_holder(client) == identity


def test_bad_configuration_exits_1_naming_the_field(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "bad.yaml", extra={"kueueBridge": {"multiKueue": {"controllerName": "not valid"}}}
    )
    result = subprocess.run(
        [sys.executable, "-m", "kueue_bridge.cli", "multikueue", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert f'{config}: kueueBridge.multiKueue.controllerName: Invalid value: "not valid"' in result.stderr
