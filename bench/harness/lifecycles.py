"""Rounds of whole job lifecycles with kueue-bridge's components on a devcluster, measured.

A round: a devcluster with the Kueue stand-in and the job runner, the webhook and the reconciler as
deployed (:mod:`bench.harness.components`), one warm-up lifecycle, then ``--jobs`` batch Jobs each
living its full life -- created (the webhook suspends it) -> Workload created -> admitted -> started
by the reconciler -> completed by the job runner -> Workload finished and its finalizer released.
:func:`run_round` reads every process's CPU over that window, the webhook's admissions and the
reconciler's work from their ``/metrics``, and with ``--profile`` a sampler's breakdown;
:func:`print_round` prints it. ``bench.reconciler_cpu`` runs rounds on their own; its ``--real`` mode
(``bench.reconciler_cpu_real``) runs them beside the real cluster's for the ratio.

:class:`Lifecycles` watches the bench namespace's Workloads for the end of each life.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from bench.harness.clusters import BENCH_NAMESPACE, client_for, devcluster_process, setup_queues
from bench.harness.components import Components, start_components
from bench.harness.load import JOB, job_body, wait_until
from bench.harness.metrics import by_label, delta, scrape, total
from bench.harness.processes import load_average, process_cpu_seconds, process_peak_rss_mib, quiet
from bench.harness.profile_breakdown import PARTS, Breakdown, read_breakdown, top_functions
from bench.harness.profilers import PerfSampler, Sampler, start_sampler
from shared.constants import RESOURCE_IN_USE_FINALIZER, WORKLOAD_GVK
from shared.kube import KubeClient
from shared.kube.watch import EventType, Watch

__all__ = [
    "LIFECYCLE_TIMEOUT",
    "Lifecycles",
    "RoundResult",
    "print_round",
    "run_round",
    "work_done",
]

#: seconds the lifecycle of every job may take before the bench gives up
LIFECYCLE_TIMEOUT: Final = 900.0


class Lifecycles:
    """Watches the bench namespace's Workloads: which are finished with their finalizer released."""

    def __init__(self) -> None:
        self.done: set[str] = set()
        self.workloads: set[str] = set()
        self.changed = asyncio.Event()

    async def watch(self, client: KubeClient) -> None:
        async for event in Watch(client, WORKLOAD_GVK, namespace=BENCH_NAMESPACE).events():
            if event.type not in (EventType.ADDED, EventType.MODIFIED):
                continue
            metadata = event.object["metadata"]
            self.workloads.add(metadata["name"])
            conditions = (event.object.get("status") or {}).get("conditions") or []
            finished = any(c.get("type") == "Finished" and c.get("status") == "True" for c in conditions)
            if finished and RESOURCE_IN_USE_FINALIZER not in (metadata.get("finalizers") or []):
                self.done.add(metadata["name"])
            self.changed.set()

    async def wait_for(self, count: int, *, within: float) -> None:
        await wait_until(
            lambda: len(self.done) >= count,
            self.changed,
            within=within,
            failure=lambda: (
                f"after {within:.0f}s only {len(self.done)} of {count} Workloads finished and released "
                f"({len(self.workloads)} seen)"
            ),
        )


@dataclass
class RoundResult:
    jobs: int
    reconciler_cpu: float
    webhook_cpu: float
    admissions: float
    seconds: float
    load: tuple[str, str]
    #: the devcluster process (API server, Kueue stand-in, job runner) over the same window
    devcluster_cpu: float = 0.0
    #: peak resident memory (MiB) of the reconciler and the webhook at the end of the round
    peak_rss: tuple[float, float] = (0.0, 0.0)
    work: dict[str, dict[str, float]] = field(default_factory=dict)
    breakdown: Breakdown | None = None
    profile: Path | None = None
    top: list[tuple[str, int, int]] = field(default_factory=list)
    webhook_profile: Path | None = None
    webhook_top: list[tuple[str, int, int]] = field(default_factory=list)

    @property
    def reconciler_ms_per_job(self) -> float:
        return self.reconciler_cpu / self.jobs * 1000

    @property
    def devcluster_ms_per_job(self) -> float:
        return self.devcluster_cpu / self.jobs * 1000

    @property
    def webhook_ms_per_admission(self) -> float:
        return self.webhook_cpu / max(self.admissions, 1) * 1000


async def _create_jobs(client: KubeClient, *, jobs: int, concurrency: int, run_seconds: float) -> None:
    gate = asyncio.Semaphore(concurrency)

    async def one(index: int) -> None:
        async with gate:
            await client.create(JOB, job_body(index, run_seconds=run_seconds), namespace=BENCH_NAMESPACE)

    await asyncio.gather(*(one(i) for i in range(jobs)))


async def work_done(components: Components) -> dict[str, dict[str, float]]:
    samples = await scrape(components.reconciler_metrics)
    prefix = "kueue_bridge_"
    return {
        "reconciles": by_label(samples, f"{prefix}controller_runtime_reconcile_total", "result"),
        "requests": by_label(samples, f"{prefix}rest_client_requests_total", "verb"),
        "watch events": by_label(samples, f"{prefix}watch_events_total", "resource"),
        "events": by_label(samples, f"{prefix}events_emitted_total", "action"),
        "watch restarts": by_label(samples, f"{prefix}watch_restarts_total", "reason"),
        "conflicts": by_label(samples, f"{prefix}controller_runtime_reconcile_conflicts_total", "controller"),
    }


async def run_round(args: argparse.Namespace, *, number: int, out: Path) -> RoundResult:
    with (
        tempfile.TemporaryDirectory(prefix="bench-reconciler-cpu-") as tmp_name,
        devcluster_process(Path(tmp_name), extra_args=("--kueue-standin", "--job-runner")) as (
            devcluster,
            kubeconfig,
        ),
    ):
        tmp = Path(tmp_name)
        async with contextlib.AsyncExitStack() as stack:
            client = await stack.enter_async_context(client_for(kubeconfig))
            await setup_queues(client, jobs=args.jobs + 1)
            components = await start_components(
                stack,
                tmp=tmp,
                kubeconfig=kubeconfig,
                client=client,
                qps=args.qps,
                reconcile_concurrency=args.reconcile_concurrency,
            )
            lifecycles = Lifecycles()
            watcher = asyncio.create_task(lifecycles.watch(client))
            stack.callback(watcher.cancel)
            # warm-up: one whole lifecycle (caches synced, connections open, every code path imported)
            await client.create(JOB, job_body(-1, run_seconds=args.run_seconds), namespace=BENCH_NAMESPACE)
            await lifecycles.wait_for(1, within=120)
            reconciler_pid, webhook_pid = components.reconciler.pid, components.webhook.pid
            assert reconciler_pid is not None and webhook_pid is not None
            await quiet(reconciler_pid)

            load_before = load_average()
            work_before = await work_done(components)
            admissions_before = total(
                await scrape(components.webhook_metrics, verify=components.verify),
                "kueue_bridge_webhook_requests_total",
            )
            samplers: list[Sampler | PerfSampler] = []
            if args.profile:
                for name, pid in (("reconciler", reconciler_pid), ("webhook", webhook_pid)):
                    samplers.append(start_sampler(args, pid, out / f"{name}-round{number}"))
                await asyncio.sleep(0.5)  # py-spy attaches
            cpu_before = (
                process_cpu_seconds(reconciler_pid),
                process_cpu_seconds(webhook_pid),
                process_cpu_seconds(devcluster.pid),
            )
            started = time.monotonic()
            await _create_jobs(
                client, jobs=args.jobs, concurrency=args.concurrency, run_seconds=args.run_seconds
            )
            await lifecycles.wait_for(args.jobs + 1, within=LIFECYCLE_TIMEOUT)
            await quiet(reconciler_pid)
            cpu_after = (
                process_cpu_seconds(reconciler_pid),
                process_cpu_seconds(webhook_pid),
                process_cpu_seconds(devcluster.pid),
            )
            peak_rss = (process_peak_rss_mib(reconciler_pid), process_peak_rss_mib(webhook_pid))
            seconds = time.monotonic() - started
            profiled = [sampler.stop() for sampler in samplers]
            load_after = load_average()
            admissions = (
                total(
                    await scrape(components.webhook_metrics, verify=components.verify),
                    "kueue_bridge_webhook_requests_total",
                )
                - admissions_before
            )
            work_after = await work_done(components)
            for name in ("reconciler.log", "webhook.log"):
                with contextlib.suppress(OSError):
                    (out / f"round{number}-{name}").write_bytes((tmp / name).read_bytes())
    result = RoundResult(
        jobs=args.jobs,
        reconciler_cpu=cpu_after[0] - cpu_before[0],
        webhook_cpu=cpu_after[1] - cpu_before[1],
        devcluster_cpu=cpu_after[2] - cpu_before[2],
        admissions=admissions,
        seconds=seconds,
        load=(load_before, load_after),
        peak_rss=peak_rss,
        work={key: delta(work_after[key], work_before.get(key, {})) for key in work_after},
    )
    if samplers and all(profiled):
        result.breakdown, stacks = read_breakdown(samplers[0].output)
        result.profile = samplers[0].output
        result.top = top_functions(stacks, limit=args.top)
        _, webhook_stacks = read_breakdown(samplers[1].output)
        result.webhook_profile = samplers[1].output
        result.webhook_top = top_functions(webhook_stacks, limit=args.top)
    return result


def print_round(result: RoundResult) -> None:
    jobs = result.jobs
    print(
        f"{jobs} job lifecycles in {result.seconds:.1f}s (load average {result.load[0]} before, "
        f"{result.load[1]} after)"
    )
    print(
        f"reconciler: {result.reconciler_cpu:.2f} CPU s = {result.reconciler_ms_per_job:.2f} ms per job "
        "(target <= 5 ms)"
    )
    print(
        f"webhook: {result.webhook_cpu:.2f} CPU s for {result.admissions:.0f} admissions = "
        f"{result.webhook_ms_per_admission:.3f} ms per admission (target <= 1 ms); "
        f"{result.webhook_cpu / jobs * 1000:.2f} ms per job"
    )
    print(
        f"devcluster (API server, Kueue stand-in, job runner): {result.devcluster_cpu:.2f} CPU s = "
        f"{result.devcluster_ms_per_job:.2f} ms per job"
    )
    print(f"peak RSS: reconciler {result.peak_rss[0]:.0f} MiB, webhook {result.peak_rss[1]:.0f} MiB")
    for what, counts in result.work.items():
        parts = ", ".join(f"{key or '-'} {value / jobs:.2f}" for key, value in sorted(counts.items()))
        print(f"  per job, {what}: {sum(counts.values()) / jobs:.2f} ({parts})")
    if result.breakdown is not None:
        print(f"reconciler CPU by part ({result.breakdown.total} samples, {result.profile}):")
        for part in PARTS:
            share = result.breakdown.share(part)
            print(
                f"  {part:<34} {share * 100:5.1f} %  {share * result.reconciler_ms_per_job:5.2f} ms per job"
            )
        print("  top functions by own samples (own, with callees):")
        for name, own, inclusive in result.top:
            print(f"    {own:6d} {inclusive:6d}  {name}")
    if result.webhook_profile is not None:
        print(f"webhook top functions by own samples ({result.webhook_profile}):")
        for name, own, inclusive in result.webhook_top:
            print(f"    {own:6d} {inclusive:6d}  {name}")
