"""``python -m bench.client_hotpath`` stays runnable: one small round of every part, a figure for each.

The figures are for a person comparing two commits under the same load; this only proves the tool
runs end to end (the TLS server child, the pool, the client, the watch decoder) and prints a
microsecond figure per part, so a change to ``shared.kube`` cannot silently break it.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.conftest import REPO_ROOT

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

PARTS = (
    "GroupVersionKind.of",
    "WorkQueue add + get + done",
    "Store.upsert of an update",
    "KubeMetrics.observe_request",
    "Watch._decode of a",
    "Http1Pool PATCH, 4 concurrent",
    "KubeClient.request PATCH, 4 concurrent",
)


def test_one_small_round_prints_a_figure_for_every_part() -> None:
    finished = subprocess.run(
        [
            sys.executable,
            "-m",
            "bench.client_hotpath",
            "--rounds",
            "1",
            "--requests",
            "80",
            "--concurrency",
            "4",
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = finished.stdout
    assert finished.returncode == 0, output[-3000:] + finished.stderr[-3000:]
    for part in PARTS:
        assert re.search(rf"^{re.escape(part)}.* \d+\.\d\d us \(", output, re.MULTILINE), (part, output)
    # the pool reuses its kept-alive connections: one per concurrent request, not one per request
    assert re.search(r"; 4 connections for 100 requests", output), output
