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

    .venv/bin/python -m bench.multikueue_dispatch [--jobs 500] [--rate 0] [--run-seconds 1] [--rounds 1]

``--real`` runs on the real-cluster kit instead (``bench.multikueue_real``), ``--workers N`` of
them; MultiKueue over six workers, ours against Kueue's own in the same run, a steady phase then a
burst with ``w1``'s API server stopped for a minute:

    nice -n 5 .venv/bin/python -m bench.multikueue_dispatch --real --anchor both --workers 6 \
        --scenario steady-burst --steady-jobs 60 --steady-rate 2 --jobs 600 \
        --worker-down-at 0.2 --down-seconds 60 --no-kill-while-down --gc-interval 10s
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import yaml

from bench.harness.clusters import bench_client, create_kueue_crds, devcluster_process
from bench.harness.processes import REPO_ROOT
from bench.multikueue_measure import (
    NAMESPACE,
    WORKLOAD,
    Observed,
    load,
    report,
    submit,
    summary,
)
from bench.multikueue_real import RoundOutcome, phases, real_round, verdicts
from shared.constants import (
    ADMISSION_CHECK_GVK,
    CLUSTER_QUEUE_GVK,
    LOCAL_QUEUE_GVK,
    MULTIKUEUE_CLUSTER_GVK,
    MULTIKUEUE_CONFIG_GVK,
    RESOURCE_FLAVOR_GVK,
)
from shared.kube import NAMESPACE_GVK, SECRET_GVK, KubeClient
from testkit import (
    DEFAULT_KUEUE_VERSION,
    KUEUE_VERSIONS,
    Dispatcher,
    KitError,
    cpu_seconds,
    find_kit,
    stop_all_below,
)

__all__ = ["main"]

SHARED = Path(os.environ.get("KUEUE_BRIDGE_SHARED_DIR") or REPO_ROOT.parent / "shared")
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
    return bench_client(kubeconfig, qps=5000)


async def setup(client: KubeClient, *, cpu: str, check: bool) -> None:
    await create_kueue_crds(client, SHARED, KUEUE_CRDS)
    while True:
        try:
            await client.list(MULTIKUEUE_CLUSTER_GVK)
            await client.list(WORKLOAD, namespace="default")
            break
        except Exception:
            await asyncio.sleep(0.05)
    for namespace in ("kueue-system", NAMESPACE):
        await client.create(NAMESPACE_GVK, {"metadata": {"name": namespace}})
    await client.create(RESOURCE_FLAVOR_GVK, {"metadata": {"name": "default"}})
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
    await client.create(CLUSTER_QUEUE_GVK, {"metadata": {"name": "cq"}, "spec": spec})
    await client.create(
        LOCAL_QUEUE_GVK, {"metadata": {"name": "q", "namespace": NAMESPACE}, "spec": {"clusterQueue": "cq"}}
    )


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
        process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=out, stderr=subprocess.STDOUT)
    try:
        yield process
    finally:
        process.terminate()
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


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
                SECRET_GVK,
                {
                    "metadata": {"name": name, "namespace": "kueue-system"},
                    "data": {"kubeconfig": base64.b64encode(raw).decode()},
                },
            )
            await clients["manager"].create(
                MULTIKUEUE_CLUSTER_GVK,
                {"metadata": {"name": name}, "spec": {"clusterSource": {"kubeConfig": {"location": name}}}},
            )
        await clients["manager"].create(
            MULTIKUEUE_CONFIG_GVK, {"metadata": {"name": "cfg"}, "spec": {"clusters": ["w1", "w2"]}}
        )
        await clients["manager"].create(
            ADMISSION_CHECK_GVK,
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
        result = report(
            observed,
            args,
            wall=wall,
            load_before=load_before,
            cpu=cpu,
            dispatch_target=0.5,
            mirror_target=1.0,
        )
        if len(observed.finished) != args.jobs:
            return None
        return result
    finally:
        for client in clients.values():
            await client.aclose()


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _fractions(text: str) -> list[float]:
    return [float(part) for part in text.split(",") if part.strip()]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=None, help="jobs per round (500; 200 with --real)")
    parser.add_argument("--run-seconds", type=float, default=1.0)
    parser.add_argument(
        "--timeout", type=float, default=None, help="seconds to wait for every job (600; 900 with --real)"
    )
    parser.add_argument("--rounds", type=int, default=1, help="rounds, each on fresh clusters")
    parser.add_argument(
        "--rate",
        type=float,
        default=0.0,
        help="jobs created per second on the manager (default 0: all at once, a burst)",
    )
    real = parser.add_argument_group("real clusters (bench.multikueue_real)")
    real.add_argument("--real", action="store_true", help="three real API servers with real Kueue (the kit)")
    real.add_argument(
        "--anchor",
        choices=("bridge", "kueue", "both"),
        default="bridge",
        help="who dispatches: kueue-bridge multikueue, Kueue's own MultiKueue, or both in turn each round",
    )
    real.add_argument("--kueue-version", default=DEFAULT_KUEUE_VERSION, choices=KUEUE_VERSIONS)
    real.add_argument("--workers", type=_positive, default=2, help="workers w1, w2, ... (default 2)")
    real.add_argument(
        "--scenario",
        choices=("round", "steady-burst"),
        default="round",
        help="round: --jobs at --rate with the chaos options; steady-burst: --steady-jobs at "
        "--steady-rate, then --jobs at once with the chaos options, on the same fleet",
    )
    real.add_argument(
        "--steady-jobs", type=_positive, default=60, help="steady-burst: jobs of the steady phase"
    )
    real.add_argument(
        "--steady-rate", type=float, default=2.0, help="steady-burst: jobs/s of the steady phase"
    )
    real.add_argument(
        "--rss-limit-gb", type=float, default=2.5, help="the fleet's resident memory target (GB, 2**30 bytes)"
    )
    real.add_argument("--gc-interval", default="1m", help="the manager's multiKueue.gcInterval (Go duration)")
    real.add_argument(
        "--worker-lost-timeout", default="15m", help="the manager's multiKueue.workerLostTimeout"
    )
    real.add_argument(
        "--kill-at",
        type=_fractions,
        default=[],
        help="kill -9 our multikueue when these fractions of the jobs reached a worker (e.g. 0.33,0.66)",
    )
    real.add_argument(
        "--worker-down-at",
        type=float,
        default=None,
        help="stop w1's API server at this fraction; kill -9 our multikueue meanwhile",
    )
    real.add_argument("--down-seconds", type=float, default=20.0, help="how long w1 stays down")
    real.add_argument(
        "--kill-while-down",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="kill -9 our multikueue while w1 is down (--no-kill-while-down: the outage alone, "
        "which Kueue's MultiKueue can go through too)",
    )
    real.add_argument(
        "--keep-state",
        action="store_true",
        help="keep the clusters' state folders (the components' logs) after the run",
    )
    return parser


def main() -> int:
    args = _parser().parse_args()
    if args.real:
        for signum in (signal.SIGTERM, signal.SIGHUP):
            signal.signal(signum, _terminate)
        try:
            return asyncio.run(_main_real(args))
        except (KeyboardInterrupt, _Terminated):
            print(
                "bench.multikueue_dispatch: interrupted; the clusters and components it started are stopped",
                file=sys.stderr,
            )
            return 130
    args.jobs = args.jobs or 500
    args.timeout = args.timeout or 600.0
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


class _Terminated(Exception):
    """SIGTERM or SIGHUP, raised so that the clusters and components of the round are stopped."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise _Terminated(signal.Signals(signum).name)


async def _main_real(args: argparse.Namespace) -> int:
    """Rounds on real clusters (``bench.multikueue_real``), each anchor in turn within a round."""
    args.jobs = args.jobs or 200
    args.timeout = args.timeout or 900.0
    kills = args.kill_at or (args.worker_down_at is not None and args.kill_while_down)
    if kills and args.anchor != "bridge":
        print(
            "--kill-at and --worker-down-at kill our multikueue: use them with --anchor bridge "
            "(or --worker-down-at with --no-kill-while-down)",
            file=sys.stderr,
        )
        return 2
    try:
        kit = find_kit(shared_dir=SHARED)
    except KitError as exc:
        print(f"bench.multikueue_dispatch --real: {exc}", file=sys.stderr)
        return 2
    anchors: list[Dispatcher] = ["bridge", "kueue"] if args.anchor == "both" else [args.anchor]
    outcomes: dict[str, list[RoundOutcome]] = {anchor: [] for anchor in anchors}
    root = Path(tempfile.mkdtemp(prefix="bench-mk-real-"))
    ok = True
    try:
        for index in range(args.rounds):
            for anchor in anchors:
                print(f"--- round {index + 1} of {args.rounds}: {anchor}", flush=True)
                outcome = await real_round(
                    args,
                    kit=kit,
                    root=root,
                    anchor=anchor,
                    label=f"r{index + 1}-{anchor}-",
                )
                ok = ok and outcome.ok
                outcomes[anchor].append(outcome)
                sys.stdout.flush()
    finally:
        for failure in stop_all_below(root, kit=kit):
            print(f"bench.multikueue_dispatch: {failure}", file=sys.stderr)
        if args.keep_state:
            print(f"state folders and logs kept in {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)
    for anchor in anchors:
        for phase in phases(args):
            rounds = [o for o in outcomes[anchor] if phase.name in o.samples]
            if rounds:
                title = f"{anchor} {phase.name}".rstrip()
                lines = summary(
                    [o.samples[phase.name] for o in rounds], cpu=[o.cpu[phase.name] for o in rounds]
                )
                print(f"{title} " + "\n".join(lines))
        peaks = [o.rss_peak for o in outcomes[anchor] if o.rss_peak]
        if peaks:
            print(
                f"{anchor} fleet resident memory, peak per round: {statistics.median(peaks) / 2**20:.0f} MB "
                f"({min(peaks) / 2**20:.0f}-{max(peaks) / 2**20:.0f})"
            )
    if args.scenario == "round" and len(anchors) == 2:
        walls = {
            anchor: [o.samples[""]["wall"][0] for o in outcomes[anchor] if "" in o.samples]
            for anchor in anchors
        }
        if walls["bridge"] and walls["kueue"]:
            bridge, kueue = statistics.median(walls["bridge"]), statistics.median(walls["kueue"])
            print(
                f"Kueue's MultiKueue took {kueue / bridge:.1f}x as long as kueue-bridge's "
                f"(median wall time {kueue:.1f} s vs {bridge:.1f} s)"
            )
    if args.scenario == "steady-burst":
        print(
            "\n".join(
                verdicts(
                    {anchor: [o.samples for o in outcomes[anchor]] for anchor in anchors},
                    {anchor: [o.rss_peak for o in outcomes[anchor]] for anchor in anchors},
                    {anchor: [o.ok for o in outcomes[anchor]] for anchor in anchors},
                    p99_target=0.5,
                    ratio_target=3.0,
                    rss_limit=int(args.rss_limit_gb * 2**30),
                )
            )
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
