"""MultiKueue end to end: a manager and two workers (devclusters), every component running.

Reference notes §2.6 behaviour, observed from outside: what each cluster holds, the conditions and
messages Kueue's users see. Kueue's own part is played by the devcluster stand-in on every cluster.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest

from shared.kube import Watch
from tests.e2e.multikueue_support import JOB, NAMESPACE, WORKLOAD, Fleet, condition, fleet, new_job
from tests.polling import eventually

pytestmark = [pytest.mark.e2e, pytest.mark.needs_shared, pytest.mark.slow]

ORIGIN = "kueue.x-k8s.io/multikueue-origin"


async def jobs_on(f: Fleet, name: str) -> dict[str, dict[str, Any]]:
    found = {}
    for worker, client in f.workers.items():
        job = await f.get(client, JOB, name)
        if job is not None:
            found[worker] = job
    return found


async def copies_on(f: Fleet, job: str) -> list[str]:
    return [worker for worker, client in f.workers.items() if await f.workload_of(job, client) is not None]


async def test_dispatch_first_admitted_wins_status_mirrored_and_finish(
    devcluster_factory: Any, shared_dir: Path
) -> None:
    async with fleet(devcluster_factory, shared_dir) as f:
        await f.manager.create(JOB, new_job("hello", run_seconds=1.5), namespace=NAMESPACE)

        async def ready() -> dict[str, Any] | None:
            check = await f.check_of("hello")
            return check if check and check["state"] == "Ready" else None

        check = await eventually(ready, what="the MultiKueue check Ready", within_seconds=40)
        winner = check["message"].split('"')[1]
        assert check["message"] == f'The workload was admitted on "{winner}"'
        local = await f.workload_of("hello")
        assert local is not None and local["status"]["clusterName"] == winner
        running = await eventually(lambda: jobs_on(f, "hello"), what="the job on a worker")
        assert list(running) == [winner], "the job exists only on the winning worker"
        remote_job = running[winner]
        assert ORIGIN in remote_job["metadata"]["labels"]
        assert "managedBy" not in remote_job["spec"]
        assert (
            remote_job["metadata"]["annotations"]["kueue.x-k8s.io/prebuilt-workload-name"]
            == local["metadata"]["name"]
        )
        assert not remote_job["metadata"].get("ownerReferences")
        finished = await f.wait_finished("hello")
        assert (finished["reason"], finished["message"]) == (
            "Succeeded",
            "Reached expected number of succeeded pods",
        )
        manager_job = await f.get(f.manager, JOB, "hello")
        assert manager_job is not None
        assert condition(manager_job, "Complete") is not None, "the worker's final status reached the manager"
        assert manager_job["status"]["succeeded"] == 1

        async def cleaned() -> bool:
            return not await jobs_on(f, "hello") and not await copies_on(f, "hello")

        await eventually(cleaned, what="remote objects removed after the finish", within_seconds=30)


async def record_workloads(client: Any, seen: list[dict[str, Any]]) -> None:
    """Every version of every Workload in the namespace (a test cannot poll for a transient state)."""
    async for event in Watch(client, WORKLOAD, namespace=NAMESPACE).events():
        if event.object:
            seen.append(event.object)


async def wait_check(f: Fleet, job: str, state: str, *, within_seconds: float = 40) -> dict[str, Any]:
    async def reached() -> dict[str, Any] | None:
        check = await f.check_of(job)
        return check if check and check["state"] == state else None

    result: dict[str, Any] = await eventually(
        reached, what=f"the check of {job} {state}", within_seconds=within_seconds
    )
    return result


async def running_on(f: Fleet, job: str) -> str:
    async def active() -> str | None:
        for worker, found in (await jobs_on(f, job)).items():
            if (found.get("status") or {}).get("active"):
                return worker
        return None

    worker: str = await eventually(active, what=f"{job} running on a worker", within_seconds=40)
    return worker


async def test_remote_sync_failure_resets_for_re_dispatch_and_never_finishes(
    devcluster_factory: Any, shared_dir: Path
) -> None:
    async with fleet(devcluster_factory, shared_dir) as f:
        await f.manager.create(JOB, new_job("sync", run_seconds=60), namespace=NAMESPACE)
        winner = await running_on(f, "sync")
        remote = await f.workload_of("sync", f.workers[winner])
        assert remote is not None
        remote["status"]["conditions"].append(
            {
                "type": "Finished",
                "status": "True",
                "reason": "OutOfSync",
                "message": "out of sync",
                "lastTransitionTime": "2030-01-01T00:00:00Z",
            }
        )
        await f.workers[winner].update_status(WORKLOAD, remote)

        async def evicted() -> dict[str, Any] | None:
            found = condition(await f.workload_of("sync"), "Evicted")
            return found if found and found["status"] == "True" else None

        found = await eventually(evicted, what="the manager Workload evicted by its check")
        assert found["reason"] == "AdmissionCheck"
        assert found["message"] == (
            'Evicted due to AdmissionCheck in Retry state: "mk" (Remote workload on worker cluster '
            f'"{winner}" is out of sync with its user job, resetting for re-dispatch, Previously: "Ready")'
        )
        check = await f.check_of("sync")
        assert check is not None
        assert (check["state"], check["retryCount"]) == ("Pending", 1)
        assert check["message"] == "Reset to Pending after eviction. Previously: Retry"
        assert condition(await f.workload_of("sync"), "Finished") is None


async def test_evictions_both_ways(devcluster_factory: Any, shared_dir: Path) -> None:
    async with fleet(devcluster_factory, shared_dir) as f:
        # a worker evicts: the manager resets its check for re-admission, the job runs again and finishes
        # (a change of the copy's *spec*, such as deactivating it, would instead count as out of sync:
        # Kueue removes such a copy and the admitting remote "no longer exists")
        await f.manager.create(JOB, new_job("evicted-there", run_seconds=3), namespace=NAMESPACE)
        winner = await running_on(f, "evicted-there")
        remote = await f.workload_of("evicted-there", f.workers[winner])
        assert remote is not None
        remote["status"]["conditions"].append(  # the worker's Kueue preempts its copy
            {
                "type": "Evicted",
                "status": "True",
                "reason": "Preempted",
                "message": "Preempted to accommodate a workload",
                "lastTransitionTime": "2030-01-01T00:00:00Z",
            }
        )
        await f.workers[winner].update_status(WORKLOAD, remote)
        await f.wait_finished("evicted-there", within_seconds=60)
        local = await f.workload_of("evicted-there")
        evicted = condition(local, "Evicted")
        assert evicted is not None and evicted["message"] == (
            'Previously: Evicted due to AdmissionCheck in Retry state: "mk" (Workload evicted on worker '
            f'cluster: "{winner}", resetting for re-admission. Previously: "Ready")'
        )
        check = await f.check_of("evicted-there")
        assert check is not None and check["retryCount"] == 1

        # the manager evicts (Kueue's scheduler preempts there): the admitting copy gets
        # DeactivationTarget EvictedOnManagerCluster and the worker stops the job
        await f.manager.create(JOB, new_job("evicted-here", run_seconds=60), namespace=NAMESPACE)
        winner = await running_on(f, "evicted-here")
        seen: list[dict[str, Any]] = []
        recorder = asyncio.create_task(record_workloads(f.workers[winner], seen))
        try:
            local = await f.workload_of("evicted-here")
            assert local is not None
            local["status"]["conditions"].append(
                {
                    "type": "Evicted",
                    "status": "True",
                    "reason": "Preempted",
                    "message": "Preempted on the manager",
                    "lastTransitionTime": "2030-01-01T00:00:00Z",
                }
            )
            await f.manager.update_status(WORKLOAD, local)

            async def targeted() -> dict[str, Any] | None:
                for obj in seen:
                    found = condition(obj, "DeactivationTarget")
                    if found is not None:
                        return found
                return None

            target = await eventually(targeted, what="DeactivationTarget on the admitting copy")
            assert (target["status"], target["reason"], target["message"]) == (
                "True",
                "EvictedOnManagerCluster",
                "Evicted on manager: Preempted on the manager",
            )

            async def stopped_there() -> bool:
                job = (await jobs_on(f, "evicted-here")).get(winner)
                return job is None or job["spec"].get("suspend") is True

            await eventually(stopped_there, what="the worker's job stopped")
        finally:
            recorder.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await recorder


async def test_admitting_worker_lost_then_back(devcluster_factory: Any, shared_dir: Path) -> None:
    async with fleet(devcluster_factory, shared_dir, multikueue="multiKueue: {workerLostTimeout: 2s}\n") as f:
        await f.manager.create(JOB, new_job("lost", run_seconds=6), namespace=NAMESPACE)
        winner = await running_on(f, "lost")
        await f.proxies[winner].cut()

        async def inactive() -> dict[str, Any] | None:
            found = condition(
                await f.get(f.manager, f.multikueue.clusters.gvk, winner, namespace=None), "Active"
            )
            return found if found and found["status"] == "False" else None

        found = await eventually(inactive, what=f"{winner} inactive")
        assert found["reason"] == "ClientConnectionFailed"
        assert "connection attempts: 1, next connection attempt: " in found["message"]

        async def lost() -> dict[str, Any] | None:
            evicted = condition(await f.workload_of("lost"), "Evicted")
            return evicted if evicted and "Admitting remote lost" in evicted["message"] else None

        evicted = await eventually(lost, what="Retry after workerLostTimeout", within_seconds=30)
        assert (
            evicted["message"]
            == 'Evicted due to AdmissionCheck in Retry state: "mk" (Admitting remote lost, Previously: "Ready")'
        )
        await f.proxies[winner].restore()
        await f.wait_finished("lost", within_seconds=90)

        async def cleaned() -> bool:
            return not await jobs_on(f, "lost") and not await copies_on(f, "lost")

        await eventually(cleaned, what="nothing left on the workers", within_seconds=40)
