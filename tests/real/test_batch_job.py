"""A batch Job's whole life with real Kueue scheduling and kueue-bridge managing the Job.

Real Kueue runs in external-framework mode (``Job.v1.batch`` under ``externalFrameworks``): it has
no Job webhook and no Job reconciler, so everything that happens to the Job itself here is ours —
the suspend on create (our webhook), the Workload (our reconciler), the unsuspend after Kueue
admits the Workload with the flavor's node labels and tolerations merged into the pod template,
the Workload's ``Finished`` condition once the Job completes or fails, and the Workload's end once
the Job is deleted. Our writes to the Workload's status are Kueue's applies under Kueue's field
managers. There is no job controller on this cluster, so the test writes the Job's status as the
job controller of 1.36 would (``tests/real/support.py``).
"""

from __future__ import annotations

from typing import Any

from shared.constants import CLUSTER_QUEUE_LABEL, LOCAL_QUEUE_LABEL, PODSET_LABEL, RESOURCE_IN_USE_FINALIZER
from shared.kueue.naming import workload_name_for_owner
from tests.polling import eventually
from tests.real.conftest import Bridge
from tests.real.support import (
    CLUSTER_QUEUE,
    JOB,
    JOB_FAILED_MESSAGE,
    JOB_SUCCEEDED_MESSAGE,
    WORKLOAD,
    apply_queues,
    batch_job,
    condition,
    job_failed_status,
    job_succeeded_status,
    now_rfc3339,
    owned_workload,
    waiting_for_quota_reason,
)

POOL_LABEL = "e2e.kueue-bridge.dev/pool"
SPOT_TOLERATION = {"key": "e2e.kueue-bridge.dev/spot", "operator": "Exists", "effect": "NoSchedule"}


async def _admitted_workload(bridge: Bridge, namespace: str, job: dict[str, Any]) -> dict[str, Any]:
    async def admitted() -> dict[str, Any] | None:
        workload = await owned_workload(bridge.client, namespace, owner_uid=job["metadata"]["uid"])
        state = condition(workload, "Admitted")
        return workload if state and state["status"] == "True" else None

    workload: dict[str, Any] = await eventually(
        admitted,
        what=f"the Workload of Job {job['metadata']['name']} admitted by real Kueue",
        within_seconds=60,
    )
    return workload


async def _running(bridge: Bridge, namespace: str, name: str) -> dict[str, Any]:
    async def unsuspended() -> dict[str, Any] | None:
        job: dict[str, Any] = await bridge.client.get(JOB, name, namespace=namespace)
        return job if job["spec"].get("suspend") is False else None

    job: dict[str, Any] = await eventually(
        unsuspended, what=f"Job {name} unsuspended by our reconciler", within_seconds=60
    )
    return job


async def _finished(bridge: Bridge, namespace: str, workload_name: str) -> dict[str, Any]:
    async def finished() -> dict[str, Any] | None:
        workload: dict[str, Any] = await bridge.client.get(WORKLOAD, workload_name, namespace=namespace)
        state = condition(workload, "Finished")
        return workload if state and state["status"] == "True" else None

    workload: dict[str, Any] = await eventually(
        finished, what=f"Workload {workload_name} Finished", within_seconds=60
    )
    return workload


async def _cluster_queue_settles(
    bridge: Bridge, name: str, *, reserving: int, pending: int
) -> dict[str, Any]:
    """Real Kueue's ClusterQueue status once it counts ``reserving`` and ``pending`` Workloads."""

    async def settled() -> dict[str, Any] | None:
        cq: dict[str, Any] = await bridge.client.get(CLUSTER_QUEUE, name)
        status = cq.get("status") or {}
        counts = (status.get("reservingWorkloads", 0), status.get("pendingWorkloads", 0))
        return status if counts == (reserving, pending) else None

    status: dict[str, Any] = await eventually(
        settled,
        what=f"ClusterQueue {name} to count {reserving} reserving and {pending} pending Workloads",
        within_seconds=60,
    )
    return status


async def test_a_queued_job_is_admitted_started_with_its_flavor_and_finished(
    bridge: Bridge, namespace: str
) -> None:
    client = bridge.client
    cluster_queue = await apply_queues(
        client,
        namespace,
        flavor={"nodeLabels": {POOL_LABEL: "spot"}, "tolerations": [SPOT_TOLERATION]},
    )
    created = await client.create(JOB, batch_job("hello"), namespace=namespace)
    assert created["spec"]["suspend"] is True, "our webhook suspends a queued Job on create"

    workload = await _admitted_workload(bridge, namespace, created)
    assert workload["metadata"]["name"] == workload_name_for_owner(
        owner_name="hello", owner_uid=created["metadata"]["uid"], owner_gvk=JOB
    )
    assert workload["status"]["admission"]["clusterQueue"] == cluster_queue
    [assignment] = workload["status"]["admission"]["podSetAssignments"]
    assert assignment["flavors"] == {"cpu": f"flavor-{namespace}"}
    assert RESOURCE_IN_USE_FINALIZER in workload["metadata"]["finalizers"]

    job = await _running(bridge, namespace, "hello")
    template = job["spec"]["template"]
    assert template["spec"]["nodeSelector"] == {POOL_LABEL: "spot"}, "the flavor's node labels"
    assert template["spec"]["tolerations"] == [SPOT_TOLERATION], "the flavor's tolerations"
    wanted = {PODSET_LABEL: "main", LOCAL_QUEUE_LABEL: "q", CLUSTER_QUEUE_LABEL: cluster_queue}
    assert wanted.items() <= template["metadata"]["labels"].items(), template["metadata"]["labels"]
    await _cluster_queue_settles(bridge, cluster_queue, reserving=1, pending=0)

    job["status"] = job_succeeded_status(now=now_rfc3339())
    await client.update_status(JOB, job, namespace=namespace)
    finished = await _finished(bridge, namespace, workload["metadata"]["name"])
    state = condition(finished, "Finished")
    assert state is not None
    assert (state["reason"], state["message"]) == ("Succeeded", JOB_SUCCEEDED_MESSAGE)
    # the status is written as Kueue's job controller writes it: applies under Kueue's managers
    status_writers = {
        (entry["manager"], entry["operation"])
        for entry in finished["metadata"]["managedFields"]
        if entry.get("subresource") == "status"
    }
    assert {("kueue-admission", "Apply"), ("kueue-job-controller-PodsReady", "Apply")} <= status_writers
    assert not [m for m, _ in status_writers if m.startswith("kueue-bridge")], status_writers
    # a finished Workload holds no quota: real Kueue's ClusterQueue status says so
    status = await _cluster_queue_settles(bridge, cluster_queue, reserving=0, pending=0)
    assert status["admittedWorkloads"] == 0
    [flavor] = status["flavorsReservation"]
    assert flavor["resources"] == [{"name": "cpu", "total": "0", "borrowed": "0"}]


async def test_a_failed_job_finishes_its_workload_as_failed(bridge: Bridge, namespace: str) -> None:
    client = bridge.client
    cluster_queue = await apply_queues(client, namespace)
    created = await client.create(JOB, batch_job("doomed"), namespace=namespace)
    workload = await _admitted_workload(bridge, namespace, created)
    job = await _running(bridge, namespace, "doomed")

    job["status"] = job_failed_status(now=now_rfc3339())
    await client.update_status(JOB, job, namespace=namespace)
    finished = await _finished(bridge, namespace, workload["metadata"]["name"])
    state = condition(finished, "Finished")
    assert state is not None
    assert (state["reason"], state["message"]) == ("Failed", JOB_FAILED_MESSAGE)
    await _cluster_queue_settles(bridge, cluster_queue, reserving=0, pending=0)
    job = await client.get(JOB, "doomed", namespace=namespace)
    assert job["spec"]["suspend"] is False, "a finished Job is never suspended again"


async def test_deleting_a_running_job_ends_its_workload_and_admits_the_next(
    bridge: Bridge, namespace: str
) -> None:
    client = bridge.client
    cluster_queue = await apply_queues(client, namespace, cpu="1")
    first = await client.create(JOB, batch_job("first"), namespace=namespace)
    first_workload = await _admitted_workload(bridge, namespace, first)
    await _running(bridge, namespace, "first")
    second = await client.create(JOB, batch_job("second"), namespace=namespace)
    await _cluster_queue_settles(bridge, cluster_queue, reserving=1, pending=1)

    async def waiting_for_quota() -> dict[str, Any] | None:
        workload = await owned_workload(client, namespace, owner_uid=second["metadata"]["uid"])
        state = condition(workload, "QuotaReserved")
        return state if state and state["reason"] == waiting_for_quota_reason(bridge.kueue_version) else None

    state = await eventually(
        waiting_for_quota, what="the second Workload waiting for quota", within_seconds=60
    )
    assert state["status"] == "False"
    assert state["message"].startswith("couldn't assign flavors to pod set main: insufficient unused quota")

    await client.delete(JOB, "first", namespace=namespace, propagation_policy="Background")

    async def released() -> dict[str, Any] | None:
        workload: dict[str, Any] = await client.get(
            WORKLOAD, first_workload["metadata"]["name"], namespace=namespace
        )
        finished = condition(workload, "Finished")
        done = finished and finished["status"] == "True"
        return (
            workload
            if done and RESOURCE_IN_USE_FINALIZER not in workload["metadata"].get("finalizers", [])
            else None
        )

    gone = await eventually(
        released, what="the deleted Job's Workload finished and released", within_seconds=60
    )
    finished = condition(gone, "Finished")
    assert finished is not None
    assert (finished["reason"], finished["message"]) == (
        "OwnerNotFound",
        "The workload's owner no longer exists",
    )
    await _admitted_workload(bridge, namespace, second)
    await _running(bridge, namespace, "second")
    await _cluster_queue_settles(bridge, cluster_queue, reserving=1, pending=0)
