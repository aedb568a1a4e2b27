"""Growth at scale on a real kube-apiserver with real Kueue: CPU per job, latency and memory as Jobs pile up.

``--real`` (required: the figures are a real API server's) wipes a cluster of the kit of
``../shared/real-cluster`` (``bench.harness.real_cluster``) and creates ``--namespaces`` namespaces,
each with its LocalQueue, all pointing at one ClusterQueue whose quota admits ``--admit`` Jobs at a
time. It then creates ``--jobs`` queued batch Jobs at a steady ``--rate`` per second, spread over the
namespaces; real Kueue admits them, the job controller starts them, and the job finisher (the
devcluster's job runner against the real API server) finishes each started Job after
``--run-seconds`` by writing its status, as a job controller would. Jobs are never deleted: the
number of existing Jobs (and Workloads) only grows.

The finisher writes three statuses per Job (suspended, started, finished): 150 writes a second at
50 Jobs/s. One at a time it fell behind on a loaded API server, the quota stayed full of Jobs that
had run their time, admission stopped and the run took as long as the finisher's backlog. So it
writes ``FINISHER_CONCURRENCY`` at a time, starts the next pass at once, and finishes running Jobs
in passes of their own, apart from the queued Jobs' ``Suspended`` writes
(``bench.harness.real_cluster.job_finisher``). It runs in this process: its CPU
is in the ``bench`` column, not in ours.

While a setup runs, a progress line every ``--progress-seconds`` says how many Jobs are created,
have a Workload, are admitted, unsuspended, finished and released, and how deep our reconciler's
work queue is. A setup must end within ``--deadline`` seconds (default ``jobs / rate + jobs /
5 + idle seconds + 600``: 47 minutes for 10,000 Jobs at 50/s; whole lives run at 8-10 per second on
2 cores, bounded by kube-apiserver's CPU, and 5 per second is the floor), and, with
``--finish-timeout``, every Job must be finished and released within that many seconds of the last
create (by default only the deadline bounds it); past either the run stops its
cluster and components, prints ``FAILED:`` with the last progress, the summary of what did finish,
and exits 1, rather than hanging.

At checkpoints of existing Jobs (1k, 2.5k, 5k and 10k for the default 10,000; the same fractions of a
smaller ``--jobs``) it prints, for the Jobs created since the previous checkpoint:

* CPU milliseconds per job (``/proc``, user + system) of every process: our reconciler and webhook,
  Kueue's manager, kube-apiserver, etcd and this bench, over the interval divided by the Jobs created
  in it (lives lag their creates when admission falls behind: the whole-run figure printed at the
  end, created -> all finished, is CPU per whole life);
* admission -> unsuspend p50/p99 of the Jobs admitted in the interval (Workload ``Admitted`` seen by
  the bench's watch -> Job ``suspend: false`` seen by the same watch);
* our webhook's answer time p99 (its own histogram) and kube-apiserver's measure of every admission
  webhook (``apiserver_admission_webhook_admission_duration_seconds``, p99 and mean);
* the resident memory (``VmRSS``) of every process, and the load average.

Setups: ``kueue-bridge`` (Kueue in external-framework mode only schedules; our webhook and reconciler
manage the Jobs, deployed as ``bench.harness.components`` does) and, with ``--anchor kueue``, ``kueue``
(Kueue's normal mode: its manager manages the Jobs itself, nothing of ours runs), one after the other
on the same machine. Kueue's job integration is Kueue's manager in the ``kueue`` setup minus Kueue's
manager in the ``kueue-bridge`` setup, per checkpoint (an estimate: the scheduler's share moves).

After the last checkpoint and once every Job is finished and the controller quiet, the **idle check**
reads our processes' CPU (Kueue's manager in the anchor) over ``--idle-seconds`` with nothing
changing and every Job and Workload cached: the target is at most 1 % of a core.

Targets: CPU per job at 10k <= 1.2x the figure at the first checkpoint and <= Kueue's
job integration; admission -> unsuspend p99 <= 1 s at every checkpoint; reconciler RSS growth
<= 10 KB per Job (``bench.cache_memory`` counts it deterministically) and <= Kueue's manager's;
idle <= 1 % of a core. The machine's load average is printed with every line: on a shared machine
the figures are bounded by the other work, not only by ours.

    .venv/bin/python -m bench.scale --real [--anchor kueue] [--jobs 10000] [--rate 50] [--namespaces 100]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import math
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from bench.harness.clusters import client_for, setup_queues
from bench.harness.components import Components, start_components
from bench.harness.load import JOB, queued_job
from bench.harness.metrics import Samples, buckets, histogram_quantile, scrape, total
from bench.harness.processes import load_average, process_cpu_seconds, process_rss_mib, quiet
from bench.harness.real_cluster import (
    ApiserverMetrics,
    ApiserverSnapshot,
    Timeline,
    bench_cluster,
    fresh,
    job_finisher,
    measured_processes,
)
from devcluster.standin import RUN_SECONDS_ANNOTATION
from shared.constants import CLUSTER_QUEUE_GVK, LOCAL_QUEUE_GVK
from shared.kube import NAMESPACE_GVK

__all__ = ["Checkpoint", "checkpoints_for", "main", "quantile"]

KUEUE_BRIDGE, KUEUE = "kueue-bridge", "kueue"
QUEUE: Final = "scale"
CLUSTER_QUEUE: Final = "scale"
#: CPU a Job requests (the ClusterQueue's quota is ``--admit`` times this)
JOB_MILLICPU: Final = 10
#: the checkpoints, as fractions of 10,000 Jobs
CHECKPOINT_FRACTIONS: Final = (0.1, 0.25, 0.5, 1.0)
IDLE_TARGET_SHARE: Final = 0.01
#: Job status writes the job finisher makes at once (three per Job's life: suspended, started,
#: finished; at 50 Jobs/s one at a time falls behind on a loaded API server and the quota stays full)
FINISHER_CONCURRENCY: Final = 32
WEBHOOK_HISTOGRAM: Final = "kueue_bridge_webhook_request_duration_seconds"
QUEUE_DEPTH: Final = "kueue_bridge_workqueue_depth"
WEBHOOK_CONNECTIONS: Final = "kueue_bridge_webhook_connections_total"
CLIENT_DURATION: Final = "kueue_bridge_rest_client_request_duration_seconds"
CLIENT_REQUESTS: Final = "kueue_bridge_rest_client_requests_total"
#: the reconciler's writes on the way from admission to a started job, and of a job's life
OUR_WRITES: Final = (
    ("workloads.kueue.x-k8s.io", "create"),
    ("workloads.kueue.x-k8s.io/status", "apply"),
    ("jobs.batch", "patch"),
)


def checkpoints_for(jobs: int) -> list[int]:
    """Existing-Job counts to report at: 1k, 2.5k, 5k, 10k of 10,000 (the same fractions otherwise)."""
    return sorted({max(1, round(jobs * fraction)) for fraction in CHECKPOINT_FRACTIONS})


def quantile(values: list[float], q: float) -> float:
    """The ``q`` quantile (nearest rank) of ``values``; NaN when empty."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


@dataclass
class Checkpoint:
    """The interval that ends when ``existing`` Jobs exist."""

    existing: int
    jobs: int  # Jobs created in the interval
    seconds: float
    cpu_ms_per_job: dict[str, float]
    rss_mib: dict[str, float]
    admitted_to_unsuspended: list[float]
    #: the same, of the Jobs whose Workload was admitted before the reconciler wrote its
    #: ``PodsReady=False WaitForStart`` (two writes on the way: that one, then the Job's)
    two_writes: list[float]
    #: the reconciler's writes in the interval: "resource verb" -> (calls, mean ms, p99 ms), and
    #: how many of its requests kube-apiserver answered 409 Conflict
    our_writes: dict[str, tuple[float, float, float]]
    conflicts: float
    webhook_p99_ms: float  # ours, its own histogram (NaN in the anchor)
    webhook_connections: dict[str, float]  # TLS connections our webhook accepted, by protocol
    apiserver_webhooks: dict[str, tuple[float, float]]  # name -> (p99 ms, mean ms)
    load: str

    def line(self) -> list[str]:
        gaps = self.admitted_to_unsuspended
        cpu = ", ".join(f"{name} {ms:.2f}" for name, ms in self.cpu_ms_per_job.items())
        rss = ", ".join(f"{name} {mib:.0f}" for name, mib in self.rss_mib.items())
        opened = ", ".join(
            f"{count:.0f} {protocol}" for protocol, count in sorted(self.webhook_connections.items())
        )
        hooks = "; ".join(
            f"{name} p99 {p99:.1f} ms mean {mean:.1f} ms"
            for name, (p99, mean) in sorted(self.apiserver_webhooks.items())
        )
        two = self.two_writes
        writes = "; ".join(
            f"{name} {calls:.0f}, mean {mean:.0f} ms, p99 {p99:.0f} ms"
            for name, (calls, mean, p99) in self.our_writes.items()
        )
        return [
            f"  at {self.existing:,} existing Jobs (+{self.jobs:,} in {self.seconds:.1f} s; load average {self.load}):",
            f"    CPU ms per job: {cpu}",
            f"    admission -> unsuspend: p50 {quantile(gaps, 0.5) * 1000:.0f} ms, p99 {quantile(gaps, 0.99) * 1000:.0f} ms "
            f"({len(gaps)} Jobs admitted in the interval); {len(two)} of them admitted before their "
            f"WaitForStart (two writes on the way): p50 {quantile(two, 0.5) * 1000:.0f} ms, "
            f"p99 {quantile(two, 0.99) * 1000:.0f} ms",
            f"    our reconciler's writes: {writes or 'none'}; 409 Conflict {self.conflicts:.0f}",
            f"    our webhook's answer p99 {self.webhook_p99_ms:.1f} ms, connections accepted {opened or 'none'}; "
            f"kube-apiserver's: {hooks or 'no calls'}",
            f"    RSS MiB: {rss}",
        ]


@dataclass
class SetupResult:
    setup: str
    checkpoints: list[Checkpoint] = field(default_factory=list)
    idle_share: dict[str, float] = field(default_factory=dict)
    idle_seconds: float = 0.0
    rss_start: dict[str, float] = field(default_factory=dict)
    #: every process's CPU per job from the first create until every Job is finished and released
    whole_run_ms_per_job: dict[str, float] = field(default_factory=dict)
    #: admission -> unsuspend of every Job of the run (seconds)
    whole_run_gaps: list[float] = field(default_factory=list)


def job_at(index: int, *, namespaces: int, run_seconds: float) -> dict[str, Any]:
    body = queued_job(
        f"job-{index:05d}", queue=QUEUE, cpu=f"{JOB_MILLICPU}m", namespace=namespace_of(index, namespaces)
    )
    body["metadata"]["annotations"] = {RUN_SECONDS_ANNOTATION: str(run_seconds)}
    return body


def namespace_of(index: int, namespaces: int) -> str:
    return f"scale-{index % namespaces:03d}"


async def _queues(client: Any, *, namespaces: int, admit: int) -> None:
    await setup_queues(client, jobs=1, install=False)  # the flavor (and the bench namespace)
    await client.create(
        CLUSTER_QUEUE_GVK,
        {
            "metadata": {"name": CLUSTER_QUEUE},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {
                                "name": "default-flavor",
                                "resources": [{"name": "cpu", "nominalQuota": f"{admit * JOB_MILLICPU}m"}],
                            }
                        ],
                    }
                ],
            },
        },
    )
    for n in range(namespaces):
        namespace = f"scale-{n:03d}"
        await client.create(NAMESPACE_GVK, {"metadata": {"name": namespace}})
        await client.create(
            LOCAL_QUEUE_GVK,
            {"metadata": {"name": QUEUE, "namespace": namespace}, "spec": {"clusterQueue": CLUSTER_QUEUE}},
        )


async def _paced_creates(
    client: Any, *, jobs: int, rate: float, namespaces: int, run_seconds: float, created: list[int]
) -> None:
    """Create ``jobs`` Jobs, the i-th at ``i / rate`` seconds after the start (late ones at once);
    ``created[0]`` counts the creates answered."""
    gate = asyncio.Semaphore(64)
    started = time.monotonic()

    async def one(index: int) -> None:
        async with gate:
            body = job_at(index, namespaces=namespaces, run_seconds=run_seconds)
            await client.create(JOB, body, namespace=body["metadata"]["namespace"])
            created[0] += 1

    tasks = []
    for index in range(jobs):
        delay = started + index / rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        tasks.append(asyncio.create_task(one(index)))
    await asyncio.gather(*tasks)


async def _our_webhook(components: Components | None) -> Samples:
    if components is None:
        return {}
    return await scrape(components.webhook_metrics, verify=components.verify)


async def _our_reconciler(components: Components | None) -> Samples:
    if components is None:
        return {}
    return await scrape(components.reconciler_metrics)


def _our_writes(after: Samples, before: Samples) -> dict[str, tuple[float, float, float]]:
    """The reconciler's ``OUR_WRITES`` between two scrapes: calls, mean and p99 (its client's
    request-duration histogram, whose bounds are 5, 10, 25, 50, 100, 250, 500 ms, 1 s...)."""
    found = {}
    for resource, verb in OUR_WRITES:
        labels = {"resource": resource, "verb": verb}
        calls = total(after, f"{CLIENT_DURATION}_count", **labels) - total(
            before, f"{CLIENT_DURATION}_count", **labels
        )
        if calls <= 0:
            continue
        seconds = total(after, f"{CLIENT_DURATION}_sum", **labels) - total(
            before, f"{CLIENT_DURATION}_sum", **labels
        )
        p99 = histogram_quantile(
            buckets(after, CLIENT_DURATION, **labels), buckets(before, CLIENT_DURATION, **labels), 0.99
        )
        found[f"{resource} {verb}"] = (calls, seconds / calls * 1000, p99 * 1000)
    return found


def _apiserver_webhooks(
    after: ApiserverSnapshot, before: ApiserverSnapshot
) -> dict[str, tuple[float, float]]:
    found = {}
    for name, (calls, mean_ms) in after.webhook_latency_since(before).items():
        p99 = histogram_quantile(
            after.webhook_buckets.get(name, {}), before.webhook_buckets.get(name, {}), 0.99
        )
        found[name] = (p99 * 1000, mean_ms)
        del calls
    return found


#: Whole lives per second below which a setup is failing rather than slow: on 2 cores the lives run
#: at 8-10 per second (created -> finished and released), bounded by kube-apiserver's CPU, whatever
#: the create rate.
FLOOR_LIVES_PER_SECOND: Final = 5.0


def deadline_for(*, jobs: int, rate: float, idle_seconds: float) -> float:
    """Seconds one setup may take by default: the creates' own time, every life at the floor rate
    (:data:`FLOOR_LIVES_PER_SECOND`), the idle check, and ten minutes of slack (starting the cluster
    and components, the checkpoints' scrapes)."""
    return jobs / rate + jobs / FLOOR_LIVES_PER_SECOND + idle_seconds + 600.0


@dataclass
class Progress:
    """What a setup has reached so far: printed every ``--progress-seconds`` and in a deadline's failure."""

    jobs: int
    timeline: Timeline = field(default_factory=lambda: Timeline(None))
    created: list[int] = field(default_factory=lambda: [0])
    started: float = field(default_factory=time.monotonic)
    stage: str = "starting the cluster"
    #: our reconciler's metrics, once it runs: its work queue's depth goes on each progress line
    reconciler_metrics: str | None = None

    def line(self) -> str:
        timeline = self.timeline
        return (
            f"{time.monotonic() - self.started:.0f} s, {self.stage}: {self.created[0]:,}/{self.jobs:,} created, "
            f"{len(timeline.workload_seen):,} with a Workload, {len(timeline.admitted):,} admitted, "
            f"{len(timeline.unsuspended):,} unsuspended, {len(timeline.done):,} finished and released"
        )

    async def report(self, every: float) -> None:
        while True:
            await asyncio.sleep(every)
            queue = ""
            if self.reconciler_metrics is not None:
                with contextlib.suppress(Exception):  # a progress line never fails the run
                    depth = total(await scrape(self.reconciler_metrics), QUEUE_DEPTH)
                    queue = f"; reconciler work queue {depth:,.0f}"
            print(f"  progress: {self.line()}{queue}; load average {load_average()}", flush=True)


async def run_setup(args: argparse.Namespace, *, setup: str) -> SetupResult:
    """One setup within ``args.deadline`` seconds (``deadline_for`` when unset): past it the setup
    is stopped (its cluster and components too) and ``RuntimeError`` names what it had reached."""
    deadline = args.deadline or deadline_for(jobs=args.jobs, rate=args.rate, idle_seconds=args.idle_seconds)
    progress = Progress(args.jobs)
    reporting = asyncio.create_task(progress.report(args.progress_seconds))
    try:
        async with asyncio.timeout(deadline) as limit:
            return await _run_setup(args, setup=setup, progress=progress)
    except TimeoutError:
        if not limit.expired():
            raise
        raise RuntimeError(
            f"{setup}: not done within the deadline of {deadline:.0f} s (--deadline): {progress.line()}"
        ) from None
    finally:
        reporting.cancel()


async def _run_setup(args: argparse.Namespace, *, setup: str, progress: Progress) -> SetupResult:
    cluster = bench_cluster(args.state)
    await asyncio.to_thread(fresh, cluster, kueue_mode="external" if setup == KUEUE_BRIDGE else "normal")
    progress.stage = "starting the components"
    kubeconfig = cluster.kubeconfig
    apiserver = ApiserverMetrics(kubeconfig)
    result = SetupResult(setup)
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp_name:
        tmp = Path(tmp_name)
        async with contextlib.AsyncExitStack() as stack:
            stack.callback(cluster.stop)
            client = await stack.enter_async_context(client_for(kubeconfig))
            await _queues(client, namespaces=args.namespaces, admit=args.admit)
            components: Components | None = None
            if setup == KUEUE_BRIDGE:
                components = await start_components(
                    stack,
                    tmp=tmp,
                    kubeconfig=kubeconfig,
                    client=client,
                    qps=args.qps,
                    reconciler_identity=True,
                )
                progress.reconciler_metrics = components.reconciler_metrics
            timeline = progress.timeline
            for watcher in (timeline.watch_jobs(client), timeline.watch_workloads(client)):
                stack.callback(asyncio.create_task(watcher).cancel)
            await stack.enter_async_context(
                job_finisher(kubeconfig, run_seconds=args.run_seconds, concurrency=FINISHER_CONCURRENCY)
            )
            processes = measured_processes(cluster, components)
            controller = processes["reconciler" if components else "kueue-manager"]
            await quiet(controller)
            result.rss_start = {name: process_rss_mib(pid) for name, pid in processes.items()}
            print(
                f"  start: RSS MiB {_rss_text(result.rss_start)}; load average {load_average()}", flush=True
            )

            created = progress.created
            progress.stage = "creating Jobs"
            creating = asyncio.create_task(
                _paced_creates(
                    client,
                    jobs=args.jobs,
                    rate=args.rate,
                    namespaces=args.namespaces,
                    run_seconds=args.run_seconds,
                    created=created,
                )
            )
            stack.callback(creating.cancel)
            previous = 0
            cpu_before = {name: process_cpu_seconds(pid) for name, pid in processes.items()}
            cpu_start, run_started = dict(cpu_before), time.monotonic()
            api_before = await apiserver.snapshot()
            hook_before = await _our_webhook(components)
            ours_before = await _our_reconciler(components)
            since = time.monotonic()
            for existing in checkpoints_for(args.jobs):
                while created[0] < existing:
                    if creating.done():
                        creating.result()  # raises what failed
                    await asyncio.sleep(0.2)
                cpu_now = {name: process_cpu_seconds(pid) for name, pid in processes.items()}
                api_now = await apiserver.snapshot()
                hook_now = await _our_webhook(components)
                ours_now = await _our_reconciler(components)
                now = time.monotonic()
                interval = existing - previous
                gap_of = {  # the bench's two watches can see the unsuspend first: 0, not negative
                    job: max(0.0, timeline.unsuspended[job] - at)
                    for job, at in timeline.admitted.items()
                    if job in timeline.unsuspended and since <= at < now
                }
                hook_p99 = histogram_quantile(
                    buckets(hook_now, WEBHOOK_HISTOGRAM), buckets(hook_before, WEBHOOK_HISTOGRAM), 0.99
                )
                checkpoint = Checkpoint(
                    existing=existing,
                    jobs=interval,
                    seconds=now - since,
                    cpu_ms_per_job={
                        name: (cpu_now[name] - cpu_before[name]) / interval * 1000 for name in processes
                    },
                    rss_mib={name: process_rss_mib(pid) for name, pid in processes.items()},
                    admitted_to_unsuspended=list(gap_of.values()),
                    two_writes=[
                        gap for job, gap in gap_of.items() if job in timeline.admitted_before_pods_ready
                    ],
                    our_writes=_our_writes(ours_now, ours_before),
                    conflicts=total(ours_now, CLIENT_REQUESTS, code="409")
                    - total(ours_before, CLIENT_REQUESTS, code="409"),
                    webhook_p99_ms=hook_p99 * 1000,
                    webhook_connections={
                        protocol: total(hook_now, WEBHOOK_CONNECTIONS, protocol=protocol)
                        - total(hook_before, WEBHOOK_CONNECTIONS, protocol=protocol)
                        for protocol in ("h2", "http/1.1")
                        if total(hook_now, WEBHOOK_CONNECTIONS, protocol=protocol)
                    },
                    apiserver_webhooks=_apiserver_webhooks(api_now, api_before),
                    load=load_average(),
                )
                result.checkpoints.append(checkpoint)
                print("\n".join(checkpoint.line()), flush=True)
                previous, since = existing, now
                cpu_before, api_before, hook_before, ours_before = cpu_now, api_now, hook_now, ours_now
            await creating
            progress.stage = "finishing Jobs"
            everyone = args.jobs
            await timeline.wait(
                lambda: len(timeline.done) >= everyone,
                within=args.finish_timeout or math.inf,
                what="every Job finished",
            )
            await quiet(controller)
            result.whole_run_ms_per_job = {
                name: (process_cpu_seconds(pid) - cpu_start[name]) / args.jobs * 1000
                for name, pid in processes.items()
            }
            result.whole_run_gaps = [
                max(0.0, timeline.unsuspended[job] - at)
                for job, at in timeline.admitted.items()
                if job in timeline.unsuspended
            ]
            gaps = result.whole_run_gaps
            print(
                f"  whole run: admission -> unsuspend p50 {quantile(gaps, 0.5) * 1000:.0f} ms, p99 "
                f"{quantile(gaps, 0.99) * 1000:.0f} ms, max {max(gaps, default=math.nan) * 1000:.0f} ms "
                f"({len(gaps)} Jobs)",
                flush=True,
            )
            print(
                f"  whole run ({args.jobs:,} lives, created to all finished, "
                f"{time.monotonic() - run_started:.0f} s): CPU ms per job "
                + ", ".join(f"{name} {ms:.2f}" for name, ms in result.whole_run_ms_per_job.items())
                + f"; RSS MiB {_rss_text({name: process_rss_mib(pid) for name, pid in processes.items()})}"
                + f"; load average {load_average()}",
                flush=True,
            )
            ours = ("reconciler", "webhook") if components else ("kueue-manager",)
            progress.stage = "idle check"
            idle_from = {name: process_cpu_seconds(processes[name]) for name in ours}
            idle_started = time.monotonic()
            await asyncio.sleep(args.idle_seconds)
            result.idle_seconds = time.monotonic() - idle_started
            result.idle_share = {
                name: (process_cpu_seconds(processes[name]) - idle_from[name]) / result.idle_seconds
                for name in ours
            }
            print(
                f"  idle ({args.jobs:,} Jobs and Workloads cached, all finished, nothing changing, "
                f"{result.idle_seconds:.0f} s): "
                + ", ".join(
                    f"{name} {share * 100:.2f} % of a core" for name, share in result.idle_share.items()
                )
                + f"; load average {load_average()}",
                flush=True,
            )
    return result


def _rss_text(rss: dict[str, float]) -> str:
    return ", ".join(f"{name} {mib:.0f}" for name, mib in rss.items())


def summary(results: dict[str, SetupResult], *, jobs: int) -> list[str]:
    """The targets, met or not, from the checkpoints of each setup."""
    lines = ["summary (the scale targets; figures of one run each):"]
    ours = results.get(KUEUE_BRIDGE)
    anchor = results.get(KUEUE)
    if ours is None or not ours.checkpoints:
        return lines
    first, last = ours.checkpoints[0], ours.checkpoints[-1]
    for name in ("reconciler", "webhook"):
        ratio = (
            last.cpu_ms_per_job[name] / first.cpu_ms_per_job[name] if first.cpu_ms_per_job[name] else math.nan
        )
        verdict = "met" if ratio <= 1.2 else "NOT met"
        lines.append(
            f"  {name} CPU per job at {last.existing:,} / at {first.existing:,}: {last.cpu_ms_per_job[name]:.2f} / "
            f"{first.cpu_ms_per_job[name]:.2f} ms = {ratio:.2f}x (target <= 1.2x: {verdict})"
        )
    if anchor is not None and anchor.checkpoints:
        for mine, theirs in zip(ours.checkpoints, anchor.checkpoints, strict=False):
            integration = theirs.cpu_ms_per_job["kueue-manager"] - mine.cpu_ms_per_job["kueue-manager"]
            own = mine.cpu_ms_per_job["reconciler"] + mine.cpu_ms_per_job["webhook"]
            verdict = "met" if own <= integration else "NOT met"
            lines.append(
                f"  at {mine.existing:,}: ours (reconciler + webhook) {own:.2f} ms/job against Kueue's job "
                f"integration ~{integration:.2f} ms/job (its manager managing Jobs minus only scheduling): {verdict}"
            )
    if anchor is not None and anchor.whole_run_ms_per_job and ours.whole_run_ms_per_job:
        integration = (
            anchor.whole_run_ms_per_job["kueue-manager"] - ours.whole_run_ms_per_job["kueue-manager"]
        )
        own = ours.whole_run_ms_per_job["reconciler"] + ours.whole_run_ms_per_job["webhook"]
        lines.append(
            f"  whole run, per whole life: ours {own:.2f} ms/job against Kueue's job integration ~{integration:.2f} "
            f"ms/job: {'met' if own <= integration else 'NOT met'}"
        )
    p99s = [quantile(c.admitted_to_unsuspended, 0.99) for c in ours.checkpoints]
    p99s.append(quantile(ours.whole_run_gaps, 0.99))
    worst = max((value for value in p99s if not math.isnan(value)), default=math.nan)
    lines.append(
        f"  admission -> unsuspend p99, worst checkpoint or whole run: {worst * 1000:.0f} ms (target <= 1000 ms: "
        f"{'met' if worst <= 1.0 else 'NOT met'})"
    )
    grown = last.existing - first.existing
    if grown > 0:
        per_job = (last.rss_mib["reconciler"] - first.rss_mib["reconciler"]) * 2**20 / grown
        text = f"  reconciler RSS growth {first.existing:,} -> {last.existing:,} Jobs: {per_job / 1024:.1f} KB per Job"
        if anchor is not None and len(anchor.checkpoints) == len(ours.checkpoints):
            kueue_growth = (
                (
                    anchor.checkpoints[-1].rss_mib["kueue-manager"]
                    - anchor.checkpoints[0].rss_mib["kueue-manager"]
                )
                * 2**20
                / grown
            )
            text += f", Kueue's manager (managing Jobs) {kueue_growth / 1024:.1f} KB per Job"
        lines.append(text + " (target <= 10 KB; RSS is not deterministic: bench.cache_memory counts it)")
    idle = sum(ours.idle_share.values())
    lines.append(
        f"  idle, ours together: {idle * 100:.2f} % of a core over {ours.idle_seconds:.0f} s with {jobs:,} Jobs cached "
        f"(target <= {IDLE_TARGET_SHARE * 100:.0f} %: {'met' if idle <= IDLE_TARGET_SHARE else 'NOT met'})"
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "--real", action="store_true", help="run on the kit's kube-apiserver with real Kueue (required)"
    )
    parser.add_argument("--anchor", choices=(KUEUE,), help="also run with Kueue managing the Jobs itself")
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--rate", type=float, default=50.0, help="Jobs created per second")
    parser.add_argument("--namespaces", type=int, default=100)
    parser.add_argument(
        "--admit", type=int, default=200, help="Jobs the ClusterQueue's quota admits at a time"
    )
    parser.add_argument("--run-seconds", type=float, default=2.0, help="how long each started Job runs")
    parser.add_argument("--idle-seconds", type=float, default=60.0)
    parser.add_argument("--qps", type=int, default=None, help="the components' client rate limit")
    parser.add_argument(
        "--finish-timeout",
        type=float,
        default=None,
        help="seconds from the last create until every Job must be finished and released "
        "(default: only --deadline bounds it)",
    )
    parser.add_argument(
        "--deadline",
        type=float,
        default=None,
        help="seconds one setup may take in all (default: 3 x jobs / rate + idle seconds + 600)",
    )
    parser.add_argument("--progress-seconds", type=float, default=30.0, help="a progress line this often")
    parser.add_argument(
        "--state", type=Path, default=None, help="the cluster's state folder (default: temporary)"
    )
    args = parser.parse_args(argv)
    if not args.real:
        parser.error("--real is required: this bench measures a real kube-apiserver with real Kueue")
    own_state = args.state is None
    if own_state:
        args.state = Path(tempfile.mkdtemp(prefix="kueue-bridge-bench-scale-"))
    print(
        f"{os.cpu_count()} cores; load average {load_average()}; {args.jobs:,} Jobs at {args.rate:g}/s over "
        f"{args.namespaces} namespaces, quota for {args.admit} at a time",
        flush=True,
    )
    results: dict[str, SetupResult] = {}
    try:
        for setup in [KUEUE_BRIDGE] + ([KUEUE] if args.anchor == KUEUE else []):
            print(f"--- {setup}", flush=True)
            results[setup] = asyncio.run(run_setup(args, setup=setup))
    except RuntimeError as exc:  # a deadline or a wait that ran out: said plainly, not a traceback
        print(f"FAILED: {exc}", flush=True)
        print("\n".join(summary(results, jobs=args.jobs)))
        return 1
    finally:
        if own_state:
            shutil.rmtree(args.state, ignore_errors=True)
    print("\n".join(summary(results, jobs=args.jobs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
