"""Restarts at scale on a real kube-apiserver with real Kueue: failover, API server restart, cold start.

``--real`` (required: the figures are a real API server's) wipes a cluster of the kit of
``../shared/real-cluster`` (``bench.harness.real_cluster``), runs Kueue in external-framework mode
(Kueue schedules; our webhook and reconciler manage batch Jobs) and creates ``--namespaces``
namespaces, each with its LocalQueue, all pointing at one ClusterQueue whose quota admits
``--admit`` Jobs at a time. It creates ``--jobs`` queued Jobs at once (unpaced, 64 creates in flight,
each through the webhook) and waits until every Job has its Workload and the admitted ones run:
a backlog of pending Workloads exists. Nothing finishes a Job unless the bench says so (the kit has
no job controller; the bench writes a finished Job's status as one would).

Then, ``--rounds`` times, on the same Jobs:

1. **Failover.** Two reconciler replicas with Lease leader election (``--lease-duration``,
   ``--renew-deadline``, ``--retry-period``). The leader is killed with SIGKILL; at once the
   ClusterQueue's quota grows by ``--admit-more`` Jobs, so Kueue admits that many pending Workloads
   while no reconciler leads. Measured: kill -> the last of those Jobs unsuspended (target:
   leaseDuration + 10 s; the standby must wait out the Lease, sync its caches and reconcile), kill ->
   the new leader's ``caches synced`` log line, and the full LISTs each of its informers sent (its
   client's own ``kueue_bridge_rest_client_requests_total{verb="list"}`` pages, divided by the pages
   one list of that many objects takes; kube-apiserver's ``apiserver_request_total{verb="LIST"}``
   delta beside it: nothing else lists then). Target: one list per informer. A new replica takes
   the killed one's place as the standby.
2. **kube-apiserver restart, etcd kept** (``bench.harness.replicas.restart_kube_apiserver``: the
   kit's ``apiserver.sh restart`` would restart etcd too). After it is ready the quota grows again
   and ``--finish`` running Jobs finish (their freed quota admits as many more). Measured: the
   leader's LISTs per informer across the restart (target: at most one each, the relist a 410 asks
   for; more is a LIST storm), its watch restarts by reason, every client's LISTs on the new
   kube-apiserver (its counters start at zero), and whether every change was acted on: each new
   admission's Job unsuspended, each finished Job's Workload ``Finished``.
3. **Cold start.** Every replica stopped (SIGTERM: the leader releases the Lease); one reconciler
   started against the existing Jobs and Workloads. Measured: start -> its ``caches synced`` log
   line (target <= 15 s at 10,000 Jobs; the reconciler's ``/readyz`` is 200 from the start, so the
   log line is what says it), its full LISTs, and its writes (a reconciler starting on a settled
   cluster has nothing to write; a Workload create there would be a duplicate). A second replica
   is started as the next round's standby.

**Correctness** (exit status 1 when any fails; timing targets are printed, never asserted): after
each scenario the cluster is listed and checked -- no Job with two Workloads, no Workload whose Job
is gone, no queued Job without a Workload, every admitted and unfinished Workload's Job unsuspended,
every finished Job's Workload ``Finished``, no pending Workload's Job running -- and the bench's
watch of the Jobs counts a Job unsuspended twice or suspended again after it started (flapping:
nothing in this bench evicts or preempts).

Each measure is printed with its target and PASS/MISS, then the median and range over the rounds,
with the RSS and CPU seconds of every process during each scenario and the load average: on a
shared machine the figures are bounded by the other work, not only by ours.

    .venv/bin/python -m bench.scale_restarts --real [--jobs 10000] [--rounds 3] [--namespaces 100]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import logging
import math
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

from bench.harness.clusters import KUEUE_NAMESPACE, client_for, setup_queues
from bench.harness.components import WebhookRun, start_webhook
from bench.harness.load import JOB, queued_job
from bench.harness.metrics import Samples, scrape
from bench.harness.processes import load_average, process_cpu_seconds, process_rss_mib, quiet
from bench.harness.real_cluster import ApiserverMetrics, bench_cluster, cluster_pids, fresh
from bench.harness.replicas import (
    LeaseSettings,
    LogFollower,
    Replica,
    lease_holder,
    replica_config,
    restart_kube_apiserver,
    start_replica,
)
from devrun import run_as
from shared.config import load_config
from shared.constants import CLUSTER_QUEUE_GVK, LOCAL_QUEUE_GVK, QUEUE_LABEL, WORKLOAD_GVK
from shared.kube import JOB_GVK, NAMESPACE_GVK, Conflict, EventType, KubeClient, Watch, WatchSettings
from testkit import RealCluster, job_status_succeeded

__all__ = [
    "Audit",
    "Measure",
    "Scenario",
    "SuspendLedger",
    "audit",
    "full_lists",
    "list_requests",
    "main",
    "median_and_range",
    "pages_per_list",
    "synced_seconds",
    "usage_summary",
]

QUEUE: Final = "restarts"
CLUSTER_QUEUE: Final = "restarts"
JOB_MILLICPU: Final = 10
#: the informers' page size (``shared.kube.watch.WatchSettings.page_size``): one list of n objects is
#: ceil(n / PAGE_SIZE) LIST requests
PAGE_SIZE: Final = WatchSettings().page_size
COLD_START_TARGET: Final = 15.0
#: the replicas' ServiceAccount token: a 10,000-Job run on a busy machine can outlast the usual hour
TOKEN_SECONDS: Final = 6 * 3600
FAILOVER_SLACK: Final = 10.0
SYNCED_LINE: Final = "caches synced"
CLIENT_REQUESTS: Final = "kueue_bridge_rest_client_requests_total"
WATCH_RESTARTS: Final = "kueue_bridge_watch_restarts_total"
#: the reconciler's informers: the resource labels of its client's metrics (``plural[.group]``)
INFORMER_RESOURCES: Final = (
    "jobs.batch",
    "workloads.kueue.x-k8s.io",
    "namespaces",
    "resourceflavors.kueue.x-k8s.io",
    "workloadpriorityclasses.kueue.x-k8s.io",
    "priorityclasses.scheduling.k8s.io",
)


# --- the pure parts ---------------------------------------------------------------------------


def pages_per_list(objects: int, *, page_size: int = PAGE_SIZE) -> int:
    """LIST requests one paginated list of ``objects`` objects takes (an empty list is one page)."""
    return max(1, math.ceil(objects / page_size))


def list_requests(samples: Samples) -> dict[str, float]:
    """Resource label -> LIST requests (pages) a component's client sent, from its ``/metrics``."""
    found: dict[str, float] = {}
    for (name, labels), value in samples.items():
        label = dict(labels)
        if name == CLIENT_REQUESTS and label.get("verb") == "list":
            resource = label.get("resource", "")
            found[resource] = found.get(resource, 0.0) + value
    return found


def write_requests(samples: Samples) -> dict[str, float]:
    """``verb resource`` -> writes (create, update, patch, apply, delete) a component's client sent."""
    found: dict[str, float] = {}
    for (name, labels), value in samples.items():
        label = dict(labels)
        if name == CLIENT_REQUESTS and label.get("verb") in ("create", "update", "patch", "apply", "delete"):
            key = f"{label['verb']} {label.get('resource', '')}"
            found[key] = found.get(key, 0.0) + value
    return found


def watch_restarts(samples: Samples) -> dict[str, float]:
    """Reason -> watch restarts, summed over resources."""
    found: dict[str, float] = {}
    for (name, labels), value in samples.items():
        if name == WATCH_RESTARTS:
            reason = dict(labels).get("reason", "")
            found[reason] = found.get(reason, 0.0) + value
    return found


def difference(after: Mapping[str, float], before: Mapping[str, float]) -> dict[str, float]:
    """``after - before`` per key, keys whose difference is zero left out."""
    return {key: value - before.get(key, 0.0) for key, value in after.items() if value - before.get(key, 0.0)}


def full_lists(requests: Mapping[str, float], sizes: Mapping[str, int]) -> dict[str, float]:
    """Resource -> full lists: LIST requests divided by the pages one list of that resource takes
    (``sizes``: objects of the resource; a resource not in ``sizes`` is taken as one page)."""
    return {
        resource: count / pages_per_list(sizes.get(resource, 0))
        for resource, count in requests.items()
        if count
    }


_SYNCED = re.compile(r"caches synced\b.*?\bseconds=([0-9.]+)")


def synced_seconds(line: str) -> float | None:
    """The ``seconds=`` of a ``caches synced`` log line (text format): the term's start -> synced."""
    match = _SYNCED.search(line)
    return float(match.group(1)) if match else None


def _true(obj: Mapping[str, Any], kind: str) -> bool:
    return any(
        isinstance(c, dict) and c.get("type") == kind and c.get("status") == "True"
        for c in (obj.get("status") or {}).get("conditions") or []
    )


def _owner_uid(workload: Mapping[str, Any]) -> str | None:
    for reference in (workload.get("metadata") or {}).get("ownerReferences") or []:
        if reference.get("kind") == "Job" and reference.get("controller"):
            return str(reference.get("uid"))
    return None


def _name(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata") or {}
    return f"{metadata.get('namespace')}/{metadata.get('name')}"


@dataclass
class Audit:
    """What is wrong in one listing of Jobs and Workloads (each a list of ``namespace/name``)."""

    jobs: int = 0
    workloads: int = 0
    duplicates: list[str] = field(default_factory=list)  # Jobs with more than one Workload
    orphans: list[str] = field(default_factory=list)  # Workloads whose Job is gone
    without_workload: list[str] = field(default_factory=list)  # queued Jobs without a Workload
    admitted_suspended: list[str] = field(default_factory=list)  # admitted, unfinished; Job suspended
    finished_unfinished: list[str] = field(default_factory=list)  # Job finished; Workload not Finished
    pending_running: list[str] = field(default_factory=list)  # Workload not admitted; Job unsuspended
    admitted: int = 0
    finished: int = 0

    def problems(self) -> dict[str, list[str]]:
        found = {
            "duplicate Workloads (Jobs with two)": self.duplicates,
            "orphan Workloads (Job gone)": self.orphans,
            "queued Jobs without a Workload": self.without_workload,
            "admitted Workloads whose Job is suspended": self.admitted_suspended,
            "finished Jobs whose Workload is not Finished": self.finished_unfinished,
            "pending Workloads whose Job runs": self.pending_running,
        }
        return {what: names for what, names in found.items() if names}

    def line(self) -> str:
        problems = self.problems()
        told = "; ".join(
            f"{what}: {len(names)} ({', '.join(sorted(names)[:3])})" for what, names in problems.items()
        )
        return (
            f"{self.jobs:,} Jobs, {self.workloads:,} Workloads ({self.admitted:,} admitted, {self.finished:,} "
            f"finished): " + (told or "0 duplicates, 0 orphans, every admission and finish acted on")
        )


def audit(jobs: Iterable[Mapping[str, Any]], workloads: Iterable[Mapping[str, Any]]) -> Audit:
    """Check one listing of every Job and Workload (module docstring: **Correctness**)."""
    result = Audit()
    by_uid: dict[str, Mapping[str, Any]] = {}
    for job in jobs:
        result.jobs += 1
        by_uid[str((job.get("metadata") or {}).get("uid"))] = job
    owned: dict[str, list[Mapping[str, Any]]] = {}
    for workload in workloads:
        result.workloads += 1
        uid = _owner_uid(workload)
        if uid is None or uid not in by_uid:
            result.orphans.append(_name(workload))
            continue
        owned.setdefault(uid, []).append(workload)
    for uid, job in by_uid.items():
        queued = bool(((job.get("metadata") or {}).get("labels") or {}).get(QUEUE_LABEL))
        mine = owned.get(uid, [])
        if len(mine) > 1:
            result.duplicates.append(_name(job))
        if not mine:
            if queued:
                result.without_workload.append(_name(job))
            continue
        workload = mine[0]
        suspended = (job.get("spec") or {}).get("suspend") is not False
        job_finished = _true(job, "Complete") or _true(job, "Failed")
        finished, admitted = _true(workload, "Finished"), _true(workload, "Admitted")
        result.finished += finished
        result.admitted += admitted and not finished
        if job_finished and not finished:
            result.finished_unfinished.append(_name(job))
        elif admitted and not finished and suspended:
            result.admitted_suspended.append(_name(job))
        elif not admitted and not finished and not suspended:
            result.pending_running.append(_name(job))
    return result


@dataclass
class SuspendLedger:
    """Every ``spec.suspend`` change of every Job the bench's watch saw, in order, and when each Job
    was last unsuspended (monotonic seconds)."""

    changes: dict[str, list[bool]] = field(default_factory=dict)
    unsuspended_at: dict[str, float] = field(default_factory=dict)

    def saw(self, key: str, suspended: bool, *, now: float) -> None:
        seen = self.changes.setdefault(key, [])
        if not seen or seen[-1] != suspended:
            seen.append(suspended)
            if not suspended:
                self.unsuspended_at[key] = now

    def flapping(self) -> tuple[list[str], list[str]]:
        """(Jobs unsuspended more than once, Jobs suspended again after they started)."""
        twice, again = [], []
        for key, seen in self.changes.items():
            starts = sum(1 for before, after in itertools.pairwise([True, *seen]) if before and not after)
            if starts > 1:
                twice.append(key)
            if any(not before and after for before, after in itertools.pairwise(seen)):
                again.append(key)
        return sorted(twice), sorted(again)


@dataclass(frozen=True)
class Measure:
    """One figure per round, its target, and whether lower is better."""

    name: str
    unit: str
    target: float
    values: tuple[float, ...]

    def verdict(self, value: float) -> str:
        return "PASS" if value <= self.target else "MISS"

    def line(self) -> str:
        median, low, high = median_and_range(self.values)
        return (
            f"  {self.name}: median {median:.2f} {self.unit} (range {low:.2f}-{high:.2f} over {len(self.values)} "
            f"rounds; target <= {self.target:g} {self.unit}: {self.verdict(median)}; "
            f"{sum(self.verdict(v) == 'PASS' for v in self.values)}/{len(self.values)} rounds PASS)"
        )


def median_and_range(values: Iterable[float]) -> tuple[float, float, float]:
    """(median, min, max) of the finite values; NaNs when none."""
    finite = [value for value in values if not math.isnan(value)]
    if not finite:
        return math.nan, math.nan, math.nan
    return statistics.median(finite), min(finite), max(finite)


# --- the cluster side -------------------------------------------------------------------------


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def _queues(client: KubeClient, *, namespaces: int, admit: int) -> None:
    await setup_queues(client, jobs=1, install=False)  # the flavor (and the bench namespace)
    await client.create(CLUSTER_QUEUE_GVK, _cluster_queue(admit))
    for n in range(namespaces):
        namespace = _namespace_of(n, namespaces)
        await client.create(NAMESPACE_GVK, {"metadata": {"name": namespace}})
        await client.create(
            LOCAL_QUEUE_GVK,
            {"metadata": {"name": QUEUE, "namespace": namespace}, "spec": {"clusterQueue": CLUSTER_QUEUE}},
        )


def _cluster_queue(admit: int) -> dict[str, Any]:
    flavor = {
        "name": "default-flavor",
        "resources": [{"name": "cpu", "nominalQuota": f"{admit * JOB_MILLICPU}m"}],
    }
    return {
        "apiVersion": CLUSTER_QUEUE_GVK.api_version,
        "kind": CLUSTER_QUEUE_GVK.kind,
        "metadata": {"name": CLUSTER_QUEUE},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [flavor]}],
        },
    }


async def _set_quota(client: KubeClient, admit: int) -> None:
    patch = {"spec": {"resourceGroups": _cluster_queue(admit)["spec"]["resourceGroups"]}}
    await client.patch(CLUSTER_QUEUE_GVK, CLUSTER_QUEUE, patch)


def _namespace_of(index: int, namespaces: int) -> str:
    return f"restarts-{index % namespaces:03d}"


async def _create_jobs(client: KubeClient, *, jobs: int, namespaces: int) -> None:
    gate = asyncio.Semaphore(64)

    async def one(index: int) -> None:
        namespace = _namespace_of(index, namespaces)
        async with gate:
            body = queued_job(f"job-{index:05d}", queue=QUEUE, cpu=f"{JOB_MILLICPU}m", namespace=namespace)
            await client.create(JOB, body, namespace=namespace)

    await asyncio.gather(*(one(index) for index in range(jobs)))


async def _finish_jobs(client: KubeClient, keys: Iterable[str]) -> None:
    """Write each Job's status as the job controller does when its one pod succeeded."""

    async def one(key: str) -> None:
        namespace, _, name = key.partition("/")
        while True:
            job = await client.get(JOB, name, namespace=namespace)
            job["status"] = {**(job.get("status") or {}), **job_status_succeeded(now=_now())}
            try:
                await client.update_status(JOB, job, namespace=namespace)
                return
            except Conflict:
                continue

    await asyncio.gather(*(one(key) for key in keys))


@dataclass
class Watched:
    """The bench's watches of every Job and Workload: suspend changes, Workloads by owner Job key."""

    ledger: SuspendLedger = field(default_factory=SuspendLedger)
    workloads: dict[str, str] = field(default_factory=dict)  # workload key -> owner job key
    admitted: dict[str, float] = field(default_factory=dict)  # job key -> when its Workload was admitted
    finished: set[str] = field(default_factory=set)  # job keys whose Workload is Finished
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def watch_jobs(self, client: KubeClient) -> None:
        async for event in Watch(client, JOB_GVK).events():
            if event.type in (EventType.ADDED, EventType.MODIFIED):
                suspended = (event.object.get("spec") or {}).get("suspend") is not False
                self.ledger.saw(_name(event.object), suspended, now=time.monotonic())
                self.changed.set()

    async def watch_workloads(self, client: KubeClient) -> None:
        async for event in Watch(client, WORKLOAD_GVK).events():
            if event.type not in (EventType.ADDED, EventType.MODIFIED):
                continue
            metadata = event.object.get("metadata") or {}
            owner = next(
                (r.get("name") for r in metadata.get("ownerReferences") or [] if r.get("kind") == "Job"), None
            )
            if owner is None:
                continue
            job = f"{metadata.get('namespace')}/{owner}"
            self.workloads[_name(event.object)] = job
            if _true(event.object, "Admitted") and job not in self.admitted:
                self.admitted[job] = time.monotonic()
            if _true(event.object, "Finished"):
                self.finished.add(job)
            self.changed.set()

    async def until(self, reached: Callable[[], bool], *, within: float, what: str) -> None:
        deadline = time.monotonic() + within
        while not reached():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"{what}: not reached within {within:.0f}s")
            self.changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.changed.wait(), timeout=min(remaining, 2.0))

    def running(self) -> list[str]:
        """Jobs unsuspended now whose Workload is not Finished."""
        return sorted(
            key
            for key, seen in self.ledger.changes.items()
            if seen and seen[-1] is False and key not in self.finished
        )


# --- one run ----------------------------------------------------------------------------------


@dataclass
class Scenario:
    """What one scenario of one round measured."""

    name: str
    seconds: dict[str, float] = field(default_factory=dict)  # measure -> seconds
    lists: dict[str, float] = field(default_factory=dict)  # resource -> full lists (ours)
    list_pages: dict[str, float] = field(default_factory=dict)  # resource -> LIST requests (ours)
    apiserver_lists: dict[str, float] = field(default_factory=dict)  # resource -> LIST requests (all)
    notes: list[str] = field(default_factory=list)
    cpu: dict[str, float] = field(default_factory=dict)
    rss: dict[str, float] = field(default_factory=dict)
    load: str = ""
    audit: Audit | None = None

    def lines(self) -> list[str]:
        out = [f"  {self.name} (load average {self.load}):"]
        out += [f"    {what}: {value:.2f} s" for what, value in self.seconds.items()]
        if self.list_pages:
            out.append(
                "    our LISTs per informer (our client's metrics, pages / pages per list): "
                + ", ".join(
                    f"{resource} {self.lists.get(resource, 0):.2f} ({pages:.0f} pages)"
                    for resource, pages in sorted(self.list_pages.items())
                )
            )
        if self.apiserver_lists:
            out.append(
                "    kube-apiserver LIST requests (apiserver_request_total, every client): "
                + ", ".join(
                    f"{resource} {count:.0f}" for resource, count in sorted(self.apiserver_lists.items())
                )
            )
        out += [f"    {note}" for note in self.notes]
        out.append(
            "    CPU s: "
            + ", ".join(f"{name} {seconds:.2f}" for name, seconds in self.cpu.items())
            + "; RSS MiB: "
            + ", ".join(f"{name} {mib:.0f}" for name, mib in self.rss.items())
        )
        if self.audit is not None:
            out.append(f"    check: {self.audit.line()}")
        return out


class Run:
    """The cluster, the webhook, the replicas and the bench's watches of one ``--real`` run."""

    def __init__(self, args: argparse.Namespace, cluster: RealCluster, tmp: Path) -> None:
        self.args = args
        self.cluster = cluster
        self.tmp = tmp
        self.lease = LeaseSettings(args.lease_duration, args.renew_deadline, args.retry_period)
        self.watched = Watched()
        self.replicas: list[Replica] = []
        self.admit = args.admit
        self.generation = 0
        self.failures: list[str] = []
        self.client: KubeClient
        self.webhook: WebhookRun
        self.config: Path
        self.kubeconfig: Path
        self.stack: contextlib.AsyncExitStack

    async def start(self, stack: contextlib.AsyncExitStack) -> None:
        args, cluster = self.args, self.cluster
        self.stack = stack
        self.client = await stack.enter_async_context(client_for(cluster.kubeconfig))
        await _queues(self.client, namespaces=args.namespaces, admit=args.admit)
        self.webhook = await start_webhook(
            stack, tmp=self.tmp, kubeconfig=cluster.kubeconfig, client=self.client, qps=args.qps
        )
        self.config = replica_config(self.webhook.config, self.tmp / "replicas.yaml", lease=self.lease)
        self.kubeconfig = await run_as(
            self.client,
            "reconciler",
            config=load_config(self.config),
            admin_kubeconfig=cluster.kubeconfig,
            target=self.tmp / "reconciler.kubeconfig",
            kueue_namespace=KUEUE_NAMESPACE,
            seconds=TOKEN_SECONDS,
        )
        for watcher in (self.watched.watch_jobs(self.client), self.watched.watch_workloads(self.client)):
            stack.callback(asyncio.create_task(watcher).cancel)

    async def add_replica(self) -> tuple[Replica, asyncio.Task[tuple[str, float]]]:
        """A new replica, and a task that ends when it logs its caches synced (if it leads)."""
        self.generation += 1
        identity = f"reconciler-{self.generation}"
        synced = LogFollower(self.tmp / f"reconciler-{identity}.log").follow(
            SYNCED_LINE, within=self.args.timeout
        )
        self.stack.callback(synced.cancel)
        replica = await start_replica(
            self.stack,
            tmp=self.tmp,
            identity=identity,
            config=self.config,
            kubeconfig=self.kubeconfig,
            env=self.webhook.env,
        )
        self.replicas.append(replica)
        return replica, synced

    @property
    def lease_name(self) -> str:
        return load_config(self.config).leader_election.lease_name("reconciler")

    async def leader(self) -> Replica:
        holder = await lease_holder(self.client, namespace=KUEUE_NAMESPACE, name=self.lease_name)
        for replica in self.replicas:
            if replica.identity == holder:
                return replica
        raise RuntimeError(f"the Lease {self.lease_name} is held by {holder!r}, none of {self.replicas}")

    def processes(self) -> dict[str, int]:
        pids = cluster_pids(self.cluster)
        names = ("kube-apiserver", "etcd", "kueue-manager")
        found: dict[str, int] = {name: pids[name] for name in names if name in pids}
        assert self.webhook.webhook.pid is not None
        found["webhook"] = self.webhook.webhook.pid
        for replica in self.replicas:
            if replica.process.running:
                found[replica.identity] = replica.pid
        return found

    def sizes(self) -> dict[str, int]:
        return {
            "jobs.batch": self.args.jobs,
            "workloads.kueue.x-k8s.io": len(self.watched.workloads),
        }

    async def check(self, scenario: Scenario) -> None:
        """List every Job and Workload; record what is wrong as a failure."""
        jobs = (await self.client.list_all(JOB_GVK)).items
        workloads = (await self.client.list_all(WORKLOAD_GVK)).items
        scenario.audit = found = audit(jobs, workloads)
        for what, names in found.problems().items():
            self.failures.append(f"{scenario.name}: {what}: {len(names)}")


def _cpu(processes: Mapping[str, int]) -> dict[str, float]:
    found = {}
    for name, pid in processes.items():
        with contextlib.suppress(OSError):
            found[name] = process_cpu_seconds(pid)
    return found


def _usage(scenario: Scenario, before: Mapping[str, float], processes: Mapping[str, int]) -> None:
    after = _cpu(processes)
    scenario.cpu = {name: after[name] - before.get(name, 0.0) for name in after}
    scenario.rss = {name: process_rss_mib(pid) for name, pid in processes.items()}
    scenario.load = load_average()


async def _populate(run: Run) -> None:
    args = run.args
    first, synced = await run.add_replica()
    await synced
    started = time.monotonic()
    await _create_jobs(run.client, jobs=args.jobs, namespaces=args.namespaces)
    created = time.monotonic() - started
    watched = run.watched
    await watched.until(
        lambda: (
            len(set(watched.workloads.values())) >= args.jobs
            and len(watched.ledger.unsuspended_at) >= min(args.admit, args.jobs)
        ),
        within=args.timeout,
        what=f"{args.jobs} Workloads and {args.admit} Jobs started",
    )
    settled = time.monotonic() - started
    await quiet(first.pid, within=args.timeout)
    await run.add_replica()  # the standby
    print(
        f"  populated: {args.jobs:,} Jobs created through the webhook in {created:.1f} s "
        f"({args.jobs / created:.0f}/s), every Workload created and {args.admit} Jobs started "
        f"{settled:.1f} s after the first create; load average {load_average()}",
        flush=True,
    )


async def _failover(run: Run, *, number: int) -> Scenario:
    args, watched = run.args, run.watched
    scenario = Scenario(f"round {number}: failover (kill -9 the leader; {run.lease.describe()})")
    leader = await run.leader()
    standby = next(r for r in run.replicas if r is not leader and r.process.running)
    synced = LogFollower(standby.log_path).follow(SYNCED_LINE, within=run.lease.duration + args.timeout)
    ours_before = await scrape(standby.metrics_url)
    api = ApiserverMetrics(run.cluster.kubeconfig)
    api_before = await api.snapshot()
    processes = run.processes()
    cpu_before = _cpu(processes)
    admitted_before = set(watched.admitted)
    killed = time.monotonic()
    await leader.kill()
    run.replicas.remove(leader)
    run.admit += args.admit_more
    await _set_quota(run.client, run.admit)
    await watched.until(
        lambda: len(set(watched.admitted) - admitted_before) >= args.admit_more,
        within=args.timeout,
        what=f"{args.admit_more} more Workloads admitted",
    )
    new = set(watched.admitted) - admitted_before
    await watched.until(
        lambda: all(job in watched.ledger.unsuspended_at for job in new),
        within=run.lease.duration + args.timeout,
        what="the newly admitted Jobs unsuspended by the new leader",
    )
    line, synced_at = await synced
    scenario.seconds["kill -> the new leader's caches synced"] = synced_at - killed
    scenario.seconds["kill -> last newly admitted Job unsuspended"] = (
        max(watched.ledger.unsuspended_at[job] for job in new) - killed
    )
    sync = synced_seconds(line)
    if sync is not None:
        scenario.seconds["the new leader's term start -> caches synced (its log)"] = sync
    await quiet(standby.pid, within=args.timeout)
    ours = difference(list_requests(await scrape(standby.metrics_url)), list_requests(ours_before))
    scenario.list_pages = ours
    scenario.lists = full_lists(ours, run.sizes())
    api_after = await api.snapshot()
    scenario.apiserver_lists = {
        resource: after - api_before.requests.get((verb, resource), 0.0)
        for (verb, resource), after in api_after.requests.items()
        if verb == "list" and after - api_before.requests.get((verb, resource), 0.0) > 0
    }
    _usage(scenario, cpu_before, processes)
    await run.check(scenario)
    await run.add_replica()  # the killed one comes back as the standby
    return scenario


async def _apiserver_restart(run: Run, *, number: int) -> Scenario:
    args, watched = run.args, run.watched
    scenario = Scenario(f"round {number}: kube-apiserver restarted, etcd kept")
    leader = await run.leader()
    replicas = [replica for replica in run.replicas if replica.process.running]
    ours_before = {r.identity: await scrape(r.metrics_url) for r in replicas}
    log_from = {r.identity: r.log_path.stat().st_size for r in replicas}
    processes = run.processes()
    cpu_before = _cpu(processes)
    cpu_before.pop("kube-apiserver")  # a new process: its CPU since its start
    finishing = watched.running()[: args.finish]
    admitted_before = set(watched.admitted)
    stopping, starting = await asyncio.to_thread(restart_kube_apiserver, run.cluster)
    scenario.seconds["kube-apiserver SIGTERM -> gone"] = stopping
    scenario.seconds["kube-apiserver start -> ready"] = starting
    back = time.monotonic()
    run.admit += args.admit_more
    await _set_quota(run.client, run.admit)
    await _finish_jobs(run.client, finishing)
    expected = args.admit_more + len(finishing)
    await watched.until(
        lambda: (
            len(set(watched.admitted) - admitted_before) >= expected
            and all(job in watched.finished for job in finishing)
        ),
        within=args.timeout,
        what=f"{expected} more Workloads admitted and {len(finishing)} finished",
    )
    new = set(watched.admitted) - admitted_before
    await watched.until(
        lambda: all(job in watched.ledger.unsuspended_at for job in new),
        within=args.timeout,
        what="the Jobs admitted after the restart unsuspended",
    )
    scenario.seconds["ready -> last Job admitted after the restart unsuspended"] = (
        max(watched.ledger.unsuspended_at[job] for job in new) - back
    )
    # of that, ours: Kueue's own watches come back and admit first
    scenario.seconds["ours: admitted -> unsuspended, the slowest of those Jobs"] = max(
        max(0.0, watched.ledger.unsuspended_at[job] - watched.admitted[job]) for job in new
    )
    now_leading = await run.leader()
    await quiet(now_leading.pid, within=args.timeout)
    # every replica's requests: when the leader loses its Lease in the outage, the standby may win it
    pages: dict[str, float] = {}
    restarts: dict[str, float] = {}
    terms: list[str] = []
    for replica in replicas:
        after = await scrape(replica.metrics_url)
        before = ours_before[replica.identity]
        for resource, count in difference(list_requests(after), list_requests(before)).items():
            pages[resource] = pages.get(resource, 0.0) + count
        for reason, count in difference(watch_restarts(after), watch_restarts(before)).items():
            restarts[reason] = restarts.get(reason, 0.0) + count
        with replica.log_path.open("rb") as log:
            log.seek(log_from[replica.identity])
            told = log.read().decode(errors="replace")
        if told.count("lost leadership") or told.count(SYNCED_LINE):
            terms.append(
                f"{replica.identity}: lost its Lease {told.count('lost leadership')} time(s), "
                f"began {told.count(SYNCED_LINE)} new term(s)"
            )
    scenario.list_pages = pages
    scenario.lists = full_lists(pages, run.sizes())
    scenario.notes.append(
        "our watch restarts by reason: "
        + (", ".join(f"{k} {v:.0f}" for k, v in sorted(restarts.items())) or "none")
    )
    scenario.notes.append(
        f"leader before: {leader.identity}, after: {now_leading.identity}; "
        + ("; ".join(terms) if terms else "the leader kept its Lease and its term through the restart")
        + f" (renewDeadline {run.lease.renew_deadline:g} s)"
    )
    scenario.notes.append(
        f"changes after the restart: {args.admit_more} more admitted by quota, {len(finishing)} Jobs finished "
        f"(their quota admitted {len(new) - args.admit_more} more)"
    )
    snapshot = await ApiserverMetrics(run.cluster.kubeconfig).snapshot()
    scenario.apiserver_lists = {
        resource: count for (verb, resource), count in snapshot.requests.items() if verb == "list" and count
    }
    processes = run.processes()  # a new kube-apiserver: its CPU is its own since its start
    _usage(scenario, cpu_before, processes)
    await run.check(scenario)
    return scenario


async def _cold_start(run: Run, *, number: int) -> Scenario:
    args = run.args
    scenario = Scenario(f"round {number}: cold start against {args.jobs:,} Jobs and their Workloads")
    cpu_before = _cpu(run.processes())
    for replica in list(run.replicas):
        await replica.stop()
        run.replicas.remove(replica)
    started = time.monotonic()
    replica, synced = await run.add_replica()
    line, synced_at = await synced
    scenario.seconds["start -> caches synced"] = synced_at - started
    sync = synced_seconds(line)
    if sync is not None:
        scenario.seconds["term start -> caches synced (its log)"] = sync
    await quiet(replica.pid, within=args.timeout)
    samples = await scrape(replica.metrics_url)
    scenario.list_pages = list_requests(samples)
    scenario.lists = full_lists(scenario.list_pages, run.sizes())
    writes = write_requests(samples)
    scenario.notes.append(
        "its writes until quiet: " + (", ".join(f"{k} {v:.0f}" for k, v in sorted(writes.items())) or "none")
    )
    if writes.get("create workloads.kueue.x-k8s.io"):
        run.failures.append(
            f"{scenario.name}: {writes['create workloads.kueue.x-k8s.io']:.0f} Workload creates"
        )
    _usage(scenario, cpu_before, run.processes())  # the new replica: its whole life
    await run.check(scenario)
    await run.add_replica()  # the next round's standby
    return scenario


async def run_bench(args: argparse.Namespace) -> tuple[list[list[Scenario]], Run]:
    cluster = bench_cluster(args.state)
    await asyncio.to_thread(fresh, cluster, kueue_mode="external")
    rounds: list[list[Scenario]] = []
    with tempfile.TemporaryDirectory(prefix="bench-restarts-") as tmp_name:
        run = Run(args, cluster, Path(tmp_name))
        async with contextlib.AsyncExitStack() as stack:
            stack.callback(cluster.stop)
            await run.start(stack)
            await _populate(run)
            for number in range(1, args.rounds + 1):
                scenarios = []
                for measure in (_failover, _apiserver_restart, _cold_start):
                    scenario = await measure(run, number=number)
                    print("\n".join(scenario.lines()), flush=True)
                    scenarios.append(scenario)
                rounds.append(scenarios)
            twice, again = run.watched.ledger.flapping()
            if twice:
                run.failures.append(f"Jobs unsuspended twice: {len(twice)} ({', '.join(twice[:3])})")
            if again:
                run.failures.append(
                    f"Jobs suspended again after they started: {len(again)} ({', '.join(again[:3])})"
                )
            print(
                f"  flapping (the bench's watch of every Job): {len(twice)} unsuspended twice, "
                f"{len(again)} suspended again after starting",
                flush=True,
            )
    return rounds, run


def summary(rounds: list[list[Scenario]], *, lease: LeaseSettings, jobs: int) -> list[str]:
    """Each measure with its target and PASS/MISS: median and range over the rounds."""
    failover = [r[0] for r in rounds]
    restart = [r[1] for r in rounds]
    cold = [r[2] for r in rounds]

    def values(scenarios: list[Scenario], what: str) -> tuple[float, ...]:
        return tuple(s.seconds.get(what, math.nan) for s in scenarios)

    def most_lists(scenarios: list[Scenario]) -> tuple[float, ...]:
        return tuple(max((s.lists.get(r, 0.0) for r in INFORMER_RESOURCES), default=0.0) for s in scenarios)

    measures = [
        Measure(
            f"failover: kill -> newly admitted Job unsuspended ({lease.describe()})",
            "s",
            lease.duration + FAILOVER_SLACK,
            values(failover, "kill -> last newly admitted Job unsuspended"),
        ),
        Measure(
            "failover: the new leader's full LISTs, most of any informer", "lists", 1, most_lists(failover)
        ),
        Measure(
            "kube-apiserver restart: our full LISTs, most of any informer", "lists", 1, most_lists(restart)
        ),
        Measure(
            f"cold start at {jobs:,} Jobs: start -> caches synced",
            "s",
            COLD_START_TARGET,
            values(cold, "start -> caches synced"),
        ),
        Measure("cold start: full LISTs, most of any informer", "lists", 1, most_lists(cold)),
    ]
    lines = ["summary (timing targets are reported, not asserted):", *(m.line() for m in measures)]
    for kind, scenarios in (
        ("failover", failover),
        ("kube-apiserver restart", restart),
        ("cold start", cold),
    ):
        lines += [f"  {kind}, over the rounds: {line}" for line in usage_summary(scenarios)]
    return lines


def _by_role(values: Mapping[str, float], *, combine: Callable[[Iterable[float]], float]) -> dict[str, float]:
    """Per process, the replicas (``reconciler-N``, a new name each time one starts) as one:
    ``reconcilers``, their values combined."""
    found = {name: value for name, value in values.items() if not name.startswith("reconciler-")}
    replicas = [value for name, value in values.items() if name.startswith("reconciler-")]
    if replicas:
        found["reconcilers"] = combine(replicas)
    return found


def usage_summary(scenarios: list[Scenario]) -> list[str]:
    """CPU seconds (replicas summed), RSS MiB (the largest replica) and the 1-minute load average of
    one scenario kind: median and range over the rounds."""

    def spread(values: Iterable[float]) -> str:
        median, low, high = median_and_range(values)
        return f"{median:.2f} ({low:.2f}-{high:.2f})" if low != high else f"{median:.2f}"

    cpu = [_by_role(s.cpu, combine=sum) for s in scenarios]
    rss = [_by_role(s.rss, combine=max) for s in scenarios]
    names = list(dict.fromkeys(name for usage in cpu for name in usage))
    loads = [float(s.load.split()[0]) for s in scenarios if s.load]
    return [
        "CPU s " + ", ".join(f"{name} {spread(u.get(name, math.nan) for u in cpu)}" for name in names),
        "RSS MiB " + ", ".join(f"{name} {spread(u.get(name, math.nan) for u in rss)}" for name in names),
        f"load average (1 min) {spread(loads)}",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--real", action="store_true", help="run on the kit's kube-apiserver with real Kueue (required)"
    )
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--namespaces", type=int, default=100)
    parser.add_argument(
        "--admit", type=int, default=200, help="Jobs the ClusterQueue's quota admits at first"
    )
    parser.add_argument("--admit-more", type=int, default=5, help="quota added in each failover and restart")
    parser.add_argument(
        "--finish", type=int, default=5, help="running Jobs finished after each API server restart"
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--lease-duration", type=float, default=15.0)
    parser.add_argument("--renew-deadline", type=float, default=10.0)
    parser.add_argument("--retry-period", type=float, default=2.0)
    parser.add_argument("--qps", type=int, default=None, help="the components' client rate limit")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds any one wait may take")
    parser.add_argument(
        "--state", type=Path, default=None, help="the cluster's state folder (default: temporary)"
    )
    args = parser.parse_args(argv)
    if not args.real:
        parser.error("--real is required: this bench measures a real kube-apiserver with real Kueue")
    if not 0 < args.namespaces < PAGE_SIZE - 20:
        parser.error(f"--namespaces must be between 1 and {PAGE_SIZE - 21}")
    if args.jobs < args.admit + args.rounds * (2 * args.admit_more + args.finish) + 1:
        parser.error(
            "--jobs must leave a backlog: more than --admit + --rounds x (2 x --admit-more + --finish)"
        )
    own_state = args.state is None
    if own_state:
        args.state = Path(tempfile.mkdtemp(prefix="kueue-bridge-bench-restarts-"))
    print(
        f"{os.cpu_count()} cores; load average {load_average()}; {args.jobs:,} Jobs over {args.namespaces} "
        f"namespaces, quota for {args.admit} at first; {args.rounds} rounds",
        flush=True,
    )
    started = time.monotonic()
    # the bench's own watches lose their API server on purpose: their retries are not news
    logging.getLogger("shared.kube").setLevel(logging.ERROR)
    try:
        rounds, run = asyncio.run(run_bench(args))
    finally:
        if own_state:
            shutil.rmtree(args.state, ignore_errors=True)
    print("\n".join(summary(rounds, lease=run.lease, jobs=args.jobs)))
    print(f"  whole run: {time.monotonic() - started:.0f} s")
    if run.failures:
        print("correctness: FAILED\n" + "\n".join(f"  {failure}" for failure in run.failures))
        return 1
    print("correctness: PASS (no duplicate or orphan Workload, no missed event, no flapping)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
