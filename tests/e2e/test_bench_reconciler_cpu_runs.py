"""``python -m bench.reconciler_cpu`` stays runnable: a few whole job lifecycles print every figure it promises.

The targets (reconciler <= 5 ms CPU per job, webhook <= 1 ms per admission) are not asserted here:
CPU figures belong to the benchmark, on a quiet machine, over 1,000 jobs. This run only proves the
benchmark works end to end -- devcluster with the stand-in and the job runner, the webhook in the
admission path, the reconciler, the CPU readings, the metrics deltas, the py-spy breakdown -- so a
change to any of them cannot silently break the tool the targets are measured with.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench.harness.profile_breakdown import PARTS
from bench.harness.profilers import py_spy_available
from tests.conftest import REPO_ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.needs_shared, pytest.mark.slow]


def run_bench(tmp_path: Path, *options: str) -> str:
    command = [sys.executable, "-m", "bench.reconciler_cpu", "--jobs", "4"]
    command += ["--out", str(tmp_path), *options]
    finished = subprocess.run(
        command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert finished.returncode == 0, finished.stdout[-3000:] + finished.stderr[-3000:]
    return finished.stdout


def test_the_benchmark_prints_cpu_per_job_and_per_admission_over_whole_lifecycles(
    shared_dir: Path, tmp_path: Path
) -> None:
    output = run_bench(tmp_path, "--run-seconds", "0.2", "--rounds", "2")
    assert len(re.findall(r"^4 job lifecycles in \d+\.\d+s \(load average ", output, re.MULTILINE)) == 2
    assert re.search(r"^reconciler: \d+\.\d+ CPU s = \d+\.\d+ ms per job", output, re.MULTILINE), output
    admissions = re.search(
        r"^webhook: \d+\.\d+ CPU s for (\d+) admissions = \d+\.\d+ ms per admission", output, re.M
    )
    assert admissions is not None, output
    assert int(admissions.group(1)) >= 8, "every Job create is mutated and validated by the webhook"
    reconciles = re.search(r"per job, reconciles: (\d+\.\d+)", output)
    assert reconciles is not None and float(reconciles.group(1)) > 1, output
    assert re.search(r"per job, requests: \d+\.\d+ \(.*\bcreate \d", output), output
    assert "over 2 rounds of 4 jobs:" in output
    assert re.search(r"reconciler CPU per job: median \d+\.\d+ ms \(range \d+\.\d+-\d+\.\d+ ms\)", output)
    if py_spy_available():
        for part in PARTS:
            assert re.search(rf"^  {re.escape(part)} +\d+\.\d+ %", output, re.MULTILINE), (part, output)
        assert list(tmp_path.glob("reconciler-round1.pyspy.txt")), "the raw sample is kept next to the output"


def test_without_the_profiler_the_figures_are_still_printed(shared_dir: Path, tmp_path: Path) -> None:
    output = run_bench(tmp_path, "--run-seconds", "0", "--no-profile")
    assert re.search(r"^reconciler: .* ms per job", output, re.MULTILINE), output
    assert "reconciler CPU by part" not in output
