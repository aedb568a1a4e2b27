"""``python -m bench.reconciler_cpu --real``: whole job lives on a real kube-apiserver next to real Kueue.

One round, on a wiped cluster of the kit (``bench.harness.real_cluster``), for one of two setups:

* ``kueue-bridge``: Kueue in external-framework mode (it only schedules); kueue-bridge's webhook and
  reconciler, as deployed, manage the batch Jobs;
* ``kueue`` (``--anchor kueue``): Kueue in its normal mode manages the Jobs itself; nothing of ours runs.

The bench creates ``--jobs`` queued Jobs at ``--concurrency``, the job finisher runs each admitted
Job to ``Complete``, and the round ends when every Workload is finished with its finalizer released
and the job controller (our reconciler, or Kueue's manager) is quiet. It prints:

* CPU seconds (user + system, ``/proc``) of every process over that window: our reconciler and
  webhook, Kueue's manager, kube-apiserver, etcd and this bench (the finisher and the watches), per
  job for the controllers, per admission and per job for the webhook;
* wall times: creating the Jobs, created -> all unsuspended (jobs/s), and the last Workload admitted
  -> the last Job unsuspended, with the largest admitted -> unsuspended gap of any one Job;
* requests per job by verb and resource, from kube-apiserver's own ``apiserver_request_total``,
  less the bench's own requests (its creates and the finisher's): ours and Kueue's together in the
  ``kueue-bridge`` setup, and the split (ours from our components' metrics, Kueue's the rest);
* bytes our components decoded per job (response bodies and watch events, from their metrics).

Kueue's share for its job integration is estimated by subtraction: its manager's CPU when it
manages Jobs minus its CPU when it only schedules them (the scheduler's share moves with how long
it runs, so this is an estimate).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness.clusters import BENCH_NAMESPACE, client_for, setup_queues
from bench.harness.components import Components, start_components
from bench.harness.lifecycles import RoundResult, print_round, run_round, work_done
from bench.harness.load import JOB, job_body, probe_webhook, queued_review
from bench.harness.metrics import Samples, delta, scrape, total
from bench.harness.processes import load_average, process_cpu_seconds, process_cpu_split, quiet
from bench.harness.profile_breakdown import PARTS, read_breakdown, top_functions
from bench.harness.profilers import PerfSampler, Sampler, start_sampler
from bench.harness.real_cluster import (
    ApiserverMetrics,
    Census,
    Timeline,
    bench_cluster,
    census_delta,
    fresh,
    job_finisher,
    measured_processes,
)

__all__ = ["RealRound", "main_real", "run_real_round", "webhook_answer_times"]

KUEUE_BRIDGE, KUEUE = "kueue-bridge", "kueue"
LIFECYCLE_TIMEOUT = 1800.0
#: seconds the idle controller's CPU is read for before the creates (what it burns on no job at all)
IDLE_SECONDS = 5.0


@dataclass
class RealRound:
    setup: str
    jobs: int
    cpu: dict[str, float]
    admissions: float
    create_seconds: float
    unsuspend_seconds: float
    admitted_to_last_unsuspended: float
    worst_gap: float
    load: tuple[str, str]
    requests: Census = field(default_factory=dict)  # everything but the bench's own
    profiles: dict[str, Path] = field(default_factory=dict)
    work: dict[str, dict[str, float]] = field(default_factory=dict)
    webhooks: dict[str, tuple[float, float]] = field(default_factory=dict)
    create_latencies: list[float] = field(default_factory=list)
    stages: dict[str, float] = field(default_factory=dict)
    #: resource -> bytes one watcher of it received (all of the round)
    per_watcher: dict[str, float] = field(default_factory=dict)
    ours: Census = field(default_factory=dict)
    decoded_bytes: dict[str, float] = field(default_factory=dict)
    #: ``--probe``: round trips of direct requests to our /mutate while the Jobs are created and started
    probe: list[float] = field(default_factory=list)
    #: the job controller's CPU seconds per second while idle, just before the creates
    idle_cpu_per_second: float = 0.0
    #: seconds from the first create to the end of the CPU window
    window_seconds: float = 0.0
    #: the job controller's (user, system) CPU seconds over the window
    controller_split: tuple[float, float] = (0.0, 0.0)
    #: every process's CPU seconds from the first create to the last Job unsuspended (the span the
    #: jobs/s figure measures), so the share each process took of the two cores then shows
    cpu_to_unsuspended: dict[str, float] = field(default_factory=dict)
    #: our webhook's own answer time, by webhook (mutate, validate): (calls, mean ms), from its histogram
    webhook_own: dict[str, tuple[float, float]] = field(default_factory=dict)

    @property
    def jobs_per_second(self) -> float:
        return self.jobs / self.unsuspend_seconds

    def ms_per_job(self, process: str) -> float:
        return self.cpu.get(process, 0.0) / self.jobs * 1000


def _ours_census(*processes: Samples) -> Census:
    counts: Census = {}
    for (name, labels), value in (item for samples in processes for item in samples.items()):
        if name == "kueue_bridge_rest_client_requests_total":
            label = dict(labels)
            resource, _, subresource = label.get("resource", "").partition("/")
            plural = resource.split(".")[0]  # kube-apiserver's label has no group
            key = (label.get("verb", ""), f"{plural}/{subresource}" if subresource else plural)
            counts[key] = counts.get(key, 0.0) + value
    return counts


async def _our_samples(components: Components | None) -> tuple[Samples, Samples]:
    if components is None:
        return {}, {}
    reconciler = await scrape(components.reconciler_metrics)
    webhook = await scrape(components.webhook_metrics, verify=components.verify)
    return reconciler, webhook


def webhook_answer_times(after: Samples, before: Samples) -> dict[str, tuple[float, float]]:
    """(calls, mean ms) per webhook (``mutate``, ``validate``) between two scrapes of our webhook."""
    name = "kueue_bridge_webhook_request_duration_seconds"
    own: dict[str, tuple[float, float]] = {}
    for hook in ("mutate", "validate"):
        calls = total(after, f"{name}_count", webhook=hook) - total(before, f"{name}_count", webhook=hook)
        seconds = total(after, f"{name}_sum", webhook=hook) - total(before, f"{name}_sum", webhook=hook)
        if calls:
            own[hook] = (calls, seconds / calls * 1000)
    return own


def _decoded(reconciler: Samples, webhook: Samples) -> dict[str, float]:
    decoded: dict[str, float] = {}
    for process, samples in (("reconciler", reconciler), ("webhook", webhook)):
        for source in ("response", "watch"):
            decoded[f"{process} {source}"] = total(samples, "kueue_bridge_decoded_bytes_total", source=source)
    return decoded


async def run_real_round(args: argparse.Namespace, *, setup: str, number: int, out: Path) -> RealRound:
    cluster = bench_cluster(args.state)
    await asyncio.to_thread(fresh, cluster, kueue_mode="external" if setup == KUEUE_BRIDGE else "normal")
    kubeconfig = cluster.kubeconfig
    apiserver = ApiserverMetrics(kubeconfig)
    with tempfile.TemporaryDirectory(prefix="bench-real-") as tmp_name:
        tmp = Path(tmp_name)
        async with contextlib.AsyncExitStack() as stack:
            stack.callback(cluster.stop)
            client = await stack.enter_async_context(client_for(kubeconfig))
            await setup_queues(client, jobs=args.jobs + 1, install=False)
            components: Components | None = None
            if setup == KUEUE_BRIDGE:
                components = await start_components(
                    stack,
                    tmp=tmp,
                    kubeconfig=kubeconfig,
                    client=client,
                    qps=args.qps,
                    reconcile_concurrency=args.reconcile_concurrency,
                    reconciler_identity=True,
                )
            timeline = Timeline(BENCH_NAMESPACE)
            for watcher in (timeline.watch_jobs(client), timeline.watch_workloads(client)):
                stack.callback(asyncio.create_task(watcher).cancel)
            finisher = await stack.enter_async_context(job_finisher(kubeconfig, run_seconds=args.run_seconds))
            await client.create(JOB, job_body(-1, run_seconds=args.run_seconds), namespace=BENCH_NAMESPACE)
            await timeline.wait(lambda: len(timeline.done) >= 1, within=120, what="the warm-up job's life")
            processes = measured_processes(cluster, components)
            controller_pid = processes["reconciler" if components else "kueue-manager"]
            await quiet(controller_pid)
            idle_from = process_cpu_seconds(controller_pid)
            await asyncio.sleep(IDLE_SECONDS)
            idle_cpu_per_second = (process_cpu_seconds(controller_pid) - idle_from) / IDLE_SECONDS

            load_before = load_average()
            apiserver_before, finisher_before = await apiserver.snapshot(), dict(finisher.counts)
            reconciler_before, webhook_before = await _our_samples(components)
            work_before = await work_done(components) if components is not None else {}
            samplers: dict[str, Sampler | PerfSampler] = {}
            if args.profile and components is not None:
                for name in ("reconciler", "webhook"):
                    samplers[name] = start_sampler(args, processes[name], out / f"real-{name}-round{number}")
                await asyncio.sleep(0.5)  # py-spy attaches
            probe_latencies: list[float] = []
            prober: asyncio.Task[None] | None = None
            if getattr(args, "probe", False) and components is not None:
                url = components.webhook_metrics.rpartition("/")[0] + "/mutate"
                body = queued_review(namespace=BENCH_NAMESPACE, queue="bench")
                prober = asyncio.create_task(
                    probe_webhook(url, components.verify, body, args.probe_interval, probe_latencies)
                )
            cpu_before = {name: process_cpu_seconds(pid) for name, pid in processes.items()}
            split_before = process_cpu_split(controller_pid)
            started = time.monotonic()
            create_latencies = await _create(
                client, jobs=args.jobs, concurrency=args.concurrency, run_seconds=args.run_seconds
            )
            created = time.monotonic()
            everyone = args.jobs + 1
            await timeline.wait(
                lambda: len(timeline.unsuspended) >= everyone,
                within=LIFECYCLE_TIMEOUT,
                what="all unsuspended",
            )
            cpu_unsuspended = {name: process_cpu_seconds(pid) for name, pid in processes.items()}
            if prober is not None:
                prober.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await prober
            await timeline.wait(
                lambda: len(timeline.done) >= everyone, within=LIFECYCLE_TIMEOUT, what="all finished"
            )
            await quiet(controller_pid)
            cpu_after = {name: process_cpu_seconds(pid) for name, pid in processes.items()}
            window_seconds = time.monotonic() - started
            split_after = process_cpu_split(controller_pid)
            profiles = {name: sampler.output for name, sampler in samplers.items() if sampler.stop()}
            load_after = load_average()
            apiserver_after, finisher_after = await apiserver.snapshot(), dict(finisher.counts)
            reconciler_after, webhook_after = await _our_samples(components)
            work_after = await work_done(components) if components is not None else {}
            if components is not None:
                for name in ("reconciler.log", "webhook.log"):
                    with contextlib.suppress(OSError):
                        (out / f"real-round{number}-{name}").write_bytes((tmp / name).read_bytes())

    last_unsuspended = max(timeline.unsuspended.values())
    gaps = [
        timeline.unsuspended[job] - at for job, at in timeline.admitted.items() if job in timeline.unsuspended
    ]
    slowest = sorted(
        (
            (timeline.unsuspended[job] - at, job)
            for job, at in timeline.admitted.items()
            if job in timeline.unsuspended
        ),
        reverse=True,
    )[:3]
    for gap, job in slowest:
        print(
            f"  slow start: {job} Workload seen {timeline.workload_seen.get(job, 0) - started:.1f}s, admitted "
            f"{timeline.admitted[job] - started:.1f}s, unsuspended {timeline.unsuspended[job] - started:.1f}s ({gap:.1f}s)"
        )
    bench_own = census_delta(finisher_after, finisher_before)
    bench_own[("create", "jobs")] = bench_own.get(("create", "jobs"), 0.0) + args.jobs
    admissions = (
        total(webhook_after, "kueue_bridge_webhook_requests_total")
        - total(webhook_before, "kueue_bridge_webhook_requests_total")
        - len(probe_latencies)
    )
    decoded_after, decoded_before = (
        _decoded(reconciler_after, webhook_after),
        _decoded(reconciler_before, webhook_before),
    )
    return RealRound(
        setup=setup,
        jobs=args.jobs,
        cpu={name: cpu_after[name] - cpu_before[name] for name in cpu_after},
        cpu_to_unsuspended={name: cpu_unsuspended[name] - cpu_before[name] for name in cpu_unsuspended},
        webhook_own=webhook_answer_times(webhook_after, webhook_before),
        admissions=admissions,
        create_seconds=created - started,
        unsuspend_seconds=last_unsuspended - started,
        admitted_to_last_unsuspended=last_unsuspended - max(timeline.admitted.values()),
        worst_gap=max(gaps) if gaps else 0.0,
        load=(load_before, load_after),
        requests=census_delta(apiserver_after.requests, apiserver_before.requests, bench_own),
        webhooks=apiserver_after.webhook_latency_since(apiserver_before),
        per_watcher=apiserver_after.bytes_per_watcher_since(apiserver_before),
        create_latencies=create_latencies,
        stages={
            "last Job created": created - started,
            "last Workload created": max(timeline.workload_seen.values()) - started,
            "last Workload admitted": max(timeline.admitted.values()) - started,
            "last Job unsuspended": last_unsuspended - started,
        },
        ours=census_delta(
            _ours_census(reconciler_after, webhook_after), _ours_census(reconciler_before, webhook_before)
        ),
        decoded_bytes={key: value - decoded_before.get(key, 0.0) for key, value in decoded_after.items()},
        profiles=profiles,
        work={key: delta(work_after[key], work_before.get(key, {})) for key in work_after},
        probe=probe_latencies,
        idle_cpu_per_second=idle_cpu_per_second,
        window_seconds=window_seconds,
        controller_split=(split_after[0] - split_before[0], split_after[1] - split_before[1]),
    )


async def _create(client: Any, *, jobs: int, concurrency: int, run_seconds: float) -> list[float]:
    """Create the Jobs, ``concurrency`` at a time; the seconds each create took."""
    gate = asyncio.Semaphore(concurrency)
    latencies: list[float] = []

    async def one(index: int) -> None:
        async with gate:
            began = time.monotonic()
            await client.create(JOB, job_body(index, run_seconds=run_seconds), namespace=BENCH_NAMESPACE)
            latencies.append(time.monotonic() - began)

    await asyncio.gather(*(one(i) for i in range(jobs)))
    return latencies


# --- output ---------------------------------------------------------------------------------------
def _census_line(counts: Census, jobs: int) -> str:
    parts = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    text = ", ".join(f"{verb} {resource} {value / jobs:.2f}" for (verb, resource), value in parts)
    return f"{sum(counts.values()) / jobs:.2f} ({text})"


def print_real_round(result: RealRound) -> None:
    jobs = result.jobs
    print(
        f"[{result.setup}] {jobs} jobs: created in {result.create_seconds:.1f}s, all unsuspended after "
        f"{result.unsuspend_seconds:.1f}s ({result.jobs_per_second:.1f} jobs/s); last admission -> last "
        f"unsuspend {result.admitted_to_last_unsuspended:.2f}s, worst admission -> unsuspend "
        f"{result.worst_gap:.2f}s (load {result.load[0]} before, {result.load[1]} after)"
    )
    stages = ", ".join(f"{name} {seconds:.1f}s" for name, seconds in result.stages.items())
    print(f"  timeline after the first create: {stages}")
    latencies = sorted(result.create_latencies)
    hooks = ", ".join(
        f"{name} {calls / jobs:.1f}/job {millis:.1f} ms"
        for name, (calls, millis) in sorted(result.webhooks.items())
    )
    print(
        f"  create latency p50 {latencies[len(latencies) // 2] * 1000:.0f} ms, p99 "
        f"{latencies[int(len(latencies) * 0.99)] * 1000:.0f} ms; API server's mean wait per webhook call: {hooks}"
    )
    if result.webhook_own:
        answer_times = ", ".join(
            f"{hook} {calls / jobs:.1f}/job {millis:.2f} ms"
            for hook, (calls, millis) in result.webhook_own.items()
        )
        print(f"  our webhook's own mean time per call (body parsed -> answer made): {answer_times}")
    if result.cpu_to_unsuspended:
        span = result.unsuspend_seconds
        used = sum(result.cpu_to_unsuspended.values())
        cpu_shares = ", ".join(
            f"{name} {seconds:.1f} ({seconds / used * 100:.0f} %)"
            for name, seconds in sorted(result.cpu_to_unsuspended.items(), key=lambda item: -item[1])
        )
        print(
            f"  CPU seconds from the first create to the last unsuspend ({span:.1f} s, {2 * span:.1f} CPU-s on "
            f"2 cores; {used:.1f} used): {cpu_shares}"
        )
    watched = ", ".join(
        f"{resource} {result.per_watcher.get(resource, 0.0) / jobs / 1024:.1f}"
        for resource in ("jobs", "workloads")
    )
    print(f"  KiB of watch events per job that every watcher of these decodes (Kueue's too): {watched}")
    if result.probe:
        probed = sorted(result.probe)
        print(
            f"  direct probe to our /mutate until all unsuspended: {len(probed)} requests, p50 "
            f"{probed[len(probed) // 2] * 1000:.1f} ms, p90 {probed[int(len(probed) * 0.9)] * 1000:.1f} ms, "
            f"max {probed[-1] * 1000:.1f} ms"
        )
    cpu = ", ".join(f"{name} {seconds:.2f}" for name, seconds in sorted(result.cpu.items()))
    print(f"  CPU seconds: {cpu}")
    user, system = result.controller_split
    print(f"  job controller CPU: user {user:.2f} s, system {system:.2f} s")
    idle_share = result.idle_cpu_per_second * result.window_seconds / jobs * 1000
    print(
        f"  job controller idle: {result.idle_cpu_per_second * 1000:.1f} ms CPU per second over "
        f"{IDLE_SECONDS:g}s before the creates; over the {result.window_seconds:.1f}s window that is "
        f"{idle_share:.2f} ms per job"
    )
    if result.setup == KUEUE_BRIDGE:
        print(
            f"  reconciler {result.ms_per_job('reconciler'):.2f} ms/job (target <= 4), webhook "
            f"{result.ms_per_job('webhook'):.2f} ms/job (target <= 1), "
            f"{result.cpu['webhook'] / max(result.admissions, 1) * 1000:.3f} ms per admission "
            f"({result.admissions / jobs:.1f} admissions per job)"
        )
        print(f"  requests per job, ours: {_census_line(result.ours, jobs)}")
        kueue = census_delta(result.requests, {}, result.ours)
        print(f"  requests per job, Kueue scheduling (the rest): {_census_line(kueue, jobs)}")
        for what, counts in result.work.items():
            parts = ", ".join(f"{key or '-'} {value / jobs:.2f}" for key, value in sorted(counts.items()))
            print(f"  per job, {what}: {sum(counts.values()) / jobs:.2f} ({parts})")
        decoded = ", ".join(
            f"{key} {value / jobs / 1024:.1f}" for key, value in sorted(result.decoded_bytes.items())
        )
        print(f"  KiB decoded per job by our components (their own count): {decoded or 'n/a'}")
        for name, path in result.profiles.items():
            shares, stacks = read_breakdown(path)
            print(f"  {name} profile ({shares.total} samples, {path}):")
            if name == "reconciler":
                for part in PARTS:
                    share = shares.share(part)
                    print(
                        f"    {part:<34} {share * 100:5.1f} %  {share * result.ms_per_job(name):5.2f} ms per job"
                    )
            for function, own, inclusive in top_functions(stacks, limit=12):
                print(f"    {own:6d} {inclusive:6d}  {function}")
    else:
        print(f"  kueue-manager {result.ms_per_job('kueue-manager'):.2f} ms/job (whole manager)")
        print(f"  requests per job, Kueue: {_census_line(result.requests, jobs)}")


def _spread(values: list[float], digits: int = 2) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def summary_real(results: dict[str, list[RealRound]]) -> list[str]:
    lines = ["", "median (range) over rounds, real cluster:"]
    figures: list[tuple[str, Callable[[RealRound], float]]] = [
        ("create the jobs, s", lambda r: r.create_seconds),
        ("created -> all unsuspended, s", lambda r: r.unsuspend_seconds),
        ("jobs/s", lambda r: r.jobs_per_second),
        ("last admission -> last unsuspend, s", lambda r: r.admitted_to_last_unsuspended),
        ("worst admission -> unsuspend, s", lambda r: r.worst_gap),
        ("reconciler CPU ms/job", lambda r: r.ms_per_job("reconciler")),
        ("webhook CPU ms/job", lambda r: r.ms_per_job("webhook")),
        ("kueue-manager CPU ms/job", lambda r: r.ms_per_job("kueue-manager")),
        ("kube-apiserver CPU ms/job", lambda r: r.ms_per_job("kube-apiserver")),
        ("etcd CPU ms/job", lambda r: r.ms_per_job("etcd")),
        ("bench (finisher) CPU ms/job", lambda r: r.ms_per_job("bench")),
        ("API requests per job (all but the bench's)", lambda r: sum(r.requests.values()) / r.jobs),
    ]
    setups = [setup for setup in (KUEUE_BRIDGE, KUEUE) if results.get(setup)]
    lines.append(f"  {'':<44}" + "".join(f"{setup:>24}" for setup in setups))
    for name, figure in figures:
        row = f"  {name:<44}"
        for setup in setups:
            row += f"{_spread([figure(r) for r in results[setup]]):>24}"
        lines.append(row)
    if len(setups) == 2:
        ours, kueue = results[KUEUE_BRIDGE], results[KUEUE]
        rate = statistics.median(r.jobs_per_second for r in ours) / statistics.median(
            r.jobs_per_second for r in kueue
        )
        creates = statistics.median(r.create_seconds for r in ours) / statistics.median(
            r.create_seconds for r in kueue
        )
        integration = statistics.median(r.ms_per_job("kueue-manager") for r in kueue) - statistics.median(
            r.ms_per_job("kueue-manager") for r in ours
        )
        lines.append(f"  end-to-end jobs/s, kueue-bridge / Kueue: {rate:.2f}x (target >= 2x)")
        lines.append(f"  creates, kueue-bridge / Kueue: {creates:.2f}x slower (target <= 1.5x)")
        lines.append(
            f"  Kueue's job integration by subtraction (manager managing - scheduling only): {integration:.2f} ms/job"
        )
    return lines


def main_real(args: argparse.Namespace, out: Path) -> int:
    own_state = args.state is None
    if own_state:
        args.state = Path(tempfile.mkdtemp(prefix="kueue-bridge-bench-real-"))
    try:
        return _rounds(args, out)
    finally:
        if own_state:
            shutil.rmtree(args.state, ignore_errors=True)


def _rounds(args: argparse.Namespace, out: Path) -> int:
    setups = [KUEUE_BRIDGE] + ([KUEUE] if args.anchor == KUEUE else [])
    results: dict[str, list[RealRound]] = {setup: [] for setup in setups}
    devcluster: list[RoundResult] = []
    for number in range(1, args.rounds + 1):
        if args.devcluster:
            print(f"--- round {number} of {args.rounds}: kueue-bridge on the devcluster", flush=True)
            devcluster.append(asyncio.run(run_round(args, number=number, out=out)))
            print_round(devcluster[-1])
        for setup in setups:  # interleaved: every setup sees the same machine, round by round
            print(f"--- round {number} of {args.rounds}: {setup} on the real cluster", flush=True)
            result = asyncio.run(run_real_round(args, setup=setup, number=number, out=out))
            print_real_round(result)
            results[setup].append(result)
    print("\n".join(summary_real(results)))
    if devcluster:
        print("\n".join(_devcluster_ratio(results[KUEUE_BRIDGE], devcluster)))
    return 0


def _devcluster_ratio(real: list[RealRound], devcluster: list[RoundResult]) -> list[str]:
    """The same jobs on the devcluster, same machine, interleaved: a change that helps only there shows."""
    real_reconciler = statistics.median(r.ms_per_job("reconciler") for r in real)
    real_webhook = statistics.median(r.ms_per_job("webhook") for r in real)
    dev_reconciler = statistics.median(r.reconciler_ms_per_job for r in devcluster)
    dev_webhook = statistics.median(r.webhook_cpu / r.jobs * 1000 for r in devcluster)
    return [
        "  on the devcluster (bench/reconciler_cpu.py without --real, interleaved with the rounds above):",
        f"    reconciler {_spread([r.reconciler_ms_per_job for r in devcluster])} ms/job, real/devcluster "
        f"{real_reconciler / dev_reconciler:.2f}x",
        f"    webhook {_spread([r.webhook_cpu / r.jobs * 1000 for r in devcluster])} ms/job, real/devcluster "
        f"{real_webhook / dev_webhook:.2f}x",
    ]
