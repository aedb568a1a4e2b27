"""``python -m bench.multikueue_dispatch --real``: the MultiKueue benchmark on real API servers, and its chaos.

A round starts a fresh fleet with ``testkit.real_fleet`` (a manager and ``--workers`` workers ``w1``,
``w2``, ...: the kit's kube-apiserver 1.36 and the real Kueue manager on each, our webhook and
reconciler on each),
dispatched either by ``kueue-bridge multikueue`` (``--anchor bridge``) or by Kueue's own MultiKueue
(``--anchor kueue``: Kueue's MultiKueue on the manager, ``Job.v1.batch`` as its external framework),
then submits, watches and prints exactly what the devcluster rounds do (``bench.multikueue_measure``).
The fleet's start is not measured. There is no kubelet nor job controller on these clusters:
:class:`JobRunner` plays the job controller on the workers -- a Job that starts (is unsuspended) there
gets one running pod at once (``status.active: 1``) and succeeds ``--run-seconds`` later.

Reliability, scripted with ``--kill-at`` and ``--worker-down-at``: ``kill -9`` of our
multikueue when the given fractions of the jobs have reached a worker (restarted at once, as its
Deployment would), and ``w1``'s API server stopped at a fraction, our multikueue killed and restarted
while it is down, ``w1`` started again ``--down-seconds`` later. Every round then checks and prints:
every job finished (its manager Workload ``Finished``) and no job was completed on two workers; no
job existed on two workers at the same time (this process's watches), nor on a second one after the
first (allowed only when ``w1`` stayed down longer than ``workerLostTimeout``: a re-dispatch); no
copy or job left on any worker once ``gcInterval`` and a margin have passed. A failed check fails
the round, and the script exits 1.

A round is one phase (``--scenario round``) or two on the same fleet (``--scenario steady-burst``, each
in its own namespace, :func:`phases`): ``--steady-jobs`` at ``--steady-rate`` without chaos, whose
dispatch latency (``QuotaReserved`` on the manager -> job created on the winning worker) is the
steady figure; then ``--jobs`` at once with the chaos options, whose throughput is the jobs per
second from the first creation on the manager until 95% of the jobs were created on a worker (the
last ones may be those whose copy the worker taken away had admitted: they wait for it, whoever
dispatches). With ``--anchor both`` and ``--no-kill-while-down``, Kueue's MultiKueue goes through
the same outage; :func:`verdicts` prints PASS or MISS per target.

The CPU seconds of every process (the kube-apiservers, etcds and Kueue managers, our components,
this process) are read from ``/proc`` around each phase; a process killed during the round counts up
to its end and its replacement from its start. The fleet's resident memory (the same processes) is
sampled every 2 s; its peak is printed per kind of process. The kit's Go processes read
``GOMEMLIMIT``/``GOGC`` from this process's environment, which lowers their share (an idle worker
kube-apiserver: about 380 MB, 270 MB with ``GOGC=50 GOMEMLIMIT=200MiB``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from bench.multikueue_measure import (
    JOB,
    NAMESPACE,
    WORKLOAD,
    Observed,
    dispatch_rate,
    load,
    percentile,
    report,
    submit,
)
from shared.durations import parse_go_duration
from shared.kube import (
    ClientSettings,
    Conflict,
    InternalError,
    KubeClient,
    KubeError,
    NotFound,
    ServerTimeout,
    ServiceUnavailable,
    TooManyRequests,
    TransportError,
    load_kubeconfig,
)
from testkit import (
    Dispatcher,
    FleetSettings,
    Kit,
    RealCluster,
    RealFleet,
    cpu_seconds,
    job_status_running,
    job_status_succeeded,
    rss_bytes,
    start_real_fleet,
)

__all__ = ["JobRunner", "Phase", "RoundOutcome", "phases", "real_round", "verdicts"]

#: the share of a burst's jobs its throughput counts (:func:`bench.multikueue_measure.dispatch_rate`)
BURST_FRACTION = 0.95

#: what a write to a worker that is down or restarting answers
TRANSIENT = (TransportError, ServerTimeout, ServiceUnavailable, TooManyRequests, InternalError)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class JobRunner:
    """The job controller of the workers: a started Job runs one pod, which succeeds ``run_seconds``
    later. Every status write is retried until it lands (the worker may be down for a while)."""

    def __init__(
        self, clients: dict[str, KubeClient], *, run_seconds: float, namespace: str = NAMESPACE
    ) -> None:
        self._clients = clients
        self._run_seconds = run_seconds
        self._namespace = namespace
        self._started: set[tuple[str, str]] = set()  # (worker, job uid)
        self._tasks: set[asyncio.Task[None]] = set()
        #: job name -> workers on which this runner completed it
        self.completed: dict[str, list[str]] = {}

    def seen(self, worker: str, obj: dict[str, Any]) -> None:
        metadata = obj.get("metadata") or {}
        key = (worker, str(metadata.get("uid") or ""))
        spec, status = obj.get("spec") or {}, obj.get("status") or {}
        if key in self._started or spec.get("suspend") is not False or status.get("completionTime"):
            return
        self._started.add(key)
        task = asyncio.create_task(self._run(worker, str(metadata["name"]), key[1]))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _write(self, worker: str, name: str, uid: str, status: dict[str, Any]) -> bool:
        """Merge ``status`` into the job's; False when the job is gone (or another one of that name)."""
        client = self._clients[worker]
        while True:
            try:
                job = await client.get(JOB, name, namespace=self._namespace)
                if job["metadata"].get("uid") != uid:
                    return False
                if job.get("spec", {}).get("suspend") is True:
                    return False  # stopped meanwhile (an eviction): the pod is gone, nothing to finish
                current = job.get("status") or {}
                # startTime is set once (the API server refuses to change it)
                job["status"] = {
                    **current,
                    **status,
                    "startTime": current.get("startTime") or status["startTime"],
                }
                await client.update_status(JOB, job, namespace=self._namespace)
                return True
            except NotFound:
                return False
            except Conflict:
                continue
            except TRANSIENT:
                await asyncio.sleep(1.0)  # the worker is down: its job will run on when it is back

    async def _run(self, worker: str, name: str, uid: str) -> None:
        if not await self._write(worker, name, uid, job_status_running(now=_now())):
            return
        await asyncio.sleep(self._run_seconds)  # the pod's run time
        if await self._write(worker, name, uid, job_status_succeeded(now=_now())):
            self.completed.setdefault(name, []).append(worker)

    async def aclose(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError):
                await task


@dataclass
class _Cpu:
    """CPU seconds per process label, across restarts of a process. A process counts with its
    descendants, except this benchmark's (``bench``): our components are its children, counted
    under their own labels."""

    pids: dict[str, int]
    spent: dict[str, float] = field(default_factory=dict)
    base: dict[str, float] = field(default_factory=dict)

    @staticmethod
    def seconds(label: str, pid: int) -> float:
        return cpu_seconds(pid, descendants=label != "bench")

    def start(self) -> None:
        self.base = {label: self.seconds(label, pid) for label, pid in self.pids.items()}
        self.spent = dict.fromkeys(self.pids, 0.0)

    def replaced(self, label: str, old_pid_cpu: float, new_pid: int) -> None:
        self.spent[label] += old_pid_cpu - self.base.get(label, 0.0)
        self.pids[label], self.base[label] = new_pid, 0.0

    def total(self) -> dict[str, float]:
        return {
            label: self.spent.get(label, 0.0) + self.seconds(label, pid) - self.base.get(label, 0.0)
            for label, pid in self.pids.items()
        }


@dataclass(frozen=True)
class Phase:
    """One part of a round on its fleet: ``jobs`` created in ``namespace`` (its own queues), at ``rate``
    per second (0: all at once), with the chaos options applied or not. ``name`` is empty for a
    round of one phase."""

    name: str
    namespace: str
    jobs: int
    rate: float
    chaos: bool


def phases(args: argparse.Namespace) -> list[Phase]:
    """The phases of a round: ``--scenario round`` is one phase (``--jobs`` at ``--rate``, the chaos
    options); ``steady-burst`` is ``--steady-jobs`` at ``--steady-rate`` without chaos (the dispatch
    latency of a system that keeps up), then ``--jobs`` at once with the chaos options (the
    throughput of a burst, a worker taken away during it), each in its own namespace."""
    if args.scenario == "steady-burst":
        return [
            Phase("steady", f"{NAMESPACE}-steady", args.steady_jobs, args.steady_rate, chaos=False),
            Phase("burst", f"{NAMESPACE}-burst", args.jobs, 0.0, chaos=True),
        ]
    return [Phase("", NAMESPACE, args.jobs, args.rate, chaos=True)]


@dataclass
class RoundOutcome:
    """Per phase name, the samples of a phase that passed its checks (``bench.multikueue_measure.report``
    plus ``rate``: the burst throughput) and the CPU seconds per process; the fleet's peak resident
    memory in bytes, total and per kind of process; whether every check passed."""

    samples: dict[str, dict[str, list[float]]]
    cpu: dict[str, dict[str, float]]
    rss_peak: int
    rss_by_kind: dict[str, int]
    ok: bool


class _RssSampler:
    """The peak of the fleet's resident memory (every process of :meth:`RealFleet.processes` with
    its descendants, and this process alone: our components are its children, counted under their
    own labels), sampled every ``every`` seconds."""

    def __init__(self, fleet: RealFleet, *, every: float = 2.0) -> None:
        self._fleet = fleet
        self._every = every
        self.peak = 0
        self.by_kind: dict[str, int] = {}

    def sample(self) -> int:
        by_kind: dict[str, int] = {"this bench": rss_bytes(os.getpid(), descendants=False)}
        for label, pid in self._fleet.processes().items():
            kind = label.split(" ", 1)[-1]
            by_kind[kind] = by_kind.get(kind, 0) + rss_bytes(pid)
        total = sum(by_kind.values())
        if total > self.peak:
            self.peak, self.by_kind = total, by_kind
        return total

    async def run(self) -> None:
        while True:
            await asyncio.to_thread(self.sample)
            await asyncio.sleep(self._every)


def _mb(value: int) -> str:
    return f"{value / 2**20:.0f} MB"


async def _kill_and_restart(fleet: RealFleet, cpu: _Cpu, say: Callable[[str], None]) -> None:
    component = fleet.multikueue
    assert component is not None and component.pid is not None
    old = component.pid
    used = cpu_seconds(old)
    await fleet.kill_multikueue()
    await fleet.start_multikueue()
    assert component.pid is not None
    cpu.replaced("manager multikueue", used, component.pid)
    say(f"kill -9 multikueue (pid {old}); restarted as pid {component.pid}")


async def _when_dispatched(observed: Observed, fraction: float, jobs: int) -> None:
    while len(observed.remote_job) < fraction * jobs and not observed.all_finished.is_set():
        observed.dispatched_more.clear()
        await observed.dispatched_more.wait()


async def _chaos(fleet: RealFleet, observed: Observed, args: argparse.Namespace, cpu: _Cpu) -> None:
    def say(message: str) -> None:
        print(f"  [{len(observed.remote_job)}/{args.jobs} dispatched] {message}", flush=True)

    for fraction in args.kill_at:
        await _when_dispatched(observed, fraction, args.jobs)
        await _kill_and_restart(fleet, cpu, say)
    if args.worker_down_at is None:
        return
    await _when_dispatched(observed, args.worker_down_at, args.jobs)
    down: RealCluster = fleet.workers["w1"].cluster
    # its kube-apiserver and etcd are new processes once started again: count both lives
    stopping = {label: pid for label, pid in cpu.pids.items() if label.startswith("w1 ")}
    used = {label: cpu_seconds(pid) for label, pid in stopping.items()}
    await asyncio.to_thread(down.stop_apiserver)
    say("w1's kube-apiserver stopped")
    if args.kill_while_down:
        await asyncio.sleep(args.down_seconds / 2)  # the outage lasts that long: chaos pacing, not a wait
        await _kill_and_restart(fleet, cpu, say)
        await asyncio.sleep(args.down_seconds / 2)
    else:
        await asyncio.sleep(args.down_seconds)
    await asyncio.to_thread(down.start_apiserver)
    restarted = fleet.processes()
    for label, pid in stopping.items():
        if restarted.get(label, pid) != pid:
            cpu.replaced(label, used[label], restarted[label])
    say("w1's kube-apiserver started again")


async def _leftovers(
    fleet: RealFleet, clients: dict[str, KubeClient], *, namespace: str, within: float
) -> dict[str, int]:
    """Poll the workers until none holds a Workload or Job of the round; what is left at the deadline."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        left: dict[str, int] = {}
        for name in fleet.workers:
            with contextlib.suppress(KubeError):
                count = 0
                for gvk in (WORKLOAD, JOB):
                    count += len((await clients[name].list(gvk, namespace=namespace))["items"])
                if count:
                    left[name] = count
        if not left or loop.time() > deadline:
            return left
        await asyncio.sleep(1.0)


async def _cancel(tasks: list[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def _multikueue_passes(fleet: RealFleet) -> str:
    """What our multikueue's Workload controller did (its Prometheus counters, read before it stops;
    after a ``kill -9``, the last process's alone): passes by outcome, conflicts, mean wait in the
    queue and mean pass, API requests to the manager."""
    component = fleet.multikueue
    if component is None or component.health_url is None or not component.running:
        return ""
    url = component.health_url.rsplit("/", 1)[0] + "/metrics"
    try:
        async with httpx.AsyncClient(timeout=10.0) as http:
            text = (await http.get(url)).text
    except httpx.HTTPError as exc:
        return f"multikueue metrics not read: {exc}"
    outcomes: dict[str, float] = {}
    sums: dict[str, float] = {}
    requests = 0.0
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = sample.labels
            if sample.name.endswith("rest_client_requests_total"):
                requests += sample.value
            if labels.get("controller", labels.get("name")) != "multikueue_workload":
                continue
            if sample.name.endswith("controller_runtime_reconcile_total"):
                outcomes[labels.get("result", "?")] = sample.value
            for key in _PASS_FIGURES:
                if sample.name.endswith(key):
                    sums[key] = sums.get(key, 0.0) + sample.value

    def mean(key: str) -> str:
        count = sums.get(f"{key}_count", 0.0)
        return f"{1000 * sums.get(f'{key}_sum', 0.0) / count:.0f} ms" if count else "n/a"

    passes = ", ".join(f"{result} {value:.0f}" for result, value in sorted(outcomes.items()))
    return (
        f"multikueue's Workload controller (pid {component.pid}, since it started): "
        f"{sum(outcomes.values()):.0f} passes ({passes}), "
        f"{sums.get('reconcile_conflicts_total', 0.0):.0f} conflicts; mean wait in the queue "
        f"{mean('queue_duration_seconds')}, mean pass {mean('work_duration_seconds')}; "
        f"{requests:.0f} API requests to the manager (its clients of the workers keep no metrics)"
    )


_PASS_FIGURES = (
    "reconcile_conflicts_total",
    "queue_duration_seconds_sum",
    "queue_duration_seconds_count",
    "work_duration_seconds_sum",
    "work_duration_seconds_count",
)


def _bench_client(path: Path) -> KubeClient:
    return KubeClient.from_connection(load_kubeconfig(path), settings=ClientSettings(qps=5000, burst=5000))


async def real_round(
    args: argparse.Namespace, *, kit: Kit, root: Path, anchor: Dispatcher, label: str
) -> RoundOutcome:
    """One round on a fresh fleet of ``--workers`` workers, its phases one after the other; prints
    their figures and checks, and the fleet's resident memory."""
    settings = FleetSettings(
        kueue_version=args.kueue_version,
        workers=args.workers,
        dispatcher=anchor,
        gc_interval=args.gc_interval,
        worker_lost_timeout=args.worker_lost_timeout,
    )
    started_fleet = time.monotonic()
    outcome = RoundOutcome(samples={}, cpu={}, rss_peak=0, rss_by_kind={}, ok=True)
    async with contextlib.AsyncExitStack() as stack:
        quiet = io.StringIO()
        fleet = await start_real_fleet(stack, kit=kit, root=root, settings=settings, label=label, out=quiet)
        who = "kueue-bridge multikueue" if anchor == "bridge" else "Kueue's own MultiKueue"
        rss = _RssSampler(fleet)
        idle = await asyncio.to_thread(rss.sample)
        print(
            f"fleet ({who}, Kueue {args.kueue_version}, {args.workers} workers) ready in "
            f"{time.monotonic() - started_fleet:.0f} s, resident memory {_mb(idle)}; state in {root}",
            flush=True,
        )
        sampler = asyncio.create_task(rss.run())
        stack.push_async_callback(_cancel, [sampler])
        clients = {member.name: _bench_client(member.cluster.kubeconfig) for member in fleet.members}
        for client in clients.values():
            stack.push_async_callback(client.aclose)
        for phase in phases(args):
            if phase.name:
                print(f"-- phase {phase.name}", flush=True)
            phase_args = argparse.Namespace(**{**vars(args), "jobs": phase.jobs, "rate": phase.rate})
            if not phase.chaos:
                phase_args.kill_at, phase_args.worker_down_at = [], None
            samples, cpu, ok = await _phase(fleet, clients, phase_args, namespace=phase.namespace)
            outcome.ok = outcome.ok and ok
            outcome.cpu[phase.name] = cpu
            if ok:
                outcome.samples[phase.name] = samples
        await _cancel([sampler])
        outcome.rss_peak, outcome.rss_by_kind = rss.peak, rss.by_kind
        kinds = sorted(rss.by_kind.items(), key=lambda item: -item[1])
        print(
            f"fleet resident memory, peak of samples every 2 s: {_mb(rss.peak)} "
            f"({', '.join(f'{kind} {_mb(value)}' for kind, value in kinds)})",
            flush=True,
        )
    return outcome


async def _phase(
    fleet: RealFleet, clients: dict[str, KubeClient], args: argparse.Namespace, *, namespace: str
) -> tuple[dict[str, list[float]], dict[str, float], bool]:
    """One phase on the running fleet: its queues, its jobs, its watches; prints its figures and
    checks. Its samples, the CPU seconds per process and whether its checks passed."""
    async with contextlib.AsyncExitStack() as stack:
        await fleet.queues(namespace, cpu=str(args.jobs))
        observed = Observed(args.jobs, namespace=namespace)
        runner = JobRunner(
            {name: clients[name] for name in fleet.workers},
            run_seconds=args.run_seconds,
            namespace=namespace,
        )
        stack.push_async_callback(runner.aclose)
        observed.on_worker_job = runner.seen
        watches = [
            asyncio.create_task(observed.manager_workloads(clients["manager"])),
            asyncio.create_task(observed.manager_jobs(clients["manager"])),
            *(asyncio.create_task(observed.worker_jobs(clients[name], name)) for name in fleet.workers),
            *(asyncio.create_task(observed.worker_workloads(clients[name])) for name in fleet.workers),
        ]
        stack.push_async_callback(_cancel, watches)  # before the clusters stop, also on Ctrl-C
        await asyncio.sleep(2)  # this process's watches are established before the first job
        cpu = _Cpu({**fleet.processes(), "bench": os.getpid()})
        load_before = load()
        cpu.start()
        started = time.monotonic()
        chaos = asyncio.create_task(_chaos(fleet, observed, args, cpu))
        await submit(clients["manager"], args, started, namespace=namespace)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(observed.all_finished.wait(), args.timeout)
        wall = time.monotonic() - started
        spent = cpu.total()
        if observed.all_finished.is_set():
            # every round gets the whole outage, w1 back included, even when the last jobs finished
            # on w2 while w1 was down (a busy machine); only a round that timed out cuts it short
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(chaos), timeout=args.down_seconds + 120)
        if not chaos.done():
            chaos.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await chaos
        samples = report(
            observed,
            args,
            wall=wall,
            load_before=load_before,
            cpu=spent,
            dispatch_target=0.5,
            mirror_target=0.25,
        )
        dispatched = list(observed.remote_job.values())
        rate = dispatch_rate(dispatched, since=started, fraction=BURST_FRACTION)
        samples["rate"] = [rate]
        print(
            f"jobs dispatched per second, first job created on the manager -> "
            f"{BURST_FRACTION:.0%} of the jobs created on a worker: {rate:.1f} jobs/s; -> the last one: "
            f"{dispatch_rate(dispatched, since=started):.1f} jobs/s ({len(dispatched)} jobs)"
        )
        passes = await _multikueue_passes(fleet)
        if passes:
            print(passes)
        gc_seconds = parse_go_duration(args.gc_interval).total_seconds()
        left = await _leftovers(fleet, clients, namespace=namespace, within=2 * gc_seconds + 30)
        ok = _checks(observed, runner, left, args, gc_seconds)
    return samples, spent, ok


def verdicts(
    samples: dict[str, list[dict[str, dict[str, list[float]]]]],
    rss: dict[str, list[int]],
    checks: dict[str, list[bool]],
    *,
    p99_target: float,
    ratio_target: float,
    rss_limit: int,
) -> list[str]:
    """The ``steady-burst`` targets, PASS or MISS, from every anchor's rounds (``samples[anchor]``: per
    round, the phases that passed their checks): kueue-bridge's steady dispatch p99 (median over the
    rounds) within ``p99_target`` seconds; its burst throughput at least ``ratio_target`` times Kueue's
    MultiKueue's (medians); every fleet's peak resident memory within ``rss_limit`` bytes; every
    round's checks passed. A figure no round produced is a MISS, never a PASS."""

    def median(anchor: str, phase: str, figure: Callable[[list[float]], float], key: str) -> float | None:
        values = [figure(r[phase][key]) for r in samples.get(anchor, []) if r.get(phase, {}).get(key)]
        return statistics.median(values) if values else None

    def verdict(passed: bool) -> str:
        return "PASS" if passed else "MISS"

    def ms(value: float | None) -> str:
        return "n/a" if value is None else f"{value * 1000:.0f} ms"

    def per_second(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.1f} jobs/s"

    anchors = list(samples)
    p99 = {a: median(a, "steady", lambda v: percentile(v, 0.99), "dispatch") for a in anchors}
    p50 = {a: median(a, "steady", lambda v: percentile(v, 0.5), "dispatch") for a in anchors}
    rate = {a: median(a, "burst", lambda v: v[0], "rate") for a in anchors}
    ours, ours_rate, theirs = p99.get("bridge"), rate.get("bridge"), rate.get("kueue")
    ratio = ours_rate / theirs if ours_rate is not None and theirs else None
    peaks = {a: max(rss.get(a) or [0]) for a in anchors}
    every_check = [passed for a in anchors for passed in checks.get(a, [])]
    return [
        "targets (median over rounds; dispatch latency = QuotaReserved on the manager -> job created "
        f"on a worker; burst throughput = jobs/s until {BURST_FRACTION:.0%} of them were created on a worker):",
        "  steady dispatch p50/p99: "
        + ", ".join(f"{a} {ms(p50[a])}/{ms(p99[a])}" for a in anchors)
        + f"; kueue-bridge p99 <= {p99_target * 1000:.0f} ms: "
        + verdict(ours is not None and ours <= p99_target),
        "  burst throughput: "
        + ", ".join(f"{a} {per_second(rate[a])}" for a in anchors)
        + f"; kueue-bridge >= {ratio_target:g}x Kueue's MultiKueue: "
        + ("n/a, " if ratio is None else f"{ratio:.1f}x, ")
        + verdict(ratio is not None and ratio >= ratio_target),
        "  fleet resident memory, peak: "
        + ", ".join(f"{a} {peaks[a] / 2**20:.0f} MB" for a in anchors)
        + f"; each <= {rss_limit / 2**20:.0f} MB: "
        + verdict(bool(anchors) and all(0 < peak <= rss_limit for peak in peaks.values())),
        f"  checks (every job finished once, none on two workers, nothing left): "
        f"{sum(every_check)} of {len(every_check)} rounds passed: "
        + verdict(bool(every_check) and all(every_check)),
    ]


def _checks(
    observed: Observed, runner: JobRunner, left: dict[str, int], args: argparse.Namespace, gc_seconds: float
) -> bool:
    """The round's reliability verdict, printed line by line: every job finished, and ran once."""
    finished = len(observed.finished)
    twice = {name: workers for name, workers in runner.completed.items() if len(workers) > 1}
    together = observed.on_two_workers()
    moved = observed.ever_on_workers()
    # nothing evicts in a round: a job may go to another worker only after its worker was lost
    # past workerLostTimeout (a re-dispatch); otherwise a second worker is a job started twice
    lost = parse_go_duration(args.worker_lost_timeout).total_seconds()
    may_move = args.worker_down_at is not None and args.down_seconds > lost
    lines = [
        f"check: {finished} of {args.jobs} jobs finished; completed on two workers: {len(twice)}"
        + (f" {sorted(twice)[:5]}" if twice else ""),
        f"check: jobs on two workers at the same time: {len(together)}"
        + (f" {sorted(together)[:5]}" if together else ""),
        f"check: jobs created on a second worker, one after the other: {len(moved)}"
        + (f" {sorted(moved)[:5]}" if moved else "")
        + (" (allowed: w1 was down past workerLostTimeout)" if may_move else ""),
        f"check: copies and jobs left on the workers within {2 * gc_seconds + 30:.0f} s of the last finish "
        f"(gcInterval {args.gc_interval}): {sum(left.values())}" + (f" {left}" if left else ""),
    ]
    ok = finished == args.jobs and not twice and not together and (may_move or not moved) and not left
    lines.append(f"check: {'passed' if ok else 'FAILED'}")
    print("\n".join(lines), flush=True)
    return ok
