"""Leader failover between two ``kueue-bridge reconciler`` processes (lease 2 s, retry 0.5 s).

The leader is killed with SIGKILL, so it cannot release the Lease: the standby must wait for the
Lease to expire and take it over. Asserted through what the cluster shows: the Lease's
``holderIdentity`` moves to the standby (polled with a deadline of a few lease durations — a loaded
2-core CI box must not turn this into a timing test; the measured take-over time is printed), and
jobs created after the kill get exactly one Workload each from the new leader.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import eventually, kube_client
from tests.e2e.test_reconciler_process import lease_holder, prepare, workloads_of
from tests.e2e.test_reconciler_support import (
    JOB,
    ReconcilerProcess,
    new_job,
    running_processes,
    write_config,
)

pytestmark = [pytest.mark.e2e, pytest.mark.needs_shared, pytest.mark.slow]

LEASE_SECONDS = 2.0


async def test_standby_takes_over_after_the_leader_is_killed(
    devcluster: Any, shared_dir: Path, tmp_path: Path
) -> None:
    config = write_config(tmp_path / "config.yaml")
    first = ReconcilerProcess(
        config=config,
        kubeconfig=devcluster.kubeconfig_path,
        identity="replica-a",
        log_path=tmp_path / "a.log",
    )
    second = ReconcilerProcess(
        config=config,
        kubeconfig=devcluster.kubeconfig_path,
        identity="replica-b",
        log_path=tmp_path / "b.log",
    )
    async with kube_client(devcluster.kubeconfig_path) as client:
        await prepare(client, shared_dir)
        with running_processes(first):

            async def held_by_first() -> bool:
                return await lease_holder(client) == "replica-a"

            await eventually(held_by_first, what="replica-a to lead")
            with running_processes(second):
                await eventually(lambda: asyncio.sleep(0, second.probe_port()), what="replica-b to start")
                for index in range(3):
                    await client.create(JOB, new_job(f"before-{index}"), namespace="e2e")
                for index in range(3):
                    await eventually(
                        lambda i=index: workloads_of(client, f"before-{i}"),  # type: ignore[misc]
                        what=f"the Workload of before-{index}",
                    )
                assert await lease_holder(client) == "replica-a", (
                    "the standby must not lead while the leader lives"
                )

                first.kill()
                first.wait()
                loop = asyncio.get_running_loop()
                killed_at = loop.time()
                for index in range(3):
                    await client.create(JOB, new_job(f"after-{index}"), namespace="e2e")

                async def held_by_second() -> bool:
                    return await lease_holder(client) == "replica-b"

                await eventually(
                    held_by_second,
                    what="replica-b to take the Lease over",
                    within_seconds=60,  # a safety net: the take-over time is printed, not asserted
                )
                print(f"take-over {loop.time() - killed_at:.2f}s after SIGKILL (lease {LEASE_SECONDS}s)")

                async def all_after_jobs_have_one() -> bool:
                    counts = [len(await workloads_of(client, f"after-{i}")) for i in range(3)]
                    assert max(counts) <= 1, f"duplicate Workloads: {counts}"
                    return counts == [1, 1, 1]

                await eventually(all_after_jobs_have_one, what="Workloads for jobs created after the kill")
                for index in range(3):
                    assert len(await workloads_of(client, f"before-{index}")) == 1
                second.terminate()
                assert second.wait() == 0, second.log()
        assert first.returncode() == -9
        assert await lease_holder(client) == ""
