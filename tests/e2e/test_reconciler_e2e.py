"""The reconciler end to end on the devcluster, with the real Kueue CRDs (pruning included).

Kueue's part is played by the test (writing admission and eviction to Workload status the way
Kueue's scheduler and workload controller do) or by the devcluster's Kueue stand-in.

The reconciler runs in the test's event loop and records an event *after* its write returns, so a
test that has just seen the write through the API server waits for the event (``wait_for``)
instead of expecting it already there.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from reconciler.manager import ReconcilerControllers, settings_from_config
from shared.config import Configuration, default_config
from shared.frameworks.registry import FrameworkRegistry
from shared.kube import GroupVersionKind, KubeClient, NotFound
from tests.e2e.conftest import eventually, install_crds, kube_client, write_latest
from tests.unit.reconciler.conftest import golden_job

pytestmark = [pytest.mark.e2e, pytest.mark.needs_shared]

JOB = GroupVersionKind("batch", "v1", "Job")
WORKLOAD = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "Workload")
NAMESPACE = GroupVersionKind("", "v1", "Namespace")
FLAVOR = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "ResourceFlavor")
CLUSTER_QUEUE = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "ClusterQueue")
LOCAL_QUEUE = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "LocalQueue")
KUEUE_CRDS = (
    "workloads",
    "resourceflavors",
    "workloadpriorityclasses",
    "clusterqueues",
    "localqueues",
    "admissionchecks",
)


class RecordedEvents:
    def __init__(self) -> None:
        self.items: list[tuple[str, str, str]] = []

    def record(self, *, regarding: Mapping[str, Any], event_type: str, reason: str, message: str) -> None:
        self.items.append((event_type, reason, message))

    async def wait_for(self, event_type: str, reason: str, message: str) -> None:
        """Until the event has been recorded (the write it follows may be visible first)."""
        wanted = (event_type, reason, message)
        await eventually(lambda: asyncio.sleep(0, wanted in self.items), what=f"event {wanted}")


@contextlib.asynccontextmanager
async def running_reconciler(
    client: KubeClient, events: RecordedEvents, *, config: Configuration | None = None
) -> AsyncIterator[ReconcilerControllers]:
    """The reconciler's controllers running on ``client`` (``config``: Kueue's defaults if not given)."""
    config = config or default_config()
    registry = FrameworkRegistry.from_managed_kinds(config.managed_kinds())
    controllers = ReconcilerControllers(
        client=client,
        registry=registry,
        settings=settings_from_config(config, registry=registry),
        events=events,
    )
    task = asyncio.create_task(controllers.run())
    try:
        yield controllers
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


async def setup_cluster(client: KubeClient, shared_dir: Path, *, namespace: str | None = "golden") -> None:
    """Kueue's CRDs, the flavor ``golden-spot`` and (unless ``None``) the job namespace."""
    await install_crds(
        client, [shared_dir / "crds" / "kueue" / f"kueue.x-k8s.io_{name}.yaml" for name in KUEUE_CRDS]
    )
    if namespace is not None:
        await client.create(NAMESPACE, {"metadata": {"name": namespace}})
    await client.create(
        FLAVOR,
        {
            "metadata": {"name": "golden-spot"},
            "spec": {
                "nodeLabels": {"instance-type": "spot"},
                "tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
            },
        },
    )


async def get_or_none(
    client: KubeClient, gvk: GroupVersionKind, name: str, *, namespace: str = "golden"
) -> dict[str, Any] | None:
    try:
        return await client.get(gvk, name, namespace=namespace)
    except NotFound:
        return None


async def only_workload(client: KubeClient, *, namespace: str = "golden") -> dict[str, Any] | None:
    items = (await client.list(WORKLOAD, namespace=namespace))["items"]
    assert len(items) <= 1, f"more than one Workload: {[i['metadata']['name'] for i in items]}"
    return items[0] if items else None


def condition(obj: dict[str, Any], condition_type: str) -> dict[str, Any] | None:
    for item in (obj.get("status") or {}).get("conditions") or []:
        if item["type"] == condition_type:
            return dict(item)
    return None


async def write_admission(client: KubeClient, workload: dict[str, Any]) -> None:
    """Kueue's scheduler: status.admission + QuotaReserved, then Admitted (one status update)."""

    def admit(latest: dict[str, Any]) -> None:
        latest["status"] = {
            **(latest.get("status") or {}),
            "admission": {
                "clusterQueue": "golden-cq",
                "podSetAssignments": [
                    {
                        "name": "main",
                        "count": 2,
                        "flavors": {"cpu": "golden-spot", "memory": "golden-spot"},
                        "resourceUsage": {"cpu": "2", "memory": "400Mi"},
                    }
                ],
            },
        }
        conditions = [
            c
            for c in latest["status"].get("conditions", [])
            if c["type"] not in ("QuotaReserved", "Admitted")
        ]
        for condition_type, reason, message in (
            ("QuotaReserved", "QuotaReserved", "Quota reserved in ClusterQueue golden-cq"),
            ("Admitted", "Admitted", "The workload is admitted"),
        ):
            conditions.append(
                {
                    "type": condition_type,
                    "status": "True",
                    "reason": reason,
                    "message": message,
                    "lastTransitionTime": "2026-11-22T02:34:03Z",
                    "observedGeneration": 1,
                }
            )
        latest["status"]["conditions"] = conditions

    metadata = workload["metadata"]
    await write_latest(
        client,
        WORKLOAD,
        metadata["name"],
        namespace=metadata["namespace"],
        change=admit,
        kueue_admission=True,
    )


async def test_golden_job_life_on_the_devcluster(devcluster: Any, shared_dir: Path) -> None:
    events = RecordedEvents()
    async with kube_client(devcluster.kubeconfig_path) as client:
        await setup_cluster(client, shared_dir)
        job = golden_job()
        for key in ("uid", "generation"):
            del job["metadata"][key]
        job["spec"].pop("selector")
        for key in ("batch.kubernetes.io/controller-uid", "controller-uid"):
            del job["spec"]["template"]["metadata"]["labels"][key]
        await client.create(JOB, job, namespace="golden")
        async with running_reconciler(client, events):
            workload = await eventually(lambda: only_workload(client), what="the Workload")
            assert workload["metadata"]["name"].startswith("job-sample-")
            assert workload["spec"]["queueName"] == "golden-q"
            assert workload["metadata"]["finalizers"] == ["kueue.x-k8s.io/resource-in-use"]

            async def pods_ready_written() -> dict[str, Any] | None:
                current = await only_workload(client)
                return current if current and condition(current, "PodsReady") else None

            workload = await eventually(pods_ready_written, what="PodsReady WaitForStart")
            await write_admission(client, workload)

            async def started() -> dict[str, Any] | None:
                current = await get_or_none(client, JOB, "sample")
                return current if current and current["spec"]["suspend"] is False else None

            running = await eventually(started, what="the job to be unsuspended")
            template = running["spec"]["template"]
            assert template["spec"]["nodeSelector"] == {"instance-type": "spot", "zone": "a"}
            assert template["metadata"]["labels"]["kueue.x-k8s.io/podset"] == "main"
            await events.wait_for("Normal", "Started", "Admitted by clusterQueue golden-cq")

            completed = {
                "startTime": "2026-11-22T02:34:04Z",
                "completionTime": "2026-11-22T02:34:20Z",
                "succeeded": 4,
                "conditions": [
                    {
                        "type": "SuccessCriteriaMet",
                        "status": "True",
                        "reason": "CompletionsReached",
                        "message": "Reached expected number of succeeded pods",
                    },
                    {
                        "type": "Complete",
                        "status": "True",
                        "reason": "CompletionsReached",
                        "message": "Reached expected number of succeeded pods",
                    },
                ],
            }
            await write_latest(
                client,
                JOB,
                "sample",
                namespace="golden",
                change=lambda j: j.update(status=completed),
                status=True,
            )

            async def released() -> dict[str, Any] | None:
                current = await only_workload(client)
                finished = condition(current, "Finished") if current else None
                return current if finished and not current["metadata"].get("finalizers") else None  # type: ignore[index]

            finished_workload = await eventually(
                released, what="the Workload to finish and lose its finalizer"
            )
            finished = condition(finished_workload, "Finished")
            assert finished is not None
            assert (finished["status"], finished["reason"]) == ("True", "Succeeded")


async def test_whole_flow_with_the_kueue_standin(
    devcluster_factory: Callable[..., Any], shared_dir: Path
) -> None:
    cluster = devcluster_factory(kueue_standin=True, job_runner=True)
    events = RecordedEvents()
    async with kube_client(cluster.kubeconfig_path) as client:
        await setup_cluster(client, shared_dir)
        await client.create(
            CLUSTER_QUEUE,
            {
                "metadata": {"name": "golden-cq"},
                "spec": {
                    "namespaceSelector": {},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu", "memory"],
                            "flavors": [
                                {
                                    "name": "golden-spot",
                                    "resources": [
                                        {"name": "cpu", "nominalQuota": "10"},
                                        {"name": "memory", "nominalQuota": "10Gi"},
                                    ],
                                }
                            ],
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
        for index in range(3):
            job = golden_job(name=f"run-{index}")
            for key in ("uid", "generation"):
                del job["metadata"][key]
            job["spec"].pop("selector")
            job["metadata"]["annotations"] = {"kueue-bridge.dev/run-seconds": "0.2"}
            template_labels = job["spec"]["template"]["metadata"]["labels"]
            for key in ("batch.kubernetes.io/controller-uid", "controller-uid"):
                del template_labels[key]
            await client.create(JOB, job, namespace="golden")
        async with running_reconciler(client, events):

            async def all_finished() -> bool:
                items = (await client.list(WORKLOAD, namespace="golden"))["items"]
                done = [w for w in items if (condition(w, "Finished") or {}).get("status") == "True"]
                return len(items) == 3 and len(done) == 3

            await eventually(all_finished, what="three Workloads to finish", within_seconds=60)
        reasons = [reason for _, reason, _ in events.items]
        assert reasons.count("CreatedWorkload") == 3
        assert reasons.count("Started") == 3
