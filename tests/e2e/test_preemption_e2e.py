"""Preemption of a started batch Job, end to end: the devcluster's Kueue stand-in preempts, the
reconciler stops the Job in kube-apiserver's order, quota is released only once no pod is active,
and the preemptor starts (issue: a started Job's preemption never completed on kube-apiserver).

The Job's status is written by the test as the Job controller would (``startTime``, ``active``), so
the test decides when the preempted pods are gone.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shared.kube import GroupVersionKind, KubeClient
from tests.e2e.conftest import eventually, kube_client
from tests.e2e.test_reconciler_e2e import (
    CLUSTER_QUEUE,
    JOB,
    LOCAL_QUEUE,
    WORKLOAD,
    RecordedEvents,
    condition,
    get_or_none,
    running_reconciler,
    setup_cluster,
)
from tests.unit.reconciler.conftest import golden_job

pytestmark = [pytest.mark.e2e, pytest.mark.needs_shared]

PRIORITY_CLASS = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "WorkloadPriorityClass")
STARTED = "2026-11-22T02:34:05Z"


def queued_job(name: str, *, priority_class: str) -> dict[str, Any]:
    job = golden_job(name=name)
    for key in ("uid", "generation"):
        del job["metadata"][key]
    job["spec"].pop("selector")
    job["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] = priority_class
    for key in ("batch.kubernetes.io/controller-uid", "controller-uid"):
        del job["spec"]["template"]["metadata"]["labels"][key]
    return job


async def setup_queues(client: KubeClient, shared_dir: Path) -> None:
    await setup_cluster(client, shared_dir)
    resources = [{"name": "cpu", "nominalQuota": "2"}, {"name": "memory", "nominalQuota": "10Gi"}]
    await client.create(
        CLUSTER_QUEUE,
        {
            "metadata": {"name": "golden-cq"},
            "spec": {
                "namespaceSelector": {},
                "preemption": {"withinClusterQueue": "LowerPriority"},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu", "memory"],
                        "flavors": [{"name": "golden-spot", "resources": resources}],
                    }
                ],
            },
        },
    )
    await client.create(
        LOCAL_QUEUE,
        {"metadata": {"name": "golden-q"}, "spec": {"clusterQueue": "golden-cq"}},
        namespace="golden",
    )
    for name, value in (("low", 10), ("high", 1000)):
        await client.create(PRIORITY_CLASS, {"metadata": {"name": name}, "value": value})


async def workload_of(client: KubeClient, job_name: str) -> dict[str, Any] | None:
    for item in (await client.list(WORKLOAD, namespace="golden"))["items"]:
        owners = item["metadata"].get("ownerReferences") or []
        if any(owner.get("name") == job_name for owner in owners):
            return dict(item)
    return None


async def test_preempted_started_job_stops_releases_quota_when_idle_and_the_preemptor_starts(
    devcluster_factory: Callable[..., Any], shared_dir: Path
) -> None:
    cluster = devcluster_factory(kueue_standin=True)
    events = RecordedEvents()
    async with kube_client(cluster.kubeconfig_path) as client:
        await setup_queues(client, shared_dir)
        low = queued_job("low", priority_class="low")
        await client.create(JOB, low, namespace="golden")
        async with running_reconciler(client, events):

            async def running(name: str) -> dict[str, Any] | None:
                job = await get_or_none(client, JOB, name)
                return job if job and job["spec"]["suspend"] is False else None

            await eventually(lambda: running("low"), what="the low-priority Job to start")
            await client.patch(
                JOB,
                "low",
                {"status": {"startTime": STARTED, "active": 2}},
                namespace="golden",
                subresource="status",
            )
            await client.create(JOB, queued_job("high", priority_class="high"), namespace="golden")

            def stopped_events() -> list[str]:
                return [m for _, reason, m in events.items if reason == "Stopped"]

            async def stopping() -> dict[str, Any] | None:
                job = await get_or_none(client, JOB, "low")
                if job is None or "startTime" in (job.get("status") or {}):
                    return None
                return job if job["spec"]["suspend"] is True else None

            job = await eventually(stopping, what="the preempted Job suspended and its startTime cleared")
            assert job["metadata"]["annotations"]["kueue.x-k8s.io/stopping"] == "true"
            # kube-apiserver 1.36 refuses a template change while the Job still has active pods:
            # the restore waits for them, as Kueue's does
            assert job["spec"]["template"]["spec"]["nodeSelector"] == {"zone": "a", "instance-type": "spot"}
            low_workload = await workload_of(client, "low")
            assert low_workload is not None
            evicted = condition(low_workload, "Evicted")
            assert evicted is not None and evicted["reason"] == "Preempted"
            message = evicted["message"]
            assert message.startswith("Preempted to accommodate a workload (UID: ")
            assert message.endswith(
                "due to prioritization in the ClusterQueue; preemptor path: /golden-cq; preemptee path: /golden-cq"
            )
            assert "admission" in low_workload["status"], "quota is kept while the Job has active pods"
            high = await get_or_none(client, JOB, "high")
            assert high is not None
            assert high["spec"]["suspend"] is True

            await client.patch(
                JOB, "low", {"status": {"active": 0}}, namespace="golden", subresource="status"
            )

            async def restored() -> dict[str, Any] | None:
                job = await get_or_none(client, JOB, "low")
                marked = job is not None and "kueue.x-k8s.io/stopping" in (
                    job["metadata"].get("annotations") or {}
                )
                return job if job is not None and not marked else None

            job = await eventually(restored, what="the preempted Job's template restored")
            assert job["spec"]["template"]["spec"] == low["spec"]["template"]["spec"], "template restored"

            async def released() -> dict[str, Any] | None:
                current = await workload_of(client, "low")
                return current if current and "admission" not in current["status"] else None

            low_workload = await eventually(released, what="the preempted Workload to release its quota")
            requeued = condition(low_workload, "Requeued")
            assert requeued is not None
            assert (requeued["status"], requeued["reason"]) == ("True", "Preempted")
            await eventually(lambda: running("high"), what="the preemptor to start")
            # Kueue's batch Job reads as not suspended while it carries the stopping mark, so every
            # retry suspends "again" and the one whose restore succeeds records Stopped, once
            assert stopped_events() == [message], "one Stopped event for one preemption"
            warnings = [item for item in events.items if item[0] == "Warning"]
            assert warnings == [], "no write was rejected on the way"
