"""Benchmark of the job reconciler on a devcluster: Workload creation throughput and start latency.

Prints, for ``--jobs`` queued batch/v1 Jobs (default 1,000):

* **burst -> Workloads**: a plain client process creates the Jobs in a burst (``--concurrency``
  parallel creates) while ``kueue-bridge reconciler`` runs (a real subprocess, as deployed);
  measured from the first create until the last Workload exists (seen through a watch). The
  reconciler creates each Workload, then writes its first status (``PodsReady`` WaitForStart) and
  a ``CreatedWorkload`` Event; how many of those were visible when the last Workload appeared is
  printed too.
* **ceiling**: in the same run, after the reconciler has stopped, a plain ``KubeClient`` loop in its
  own process makes *the same writes the burst window held*: the Job creates, one Workload create
  per Job, and as many status patches and Event creates as the watches saw in the window, at the
  same concurrency against the same server, with the same bench watches open. That is what the API
  server can take for that work; the ratio ``ceiling time / reconciler time`` (target >= 0.8) is
  therefore what the reconciler costs on top of the writes themselves (its informers' watches, its
  decisions, its scheduling). For comparison with earlier runs the figure for 1,000 Workload creates
  + 1,000 status patches alone (no Job creates, the first definition of the ceiling) is printed
  after it.
* **admission -> unsuspend**: each Workload is admitted by writing its status as Kueue's scheduler
  does; latency from just before the status write until the Job's ``spec.suspend`` is false in a
  watch, p50/p99/max (target p99 <= 200 ms), for a flood (``--admit-concurrency`` writes in flight,
  back to back) and at a steady ``--admit-rate``.

Processes: the devcluster (``kueue-bridge devcluster``, uvloop, as ``make dev`` runs it), the
reconciler, each client loop and this process (watches only) are separate, so no client shares the
API server's interpreter. Kueue's real CRDs come from ``../shared/crds/kueue``. Everything shares
two cores, so absolute numbers move with the machine; the ratio is the figure to watch. CPU seconds
used by the server and the reconciler in each window are printed to show which one was the limit.
The reconciler's client rate limit is raised (``--qps``) so the figure measures the reconciler, not
its limiter.

    .venv/bin/python -m bench.reconciler_throughput [--jobs 1000] [--concurrency 16] [--workers N] [--qps 5000]
    .venv/bin/python -m bench.reconciler_throughput --burst-only --profile /tmp/reconciler.prof
"""

from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bench.harness.clusters import bench_client, create_kueue_crds, devcluster_process
from bench.harness.load import queued_job
from bench.harness.processes import REPO_ROOT
from shared.constants import RESOURCE_FLAVOR_GVK, WORKLOAD_GVK
from shared.kube import (
    KubeClient,
)
from shared.kube.events import EVENTS_V1_EVENT
from shared.kube.kinds import JOB_GVK, NAMESPACE_GVK
from shared.kube.watch import EventType, Watch

__all__ = ["main"]

EVENT = EVENTS_V1_EVENT
SHARED = REPO_ROOT.parent / "shared"
KUEUE_CRDS = ("workloads", "resourceflavors", "workloadpriorityclasses")
POD_SPEC = {
    "restartPolicy": "Never",
    "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}],
}
NOW = "2026-11-22T00:00:00Z"
#: seconds a burst may take before the bench gives up and reports what it saw (a normal one: ~2 s)
BURST_TIMEOUT = 120.0


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far (Linux ``/proc``), all threads included."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def client_for(kubeconfig: Path) -> KubeClient:
    return bench_client(kubeconfig, qps=100000)


def job(name: str) -> dict[str, Any]:
    return queued_job(name, queue="q", cpu="100m", spec={"suspend": True})


def raw_workload(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 1, "template": {"spec": POD_SPEC}}]},
    }


async def bounded(concurrency: int, calls: list[Any]) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def one(call: Any) -> None:
        async with gate:
            await call()

    await asyncio.gather(*(one(call) for call in calls))


async def setup(kubeconfig: Path) -> None:
    async with client_for(kubeconfig) as client:
        await create_kueue_crds(client, SHARED, KUEUE_CRDS)
        for namespace in ("kueue-system", "bench", "ceiling", "narrow"):
            await client.create(NAMESPACE_GVK, {"metadata": {"name": namespace}})
        await client.create(RESOURCE_FLAVOR_GVK, {"metadata": {"name": "default"}})
        while True:
            try:
                await client.list(WORKLOAD_GVK, namespace="bench")
                return
            except Exception:
                await asyncio.sleep(0.05)


# --- plain client loops, each in its own process ---------------------------------------------------
#: the first status a Workload gets from the reconciler (and from the floor and the ceiling loops)
PODS_READY_WAIT_FOR_START: dict[str, str] = {
    "type": "PodsReady",
    "status": "False",
    "reason": "WaitForStart",
    "message": "Not all pods are ready or succeeded",
    "lastTransitionTime": NOW,
}


def pods_ready_patch(resource_version: str) -> dict[str, Any]:
    return {
        "metadata": {"resourceVersion": resource_version},
        "status": {"conditions": [dict(PODS_READY_WAIT_FOR_START)]},
    }


@dataclass(frozen=True)
class WriteMix:
    """What a plain client loop writes: per job index ``i < n`` of each count, in this order."""

    namespace: str
    jobs: int = 0
    workloads: int = 0
    status_patches: int = 0
    events: int = 0

    @property
    def size(self) -> int:
        return max(self.jobs, self.workloads, self.status_patches, self.events)

    @property
    def writes(self) -> int:
        return self.jobs + self.workloads + self.status_patches + self.events


def event_body(namespace: str, index: int, job_uid: str) -> dict[str, Any]:
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": f"raw-{index}.{index:08x}", "namespace": namespace},
        "eventTime": "2026-11-22T00:00:00.000000Z",
        "reportingController": "kueue-bridge-reconciler",
        "reportingInstance": "bench",
        "action": "CreatedWorkload",
        "reason": "CreatedWorkload",
        "regarding": {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "namespace": namespace,
            "name": f"raw-{index}",
            "uid": job_uid,
        },
        "note": f"Created Workload: {namespace}/raw-{index}",
        "type": "Normal",
    }


async def _client_loop(kubeconfig: Path, mix: WriteMix, concurrency: int) -> tuple[float, float]:
    """Run ``mix`` at ``concurrency``; returns (start, end) on ``time.monotonic``, one clock for every
    process of the host."""
    namespace = mix.namespace
    async with client_for(kubeconfig) as client:
        for gvk in (JOB_GVK, WORKLOAD_GVK, EVENT):  # discovery and connection outside the timing
            await client.list(gvk, namespace=namespace)

        def one(index: int) -> Any:
            async def call() -> None:
                name = f"job-{index}" if namespace == "bench" else f"raw-{index}"
                uid = ""
                if index < mix.jobs:
                    uid = (await client.create(JOB_GVK, job(name), namespace=namespace))["metadata"]["uid"]
                if index < mix.workloads:
                    created = await client.create(WORKLOAD_GVK, raw_workload(name), namespace=namespace)
                    if index < mix.status_patches:
                        patch = pods_ready_patch(created["metadata"]["resourceVersion"])
                        await client.patch(
                            WORKLOAD_GVK, name, patch, namespace=namespace, subresource="status"
                        )
                if index < mix.events:
                    await client.create(EVENT, event_body(namespace, index, uid), namespace=namespace)

            return call

        started = time.monotonic()
        await bounded(concurrency, [one(i) for i in range(mix.size)])
        return started, time.monotonic()


def _client_process(kubeconfig: str, mix: WriteMix, concurrency: int, out: Any) -> None:
    out.put(asyncio.run(_client_loop(Path(kubeconfig), mix, concurrency)))


class ClientProcess:
    """A plain client loop in a spawned process (like the reconciler: its own interpreter and GIL)."""

    def __init__(self, kubeconfig: Path, *, mix: WriteMix, concurrency: int) -> None:
        context = multiprocessing.get_context("spawn")
        self._out = context.Queue()
        self._process = context.Process(
            target=_client_process, args=(str(kubeconfig), mix, concurrency, self._out)
        )
        self._process.start()

    async def window(self) -> tuple[float, float]:
        deadline = time.monotonic() + 600
        while True:
            try:
                window: tuple[float, float] = await asyncio.to_thread(self._out.get, True, 0.5)
                break
            except queue.Empty:
                if not self._process.is_alive() or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"the client loop failed (exit code {self._process.exitcode})"
                    ) from None
        await asyncio.to_thread(self._process.join)
        self._out.close()
        return window


# --- what the watches show ------------------------------------------------------------------------
class Watcher:
    """One namespace's Workloads (and which carry PodsReady), Events, and when each Job is first
    seen unsuspended. The same watches run during the ceiling, so the API server fans out to as many
    bench watchers in both phases."""

    def __init__(self, namespace: str) -> None:
        self.namespace = namespace
        self.workloads: set[str] = set()
        self.with_pods_ready: set[str] = set()
        self.events = 0
        self.workload_seen = asyncio.Event()
        self.last_workload_at = 0.0
        self.expected = 0
        self.unsuspended: dict[str, float] = {}
        self.all_unsuspended = asyncio.Event()

    def start(self, client: KubeClient) -> list[asyncio.Task[None]]:
        return [
            asyncio.create_task(self.watch_workloads(client), name=f"{self.namespace}-workloads"),
            asyncio.create_task(self.watch_jobs(client), name=f"{self.namespace}-jobs"),
            asyncio.create_task(self.watch_events(client), name=f"{self.namespace}-events"),
        ]

    async def watch_workloads(self, client: KubeClient) -> None:
        async for event in Watch(client, WORKLOAD_GVK, namespace=self.namespace).events():
            if event.type not in (EventType.ADDED, EventType.MODIFIED):
                continue
            name = event.object["metadata"]["name"]
            if name not in self.workloads:
                self.workloads.add(name)
                self.last_workload_at = time.monotonic()
            conditions = (event.object.get("status") or {}).get("conditions") or []
            if any(condition.get("type") == "PodsReady" for condition in conditions):
                self.with_pods_ready.add(name)
            if len(self.workloads) >= self.expected:
                self.workload_seen.set()

    async def watch_jobs(self, client: KubeClient) -> None:
        async for event in Watch(client, JOB_GVK, namespace=self.namespace).events():
            if event.type not in (EventType.ADDED, EventType.MODIFIED):
                continue
            name = event.object["metadata"]["name"]
            if event.object["spec"].get("suspend") is False and name not in self.unsuspended:
                self.unsuspended[name] = time.monotonic()
                if len(self.unsuspended) >= self.expected:
                    self.all_unsuspended.set()

    async def watch_events(self, client: KubeClient) -> None:
        async for event in Watch(client, EVENT, namespace=self.namespace).events():
            if event.type == EventType.ADDED:
                self.events += 1


async def settled(watcher: Watcher, *, expected: int) -> None:
    """Wait (polling, with a deadline) until every Workload carries PodsReady and every job's Event
    was seen: the reconciler has nothing left over from the burst."""
    deadline = time.monotonic() + BURST_TIMEOUT
    while len(watcher.with_pods_ready) < expected or watcher.events < expected:
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"the burst's tail did not settle in {BURST_TIMEOUT:.0f}s: {len(watcher.with_pods_ready)} of "
                f"{expected} Workloads with PodsReady, {watcher.events} of {expected} Events"
            )
        await asyncio.sleep(0.05)  # a bench poll on its own watches
    await asyncio.sleep(0.2)  # the last writes' watch events reach the reconciler too


async def stop_tasks(tasks: list[asyncio.Task[None]]) -> None:
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


def admit_body(workload: dict[str, Any]) -> dict[str, Any]:
    status = workload.setdefault("status", {})
    status["admission"] = {
        "clusterQueue": "cq",
        "podSetAssignments": [
            {"name": "main", "count": 1, "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "100m"}}
        ],
    }
    conditions = [c for c in status.get("conditions", []) if c["type"] not in ("QuotaReserved", "Admitted")]
    for condition_type in ("QuotaReserved", "Admitted"):
        conditions.append(
            {
                "type": condition_type,
                "status": "True",
                "reason": condition_type,
                "message": "",
                "lastTransitionTime": NOW,
            }
        )
    status["conditions"] = conditions
    return workload


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


async def measure_ceiling(
    kubeconfig: Path, server: subprocess.Popen[bytes], mix: WriteMix, concurrency: int
) -> tuple[float, float]:
    """Seconds the plain client loop takes for ``mix``, and the server's CPU seconds meanwhile; the
    bench's watches are open on the namespace as they were during the burst."""
    print(f"measuring a ceiling: {mix}", file=sys.stderr)
    async with client_for(kubeconfig) as watch_client:
        watcher = Watcher(mix.namespace)
        tasks = watcher.start(watch_client)
        await asyncio.sleep(0.5)  # the watches are open before the first write
        cpu_before = process_cpu_seconds(server.pid)
        start, end = await ClientProcess(kubeconfig, mix=mix, concurrency=concurrency).window()
        server_cpu = process_cpu_seconds(server.pid) - cpu_before
        await stop_tasks(tasks)
    return end - start, server_cpu


@dataclass(frozen=True)
class RoundFigures:
    """The target figures of one round (a fresh devcluster and reconciler)."""

    ratio: float
    flood_p99_ms: float | None = None
    paced_p99_ms: float | None = None


def summary(rounds: list[RoundFigures]) -> list[str]:
    """Median (min-max) of each target figure over the rounds: runs on a shared 2-core machine vary by
    a third, so one round is an anecdote."""

    def spread(values: list[float], unit: str, digits: int) -> str:
        return (
            f"median {statistics.median(values):.{digits}f}{unit} "
            f"({min(values):.{digits}f}-{max(values):.{digits}f}{unit})"
        )

    lines = [f"over {len(rounds)} rounds: ratio {spread([r.ratio for r in rounds], 'x', 2)} (target >= 0.8x)"]
    for label, values in (
        ("flood p99", [r.flood_p99_ms for r in rounds if r.flood_p99_ms is not None]),
        ("paced p99", [r.paced_p99_ms for r in rounds if r.paced_p99_ms is not None]),
    ):
        if values:
            lines.append(f"over {len(values)} rounds: {label} {spread(values, ' ms', 0)} (target <= 200 ms)")
    return lines


async def run(args: argparse.Namespace) -> RoundFigures | None:
    with (
        tempfile.TemporaryDirectory(prefix="bench-reconciler-") as tmp,
        devcluster_process(Path(tmp), profile=args.server_profile) as (server, kubeconfig),
    ):
        await setup(kubeconfig)
        config = Path(tmp) / "config.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "apiVersion": "config.kueue.x-k8s.io/v1beta2",
                    "kind": "Configuration",
                    "clientConnection": {"qps": float(args.qps), "burst": int(args.qps)},
                }
            )
        )
        log = (Path(args.reconciler_log) if args.reconciler_log else Path(tmp) / "reconciler.log").open("wb")
        profile = ["-m", "cProfile", "-o", args.profile] if args.profile else []
        entry = "bench.floor_reconciler" if args.floor else "kueue_bridge.cli"
        command = [sys.executable, *profile, "-m", entry, "reconciler", "--config", str(config)]
        command += [
            "--kubeconfig",
            str(kubeconfig),
            "--probe-address",
            "127.0.0.1:0",
        ]
        if args.workers:
            command += ["--workers", str(args.workers)]
        process = await asyncio.create_subprocess_exec(*command, stdout=log, stderr=subprocess.STDOUT)
        try:
            async with client_for(kubeconfig) as client, client_for(kubeconfig) as watch_client:
                watcher = Watcher("bench")
                watcher.expected = 1
                tasks = watcher.start(watch_client)
                await client.create(
                    JOB_GVK, job("warm-up"), namespace="bench"
                )  # leader elected, caches synced
                print("waiting for the reconciler to lead and sync", file=sys.stderr)
                await asyncio.wait_for(watcher.workload_seen.wait(), 120)
                await asyncio.sleep(0.5)  # the warm-up's PodsReady write and Event are done
                watcher.expected = args.jobs + 1
                watcher.workload_seen.clear()
                seen_before = (len(watcher.with_pods_ready), watcher.events)

                cpu_before = (process_cpu_seconds(server.pid), process_cpu_seconds(process.pid))
                creator = ClientProcess(
                    kubeconfig, mix=WriteMix("bench", jobs=args.jobs), concurrency=args.concurrency
                )
                try:
                    await asyncio.wait_for(watcher.workload_seen.wait(), BURST_TIMEOUT)
                except TimeoutError:
                    stored = len((await client.list(WORKLOAD_GVK, namespace="bench"))["items"])
                    dead = [task.get_name() for task in tasks if task.done()]
                    raise RuntimeError(
                        f"the burst did not finish in {BURST_TIMEOUT:.0f}s: the bench's watch saw "
                        f"{len(watcher.workloads)} of {watcher.expected} Workloads, the server holds "
                        f"{stored}; finished watch tasks: {dead or 'none'}"
                    ) from None
                burst_cpu = (
                    process_cpu_seconds(server.pid) - cpu_before[0],
                    process_cpu_seconds(process.pid) - cpu_before[1],
                )
                in_window = (len(watcher.with_pods_ready) - seen_before[0], watcher.events - seen_before[1])
                started, created_at = await creator.window()
                created = created_at - started
                burst = watcher.last_workload_at - started
                if args.burst_only or args.floor:
                    await stop_tasks(tasks)
                    if args.burst_only:
                        return None

                if not args.floor:
                    # The burst's tail (PodsReady writes, CreatedWorkload Events) must be written before
                    # the flood starts, or the flood measures the burst's backlog too (a fixed 1 s sleep
                    # left a third of the Events to be written during the flood).
                    await settled(watcher, expected=args.jobs + 1)
                    listed = (await client.list(WORKLOAD_GVK, namespace="bench"))["items"]
                    sent: dict[str, float] = {}

                    def admit(workload: dict[str, Any]) -> Any:
                        async def call() -> None:
                            owner = workload["metadata"]["ownerReferences"][0]["name"]
                            for _ in range(5):
                                sent[owner] = time.monotonic()
                                try:
                                    await client.update_status(
                                        WORKLOAD_GVK, admit_body(workload), namespace="bench"
                                    )
                                    return
                                except Exception:
                                    workload.update(
                                        await client.get(
                                            WORKLOAD_GVK, workload["metadata"]["name"], namespace="bench"
                                        )
                                    )

                        return call

                    watcher.expected = len(listed)
                    flood = listed[: len(listed) // 2]
                    paced = listed[len(listed) // 2 :]
                    cpu_before = (process_cpu_seconds(server.pid), process_cpu_seconds(process.pid))
                    flood_started = time.monotonic()
                    await bounded(args.admit_concurrency, [admit(w) for w in flood])
                    flood_sent = time.monotonic() - flood_started
                    flood_names = {w["metadata"]["ownerReferences"][0]["name"] for w in flood}
                    while not flood_names <= watcher.unsuspended.keys():  # noqa: ASYNC110 - a bench poll, 50 ms
                        await asyncio.sleep(0.05)
                    flood_cpu = (
                        process_cpu_seconds(server.pid) - cpu_before[0],
                        process_cpu_seconds(process.pid) - cpu_before[1],
                    )
                    for workload in paced:  # one at a time at --admit-rate, as a steady scheduler would
                        await admit(workload)()
                        await asyncio.sleep(1 / args.admit_rate)
                    await asyncio.wait_for(watcher.all_unsuspended.wait(), 600)

                    def latencies_of(names: set[str]) -> list[float]:
                        return [
                            watcher.unsuspended[n] - sent[n]
                            for n in names
                            if n in sent and n in watcher.unsuspended
                        ]

                    flood_latencies = latencies_of(flood_names)
                    paced_latencies = latencies_of(
                        {w["metadata"]["ownerReferences"][0]["name"] for w in paced}
                    )
                    await stop_tasks(tasks)
        finally:
            if process.returncode is None:
                process.terminate()
            await asyncio.wait_for(process.wait(), 60)
            log.close()
        if args.burst_only:
            return None
        # The ceilings run once the reconciler is gone, so that its informers add no watch load.
        replay = WriteMix(
            "ceiling",
            jobs=args.jobs,
            workloads=args.jobs,
            status_patches=in_window[0],
            events=in_window[1],
        )
        ceiling, ceiling_server_cpu = await measure_ceiling(kubeconfig, server, replay, args.concurrency)
        narrow_mix = WriteMix("narrow", workloads=args.jobs, status_patches=args.jobs)
        narrow, _ = await measure_ceiling(kubeconfig, server, narrow_mix, args.concurrency)

    print(
        f"jobs: {args.jobs}, create concurrency: {args.concurrency}, reconciler workers: {args.workers or 'default'}"
        + (" -- FLOOR: bench/floor_reconciler.py, no reconcile logic" if args.floor else "")
    )
    print(
        f"burst: jobs created in {created:.2f}s; every Workload existed after {burst:.2f}s "
        f"({args.jobs / burst:.0f}/s); by then {in_window[0]} PodsReady status writes and "
        f"{in_window[1]} Events were visible"
    )
    print(
        f"ceiling: the same {replay.writes} writes by a plain client loop ({replay.jobs} Job creates, "
        f"{replay.workloads} Workload creates, {replay.status_patches} status patches, "
        f"{replay.events} Event creates) in {ceiling:.2f}s"
    )
    print(
        f"CPU: server process {ceiling_server_cpu:.2f}s in the ceiling, {burst_cpu[0]:.2f}s in the burst; "
        f"reconciler process {burst_cpu[1]:.2f}s in the burst"
    )
    print(f"ratio (ceiling time / reconciler time): {ceiling / burst:.2f}x (target >= 0.8x)")
    print(
        f"  for comparison, {args.jobs} Workload creates + {args.jobs} status patches alone (no Job creates): "
        f"{narrow:.2f}s, {narrow / burst:.2f}x of the burst"
    )
    ratio = ceiling / burst
    if args.floor:
        return RoundFigures(ratio=ratio)
    print(
        f"flood: {len(flood_latencies)} admissions written in {flood_sent:.2f}s; CPU until all started: "
        f"reconciler {flood_cpu[1]:.2f}s ({flood_cpu[1] / max(len(flood_latencies), 1) * 1000:.2f} ms per "
        f"admission), server {flood_cpu[0]:.2f}s"
    )
    p99s = []
    for label, values in (
        (f"flood, {args.admit_concurrency} admissions in flight", flood_latencies),
        (f"paced, {args.admit_rate:.0f} admissions/s", paced_latencies),
    ):
        millis = [value * 1000 for value in values]
        p99s.append(percentile(millis, 0.99))
        print(
            f"admission -> unsuspended ({label}, {len(millis)} jobs): p50 {statistics.median(millis):.0f} ms, "
            f"p99 {p99s[-1]:.0f} ms, max {max(millis):.0f} ms (target p99 <= 200 ms)"
        )
    return RoundFigures(ratio=ratio, flood_p99_ms=p99s[0], paced_p99_ms=p99s[1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--admit-concurrency", type=int, default=4)
    parser.add_argument("--workers", type=int, help="override the reconciler's workers per kind")
    parser.add_argument("--qps", type=int, default=5000)
    parser.add_argument("--admit-rate", type=float, default=100.0, help="admissions/s for the latency figure")
    parser.add_argument("--reconciler-log", help="keep the reconciler's log in this file")
    parser.add_argument("--server-profile", help="write the devcluster's cProfile stats to this file")
    parser.add_argument("--burst-only", action="store_true", help="stop after the burst (for --profile)")
    parser.add_argument("--profile", help="write the reconciler's cProfile stats to this file")
    parser.add_argument(
        "--floor",
        action="store_true",
        help="burst and ceiling only, against bench.floor_reconciler (the process without its logic)",
    )
    parser.add_argument("--rounds", type=int, default=1, help="repeat everything, then print medians")
    args = parser.parse_args()
    rounds: list[RoundFigures] = []
    for number in range(1, args.rounds + 1):
        if args.rounds > 1:
            print(f"--- round {number} of {args.rounds}", flush=True)
        figures = asyncio.run(run(args))
        if figures is not None:
            rounds.append(figures)
    if len(rounds) > 1:
        print("\n".join(summary(rounds)))


if __name__ == "__main__":
    main()
