"""The reconciler's memory per Job with its Workload, counted with tracemalloc (valid on a busy machine).

A devcluster (its own process) holds ``--jobs`` queued batch Jobs, created suspended in
``--namespaces`` namespaces each with its LocalQueue. Each round starts the reconciler's controllers
*in this process*, exactly as ``kueue-bridge reconciler`` wires them (``ReconcilerControllers.from_config``
with the process's event recorder), lets them list every Job, create (first round) or find (later
rounds) every Workload and reconcile every job once, and waits until the work queues are empty. It
then counts the Python memory the controllers hold (tracemalloc, after a full collection) against a
snapshot taken before they started, and divides by the number of jobs: **bytes per Job with its
Workload**, everything the process keeps for them (the cached objects, the index entries, the work
queues' per-key records, the equivalence verdicts, the event recorder's series, metric children),
without the fixed cost of one set of controllers (connections, TLS buffers, metrics), as an RSS
growth from 500 to 5,000 Jobs is read. The cached Jobs' and Workloads' bytes per part are printed
once (``metadata.labels``, ``spec.template``, ``status``...).

What is counted is allocations, not time: the figure is the same on an idle and on a loaded machine.
The lines that hold the most are printed (``--top``), so a regression shows where it went. Nothing
here admits the Workloads (no Kueue stand-in): the state is a pending backlog, the case that keeps
the most jobs and Workloads cached. Target: at most 10 KB per Job with its Workload.

The RSS of the process before and after is printed too, for comparison with a
``/proc`` figure; it includes the allocator's free lists and is neither deterministic nor per-object.

    .venv/bin/python -m bench.cache_memory [--jobs 2000] [--namespaces 100] [--rounds 3] [--top 12]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any, Final

from prometheus_client import CollectorRegistry

from bench.harness.clusters import client_for, devcluster_process, setup_queues
from bench.harness.load import queued_job, run_concurrently
from bench.harness.processes import load_average
from reconciler.event_reporting import RecorderSink, reporters_for, workload_event_counter
from reconciler.manager import ReconcilerControllers
from shared.config import default_config
from shared.constants import LOCAL_QUEUE_GVK
from shared.kube import (
    JOB_GVK,
    NAMESPACE_GVK,
    ClientSettings,
    EventRecorder,
    EventSettings,
    KubeClient,
    load_kubeconfig,
)

__all__ = ["TARGET_BYTES_PER_JOB", "main", "measure_round"]

#: the target: reconciler memory growth per Job with its Workload
TARGET_BYTES_PER_JOB: Final = 10 * 1024
QUEUE: Final = "scale"


def namespace_name(index: int) -> str:
    return f"scale-{index:03d}"


async def populate(kubeconfig: Path, *, first: int, jobs: int, namespaces: int, setup: bool) -> None:
    """Suspended queued Jobs ``first`` to ``jobs`` (excluded); with ``setup``, the queues and
    ``namespaces`` namespaces first, each with its LocalQueue."""
    client = client_for(kubeconfig)
    async with client:
        for n in range(namespaces if setup else 0):
            if n == 0:
                await setup_queues(client, jobs=jobs)
            namespace = namespace_name(n)
            await client.create(NAMESPACE_GVK, {"metadata": {"name": namespace}})
            await client.create(
                LOCAL_QUEUE_GVK,
                {"metadata": {"name": QUEUE, "namespace": namespace}, "spec": {"clusterQueue": "bench"}},
            )

        async def one(index: int) -> None:
            body = queued_job(
                f"job-{index:05d}",
                queue=QUEUE,
                cpu="10m",
                namespace=namespace_name(index % namespaces),
                spec={"suspend": True},
            )
            await client.create(JOB_GVK, body)

        await run_concurrently(jobs - first, 32, lambda n: one(first + n))


def rss_kib() -> int:
    for line in Path(f"/proc/{os.getpid()}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


async def _settled(controllers: ReconcilerControllers, *, jobs: int, within: float) -> None:
    """Every Workload cached and every work queue empty, twice in a row 0.5 s apart."""
    workloads = controllers.informers[[i.gvk.kind for i in controllers.informers].index("Workload")]
    deadline = time.monotonic() + within
    calm = 0
    while calm < 2:
        if time.monotonic() > deadline:
            raise TimeoutError(f"not settled: {len(workloads.store)} of {jobs} Workloads cached")
        busy = any(len(c.queue) or c.queue.processing or c.queue.waiting for c in controllers.controllers)
        calm = calm + 1 if len(workloads.store) >= jobs and not busy else 0
        await asyncio.sleep(0.5)


def _deep_size(obj: Any, seen: set[int]) -> int:
    """Bytes of ``obj`` and everything it holds, each object counted once across calls (``seen``)."""
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    size = sys.getsizeof(obj)
    if isinstance(obj, dict):
        size += sum(_deep_size(k, seen) + _deep_size(v, seen) for k, v in obj.items())
    elif isinstance(obj, list | tuple):
        size += sum(_deep_size(v, seen) for v in obj)
    return size


def cached_parts(store: list[dict[str, Any]]) -> dict[str, int]:
    """Bytes per part of the cached objects (``metadata.labels``, ``spec.template``, ``status``...),
    each Python object counted once over the whole store (shared strings count once)."""
    seen: set[int] = set()
    parts: dict[str, int] = {}
    for obj in store:
        for key, value in obj.items():
            if isinstance(value, dict) and key in ("metadata", "spec"):
                for sub, inner in value.items():
                    name = f"{key}.{sub}"
                    parts[name] = parts.get(name, 0) + _deep_size(sub, seen) + _deep_size(inner, seen)
                parts[f"{key} (dict)"] = parts.get(f"{key} (dict)", 0) + _deep_size_shallow(value, seen)
            else:
                parts[key] = parts.get(key, 0) + _deep_size(key, seen) + _deep_size(value, seen)
        parts["(object dict)"] = parts.get("(object dict)", 0) + _deep_size_shallow(obj, seen)
    return parts


def _deep_size_shallow(obj: Any, seen: set[int]) -> int:
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    return sys.getsizeof(obj)


def _top_lines(diff: list[tracemalloc.StatisticDiff], top: int) -> list[str]:
    lines = []
    for stat in sorted(diff, key=lambda s: s.size_diff, reverse=True)[:top]:
        frame = stat.traceback[0]
        where = os.path.relpath(frame.filename)
        lines.append(f"    {stat.size_diff:12,d} B  {stat.count_diff:8,d} blocks  {where}:{frame.lineno}")
    return lines


async def measure_round(
    kubeconfig: Path, *, jobs: int, top: int, parts: bool = False
) -> tuple[int, int, list[str]]:
    """(bytes held in all, RSS growth in KiB, the lines holding the most) for one set of controllers;
    with ``parts``, the cached Jobs' and Workloads' bytes per part are printed."""
    config = default_config()
    gc.collect()
    rss_before = rss_kib()
    tracemalloc.start(1)
    before = tracemalloc.take_snapshot()
    client = KubeClient.from_connection(
        load_kubeconfig(kubeconfig), settings=ClientSettings(qps=100000, burst=100000)
    )
    async with client:
        recorder = EventRecorder(
            client, EventSettings(reporting_controller="kueue-bridge-reconciler", reporting_instance="bench")
        )
        recorder_task = asyncio.create_task(recorder.run())
        events = RecorderSink(
            recorder,
            workload_events=workload_event_counter(CollectorRegistry()),
            reporters=reporters_for(config),
        )
        controllers = ReconcilerControllers.from_config(config, client=client, events=events)
        task = asyncio.create_task(controllers.run())
        try:
            await _settled(controllers, jobs=jobs, within=max(300.0, jobs * 0.2))
            gc.collect()
            after = tracemalloc.take_snapshot()
            if parts:
                for informer in controllers.informers:
                    if informer.gvk.kind in ("Job", "Workload"):
                        held = cached_parts(informer.store.list())
                        count = max(len(informer.store), 1)
                        shown = ", ".join(
                            f"{name} {size / count:,.0f}"
                            for name, size in sorted(held.items(), key=lambda kv: -kv[1])
                            if size / count >= 50
                        )
                        print(
                            f"  cached {informer.gvk.kind}: {sum(held.values()) / count:,.0f} B each ({shown})"
                        )
            rss_growth = rss_kib() - rss_before
        finally:
            task.cancel()
            recorder_task.cancel()
            await asyncio.gather(task, recorder_task, return_exceptions=True)
    tracemalloc.stop()
    filters = [tracemalloc.Filter(False, tracemalloc.__file__)]
    diff = after.filter_traces(filters).compare_to(before.filter_traces(filters), "lineno")
    retained = sum(stat.size_diff for stat in diff)
    return retained, rss_growth, _top_lines(diff, top)


async def main_async(args: argparse.Namespace) -> int:
    print(f"python {sys.version.split()[0]}; load average {load_average()}; {os.cpu_count()} cores")
    small = max(args.jobs // 5, 1)
    held: dict[int, list[int]] = {}
    rss: dict[int, list[int]] = {}
    with (
        tempfile.TemporaryDirectory(prefix="cache-memory-") as tmp,
        devcluster_process(Path(tmp)) as (_, kubeconfig),
    ):
        created = 0
        for size in (small, args.jobs):
            started = time.monotonic()
            await populate(
                kubeconfig, first=created, jobs=size, namespaces=args.namespaces, setup=created == 0
            )
            created = size
            print(
                f"{size:,} queued Jobs in {args.namespaces} namespaces ({time.monotonic() - started:.1f} s)"
            )
            for number in range(1, args.rounds + 1):
                started = time.monotonic()
                first = size == args.jobs and number == 1
                total, rss_growth, lines = await measure_round(
                    kubeconfig, jobs=size, top=args.top, parts=first
                )
                held.setdefault(size, []).append(total)
                rss.setdefault(size, []).append(rss_growth)
                print(
                    f"  round {number} at {size:,} Jobs: {total / 2**20:,.2f} MiB held "
                    f"(RSS +{rss_growth / 1024:,.1f} MiB); {time.monotonic() - started:.1f} s; "
                    f"load average {load_average()}"
                )
                if first:
                    print("  held the most (tracemalloc, by line):")
                    print("\n".join(lines))
    grown = args.jobs - small
    per_job = [(big - little) / grown for big in held[args.jobs] for little in held[small]]
    median = (statistics.median(held[args.jobs]) - statistics.median(held[small])) / grown
    rss_per_job = (statistics.median(rss[args.jobs]) - statistics.median(rss[small])) * 1024 / grown
    verdict = "met" if median <= TARGET_BYTES_PER_JOB else "NOT met"
    print(
        f"reconciler memory growth: {median:,.0f} bytes per Job with its Workload from {small:,} to "
        f"{args.jobs:,} Jobs (tracemalloc, medians of {args.rounds} rounds at each size; range "
        f"{min(per_job):,.0f}-{max(per_job):,.0f}); RSS {rss_per_job:,.0f} bytes per Job (not deterministic); "
        f"target <= {TARGET_BYTES_PER_JOB:,} bytes: {verdict}; x 50,000 Jobs = {median * 50_000 / 2**20:,.0f} MiB"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=2000, help="queued Jobs (each gets its Workload)")
    parser.add_argument("--namespaces", type=int, default=100, help="namespaces the Jobs spread over")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--top", type=int, default=12, help="lines holding the most, printed")
    parser.add_argument("--top-every-round", action="store_true")
    args = parser.parse_args(argv)
    return asyncio.run(main_async(args))


if __name__ == "__main__":
    sys.exit(main())
