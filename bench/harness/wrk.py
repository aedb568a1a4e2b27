"""``wrk``, the closed-loop HTTP load generator, pinned to one core and the server under test to the other.

:func:`run_wrk` POSTs a body file from ``CLIENT_CORE`` (``taskset``) and :func:`parse_wrk` reads
requests/s and the 50th/99th latency percentiles from its ``--latency`` report; :func:`pin` moves
every thread of a server process to ``SERVER_CORE``, so on a 2-core machine client and server never
share a core. Needs Debian's ``wrk`` and ``taskset`` (util-linux).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Final

__all__ = ["CLIENT_CORE", "SERVER_CORE", "WrkResult", "parse_wrk", "pin", "run_wrk"]

SERVER_CORE: Final = "1"
CLIENT_CORE: Final = "0"


@dataclass(frozen=True)
class WrkResult:
    requests_per_second: float
    p50_ms: float
    p99_ms: float
    requests: int = 0
    #: the server process's CPU microseconds per request over the run (0: not measured)
    cpu_us_per_request: float = 0.0


_UNITS = {"us": 0.001, "ms": 1.0, "s": 1000.0}


def _millis(text: str) -> float:
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", text.strip()).groups()  # type: ignore[union-attr]
    return float(number) * _UNITS[unit]


def parse_wrk(output: str) -> WrkResult:
    """Requests/s and the 50th/99th latency percentiles from ``wrk --latency``'s report; refuses a
    run with errors or non-2xx answers (a denial is a 200; anything else means a broken setup)."""
    if "Non-2xx" in output or "Socket errors" in output:
        raise RuntimeError(f"wrk saw failed requests:\n{output}")
    rate = re.search(r"Requests/sec:\s+([\d.]+)", output)
    p50 = re.search(r"^\s+50%\s+(\S+)", output, re.MULTILINE)
    p99 = re.search(r"^\s+99%\s+(\S+)", output, re.MULTILINE)
    count = re.search(r"^\s+(\d+) requests in ", output, re.MULTILINE)
    if rate is None or p50 is None or p99 is None or count is None:
        raise RuntimeError(f"unexpected wrk output:\n{output}")
    return WrkResult(
        float(rate.group(1)), _millis(p50.group(1)), _millis(p99.group(1)), requests=int(count.group(1))
    )


def run_wrk(url: str, body_file: Path, *, seconds: float, connections: int, script_dir: Path) -> WrkResult:
    script = script_dir / "post.lua"
    script.write_text(
        'wrk.method = "POST"\n'
        'wrk.headers["Content-Type"] = "application/json"\n'
        f'local f = io.open("{body_file}", "rb")\n'
        'wrk.body = f:read("*all")\n'
        "f:close()\n"
    )
    command = ["taskset", "-c", CLIENT_CORE, "wrk", "-t1", f"-c{connections}", f"-d{seconds:g}s"]
    command += ["--latency", "-s", str(script), url]
    completed = subprocess.run(command, capture_output=True, text=True, check=True)
    return parse_wrk(completed.stdout)


def pin(pid: int) -> None:
    """Every thread of ``pid`` on the server core (Go starts threads later too: ``-a`` covers those
    that exist, and new ones inherit the mask of the thread that makes them)."""
    subprocess.run(["taskset", "-a", "-cp", SERVER_CORE, str(pid)], capture_output=True, check=True)
