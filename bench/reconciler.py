"""Benchmark of the job reconciler on a devcluster: Workload creation throughput and start latency.

Prints, for ``--jobs`` queued batch/v1 Jobs (default 1,000):

* **burst -> Workloads**: the Jobs are created in a burst (``--concurrency`` parallel creates)
  while ``kueue-bridge reconciler`` runs (a real subprocess, as deployed); measured from the first
  create until the last Workload exists (seen through a watch) — the reconciler writes each
  Workload and its first status (``PodsReady`` WaitForStart), i.e. one create and one status write
  per job, plus one Event;
* **ceiling**: in the same run, the same number of Workload creates plus status merge-patches by
  a plain ``KubeClient`` loop at the same concurrency, in its own process (like the reconciler),
  against the same server — what the API server can take; printed with the ratio
  ``ceiling time / reconciler time`` (target >= 0.8);
* **admission -> unsuspend**: each Workload is admitted by writing its status as Kueue's scheduler
  does (``--admit-concurrency`` at a time); latency from just before the status write until the
  Job's ``spec.suspend`` is false in a watch, p50/p99/max (target p99 <= 200 ms).

The devcluster (``devcluster.server.ThreadedDevCluster``) runs in this process on its own thread
and event loop, with Kueue's real CRDs from ``../shared/crds/kueue``. Everything shares two cores,
so absolute numbers move with the machine; the ratio is the figure to watch. The reconciler's
client rate limit is raised (``--qps``) so the figure measures the reconciler, not its limiter.

    .venv/bin/python bench/reconciler.py [--jobs 1000] [--concurrency 16] [--qps 5000]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import multiprocessing
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from devcluster.server import ThreadedDevCluster  # noqa: E402
from shared.frameworks.base import GroupVersionKind  # noqa: E402
from shared.kube import AlreadyExists, ClientSettings, KubeClient, load_kubeconfig  # noqa: E402
from shared.kube.watch import EventType, Watch  # noqa: E402

__all__ = ["main"]

JOB = GroupVersionKind("batch", "v1", "Job")
WORKLOAD = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "Workload")
NAMESPACE = GroupVersionKind("", "v1", "Namespace")
FLAVOR = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "ResourceFlavor")
CRD = GroupVersionKind("apiextensions.k8s.io", "v1", "CustomResourceDefinition")
SHARED = REPO.parent / "shared"
KUEUE_CRDS = ("workloads", "resourceflavors", "workloadpriorityclasses")
POD_SPEC = {
    "restartPolicy": "Never",
    "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}],
}
NOW = "2026-11-22T00:00:00Z"


def client_for(kubeconfig: Path) -> KubeClient:
    return KubeClient.from_connection(
        load_kubeconfig(kubeconfig), settings=ClientSettings(qps=100000, burst=100000)
    )


def job(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {"kueue.x-k8s.io/queue-name": "q"}},
        "spec": {"suspend": True, "parallelism": 1, "completions": 1, "template": {"spec": POD_SPEC}},
    }


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
        for name in KUEUE_CRDS:
            for document in yaml.safe_load_all(
                (SHARED / "crds" / "kueue" / f"kueue.x-k8s.io_{name}.yaml").read_text()
            ):
                if document and document.get("kind") == "CustomResourceDefinition":
                    with contextlib.suppress(AlreadyExists):
                        await client.create(CRD, document)
        for namespace in ("kueue-system", "bench", "ceiling"):
            await client.create(NAMESPACE, {"metadata": {"name": namespace}})
        await client.create(FLAVOR, {"metadata": {"name": "default"}})
        while True:
            try:
                await client.list(WORKLOAD, namespace="bench")
                return
            except Exception:
                await asyncio.sleep(0.05)


# --- the ceiling: a plain client loop in its own process ----------------------------------------
async def _ceiling(kubeconfig: Path, jobs: int, concurrency: int) -> float:
    async with client_for(kubeconfig) as client:
        await client.list(WORKLOAD, namespace="ceiling")  # discovery and connection outside the timing
        started = time.perf_counter()

        def one(index: int) -> Any:
            async def call() -> None:
                created = await client.create(WORKLOAD, raw_workload(f"raw-{index}"), namespace="ceiling")
                condition = {
                    "type": "PodsReady",
                    "status": "False",
                    "reason": "WaitForStart",
                    "message": "Not all pods are ready or succeeded",
                    "lastTransitionTime": NOW,
                }
                patch = {
                    "metadata": {"resourceVersion": created["metadata"]["resourceVersion"]},
                    "status": {"conditions": [condition]},
                }
                await client.patch(WORKLOAD, f"raw-{index}", patch, namespace="ceiling", subresource="status")

            return call

        await bounded(concurrency, [one(i) for i in range(jobs)])
        return time.perf_counter() - started


def _ceiling_process(kubeconfig: str, jobs: int, concurrency: int, out: Any) -> None:
    out.put(asyncio.run(_ceiling(Path(kubeconfig), jobs, concurrency)))


def measure_ceiling(kubeconfig: Path, jobs: int, concurrency: int) -> float:
    context = multiprocessing.get_context("spawn")
    out = context.Queue()
    process = context.Process(target=_ceiling_process, args=(str(kubeconfig), jobs, concurrency, out))
    process.start()
    seconds = float(out.get(timeout=600))
    process.join()
    out.close()
    return seconds


# --- the reconciler --------------------------------------------------------------------------------
class Watcher:
    """Counts Workloads and records when each Job is first seen unsuspended (one watch per kind)."""

    def __init__(self) -> None:
        self.workloads: set[str] = set()
        self.workload_seen = asyncio.Event()
        self.expected = 0
        self.unsuspended: dict[str, float] = {}
        self.all_unsuspended = asyncio.Event()

    async def watch_workloads(self, client: KubeClient) -> None:
        async for event in Watch(client, WORKLOAD, namespace="bench").events():
            if event.type not in (EventType.ADDED, EventType.MODIFIED):
                continue
            owners = (event.object.get("metadata") or {}).get("ownerReferences") or []
            if owners:
                self.workloads.add(owners[0]["name"])
            if len(self.workloads) >= self.expected:
                self.workload_seen.set()

    async def watch_jobs(self, client: KubeClient) -> None:
        async for event in Watch(client, JOB, namespace="bench").events():
            if event.type not in (EventType.ADDED, EventType.MODIFIED):
                continue
            name = event.object["metadata"]["name"]
            if event.object["spec"].get("suspend") is False and name not in self.unsuspended:
                self.unsuspended[name] = time.perf_counter()
                if len(self.unsuspended) >= self.expected:
                    self.all_unsuspended.set()


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


async def run(args: argparse.Namespace) -> None:
    with ThreadedDevCluster() as cluster, tempfile.TemporaryDirectory(prefix="bench-reconciler-") as tmp:
        kubeconfig = cluster.kubeconfig_path
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
        print("measuring the ceiling", file=sys.stderr)
        ceiling = measure_ceiling(kubeconfig, args.jobs, args.concurrency)
        print(f"ceiling {ceiling:.2f}s; starting the reconciler", file=sys.stderr)
        log = (Path(tmp) / "reconciler.log").open("wb")
        profile = ["-m", "cProfile", "-o", args.profile] if args.profile else []
        command = [sys.executable, *profile, "-m", "kueue_bridge.cli", "reconciler", "--config", str(config)]
        command += [
            "--kubeconfig",
            str(kubeconfig),
            "--probe-address",
            "127.0.0.1:0",
            "--workers",
            str(args.workers),
        ]
        process = await asyncio.create_subprocess_exec(*command, stdout=log, stderr=subprocess.STDOUT)
        try:
            async with client_for(kubeconfig) as client, client_for(kubeconfig) as watch_client:
                watcher = Watcher()
                watcher.expected = 1
                tasks = [
                    asyncio.create_task(watcher.watch_workloads(watch_client)),
                    asyncio.create_task(watcher.watch_jobs(watch_client)),
                ]
                await client.create(JOB, job("warm-up"), namespace="bench")  # leader elected, caches synced
                print("waiting for the reconciler to lead and sync", file=sys.stderr)
                await asyncio.wait_for(watcher.workload_seen.wait(), 120)
                watcher.expected = args.jobs + 1
                watcher.workload_seen.clear()

                started = time.perf_counter()
                await bounded(
                    args.concurrency,
                    [
                        lambda i=i: client.create(JOB, job(f"job-{i}"), namespace="bench")
                        for i in range(args.jobs)
                    ],
                )
                created = time.perf_counter() - started
                await asyncio.wait_for(watcher.workload_seen.wait(), 600)
                burst = time.perf_counter() - started

                await asyncio.sleep(1.0)  # let PodsReady writes settle so admissions rarely conflict
                listed = (await client.list(WORKLOAD, namespace="bench"))["items"]
                sent: dict[str, float] = {}

                def admit(workload: dict[str, Any]) -> Any:
                    async def call() -> None:
                        owner = workload["metadata"]["ownerReferences"][0]["name"]
                        for _ in range(5):
                            sent[owner] = time.perf_counter()
                            try:
                                await client.update_status(WORKLOAD, admit_body(workload), namespace="bench")
                                return
                            except Exception:
                                workload.update(
                                    await client.get(
                                        WORKLOAD, workload["metadata"]["name"], namespace="bench"
                                    )
                                )

                    return call

                watcher.expected = len(listed)
                flood = listed[: len(listed) // 2]
                paced = listed[len(listed) // 2 :]
                await bounded(args.admit_concurrency, [admit(w) for w in flood])
                flood_names = {w["metadata"]["ownerReferences"][0]["name"] for w in flood}
                while not flood_names <= watcher.unsuspended.keys():  # noqa: ASYNC110 - a bench poll, 50 ms
                    await asyncio.sleep(0.05)
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
                paced_latencies = latencies_of({w["metadata"]["ownerReferences"][0]["name"] for w in paced})
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
        finally:
            if process.returncode is None:
                process.terminate()
            await asyncio.wait_for(process.wait(), 60)
            log.close()

    print(f"jobs: {args.jobs}, create concurrency: {args.concurrency}, reconciler workers: {args.workers}")
    print(
        f"burst: jobs created in {created:.2f}s; every Workload existed after {burst:.2f}s ({args.jobs / burst:.0f}/s)"
    )
    print(
        f"ceiling: {args.jobs} Workload creates + status patches in {ceiling:.2f}s ({args.jobs / ceiling:.0f}/s)"
    )
    print(f"ratio (ceiling time / reconciler time): {ceiling / burst:.2f}x (target >= 0.8x)")
    for label, values in (
        (f"flood, {args.admit_concurrency} admissions in flight", flood_latencies),
        (f"paced, {args.admit_rate:.0f} admissions/s", paced_latencies),
    ):
        millis = [value * 1000 for value in values]
        print(
            f"admission -> unsuspended ({label}, {len(millis)} jobs): p50 {statistics.median(millis):.0f} ms, "
            f"p99 {percentile(millis, 0.99):.0f} ms, max {max(millis):.0f} ms (target p99 <= 200 ms)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--admit-concurrency", type=int, default=4)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--qps", type=int, default=5000)
    parser.add_argument("--admit-rate", type=float, default=100.0, help="admissions/s for the latency figure")
    parser.add_argument("--profile", help="write the reconciler's cProfile stats to this file")
    asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    main()
