"""``make bench``: every benchmark under ``bench/`` once, with small quick parameters, figures printed.

Each benchmark runs as its own process, as a user would run it (``python bench/<name>.py``), one
after the other (they measure throughput and latency: running two at once on a shared machine
would measure each other). Their output is passed through under a ``=== <name>: <command>`` header,
and a summary at the end gives each one's exit status and wall time. The exit status is 1 when any
benchmark failed (a benchmark's own target misses do not count: only a crash or a failed check).

The parameters here are a smoke-sized run (about a minute or two in all on an idle 2-core machine),
not the targets' measurement conditions: the figures are printed so a change that breaks or slows
a benchmark shows, but the numbers the README quotes come from each benchmark's defaults (the
command in its docstring), on a quiet machine.

Invariants: ``BENCHES`` lists every runnable script under ``bench/`` (a module with a ``__main__``
block), except those in ``NOT_BENCHES`` with the reason; ``tests/unit/test_bench_run_all.py``
checks both lists against the directory and that every option used here is one the script
declares.

    .venv/bin/python bench/run_all.py [--only NAME ...] [--list]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["BENCHES", "NOT_BENCHES", "REPO_ROOT", "Bench", "main"]

REPO_ROOT: Final = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Bench:
    """One benchmark run: ``bench/<script>`` with quick ``options``; ``module`` runs it with ``-m``."""

    name: str
    script: str
    options: tuple[str, ...]
    module: bool = False

    def command(self) -> list[str]:
        if self.module:
            return [sys.executable, "-m", f"bench.{Path(self.script).stem}", *self.options]
        return [sys.executable, str(REPO_ROOT / "bench" / self.script), *self.options]

    def shown(self) -> str:
        """The command as a user types it from the repository root."""
        target = f"-m bench.{Path(self.script).stem}" if self.module else f"bench/{self.script}"
        return " ".join(["python", target, *self.options])


BENCHES: Final = (
    Bench("client", "client.py", ("--requests", "300", "--rounds", "1", "--objects", "1000")),
    Bench("client_hotpath", "client_hotpath.py", ("--rounds", "1", "--requests", "320")),
    Bench(
        "devcluster",
        "devcluster.py",
        ("--objects", "300", "--concurrency", "16", "--watchers", "5", "--fanout-events", "100"),
    ),
    # run as a module: as a script its file name would shadow the ``webhook`` package
    Bench("webhook", "webhook.py", ("--seconds", "1", "--concurrency", "4"), module=True),
    Bench("fuzz_webhook", "fuzz_webhook.py", ("--cases", "500", "--batch", "100")),
    Bench("reconciler", "reconciler.py", ("--jobs", "50", "--admit-rate", "200")),
    Bench("reconciler --floor", "reconciler.py", ("--jobs", "50", "--floor")),
    Bench("reconciler_cpu", "reconciler_cpu.py", ("--jobs", "10", "--run-seconds", "0.2", "--no-profile")),
    Bench("reconcile_passes", "reconcile_passes.py", ("--jobs", "20", "--repeats", "2")),
    Bench("multikueue", "multikueue.py", ("--jobs", "20", "--run-seconds", "0.5")),
)

NOT_BENCHES: Final = {
    "floor_reconciler.py": "the logic-free reconciler process that reconciler.py --floor starts",
    "io_floor.py": "needs a real kube-apiserver (the kit's of ../shared/real-cluster, or --kubeconfig)",
    "webhook_real.py": "needs the real cluster of ../shared/real-cluster (as reconciler_cpu.py --real)",
    "webhook_wrk.py": "needs wrk and taskset from Debian's packages (as webhook.py --kueue)",
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
    for bench, code, seconds in results:
        print(f"{bench.name:<20} {'ok' if code == 0 else f'FAILED (exit {code})':<18} {seconds:6.1f}s")
    return 1 if any(code != 0 for _, code, _ in results) else 0


if __name__ == "__main__":
    sys.exit(main())
