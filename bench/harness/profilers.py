"""Sampling profilers attached to a running component: py-spy (never pauses it) or perf.

A sampler writes a file that :mod:`bench.harness.profile_breakdown` sorts into parts of the work.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

__all__ = ["PerfSampler", "Sampler", "perf_profiling_problem", "py_spy_available", "start_sampler"]


def _interrupt(process: subprocess.Popen[bytes], *, within: float) -> bytes:
    """SIGINT a profiler (it writes its output on the way out), killed if it has not exited
    ``within`` seconds; its standard error."""
    if process.poll() is None:
        process.send_signal(signal.SIGINT)
    try:
        _, stderr = process.communicate(timeout=within)
    except subprocess.TimeoutExpired:
        process.kill()
        _, stderr = process.communicate()
    return stderr


class Sampler:
    """``py-spy record --nonblocking`` on a process (it is never paused), stopped with SIGINT."""

    def __init__(self, pid: int, output: Path, *, rate: int, native: bool = False) -> None:
        binary = Path(sys.executable).parent / "py-spy"
        command = [str(binary if binary.exists() else "py-spy"), "record", "--pid", str(pid)]
        command += ["--rate", str(rate), "--format", "raw", "--output", str(output), "--gil"]
        # --native shows C frames (the collector, orjson, ssl) but must pause the process per sample
        command += ["--native"] if native else ["--nonblocking"]
        self.output = output
        self._process = subprocess.Popen(
            command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
        )

    def stop(self) -> bool:
        """Stop sampling; whether a profile was written (py-spy may lack the right to attach)."""
        stderr = _interrupt(self._process, within=60)
        if self.output.exists():
            return True
        print(f"py-spy wrote no profile: {stderr.decode(errors='replace')[-1000:]}", file=sys.stderr)
        return False


class PerfSampler:
    """``perf record --call-graph dwarf`` on a process started with ``PYTHONPERFSUPPORT=1`` (Python
    3.12+), stopped with SIGINT and turned into ``perf script`` text (``*.perf.txt``, read by
    ``bench.harness.profile_breakdown.parse_perf_script``): CPU samples named by Python function."""

    def __init__(self, pid: int, output: Path, *, rate: int) -> None:
        self.output = output
        self._data = output.with_name(output.name.removesuffix(".perf.txt") + ".perf.data")
        command = ["perf", "record", "-F", str(rate), "--call-graph", "dwarf,8192", "-p", str(pid)]
        self._process = subprocess.Popen(
            [*command, "-o", str(self._data)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )

    def stop(self) -> bool:
        """Stop sampling and write the text file; whether it was written."""
        stderr = _interrupt(self._process, within=120)
        if not self._data.exists():
            print(f"perf wrote no profile: {stderr.decode(errors='replace')[-1000:]}", file=sys.stderr)
            return False
        with self.output.open("wb") as text:
            script = subprocess.run(
                ["perf", "script", "-i", str(self._data)], stdout=text, stderr=subprocess.PIPE, check=False
            )
        if script.returncode != 0:
            print(f"perf script failed: {script.stderr.decode(errors='replace')[-1000:]}", file=sys.stderr)
            return False
        return True


def start_sampler(args: argparse.Namespace, pid: int, stem: Path) -> Sampler | PerfSampler:
    """The profiler ``--profiler`` names on ``pid``, writing ``<stem>.pyspy.txt`` or ``<stem>.perf.txt``."""
    if args.profiler == "perf":
        return PerfSampler(pid, stem.with_name(stem.name + ".perf.txt"), rate=args.rate)
    return Sampler(pid, stem.with_name(stem.name + ".pyspy.txt"), rate=args.rate, native=args.native)


def perf_profiling_problem() -> str | None:
    """Why ``--profiler perf`` cannot run here, or ``None``."""
    if sys.version_info < (3, 12):
        return "--profiler perf needs Python 3.12 or later (its perf trampolines); run the bench from such a venv"
    if shutil.which("perf") is None:
        return "--profiler perf needs the perf tool on PATH (linux-perf / linux-tools)"
    return None


def py_spy_available() -> bool:
    binary = Path(sys.executable).parent / "py-spy"
    return binary.exists() or any(
        (Path(directory) / "py-spy").exists() for directory in os.environ.get("PATH", "").split(os.pathsep)
    )
