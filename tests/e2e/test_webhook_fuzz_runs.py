"""``python -m tests.fuzz.webhook_fuzz`` stays runnable: 200 cases against a webhook process, histogram printed.

The 100,000-case target is the full run's job (reported by hand on a quiet machine); this run
only proves the tool works end to end - the process starts, every case gets an answer that
``answer_problem`` accepts, the histogram and the ``/readyz`` check are printed - so a change to the
webhook or the generator cannot silently break it.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


def test_a_small_fuzz_run_answers_every_case_with_200_or_400_and_still_serves() -> None:
    finished = subprocess.run(
        [sys.executable, "-m", "tests.fuzz.webhook_fuzz", "--cases", "200", "--batch", "100"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = finished.stdout
    assert finished.returncode == 0, output[-3000:] + finished.stderr[-3000:]
    assert re.search(r"^cases: 200 in \d+\.\d s \(\d+ cases/s", output, re.MULTILINE), output
    counts = {
        bucket: int(count)
        for bucket, count in re.findall(r"^  (\d{3}(?: [a-z]+(?: \d{3})?)?)\s+(\d+)$", output, re.MULTILINE)
    }
    assert sum(counts.values()) == 200, output
    assert set(counts) <= {"200 allowed", "200 patched", "200 denied 400", "200 denied 403", "400"}, output
    assert "5xx (HTTP or in-body): 0" in output
    assert "problems: none" in output
    assert re.search(
        r"^/readyz after the run: 200 ok; webhook process alive(, RSS \d+ MB)?$", output, re.MULTILINE
    ), output
