"""Each reconcile step of batch/v1 Job on the devcluster, with the real Kueue CRDs (pruning on).

Kueue is played by the test: it writes admission, eviction and deactivation to the Workload the way
Kueue's scheduler and workload controller do (``status`` subresource, Kueue's condition reasons),
then asserts what the reconciler must have written — into objects that went through the real
Workload schema, so a field our models write but Kueue's CRD lacks would be pruned and fail here.
Steps (reference notes §2): preemption -> stop, restore templates, ``Requeued=True``; deactivation
-> stop, ``Requeued=False`` ``Deactivated``; running without admission -> stopped; queue-name change
-> Workload follows; job deletion -> Workload ``Finished`` ``OwnerNotFound`` and released;
WorkloadPriorityClass -> ``priorityClassRef``/``priority``, following label changes.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devcluster.server import ThreadedDevCluster
from shared.constants import STOPPING_ANNOTATION
from shared.kube import GroupVersionKind, KubeClient
from tests.e2e.conftest import create_namespace, eventually, kube_client, wait_served, write_latest
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

WORKLOAD_PRIORITY_CLASS = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "WorkloadPriorityClass")
NOW = "2026-11-22T02:34:10Z"
_namespaces = itertools.count()


@pytest.fixture(scope="module")
def cluster(shared_dir: Path) -> Iterator[ThreadedDevCluster]:
    """One devcluster for the module (installing Kueue's Workload CRD costs seconds); a namespace per test."""

    async def install(kubeconfig: Path) -> None:
        async with kube_client(kubeconfig) as client:
            await setup_cluster(client, shared_dir, namespace=None)
            await wait_served(client, (WORKLOAD, WORKLOAD_PRIORITY_CLASS))  # CRDs established before any test

    with ThreadedDevCluster() as started:
        asyncio.run(install(started.kubeconfig_path))
        yield started


@pytest.fixture
async def ns(cluster: ThreadedDevCluster) -> str:
    return await create_namespace(cluster.kubeconfig_path, f"steps-{next(_namespaces)}")


def user_job(namespace: str, name: str = "sample", *, suspend: bool = True) -> dict[str, Any]:
    """The golden Job as a user submits it (no server-set uid, selector or controller labels)."""
    job = golden_job(name=name, suspend=suspend)
    job["metadata"]["namespace"] = namespace
    for key in ("uid", "generation"):
        del job["metadata"][key]
    job["spec"].pop("selector")
    for key in ("batch.kubernetes.io/controller-uid", "controller-uid"):
        del job["spec"]["template"]["metadata"]["labels"][key]
    return job


async def job_where(client: KubeClient, ns: str, check: Any, *, what: str) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        current = await get_or_none(client, JOB, "sample", namespace=ns)
        return current if current is not None and check(current) else None

    result: dict[str, Any] = await eventually(probe, what=what)
    return result


async def workload_where(client: KubeClient, ns: str, check: Any, *, what: str) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        current = await only_workload(client, namespace=ns)
        return current if current is not None and check(current) else None

    try:
        result: dict[str, Any] = await eventually(probe, what=what)
    except AssertionError as exc:
        job = await get_or_none(client, JOB, "sample", namespace=ns)
        raise AssertionError(
            f"{exc}; Workload: {await only_workload(client, namespace=ns)}; job: {job}"
        ) from None
    return result


def has(obj: dict[str, Any], condition_type: str, status: str, reason: str | None = None) -> bool:
    found = condition(obj, condition_type)
    return found is not None and found["status"] == status and (reason is None or found["reason"] == reason)


async def admitted_and_running(client: KubeClient, ns: str) -> dict[str, Any]:
    """Wait for the pending Workload (PodsReady written), admit it, wait for the job to start."""
    workload = await workload_where(client, ns, lambda w: condition(w, "PodsReady"), what="PodsReady")
    await write_admission(client, workload)
    await job_where(client, ns, lambda j: j["spec"]["suspend"] is False, what="the job to start")
    return await workload_where(
        client, ns, lambda w: has(w, "Admitted", "True"), what="the admitted Workload"
    )


async def write_eviction(client: KubeClient, workload: dict[str, Any], *, reason: str, message: str) -> None:
    def evict(latest: dict[str, Any]) -> None:
        conditions = [c for c in latest["status"]["conditions"] if c["type"] not in ("Evicted", "Preempted")]
        conditions.append(
            {
                "type": "Evicted",
                "status": "True",
                "reason": reason,
                "message": message,
                "lastTransitionTime": NOW,
            }
        )
        if reason == "Preempted":
            conditions.append(
                {
                    "type": "Preempted",
                    "status": "True",
                    "reason": "InClusterQueue",
                    "message": message,
                    "lastTransitionTime": NOW,
                }
            )
        latest["status"]["conditions"] = conditions

    metadata = workload["metadata"]
    await write_latest(
        client,
        WORKLOAD,
        metadata["name"],
        namespace=metadata["namespace"],
        change=evict,
        kueue_admission=True,
    )


def stopped_and_restored(job: dict[str, Any]) -> bool:
    template = job["spec"]["template"]
    return (
        job["spec"]["suspend"] is True
        and template["spec"].get("nodeSelector") == {"zone": "a"}
        and "kueue.x-k8s.io/podset" not in (template["metadata"].get("labels") or {})
    )


async def test_preemption_stops_the_job_restores_templates_and_requeues(
    cluster: ThreadedDevCluster, ns: str
) -> None:
    events = RecordedEvents()
    async with kube_client(cluster.kubeconfig_path) as client:
        await client.create(JOB, user_job(ns), namespace=ns)
        async with running_reconciler(client, events):
            workload = await admitted_and_running(client, ns)
            message = (
                "Preempted to accommodate a workload (UID: 1234) due to prioritization in the ClusterQueue"
            )
            await write_eviction(client, workload, reason="Preempted", message=message)
            await job_where(client, ns, stopped_and_restored, what="the job stopped, templates restored")
            workload = await workload_where(
                client, ns, lambda w: has(w, "Requeued", "True", "Preempted"), what="Requeued=True Preempted"
            )
        assert "admission" not in workload["status"]
        assert has(workload, "QuotaReserved", "False")
        assert ("Normal", "Stopped", message) in events.items


async def test_preemption_stops_a_started_job_in_the_order_kube_apiserver_accepts(
    cluster: ThreadedDevCluster, ns: str
) -> None:
    """As above, but the job controller had started the Job (``status.startTime``, an active pod):
    kube-apiserver then refuses any template change until the Job is suspended, has no active pod
    *and* has no ``startTime`` (or ``Suspended=True``), so the stop must go in that order, the
    restore once the job controller reports the pod gone."""
    async with kube_client(cluster.kubeconfig_path) as client:
        await client.create(JOB, user_job(ns), namespace=ns)
        async with running_reconciler(client, RecordedEvents()):
            workload = await admitted_and_running(client, ns)
            await client.patch_status(
                JOB,
                "sample",
                {"status": {"startTime": NOW, "active": 1, "ready": 1}},
                namespace=ns,
            )
            await write_eviction(client, workload, reason="Preempted", message="Preempted")

            def held(job: dict[str, Any]) -> bool:
                return job["spec"]["suspend"] is True and "startTime" not in job["status"]

            job = await job_where(client, ns, held, what="the started job suspended, startTime cleared")
            assert job["metadata"]["annotations"][STOPPING_ANNOTATION] == "true", "the restore waits"
            await client.patch_status(JOB, "sample", {"status": {"active": 0, "ready": 0}}, namespace=ns)
            job = await job_where(
                client, ns, stopped_and_restored, what="the started job stopped and restored"
            )
        assert "startTime" not in job["status"]
        assert STOPPING_ANNOTATION not in (job["metadata"].get("annotations") or {})


async def test_deactivation_stops_the_job_without_requeueing(cluster: ThreadedDevCluster, ns: str) -> None:
    async with kube_client(cluster.kubeconfig_path) as client:
        await client.create(JOB, user_job(ns), namespace=ns)
        async with running_reconciler(client, RecordedEvents()):
            workload = await admitted_and_running(client, ns)
            workload = await write_latest(
                client,
                WORKLOAD,
                workload["metadata"]["name"],
                namespace=ns,
                change=lambda w: w["spec"].update(active=False),
            )
            await write_eviction(
                client, workload, reason="Deactivated", message="The workload is deactivated"
            )
            await job_where(client, ns, stopped_and_restored, what="the deactivated job stopped")
            workload = await workload_where(
                client,
                ns,
                lambda w: has(w, "Requeued", "False", "Deactivated"),
                what="Requeued=False Deactivated",
            )
        assert workload["spec"]["active"] is False
        assert "admission" not in workload["status"]


async def test_a_job_running_without_admission_is_stopped(cluster: ThreadedDevCluster, ns: str) -> None:
    events = RecordedEvents()
    async with kube_client(cluster.kubeconfig_path) as client:
        await client.create(JOB, user_job(ns), namespace=ns)
        async with running_reconciler(client, events):
            first = await workload_where(client, ns, lambda w: condition(w, "PodsReady"), what="the Workload")
            await client.patch(JOB, "sample", {"spec": {"suspend": False}}, namespace=ns)
            await job_where(client, ns, lambda j: j["spec"]["suspend"] is True, what="the job stopped again")
            current = await only_workload(client, namespace=ns)
            await events.wait_for("Normal", "Stopped", "Not admitted by cluster queue")
        assert current is not None and current["metadata"]["uid"] == first["metadata"]["uid"]


async def test_a_job_created_running_is_stopped_and_gets_one_workload(
    cluster: ThreadedDevCluster, ns: str
) -> None:
    async with kube_client(cluster.kubeconfig_path) as client:
        await client.create(JOB, user_job(ns, suspend=False), namespace=ns)
        async with running_reconciler(client, RecordedEvents()):
            await job_where(client, ns, lambda j: j["spec"]["suspend"] is True, what="the job suspended")
            workload = await workload_where(client, ns, lambda w: True, what="its Workload")
        assert workload["spec"]["queueName"] == "golden-q"


async def test_a_queue_name_change_moves_the_pending_workload(cluster: ThreadedDevCluster, ns: str) -> None:
    async with kube_client(cluster.kubeconfig_path) as client:
        await client.create(JOB, user_job(ns), namespace=ns)
        async with running_reconciler(client, RecordedEvents()):
            first = await workload_where(
                client, ns, lambda w: w["spec"]["queueName"] == "golden-q", what="Workload"
            )
            relabel = {"metadata": {"labels": {"kueue.x-k8s.io/queue-name": "other-q"}}}
            await client.patch(JOB, "sample", relabel, namespace=ns)
            moved = await workload_where(
                client, ns, lambda w: w["spec"]["queueName"] == "other-q", what="queueName other-q"
            )
        assert moved["metadata"]["uid"] == first["metadata"]["uid"]


async def test_job_deletion_finishes_the_workload_owner_not_found_and_releases_it(
    cluster: ThreadedDevCluster, ns: str
) -> None:
    async with kube_client(cluster.kubeconfig_path) as client:
        job = user_job(ns)
        job["metadata"]["finalizers"] = ["e2e.kueue-bridge.dev/hold"]  # keeps the job visible while deleting
        await client.create(JOB, job, namespace=ns)
        async with running_reconciler(client, RecordedEvents()):
            await workload_where(client, ns, lambda w: condition(w, "PodsReady"), what="the Workload")
            await client.delete(JOB, "sample", namespace=ns, propagation_policy="Background")
            workload = await workload_where(
                client,
                ns,
                lambda w: has(w, "Finished", "True", "OwnerNotFound") and not w["metadata"].get("finalizers"),
                what="Finished OwnerNotFound without finalizer",
            )
            assert condition(workload, "Finished")["message"] == "The workload's owner no longer exists"  # type: ignore[index]
            await client.patch(JOB, "sample", {"metadata": {"finalizers": None}}, namespace=ns)

            async def workload_gone() -> bool:
                return await only_workload(client, namespace=ns) is None

            await eventually(workload_gone, what="garbage collection of the released Workload")


async def test_workload_priority_class_is_resolved_and_follows_the_label(
    cluster: ThreadedDevCluster, ns: str
) -> None:
    async with kube_client(cluster.kubeconfig_path) as client:
        for name, value in (("high", 1000), ("low", 10)):
            await client.create(WORKLOAD_PRIORITY_CLASS, {"metadata": {"name": name}, "value": value})
        job = user_job(ns)
        job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = "high"
        await client.create(JOB, job, namespace=ns)
        async with running_reconciler(client, RecordedEvents()):
            high = await workload_where(
                client, ns, lambda w: w["spec"].get("priority") == 1000, what="priority 1000"
            )
            assert high["spec"]["priorityClassRef"] == {
                "group": "kueue.x-k8s.io",
                "kind": "WorkloadPriorityClass",
                "name": "high",
            }
            relabel = {"metadata": {"labels": {"kueue.x-k8s.io/priority-class": "low"}}}
            await client.patch(JOB, "sample", relabel, namespace=ns)
            low = await workload_where(
                client, ns, lambda w: w["spec"].get("priority") == 10, what="priority 10"
            )
        assert low["spec"]["priorityClassRef"]["name"] == "low"
        assert low["metadata"]["uid"] == high["metadata"]["uid"]
