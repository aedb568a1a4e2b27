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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from devcluster.standin.checks import evict
from devcluster.standin.jobrunner import DeclarativeCompletion
from devcluster.standin.kueue import start_addons
from devrun.proxy import CuttableProxy
from multikueue.manager import ManagerOptions, MultiKueueManager
from reconciler.manager import ReconcilerControllers, settings_from_config
from shared.admission_apply import apply_admission_status
from shared.config import Configuration, parse_config
from shared.frameworks.registry import FrameworkRegistry
from shared.kube import Conflict, GroupVersionKind, KubeClient, NotFound, Watch, load_kubeconfig
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
    "add_condition",
    "add_worker_cluster",
    "condition",
    "copies_on",
    "describe",
    "evict_on_manager",
    "fleet",
    "jobs_on",
    "new_job",
    "record_workloads",
    "running_on",
    "wait_check",
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


def _reconciler(client: KubeClient, config: Configuration) -> ReconcilerControllers:
    registry = FrameworkRegistry.from_managed_kinds(config.managed_kinds())
    return ReconcilerControllers(
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
    worker_job_runner: bool = True,
) -> AsyncIterator[Fleet]:
    """The fleet of the module docstring (``run_multikueue=False``: the test runs the component itself,
    ``clusters`` gives it the devclusters); ``multikueue`` is extra YAML for the Configuration (every
    component's), ``crds`` more CRDs per cluster name, ``declarative`` how the workers' job runners
    finish declarative kinds, ``reconciler_configs`` a cluster's own reconciler configuration (YAML),
    ``quota`` more resources (name -> nominal quota) in every cluster's ClusterQueue;
    ``worker_job_runner=False``: no job runner on the workers, the test writes their Jobs' status as
    the job controller would (as on the real clusters of ``tests/real``)."""
    worker_cpu = worker_cpu or {"w1": "2", "w2": "2"}
    clusters = {
        name: devcluster_factory(
            kueue_standin=True,
            job_runner=name == "manager" or (worker_job_runner and not declarative),
        )
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


# --- what the tests look at and do ----------------------------------------------------------------
async def jobs_on(f: Fleet, name: str) -> dict[str, dict[str, Any]]:
    found = {}
    for worker, client in f.workers.items():
        job = await f.get(client, JOB, name)
        if job is not None:
            found[worker] = job
    return found


async def copies_on(f: Fleet, job: str) -> list[str]:
    return [worker for worker, client in f.workers.items() if await f.copy_of(job, client) is not None]


async def record_workloads(client: Any, seen: list[dict[str, Any]]) -> None:
    """Every version of every Workload in the namespace (a test cannot poll for a transient state)."""
    async for event in Watch(client, WORKLOAD, namespace=NAMESPACE).events():
        if event.object:
            seen.append(event.object)


async def add_condition(f: Fleet, client: Any, job: str, added: dict[str, Any]) -> None:
    """Write a condition onto the Workload of ``job`` on ``client``'s cluster as its Kueue would: read,
    change, write with the resourceVersion, again on a conflict (the components write it too)."""
    for _ in range(20):
        workload = await (f.workload_of(job) if client is f.manager else f.copy_of(job, client))
        assert workload is not None
        workload["status"]["conditions"].append(added)
        try:
            await client.update_status(WORKLOAD, workload)
            return
        except Conflict:
            continue
    raise AssertionError(f"could not write {added['type']} on the Workload of {job}")


async def evict_on_manager(f: Fleet, job: str, *, reason: str, message: str) -> None:
    """Evict the manager's Workload of ``job`` as Kueue does (``workloadevict.Evict``: one forced apply
    as ``kueue-admission`` of ``prepareForEviction``'s result -- Evicted, checks reset to Pending, the
    cluster left out), again on a conflict (the components write it too)."""
    for _ in range(20):
        workload = await f.workload_of(job)
        assert workload is not None
        evict(workload, reason=reason, message=message, now=datetime.now(UTC))
        try:
            await apply_admission_status(f.manager, workload)
            return
        except Conflict:
            continue
    raise AssertionError(f"could not evict the Workload of {job}")


async def wait_check(f: Fleet, job: str, state: str, *, within_seconds: float = 40) -> dict[str, Any]:
    async def reached() -> dict[str, Any] | None:
        check = await f.check_of(job)
        return check if check and check["state"] == state else None

    result: dict[str, Any] = await eventually(
        reached, what=f"the check of {job} {state}", within_seconds=within_seconds
    )
    return result


async def running_on(f: Fleet, job: str) -> str:
    async def active() -> str | None:
        for worker, found in (await jobs_on(f, job)).items():
            if (found.get("status") or {}).get("active"):
                return worker
        return None

    try:
        worker: str = await eventually(active, what=f"{job} running on a worker", within_seconds=40)
    except AssertionError:
        print("STATE", await describe(f, job))
        raise
    return worker


async def describe(f: Fleet, job: str) -> str:
    """Everything a failed wait needs to be understood: the job's Workloads, copies and clusters."""
    lines = []
    local = await f.workload_of(job)
    lines.append(f"manager workload: {(local or {}).get('status')}")
    manager_job = await f.get(f.manager, JOB, job)
    lines.append(
        f"manager job: spec.suspend={((manager_job or {}).get('spec') or {}).get('suspend')} status={(manager_job or {}).get('status')}"
    )
    for worker, client in f.workers.items():
        lines.append(f"{worker} copy: {(await f.copy_of(job, client) or {}).get('status')}")
        lines.append(f"{worker} job: {await f.get(client, JOB, job)}")
        cluster = await f.get(f.manager, MK_CLUSTER, worker, namespace=None)
        lines.append(f"{worker} cluster: {(cluster or {}).get('status')}")
    return "\n".join(lines)
