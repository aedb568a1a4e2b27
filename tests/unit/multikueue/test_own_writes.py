"""Echoes of our own writes do not wake the Workload reconciler; every other change still does."""

from __future__ import annotations

import asyncio
from typing import Any

import yaml

from multikueue.manager import MultiKueueManager
from multikueue.own_writes import ECHO_TTL_SECONDS, MANAGER, OwnWrites
from multikueue.remote import WORKLOAD_GVK, RemoteCluster
from shared.config import default_config
from shared.kube import FakeClock, SystemClock
from tests.polling import eventually
from tests.unit.multikueue.fakes import (
    JOB,
    WORKER_KINDS,
    WORKLOAD,
    FakeCluster,
    kubeconfig_for,
    worker_factory,
)
from tests.unit.multikueue.harness import Harness
from tests.unit.multikueue.harness import condition as condition_of

KIND = str(WORKLOAD_GVK)


def obj(rv: str, *, uid: str = "u1", name: str = "wl") -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": uid, "resourceVersion": rv}}


def test_only_the_version_we_wrote_is_an_echo() -> None:
    own = OwnWrites(clock=FakeClock())
    own.wrote("w1", KIND, obj("5"))
    assert not own.is_echo("w2", KIND, "MODIFIED", obj("5"))  # another cluster
    assert not own.is_echo("w1", str(JOB.gvk), "MODIFIED", obj("5"))  # another kind
    assert not own.is_echo("w1", KIND, "MODIFIED", obj("4"))  # someone else's earlier version
    assert own.is_echo("w1", KIND, "MODIFIED", obj("5"))
    assert not own.is_echo("w1", KIND, "MODIFIED", obj("5"))  # recognised once
    assert len(own) == 0


def test_a_strip_then_delete_is_two_echoes_and_a_foreign_version_between_is_not() -> None:
    own = OwnWrites(clock=FakeClock())
    own.wrote("w1", KIND, obj("7"))  # the finalizer removed
    own.deleting("w1", KIND, obj("7"))
    assert not own.is_echo("w1", KIND, "MODIFIED", obj("6"))
    assert own.is_echo("w1", KIND, "ADDED", obj("7"))
    assert not own.is_echo("w1", KIND, "DELETED", obj("9", uid="other"))  # a re-created one
    own.deleting("w1", KIND, obj("7"))
    assert own.is_echo("w1", KIND, "DELETED", obj("9"))
    assert len(own) == 0


def test_the_added_event_of_a_copy_we_create_is_ours_unless_the_create_failed() -> None:
    own = OwnWrites(clock=FakeClock())
    own.creating("w1", KIND, obj(""))
    assert not own.is_echo("w1", KIND, "ADDED", obj("3", name="other"))
    assert own.is_echo("w1", KIND, "ADDED", obj("3"))  # handled before the create's response
    own.creating("w1", KIND, obj(""))
    own.not_created("w1", KIND, obj(""))
    assert not own.is_echo("w1", KIND, "ADDED", obj("8"))
    assert len(own) == 0


async def test_an_echo_older_than_the_ttl_is_reconciled() -> None:
    clock = FakeClock()
    own = OwnWrites(clock=clock)
    own.wrote(MANAGER, KIND, obj("3"))
    await clock.advance(ECHO_TTL_SECONDS + 1)
    assert not own.is_echo(MANAGER, KIND, "MODIFIED", obj("3"))


def workload(rv: str, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": "wl", "namespace": "ns", "resourceVersion": rv, "finalizers": []},
        "spec": {"queueName": "q"},
        "status": {"conditions": [], **status},
    }


def condition(condition_type: str, status: str = "True") -> dict[str, Any]:
    return {"type": condition_type, "status": status, "reason": "R", "message": ""}


async def test_local_updates_the_reconciler_cannot_act_on_are_dropped() -> None:
    manager = FakeCluster("manager", clock=SystemClock())
    mk = MultiKueueManager(client=manager.client, config=default_config(), client_factory=worker_factory({}))
    queue = mk.workload_controller.queue

    async def enqueued(old: dict[str, Any], new: dict[str, Any]) -> bool:
        mk.workloads._dispatch_update(old, new)  # what the informer does with a watch event
        found = len(queue) > 0
        while len(queue):
            queue.done(await queue.get())
        return found

    base = workload("1")
    pods_ready = workload("2", conditions=[condition("PodsReady")])
    pods_ready["metadata"]["finalizers"] = ["kueue.x-k8s.io/resource-in-use"]
    assert not await enqueued(base, pods_ready)
    assert await enqueued(
        pods_ready, workload("3", conditions=[condition("PodsReady"), condition("Finished")])
    )
    assert await enqueued(base, workload("2", clusterName="w1"))
    ours = workload("4", clusterName="w1")
    mk.workload_reconciler.wrote_local(ours)
    assert not await enqueued(workload("3"), ours)  # our own write's echo
    assert await enqueued(ours, workload("5", clusterName="w1", admission={"clusterQueue": "cq"}))
    assert await enqueued(base, workload("2", conditions=[condition("Evicted")]))
    mk.workloads._store.upsert(base)
    mk.workloads.resync()  # the safety net is never filtered
    assert len(queue) == 1


async def test_a_workers_echo_of_our_write_and_a_podsready_change_are_not_reported() -> None:
    clock = SystemClock()
    worker = FakeCluster("w1", clock=clock, kinds=WORKER_KINDS)
    seen: list[str] = []
    own = OwnWrites(clock=clock)
    remote = RemoteCluster(
        name="w1",
        origin="multikueue",
        job_kinds=(JOB.gvk,),
        client_factory=worker_factory({"w1": worker}),
        clock=clock,
        on_workload=lambda namespace, name: seen.append(name),
        on_lost=lambda name: None,
        own_writes=own,
    )
    document = kubeconfig_for("w1")
    assert await remote.refresh(yaml.safe_dump(document).encode(), document) == (None, None)
    try:
        labels = {"kueue.x-k8s.io/multikueue-origin": "multikueue"}
        created = await worker.client.create(
            WORKLOAD_GVK, {"metadata": {"name": "ours", "namespace": "ns", "labels": labels}}, namespace="ns"
        )
        own.wrote("w1", KIND, created)
        worker.put(WORKLOAD, {"metadata": {"name": "theirs", "namespace": "ns", "labels": labels}})
        await eventually(lambda: asyncio.sleep(0, "theirs" in seen), what="the foreign change reported")
        assert "ours" not in seen  # events arrive in order: the echo came first and was dropped
        admitted = worker.put(WORKLOAD, {**created, "status": {"conditions": [condition("Admitted")]}})
        await eventually(lambda: asyncio.sleep(0, "ours" in seen), what="the worker's change reported")
        # PodsReady is read by no decision: not reported (the next foreign event marks the order)
        pods_ready = {**admitted, "status": {"conditions": [condition("Admitted"), condition("PodsReady")]}}
        worker.put(WORKLOAD, pods_ready)
        worker.put(WORKLOAD, {"metadata": {"name": "theirs2", "namespace": "ns", "labels": labels}})
        await eventually(lambda: asyncio.sleep(0, "theirs2" in seen), what="the second foreign change")
        assert seen.count("ours") == 1
        finished = [*pods_ready["status"]["conditions"], condition("Finished")]
        worker.put(WORKLOAD, {**pods_ready, "status": {"conditions": finished}})
        await eventually(lambda: asyncio.sleep(0, seen.count("ours") == 2), what="Finished reported")
    finally:
        await remote.close()


async def test_dispatch_and_admission_writes_are_echoes_but_finished_is_not() -> None:
    """The echo of ``Finished`` must wake the reconciler: that pass removes the copies."""
    mk = Harness()
    await mk.connect()
    own = OwnWrites(clock=mk.clock)
    mk.reconciler.own_writes = own
    try:
        mk.job()
        mk.workload()
        await mk.reconcile()  # nominations written, copies created
        nominated = mk.local()
        assert own.is_echo(MANAGER, KIND, "MODIFIED", nominated)
        for worker in ("w1", "w2"):
            copy = mk.remote(worker)
            assert copy is not None and own.is_echo(worker, KIND, "ADDED", copy)
        mk.set_remote_condition("w1", "Admitted", at="2026-01-01T00:00:10Z")
        mk.set_remote_condition("w2", "Admitted", at="2026-01-01T00:00:20Z")
        loser = mk.remote("w2")
        await mk.reconcile()  # w1 wins: job created there, w2's copy deleted, Ready written
        assert own.is_echo(MANAGER, KIND, "MODIFIED", mk.local())
        job = mk.remote_job("w1")
        assert job is not None and own.is_echo("w1", str(JOB.gvk), "ADDED", job)
        assert loser is not None and own.is_echo("w2", KIND, "DELETED", loser)
        mk.set_remote_condition("w1", "Finished", reason="Succeeded", message="done")
        assert not own.is_echo("w1", KIND, "MODIFIED", mk.remote("w1") or {})  # the worker's news
        await mk.reconcile()
        assert condition_of(mk.local(), "Finished") is not None
        assert not own.is_echo(MANAGER, KIND, "MODIFIED", mk.local())
    finally:
        await mk.close()
