"""A MultiKueue fleet on real clusters: a manager and workers from the real-cluster kit, ours on each.

One :class:`RealFleet` is what ``tests/real/test_multikueue.py`` and ``bench/multikueue_dispatch.py --real``
run against, started by :func:`start_real_fleet` in this order (each step must succeed before the
next; everything started is stopped by the caller's exit stack, in reverse):

1. ``manager``, ``w1``, ``w2`` ...: a kube-apiserver each (:class:`testkit.real_cluster.RealCluster`,
   started side by side), workers with ``--watch-cache=false`` (the kit's README: watches opened
   without a resourceVersion are otherwise closed at once on its etcd);
2. the real Kueue manager on each. On the workers always in external-framework mode (Kueue
   schedules, our reconciler manages batch Jobs). ``dispatcher="bridge"``: the manager's Kueue too,
   with its own MultiKueue off (feature gate ``MultiKueue: false``), and ``kueue-bridge multikueue``
   dispatches. ``dispatcher="kueue"`` (the benchmark's anchor): the manager is Kueue alone, in its
   normal mode -- its own batch Job integration and its own MultiKueue, in our place. (Kueue's
   MultiKueue cannot dispatch batch Jobs it knows only as an external framework: its generic
   adapter copies the Job's generated selector and controller-uid labels, which the worker's API
   server refuses.)
3. our webhook and reconciler on every worker and, with ``dispatcher="bridge"``, on the manager
   with ``kueue-bridge multikueue`` (started as ``make dev`` starts them);
4. on the manager, per worker a kubeconfig Secret in ``kueue-system`` (key ``kubeconfig``; with
   ``proxied=True`` it names a :class:`testkit.proxy.CuttableProxy` in this process, so a worker can
   be made unreachable without stopping it) and a MultiKueueCluster, the MultiKueueConfig
   ``mk-config`` listing them, the AdmissionCheck ``mk``; then every MultiKueueCluster and the check
   ``Active``.

Queues are not part of the fleet: each test or benchmark round makes its own namespace,
ClusterQueues (the manager's with the check ``mk``) and LocalQueues (:meth:`RealFleet.queues`).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, TextIO

import yaml

from devrun.cluster import ClusterRun, Session, start_components, start_controller
from devrun.components import ComponentProcess
from shared.config import DEFAULT_BRIDGE_MULTIKUEUE_CONTROLLER, DEFAULT_NAMESPACE
from shared.constants import (
    ADMISSION_CHECK_GVK,
    CLUSTER_QUEUE_GVK,
    LOCAL_QUEUE_GVK,
    MULTIKUEUE_CLUSTER_GVK,
    MULTIKUEUE_CONFIG_GVK,
    MULTIKUEUE_CONTROLLER_NAME,
    RESOURCE_FLAVOR_GVK,
)
from shared.kube import (
    NAMESPACE_GVK,
    SECRET_GVK,
    SERVICE_ACCOUNT_GVK,
    AlreadyExists,
    GroupVersionKind,
    KubeClient,
    NotFound,
    load_kubeconfig,
)
from shared.kube.conditions import is_true, object_condition
from testkit.proxy import CuttableProxy
from testkit.real_cluster import (
    DEFAULT_KUEUE_VERSION,
    Kit,
    KitError,
    RealCluster,
    RealClusterPorts,
    free_ports,
)

__all__ = [
    "Dispatcher",
    "FleetMember",
    "FleetSettings",
    "RealFleet",
    "cpu_seconds",
    "job_status_running",
    "job_status_succeeded",
    "rss_bytes",
    "start_real_fleet",
]

Dispatcher = Literal["bridge", "kueue"]

FIELD_MANAGER: Final = "kueue-bridge-fleet"
CHECK_NAME: Final = "mk"
CONFIG_NAME: Final = "mk-config"
FLAVOR_NAME: Final = "default-flavor"
#: Kueue's name of the kind we manage for it on every cluster
JOB_EXTERNAL_FRAMEWORK: Final = "Job.v1.batch"


@dataclass(frozen=True)
class FleetSettings:
    kueue_version: str = DEFAULT_KUEUE_VERSION
    workers: int = 2
    dispatcher: Dispatcher = "bridge"
    #: the manager's ``multiKueue`` settings (Go durations), for whichever MultiKueue dispatches
    gc_interval: str = "1m"
    worker_lost_timeout: str = "15m"
    #: reach the workers through a cuttable proxy in this process
    proxied: bool = False
    start_timeout: float = 120.0


@dataclass
class FleetMember:
    name: str
    cluster: RealCluster
    run: ClusterRun
    proxy: CuttableProxy | None = None

    @property
    def client(self) -> KubeClient:
        return self.run.client


@dataclass
class RealFleet:
    settings: FleetSettings
    manager: FleetMember
    workers: dict[str, FleetMember]
    session: Session
    multikueue: ComponentProcess | None = None
    _flavor_ready: set[str] = field(default_factory=set)

    @property
    def members(self) -> list[FleetMember]:
        return [self.manager, *self.workers.values()]

    @property
    def controller_name(self) -> str:
        return (
            DEFAULT_BRIDGE_MULTIKUEUE_CONTROLLER
            if self.settings.dispatcher == "bridge"
            else MULTIKUEUE_CONTROLLER_NAME
        )

    def processes(self) -> dict[str, int]:
        """Every process of the fleet by a label (``manager kube-apiserver``, ``w1 reconciler``, ...):
        the kit's (from each cluster's ``pids`` files) and our components."""
        found: dict[str, int] = {}
        for member in self.members:
            for pids in (member.cluster.apiserver_state / "pids", member.cluster.kueue_state / "pids"):
                if not pids.exists():
                    continue
                for line in pids.read_text().splitlines():
                    words = line.split()
                    if len(words) >= 2 and words[1].isdigit():
                        found[f"{member.name} {words[0]}"] = int(words[1])
        for component in self.session.components:
            if component.pid is not None and component.running:
                label = component.name if " " in component.name else f"manager {component.name}"
                found[label] = component.pid
        return found

    async def queues(self, namespace: str, *, cpu: str = "10", manager_cpu: str | None = None) -> str:
        """``namespace`` (with its ``default`` ServiceAccount) on every cluster, a ClusterQueue for
        it alone (the manager's with the check ``mk``) and its LocalQueue ``q``; the CQ's name."""
        name = f"cq-{namespace}"
        for member in self.members:
            client = member.client
            if member.name not in self._flavor_ready:
                await client.apply(
                    RESOURCE_FLAVOR_GVK,
                    {"metadata": {"name": FLAVOR_NAME}},
                    field_manager=FIELD_MANAGER,
                    force=True,
                )
                self._flavor_ready.add(member.name)
            with contextlib.suppress(AlreadyExists):
                await client.create(NAMESPACE_GVK, {"metadata": {"name": namespace}})
            with contextlib.suppress(AlreadyExists):
                await client.create(
                    SERVICE_ACCOUNT_GVK, {"metadata": {"name": "default"}}, namespace=namespace
                )
            quota = manager_cpu if member is self.manager and manager_cpu is not None else cpu
            spec: dict[str, Any] = {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {"name": FLAVOR_NAME, "resources": [{"name": "cpu", "nominalQuota": quota}]}
                        ],
                    }
                ],
            }
            if member is self.manager:
                spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": CHECK_NAME}]}
            await client.apply(
                CLUSTER_QUEUE_GVK,
                {"metadata": {"name": name}, "spec": spec},
                field_manager=FIELD_MANAGER,
                force=True,
            )
            await client.apply(
                LOCAL_QUEUE_GVK,
                {"metadata": {"name": "q", "namespace": namespace}, "spec": {"clusterQueue": name}},
                field_manager=FIELD_MANAGER,
                force=True,
            )
        return name

    async def kill_multikueue(self) -> None:
        """``kill -9`` of our multikueue process (its exit is reaped)."""
        component = self.multikueue
        if component is None or component.process is None:
            raise RuntimeError("no kueue-bridge multikueue runs in this fleet")
        with contextlib.suppress(ProcessLookupError):
            component.process.kill()
        await component.process.wait()

    async def start_multikueue(self) -> None:
        """Start our multikueue again (same configuration, log appended), healthy."""
        component = self.multikueue
        if component is None:
            raise RuntimeError("no kueue-bridge multikueue runs in this fleet")
        await component.start(within_seconds=self.settings.start_timeout)


def job_status_running(*, now: str) -> dict[str, Any]:
    """A batch Job's status once its one pod runs, as the job controller of 1.36 writes it (the kit
    has no kubelet nor job controller: tests and benchmarks play them)."""
    return {"startTime": now, "active": 1}


def job_status_succeeded(*, now: str) -> dict[str, Any]:
    """A batch Job's status as the job controller of 1.36 writes it when the Job succeeds."""
    conditions = [
        {"type": kind, "status": "True", "lastTransitionTime": now, "lastProbeTime": now}
        for kind in ("SuccessCriteriaMet", "Complete")
    ]
    return {"startTime": now, "completionTime": now, "active": 0, "succeeded": 1, "conditions": conditions}


def _tree_total(pid: int, value: Callable[[list[str]], float], *, descendants: bool = True) -> float:
    """``value`` of the ``/proc/<pid>/stat`` fields (those after the command's closing parenthesis)
    summed over ``pid`` and (unless told not to) every live descendant (the kit starts Kueue under
    ``unshare``); 0 for a process that is gone."""
    if not descendants:
        try:
            return value((Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split())
        except OSError:
            return 0.0
    children: dict[int, list[int]] = {}
    values: dict[int, float] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        child = int(entry.name)
        children.setdefault(int(fields[1]), []).append(child)
        values[child] = value(fields)
    total, todo = 0.0, [pid]
    while todo:
        current = todo.pop()
        total += values.get(current, 0.0)
        todo.extend(children.get(current, []))
    return total


def cpu_seconds(pid: int, *, descendants: bool = True) -> float:
    """User + system CPU seconds of ``pid`` and (unless told not to) every live descendant, from
    ``/proc``; 0 for a process that is gone."""
    tick = os.sysconf("SC_CLK_TCK")
    return _tree_total(
        pid, lambda fields: (int(fields[11]) + int(fields[12])) / tick, descendants=descendants
    )


def rss_bytes(pid: int, *, descendants: bool = True) -> int:
    """Resident memory of ``pid`` and (unless told not to) every live descendant, from ``/proc``
    (``stat``'s rss field, in pages); 0 for a process that is gone. Shared pages count once per
    process, as ``ps`` shows them."""
    page = os.sysconf("SC_PAGE_SIZE")
    return int(_tree_total(pid, lambda fields: int(fields[21]) * page, descendants=descendants))


def _bridge_config(settings: FleetSettings) -> dict[str, Any]:
    """kueue-bridge's configuration for every cluster of the fleet (batch Jobs only)."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": DEFAULT_NAMESPACE,
        "integrations": {"frameworks": ["batch/job"]},
        "multiKueue": {"gcInterval": settings.gc_interval, "workerLostTimeout": settings.worker_lost_timeout},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "webhook": {"host": "127.0.0.1", "port": 9443, "certDir": "certs"},
        "health": {"healthProbeBindAddress": "127.0.0.1:8081"},
        "metrics": {"bindAddress": "0"},
    }


def _manager_kueue_config(settings: FleetSettings) -> str:
    if settings.dispatcher == "bridge":
        return yaml.safe_dump({"featureGates": {"MultiKueue": False}})
    return yaml.safe_dump(
        {
            "multiKueue": {
                "gcInterval": settings.gc_interval,
                "workerLostTimeout": settings.worker_lost_timeout,
            }
        }
    )


def _retried(
    cluster: RealCluster, start: Callable[[], None], *, fixed_ports: bool, attempts: int = 3
) -> Callable[[], None]:
    """``start`` again when it fails: the kit's ``start`` keeps what already runs, and on a loaded
    machine its ``kubectl wait --for=condition=Established`` of the Kueue CRDs can fail on a CRD
    that has no conditions yet (``.status.conditions accessor error: <nil>``). A port taken since it
    was chosen (another engineer's process) is chosen again, unless the caller fixed the ports."""

    def run() -> None:
        for attempt in range(1, attempts + 1):
            try:
                start()
                return
            except KitError as exc:
                if attempt == attempts:
                    raise
                if "is in use by another process" in str(exc) and not fixed_ports:
                    cluster.stop()  # what did start (the kit records it) goes before the ports change
                    cluster.ports = RealClusterPorts.free()
                    if start != cluster.start_apiserver:
                        cluster.start_apiserver()  # its data is kept: the same cluster, new ports

    return run


def _kueue_starter(cluster: RealCluster, settings: FleetSettings) -> Callable[[], None]:
    def start() -> None:
        if cluster.name != "manager":
            cluster.start_kueue(mode="external", external_frameworks=(JOB_EXTERNAL_FRAMEWORK,))
        elif settings.dispatcher == "bridge":
            cluster.start_kueue(
                mode="external",
                external_frameworks=(JOB_EXTERNAL_FRAMEWORK,),
                config_extra=_manager_kueue_config(settings),
            )
        else:
            cluster.start_kueue(mode="normal", config_extra=_manager_kueue_config(settings))

    return start


async def _in_threads(calls: list[Callable[[], None]]) -> None:
    await asyncio.gather(*(asyncio.to_thread(call) for call in calls))


def _kubeconfig_through(kubeconfig: str, port: int) -> str:
    document = yaml.safe_load(kubeconfig)
    for entry in document.get("clusters") or []:
        entry["cluster"]["server"] = f"https://127.0.0.1:{port}"
    return yaml.safe_dump(document)


async def _wait_active(client: KubeClient, gvk: GroupVersionKind, name: str, *, within: float) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    last: Any = None
    while True:
        with contextlib.suppress(NotFound):
            obj = await client.get(gvk, name)
            last = object_condition(obj, "Active")
            if is_true(last):
                return
        if loop.time() > deadline:
            raise TimeoutError(f"{gvk.kind} {name} not Active within {within:.0f}s (last: {last})")
        await asyncio.sleep(0.2)


async def start_real_fleet(
    stack: contextlib.AsyncExitStack,
    *,
    kit: Kit,
    root: Path,
    settings: FleetSettings,
    label: str = "",
    ports: Mapping[str, RealClusterPorts] | None = None,
    out: TextIO = sys.stdout,
) -> RealFleet:
    """Steps 1-4 of the module docstring; everything is stopped by ``stack``. Each cluster's state is
    ``root/<label><name>`` (one level below ``root``, where ``stop_all_below`` sweeps); its ports
    are ``ports[name]``, else free ones."""
    names = ["manager", *(f"w{index}" for index in range(1, settings.workers + 1))]
    free = free_ports(6 * len(names))  # chosen together: never the same port for two clusters
    chosen = [RealClusterPorts(*free[6 * index : 6 * index + 6]) for index in range(len(names))]
    clusters = {
        name: RealCluster(
            kit=kit,
            name=name,
            state=root / f"{label}{name}",
            ports=ports[name] if ports is not None and name in ports else chosen[index],
            kueue_version=settings.kueue_version,
            watch_cache=name == "manager",
        )
        for index, name in enumerate(names)
    }
    for cluster in clusters.values():
        stack.push_async_callback(asyncio.to_thread, cluster.stop)
    fixed = ports is not None
    await _in_threads([_retried(c, c.start_apiserver, fixed_ports=fixed) for c in clusters.values()])
    await _in_threads(
        [_retried(c, _kueue_starter(c, settings), fixed_ports=fixed) for c in clusters.values()]
    )
    session = Session(
        args=argparse.Namespace(start_timeout=settings.start_timeout), out=out, state=root, components=[]
    )
    members: dict[str, FleetMember] = {}
    for name, cluster in clusters.items():
        client = KubeClient.from_connection(load_kubeconfig(cluster.kubeconfig))
        stack.push_async_callback(client.aclose)
        run = ClusterRun(
            name=name, state=cluster.state / "bridge", url=cluster.url, client=client, prefix=f"{name:<9}"
        )
        run.logs.mkdir(parents=True, exist_ok=True)
        (run.state / "kubeconfig").symlink_to(cluster.kubeconfig)
        members[name] = FleetMember(name=name, cluster=cluster, run=run)
    source = root / f"{label}bridge-config.yaml"
    source.write_text(yaml.safe_dump(_bridge_config(settings), sort_keys=False))
    ours = [m for m in members.values() if m.name != "manager" or settings.dispatcher == "bridge"]
    await asyncio.gather(*(start_components(session, stack, m.run, source=source) for m in ours))
    manager = members.pop("manager")
    fleet = RealFleet(settings=settings, manager=manager, workers=members, session=session)
    if settings.proxied:
        for member in fleet.workers.values():
            proxy = member.proxy = CuttableProxy("127.0.0.1", member.cluster.ports.api)
            await proxy.start()
            stack.push_async_callback(proxy.cut)
    await _multikueue_objects(fleet)
    if settings.dispatcher == "bridge":
        fleet.multikueue = await start_controller(session, stack, manager.run, component="multikueue")
    for name in fleet.workers:
        await _wait_active(manager.client, MULTIKUEUE_CLUSTER_GVK, name, within=settings.start_timeout)
    await _wait_active(manager.client, ADMISSION_CHECK_GVK, CHECK_NAME, within=settings.start_timeout)
    return fleet


async def _multikueue_objects(fleet: RealFleet) -> None:
    client = fleet.manager.client
    for name, member in fleet.workers.items():
        kubeconfig = member.cluster.kubeconfig.read_text()
        if member.proxy is not None:
            kubeconfig = _kubeconfig_through(kubeconfig, member.proxy.port)
        secret: Mapping[str, Any] = {
            "metadata": {"name": f"{name}-kubeconfig", "namespace": DEFAULT_NAMESPACE},
            "data": {"kubeconfig": base64.b64encode(kubeconfig.encode()).decode()},
        }
        await client.apply(SECRET_GVK, secret, field_manager=FIELD_MANAGER, force=True)
        await client.apply(
            MULTIKUEUE_CLUSTER_GVK,
            {
                "metadata": {"name": name},
                "spec": {
                    "clusterSource": {
                        "kubeConfig": {"locationType": "Secret", "location": f"{name}-kubeconfig"}
                    }
                },
            },
            field_manager=FIELD_MANAGER,
            force=True,
        )
    await client.apply(
        MULTIKUEUE_CONFIG_GVK,
        {"metadata": {"name": CONFIG_NAME}, "spec": {"clusters": list(fleet.workers)}},
        field_manager=FIELD_MANAGER,
        force=True,
    )
    await client.apply(
        ADMISSION_CHECK_GVK,
        {
            "metadata": {"name": CHECK_NAME},
            "spec": {
                "controllerName": fleet.controller_name,
                "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": CONFIG_NAME},
            },
        },
        field_manager=FIELD_MANAGER,
        force=True,
    )
