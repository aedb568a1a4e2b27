"""CPU per job of the reconciler (and per admission of the webhook) over whole job lifecycles.

For ``--jobs`` batch/v1 Jobs on a devcluster, each living its full life -- created (the webhook
suspends it) -> Workload created -> admitted by the Kueue stand-in -> started by the reconciler ->
run and completed by the job runner -> Workload finished and its finalizer released -- this prints:

* the **reconciler process's CPU seconds** (user + system, all threads, read from ``/proc/<pid>/stat``
  of the process itself) from just before the first create until the reconciler is quiet again,
  divided by the number of jobs;
* that CPU split into watch decoding, reconcile logic, API writes (encode + HTTP/TLS), events,
  informer/queue overhead and the event loop's I/O callbacks, from a py-spy sample of the process
  (``bench.harness.profile_breakdown`` says how a stack is sorted); the raw sample is written next to
  the output (``--out``), with the most sampled functions printed;
* the **webhook process's CPU seconds per admission** over the same window (admissions counted from
  the webhook's own ``/metrics``), with the webhook in the path exactly as ``kueue-bridge dev``
  registers it (``bench.harness.components``: URL client config, our CA as caBundle);
* the **devcluster process's CPU seconds per job** over the same window (API server, Kueue
  stand-in and job runner together), so a change to the devcluster's write path shows;
* what the reconciler did per job (reconciles, API requests by verb, watch events, Events written),
  from its ``/metrics``, so a change in CPU can be told from a change in work;
* the **peak resident memory** (``VmHWM``) of the reconciler and the webhook at the end of the round:
  every job and Workload is still cached then (finished ones are not deleted), which is what the
  memory requests and limits of ``kueue-bridge manifests`` are set from.

Processes: the devcluster with the stand-in and the job runner (``kueue-bridge devcluster
--kueue-standin --job-runner``, uvloop), the webhook and the reconciler (``kueue-bridge webhook`` /
``reconciler``, as deployed) and this process (creates the jobs, watches the Workloads). CPU seconds
of one process are far less sensitive to a busy machine than wall time, but not immune (caches,
frequency, more wake-ups per event when everything is slower), so ``/proc/loadavg`` is printed with
each round. The configuration is the deployed default apart from the dev settings (no leader
election, the webhook's address); ``--qps`` raises the client rate limit.

    .venv/bin/python -m bench.reconciler_cpu [--jobs 1000] [--rounds 3] [--out DIR] [--no-profile]

``--real`` runs the same lives on a real kube-apiserver with real Kueue scheduling, from the kit of
``../shared/real-cluster`` (``bench.reconciler_cpu_real`` says what it prints), each round also on the
devcluster for the ratio real/devcluster (``--no-devcluster`` skips that), and with ``--anchor kueue``
real Kueue managing the same Jobs itself, interleaved:

    .venv/bin/python -m bench.reconciler_cpu --real --anchor kueue --jobs 500 --rounds 3 --no-profile

One round is :func:`bench.harness.lifecycles.run_round`; this module runs rounds and summarises them.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
from pathlib import Path

from bench.harness.lifecycles import RoundResult, print_round, run_round
from bench.harness.profile_breakdown import PARTS
from bench.harness.profilers import perf_profiling_problem, py_spy_available
from bench.reconciler_cpu_real import main_real

__all__ = ["main", "summary"]


def spread(values: list[float], unit: str, digits: int = 2) -> str:
    return (
        f"median {statistics.median(values):.{digits}f}{unit} "
        f"(range {min(values):.{digits}f}-{max(values):.{digits}f}{unit})"
    )


def summary(results: list[RoundResult]) -> list[str]:
    lines = [
        f"over {len(results)} rounds of {results[0].jobs} jobs:",
        f"  reconciler CPU per job: {spread([r.reconciler_ms_per_job for r in results], ' ms')} (target <= 5 ms)",
        "  webhook CPU per admission: "
        f"{spread([r.webhook_ms_per_admission for r in results], ' ms', 3)} (target <= 1 ms)",
        f"  devcluster CPU per job: {spread([r.devcluster_ms_per_job for r in results], ' ms')}",
        f"  peak RSS: reconciler {spread([r.peak_rss[0] for r in results], ' MiB', 0)}, "
        f"webhook {spread([r.peak_rss[1] for r in results], ' MiB', 0)}",
        f"  load average (1, 5, 15 min) before each round: {'; '.join(r.load[0] for r in results)}",
    ]
    profiled = [r for r in results if r.breakdown is not None]
    for part in PARTS if profiled else ():
        values = [r.breakdown.share(part) * r.reconciler_ms_per_job for r in profiled if r.breakdown]
        lines.append(f"  {part}: {spread(values, ' ms')} per job")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=1, help="repeat on a fresh devcluster; print medians")
    parser.add_argument("--concurrency", type=int, default=16, help="Job creates in flight")
    parser.add_argument("--run-seconds", type=float, default=1.0, help="how long the job runner runs a job")
    parser.add_argument("--qps", type=int, help="the components' client rate limit (default: the config's)")
    parser.add_argument(
        "--reconcile-concurrency",
        type=int,
        help="Jobs the reconciler reconciles at once (controller.groupKindConcurrency Job.batch; default: the config's)",
    )
    parser.add_argument("--out", type=Path, help="folder for the profiles and logs (default: a new temp dir)")
    parser.add_argument("--no-profile", dest="profile", action="store_false", help="do not run py-spy")
    parser.add_argument("--rate", type=int, default=200, help="samples per second")
    parser.add_argument(
        "--profiler",
        choices=["py-spy", "perf"],
        default="py-spy",
        help="perf: CPU samples named by Python function (Python 3.12+, PYTHONPERFSUPPORT); py-spy's "
        "samples also count time spent waiting for a core, which misleads on a busy host",
    )
    parser.add_argument(
        "--native", action="store_true", help="py-spy --native: C frames too (pauses the process per sample)"
    )
    parser.add_argument("--top", type=int, default=15, help="functions to list from the profile")
    parser.add_argument(
        "--real",
        action="store_true",
        help="on the real cluster of ../shared/real-cluster (the port block of this environment) instead",
    )
    parser.add_argument(
        "--anchor", choices=["kueue"], help="--real: also real Kueue managing the Jobs itself, interleaved"
    )
    parser.add_argument(
        "--no-devcluster",
        dest="devcluster",
        action="store_false",
        help="--real: skip the devcluster rounds (by default each round also runs there, for the ratio)",
    )
    parser.add_argument(
        "--state",
        type=Path,
        help="--real: the cluster's state folder (wiped each round; default: a new temp dir)",
    )
    parser.add_argument(
        "--probe",
        action="store_true",
        help="--real: also send our /mutate a request directly every --probe-interval seconds until "
        "all Jobs are unsuspended and print the round trips (the webhook's own responsiveness)",
    )
    parser.add_argument("--probe-interval", type=float, default=0.02)
    args = parser.parse_args(argv)
    if args.profile and args.profiler == "perf":
        problem = perf_profiling_problem()
        if problem is not None:
            parser.error(problem)
        os.environ["PYTHONPERFSUPPORT"] = "1"  # the components inherit it and write /tmp/perf-PID.map
    if args.real:
        out_dir: Path = args.out or Path(tempfile.mkdtemp(prefix="reconciler-cpu-real-"))
        out_dir.mkdir(parents=True, exist_ok=True)
        return main_real(args, out_dir)
    if args.profile and not py_spy_available():
        print("py-spy not found (pip install py-spy); measuring without the breakdown", file=sys.stderr)
        args.profile = False
    out: Path = args.out or Path(tempfile.mkdtemp(prefix="reconciler-cpu-"))
    out.mkdir(parents=True, exist_ok=True)
    print(f"profiles and logs in {out}", flush=True)
    results = []
    for number in range(1, args.rounds + 1):
        if args.rounds > 1:
            print(f"--- round {number} of {args.rounds}", flush=True)
        result = asyncio.run(run_round(args, number=number, out=out))
        print_round(result)
        sys.stdout.flush()
        results.append(result)
    if len(results) > 1:
        print("\n".join(summary(results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
