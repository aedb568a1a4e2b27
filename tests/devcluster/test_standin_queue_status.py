"""The Kueue stand-in's ClusterQueue and LocalQueue status, against what real Kueue wrote on the kit.

The expected objects below were read from real Kueue ff69552 (normal mode, the kit's
kube-apiserver 1.36.2) for the same queues and Workloads; ``tests/real/test_kueuectl.py`` compares
the two live, on both Kueue versions. Here the stand-in runs against the fake API server of
``test_standin.py``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from devcluster.standin.client import ApiClient
from devcluster.standin.kueue import CLUSTER_QUEUES, LOCAL_QUEUES, WORKLOADS, KueueStandin
from devcluster.standin.queue_status import (
    QueueTally,
    cluster_queue_activity,
    cluster_queue_status,
    local_queue_activity,
    local_queue_status,
)
from tests.devcluster.test_standin import FakeApi, FakeClock, cluster_queue, local_queue, workload

NOW = FakeClock()()


@pytest.fixture
def api() -> FakeApi:
    return FakeApi.with_flavors()


@pytest.fixture
async def standin(api: FakeApi) -> AsyncIterator[KueueStandin]:
    client = ApiClient(
        url="https://devcluster.test", token="t", ca_file=None, transport=httpx.MockTransport(api.handle)
    )
    yield KueueStandin(client=client, clock=FakeClock())
    await client.aclose()


def _without_times(status: dict[str, Any]) -> dict[str, Any]:
    return {
        **status,
        "conditions": [
            {k: v for k, v in c.items() if k != "lastTransitionTime"} for c in status["conditions"]
        ],
    }


def _usage(cpu: str, memory: str, *, borrowed: bool) -> list[dict[str, Any]]:
    extra = {"borrowed": "0"} if borrowed else {}
    return [
        {
            "name": "spot",
            "resources": [
                {"name": "cpu", "total": cpu, **extra},
                {"name": "memory", "total": memory, **extra},
            ],
        }
    ]


async def test_two_admitted_and_one_pending_read_as_real_kueue_writes_them(
    api: FakeApi, standin: KueueStandin
) -> None:
    api.put(CLUSTER_QUEUES, cluster_queue("cq", cpu="2", memory="2Gi"))
    api.put(LOCAL_QUEUES, local_queue("q", "ns", "cq"))
    for name in ("j1", "j2", "j3"):
        api.put(WORKLOADS, workload(name, cpu="1"))  # 1 cpu, 200Mi each

    for _ in range(3):  # admission, then the status of what it admitted
        await standin.reconcile_once()

    cq = api.get(CLUSTER_QUEUES, "cq")
    assert _without_times(cq["status"]) == {
        "pendingWorkloads": 1,
        "reservingWorkloads": 2,
        "admittedWorkloads": 2,
        "flavorsReservation": _usage("2", "400Mi", borrowed=True),
        "flavorsUsage": _usage("2", "400Mi", borrowed=True),
        "conditions": [
            {
                "type": "Active",
                "status": "True",
                "reason": "Ready",
                "message": "Can admit new workloads",
                "observedGeneration": 1,
            }
        ],
    }
    lq = api.get(LOCAL_QUEUES, "q", "ns")
    assert _without_times(lq["status"]) == {
        "pendingWorkloads": 1,
        "reservingWorkloads": 2,
        "admittedWorkloads": 2,
        "flavorsReservation": _usage("2", "400Mi", borrowed=False),
        "flavorsUsage": _usage("2", "400Mi", borrowed=False),
        "conditions": [
            {
                "type": "Active",
                "status": "True",
                "reason": "Ready",
                "message": "Can submit new workloads to localQueue",
                "observedGeneration": 1,
            }
        ],
    }


async def test_nothing_is_written_again_when_nothing_changed(api: FakeApi, standin: KueueStandin) -> None:
    api.put(CLUSTER_QUEUES, cluster_queue("cq", cpu="2"))
    api.put(LOCAL_QUEUES, local_queue("q", "ns", "cq"))
    for _ in range(3):
        await standin.reconcile_once()
    before = list(api.writes)
    await standin.reconcile_once()
    assert api.writes == before


async def test_missing_flavors_make_the_cluster_queue_inactive_and_hold_its_workloads(
    api: FakeApi, standin: KueueStandin
) -> None:
    spec = cluster_queue("cq", cpu="2")
    spec["spec"]["resourceGroups"][0]["flavors"] = [
        {
            "name": name,
            "resources": [{"name": "cpu", "nominalQuota": "1"}, {"name": "memory", "nominalQuota": "1Gi"}],
        }
        for name in ("nope-b", "nope-a")
    ]
    api.put(CLUSTER_QUEUES, spec)
    api.put(LOCAL_QUEUES, local_queue("q", "ns", "cq"))
    api.put(LOCAL_QUEUES, local_queue("orphan", "ns", "gone"))
    api.put(WORKLOADS, workload("held"))
    api.put(WORKLOADS, workload("lost", queue="orphan"))
    for _ in range(3):
        await standin.reconcile_once()

    held = api.get(WORKLOADS, "held", "ns")
    assert "admission" not in held["status"]
    [reserved] = [c for c in held["status"]["conditions"] if c["type"] == "QuotaReserved"]
    assert (reserved["status"], reserved["reason"], reserved["message"]) == (
        "False",
        "Suspended",
        "ClusterQueue cq is inactive",
    )
    [active] = api.get(CLUSTER_QUEUES, "cq")["status"]["conditions"]
    assert (active["status"], active["reason"], active["message"]) == (
        "False",
        "FlavorNotFound",
        "Can't admit new workloads: references missing ResourceFlavor(s): nope-b,nope-a.",
    )
    assert api.get(CLUSTER_QUEUES, "cq")["status"]["pendingWorkloads"] == 1
    orphan = api.get(LOCAL_QUEUES, "orphan", "ns")["status"]
    assert "flavorsReservation" not in orphan, "no ClusterQueue, no usage lists"
    assert orphan["pendingWorkloads"] == 1, "Kueue's queue manager keeps it in its LocalQueue"
    [active] = orphan["conditions"]
    assert (active["reason"], active["message"]) == (
        "ClusterQueueDoesNotExist",
        "Can't submit new workloads to clusterQueue",
    )
    [active] = api.get(LOCAL_QUEUES, "q", "ns")["status"]["conditions"]
    assert (active["status"], active["reason"]) == ("False", "ClusterQueueIsInactive")


def test_the_first_blocker_gives_the_reason_and_all_give_the_message() -> None:
    cq = cluster_queue("cq", cpu="1", stopPolicy="Hold")
    activity = cluster_queue_activity(cq, flavors=[])
    assert (activity.active, activity.reason, activity.message) == (
        False,
        "Stopped",
        "Can't admit new workloads: is stopped, references missing ResourceFlavor(s): spot.",
    )
    deleting = {**cq, "metadata": {**cq["metadata"], "deletionTimestamp": "2026-11-22T02:35:00Z"}}
    assert cluster_queue_activity(deleting, flavors=["spot"]).message == (
        "Can't admit new workloads; clusterQueue is terminating"
    )
    assert cluster_queue_activity(cluster_queue("cq", cpu="1"), flavors=["spot"]).active is True


def test_a_stopped_local_queue_counts_no_pending_workloads() -> None:
    lq = {**local_queue("q", "ns", "cq"), "spec": {"clusterQueue": "cq", "stopPolicy": "HoldAndDrain"}}
    activity = local_queue_activity(lq, cluster_queue_active=True)
    assert (activity.reason, activity.message) == ("Stopped", "LocalQueue is stopped")
    status = local_queue_status(
        lq,
        cluster_queue=cluster_queue("cq", cpu="1"),
        activity=activity,
        tally=QueueTally(pending=3),
        now=NOW,
    )
    assert status["pendingWorkloads"] == 0


def test_a_condition_keeps_its_transition_time_while_its_status_stays() -> None:
    cq = cluster_queue("cq", cpu="1")
    ready = cluster_queue_activity(cq, flavors=["spot"])
    first = cluster_queue_status(cq, activity=ready, tally=QueueTally(), now=NOW)
    later = FakeClock()
    later.advance(60)
    again = cluster_queue_status({**cq, "status": first}, activity=ready, tally=QueueTally(), now=later())
    assert again == first
