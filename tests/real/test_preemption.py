"""Preemption of a started batch Job: real Kueue evicts it for a higher-priority one, kueue-bridge stops it.

A full ClusterQueue (1 CPU, ``withinClusterQueue: LowerPriority``) runs a low-priority Job whose pod
is active. A high-priority Job (``kueue.x-k8s.io/priority-class`` naming a WorkloadPriorityClass)
arrives: real Kueue's scheduler preempts the running Workload (``Evicted``/``Preempted`` with its
message and events); our reconciler suspends the victim, puts its pod template back as it was
created and clears ``startTime``; the quota stays reserved while the victim's pod is still active,
as Kueue's jobframework does, and is released once the job controller would report no active pod
(the test writes that); then the preemptor starts and the victim waits in the queue again.
"""

from __future__ import annotations

from typing import Any

from shared.constants import WORKLOAD_PRIORITY_CLASS_LABEL
from tests.polling import eventually
from tests.real.conftest import Bridge
from tests.real.support import (
    CLUSTER_QUEUE,
    JOB,
    PRIORITY_CLASS,
    apply_queues,
    batch_job,
    condition,
    events_for,
    job_running_status,
    now_rfc3339,
    owned_workload,
    waiting_for_quota_reason,
)

POOL_LABEL = "e2e.kueue-bridge.dev/pool"


async def _job_where(bridge: Bridge, namespace: str, name: str, what: str, check: Any) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        job: dict[str, Any] = await bridge.client.get(JOB, name, namespace=namespace)
        return job if check(job) else None

    job: dict[str, Any] = await eventually(probe, what=f"Job {name}: {what}", within_seconds=60)
    return job


async def _workload_where(bridge: Bridge, namespace: str, uid: str, what: str, check: Any) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        workload = await owned_workload(bridge.client, namespace, owner_uid=uid)
        return workload if workload is not None and check(workload) else None

    workload: dict[str, Any] = await eventually(probe, what=what, within_seconds=60)
    return workload


def _is(workload: dict[str, Any], kind: str, status: str, reason: str | None = None) -> bool:
    state = condition(workload, kind)
    return state is not None and state["status"] == status and (reason is None or state["reason"] == reason)


async def test_a_running_job_is_preempted_stopped_restored_and_requeued(
    bridge: Bridge, namespace: str
) -> None:
    client = bridge.client
    cluster_queue = await apply_queues(
        client,
        namespace,
        cpu="1",
        flavor={"nodeLabels": {POOL_LABEL: "on-demand"}},
        preemption={"withinClusterQueue": "LowerPriority"},
    )
    low_class, high_class = f"low-{namespace}", f"high-{namespace}"
    for name, value in ((low_class, 10), (high_class, 1000)):
        await client.create(
            PRIORITY_CLASS,
            {
                "apiVersion": PRIORITY_CLASS.api_version,
                "kind": PRIORITY_CLASS.kind,
                "metadata": {"name": name},
                "value": value,
            },
        )

    low = await client.create(
        JOB, batch_job("low", labels={WORKLOAD_PRIORITY_CLASS_LABEL: low_class}), namespace=namespace
    )
    low_uid = low["metadata"]["uid"]
    admitted = await _workload_where(
        bridge, namespace, low_uid, "the low Workload admitted", lambda w: _is(w, "Admitted", "True")
    )
    assert (admitted["spec"]["priority"], admitted["spec"]["priorityClassRef"]["name"]) == (10, low_class)
    started = await _job_where(
        bridge, namespace, "low", "unsuspended", lambda j: j["spec"]["suspend"] is False
    )
    assert started["spec"]["template"]["spec"]["nodeSelector"] == {POOL_LABEL: "on-demand"}
    await client.patch(
        JOB,
        "low",
        {"status": job_running_status(now=now_rfc3339())},
        namespace=namespace,
        subresource="status",
    )

    high = await client.create(
        JOB, batch_job("high", labels={WORKLOAD_PRIORITY_CLASS_LABEL: high_class}), namespace=namespace
    )
    high_workload = await _workload_where(
        bridge, namespace, high["metadata"]["uid"], "the high Workload", lambda w: True
    )
    victim = await _workload_where(
        bridge,
        namespace,
        low_uid,
        "the low Workload evicted by preemption",
        lambda w: _is(w, "Evicted", "True"),
    )
    preempted = condition(victim, "Preempted")
    evicted = condition(victim, "Evicted")
    assert preempted is not None and evicted is not None
    expected = (
        f"Preempted to accommodate a workload (UID: {high_workload['metadata']['uid']}, "
        f"JobUID: {high['metadata']['uid']}) due to prioritization in the ClusterQueue; "
        f"preemptor path: /{cluster_queue}; preemptee path: /{cluster_queue}"
    )
    assert (preempted["status"], preempted["reason"], preempted["message"]) == (
        "True",
        "InClusterQueue",
        expected,
    )
    assert (evicted["reason"], evicted["message"]) == ("Preempted", expected)

    # our reconciler stops the victim in Kueue's order: suspend with the stopping mark, clear
    # startTime; kube-apiserver refuses the template restore while a pod is active, so it waits
    def stopping(job: dict[str, Any]) -> bool:
        return job["spec"]["suspend"] is True and "startTime" not in job.get("status", {})

    held = await _job_where(bridge, namespace, "low", "suspended, startTime cleared", stopping)
    assert held["metadata"]["annotations"]["kueue.x-k8s.io/stopping"] == "true"
    holding = await owned_workload(client, namespace, owner_uid=low_uid)
    assert holding is not None and "admission" in holding["status"], "quota kept while a pod is active"
    job = await client.get(JOB, "high", namespace=namespace)
    assert job["spec"]["suspend"] is True, "the preemptor waits for the quota"

    # the job controller would report the pod gone: template restored, quota released, requeued
    await client.patch(JOB, "low", {"status": {"active": 0}}, namespace=namespace, subresource="status")

    def restored(job: dict[str, Any]) -> bool:
        return "kueue.x-k8s.io/stopping" not in (job["metadata"].get("annotations") or {})

    stopped = await _job_where(bridge, namespace, "low", "its template restored", restored)
    assert stopped["spec"]["suspend"] is True
    assert stopped["spec"]["template"] == low["spec"]["template"], "pod template as created"
    requeued = await _workload_where(
        bridge,
        namespace,
        low_uid,
        "the low Workload released and requeued",
        lambda w: "admission" not in w["status"] and _is(w, "Requeued", "True"),
    )
    state = condition(requeued, "Requeued")
    assert state is not None
    assert (state["reason"], state["message"]) == ("Preempted", expected)
    await _job_where(
        bridge, namespace, "high", "the preemptor started", lambda j: j["spec"]["suspend"] is False
    )
    waiting = await _workload_where(
        bridge,
        namespace,
        low_uid,
        "the victim pending again",
        lambda w: _is(w, "QuotaReserved", "False", waiting_for_quota_reason(bridge.kueue_version)),
    )
    assert _is(waiting, "Evicted", "True", "Preempted"), "Evicted stays until the victim is admitted again"

    async def counted() -> dict[str, Any] | None:
        status: dict[str, Any] = (await client.get(CLUSTER_QUEUE, cluster_queue)).get("status") or {}
        return (
            status if (status.get("reservingWorkloads"), status.get("pendingWorkloads")) == (1, 1) else None
        )

    await eventually(
        counted, what="the ClusterQueue: the preemptor reserving, the victim pending", within_seconds=60
    )

    workload_events = {
        (e["reason"], e["type"]): e["message"]
        for e in await events_for(client, namespace, kind="Workload", name=victim["metadata"]["name"])
    }
    assert workload_events[("EvictedDueToPreempted", "Normal")] == expected
    assert workload_events[("Preempted", "Normal")].startswith(expected)
    job_events = await events_for(client, namespace, kind="Job", name="low")
    stopped_messages = [e["message"] for e in job_events if e["reason"] == "Stopped"]
    assert stopped_messages == [expected], "one Stopped event (ours) for one preemption"
