"""A batch Job's whole life with real Kueue scheduling and kueue-bridge managing the Job.

Real Kueue runs in external-framework mode (``Job.v1.batch`` under ``externalFrameworks``): it has
no Job webhook and no Job reconciler, so everything that happens to the Job itself here is ours —
the suspend on create (our webhook), the Workload (our reconciler), the unsuspend after Kueue
admits the Workload, and the Workload's ``Finished`` condition once the Job completes. There is no
job controller on this cluster, so the test finishes the Job by writing its status as the job
controller of 1.36 would.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from shared.constants import QUEUE_LABEL
from shared.kube import GroupVersionKind
from tests.polling import eventually
from tests.real.conftest import Bridge, job_status_succeeded

JOB = GroupVersionKind("batch", "v1", "Job")
WORKLOAD = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "Workload")
FLAVOR = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "ResourceFlavor")
CLUSTER_QUEUE = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "ClusterQueue")
LOCAL_QUEUE = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "LocalQueue")


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == kind), None)


async def queues(bridge: Bridge, namespace: str, *, cpu: str = "4") -> str:
    """A ResourceFlavor, a ClusterQueue for ``namespace`` only and its LocalQueue ``q``; the CQ's name."""
    client = bridge.client
    name = f"cq-{namespace}"
    await client.apply(FLAVOR, {"metadata": {"name": "default-flavor"}}, field_manager="test", force=True)
    await client.apply(
        CLUSTER_QUEUE,
        {
            "metadata": {"name": name},
            "spec": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": cpu}]}
                        ],
                    }
                ],
            },
        },
        field_manager="test",
        force=True,
    )
    await client.apply(
        LOCAL_QUEUE,
        {"metadata": {"name": "q", "namespace": namespace}, "spec": {"clusterQueue": name}},
        field_manager="test",
        force=True,
    )
    return name


def _job(name: str, *, cpu: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {QUEUE_LABEL: "q"}},
        "spec": {
            "suspend": False,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
                    ],
                }
            },
        },
    }


async def test_a_queued_job_is_suspended_admitted_started_and_finished(
    bridge: Bridge, namespace: str
) -> None:
    client = bridge.client
    cluster_queue = await queues(bridge, namespace)
    created = await client.create(JOB, _job("hello"), namespace=namespace)
    assert created["spec"]["suspend"] is True, "our webhook suspends a queued Job on create"

    async def admitted_workload() -> dict[str, Any] | None:
        workloads: list[dict[str, Any]] = (await client.list(WORKLOAD, namespace=namespace))["items"]
        for workload in workloads:
            owners = workload["metadata"].get("ownerReferences") or []
            admitted = _condition(workload, "Admitted")
            if (
                any(o["uid"] == created["metadata"]["uid"] for o in owners)
                and admitted
                and admitted["status"] == "True"
            ):
                return workload
        return None

    workload = await eventually(
        admitted_workload, what="the Job's Workload admitted by real Kueue", within_seconds=60
    )
    assert workload["status"]["admission"]["clusterQueue"] == cluster_queue

    async def unsuspended() -> dict[str, Any] | None:
        job: dict[str, Any] = await client.get(JOB, "hello", namespace=namespace)
        return job if job["spec"]["suspend"] is False else None

    job = await eventually(unsuspended, what="the Job unsuspended by our reconciler", within_seconds=60)
    node_selector = job["spec"]["template"]["spec"].get("nodeSelector") or {}
    assert node_selector == {}, "default-flavor has no node labels to inject"

    now = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    job["status"] = job_status_succeeded(now=now)
    await client.update_status(JOB, job, namespace=namespace)

    async def finished() -> dict[str, Any] | None:
        current: dict[str, Any] = await client.get(
            WORKLOAD, workload["metadata"]["name"], namespace=namespace
        )
        condition = _condition(current, "Finished")
        return condition if condition and condition["status"] == "True" else None

    condition = await eventually(finished, what="the Workload Finished", within_seconds=60)
    assert condition["reason"] == "Succeeded"
