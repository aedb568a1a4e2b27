"""A MultiKueue fleet for end-to-end tests: a manager devcluster and two workers, all components running.

``fleet(...)`` starts three devclusters (Kueue stand-in and job runner on each), installs Kueue's
real CRDs, creates on every cluster the namespace ``team``, the flavor ``default``, the ClusterQueue
``cq`` and the LocalQueue ``q`` (the manager's ClusterQueue carries the MultiKueue check ``mk``),
then on the manager the worker Secrets, MultiKueueClusters ``w1``/``w2``, the MultiKueueConfig
``cfg`` and the AdmissionCheck ``mk`` (controller ``kueue-bridge.dev/multikueue``). It runs
kueue-bridge's job reconciler on all three clusters and the MultiKueue manager on the manager, in
process (their own process life is tested in ``test_multikueue_process.py``).

Each worker is reached through a ``CuttableProxy`` (a TCP relay in front of its API server), so a
test can make a worker unreachable and bring it back without losing its state.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from devcluster.standin.jobrunner import DeclarativeCompletion
from devcluster.standin.kueue import start_addons
from devrun.proxy import CuttableProxy
from multikueue.manager import ManagerOptions, MultiKueueManager
from reconciler.manager import ReconcilerManager, settings_from_config
from shared.config import Configuration, parse_config
from shared.frameworks.registry import FrameworkRegistry
from shared.kube import GroupVersionKind, KubeClient, NotFound, load_kubeconfig
from tests.e2e.conftest import install_crds, wait_served
from tests.polling import eventually

__all__ = [
    "ADMISSION_CHECK",
    "JOB",
    "MK_CLUSTER",
    "MK_CONFIG",
    "MK_CONTROLLER",
    "NAMESPACE",
    "WORKLOAD",
    "CuttableProxy",
    "Fleet",
    "add_worker_cluster",
    "condition",
    "fleet",
    "new_job",
]

JOB = GroupVersionKind("batch", "v1", "Job")
WORKLOAD = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "Workload")
SECRET = GroupVersionKind("", "v1", "Secret")
NAMESPACE_GVK = GroupVersionKind("", "v1", "Namespace")
FLAVOR = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "ResourceFlavor")
CLUSTER_QUEUE = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "ClusterQueue")
LOCAL_QUEUE = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "LocalQueue")
ADMISSION_CHECK = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "AdmissionCheck")
MK_CONFIG = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "MultiKueueConfig")
MK_CLUSTER = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "MultiKueueCluster")
KUEUE_CRDS = (
    "workloads",
    "resourceflavors",
    "workloadpriorityclasses",
    "clusterqueues",
    "localqueues",
    "admissionchecks",
    "multikueueconfigs",
    "multikueueclusters",
)
NAMESPACE = "team"
SYSTEM = "kueue-system"
MK_CONTROLLER = "kueue-bridge.dev/multikueue"
_HEADER = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nnamespace: kueue-system\n"


def condition(obj: dict[str, Any] | None, condition_type: str) -> dict[str, Any] | None:
    for item in ((obj or {}).get("status") or {}).get("conditions") or []:
        if item.get("type") == condition_type:
            return dict(item)
    return None


def new_job(
    name: str,
    *,
    run_seconds: float = 1.0,
    cpu: str = "1",
    managed_by: str | None = "kueue.x-k8s.io/multikueue",
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "suspend": True,
        "parallelism": 1,
        "completions": 1,
        "template": {
            "spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
            }
        },
    }
    if managed_by is not None:
        spec["managedBy"] = managed_by
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {"kueue.x-k8s.io/queue-name": "q"},
            "annotations": {"kueue-bridge.dev/run-seconds": str(run_seconds)},
        },
        "spec": spec,
    }


@dataclass
class Fleet:
    manager: KubeClient
    workers: dict[str, KubeClient]
    proxies: dict[str, CuttableProxy]
    multikueue: MultiKueueManager
    config: Configuration
    #: each worker's kubeconfig as put in its Secret (through its proxy)
    kubeconfigs: dict[str, str] = field(default_factory=dict)
    #: the devclusters by name ("manager", "w1", ...)
    clusters: dict[str, Any] = field(default_factory=dict)
    tasks: list[asyncio.Task[None]] = field(default_factory=list)

    async def get(
        self, client: KubeClient, gvk: GroupVersionKind, name: str, namespace: str | None = NAMESPACE
    ) -> dict[str, Any] | None:
        try:
            return await client.get(gvk, name, namespace=namespace)
        except NotFound:
            return None

    async def workload_of(self, job: str, client: KubeClient | None = None) -> dict[str, Any] | None:
        items = (await (client or self.manager).list(WORKLOAD, namespace=NAMESPACE))["items"]
        for item in items:
            owners = item["metadata"].get("ownerReferences") or []
            annotations = item["metadata"].get("annotations") or {}
            if (
                any(o.get("name") == job for o in owners)
                or annotations.get("kueue.x-k8s.io/prebuilt-workload-name") == job
            ):
                return dict(item)
        return None

    async def copy_of(self, job: str, client: KubeClient) -> dict[str, Any] | None:
        """The worker's copy of the manager Workload of ``job`` (same name)."""
        local = await self.workload_of(job)
        if local is None:
            return None
        return await self.get(client, WORKLOAD, local["metadata"]["name"])

    async def check_of(self, job: str) -> dict[str, Any] | None:
        workload = await self.workload_of(job)
        for item in ((workload or {}).get("status") or {}).get("admissionChecks") or []:
            if item.get("name") == "mk":
                return dict(item)
        return None

    async def wait_finished(self, job: str, *, within_seconds: float = 60) -> dict[str, Any]:
        async def finished() -> dict[str, Any] | None:
            workload = await self.workload_of(job)
            found = condition(workload, "Finished")
            return found if found and found["status"] == "True" else None

        result: dict[str, Any] = await eventually(
            finished, what=f"the manager Workload of {job} finished", within_seconds=within_seconds
        )
        return result


async def _setup_cluster(
    client: KubeClient, shared_dir: Path, *, cpu: str, check: bool, quota: Mapping[str, str]
) -> None:
    await install_crds(
        client, [shared_dir / "crds" / "kueue" / f"kueue.x-k8s.io_{name}.yaml" for name in KUEUE_CRDS]
    )
    await wait_served(client, [WORKLOAD, CLUSTER_QUEUE, MK_CLUSTER])
    for namespace in (NAMESPACE, SYSTEM):
        await client.create(NAMESPACE_GVK, {"metadata": {"name": namespace}})
    await client.create(FLAVOR, {"metadata": {"name": "default"}})
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu", *quota],
                "flavors": [
                    {
                        "name": "default",
                        "resources": [
                            {"name": name, "nominalQuota": value}
                            for name, value in {"cpu": cpu, **quota}.items()
                        ],
                    }
                ],
            }
        ],
    }
    if check:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": "mk"}]}
    await client.create(CLUSTER_QUEUE, {"metadata": {"name": "cq"}, "spec": spec})
    await client.create(
        LOCAL_QUEUE, {"metadata": {"name": "q", "namespace": NAMESPACE}, "spec": {"clusterQueue": "cq"}}
    )


def worker_kubeconfig(cluster: Any, *, port: int) -> str:
    document = yaml.safe_load(Path(cluster.kubeconfig_path).read_text())
    document["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{port}"
    return yaml.safe_dump(document)


async def add_worker_cluster(manager: KubeClient, name: str, kubeconfig: str) -> None:
    encoded = base64.b64encode(kubeconfig.encode()).decode()
    await manager.create(
        SECRET, {"metadata": {"name": f"{name}-secret", "namespace": SYSTEM}, "data": {"kubeconfig": encoded}}
    )
    await manager.create(
        MK_CLUSTER,
        {
            "metadata": {"name": name},
            "spec": {
                "clusterSource": {"kubeConfig": {"location": f"{name}-secret", "locationType": "Secret"}}
            },
        },
    )


class _Events:
    def __init__(self) -> None:
        self.items: list[tuple[str, str, str]] = []

    def record(self, *, regarding: dict[str, Any], event_type: str, reason: str, message: str) -> None:
        self.items.append((event_type, reason, message))


def _reconciler(client: KubeClient, config: Configuration) -> ReconcilerManager:
    registry = FrameworkRegistry.from_managed_kinds(config.managed_kinds())
    return ReconcilerManager(
        client=client,
        registry=registry,
        settings=settings_from_config(config, registry=registry),
        events=_Events(),
    )


@contextlib.asynccontextmanager
async def fleet(
    devcluster_factory: Callable[..., Any],
    shared_dir: Path,
    *,
    worker_cpu: dict[str, str] | None = None,
    multikueue: str = "",
    crds: dict[str, list[Path]] | None = None,
    declarative: Sequence[DeclarativeCompletion] = (),
    reconciler_configs: dict[str, str] | None = None,
    manager_cpu: str = "4",
    run_multikueue: bool = True,
    quota: Mapping[str, str] | None = None,
) -> AsyncIterator[Fleet]:
    """The fleet of the module docstring (``run_multikueue=False``: the test runs the component itself,
    ``clusters`` gives it the devclusters); ``multikueue`` is extra YAML for the Configuration (every
    component's), ``crds`` more CRDs per cluster name, ``declarative`` how the workers' job runners
    finish declarative kinds, ``reconciler_configs`` a cluster's own reconciler configuration (YAML),
    ``quota`` more resources (name -> nominal quota) in every cluster's ClusterQueue."""
    worker_cpu = worker_cpu or {"w1": "2", "w2": "2"}
    clusters = {
        name: devcluster_factory(kueue_standin=True, job_runner=name == "manager" or not declarative)
        for name in ("manager", *worker_cpu)
    }
    clients = {
        name: KubeClient.from_connection(load_kubeconfig(cluster.kubeconfig_path))
        for name, cluster in clusters.items()
    }
    proxies: dict[str, CuttableProxy] = {}
    kubeconfigs: dict[str, str] = {}
    config = parse_config(_HEADER + multikueue, source="fleet")
    tasks: list[asyncio.Task[None]] = []
    addons = contextlib.AsyncExitStack()
    try:
        for name, paths in (crds or {}).items():
            await install_crds(clients[name], paths)
        if declarative:
            for name in worker_cpu:
                cluster = clusters[name]
                stack = await start_addons(
                    url=cluster.url,
                    token=cluster.token,
                    ca_file=str(cluster.ca_file),
                    kueue_standin=False,
                    job_runner=True,
                    declarative=declarative,
                )
                addons.push_async_callback(stack.aclose)
        await _setup_cluster(clients["manager"], shared_dir, cpu=manager_cpu, check=True, quota=quota or {})
        for name, cpu in worker_cpu.items():
            await _setup_cluster(clients[name], shared_dir, cpu=cpu, check=False, quota=quota or {})
            port = int(clusters[name].url.rsplit(":", 1)[1])
            proxy = proxies[name] = CuttableProxy("127.0.0.1", port)
            await proxy.start()
            kubeconfigs[name] = worker_kubeconfig(clusters[name], port=proxy.port)
            await add_worker_cluster(clients["manager"], name, kubeconfigs[name])
        await clients["manager"].create(
            MK_CONFIG, {"metadata": {"name": "cfg"}, "spec": {"clusters": list(worker_cpu)}}
        )
        await clients["manager"].create(
            ADMISSION_CHECK,
            {
                "metadata": {"name": "mk"},
                "spec": {
                    "controllerName": MK_CONTROLLER,
                    "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "cfg"},
                },
            },
        )
        for name, client in clients.items():
            own = (reconciler_configs or {}).get(name)
            own_config = parse_config(_HEADER + own, source=name) if own is not None else config
            tasks.append(asyncio.create_task(_reconciler(client, own_config).run()))
        mk = MultiKueueManager(
            client=clients["manager"], config=config, options=ManagerOptions(events_batch_period=0.05)
        )
        if run_multikueue:
            tasks.append(asyncio.create_task(mk.run()))
        yield Fleet(
            manager=clients["manager"],
            workers={name: clients[name] for name in worker_cpu},
            proxies=proxies,
            multikueue=mk,
            config=config,
            kubeconfigs=kubeconfigs,
            clusters=clusters,
            tasks=tasks,
        )
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await addons.aclose()
        for proxy in proxies.values():
            await proxy.cut()
        for client in clients.values():
            await client.aclose()
