"""Crash-restart: SIGKILL the reconciler in the middle of a 200-job run; the restart converges.

The devcluster's Kueue stand-in admits and the job runner runs jobs (0.2 s each), so the kill lands
while jobs are in every state: without a Workload, queued, admitted-but-suspended, running,
finished-but-not-released. The restarted process (a new identity: it must wait for the dead
leader's Lease to expire, as after a real crash) must bring every job to exactly one Workload —
the deterministic Workload name turns a repeated create into AlreadyExists, never a duplicate — and
every job to completion; no job may be found running without an admitted Workload.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from shared.kube import GroupVersionKind, KubeClient
from tests.e2e.conftest import eventually, kube_client
from tests.e2e.test_reconciler_process import prepare
from tests.e2e.test_reconciler_support import (
    JOB,
    WORKLOAD,
    ReconcilerProcess,
    new_job,
    running_processes,
    write_config,
)

pytestmark = [pytest.mark.e2e, pytest.mark.needs_shared, pytest.mark.slow]

JOBS = 200
KILL_AFTER_WORKLOADS = 60


async def create_queues(client: KubeClient) -> None:
    """One flavor, ClusterQueue ``cq`` (1000 CPUs: every job fits at once), LocalQueue ``e2e/q``."""
    flavor = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "ResourceFlavor")
    cluster_queue = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "ClusterQueue")
    local_queue = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "LocalQueue")
    await client.create(flavor, {"metadata": {"name": "default"}})
    await client.create(
        cluster_queue,
        {
            "metadata": {"name": "cq"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "1000"}]}
                        ],
                    }
                ],
            },
        },
    )
    await client.create(
        local_queue, {"metadata": {"name": "q"}, "spec": {"clusterQueue": "cq"}}, namespace="e2e"
    )


def is_true(obj: dict[str, Any], condition_type: str) -> bool:
    return any(
        c.get("type") == condition_type and c.get("status") == "True"
        for c in (obj.get("status") or {}).get("conditions") or []
    )


async def test_sigkill_mid_run_then_restart_converges(
    devcluster_factory: Any, shared_dir: Path, tmp_path: Path
) -> None:
    cluster = devcluster_factory(kueue_standin=True, job_runner=True)
    config = write_config(tmp_path / "config.yaml")
    async with kube_client(cluster.kubeconfig_path) as client:
        await prepare(client, shared_dir)
        await create_queues(client)
        for index in range(JOBS):
            job = new_job(f"job-{index:03d}")
            job["metadata"]["annotations"] = {"kueue-bridge.dev/run-seconds": "0.2"}
            await client.create(JOB, job, namespace="e2e")

        async def workload_count() -> int:
            return len((await client.list(WORKLOAD, namespace="e2e"))["items"])

        first = ReconcilerProcess(
            config=config,
            kubeconfig=cluster.kubeconfig_path,
            identity="before-crash",
            log_path=tmp_path / "a.log",
        )
        with running_processes(first):

            async def enough_progress() -> bool:
                return await workload_count() >= KILL_AFTER_WORKLOADS

            await eventually(
                enough_progress, what=f"{KILL_AFTER_WORKLOADS} Workloads", within_seconds=60, interval=0.1
            )
            first.kill()
            assert first.wait() == -9
        at_kill = await workload_count()

        second = ReconcilerProcess(
            config=config,
            kubeconfig=cluster.kubeconfig_path,
            identity="after-crash",
            log_path=tmp_path / "b.log",
        )
        with running_processes(second):

            async def converged() -> bool:
                workloads = (await client.list(WORKLOAD, namespace="e2e"))["items"]
                finished = [
                    w for w in workloads if is_true(w, "Finished") and not w["metadata"].get("finalizers")
                ]
                return len(finished) == JOBS

            await eventually(
                converged,
                what=f"all {JOBS} Workloads finished and released",
                within_seconds=120,
                interval=0.5,
            )
            second.terminate()
            assert second.wait() == 0, second.log()

        workloads = (await client.list(WORKLOAD, namespace="e2e"))["items"]
        owners = Counter(
            reference["name"]
            for w in workloads
            for reference in w["metadata"]["ownerReferences"]
            if reference["kind"] == "Job"
        )
        assert len(workloads) == JOBS
        assert sorted(owners) == [f"job-{index:03d}" for index in range(JOBS)]
        assert set(owners.values()) == {1}, "a job has more than one Workload"
        jobs = (await client.list(JOB, namespace="e2e"))["items"]
        unfinished = [j["metadata"]["name"] for j in jobs if not is_true(j, "Complete")]
        assert unfinished == [], "jobs left without completing"
        print(f"{at_kill} of {JOBS} Workloads existed at the SIGKILL")
