"""Garbage collection by origin label, copies removed without quota, and the incremental dispatcher."""

from __future__ import annotations

import pytest

from multikueue.adapters import MultiKueueAdapters
from multikueue.dispatcher import IncrementalDispatcher, NoMoreWorkersError
from multikueue.gc import GarbageCollector
from shared.kube import Result
from tests.unit.multikueue.fakes import ADMISSION_CHECK, JOB, MK_CONFIG, WORKLOAD
from tests.unit.multikueue.harness import ORIGIN_LABEL, Harness


async def test_no_quota_removes_every_copy_and_waits_for_unavailable_workers() -> None:
    mk = Harness()
    await mk.connect()
    mk.job()
    mk.workload()
    await mk.reconcile()
    assert mk.remote("w1") is not None and mk.remote("w2") is not None
    mk.remotes["w2"].mark_disconnected()
    mk.workload(reserved=False)
    assert await mk.reconcile() == Result.after(900.0)
    assert mk.remote("w1") is None and mk.remote("w2") is not None  # w2 is left to the GC
    await mk.close()


async def test_gc_removes_orphans_by_origin_label_only() -> None:
    mk = Harness()
    await mk.connect()
    worker = mk.workers["w1"]
    ours = {"kueue.x-k8s.io/multikueue-origin": "multikueue"}
    owner = [{"apiVersion": "batch/v1", "kind": "Job", "name": "job", "uid": "u", "controller": True}]
    worker.put(
        WORKLOAD,
        {"metadata": {"name": "orphan", "namespace": "ns", "labels": ours, "ownerReferences": owner}},
    )
    worker.put(JOB, {"metadata": {"name": "job", "namespace": "ns", "labels": ours}})
    worker.put(WORKLOAD, {"metadata": {"name": "alive", "namespace": "ns", "labels": ours}})
    worker.put(
        WORKLOAD,
        {"metadata": {"name": "other", "namespace": "ns", "labels": {ORIGIN_LABEL: "another-manager"}}},
    )
    worker.put(WORKLOAD, {"metadata": {"name": "theirs", "namespace": "ns"}})
    theirs_owner = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "own-job", "uid": "v", "controller": True}
    ]
    worker.put(
        WORKLOAD,
        {"metadata": {"name": "orphan2", "namespace": "ns", "labels": ours, "ownerReferences": theirs_owner}},
    )
    worker.put(JOB, {"metadata": {"name": "own-job", "namespace": "ns"}})
    mk.workload("alive")
    gc = GarbageCollector(
        interval=60,
        origin="multikueue",
        adapters=MultiKueueAdapters.from_config(mk.config),
        remotes=lambda: list(mk.remotes.values()),
        local_workload=mk.manager.getter(WORKLOAD),
        clock=mk.clock,
    )
    assert await gc.collect(mk.remotes["w1"]) == 2
    assert {name for (resource, _ns, name) in worker.api.objects if resource == WORKLOAD.resource_label} == {
        "alive",
        "other",
        "theirs",
    }
    assert worker.get(JOB, "job", "ns") is None and worker.get(JOB, "own-job", "ns") is not None
    mk.remotes["w1"].mark_disconnected()
    assert await gc.collect(mk.remotes["w1"]) == 0
    await mk.close()


async def test_incremental_dispatcher_rounds_and_step_size() -> None:
    mk = Harness(dispatcher="kueue.x-k8s.io/multikueue-dispatcher-incremental")
    mk.manager.put(MK_CONFIG, {"metadata": {"name": "cfg"}, "spec": {"clusters": ["w2", "w1", "w3"]}})
    dispatcher = IncrementalDispatcher(
        client=mk.manager.client,
        workloads=mk.manager.getter(WORKLOAD),
        checks=mk.manager.getter(ADMISSION_CHECK),
        configs=mk.manager.getter(MK_CONFIG),
        multikueue_check=mk.reconciler.multikueue_check,
        step_size=2,
        respect_config_order=True,
        clock=mk.clock,
        now=mk.clock.wall,
    )
    mk.job()
    mk.workload()
    assert await dispatcher.reconcile("ns/wl") == Result.done()
    assert mk.local()["status"]["nominatedClusterNames"] == ["w2", "w1"]
    await mk.clock.advance(60)
    assert await dispatcher.reconcile("ns/wl") == Result.after(240.0)
    await mk.clock.advance(241)
    await dispatcher.reconcile("ns/wl")
    assert mk.local()["status"]["nominatedClusterNames"] == ["w2", "w1", "w3"]
    await mk.clock.advance(301)
    with pytest.raises(NoMoreWorkersError, match="no more workers to nominate"):
        await dispatcher.reconcile("ns/wl")
    await mk.connect()
    with pytest.raises(Exception, match="cluster w3: no remote client for nominated cluster"):
        await mk.reconcile()  # w3 has no connection; the nominated, connected ones get their copy
    assert mk.remote("w1") is not None and mk.remote("w2") is not None
    await mk.close()
