"""``python -m bench.multikueue_dispatch`` stays runnable: a 10-job run prints every figure it promises.

The targets are not asserted (speed belongs to the benchmark, on a quiet machine); this run proves
the tool works end to end, so a change to MultiKueue or the devcluster cannot silently break it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.needs_shared, pytest.mark.slow]


def test_the_benchmark_prints_both_latencies_and_the_breakdown(shared_dir: Path) -> None:
    finished = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.multikueue_dispatch",
            *("--jobs", "10", "--run-seconds", "0.5", "--rounds", "2", "--rate", "20"),
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    output = finished.stdout
    assert output.count("10 jobs (at 20 jobs/s), 0.5 s each, 2 workers: 10 finished in ") == 2
    for label in (
        "quota reserved on the manager: ",
        "; jobs created on a worker: ",
        "load average (1/5/15 min) before ",
        "CPU seconds in that time: manager devcluster ",
        ", multikueue ",
        "admission on the manager -> job on the winning worker: p50 ",
        "  of which: quota reserved -> first copy on a worker: p50 ",
        "  of which: first copy -> a copy Admitted (the worker's Kueue): p50 ",
        "  of which: copy Admitted -> job created there (MultiKueue): p50 ",
        "remote status change (Complete) -> manager job status: p50 ",
        "  beside it: remote job active -> manager job active (waits for the manager's admission): p50 ",
        "over 2 rounds (median, range):",
    ):
        assert label in output, output
