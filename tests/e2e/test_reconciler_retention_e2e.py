"""``afterDeactivatedByKueue`` end to end: the reconciler deletes the job on the devcluster.

The test plays Kueue's workload controller: it admits the Workload, then deactivates it the way
Kueue does when the maximum execution time is exceeded (``spec.active: false``, then
``Evicted=True`` ``DeactivatedDueToMaximumExecutionTimeExceeded``). With a 2 s retention the first
reconcile after the eviction stops the job and requeues; the job must then disappear through that
requeue alone (nothing else touches it), so this also proves the requeue-after wiring.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from shared.config import parse_config
from shared.kube.times import format_time
from tests.e2e.conftest import eventually, kube_client
from tests.e2e.test_reconciler_e2e import (
    JOB,
    WORKLOAD,
    RecordedEvents,
    condition,
    get_or_none,
    only_workload,
    running_reconciler,
    setup_cluster,
    write_admission,
)
from tests.unit.reconciler.conftest import golden_job

pytestmark = [pytest.mark.e2e, pytest.mark.needs_shared]

CONFIG = """\
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
objectRetentionPolicies:
  workloads:
    afterDeactivatedByKueue: 2s
"""


async def test_job_of_a_workload_kueue_deactivated_is_deleted(devcluster: Any, shared_dir: Path) -> None:
    events = RecordedEvents()
    config = parse_config(CONFIG, source="retention.yaml")
    async with kube_client(devcluster.kubeconfig_path) as client:
        await setup_cluster(client, shared_dir)
        job = golden_job()
        for key in ("uid", "generation"):
            del job["metadata"][key]
        job["spec"].pop("selector")
        for key in ("batch.kubernetes.io/controller-uid", "controller-uid"):
            del job["spec"]["template"]["metadata"]["labels"][key]
        await client.create(JOB, job, namespace="golden")
        async with running_reconciler(client, events, config=config):

            async def pods_ready_written() -> dict[str, Any] | None:
                current = await only_workload(client)
                return current if current and condition(current, "PodsReady") else None

            await write_admission(client, await eventually(pods_ready_written, what="PodsReady"))

            async def started() -> dict[str, Any] | None:
                current = await get_or_none(client, JOB, "sample")
                return current if current and current["spec"]["suspend"] is False else None

            await eventually(started, what="the job to be unsuspended")

            workload = await only_workload(client)
            assert workload is not None
            workload["spec"]["active"] = False
            workload = await client.update(WORKLOAD, workload, namespace="golden")
            workload["status"]["conditions"] = [
                c for c in workload["status"]["conditions"] if c["type"] != "Evicted"
            ] + [
                {
                    "type": "Evicted",
                    "status": "True",
                    "reason": "DeactivatedDueToMaximumExecutionTimeExceeded",
                    "message": "The workload is deactivated due to exceeding the maximum execution time",
                    "lastTransitionTime": format_time(datetime.now(UTC)),
                    "observedGeneration": workload["metadata"]["generation"],
                }
            ]
            await client.update_status(WORKLOAD, workload, namespace="golden")

            async def job_gone() -> bool:
                return await get_or_none(client, JOB, "sample") is None

            await eventually(job_gone, what="the job to be deleted after the retention period")
        stopped = [m for _, reason, m in events.items if reason == "Stopped"]
        assert stopped == ["The workload is deactivated due to exceeding the maximum execution time"]
        assert ("Normal", "Deleted", "Deleted job: deactivation retention period expired") in events.items
