"""The manager's triggers: Secrets, clusters and configs reach the reconcilers that depend on them.

The manager runs for real (informers, work queues, controllers) against an in-memory manager cluster
and one in-memory worker; the test only creates and deletes objects and watches the conditions.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import pytest

from multikueue.manager import DEFAULT_WORKLOAD_CONCURRENCY, ManagerOptions, MultiKueueManager
from shared.config import default_config, parse_config
from shared.kube import Conflict, SystemClock
from tests.polling import eventually
from tests.unit.multikueue.fakes import (
    ADMISSION_CHECK,
    JOB,
    MK_CLUSTER,
    MK_CONFIG,
    SECRET,
    WORKER_KINDS,
    WORKLOAD,
    FakeCluster,
    kubeconfig_for,
    secret_for,
    worker_factory,
)


@contextlib.asynccontextmanager
async def running(manager: FakeCluster, workers: dict[str, FakeCluster]) -> AsyncIterator[MultiKueueManager]:
    mk = MultiKueueManager(
        client=manager.client,
        config=default_config(),
        options=ManagerOptions(),
        client_factory=worker_factory(workers),
    )
    task = asyncio.create_task(mk.run())
    try:
        yield mk
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def condition(cluster: FakeCluster, info: Any, name: str) -> tuple[str, str] | None:
    obj = cluster.get(info, name)
    for item in ((obj or {}).get("status") or {}).get("conditions") or []:
        if item["type"] == "Active":
            return item["status"], item["reason"]
    return None


@pytest.mark.parametrize("order", ["objects first", "secret last"])
async def test_secret_cluster_config_and_check_converge(order: str) -> None:
    clock = SystemClock()
    manager = FakeCluster("manager", clock=clock)
    workers = {"w1": FakeCluster("w1", clock=clock, kinds=WORKER_KINDS)}
    if order == "objects first":
        manager.put(SECRET, secret_for("w1-secret", kubeconfig_for("w1")))
    async with running(manager, workers) as mk:
        await eventually(lambda: asyncio.sleep(0, mk.synced()), what="caches synced")
        manager.put(
            MK_CLUSTER,
            {
                "metadata": {"name": "w1"},
                "spec": {"clusterSource": {"kubeConfig": {"location": "w1-secret"}}},
            },
        )
        manager.put(MK_CONFIG, {"metadata": {"name": "cfg"}, "spec": {"clusters": ["w1"]}})
        manager.put(
            ADMISSION_CHECK,
            {
                "metadata": {"name": "mk"},
                "spec": {
                    "controllerName": "kueue-bridge.dev/multikueue",
                    "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "cfg"},
                },
            },
        )
        if order == "secret last":
            await eventually(
                lambda: asyncio.sleep(
                    0, condition(manager, ADMISSION_CHECK, "mk") == ("False", "NoUsableClusters")
                ),
                what="the check without usable clusters",
            )
            manager.put(SECRET, secret_for("w1-secret", kubeconfig_for("w1")))
        await eventually(
            lambda: asyncio.sleep(0, condition(manager, MK_CLUSTER, "w1") == ("True", "Active")),
            what="w1 Active",
        )
        await eventually(
            lambda: asyncio.sleep(0, condition(manager, ADMISSION_CHECK, "mk") == ("True", "Active")),
            what="the check Active",
        )
        manager.api.remove_object(SECRET.resource_label, "kueue-system", "w1-secret")
        await eventually(
            lambda: asyncio.sleep(0, condition(manager, MK_CLUSTER, "w1") == ("False", "BadKubeConfig")),
            what="w1 inactive once its Secret is gone",
        )
        await eventually(
            lambda: asyncio.sleep(
                0, condition(manager, ADMISSION_CHECK, "mk") == ("False", "NoUsableClusters")
            ),
            what="the check following its cluster",
        )
        manager.put(MK_CONFIG, {"metadata": {"name": "cfg"}, "spec": {"clusters": ["w1", "w2"]}})
        await eventually(
            lambda: asyncio.sleep(
                0,
                ((manager.get(ADMISSION_CHECK, "mk") or {}).get("status") or {})
                .get("conditions", [{}])[0]
                .get("message")
                == "Missing clusters: [w2], Inactive clusters: [w1]",
            ),
            what="the check following its config's cluster list",
        )


async def test_a_cluster_that_connects_late_gets_the_waiting_workloads() -> None:
    clock = SystemClock()
    manager = FakeCluster("manager", clock=clock)
    workers = {"w1": FakeCluster("w1", clock=clock, kinds=WORKER_KINDS)}
    manager.put(
        MK_CLUSTER,
        {"metadata": {"name": "w1"}, "spec": {"clusterSource": {"kubeConfig": {"location": "w1-secret"}}}},
    )
    manager.put(MK_CONFIG, {"metadata": {"name": "cfg"}, "spec": {"clusters": ["w1"]}})
    manager.put(
        ADMISSION_CHECK,
        {
            "metadata": {"name": "mk"},
            "spec": {
                "controllerName": "kueue-bridge.dev/multikueue",
                "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "cfg"},
            },
        },
    )
    manager.put(
        JOB,
        {"metadata": {"name": "job", "namespace": "ns"}, "spec": {"managedBy": "kueue.x-k8s.io/multikueue"}},
    )
    manager.put(
        WORKLOAD,
        {
            "metadata": {
                "name": "wl",
                "namespace": "ns",
                "ownerReferences": [
                    {"apiVersion": "batch/v1", "kind": "Job", "name": "job", "uid": "u", "controller": True}
                ],
            },
            "spec": {"queueName": "q"},
            "status": {
                "conditions": [
                    {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": ""}
                ],
                "admissionChecks": [{"name": "mk", "state": "Pending", "message": ""}],
            },
        },
    )
    async with running(manager, workers) as mk:
        await eventually(lambda: asyncio.sleep(0, mk.synced()), what="caches synced")
        await eventually(
            lambda: asyncio.sleep(0, condition(manager, MK_CLUSTER, "w1") == ("False", "BadKubeConfig")),
            what="w1 waiting for its Secret",
        )
        queue = mk.workload_controller.queue

        async def idle() -> bool:
            return not len(queue) and not queue.processing and not queue.waiting

        await eventually(idle, what="the Workload reconciled with no worker to dispatch to, nothing pending")
        assert workers["w1"].get(WORKLOAD, "wl", "ns") is None
        manager.put(SECRET, secret_for("w1-secret", kubeconfig_for("w1")))
        await eventually(
            lambda: asyncio.sleep(0, workers["w1"].get(WORKLOAD, "wl", "ns") is not None),
            what="the waiting Workload dispatched once w1 connected",
        )


def test_workload_concurrency_follows_kueues_group_kind_key() -> None:
    """``controller.groupKindConcurrency["Workload.kueue.x-k8s.io"]`` sets how many Workloads the
    MultiKueue reconciler handles at once, as controller-runtime does for Kueue's; else our default."""
    manager = FakeCluster("manager", clock=SystemClock())
    configured = parse_config(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
        "controller: {groupKindConcurrency: {Workload.kueue.x-k8s.io: 5, Job.batch: 3}}\n",
        source="x",
    )
    mk = MultiKueueManager(client=manager.client, config=configured, client_factory=worker_factory({}))
    assert mk.workload_controller.workers == 5
    mk = MultiKueueManager(client=manager.client, config=default_config(), client_factory=worker_factory({}))
    assert mk.workload_controller.workers == DEFAULT_WORKLOAD_CONCURRENCY
    mk = MultiKueueManager(
        client=manager.client,
        config=configured,
        options=ManagerOptions(workers=2),
        client_factory=worker_factory({}),
    )
    assert mk.workload_controller.workers == 2


async def test_a_conflicted_pass_is_retried_on_the_next_version_whatever_changed() -> None:
    """A pass that hit a ``Conflict`` acted on a cached version the API server has moved past. The
    next version the informer delivers must reach the queue even when the Workload reconciler's
    ``decision_view`` filter would drop it (here: only a finalizer changed), so the retry does not
    wait for the conflict's exponential backoff alone."""
    clock = SystemClock()
    mk = MultiKueueManager(
        client=FakeCluster("manager", clock=clock).client,
        config=default_config(),
        options=ManagerOptions(),
        client_factory=worker_factory({}),
    )
    queue = mk.workload_controller.queue
    [handler] = [h for h in mk.workloads._handlers if h.on_update is not None]
    assert handler.on_update is not None
    old = {"metadata": {"namespace": "ns", "name": "wl", "resourceVersion": "1"}, "status": {}}
    finalizer_only = {
        "metadata": {"namespace": "ns", "name": "wl", "resourceVersion": "2", "finalizers": ["x"]},
        "status": {},
    }

    handler.on_update(old, finalizer_only)
    assert len(queue) == 0, "a change the reconciler does not read is filtered"

    async def conflicting(key: str) -> Any:
        raise Conflict(code=409, message="the object has been modified")

    mk.workload_reconciler.reconcile = conflicting  # type: ignore[method-assign]
    with pytest.raises(Conflict):
        await mk._reconcile_workload("ns/wl")
    handler.on_update(old, finalizer_only)
    assert len(queue) == 1, "after a conflict the next version is reconciled"
    handler.on_update(
        finalizer_only, {**finalizer_only, "metadata": {**finalizer_only["metadata"], "resourceVersion": "3"}}
    )
    assert len(queue) == 1, "only the first version after the conflict is forced through"
