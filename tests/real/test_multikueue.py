"""kueue-bridge's MultiKueue on three real clusters, each with the real Kueue manager scheduling.

One fleet per Kueue version (``testkit.real_fleet``): a manager and workers ``w1``, ``w2``, Kueue in
external-framework mode on each (its own MultiKueue off on the manager), our webhook and
reconciler on each, our ``multikueue`` on the manager, reaching the workers through cuttable
proxies (a lost worker is a cut proxy: the worker itself goes on). ``workerLostTimeout`` is 8 s and
``gcInterval`` 5 s. Every test makes its own namespace and queues, so they are independent.

The paths that must re-dispatch after the first admission is undone, each through Kueue's own
eviction on the manager (which clears ``clusterName`` with a ``kueue-admission`` apply, so this is
also the proof that we write it the way Kueue does): a worker evicts the copy, the manager evicts
the Workload (its quota held until the remote job's pods are gone), the manager deactivates it, the
copy is deleted on the worker, the admitting worker is lost past ``workerLostTimeout`` (and comes
back with its stale admitted copy), a copy finishes ``OutOfSync``.

There is no kubelet or job controller on these clusters: a test writes a Job's status as the job
controller would (``status.active`` for running pods, ``Complete`` for success).
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest_asyncio

from shared.constants import CLUSTER_QUEUE_GVK, QUEUE_LABEL
from shared.kube import Conflict, GroupVersionKind, KubeClient, NotFound
from shared.kueue.admission_apply import ADMISSION_FIELD_MANAGER
from testkit.real_cluster import Kit
from testkit.real_fleet import (
    FleetMember,
    FleetSettings,
    RealFleet,
    job_status_succeeded,
    start_real_fleet,
)
from tests.polling import eventually

JOB = GroupVersionKind("batch", "v1", "Job")
WORKLOAD = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "Workload")
MK_CLUSTER = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "MultiKueueCluster")
MULTIKUEUE = "kueue.x-k8s.io/multikueue"
WORKER_LOST_SECONDS = 8
#: a real cluster step (an admission, a dispatch) on a loaded 2-core machine
WITHIN = 90.0
POLL = 0.2


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def fleet(kueue_version: str, kit: Kit, real_root: Path) -> AsyncIterator[RealFleet]:
    settings = FleetSettings(
        kueue_version=kueue_version,
        gc_interval="5s",
        worker_lost_timeout=f"{WORKER_LOST_SECONDS}s",
        proxied=True,
    )
    async with contextlib.AsyncExitStack() as stack:
        yield await start_real_fleet(
            stack,
            kit=kit,
            root=real_root,
            settings=settings,
            label=f"mk-{kueue_version}-{secrets.token_hex(2)}-",
        )


@pytest_asyncio.fixture(loop_scope="session")
async def namespace(fleet: RealFleet) -> str:
    name = f"mk-{secrets.token_hex(4)}"
    await fleet.queues(name)
    return name


# --- helpers -------------------------------------------------------------------------------------
def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _condition(obj: dict[str, Any] | None, kind: str) -> dict[str, Any] | None:
    return next(
        (c for c in ((obj or {}).get("status") or {}).get("conditions") or [] if c["type"] == kind), None
    )


def _true(obj: dict[str, Any] | None, kind: str) -> bool:
    found = _condition(obj, kind)
    return found is not None and found["status"] == "True"


def _check(workload: dict[str, Any]) -> dict[str, Any]:
    """The check ``mk`` of ``workload`` (empty before Kueue listed it)."""
    checks = (workload.get("status") or {}).get("admissionChecks") or []
    return next((c for c in checks if c["name"] == "mk"), {})


def _job(name: str, *, completions: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {QUEUE_LABEL: "q"}},
        "spec": {
            "suspend": True,
            "managedBy": MULTIKUEUE,
            "parallelism": 1,
            "completions": completions,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
                    ],
                }
            },
        },
    }


async def _get(client: KubeClient, gvk: GroupVersionKind, name: str, namespace: str) -> dict[str, Any] | None:
    try:
        found: dict[str, Any] = await client.get(gvk, name, namespace=namespace)
        return found
    except NotFound:
        return None


async def _workload(fleet: RealFleet, namespace: str, job: str) -> dict[str, Any] | None:
    """The manager's Workload of ``job``."""
    items: list[dict[str, Any]] = (await fleet.manager.client.list(WORKLOAD, namespace=namespace))["items"]
    return next(
        (w for w in items if any(o.get("name") == job for o in w["metadata"].get("ownerReferences") or [])),
        None,
    )


async def _until(check: Callable[[], Awaitable[Any]], what: str, within: float = WITHIN) -> Any:
    return await eventually(check, what=what, within_seconds=within, interval=POLL)


async def _admitted(
    fleet: RealFleet, namespace: str, job: str, *, not_on: str = ""
) -> tuple[dict[str, Any], str]:
    """Wait until the manager's Workload of ``job`` is admitted on a worker (check ``Ready``,
    ``clusterName`` set, the job created there): ``(workload, worker)``."""

    async def ready() -> tuple[dict[str, Any], str] | None:
        workload = await _workload(fleet, namespace, job)
        if workload is None:
            return None
        cluster = (workload.get("status") or {}).get("clusterName")
        if not cluster or cluster == not_on or _check(workload).get("state") != "Ready":
            return None
        if await _get(fleet.workers[cluster].client, JOB, job, namespace) is None:
            return None
        return workload, cluster

    found: tuple[dict[str, Any], str] = await _until(
        ready, f"{job} admitted on a worker" + (f" other than {not_on}" if not_on else "")
    )
    return found


async def _submit(
    fleet: RealFleet, namespace: str, job: str, *, completions: int = 1
) -> tuple[dict[str, Any], str]:
    await fleet.manager.client.create(JOB, _job(job, completions=completions), namespace=namespace)
    return await _admitted(fleet, namespace, job)


def _other(fleet: RealFleet, worker: str) -> FleetMember:
    return next(member for name, member in fleet.workers.items() if name != worker)


async def _gone_from(member: FleetMember, namespace: str, name: str) -> None:
    async def gone() -> bool:
        return (
            await _get(member.client, WORKLOAD, name, namespace) is None
            and await _get(member.client, JOB, name, namespace) is None
        )

    await _until(gone, f"the copy and the job of {name} removed from {member.name}")


def _owners_of(workload: dict[str, Any], field: str) -> set[tuple[str, str]]:
    """(manager, operation) of every managedFields entry that owns ``status.<field>``."""
    return {
        (entry["manager"], entry["operation"])
        for entry in workload["metadata"].get("managedFields") or []
        if f"f:{field}" in ((entry.get("fieldsV1") or {}).get("f:status") or {})
    }


async def _set_cq_stop_policy(client: KubeClient, name: str, policy: str) -> None:
    await client.patch(CLUSTER_QUEUE_GVK, name, {"spec": {"stopPolicy": policy}})


async def _set_job_status(client: KubeClient, namespace: str, name: str, status: dict[str, Any]) -> None:
    """Merge ``status`` into the job's status with an update of ``/status``, as a job controller
    would. The worker's reconciler writes the same job (its conditions) meanwhile: a ``Conflict``
    reads the job again and retries, until the update lands. A ``startTime`` is written only once
    the job is started, as a job controller runs pods only for an unsuspended Job: on a suspended
    one it would make the pod template immutable, and the reconciler's start (which sets the
    flavor's node selector there) would be refused."""

    async def updated() -> bool:
        job: dict[str, Any] = await client.get(JOB, name, namespace=namespace)
        if "startTime" in status and job["spec"].get("suspend") is not False:
            return False
        job["status"] = {**(job.get("status") or {}), **status}
        try:
            await client.update_status(JOB, job, namespace=namespace)
        except Conflict:
            return False
        return True

    await _until(updated, f"the status of job {name} updated")


# --- tests ---------------------------------------------------------------------------------------
async def test_a_job_runs_on_one_worker_and_its_completion_finishes_the_manager_workload(
    fleet: RealFleet, namespace: str
) -> None:
    workload, worker = await _submit(fleet, namespace, "hello")
    assert _check(workload)["message"] == f'The workload was admitted on "{worker}"'
    assert "nominatedClusterNames" not in workload["status"]
    # written as Kueue's admission writes it, so that Kueue's eviction can clear it
    assert _owners_of(workload, "clusterName") == {(ADMISSION_FIELD_MANAGER, "Apply")}
    other = _other(fleet, worker)
    await _gone_from(other, namespace, workload["metadata"]["name"])
    await _set_job_status(fleet.workers[worker].client, namespace, "hello", job_status_succeeded(now=_now()))

    async def finished() -> dict[str, Any] | None:
        current = await _workload(fleet, namespace, "hello")
        return current if _true(current, "Finished") else None

    done = await _until(finished, "the manager's Workload Finished")
    assert _condition(done, "Finished")["reason"] == "Succeeded"  # type: ignore[index]
    job = await fleet.manager.client.get(JOB, "hello", namespace=namespace)
    assert _true(job, "Complete"), "the remote status is mirrored to the manager's job"
    await _gone_from(fleet.workers[worker], namespace, workload["metadata"]["name"])


async def test_a_worker_eviction_dispatches_the_job_again(fleet: RealFleet, namespace: str) -> None:
    workload, worker = await _submit(fleet, namespace, "evicted-on-worker")
    name = workload["metadata"]["name"]
    # the worker's ClusterQueue stops and drains: its Kueue evicts the copy, which cannot come back there
    await _set_cq_stop_policy(fleet.workers[worker].client, f"cq-{namespace}", "HoldAndDrain")
    again, other = await _admitted(fleet, namespace, "evicted-on-worker", not_on=worker)
    assert _condition(again, "Evicted") is not None, (
        "Kueue evicted the manager's Workload on the check's Retry"
    )
    await _gone_from(fleet.workers[worker], namespace, name)
    assert await _get(fleet.workers[other].client, WORKLOAD, name, namespace) is not None


async def test_a_manager_eviction_holds_the_quota_until_the_remote_pods_are_gone_then_dispatches_again(
    fleet: RealFleet, namespace: str
) -> None:
    workload, worker = await _submit(fleet, namespace, "evicted-on-manager")
    name = workload["metadata"]["name"]
    remote = fleet.workers[worker].client
    await _set_job_status(remote, namespace, "evicted-on-manager", {"startTime": _now(), "active": 1})

    async def mirrored() -> bool:
        job = await fleet.manager.client.get(JOB, "evicted-on-manager", namespace=namespace)
        return bool((job.get("status") or {}).get("active") == 1)

    await _until(mirrored, "the remote job's running pod mirrored to the manager's job")
    await _set_cq_stop_policy(fleet.manager.client, f"cq-{namespace}", "HoldAndDrain")

    async def stopped_on_worker() -> dict[str, Any] | None:
        copy = await _get(remote, WORKLOAD, name, namespace)
        job = await _get(remote, JOB, "evicted-on-manager", namespace)
        if (
            copy is None
            or job is None
            or not _true(copy, "Evicted")
            or job["spec"].get("suspend") is not True
        ):
            return None
        return copy

    copy = await _until(stopped_on_worker, "the copy evicted and the remote job suspended by the worker")
    assert (_condition(copy, "Evicted") or {})["reason"].endswith("EvictedOnManagerCluster")
    # the remote pod still runs (status.active 1): the manager must keep the quota
    current = await _workload(fleet, namespace, "evicted-on-manager")
    assert _true(current, "Evicted") and _true(current, "QuotaReserved")
    await _set_job_status(remote, namespace, "evicted-on-manager", {"active": 0})

    async def released() -> bool:
        current = await _workload(fleet, namespace, "evicted-on-manager")
        return current is not None and not _true(current, "QuotaReserved")

    await _until(released, "the manager's quota released once the remote pods are gone")
    for member in fleet.workers.values():
        await _gone_from(member, namespace, name)
    await _set_cq_stop_policy(fleet.manager.client, f"cq-{namespace}", "None")
    again, _ = await _admitted(fleet, namespace, "evicted-on-manager")
    assert _owners_of(again, "clusterName") == {(ADMISSION_FIELD_MANAGER, "Apply")}


async def test_a_deactivated_workload_is_dispatched_again_when_reactivated(
    fleet: RealFleet, namespace: str
) -> None:
    workload, _ = await _submit(fleet, namespace, "deactivated")
    name = workload["metadata"]["name"]
    await fleet.manager.client.patch(WORKLOAD, name, {"spec": {"active": False}}, namespace=namespace)

    async def released() -> dict[str, Any] | None:
        current = await _workload(fleet, namespace, "deactivated")
        if current is None or _true(current, "QuotaReserved") or not _true(current, "Evicted"):
            return None
        return current

    evicted = await _until(released, "the deactivated Workload evicted and its quota released")
    assert _condition(evicted, "Evicted")["reason"] == "Deactivated"  # type: ignore[index]
    assert "clusterName" not in evicted["status"]
    assert _check(evicted)["state"] == "Pending"
    for member in fleet.workers.values():
        await _gone_from(member, namespace, name)
    await fleet.manager.client.patch(WORKLOAD, name, {"spec": {"active": True}}, namespace=namespace)
    await _admitted(fleet, namespace, "deactivated")


async def test_a_copy_deleted_on_the_worker_is_dispatched_again(fleet: RealFleet, namespace: str) -> None:
    workload, worker = await _submit(fleet, namespace, "copy-deleted")
    name = workload["metadata"]["name"]
    remote = fleet.workers[worker].client
    await remote.delete(WORKLOAD, name, namespace=namespace)
    with contextlib.suppress(NotFound):
        await remote.patch(WORKLOAD, name, {"metadata": {"finalizers": None}}, namespace=namespace)

    async def retried() -> dict[str, Any] | None:
        current = await _workload(fleet, namespace, "copy-deleted")
        return current if current is not None and _condition(current, "Evicted") is not None else None

    evicted = await _until(retried, "the manager's Workload evicted after the admitted copy vanished")
    assert "Admitting remote no longer exists" in (_condition(evicted, "Evicted") or {}).get("message", "")
    await _admitted(fleet, namespace, "copy-deleted")


async def test_a_lost_worker_is_replaced_and_its_stale_copy_removed_when_it_comes_back(
    fleet: RealFleet, namespace: str
) -> None:
    workload, lost = await _submit(fleet, namespace, "lost")
    name = workload["metadata"]["name"]
    proxy = fleet.workers[lost].proxy
    assert proxy is not None
    await proxy.cut()
    try:
        refused = (
            f'failed to get server groups: Get "https://127.0.0.1:{proxy.port}/api": '
            f"dial tcp 127.0.0.1:{proxy.port}: connect: connection refused"
        )

        async def inactive() -> dict[str, Any] | None:
            active = _condition(await fleet.manager.client.get(MK_CLUSTER, lost), "Active")
            return active if active is not None and active["status"] == "False" else None

        active = await _until(inactive, f"{lost} inactive")
        assert (active["reason"], active["message"].split("; connection attempts")[0]) == (
            "ClientConnectionFailed",
            refused,
        ), "Kueue's words for a worker it cannot reach"
        again, replacement = await _admitted(fleet, namespace, "lost", not_on=lost)
        assert "Admitting remote lost" in (_condition(again, "Evicted") or {}).get("message", "")
        running = await fleet.workers[replacement].client.get(JOB, "lost", namespace=namespace)
        # the lost worker still has its admitted copy and its job
        stale = await _get(fleet.workers[lost].client, WORKLOAD, name, namespace)
        assert _true(stale, "Admitted")
    finally:
        await proxy.restore()
    await _gone_from(fleet.workers[lost], namespace, name)
    current = await _workload(fleet, namespace, "lost")
    assert current is not None and current["status"]["clusterName"] == replacement
    assert _check(current)["state"] == "Ready"
    still = await fleet.workers[replacement].client.get(JOB, "lost", namespace=namespace)
    assert still["metadata"]["uid"] == running["metadata"]["uid"], "the running copy's job is kept"

    async def active_again() -> bool:
        cluster = await fleet.manager.client.get(MK_CLUSTER, lost)
        return _true(cluster, "Active")

    await _until(active_again, f"{lost} Active again", within=400)


async def test_an_out_of_sync_copy_is_dispatched_again(fleet: RealFleet, namespace: str) -> None:
    _, worker = await _submit(fleet, namespace, "out-of-sync", completions=2)
    remote = fleet.workers[worker].client
    # two pods instead of one: the remote job no longer matches its prebuilt Workload, and the
    # worker's reconciler finishes the copy OutOfSync
    await remote.patch(JOB, "out-of-sync", {"spec": {"parallelism": 2}}, namespace=namespace)

    async def retried() -> dict[str, Any] | None:
        current = await _workload(fleet, namespace, "out-of-sync")
        return current if current is not None and _condition(current, "Evicted") is not None else None

    evicted = await _until(retried, "the manager's Workload evicted after the copy finished OutOfSync")
    assert "out of sync with its user job" in (_condition(evicted, "Evicted") or {}).get("message", "")
    again, _ = await _admitted(fleet, namespace, "out-of-sync")
    job = await _get(fleet.workers[again["status"]["clusterName"]].client, JOB, "out-of-sync", namespace)
    assert job is not None and job["spec"]["parallelism"] == 1, "a fresh copy of the manager's job"


async def test_a_missing_kubeconfig_secret_is_reported_in_kueues_words(
    fleet: RealFleet, namespace: str
) -> None:
    name = f"nosecret-{namespace}"
    cluster = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "MultiKueueCluster",
        "metadata": {"name": name},
        "spec": {
            "clusterSource": {"kubeConfig": {"locationType": "Secret", "location": f"absent-{namespace}"}}
        },
    }
    await fleet.manager.client.create(MK_CLUSTER, cluster)
    try:

        async def reported() -> dict[str, Any] | None:
            return _condition(await fleet.manager.client.get(MK_CLUSTER, name), "Active")

        active = await _until(reported, f"the Active condition of {name}")
        assert (active["status"], active["reason"], active["message"]) == (
            "False",
            "BadKubeConfig",
            f'load client config failed: Secret "absent-{namespace}" not found',
        )
    finally:
        await fleet.manager.client.delete(MK_CLUSTER, name)
