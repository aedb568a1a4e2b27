"""``testkit.real_fleet``'s per-process figures count a process with its descendants (the kit starts
Kueue under ``unshare``), and nothing for a process that is gone."""

from __future__ import annotations

import os
import subprocess
import sys

from testkit import cpu_seconds, rss_bytes


def test_resident_memory_counts_the_process_and_its_children() -> None:
    own = rss_bytes(os.getpid())
    assert own > 1 << 20  # a Python interpreter with pytest loaded holds more than a MB
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        alone = rss_bytes(child.pid)
        assert alone > 0
        # this process's own pages may move a little between the readings; the child's add up
        assert rss_bytes(os.getpid()) >= own + alone // 2
        assert rss_bytes(os.getpid(), descendants=False) < own + alone // 2
        assert cpu_seconds(os.getpid(), descendants=False) <= cpu_seconds(os.getpid())
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(30)
    assert rss_bytes(child.pid) == 0


def test_a_process_that_is_gone_has_no_cpu_seconds() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(30)
    assert cpu_seconds(child.pid) == 0.0
    assert cpu_seconds(os.getpid()) > 0.0
