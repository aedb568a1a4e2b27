"""What a MultiKueue benchmark round submits, watches and prints, whatever the clusters are.

``bench.multikueue_dispatch`` runs rounds on three devclusters or (``--real``, ``bench.multikueue_real``)
on three real API servers; both submit the same batch Jobs on the manager (:func:`submit`), watch
the same objects from this process (:class:`Observed`: the manager's Workloads and Jobs, every
worker's copies and Jobs, each event stamped with this process's monotonic clock) and print the
same figures (:func:`report`, :func:`summary`): admission on the manager's quota -> job created on
a worker, split into MultiKueue's and the worker's parts, and a worker job's ``Complete`` -> the
manager job's, as p50/p99/max against a target, with the rates, the load average and the CPU
seconds of every process.

:class:`Observed` also keeps, per job, when it existed on which worker (``presence``), so a round
can say whether a job was ever on two workers at the same time.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import statistics
import time
from collections.abc import Callable
from typing import Any, Final

from bench.harness.load import queued_job
from shared.constants import WORKLOAD_GVK
from shared.kube import JOB_GVK, EventType, KubeClient, Watch

__all__ = [
    "JOB",
    "NAMESPACE",
    "PREBUILT",
    "WORKLOAD",
    "Observed",
    "active",
    "between",
    "complete",
    "dispatch_rate",
    "figures",
    "job",
    "load",
    "percentile",
    "report",
    "submit",
    "summary",
]

JOB: Final = JOB_GVK
WORKLOAD: Final = WORKLOAD_GVK
NAMESPACE: Final = "bench"
PREBUILT: Final = "kueue.x-k8s.io/prebuilt-workload-name"


async def submit(
    client: KubeClient, args: argparse.Namespace, started: float, *, namespace: str = NAMESPACE
) -> None:
    """Create the jobs on the manager, in ``namespace``: all at once (32 requests in flight), or one
    every ``1 / --rate`` seconds from ``started`` (a steady arrival rate, for latency below saturation)."""
    names = [f"j{index:04d}" for index in range(args.jobs)]
    if args.rate <= 0:
        for batch in range(0, len(names), 32):
            await asyncio.gather(
                *(
                    client.create(JOB, job(name, args.run_seconds, namespace=namespace), namespace=namespace)
                    for name in names[batch : batch + 32]
                )
            )
        return
    pending: set[asyncio.Task[Any]] = set()
    for index, name in enumerate(names):
        delay = started + index / args.rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)  # pacing the load generator, not waiting for a result
        task = asyncio.create_task(
            client.create(JOB, job(name, args.run_seconds, namespace=namespace), namespace=namespace)
        )
        pending.add(task)
        task.add_done_callback(pending.discard)
    await asyncio.gather(*pending)


def job(name: str, run_seconds: float, *, namespace: str = NAMESPACE) -> dict[str, Any]:
    """A queued batch Job for MultiKueue (suspended, ``managedBy`` set), 100m CPU; the devcluster's
    job runner completes it ``run_seconds`` after it starts (the real rounds' runner reads it too)."""
    return queued_job(
        name,
        queue="q",
        cpu="100m",
        container="c",
        namespace=namespace,
        run_seconds=run_seconds,
        spec={"suspend": True, "managedBy": "kueue.x-k8s.io/multikueue"},
    )


def complete(obj: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "Complete" and c.get("status") == "True"
        for c in (obj.get("status") or {}).get("conditions") or []
    )


def active(obj: dict[str, Any]) -> bool:
    return bool(((obj.get("status") or {}).get("active") or 0) > 0)


def prebuilt_name(obj: dict[str, Any]) -> str:
    metadata = obj.get("metadata") or {}
    return str(
        (metadata.get("annotations") or {}).get(PREBUILT)
        or (metadata.get("labels") or {}).get(PREBUILT)
        or ""
    )


class Observed:
    """What this process's watches saw in ``namespace``, and when (monotonic seconds)."""

    def __init__(self, expected: int, *, namespace: str = NAMESPACE) -> None:
        self.expected = expected
        self.namespace = namespace
        self.all_finished = asyncio.Event()
        self.reserved: dict[str, float] = {}  # manager Workload name -> QuotaReserved seen
        self.finished: set[str] = set()  # manager Workloads Finished
        self.copy: dict[str, float] = {}  # Workload name -> first copy seen on a worker
        self.copy_admitted: dict[str, float] = {}  # Workload name -> a copy seen Admitted
        self.remote_job: dict[str, float] = {}  # prebuilt Workload name -> job seen on a worker
        self.remote_complete: dict[str, float] = {}  # job name -> Complete seen on a worker
        self.local_complete: dict[str, float] = {}  # job name -> Complete seen on the manager
        self.remote_active: dict[str, float] = {}  # job name -> status.active > 0 seen on a worker
        self.local_active: dict[str, float] = {}  # job name -> status.active > 0 seen on the manager
        #: job name -> worker -> [seen, gone] intervals of the job's existence there (``gone`` None: still)
        self.presence: dict[str, dict[str, list[list[float | None]]]] = {}
        #: set whenever a job is first seen on a worker (and when every Workload finished)
        self.dispatched_more = asyncio.Event()
        #: called with (worker, job) for every event of a worker's job (a job runner's trigger)
        self.on_worker_job: Callable[[str, dict[str, Any]], None] | None = None

    async def manager_workloads(self, client: KubeClient) -> None:
        async for event in Watch(client, WORKLOAD, namespace=self.namespace).events():
            if event.type not in (EventType.ADDED, EventType.MODIFIED):
                continue
            name = event.object["metadata"]["name"]
            conditions = {
                c.get("type"): c.get("status")
                for c in (event.object.get("status") or {}).get("conditions") or []
            }
            if conditions.get("QuotaReserved") == "True":
                self.reserved.setdefault(name, time.monotonic())
            if conditions.get("Finished") == "True":
                self.finished.add(name)
                if len(self.finished) >= self.expected:
                    self.all_finished.set()
                    self.dispatched_more.set()

    async def manager_jobs(self, client: KubeClient) -> None:
        async for event in Watch(client, JOB, namespace=self.namespace).events():
            if event.type not in (EventType.ADDED, EventType.MODIFIED):
                continue
            name = event.object["metadata"]["name"]
            if active(event.object):
                self.local_active.setdefault(name, time.monotonic())
            if complete(event.object):
                self.local_complete.setdefault(name, time.monotonic())

    async def worker_workloads(self, client: KubeClient) -> None:
        async for event in Watch(client, WORKLOAD, namespace=self.namespace).events():
            if event.type not in (EventType.ADDED, EventType.MODIFIED):
                continue
            name = event.object["metadata"]["name"]
            self.copy.setdefault(name, time.monotonic())
            conditions = (event.object.get("status") or {}).get("conditions") or []
            if any(c.get("type") == "Admitted" and c.get("status") == "True" for c in conditions):
                self.copy_admitted.setdefault(name, time.monotonic())

    async def worker_jobs(self, client: KubeClient, worker: str = "") -> None:
        async for event in Watch(client, JOB, namespace=self.namespace).events():
            if event.type not in (EventType.ADDED, EventType.MODIFIED, EventType.DELETED):
                continue
            now = time.monotonic()
            metadata = event.object["metadata"]
            intervals = self.presence.setdefault(metadata["name"], {}).setdefault(worker, [])
            if event.type is EventType.DELETED:
                if intervals and intervals[-1][1] is None:
                    intervals[-1][1] = now
                continue
            if not intervals or intervals[-1][1] is not None:
                intervals.append([now, None])
            prebuilt = prebuilt_name(event.object)
            if prebuilt and prebuilt not in self.remote_job:
                self.remote_job[prebuilt] = now
                self.dispatched_more.set()
            if active(event.object):
                self.remote_active.setdefault(metadata["name"], now)
            if complete(event.object):
                self.remote_complete.setdefault(metadata["name"], now)
            if self.on_worker_job is not None:
                self.on_worker_job(worker, event.object)

    def on_two_workers(self) -> dict[str, list[str]]:
        """Jobs that existed on two workers at the same time (as this process's watches saw it):
        job name -> the workers."""
        found: dict[str, list[str]] = {}
        for name, workers in self.presence.items():
            spans = [
                (worker, start, end) for worker, intervals in workers.items() for start, end in intervals
            ]
            for index, (worker, start, end) in enumerate(spans):
                for other, other_start, other_end in spans[index + 1 :]:
                    if other == worker:
                        continue
                    if (end is None or other_start is None or other_start < end) and (
                        other_end is None or start is None or start < other_end
                    ):
                        found[name] = sorted({worker, other})
        return found

    def ever_on_workers(self) -> dict[str, list[str]]:
        """Jobs that were on more than one worker during the round (one after the other: a re-dispatch)."""
        return {name: sorted(workers) for name, workers in self.presence.items() if len(workers) > 1}


def throughput(observed: Observed) -> str:
    """How fast the manager reserved quota and how fast jobs reached a worker, first to last."""

    def rate(times: list[float]) -> str:
        if len(times) < 2 or times[-1] <= times[0]:
            return "n/a"
        return f"{(len(times) - 1) / (times[-1] - times[0]):.0f} jobs/s over {times[-1] - times[0]:.1f} s"

    reserved, dispatched = sorted(observed.reserved.values()), sorted(observed.remote_job.values())
    return f"quota reserved on the manager: {rate(reserved)}; jobs created on a worker: {rate(dispatched)}"


def dispatch_rate(dispatched: list[float], *, since: float, fraction: float = 1.0) -> float:
    """Jobs per second from ``since`` (the first job's creation on the manager) until the first
    ``fraction`` of ``dispatched`` (the moments jobs were created on a worker) was reached: a burst's
    throughput, whatever it went through (a worker down, retries). 0 when nothing was dispatched.

    A ``fraction`` below 1 leaves out the last jobs, which in a round with a worker taken away are
    those whose copy that worker had admitted before it went: they wait for it whoever dispatches."""
    ordered = sorted(dispatched)
    count = math.ceil(fraction * len(ordered))
    if count == 0 or ordered[count - 1] <= since:
        return 0.0
    return count / (ordered[count - 1] - since)


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def figures(label: str, values: list[float], target: float) -> str:
    if not values:
        return f"{label}: no samples"
    ms = [v * 1000 for v in values]
    p99 = percentile(ms, 0.99)
    verdict = "meets" if p99 <= target * 1000 else "misses"
    return (
        f"{label}: p50 {percentile(ms, 0.5):.0f} ms, p99 {p99:.0f} ms, max {max(ms):.0f} ms "
        f"({len(ms)} samples; {verdict} the p99 <= {target * 1000:.0f} ms target)"
    )


def load() -> str:
    return "/".join(f"{value:.1f}" for value in os.getloadavg())


def between(start: dict[str, float], end: dict[str, float]) -> list[float]:
    return [end[name] - at for name, at in start.items() if name in end]


def multikueue_own_steps(observed: Observed) -> list[float]:
    """Per job, seconds spent in MultiKueue's steps of the dispatch: quota reserved -> first copy,
    plus copy Admitted -> job created; the worker's admission between them is the worker's Kueue."""
    own = []
    for name, reserved in observed.reserved.items():
        try:
            own.append(
                (observed.copy[name] - reserved) + (observed.remote_job[name] - observed.copy_admitted[name])
            )
        except KeyError:
            continue  # not seen at every step
    return own


def report(
    observed: Observed,
    args: argparse.Namespace,
    *,
    wall: float,
    load_before: str,
    cpu: dict[str, float],
    dispatch_target: float,
    mirror_target: float,
) -> dict[str, list[float]]:
    """Print a round's figures; returns their samples (for :func:`summary`)."""
    dispatch = between(observed.reserved, observed.remote_job)
    submitted = "all at once" if args.rate <= 0 else f"at {args.rate:g} jobs/s"
    mirror = between(observed.remote_complete, observed.local_complete)
    print(
        f"{args.jobs} jobs ({submitted}), {args.run_seconds} s each, {getattr(args, 'workers', 2)} workers: "
        f"{len(observed.finished)} finished in {wall:.1f} s"
    )
    print(throughput(observed))
    print(f"load average (1/5/15 min) before {load_before}, after {load()}")
    print("CPU seconds in that time: " + ", ".join(f"{name} {value:.1f}" for name, value in cpu.items()))
    print(figures("admission on the manager -> job on the winning worker", dispatch, dispatch_target))
    parts = {
        "  of which: quota reserved -> first copy on a worker": (observed.reserved, observed.copy),
        "  of which: first copy -> a copy Admitted (the worker's Kueue)": (
            observed.copy,
            observed.copy_admitted,
        ),
        "  of which: copy Admitted -> job created there (MultiKueue)": (
            observed.copy_admitted,
            observed.remote_job,
        ),
    }
    for label, (start, end) in parts.items():
        values = between(start, end)
        if values:
            ms = [v * 1000 for v in values]
            print(f"{label}: p50 {percentile(ms, 0.5):.0f} ms, p99 {percentile(ms, 0.99):.0f} ms")
    own = multikueue_own_steps(observed)
    if own:
        print(
            figures(
                "  MultiKueue's own steps, per job (the two MultiKueue parts added)", own, dispatch_target
            )
        )
    print(figures("remote status change (Complete) -> manager job status", mirror, mirror_target))
    started_mirror = between(observed.remote_active, observed.local_active)
    if started_mirror:
        ms = [v * 1000 for v in started_mirror]
        print(
            f"  beside it: remote job active -> manager job active (waits for the manager's admission): "
            f"p50 {percentile(ms, 0.5):.0f} ms, p99 {percentile(ms, 0.99):.0f} ms"
        )
    return {"dispatch": dispatch, "own": own, "mirror": mirror, "wall": [wall]}


def summary(rounds: list[dict[str, list[float]]], *, cpu: list[dict[str, float]] | None = None) -> list[str]:
    """Median and range over the rounds of each figure's p50 and p99 (and of the round's wall time
    and each process's CPU seconds, when given)."""
    lines = [f"over {len(rounds)} rounds (median, range):"]
    for key, label in (
        ("dispatch", "admission on the manager -> job on the winning worker"),
        ("own", "  of which MultiKueue's own steps, per job"),
        ("mirror", "remote status change (Complete) -> manager job status"),
    ):
        parts = []
        for name, fraction in (("p50", 0.5), ("p99", 0.99)):
            values = [percentile(r[key], fraction) * 1000 for r in rounds if r.get(key)]
            if values:
                parts.append(
                    f"{name} {statistics.median(values):.0f} ms ({min(values):.0f}-{max(values):.0f})"
                )
        if parts:
            lines.append(f"  {label}: {', '.join(parts)}")
    walls = [r["wall"][0] for r in rounds if r.get("wall")]
    if walls:
        lines.append(
            f"  wall time, first job created -> last Workload finished: {statistics.median(walls):.1f} s "
            f"({min(walls):.1f}-{max(walls):.1f})"
        )
    if cpu:
        names = list(cpu[0])
        cells = []
        for name in names:
            values = [round_cpu[name] for round_cpu in cpu if name in round_cpu]
            cells.append(f"{name} {statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f})")
        lines.append("  CPU seconds: " + ", ".join(cells))
    return lines
