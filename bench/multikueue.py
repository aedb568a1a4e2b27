"""Benchmark of kueue-bridge's MultiKueue: dispatch latency and status mirroring across two workers.

Three ``kueue-bridge devcluster`` processes (a manager and two workers, each with the Kueue stand-in
and the job runner), ``kueue-bridge reconciler`` on each, and ``kueue-bridge multikueue`` on the
manager, all separate processes as deployed. ``--jobs`` batch/v1 Jobs (default 500, 100m CPU and
``--run-seconds`` each) are queued on the manager at once, or ``--rate`` per second; quotas let every
job fit. Printed, from this process's own watches:

* **admission on the manager -> job on the winning worker**: from the moment the manager's Workload
  is seen with ``QuotaReserved=True`` until the job is seen created on a worker (p50/p99/max; target
  p99 <= 500 ms). It spans the dispatch of the copies, the worker's admission (its stand-in polls
  every 0.2 s) and the job's creation.
  The three steps are printed too, so a miss can be laid at the right door: reserved -> first
  copy (MultiKueue), first copy -> copy Admitted (the worker's Kueue stand-in), Admitted -> job
  created (MultiKueue); and, per job, MultiKueue's own steps added up (its two parts, without the
  worker's admission), measured against the same 500 ms.
* **remote status change -> manager job status**: from the moment a worker's job is seen
  ``Complete`` until the manager's job is (p50/p99/max; target p99 <= 1 s). The job's other
  visible change, ``status.active`` going up on the worker, is printed beside it but not counted
  against the target: it reaches the manager's job only once the manager has admitted the Workload
  and unsuspended its job (Kueue defers the status copy until then and looks again after 2 s).

A burst measures throughput more than latency: the manager reserves quota for all 500 within about a
second, every process of the three clusters competes for two cores, and each job waits for the ones
ahead of it. The rate at which the manager reserved quota and the rate at which jobs reached a worker
are printed, first to last. ``--rate`` submits at a steady rate instead, which measures the dispatch
latency of a system that keeps up with its arrivals.

Everything shares the machine's cores, so absolute numbers move with the load: each round prints
its wall time, the load average before and after, and the CPU seconds of every process (the three
devclusters with their Kueue stand-ins and job runners, the three reconcilers, multikueue, this
process). ``--rounds N`` runs N rounds on fresh clusters and ends with the median and range of
each p50/p99.

    .venv/bin/python bench/multikueue.py [--jobs 500] [--rate 0] [--run-seconds 1] [--rounds 1]
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from bench.devcluster import devcluster_process  # noqa: E402
from shared.constants import (  # noqa: E402
    ADMISSION_CHECK_GVK,
    CLUSTER_QUEUE_GVK,
    LOCAL_QUEUE_GVK,
    MULTIKUEUE_CLUSTER_GVK,
    MULTIKUEUE_CONFIG_GVK,
    RESOURCE_FLAVOR_GVK,
    WORKLOAD_GVK,
)
from shared.kube import (  # noqa: E402
    AlreadyExists,
    ClientSettings,
    KubeClient,
    Watch,
    load_kubeconfig,
)
from shared.kube.kinds import CRD_GVK, JOB_GVK, NAMESPACE_GVK, SECRET_GVK  # noqa: E402
from shared.kube.watch import EventType  # noqa: E402

SHARED = REPO.parent / "shared"
CRD = CRD_GVK
SECRET = SECRET_GVK
JOB = JOB_GVK
WORKLOAD = WORKLOAD_GVK
FLAVOR = RESOURCE_FLAVOR_GVK
CLUSTER_QUEUE = CLUSTER_QUEUE_GVK
LOCAL_QUEUE = LOCAL_QUEUE_GVK
ADMISSION_CHECK = ADMISSION_CHECK_GVK
MK_CONFIG = MULTIKUEUE_CONFIG_GVK
MK_CLUSTER = MULTIKUEUE_CLUSTER_GVK
KUEUE_CRDS = (
    "workloads",
    "resourceflavors",
    "workloadpriorityclasses",
    "clusterqueues",
    "localqueues",
    "admissionchecks",
    "multikueueconfigs",
    "multikueueclusters",
)

NAMESPACE = "bench"
PREBUILT = "kueue.x-k8s.io/prebuilt-workload-name"
CONFIG = {
    "apiVersion": "config.kueue.x-k8s.io/v1beta2",
    "kind": "Configuration",
    "namespace": "kueue-system",
    "leaderElection": {"leaderElect": False},
    "clientConnection": {"qps": 5000, "burst": 5000},
    "health": {"healthProbeBindAddress": "127.0.0.1:0"},
    "metrics": {"bindAddress": "0"},
}


def client_for(kubeconfig: Path) -> KubeClient:
    return KubeClient.from_connection(
        load_kubeconfig(kubeconfig), settings=ClientSettings(qps=5000, burst=5000)
    )


async def submit(client: KubeClient, args: argparse.Namespace, started: float) -> None:
    """Create the jobs on the manager: all at once (32 requests in flight), or one every
    ``1 / --rate`` seconds from ``started`` (a steady arrival rate, for latency below saturation)."""
    names = [f"j{index:04d}" for index in range(args.jobs)]
    if args.rate <= 0:
        for batch in range(0, len(names), 32):
            await asyncio.gather(
                *(
                    client.create(JOB, job(name, args.run_seconds), namespace=NAMESPACE)
                    for name in names[batch : batch + 32]
                )
            )
        return
    pending: set[asyncio.Task[Any]] = set()
    for index, name in enumerate(names):
        delay = started + index / args.rate - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)  # pacing the load generator, not waiting for a result
        task = asyncio.create_task(client.create(JOB, job(name, args.run_seconds), namespace=NAMESPACE))
        pending.add(task)
        task.add_done_callback(pending.discard)
    await asyncio.gather(*pending)


def throughput(observed: Observed) -> str:
    """How fast the manager reserved quota and how fast jobs reached a worker, first to last."""

    def rate(times: list[float]) -> str:
        if len(times) < 2 or times[-1] <= times[0]:
            return "n/a"
        return f"{(len(times) - 1) / (times[-1] - times[0]):.0f} jobs/s over {times[-1] - times[0]:.1f} s"

    reserved, dispatched = sorted(observed.reserved.values()), sorted(observed.remote_job.values())
    return f"quota reserved on the manager: {rate(reserved)}; jobs created on a worker: {rate(dispatched)}"


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


async def setup(client: KubeClient, *, cpu: str, check: bool) -> None:
    for name in KUEUE_CRDS:
        for document in yaml.safe_load_all(
            (SHARED / "crds" / "kueue" / f"kueue.x-k8s.io_{name}.yaml").read_text()
        ):
            if document and document.get("kind") == "CustomResourceDefinition":
                with contextlib.suppress(AlreadyExists):
                    await client.create(CRD, document)
    while True:
        try:
            await client.list(MK_CLUSTER)
            await client.list(WORKLOAD, namespace="default")
            break
        except Exception:
            await asyncio.sleep(0.05)
    for namespace in ("kueue-system", NAMESPACE):
        await client.create(NAMESPACE_GVK, {"metadata": {"name": namespace}})
    await client.create(FLAVOR, {"metadata": {"name": "default"}})
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": cpu}]}],
            }
        ],
    }
    if check:
        spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": "mk"}]}
    await client.create(CLUSTER_QUEUE, {"metadata": {"name": "cq"}, "spec": spec})
    await client.create(
        LOCAL_QUEUE, {"metadata": {"name": "q", "namespace": NAMESPACE}, "spec": {"clusterQueue": "cq"}}
    )


def job(name: str, run_seconds: float) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {"kueue.x-k8s.io/queue-name": "q"},
            "annotations": {"kueue-bridge.dev/run-seconds": str(run_seconds)},
        },
        "spec": {
            "suspend": True,
            "managedBy": "kueue.x-k8s.io/multikueue",
            "parallelism": 1,
            "completions": 1,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
                    ],
                }
            },
        },
    }


def complete(obj: dict[str, Any]) -> bool:
    return any(
        c.get("type") == "Complete" and c.get("status") == "True"
        for c in (obj.get("status") or {}).get("conditions") or []
    )


def active(obj: dict[str, Any]) -> bool:
    return bool(((obj.get("status") or {}).get("active") or 0) > 0)


class Observed:
    """What this process's watches saw, and when (monotonic seconds)."""

    def __init__(self, expected: int) -> None:
        self.expected = expected
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

    async def manager_workloads(self, client: KubeClient) -> None:
        async for event in Watch(client, WORKLOAD, namespace=NAMESPACE).events():
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

    async def manager_jobs(self, client: KubeClient) -> None:
        async for event in Watch(client, JOB, namespace=NAMESPACE).events():
            if event.type not in (EventType.ADDED, EventType.MODIFIED):
                continue
            name = event.object["metadata"]["name"]
            if active(event.object):
                self.local_active.setdefault(name, time.monotonic())
            if complete(event.object):
                self.local_complete.setdefault(name, time.monotonic())

    async def worker_workloads(self, client: KubeClient) -> None:
        async for event in Watch(client, WORKLOAD, namespace=NAMESPACE).events():
            if event.type not in (EventType.ADDED, EventType.MODIFIED):
                continue
            name = event.object["metadata"]["name"]
            self.copy.setdefault(name, time.monotonic())
            conditions = (event.object.get("status") or {}).get("conditions") or []
            if any(c.get("type") == "Admitted" and c.get("status") == "True" for c in conditions):
                self.copy_admitted.setdefault(name, time.monotonic())

    async def worker_jobs(self, client: KubeClient) -> None:
        async for event in Watch(client, JOB, namespace=NAMESPACE).events():
            if event.type not in (EventType.ADDED, EventType.MODIFIED):
                continue
            metadata = event.object["metadata"]
            prebuilt = (metadata.get("annotations") or {}).get(PREBUILT) or (
                metadata.get("labels") or {}
            ).get(PREBUILT)
            if prebuilt:
                self.remote_job.setdefault(prebuilt, time.monotonic())
            if active(event.object):
                self.remote_active.setdefault(metadata["name"], time.monotonic())
            if complete(event.object):
                self.remote_complete.setdefault(metadata["name"], time.monotonic())


@contextlib.contextmanager
def component(name: str, config: Path, kubeconfig: Path, log: Path) -> Iterator[subprocess.Popen[bytes]]:
    command = [
        sys.executable,
        "-m",
        "kueue_bridge.cli",
        name,
        "--config",
        str(config),
        "--kubeconfig",
        str(kubeconfig),
    ]
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100


def load() -> str:
    return "/".join(f"{value:.1f}" for value in os.getloadavg())


def between(start: dict[str, float], end: dict[str, float]) -> list[float]:
    return [end[name] - at for name, at in start.items() if name in end]


async def run(
    args: argparse.Namespace, tmp: Path, kubeconfigs: dict[str, Path], pids: dict[str, int]
) -> dict[str, list[float]] | None:
    """One round; the samples of both figures, or ``None`` when not every job finished."""
    clients = {name: client_for(path) for name, path in kubeconfigs.items()}
    try:
        await setup(clients["manager"], cpu=str(args.jobs), check=True)
        for name in ("w1", "w2"):
            await setup(clients[name], cpu=str(args.jobs), check=False)
            raw = kubeconfigs[name].read_bytes()
            await clients["manager"].create(
                SECRET,
                {
                    "metadata": {"name": name, "namespace": "kueue-system"},
                    "data": {"kubeconfig": base64.b64encode(raw).decode()},
                },
            )
            await clients["manager"].create(
                MK_CLUSTER,
                {"metadata": {"name": name}, "spec": {"clusterSource": {"kubeConfig": {"location": name}}}},
            )
        await clients["manager"].create(
            MK_CONFIG, {"metadata": {"name": "cfg"}, "spec": {"clusters": ["w1", "w2"]}}
        )
        await clients["manager"].create(
            ADMISSION_CHECK,
            {
                "metadata": {"name": "mk"},
                "spec": {
                    "controllerName": "kueue-bridge.dev/multikueue",
                    "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "cfg"},
                },
            },
        )
        config = tmp / "config.yaml"
        config.write_text(yaml.safe_dump(CONFIG))
        observed = Observed(args.jobs)
        watches = [
            asyncio.create_task(observed.manager_workloads(clients["manager"])),
            asyncio.create_task(observed.manager_jobs(clients["manager"])),
            *(asyncio.create_task(observed.worker_jobs(clients[name])) for name in ("w1", "w2")),
            *(asyncio.create_task(observed.worker_workloads(clients[name])) for name in ("w1", "w2")),
        ]
        with contextlib.ExitStack() as stack:
            processes = {f"{name} devcluster": pid for name, pid in pids.items()}
            for name in ("manager", "w1", "w2"):
                processes[f"{name} reconciler"] = stack.enter_context(
                    component("reconciler", config, kubeconfigs[name], tmp / f"reconciler-{name}.log")
                ).pid
            processes["multikueue"] = stack.enter_context(
                component("multikueue", config, kubeconfigs["manager"], tmp / "multikueue.log")
            ).pid
            processes["bench"] = os.getpid()
            await asyncio.sleep(2)  # the components' informers sync before the burst
            load_before = load()
            cpu_before = {name: cpu_seconds(pid) for name, pid in processes.items()}
            started = time.monotonic()
            await submit(clients["manager"], args, started)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(observed.all_finished.wait(), args.timeout)
            wall = time.monotonic() - started
            cpu = {name: cpu_seconds(pid) - cpu_before[name] for name, pid in processes.items()}
        for task in watches:
            task.cancel()
        dispatch = between(observed.reserved, observed.remote_job)
        submitted = "all at once" if args.rate <= 0 else f"at {args.rate:g} jobs/s"
        mirror = between(observed.remote_complete, observed.local_complete)
        print(
            f"{args.jobs} jobs ({submitted}), {args.run_seconds} s each, two workers: "
            f"{len(observed.finished)} finished in {wall:.1f} s"
        )
        print(throughput(observed))
        print(f"load average (1/5/15 min) before {load_before}, after {load()}")
        print("CPU seconds in that time: " + ", ".join(f"{name} {value:.1f}" for name, value in cpu.items()))
        print(figures("admission on the manager -> job on the winning worker", dispatch, 0.5))
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
            values = [end[name] - at for name, at in start.items() if name in end]
            if values:
                ms = [v * 1000 for v in values]
                print(f"{label}: p50 {percentile(ms, 0.5):.0f} ms, p99 {percentile(ms, 0.99):.0f} ms")
        own = multikueue_own_steps(observed)
        if own:
            print(figures("  MultiKueue's own steps, per job (the two MultiKueue parts added)", own, 0.5))
        print(figures("remote status change (Complete) -> manager job status", mirror, 1.0))
        started_mirror = between(observed.remote_active, observed.local_active)
        if started_mirror:
            ms = [v * 1000 for v in started_mirror]
            print(
                f"  beside it: remote job active -> manager job active (waits for the manager's admission): "
                f"p50 {percentile(ms, 0.5):.0f} ms, p99 {percentile(ms, 0.99):.0f} ms"
            )
        if len(observed.finished) != args.jobs:
            return None
        return {"dispatch": dispatch, "own": own, "mirror": mirror}
    finally:
        for client in clients.values():
            await client.aclose()


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


def summary(rounds: list[dict[str, list[float]]]) -> list[str]:
    """Median and range over the rounds of each figure's p50 and p99."""
    lines = [f"over {len(rounds)} rounds (median, range):"]
    for key, label in (
        ("dispatch", "admission on the manager -> job on the winning worker"),
        ("own", "  of which MultiKueue's own steps, per job"),
        ("mirror", "remote status change (Complete) -> manager job status"),
    ):
        parts = []
        for name, fraction in (("p50", 0.5), ("p99", 0.99)):
            values = [percentile(r[key], fraction) * 1000 for r in rounds if r[key]]
            if values:
                parts.append(
                    f"{name} {statistics.median(values):.0f} ms ({min(values):.0f}-{max(values):.0f})"
                )
        if parts:
            lines.append(f"  {label}: {', '.join(parts)}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=500)
    parser.add_argument("--run-seconds", type=float, default=1.0)
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="seconds to wait for every job to finish"
    )
    parser.add_argument("--rounds", type=int, default=1, help="rounds, each on fresh clusters")
    parser.add_argument(
        "--rate",
        type=float,
        default=0.0,
        help="jobs created per second on the manager (default 0: all at once, a burst)",
    )
    args = parser.parse_args()
    results: list[dict[str, list[float]]] = []
    for index in range(args.rounds):
        if args.rounds > 1:
            print(f"--- round {index + 1} of {args.rounds}", flush=True)
        with tempfile.TemporaryDirectory(prefix="bench-mk-") as name, contextlib.ExitStack() as stack:
            tmp = Path(name)
            kubeconfigs: dict[str, Path] = {}
            pids: dict[str, int] = {}
            for cluster in ("manager", "w1", "w2"):
                process, kubeconfigs[cluster] = stack.enter_context(
                    devcluster_process(tmp, extra_args=("--kueue-standin", "--job-runner"), name=cluster)
                )
                pids[cluster] = process.pid
            result = asyncio.run(run(args, tmp, kubeconfigs, pids))
        if result is None:
            return 1
        results.append(result)
        sys.stdout.flush()
    if args.rounds > 1:
        print("\n".join(summary(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
