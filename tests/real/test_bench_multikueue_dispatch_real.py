"""``python -m bench.multikueue_dispatch --real`` stays runnable, its chaos included: a small run on three real clusters.

Eight jobs, our multikueue killed with ``kill -9`` (and restarted) when half of them reached a worker,
and again while ``w1``'s API server is stopped for a few seconds once six of them reached a worker
(the restarted process sees one worker only; a job it had started to place on ``w1`` must not run on
``w2`` as well); the run must print every figure and pass its own checks (every job finished, none on two workers,
nothing left on the workers). The targets are not asserted: speed belongs to the benchmark on
a quiet machine. The benchmark starts and stops its own fleet (Kueue ff69552), so this runs once,
not once per Kueue version.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import REPO_ROOT


def test_the_real_benchmark_prints_its_figures_and_passes_its_checks(shared_dir: Path) -> None:
    finished = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.multikueue_dispatch",
            "--real",
            *(
                "--jobs",
                "8",
                "--rate",
                "4",
                "--run-seconds",
                "0.5",
                "--gc-interval",
                "5s",
                "--kill-at",
                "0.5",
                "--worker-down-at",
                "0.75",
                "--down-seconds",
                "6",
            ),
        ],
        cwd=REPO_ROOT,
        env={**os.environ, "KUEUE_BRIDGE_SHARED_DIR": str(shared_dir)},
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    output = finished.stdout
    assert finished.returncode == 0, output[-3000:] + finished.stderr[-3000:]
    for label in (
        "fleet (kueue-bridge multikueue, Kueue ff69552, 2 workers) ready in ",
        "8 jobs (at 4 jobs/s), 0.5 s each, 2 workers: 8 finished in ",
        "kill -9 multikueue (pid ",
        "w1's kube-apiserver stopped",
        "w1's kube-apiserver started again",
        "CPU seconds in that time: manager etcd ",
        ", manager multikueue ",
        "admission on the manager -> job on the winning worker: p50 ",
        "  of which: copy Admitted -> job created there (MultiKueue): p50 ",
        "remote status change (Complete) -> manager job status: p50 ",
        "check: 8 of 8 jobs finished; completed on two workers: 0",
        "check: jobs on two workers at the same time: 0",
        "check: jobs created on a second worker, one after the other: 0",
        "(gcInterval 5s): 0",
        "check: passed",
        "multikueue's Workload controller (pid ",
        "jobs dispatched per second, first job created on the manager -> 95% of the jobs created on a worker: ",
        "fleet resident memory, peak of samples every 2 s: ",
    ):
        assert label in output, output
