"""``kueue-bridge reconciler`` as a process: probes, metrics, logs keyed by job, SIGTERM, bad config.

What is asserted is what an operator sees: the probe port answers ``/healthz`` and ``/metrics``
(controller reconciles, errors and durations from ``shared.kube``'s ``KubeMetrics``, Workload life
events from ``RecorderSink``); Workloads appear for queued jobs; log lines of a failing reconcile
name the job; SIGTERM exits 0 *and* hands the Lease over (empty ``holderIdentity``) so a standby
need not wait for expiry; a bad configuration exits 1 naming the offending field path.

Not asserted: that *only* the broken job logs a failure. On a busy machine the reconciler may
write from a stale cache; the 409 is a requeue logged at DEBUG (never "reconcile failed", which is
asserted), but a genuinely transient error on another job would be a legitimate failure line.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from shared.kube import KubeClient, NotFound
from tests.e2e.conftest import eventually, install_crds, kube_client, write_latest
from tests.e2e.test_reconciler_support import (
    JOB,
    LEASE,
    LEASE_NAME,
    NAMESPACE,
    SYSTEM_NAMESPACE,
    WORKLOAD,
    ReconcilerProcess,
    new_job,
    running_processes,
    write_config,
)

pytestmark = [pytest.mark.e2e, pytest.mark.needs_shared]

KUEUE_CRDS = ("workloads", "resourceflavors", "workloadpriorityclasses", "clusterqueues", "localqueues")


async def prepare(client: KubeClient, shared_dir: Path, *, namespaces: tuple[str, ...] = ("e2e",)) -> None:
    await install_crds(
        client, [shared_dir / "crds" / "kueue" / f"kueue.x-k8s.io_{name}.yaml" for name in KUEUE_CRDS]
    )
    for name in (SYSTEM_NAMESPACE, *namespaces):
        await client.create(NAMESPACE, {"metadata": {"name": name}})


async def workloads_of(client: KubeClient, job_name: str, *, namespace: str = "e2e") -> list[dict[str, Any]]:
    items = (await client.list(WORKLOAD, namespace=namespace))["items"]
    return [
        w for w in items if any(r.get("name") == job_name for r in w["metadata"].get("ownerReferences") or [])
    ]


async def lease_holder(client: KubeClient) -> str | None:
    try:
        lease = await client.get(LEASE, LEASE_NAME, namespace=SYSTEM_NAMESPACE)
    except NotFound:
        return None
    return str((lease.get("spec") or {}).get("holderIdentity") or "")


def metric_value(text: str, metric: str, /, **labels: str) -> float:
    """Sum of the samples of ``metric`` whose labels include ``labels`` (0 when there is none)."""
    total = 0.0
    for line in text.splitlines():
        if not line.startswith(metric + "{") and not line.startswith(metric + " "):
            continue
        head, _, value = line.rpartition(" ")
        if all(f'{key}="{wanted}"' in head for key, wanted in labels.items()):
            total += float(value)
    return total


async def test_serves_probes_and_metrics_and_releases_the_lease_on_sigterm(
    devcluster: Any, shared_dir: Path, tmp_path: Path
) -> None:
    async with kube_client(devcluster.kubeconfig_path) as client:
        await prepare(client, shared_dir)
        await client.create(JOB, new_job("first"), namespace="e2e")
        bad_priority = new_job("bad-priority")
        bad_priority["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "missing"
        await client.create(JOB, bad_priority, namespace="e2e")

        process = ReconcilerProcess(
            config=write_config(tmp_path / "config.yaml"),
            kubeconfig=devcluster.kubeconfig_path,
            identity="replica-a",
            log_path=tmp_path / "reconciler.log",
            extra_args=("--log-format", "json"),
        )
        with running_processes(process):
            port = await eventually(
                lambda: asyncio.sleep(0, process.probe_port()), what="the probe port in the log"
            )
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
                assert (await http.get("/healthz")).status_code == 200
                await eventually(lambda: workloads_of(client, "first"), what="the Workload of job first")
                assert await lease_holder(client) == "replica-a"

                later = new_job("later")
                await client.create(JOB, later, namespace="e2e")
                await eventually(lambda: workloads_of(client, "later"), what="the Workload of job later")

                completed = {
                    "startTime": "2026-11-22T02:34:04Z",
                    "completionTime": "2026-11-22T02:34:20Z",
                    "succeeded": 1,
                    "conditions": [
                        {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached"},
                        {"type": "Complete", "status": "True", "reason": "CompletionsReached"},
                    ],
                }
                await write_latest(
                    client,
                    JOB,
                    "later",
                    namespace="e2e",
                    change=lambda j: j.update(status=completed),
                    status=True,
                )

                async def metrics_complete() -> str | None:
                    text = (await http.get("/metrics")).text
                    wanted = (
                        metric_value(
                            text, "kueue_bridge_reconciler_workload_events_total", reason="CreatedWorkload"
                        )
                        >= 2
                        and metric_value(
                            text, "kueue_bridge_reconciler_workload_events_total", reason="FinishedWorkload"
                        )
                        >= 1
                        and metric_value(
                            text, "kueue_bridge_controller_runtime_reconcile_errors_total", controller="job"
                        )
                        >= 1
                    )
                    return text if wanted else None

                text = await eventually(
                    metrics_complete, what="Workload events and reconcile errors on /metrics"
                )
                assert (
                    metric_value(
                        text,
                        "kueue_bridge_controller_runtime_reconcile_total",
                        controller="job",
                        result="success",
                    )
                    >= 2
                )
                assert (
                    metric_value(
                        text, "kueue_bridge_controller_runtime_reconcile_time_seconds_count", controller="job"
                    )
                    >= 3
                )
                assert metric_value(text, "kueue_bridge_leader_election_master_status", name=LEASE_NAME) == 1

            process.terminate()
            assert process.wait() == 0, process.log()

        assert await lease_holder(client) == ""
        assert await workloads_of(client, "bad-priority") == []
        records = [json.loads(line) for line in process.log().splitlines() if line.startswith("{")]
        failures = [r for r in records if r.get("message") == "reconcile failed"]
        assert "e2e/bad-priority" in {r.get("object_key") for r in failures}, process.log()
        assert all(r.get("controller") == "job" and r.get("reconcile_id") for r in failures)
        # a 409 from a stale informer copy is a requeue, never a failure
        conflicts = [r for r in failures if "(409)" in r.get("exception", "")]
        assert conflicts == [], conflicts


def test_a_bad_config_file_exits_1_naming_the_field(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "bad.yaml",
        extra={
            "leaderElection": {"leaseDuration": "1s", "renewDeadline": "2s", "retryPeriod": "500ms"},
            "integrations": {"frameworks": ["ray.io/rayjob"]},
        },
    )
    result = subprocess.run(
        [sys.executable, "-m", "kueue_bridge.cli", "reconciler", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert "leaderElection.leaseDuration: Invalid value" in result.stderr
    assert "integrations.frameworks[0]: Unsupported value" in result.stderr
