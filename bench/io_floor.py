"""The I/O floor of a Python controller: client CPU per API request and per watch event, on a real
kube-apiserver.

``python -m bench.reconciler_cpu --real`` measures the reconciler as deployed: per job about 10 API
requests (creates and merge patches, answers not decoded) and 10 watch events (Jobs and Workloads,
``managedFields`` dropped), plus the decisions. This bench measures only what the first two cost in
this process's runtime -- ``shared.kube``'s client over TLS, uvloop, its informer -- with no
decision, no work queue, no event recorder and no metrics, so it is the least a process that makes
those requests and reads those events can spend per job:

* ``create``: POST of a queued batch Job, answer dropped (``decode=False``, as the reconciler's writes);
* ``patch``: a JSON merge patch of one label, answer dropped;
* ``watch event``: the same patches again with an ``Informer`` on the namespace (``managedFields``
  stripped, as the reconciler's); its extra CPU divided by the events it delivered.

All at ``--concurrency`` requests in flight (the reconciler's default reconcile concurrency is 16).
It prints each figure's median and range over ``--rounds`` and the floor per job at the
reconciler's counts: ``--requests`` x the write cost + ``--events`` x the event cost. CPU is
``time.process_time`` of this process: the bench's own loop is all that runs in it.

    .venv/bin/python -m bench.io_floor [--jobs 500] [--rounds 3] [--kubeconfig PATH]

Without ``--kubeconfig`` it starts the kit's kube-apiserver (``../shared/real-cluster``, no Kueue)
in a temporary state folder and stops it at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.harness.load import queued_job, run_concurrently
from bench.harness.processes import load_average
from bench.harness.real_cluster import bench_cluster
from shared.eventloop import run_process_loop
from shared.kube import ClientSettings, KubeClient, load_kubeconfig
from shared.kube.informer import EventHandler, Informer, strip_managed_fields
from shared.kube.kinds import JOB_GVK, NAMESPACE_GVK

__all__ = ["main"]

#: the reconciler's requests and watch events per job (``python -m bench.reconciler_cpu --real``)
RECONCILER_REQUESTS = 10
RECONCILER_EVENTS = 10


@dataclass(frozen=True)
class Round:
    create_ms: float
    patch_ms: float
    event_ms: float
    load: str


async def _cpu_ms_per(count: int, work: Callable[[], Awaitable[Any]]) -> float:
    started = time.process_time()
    await work()
    return (time.process_time() - started) * 1000 / count


async def one_round(client: KubeClient, *, number: int, jobs: int, concurrency: int) -> Round:
    namespace = f"io-floor-{number}-{time.monotonic_ns() % 10**6}"
    await client.create(NAMESPACE_GVK, {"metadata": {"name": namespace}}, decode=False)
    names = [f"job-{i}" for i in range(jobs)]

    async def creates() -> None:
        async def one(i: int) -> None:
            body = queued_job(names[i], queue="floor", cpu="10m", run_seconds=1)
            await client.create(JOB_GVK, body, namespace=namespace, decode=False)

        await run_concurrently(jobs, concurrency, one)

    def patches(label: str) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            async def one(i: int) -> None:
                patch = {"metadata": {"labels": {"floor": label}}}
                await client.patch(JOB_GVK, names[i], patch, namespace=namespace, decode=False)

            await run_concurrently(jobs, concurrency, one)

        return run

    create_ms = await _cpu_ms_per(jobs, creates)
    patch_ms = await _cpu_ms_per(jobs, patches("plain"))

    delivered = 0
    all_delivered = asyncio.Event()

    def count(*_: Any) -> None:
        nonlocal delivered
        delivered += 1
        if delivered >= jobs:
            all_delivered.set()

    informer = Informer(client, JOB_GVK, namespace=namespace, transform=strip_managed_fields)
    informer.add_handler(EventHandler(on_update=count))
    watching = asyncio.create_task(informer.run())
    try:
        await informer.wait_synced()

        async def watched() -> None:
            await patches("watched")()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(all_delivered.wait(), timeout=120)

        watched_ms = await _cpu_ms_per(jobs, watched)
    finally:
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching
    if delivered < jobs:
        raise RuntimeError(f"the informer delivered {delivered} of {jobs} update events")
    return Round(create_ms=create_ms, patch_ms=patch_ms, event_ms=watched_ms - patch_ms, load=load_average())


def _spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} ({min(values):.3f}-{max(values):.3f})"


@contextlib.contextmanager
def _kubeconfig(given: Path | None) -> Iterator[Path]:
    if given is not None:
        yield given
        return
    with tempfile.TemporaryDirectory(prefix="bench-io-floor-") as state:
        cluster = bench_cluster(Path(state) / "cluster")
        cluster.start_apiserver(apply_kueue_crds=False)
        try:
            yield cluster.kubeconfig
        finally:
            cluster.stop()


async def run(args: argparse.Namespace, kubeconfig: Path) -> list[Round]:
    settings = ClientSettings(qps=100000, burst=100000)
    async with KubeClient.from_connection(load_kubeconfig(kubeconfig), settings=settings) as client:
        await one_round(client, number=0, jobs=min(args.jobs, 50), concurrency=args.concurrency)  # warm-up
        rounds = []
        for number in range(1, args.rounds + 1):
            result = await one_round(client, number=number, jobs=args.jobs, concurrency=args.concurrency)
            print(
                f"round {number}: create {result.create_ms:.3f} ms, patch {result.patch_ms:.3f} ms, "
                f"watch event {result.event_ms:.3f} ms (load {result.load})",
                flush=True,
            )
            rounds.append(result)
        return rounds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--requests", type=int, default=RECONCILER_REQUESTS, help="requests per job")
    parser.add_argument("--events", type=int, default=RECONCILER_EVENTS, help="watch events per job")
    parser.add_argument("--kubeconfig", type=Path, default=None, help="a running API server")
    args = parser.parse_args(argv)
    with _kubeconfig(args.kubeconfig) as kubeconfig:
        rounds = run_process_loop(run(args, kubeconfig))
    writes = [r.create_ms * 0.4 + r.patch_ms * 0.6 for r in rounds]
    floors = [w * args.requests + r.event_ms * args.events for w, r in zip(writes, rounds, strict=True)]
    print(f"\nmedian (range) over {len(rounds)} rounds of {args.jobs} jobs, client CPU ms:")
    print(f"  create (answer dropped)         {_spread([r.create_ms for r in rounds])}")
    print(f"  merge patch (answer dropped)    {_spread([r.patch_ms for r in rounds])}")
    print(f"  watch event (informer)          {_spread([r.event_ms for r in rounds])}")
    print(
        f"  floor per job: {args.requests} requests (4 creates : 6 patches, as the reconciler's) + "
        f"{args.events} watch events = {_spread(floors)} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
