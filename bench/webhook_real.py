"""The webhook alone on a real kube-apiserver: what an admission costs it, and what the API server waits.

``python -m bench.reconciler_cpu --real`` measures the webhook inside whole job lives, next to the
reconciler and Kueue's scheduler; ``python -m bench.webhook_latency --kueue`` measures it in a closed loop (wrk, 16
kept-alive connections, one captured request). The two disagree about CPU per admission by ~5x.
This bench takes the webhook's share of a real run apart, one kind of traffic at a time, with only
the kit's kube-apiserver (and Kueue in external-framework mode, idle: no Workload is ever created)
besides our webhook, registered as ``kueue-bridge dev`` registers it:

* ``idle``: the webhook's CPU over ``--idle-seconds`` with no admission at all (informers, timers,
  certificate polling, the server's own ticks), per second;
* ``burst``: ``--jobs`` queued Jobs created at ``--concurrency`` as in the real run (one mutating
  and one validating CREATE admission each);
* ``updates``: the same Jobs unsuspended with a merge patch, ``--concurrency`` at a time, as the
  reconciler unsuspends them (one validating UPDATE admission each);
* ``serial``: ``--serial`` more Jobs created one at a time (each admission arrives alone: an event
  loop wake-up and TLS records of its own).

For each phase it prints the webhook's CPU per admission (``/proc``, user + system, over exactly the
phase; admissions from the webhook's own ``/metrics``), the API server's mean wait per call of each
webhook (``apiserver_admission_webhook_admission_duration_seconds``) and the wall time, with the load
average. With ``--probe`` a direct client sends the captured AdmissionReview straight to our webhook
every ``--probe-interval`` seconds during the burst and reports its round trip: the webhook's own
responsiveness under the same load, next to what the API server measures.

``--setup kueue`` creates the same burst with Kueue managing the Jobs (its own webhooks) and
``--setup none`` with no Job webhook at all (the floor of a create on this machine).

    .venv/bin/python -m bench.webhook_real [--jobs 500] [--rounds 3] [--setup ours,kueue,none] [--probe]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness.clusters import BENCH_NAMESPACE, client_for, setup_queues
from bench.harness.components import Components, start_components
from bench.harness.load import JOB, job_body, probe_webhook, queued_review
from bench.harness.metrics import scrape, total
from bench.harness.processes import load_average, process_cpu_seconds
from bench.harness.real_cluster import ApiserverMetrics, ApiserverSnapshot, bench_cluster, cluster_pids, fresh
from shared.kube import KubeClient

__all__ = ["main"]

OURS, KUEUE, NONE = "ours", "kueue", "none"


def process_counters(pid: int | None) -> dict[str, int]:
    """Context switches (``/proc/<pid>/status``) and read/write system calls (``/proc/<pid>/io``:
    libuv reads and writes sockets with ``read``/``write``), all threads; empty without a process."""
    if not pid:
        return {}
    counters: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"):
            counters[name.split("_")[0] + " switches"] = int(value)
    for line in Path(f"/proc/{pid}/io").read_text().splitlines():
        name, _, value = line.partition(":")
        if name in ("syscr", "syscw"):
            counters["reads" if name == "syscr" else "writes"] = int(value)
    return counters


@dataclass
class Phase:
    name: str
    admissions: float
    cpu: float
    seconds: float
    load: str
    waits: dict[str, tuple[float, float]] = field(default_factory=dict)
    apiserver_cpu: float = 0.0
    probe: list[float] = field(default_factory=list)
    jobs: int = 0
    #: ``process_counters`` of the webhook over the phase
    counters: dict[str, int] = field(default_factory=dict)

    @property
    def us_per_admission(self) -> float:
        return self.cpu / max(self.admissions, 1) * 1e6


async def _concurrently(count: int, concurrency: int, one: Callable[[int], Awaitable[None]]) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def gated(index: int) -> None:
        async with gate:
            await one(index)

    await asyncio.gather(*(gated(i) for i in range(count)))


def _perf_record(pid: int, output: Path) -> subprocess.Popen[bytes]:
    """``perf record -g`` of ``pid`` (kernel, OpenSSL and the interpreter's C frames), stopped with SIGINT."""
    output.parent.mkdir(parents=True, exist_ok=True)
    command = ["perf", "record", "-q", "-F", "999", "-g", "-p", str(pid), "-o", str(output)]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def _phase(
    name: str,
    work: Callable[[], Awaitable[None]],
    *,
    webhook_pid: int | None,
    apiserver_pid: int,
    components: Components | None,
    apiserver: ApiserverMetrics,
    probe: Callable[[list[float]], Coroutine[Any, Any, None]] | None = None,
    perf_dir: Path | None = None,
    jobs: int = 0,
) -> Phase:
    async def admissions() -> float:
        if components is None:
            return 0.0
        samples = await scrape(components.webhook_metrics, verify=components.verify)
        return total(samples, "kueue_bridge_webhook_requests_total")

    waits_before: ApiserverSnapshot = await apiserver.snapshot()
    count_before = await admissions()
    load = load_average()
    latencies: list[float] = []
    prober = asyncio.create_task(probe(latencies)) if probe is not None else None
    recorder = _perf_record(webhook_pid, perf_dir / f"{name}.perf.data") if perf_dir and webhook_pid else None
    cpu_before = process_cpu_seconds(webhook_pid) if webhook_pid else 0.0
    counters_before = process_counters(webhook_pid)
    api_before = process_cpu_seconds(apiserver_pid)
    began = time.monotonic()
    await work()
    seconds = time.monotonic() - began
    cpu = (process_cpu_seconds(webhook_pid) - cpu_before) if webhook_pid else 0.0
    counters = {key: value - counters_before[key] for key, value in process_counters(webhook_pid).items()}
    api_cpu = process_cpu_seconds(apiserver_pid) - api_before
    if recorder is not None:
        recorder.send_signal(signal.SIGINT)
        await asyncio.to_thread(recorder.wait, 60)
    if prober is not None:
        prober.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await prober
    count = await admissions() - count_before - len(latencies)
    waits = (await apiserver.snapshot()).webhook_latency_since(waits_before)
    return Phase(name, count, cpu, seconds, load, waits, api_cpu, latencies, jobs, counters)


async def run_round(args: argparse.Namespace, *, setup: str, tmp: Path) -> list[Phase]:
    cluster = bench_cluster(args.state)
    await asyncio.to_thread(fresh, cluster, kueue_mode="normal" if setup == KUEUE else "external")
    apiserver = ApiserverMetrics(cluster.kubeconfig)
    phases: list[Phase] = []
    try:
        async with contextlib.AsyncExitStack() as stack:
            client: KubeClient = await stack.enter_async_context(client_for(cluster.kubeconfig))
            await setup_queues(client, jobs=args.jobs + args.serial + 40, install=False)
            components: Components | None = None
            if setup == OURS:
                components = await start_components_webhook_only(
                    stack, tmp=tmp, cluster=cluster, client=client
                )
            pids = cluster_pids(cluster)
            webhook_pid = components.webhook.pid if components is not None else None

            async def create(index: int) -> None:
                await client.create(JOB, job_body(index, run_seconds=1.0), namespace=BENCH_NAMESPACE)

            async def unsuspend(index: int) -> None:
                await client.patch(
                    JOB, f"job-{index}", {"spec": {"suspend": False}}, namespace=BENCH_NAMESPACE
                )

            # warm-up: connections from the API server, every code path of ours imported and run
            await _concurrently(20, 4, lambda i: create(100_000 + i))
            if setup == OURS:
                await _concurrently(20, 4, lambda i: unsuspend(100_000 + i))
            await asyncio.sleep(2.0)

            def measure(name: str, work: Callable[[], Awaitable[None]], **extra: Any) -> Awaitable[Phase]:
                return _phase(
                    name,
                    work,
                    webhook_pid=webhook_pid,
                    apiserver_pid=pids["kube-apiserver"],
                    components=components,
                    apiserver=apiserver,
                    perf_dir=args.perf,
                    **extra,
                )

            if setup == OURS and args.idle_seconds > 0:
                phases.append(await measure("idle", lambda: asyncio.sleep(args.idle_seconds)))
            probe: Callable[[list[float]], Coroutine[Any, Any, None]] | None = None
            if args.probe and components is not None:
                body = queued_review(namespace=BENCH_NAMESPACE, queue="bench")
                url = components.webhook_metrics.rpartition("/")[0] + "/mutate"
                verify = components.verify

                def send_probes(into: list[float]) -> Coroutine[Any, Any, None]:
                    return probe_webhook(url, verify, body, args.probe_interval, into)

                probe = send_probes

            phases.append(
                await measure(
                    "burst",
                    lambda: _concurrently(args.jobs, args.concurrency, create),
                    probe=probe,
                    jobs=args.jobs,
                )
            )
            if setup == OURS:
                phases.append(
                    await measure(
                        "updates",
                        lambda: _concurrently(args.jobs, args.concurrency, unsuspend),
                        jobs=args.jobs,
                    )
                )
                if args.serial:
                    phases.append(
                        await measure(
                            "serial",
                            lambda: _concurrently(args.serial, 1, lambda i: create(args.jobs + i)),
                            jobs=args.serial,
                        )
                    )
    finally:
        cluster.stop()
    return phases


async def start_components_webhook_only(
    stack: contextlib.AsyncExitStack, *, tmp: Path, cluster: Any, client: KubeClient
) -> Components:
    """The webhook as ``start_components`` starts and registers it; the reconciler is stopped at once
    (nothing of ours then writes to the API server: a Job stays as the admissions left it)."""
    components = await start_components(
        stack, tmp=tmp, kubeconfig=cluster.kubeconfig, client=client, qps=None
    )
    await components.reconciler.stop()
    return components


def _spread(values: list[float], digits: int = 0) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def print_phase(setup: str, phase: Phase, jobs: int) -> None:
    waits = ", ".join(
        f"{name} {calls:.0f} x {millis:.1f} ms" for name, (calls, millis) in sorted(phase.waits.items())
    )
    line = (
        f"[{setup}] {phase.name:<8} {phase.seconds:6.2f} s, webhook {phase.cpu:5.2f} CPU s for "
        f"{phase.admissions:.0f} admissions = {phase.us_per_admission:6.0f} us each; kube-apiserver "
        f"{phase.apiserver_cpu:5.2f} CPU s; API server's wait: {waits or '-'} (load {phase.load})"
    )
    if phase.name == "idle":
        line = (
            f"[{setup}] idle     {phase.seconds:6.2f} s, webhook {phase.cpu * 1000:.0f} ms CPU = "
            f"{phase.cpu / phase.seconds * 1000:.2f} ms per second idle (load {phase.load})"
        )
    print(line, flush=True)
    if phase.counters and phase.admissions:
        counted = ", ".join(f"{key} {value / phase.admissions:.2f}" for key, value in phase.counters.items())
        print(f"    per admission: {counted}", flush=True)
    if phase.probe:
        ordered = sorted(phase.probe)
        print(
            f"    direct probe to our /mutate during the burst: {len(ordered)} requests, p50 "
            f"{ordered[len(ordered) // 2] * 1000:.2f} ms, p90 {ordered[int(len(ordered) * 0.9)] * 1000:.2f} ms, "
            f"max {ordered[-1] * 1000:.2f} ms",
            flush=True,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--serial", type=int, default=100, help="Jobs created one at a time afterwards")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--idle-seconds", type=float, default=20.0)
    parser.add_argument("--setup", default=OURS, help="comma-separated: ours, kueue, none (interleaved)")
    parser.add_argument(
        "--probe", action="store_true", help="direct requests to our webhook during the burst"
    )
    parser.add_argument("--probe-interval", type=float, default=0.02)
    parser.add_argument("--perf", type=Path, help="perf record the webhook in each phase into this folder")
    parser.add_argument("--state", type=Path, help="the cluster's state folder (default: a new temp dir)")
    args = parser.parse_args(argv)
    setups = [name.strip() for name in args.setup.split(",") if name.strip()]
    own_state = args.state is None
    if own_state:
        args.state = Path(tempfile.mkdtemp(prefix="bench-webhook-real-"))
    results: dict[tuple[str, str], list[Phase]] = {}
    try:
        for number in range(1, args.rounds + 1):
            for setup in setups:
                print(f"--- round {number} of {args.rounds}: {setup}", flush=True)
                with tempfile.TemporaryDirectory(prefix="bench-webhook-real-") as tmp:
                    for phase in asyncio.run(run_round(args, setup=setup, tmp=Path(tmp))):
                        print_phase(setup, phase, args.jobs)
                        results.setdefault((setup, phase.name), []).append(phase)
    finally:
        if own_state:
            shutil.rmtree(args.state, ignore_errors=True)
    print("\nmedian (range) over rounds:")
    for (setup, name), phases in results.items():
        if name == "idle":
            print(
                f"  {setup:<6} idle: {_spread([p.cpu / p.seconds * 1000 for p in phases], 2)} ms CPU per second"
            )
            continue
        waits: dict[str, list[float]] = {}
        for phase in phases:
            for hook, (_, millis) in phase.waits.items():
                waits.setdefault(hook, []).append(millis)
        wait_text = ", ".join(f"{hook} {_spread(values, 1)} ms" for hook, values in sorted(waits.items()))
        print(
            f"  {setup:<6} {name:<8} wall {_spread([p.seconds for p in phases], 2)} s, "
            f"webhook {_spread([p.us_per_admission for p in phases])} us CPU per admission, "
            f"kube-apiserver {_spread([p.apiserver_cpu / max(p.jobs, 1) * 1000 for p in phases], 2)} ms CPU per job; "
            f"wait per call: {wait_text or '-'}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
