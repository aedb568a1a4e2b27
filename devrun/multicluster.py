"""``kueue-bridge dev --workers N`` (``make dev-multicluster``): a MultiKueue fleet on N+1 devclusters.

One process tree, in this order (each step must succeed before the next; a failure names the step
and shows the failing component's log tail, and the same teardown as ``make dev`` runs):

1. N+1 devclusters in this process, each with its Kueue stand-in, job runner, CRDs and its own
   state folder: ``STATE/manager`` on ``--port``, ``STATE/worker-1`` ... on the next ports (all
   free ones with ``--port 0``), started side by side;
2. queues before any component, so the webhooks' first lists already hold them (a manager webhook
   that had not seen the AdmissionCheck would not default ``spec.managedBy`` and the batch Job
   would be rejected by MultiKueue): ``worker.yaml`` on every worker; on the manager
   ``manager.yaml`` (namespaces, the AdmissionCheck with ``controllerName:
   kueue-bridge.dev/multikueue``, the MultiKueueConfig with ``spec.clusters`` set to the workers
   started, the ClusterQueue that uses the check), then per worker the Secret
   ``<worker>-kubeconfig`` (key ``kubeconfig``: the worker's admin kubeconfig, embedded CA and
   token, as Kueue's kubeconfig rules require) in the configuration's namespace and the
   MultiKueueCluster ``<worker>``;
3. per cluster, side by side: certificates, ``config.yaml``, the webhook (registered), the
   reconciler; then ``kueue-bridge multikueue`` on the manager, healthy;
4. the samples: deleted on the manager, their copies left by an earlier run deleted on every worker,
   then created on the manager; the kubeconfig of every cluster printed;
5. the live table with its CLUSTER column (:mod:`devrun.watch`).

Why the copies are deleted by the runner: an earlier run stopped mid-way leaves running copies on
the workers (they hold worker quota until MultiKueue's garbage collector, every ``gcInterval``, sees
that their manager Workload is gone). The samples are the runner's own objects, so it cleans them up
by name; anything else on the workers is left alone.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import Awaitable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, TypeVar

from devrun.cluster import (
    ClusterRun,
    Session,
    relative,
    start_cluster,
    start_components,
    start_controller,
    start_extra,
)
from devrun.samples import (
    REPO_ROOT,
    apply_queues,
    creation_note,
    delete_jobs,
    load_manifests,
    recreate_jobs,
)
from devrun.watch import Watched
from shared.config import load_config
from shared.constants import MULTIKUEUE_CLUSTER_GVK

__all__ = [
    "EXAMPLES_DIR",
    "MANAGER",
    "Fleet",
    "multikueue_objects",
    "start_fleet",
    "worker_names",
]

EXAMPLES_DIR: Final = REPO_ROOT / "examples" / "dev-multicluster"
MANAGER: Final = "manager"

_T = TypeVar("_T")


def worker_names(count: int) -> list[str]:
    """``worker-1`` ... ``worker-N``: the MultiKueueCluster names, state folders and CLUSTER values."""
    return [f"worker-{index}" for index in range(1, count + 1)]


@dataclass(frozen=True, slots=True)
class Fleet:
    manager: ClusterRun
    workers: dict[str, ClusterRun]

    @property
    def clusters(self) -> list[ClusterRun]:
        return [self.manager, *self.workers.values()]


def multikueue_objects(
    *, workers: dict[str, str], namespace: str, manager_documents: Sequence[dict[str, Any]]
) -> list[dict[str, Any]]:
    """Everything the manager gets, in apply order (namespaces first: the Secrets need theirs).

    ``workers`` maps a worker's name to its kubeconfig (YAML text). Returns ``manager_documents``
    with every MultiKueueConfig's ``spec.clusters`` set to the workers (copied, not changed), then
    per worker the Secret ``<worker>-kubeconfig`` in ``namespace`` and the MultiKueueCluster
    ``<worker>`` that points at it.
    """
    objects: list[dict[str, Any]] = []
    for document in manager_documents:
        if document.get("kind") == "MultiKueueConfig":
            document = {**document, "spec": {**(document.get("spec") or {}), "clusters": list(workers)}}
        objects.append(document)
    for name, kubeconfig in workers.items():
        secret = f"{name}-kubeconfig"
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": secret, "namespace": namespace},
                "type": "Opaque",
                "data": {"kubeconfig": base64.b64encode(kubeconfig.encode()).decode()},
            }
        )
        objects.append(
            {
                "apiVersion": MULTIKUEUE_CLUSTER_GVK.api_version,
                "kind": MULTIKUEUE_CLUSTER_GVK.kind,
                "metadata": {"name": name},
                "spec": {"clusterSource": {"kubeConfig": {"location": secret, "locationType": "Secret"}}},
            }
        )
    return objects


async def _all(awaitables: Sequence[Awaitable[_T]]) -> list[_T]:
    """Run side by side; the first failure cancels the others and is raised as itself."""

    async def wrap(awaitable: Awaitable[_T]) -> _T:
        return await awaitable

    try:
        async with asyncio.TaskGroup() as group:
            tasks = [group.create_task(wrap(awaitable)) for awaitable in awaitables]
    except BaseExceptionGroup as failed:
        first: BaseException = failed
        while isinstance(first, BaseExceptionGroup):
            first = first.exceptions[0]
        raise first from None
    return [task.result() for task in tasks]


async def _start_clusters(session: Session, stack: contextlib.AsyncExitStack) -> Fleet:
    args = session.args
    names = [MANAGER, *worker_names(args.workers)]
    width = max(len(name) for name in names) + 2
    runs = await _all(
        [
            start_cluster(
                session,
                stack,
                name=name,
                state=session.state / name,
                port=args.port + index if args.port else 0,
                prefix=f"{name:<{width}}",
            )
            for index, name in enumerate(names)
        ]
    )
    return Fleet(manager=runs[0], workers={run.name: run for run in runs[1:]})


async def _apply_queues(session: Session, fleet: Fleet, *, examples: Path, config: Path) -> None:
    for worker in fleet.workers.values():
        applied = await apply_queues(worker.client, load_manifests(examples / "worker.yaml"))
        worker.say(session, "applied", ", ".join(applied))
    objects = multikueue_objects(
        workers={name: run.kubeconfig.read_text() for name, run in fleet.workers.items()},
        namespace=load_config(config).namespace,
        manager_documents=load_manifests(examples / "manager.yaml"),
    )
    applied = await apply_queues(fleet.manager.client, objects)
    fleet.manager.say(session, "applied", ", ".join(applied))


async def _start_components(
    session: Session, stack: contextlib.AsyncExitStack, fleet: Fleet, *, config: Path
) -> None:
    await _all([start_components(session, stack, run, source=config) for run in fleet.clusters])
    await start_controller(session, stack, fleet.manager, component="multikueue")
    for index, extra in enumerate(session.args.components):
        await start_extra(session, stack, fleet.manager, extra=extra, index=index)


async def _create_samples(session: Session, fleet: Fleet, *, examples: Path) -> list[dict[str, Any]]:
    if session.args.no_samples:
        return []
    documents = load_manifests(examples / "jobs.yaml")
    await delete_jobs(fleet.manager.client, documents)
    for worker in fleet.workers.values():
        left = await delete_jobs(worker.client, documents)
        if left:
            worker.say(
                session, "deleted", f"{left} sample cop{'y' if left == 1 else 'ies'} left by an earlier run"
            )
    created = await recreate_jobs(fleet.manager.client, documents)
    for obj in created:
        fleet.manager.say(session, "created", creation_note(obj))
    return created


def _hints(session: Session, fleet: Fleet) -> None:
    lines = ["", "kubeconfigs (one per cluster; kubectl --kubeconfig FILE, or export KUBECONFIG=FILE):"]
    for run in fleet.clusters:
        lines.append(f"  {run.name:<10} {run.kubeconfig.resolve()}")
    manager = fleet.manager.kubeconfig.resolve()
    first = next(iter(fleet.workers.values())).kubeconfig.resolve()
    lines += [
        f"  kubectl --kubeconfig {manager} get workloads,multikueueclusters -A",
        f"  kubectl --kubeconfig {first} get jobs,workloads -A",
        f"logs            {relative(session.state)}/<cluster>/logs/*.log (webhook, reconciler; multikueue on "
        f"the manager), {relative(session.state / 'logs' / 'devcluster.log')}",
        "",
    ]
    session.say("\n".join(lines))


async def start_fleet(session: Session, stack: contextlib.AsyncExitStack) -> Watched:
    """Steps 1-4 of the module docstring; what the live table follows."""
    args = session.args
    examples: Path = args.examples or EXAMPLES_DIR
    config: Path = args.config or EXAMPLES_DIR / "config.yaml"
    fleet = await _start_clusters(session, stack)
    await _apply_queues(session, fleet, examples=examples, config=config)
    await _start_components(session, stack, fleet, config=config)
    created = await _create_samples(session, fleet, examples=examples)
    _hints(session, fleet)
    runner_log = relative(session.state / "logs" / "devcluster.log")
    return Watched(
        client=fleet.manager.client,
        created=created,
        config=fleet.manager.config or config,
        logs=f"{relative(session.state)}/<cluster>/logs/ and {runner_log}",
        workers={name: run.client for name, run in fleet.workers.items()},
    )
