"""The manager's jobs come from informers, with a GET wherever the cache cannot answer for sure."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from multikueue.local_jobs import LocalJobs
from shared.kube import NotFound, SystemClock, WatchSettings
from shared.kube.errors import UnknownKindError
from tests.polling import eventually
from tests.unit.multikueue.fakes import JOB, JOBSET, WORKLOAD, FakeCluster
from tests.unit.multikueue.harness import MK, Harness

JOB_PATH = "/apis/batch/v1/namespaces/ns/jobs/job"


def gets(cluster: FakeCluster, path: str = JOB_PATH) -> int:
    return sum(1 for r in cluster.api.requests if r.method == "GET" and r.path == path and not r.params)


def job(name: str = "job", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns"}, "spec": {"suspend": True, **spec}}


@contextlib.asynccontextmanager
async def running(jobs: LocalJobs) -> AsyncIterator[LocalJobs]:
    task = asyncio.create_task(jobs.run())
    try:
        yield jobs
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@pytest.fixture
def cluster() -> FakeCluster:
    return FakeCluster("manager", clock=SystemClock())


async def synced(jobs: LocalJobs, cluster: FakeCluster) -> None:
    await eventually(lambda: asyncio.sleep(0, jobs.cached(JOB.gvk)), what="the job informer synced")


async def test_a_cached_job_is_read_without_a_request(cluster: FakeCluster) -> None:
    cluster.put(JOB, job(managedBy=MK))
    async with running(LocalJobs(client=cluster.client, gvks=(JOB.gvk,))) as jobs:
        await synced(jobs, cluster)
        found = await jobs.get(JOB.gvk, "job", namespace="ns")
    assert found["spec"]["managedBy"] == MK
    assert "managedFields" not in found["metadata"]
    assert gets(cluster) == 0


async def test_a_job_the_cache_does_not_hold_yet_is_read_from_the_api_server(cluster: FakeCluster) -> None:
    async with running(LocalJobs(client=cluster.client, gvks=(JOB.gvk,))) as jobs:
        await synced(jobs, cluster)
        cluster.put(JOB, job())  # its watch event has not reached the informer: no await since
        found = await jobs.get(JOB.gvk, "job", namespace="ns")
        assert found["metadata"]["name"] == "job"
        assert gets(cluster) == 1
        with pytest.raises(NotFound):
            await jobs.get(JOB.gvk, "other", namespace="ns")


async def test_a_kind_without_its_crd_is_read_with_gets_until_the_crd_appears() -> None:
    cluster = FakeCluster("manager", clock=SystemClock(), kinds=(WORKLOAD, JOB))  # no JobSet CRD
    jobs = LocalJobs(
        client=cluster.client,
        gvks=(JOB.gvk, JOBSET.gvk),
        watch_settings=WatchSettings(backoff_initial=0.01, backoff_max=0.05),
    )
    path = "/apis/jobset.x-k8s.io/v1alpha2/namespaces/ns/jobsets/js"
    async with running(jobs):
        await synced(jobs, cluster)  # the other kind is cached regardless
        assert not jobs.cached(JOBSET.gvk)
        with pytest.raises(UnknownKindError):  # the GET, as before there were informers
            await jobs.get(JOBSET.gvk, "js", namespace="ns")
        cluster.api.register(JOBSET)
        cluster.put(JOBSET, {"metadata": {"name": "js", "namespace": "ns"}, "spec": {}})
        await eventually(lambda: asyncio.sleep(0, jobs.cached(JOBSET.gvk)), what="the JobSet informer")
        await eventually(
            lambda: asyncio.sleep(0, jobs.informers[JOBSET.gvk].store.get("ns/js")), what="js cached"
        )
        before = gets(cluster, path)
        assert (await jobs.get(JOBSET.gvk, "js", namespace="ns"))["metadata"]["name"] == "js"
        assert gets(cluster, path) == before


async def test_our_own_status_write_stands_in_for_the_cache_until_it_catches_up(
    cluster: FakeCluster,
) -> None:
    cluster.put(JOB, job())
    async with running(LocalJobs(client=cluster.client, gvks=(JOB.gvk,))) as jobs:
        await synced(jobs, cluster)
        written = await cluster.client.patch_status(JOB.gvk, "job", {"status": {"active": 1}}, namespace="ns")
        jobs.remember(JOB.gvk, written)  # before the informer has seen the write
        assert (await jobs.get(JOB.gvk, "job", namespace="ns"))["status"] == {"active": 1}
        await eventually(
            lambda: asyncio.sleep(0, (jobs.informers[JOB.gvk].store.get("ns/job") or {}).get("status")),
            what="the informer caught up",
        )
        later = cluster.put(JOB, {**job(), "status": {"active": 2}})
        await eventually(
            lambda: asyncio.sleep(
                0,
                (jobs.informers[JOB.gvk].store.get("ns/job") or {}).get("metadata", {}).get("resourceVersion")
                == later["metadata"]["resourceVersion"],
            ),
            what="the later change cached",
        )
        assert (await jobs.get(JOB.gvk, "job", namespace="ns"))["status"] == {"active": 2}
    assert gets(cluster) == 0


async def test_a_job_cached_as_unmanaged_is_read_again_before_the_workload_is_rejected() -> None:
    mk = Harness()
    await mk.connect()
    try:
        mk.job(managed_by=None)
        mk.workload()
        jobs = LocalJobs(client=mk.manager.client, gvks=(JOB.gvk,))
        mk.reconciler.local_jobs = jobs
        task = asyncio.create_task(jobs.run())
        try:
            await mk.clock.wait_for(jobs.informers[JOB.gvk].wait_synced(), None)
        finally:
            task.cancel()  # the cache stays as it is now: unmanaged
            with contextlib.suppress(asyncio.CancelledError):
                await task
        mk.job(managed_by=MK)  # the API server's truth the cache has not seen
        await mk.reconcile()
        assert mk.check()["state"] == "Pending"
        assert mk.remote("w1", "wl") is not None
        mk.job(managed_by="example.com/other")
        await mk.reconcile()
        assert mk.check()["state"] == "Rejected"
    finally:
        await mk.close()
