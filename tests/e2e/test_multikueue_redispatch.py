"""Every undone admission is dispatched again: MultiKueue's re-dispatch paths on the devcluster fleet.

The same paths as ``tests/real/test_multikueue.py`` on real clusters, here on three devclusters: a
worker evicts the copy, the manager evicts the Workload (its quota held until the remote job's pods
are gone), the manager deactivates and reactivates it, the admitted copy is deleted on the worker,
the admitting worker is lost past ``workerLostTimeout`` and comes back with its stale admitted copy.
(A copy finished ``OutOfSync``: ``test_multikueue_e2e.py``.)

Each path goes through Kueue's own eviction on the manager, which the stand-in writes as Kueue does:
a forced apply as ``kueue-admission`` that leaves ``clusterName`` and ``nominatedClusterNames`` out.
Since the devcluster keeps field ownership as kube-apiserver does, that removes them only if
MultiKueue wrote them as ``kueue-admission`` applies too: written by an update, ``clusterName`` survives the eviction and nothing is ever dispatched again, so each of
these tests fails then.

No job runner runs on the workers: as on the real clusters, a test writes a remote Job's status as
the job controller would, so that a job runs exactly as long as the test needs.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from devcluster.standin.checks import evict
from devrun.real_fleet import job_status_running, job_status_succeeded
from shared.admission_apply import ADMISSION_FIELD_MANAGER, apply_admission_status
from shared.kube import Conflict, KubeClient, NotFound
from tests.e2e.multikueue_support import (
    CLUSTER_QUEUE,
    JOB,
    MK_CLUSTER,
    NAMESPACE,
    WORKLOAD,
    Fleet,
    condition,
    describe,
    evict_on_manager,
    fleet,
    new_job,
)
from tests.polling import eventually

pytestmark = [pytest.mark.e2e, pytest.mark.needs_shared, pytest.mark.slow]

#: one step of a devcluster fleet (an admission, a dispatch, a removal) on a loaded 2-core machine
WITHIN = 60.0


@contextlib.asynccontextmanager
async def redispatch_fleet(devcluster_factory: Any, shared_dir: Path) -> AsyncIterator[Fleet]:
    async with fleet(
        devcluster_factory,
        shared_dir,
        multikueue="multiKueue: {workerLostTimeout: 2s, gcInterval: 2s}\n",
        worker_job_runner=False,
    ) as f:
        yield f


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _true(obj: dict[str, Any] | None, kind: str) -> bool:
    found = condition(obj, kind)
    return found is not None and found["status"] == "True"


def _check(workload: dict[str, Any]) -> dict[str, Any]:
    checks = (workload.get("status") or {}).get("admissionChecks") or []
    return next((c for c in checks if c["name"] == "mk"), {})


def _owners_of(workload: dict[str, Any], field: str) -> set[tuple[str, str]]:
    """(manager, operation) of every managedFields entry that owns ``status.<field>``."""
    return {
        (entry["manager"], entry["operation"])
        for entry in workload["metadata"].get("managedFields") or []
        if f"f:{field}" in ((entry.get("fieldsV1") or {}).get("f:status") or {})
    }


async def _until(f: Fleet, job: str, check: Callable[[], Awaitable[Any]], what: str) -> Any:
    """``eventually``, and on a timeout what the job's Workloads, copies and clusters looked like."""
    try:
        return await eventually(check, what=what, within_seconds=WITHIN)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{await describe(f, job)}") from None


async def _admitted(f: Fleet, job: str, *, not_on: str = "") -> tuple[dict[str, Any], str]:
    """Wait until the manager's Workload of ``job`` is admitted on a worker (check ``Ready``,
    ``clusterName`` set, the job created there): ``(workload, worker)``."""

    async def ready() -> tuple[dict[str, Any], str] | None:
        workload = await f.workload_of(job)
        if workload is None:
            return None
        status = workload.get("status") or {}
        cluster = status.get("clusterName")
        if not cluster or cluster == not_on or _check(workload)["state"] != "Ready":
            return None
        if await f.get(f.workers[cluster], JOB, job) is None:
            return None
        return workload, cluster

    found: tuple[dict[str, Any], str] = await _until(
        f, job, ready, f"{job} admitted on a worker" + (f" other than {not_on}" if not_on else "")
    )
    return found


async def _submit(f: Fleet, job: str) -> tuple[dict[str, Any], str]:
    await f.manager.create(JOB, new_job(job), namespace=NAMESPACE)
    return await _admitted(f, job)


async def _set_job_status(
    client: KubeClient, name: str, status: dict[str, Any], *, once_started: bool = True
) -> None:
    """Merge ``status`` into the Job's, as its job controller would (again on a conflict; a
    ``startTime`` already set is kept: the API server refuses to change it).

    ``once_started``: the status of running or finished pods, which a job controller writes only
    after the Job was started -- here, after the worker's reconciler unsuspended it for its admitted
    copy. The manager's check is ``Ready`` and the Job exists on the worker before that start: a
    ``startTime`` written in between makes the pod template immutable (``spec.template: field is
    immutable``), so the start's patch fails and the Job stays suspended for good, a state no job
    controller can cause. So this waits for the start first."""

    async def written() -> bool:
        job: dict[str, Any] = await client.get(JOB, name, namespace=NAMESPACE)
        if once_started and job["spec"].get("suspend") is not False:
            return False
        current = job.get("status") or {}
        job["status"] = {**current, **status}
        if current.get("startTime"):
            job["status"]["startTime"] = current["startTime"]
        try:
            await client.update_status(JOB, job, namespace=NAMESPACE)
        except Conflict:
            return False
        return True

    started = " once started" if once_started else ""
    await eventually(written, what=f"the status of job {name} written{started}", within_seconds=WITHIN)


async def _gone_from(f: Fleet, worker: str, name: str, job: str) -> None:
    async def gone() -> bool:
        client = f.workers[worker]
        return await f.get(client, WORKLOAD, name) is None and await f.get(client, JOB, job) is None

    await _until(f, job, gone, f"the copy and the job of {job} removed from {worker}")


async def _evicted(f: Fleet, job: str, words: str) -> dict[str, Any]:
    """The manager's Workload of ``job`` once Kueue evicted it with ``words`` in the message."""

    async def found() -> dict[str, Any] | None:
        current = await f.workload_of(job)
        evicted = condition(current, "Evicted")
        return current if evicted is not None and words in evicted["message"] else None

    result: dict[str, Any] = await _until(f, job, found, f"the manager's Workload of {job} evicted ({words})")
    return result


async def _finishes(f: Fleet, job: str, worker: str) -> None:
    """The job succeeds where it runs: the manager's Workload finishes and nothing is left behind."""
    await _set_job_status(f.workers[worker], job, job_status_succeeded(now=_now()))
    finished = await f.wait_finished(job, within_seconds=WITHIN)
    assert finished["reason"] == "Succeeded"
    workload = await f.workload_of(job)
    assert workload is not None
    for name in f.workers:
        await _gone_from(f, name, workload["metadata"]["name"], job)


async def test_a_worker_eviction_dispatches_the_job_again(devcluster_factory: Any, shared_dir: Path) -> None:
    async with redispatch_fleet(devcluster_factory, shared_dir) as f:
        workload, worker = await _submit(f, "evicted-there")
        first_job = await f.workers[worker].get(JOB, "evicted-there", namespace=NAMESPACE)
        name = workload["metadata"]["name"]
        # the worker's ClusterQueue stops and its Kueue drains it (which the stand-in does not do:
        # played here, as Kueue writes it, a kueue-admission apply); the copy cannot come back there,
        # so the manager cannot miss the eviction, as it could a copy admitted again at once
        await f.workers[worker].patch(CLUSTER_QUEUE, "cq", {"spec": {"stopPolicy": "HoldAndDrain"}})
        for _ in range(20):
            copy = await f.workers[worker].get(WORKLOAD, name, namespace=NAMESPACE)
            evict(
                copy,
                reason="ClusterQueueStopped",
                message="The ClusterQueue is stopped",
                now=datetime.now(UTC),
            )
            try:
                await apply_admission_status(f.workers[worker], copy)
                break
            except Conflict:
                continue
        evicted = await _evicted(f, "evicted-there", "Workload evicted on worker cluster")
        assert condition(evicted, "Evicted")["message"] == (  # type: ignore[index]
            'Evicted due to AdmissionCheck in Retry state: "mk" (Workload evicted on worker cluster: '
            f'"{worker}", resetting for re-admission. Previously: "Ready")'
        )
        again, where = await _admitted(f, "evicted-there", not_on=worker)
        assert _check(again)["retryCount"] == 1
        assert _owners_of(again, "clusterName") == {(ADMISSION_FIELD_MANAGER, "Apply")}
        second_job = await f.workers[where].get(JOB, "evicted-there", namespace=NAMESPACE)
        assert second_job["metadata"]["uid"] != first_job["metadata"]["uid"], "dispatched anew"
        await _finishes(f, "evicted-there", where)


async def test_a_manager_eviction_holds_the_quota_until_the_remote_pods_are_gone_then_dispatches_again(
    devcluster_factory: Any, shared_dir: Path
) -> None:
    async with redispatch_fleet(devcluster_factory, shared_dir) as f:
        workload, worker = await _submit(f, "evicted-here")
        name = workload["metadata"]["name"]
        remote = f.workers[worker]
        await _set_job_status(remote, "evicted-here", job_status_running(now=_now()))

        async def mirrored() -> bool:
            job = await f.manager.get(JOB, "evicted-here", namespace=NAMESPACE)
            return bool((job.get("status") or {}).get("active") == 1)

        await _until(f, "evicted-here", mirrored, "the remote pod mirrored to the manager's job")
        await evict_on_manager(f, "evicted-here", reason="Preempted", message="Preempted on the manager")

        async def stopped_on_worker() -> dict[str, Any] | None:
            copy = await f.get(remote, WORKLOAD, name)
            job = await f.get(remote, JOB, "evicted-here")
            if (
                copy is None
                or job is None
                or not _true(copy, "Evicted")
                or job["spec"].get("suspend") is not True
            ):
                return None
            return copy

        copy = await _until(
            f, "evicted-here", stopped_on_worker, "the copy evicted and the remote job suspended"
        )
        assert condition(copy, "Evicted")["reason"] == "DeactivatedDueToEvictedOnManagerCluster"  # type: ignore[index]
        assert condition(copy, "Evicted")["message"] == (  # type: ignore[index]
            "The workload is deactivated due to Evicted on manager: Preempted on the manager"
        )
        # the remote pod still runs (the job controller has not removed it): the quota stays held
        current = await f.workload_of("evicted-here")
        assert _true(current, "Evicted") and _true(current, "QuotaReserved")
        first_job = await remote.get(JOB, "evicted-here", namespace=NAMESPACE)
        await _set_job_status(remote, "evicted-here", {"active": 0}, once_started=False)
        # released, requeued (a preemption), admitted again and dispatched again: the release itself
        # can be over before a poll sees it, its traces cannot
        again, where = await _admitted(f, "evicted-here")
        assert condition(again, "Requeued")["reason"] == "Preempted"  # type: ignore[index]
        assert condition(again, "Evicted")["status"] == "False"  # type: ignore[index]
        assert _owners_of(again, "clusterName") == {(ADMISSION_FIELD_MANAGER, "Apply")}
        second_job = await f.workers[where].get(JOB, "evicted-here", namespace=NAMESPACE)
        assert second_job["metadata"]["uid"] != first_job["metadata"]["uid"], "dispatched anew"
        await _finishes(f, "evicted-here", where)


async def test_a_deactivated_workload_is_dispatched_again_when_reactivated(
    devcluster_factory: Any, shared_dir: Path
) -> None:
    async with redispatch_fleet(devcluster_factory, shared_dir) as f:
        workload, _ = await _submit(f, "deactivated")
        name = workload["metadata"]["name"]
        await f.manager.patch(WORKLOAD, name, {"spec": {"active": False}}, namespace=NAMESPACE)

        async def released() -> dict[str, Any] | None:
            current = await f.workload_of("deactivated")
            if current is None or _true(current, "QuotaReserved") or not _true(current, "Evicted"):
                return None
            return current

        evicted = await _until(
            f, "deactivated", released, "the deactivated Workload evicted and its quota released"
        )
        assert condition(evicted, "Evicted")["reason"] == "Deactivated"  # type: ignore[index]
        assert "clusterName" not in evicted["status"]
        assert _check(evicted)["state"] == "Pending"
        for worker in f.workers:
            await _gone_from(f, worker, name, "deactivated")
        await f.manager.patch(WORKLOAD, name, {"spec": {"active": True}}, namespace=NAMESPACE)
        _, where = await _admitted(f, "deactivated")
        await _finishes(f, "deactivated", where)


async def test_a_copy_deleted_on_the_worker_is_dispatched_again(
    devcluster_factory: Any, shared_dir: Path
) -> None:
    async with redispatch_fleet(devcluster_factory, shared_dir) as f:
        workload, worker = await _submit(f, "copy-deleted")
        name = workload["metadata"]["name"]
        remote = f.workers[worker]
        await remote.delete(WORKLOAD, name, namespace=NAMESPACE)
        with contextlib.suppress(NotFound):
            await remote.patch(WORKLOAD, name, {"metadata": {"finalizers": None}}, namespace=NAMESPACE)
        evicted = await _evicted(f, "copy-deleted", "Admitting remote no longer exists")
        assert condition(evicted, "Evicted")["message"] == (  # type: ignore[index]
            'Evicted due to AdmissionCheck in Retry state: "mk" (Admitting remote no longer exists, '
            'Previously: "Ready")'
        )
        _, where = await _admitted(f, "copy-deleted")
        await _finishes(f, "copy-deleted", where)


async def test_a_lost_worker_is_replaced_and_its_stale_copy_removed_when_it_comes_back(
    devcluster_factory: Any, shared_dir: Path
) -> None:
    async with redispatch_fleet(devcluster_factory, shared_dir) as f:
        workload, lost = await _submit(f, "lost")
        name = workload["metadata"]["name"]
        await f.proxies[lost].cut()
        try:
            # its pod runs on through the partition (which the manager cannot see: had it seen it, the
            # manager's job would hold its quota, as in Kueue, until the pod is gone)
            await _set_job_status(f.workers[lost], "lost", job_status_running(now=_now()))

            async def inactive() -> dict[str, Any] | None:
                found = condition(await f.get(f.manager, MK_CLUSTER, lost, namespace=None), "Active")
                return found if found and found["status"] == "False" else None

            active = await _until(f, "lost", inactive, f"{lost} inactive")
            assert active["reason"] == "ClientConnectionFailed"
            assert "connection attempts: 1, next connection attempt: " in active["message"]
            evicted = await _evicted(f, "lost", "Admitting remote lost")
            assert condition(evicted, "Evicted")["message"] == (  # type: ignore[index]
                'Evicted due to AdmissionCheck in Retry state: "mk" (Admitting remote lost, Previously: "Ready")'
            )
            again, replacement = await _admitted(f, "lost", not_on=lost)
            assert _owners_of(again, "clusterName") == {(ADMISSION_FIELD_MANAGER, "Apply")}
            await _set_job_status(f.workers[replacement], "lost", job_status_running(now=_now()))
            running = await f.workers[replacement].get(JOB, "lost", namespace=NAMESPACE)
            # the lost worker still has its admitted copy and its running job
            stale = await f.get(f.workers[lost], WORKLOAD, name)
            assert _true(stale, "Admitted")
            assert ((await f.get(f.workers[lost], JOB, "lost")) or {}).get("status", {}).get("active") == 1
        finally:
            await f.proxies[lost].restore()
        # back: the stale copy and its job go, the running copy and its job stay
        await _gone_from(f, lost, name, "lost")
        current = await f.workload_of("lost")
        assert current is not None and current["status"]["clusterName"] == replacement
        assert _check(current)["state"] == "Ready"
        assert not _true(current, "Finished")
        still = await f.workers[replacement].get(JOB, "lost", namespace=NAMESPACE)
        assert still["metadata"]["uid"] == running["metadata"]["uid"], "the running copy's job is kept"
        assert still["spec"].get("suspend") is False
        await _finishes(f, "lost", replacement)
