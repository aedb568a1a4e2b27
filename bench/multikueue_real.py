"""``python -m bench.multikueue_dispatch --real``: the MultiKueue benchmark on three real API servers, and its chaos.

A round starts a fresh fleet with ``devrun.real_fleet`` (a manager and workers ``w1``, ``w2``: the
kit's kube-apiserver 1.36 and the real Kueue manager on each, our webhook and reconciler on each),
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

The CPU seconds of every process (the three kube-apiservers, etcds and Kueue managers, our components,
this process) are read from ``/proc`` around the round; a process killed during the round counts up
to its end and its replacement from its start.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import io
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from bench.multikueue_measure import JOB, NAMESPACE, WORKLOAD, Observed, load, report, submit
from devrun import (
    Dispatcher,
    FleetSettings,
    Kit,
    RealCluster,
    RealFleet,
    cpu_seconds,
    job_status_running,
    job_status_succeeded,
    start_real_fleet,
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

__all__ = ["JobRunner", "RoundOutcome", "real_round"]

#: what a write to a worker that is down or restarting answers
TRANSIENT = (TransportError, ServerTimeout, ServiceUnavailable, TooManyRequests, InternalError)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class JobRunner:
    """The job controller of the workers: a started Job runs one pod, which succeeds ``run_seconds``
    later. Every status write is retried until it lands (the worker may be down for a while)."""

    def __init__(self, clients: dict[str, KubeClient], *, run_seconds: float) -> None:
        self._clients = clients
        self._run_seconds = run_seconds
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
                job = await client.get(JOB, name, namespace=NAMESPACE)
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
                await client.update_status(JOB, job, namespace=NAMESPACE)
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
    """CPU seconds per process label, across restarts of a process."""

    pids: dict[str, int]
    spent: dict[str, float] = field(default_factory=dict)
    base: dict[str, float] = field(default_factory=dict)

    def start(self) -> None:
        self.base = {label: cpu_seconds(pid) for label, pid in self.pids.items()}
        self.spent = dict.fromkeys(self.pids, 0.0)

    def replaced(self, label: str, old_pid_cpu: float, new_pid: int) -> None:
        self.spent[label] += old_pid_cpu - self.base.get(label, 0.0)
        self.pids[label], self.base[label] = new_pid, 0.0

    def total(self) -> dict[str, float]:
        return {
            label: self.spent.get(label, 0.0) + cpu_seconds(pid) - self.base.get(label, 0.0)
            for label, pid in self.pids.items()
        }


@dataclass
class RoundOutcome:
    samples: dict[str, list[float]] | None
    cpu: dict[str, float]
    ok: bool


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
    await asyncio.sleep(args.down_seconds / 2)  # the outage lasts that long: chaos pacing, not a wait
    await _kill_and_restart(fleet, cpu, say)
    await asyncio.sleep(args.down_seconds / 2)
    await asyncio.to_thread(down.start_apiserver)
    restarted = fleet.processes()
    for label, pid in stopping.items():
        if restarted.get(label, pid) != pid:
            cpu.replaced(label, used[label], restarted[label])
    say("w1's kube-apiserver started again")


async def _leftovers(fleet: RealFleet, clients: dict[str, KubeClient], *, within: float) -> dict[str, int]:
    """Poll the workers until none holds a Workload or Job of the round; what is left at the deadline."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        left: dict[str, int] = {}
        for name in fleet.workers:
            with contextlib.suppress(KubeError):
                count = 0
                for gvk in (WORKLOAD, JOB):
                    count += len((await clients[name].list(gvk, namespace=NAMESPACE))["items"])
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
    """One round on a fresh fleet; prints its figures and checks."""
    settings = FleetSettings(
        kueue_version=args.kueue_version,
        dispatcher=anchor,
        gc_interval=args.gc_interval,
        worker_lost_timeout=args.worker_lost_timeout,
    )
    started_fleet = time.monotonic()
    async with contextlib.AsyncExitStack() as stack:
        quiet = io.StringIO()
        fleet = await start_real_fleet(stack, kit=kit, root=root, settings=settings, label=label, out=quiet)
        who = "kueue-bridge multikueue" if anchor == "bridge" else "Kueue's own MultiKueue"
        print(
            f"fleet ({who}, "
            f"Kueue {args.kueue_version}) ready in {time.monotonic() - started_fleet:.0f} s; state in {root}",
            flush=True,
        )
        await fleet.queues(NAMESPACE, cpu=str(args.jobs))
        clients = {member.name: _bench_client(member.cluster.kubeconfig) for member in fleet.members}
        for client in clients.values():
            stack.push_async_callback(client.aclose)
        observed = Observed(args.jobs)
        runner = JobRunner({name: clients[name] for name in fleet.workers}, run_seconds=args.run_seconds)
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
        await submit(clients["manager"], args, started)
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
        passes = await _multikueue_passes(fleet)
        if passes:
            print(passes)
        gc_seconds = parse_go_duration(args.gc_interval).total_seconds()
        left = await _leftovers(fleet, clients, within=2 * gc_seconds + 30)
        ok = _checks(observed, runner, left, args, gc_seconds)
    return RoundOutcome(samples=samples if ok else None, cpu=spent, ok=ok)


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
