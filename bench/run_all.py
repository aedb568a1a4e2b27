"""``make bench``: every benchmark under ``bench/`` once, with small quick parameters, figures printed.

Each benchmark runs as its own process, as a user would run it (``python -m bench.<name>``), one
after the other (they measure throughput and latency: running two at once on a shared machine
would measure each other). Their output is passed through under a ``=== <name>: <command>`` header,
and a summary at the end gives each one's exit status and wall time. The exit status is 1 when any
benchmark failed (a benchmark's own target misses do not count: only a crash or a failed check).

The parameters here are a smoke-sized run (about a minute or two in all on an idle 2-core machine),
not the targets' measurement conditions: the figures are printed so a change that breaks or slows
a benchmark shows, but the figures the documentation quotes come from each benchmark's defaults
(the command in its docstring), on a quiet machine.

Invariants: ``BENCHES`` lists every runnable module of ``bench`` (one with a ``__main__`` block),
except those in ``NOT_BENCHES`` with the reason; ``tests/unit/test_bench_run_all.py`` checks both
lists against the package and that every option used here is one the module declares.

    .venv/bin/python -m bench.run_all [--only NAME ...] [--list]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Final

from bench.harness.processes import REPO_ROOT

__all__ = ["BENCHES", "NOT_BENCHES", "Bench", "main"]


@dataclass(frozen=True)
class Bench:
    """One benchmark run: ``python -m bench.<module>`` with quick ``options``."""

    name: str
    module: str
    options: tuple[str, ...]

    def command(self) -> list[str]:
        return [sys.executable, "-m", f"bench.{self.module}", *self.options]

    def shown(self) -> str:
        """The command as a user types it from the repository root."""
        return " ".join(["python", "-m", f"bench.{self.module}", *self.options])


BENCHES: Final = (
    Bench("client", "client", ("--requests", "300", "--rounds", "1", "--objects", "1000")),
    Bench("client_hotpath", "client_hotpath", ("--rounds", "1", "--requests", "320")),
    Bench(
        "devcluster_api",
        "devcluster_api",
        ("--objects", "300", "--concurrency", "16", "--watchers", "5", "--fanout-events", "100"),
    ),
    Bench("webhook_latency", "webhook_latency", ("--seconds", "1", "--concurrency", "4")),
    Bench("reconciler_throughput", "reconciler_throughput", ("--jobs", "50", "--admit-rate", "200")),
    Bench("reconciler_throughput --floor", "reconciler_throughput", ("--jobs", "50", "--floor")),
    Bench("reconciler_cpu", "reconciler_cpu", ("--jobs", "10", "--run-seconds", "0.2", "--no-profile")),
    Bench("reconcile_passes", "reconcile_passes", ("--jobs", "20", "--repeats", "2")),
    Bench("multikueue_dispatch", "multikueue_dispatch", ("--jobs", "20", "--run-seconds", "0.5")),
    Bench("cache_memory", "cache_memory", ("--jobs", "200", "--namespaces", "5", "--rounds", "1")),
)

NOT_BENCHES: Final = {
    "floor_reconciler": "the logic-free reconciler process that reconciler_throughput --floor starts",
    "scale_restarts": "needs the real cluster of ../shared/real-cluster (bench.scale_restarts --real)",
    "scale": "needs the real cluster of ../shared/real-cluster (bench.scale --real: 10,000 Jobs by default)",
    "io_floor": "needs a real kube-apiserver (the kit's of ../shared/real-cluster, or --kubeconfig)",
    "webhook_real": "needs the real cluster of ../shared/real-cluster (as reconciler_cpu --real)",
    "webhook_wrk": "needs wrk and taskset from Debian's packages (as webhook_latency --kueue)",
}


def _run(bench: Bench) -> tuple[int, float]:
    command = bench.command()
    print(f"\n=== {bench.name}: {bench.shown()}", flush=True)
    started = time.monotonic()
    code = subprocess.run(command, cwd=REPO_ROOT, check=False).returncode
    return code, time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these (names as --list shows)")
    parser.add_argument("--list", action="store_true", help="print the commands, run nothing")
    args = parser.parse_args(argv)
    benches = [bench for bench in BENCHES if not args.only or bench.name in args.only]
    unknown = sorted(set(args.only or ()) - {bench.name for bench in BENCHES})
    if unknown:
        parser.error(f"unknown benchmark(s): {', '.join(unknown)}")
    if args.list:
        for bench in benches:
            print(f"{bench.name}: {bench.shown()}")
        return 0
    results = [(bench, *_run(bench)) for bench in benches]
    print("\n=== summary")
    width = max(len(bench.name) for bench, _, _ in results)
    for bench, code, seconds in results:
        print(f"{bench.name:<{width}} {'ok' if code == 0 else f'FAILED (exit {code})':<18} {seconds:6.1f}s")
    return 1 if any(code != 0 for _, code, _ in results) else 0


if __name__ == "__main__":
    sys.exit(main())
