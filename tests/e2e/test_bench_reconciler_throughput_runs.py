"""``python -m bench.reconciler_throughput`` stays runnable: a 20-job run of each mode prints every figure it promises.

The targets themselves are not asserted here (speed belongs to the benchmark, on a quiet machine);
these runs only prove the benchmark and its floor diagnostic work end to end, so a change to the
reconciler or the devcluster cannot silently break the tool the targets are measured with.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.needs_shared, pytest.mark.slow]

RATIO = re.compile(r"^ratio \(ceiling time / reconciler time\): (\d+\.\d+)x", re.MULTILINE)


def run_bench(*options: str) -> str:
    finished = subprocess.run(
        [sys.executable, "-m", "bench.reconciler_throughput", "--jobs", "20", *options],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr[-3000:]
    return finished.stdout


def test_the_benchmark_prints_burst_ceiling_ratio_and_latencies(shared_dir: Path) -> None:
    output = run_bench("--admit-rate", "200")
    ratio = RATIO.search(output)
    assert ratio is not None, output
    assert float(ratio.group(1)) > 0
    assert re.search(r"every Workload existed after \d+\.\d+s", output), output
    assert re.search(r"flood: 10 admissions written in .* ms per admission", output), output
    for label in ("flood, 4 admissions in flight, 10 jobs", "paced, 200 admissions/s, 11 jobs"):
        assert re.search(rf"admission -> unsuspended \({label}\): p50 \d+ ms, p99 \d+ ms", output), output


def test_the_floor_diagnostic_runs_the_burst_against_the_logic_free_process(shared_dir: Path) -> None:
    output = run_bench("--floor")
    assert "FLOOR: bench/floor_reconciler.py" in output
    assert RATIO.search(output) is not None, output
    assert "admission -> unsuspended" not in output  # the floor never starts jobs
