"""The processes a benchmark measures: where they start from, their CPU and memory, the machine's load.

Readings come from Linux ``/proc`` of the process itself (user + system CPU seconds of all threads,
peak resident memory), which a busy machine disturbs far less than wall time, but not entirely:
every benchmark prints :func:`load_average` beside its figures. :func:`quiet` waits until a process
has written its tail (queued Events, the last watch events), so a CPU reading ends with the work.
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path
from typing import Final

__all__ = [
    "REPO_ROOT",
    "load_average",
    "process_cpu_seconds",
    "process_cpu_split",
    "process_peak_rss_mib",
    "quiet",
]

#: the repository: the working directory of every process a benchmark starts
REPO_ROOT: Final = Path(__file__).resolve().parent.parent.parent
#: a process counts as quiet once it used less than this share of one CPU over QUIET_WINDOW seconds
QUIET_SHARE: Final = 0.02
QUIET_WINDOW: Final = 1.0


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds a process has used so far (Linux ``/proc``), all threads included."""
    return sum(process_cpu_split(pid))


def process_cpu_split(pid: int) -> tuple[float, float]:
    """(user, system) CPU seconds a process has used so far (``/proc/<pid>/stat``, all threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


def process_peak_rss_mib(pid: int) -> float:
    """The process's peak resident memory so far (``VmHWM`` of ``/proc/<pid>/status``), in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


async def quiet(pid: int, *, within: float = 120.0) -> None:
    """Wait until the process used less than ``QUIET_SHARE`` of a CPU over ``QUIET_WINDOW`` seconds:
    its tail (queued Events, the last watch events) is written."""
    deadline = time.monotonic() + within
    last = process_cpu_seconds(pid)
    while time.monotonic() < deadline:
        await asyncio.sleep(QUIET_WINDOW)
        now = process_cpu_seconds(pid)
        if now - last < QUIET_SHARE * QUIET_WINDOW:
            return
        last = now
    raise RuntimeError(f"process {pid} still busy {within:.0f}s after the last lifecycle ended")
