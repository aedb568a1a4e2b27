"""testkit.real_suite (``make test-real``) without the kit running: exit codes, the sweep, interrupts.

The two stages are replaced by stand-ins that return a pytest exit code (or raise), and the sweep's
two halves by recorders, so these tests check what ``main`` promises: which code it exits with,
that it says why, and that the run's folder is swept and removed whatever happened.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from testkit import real_suite
from testkit.real_cluster import Kit, KitError


@pytest.fixture
def kit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Kit:
    """A kit folder with both Kueue versions (the scripts are never run here)."""
    directory = tmp_path / "shared" / "real-cluster"
    for version in ("ff69552", "v0.19.2"):
        (directory / "kueue" / version).mkdir(parents=True)
    for script in ("apiserver.sh", "kueue.sh"):
        (directory / script).write_text("exit 0\n")
    monkeypatch.setenv("KUEUE_BRIDGE_SHARED_DIR", str(tmp_path / "shared"))
    return Kit(directory=directory)


class Sweep:
    """Records the sweep: the roots given to ``stop_all_below`` and ``stop_processes_below``."""

    def __init__(self) -> None:
        self.clusters: list[Path] = []
        self.processes: list[Path] = []

    def stop_all_below(self, root: Path, *, kit: Kit) -> list[str]:
        self.clusters.append(root)
        return ["kueue.sh stop (c): something failed"] if root.name == "e2e" else []

    def stop_processes_below(self, root: Path) -> list[str]:
        self.processes.append(root)
        return ["pid 4242: kueue-bridge webhook"]


@pytest.fixture
def sweep(monkeypatch: pytest.MonkeyPatch) -> Sweep:
    recorder = Sweep()
    monkeypatch.setattr(real_suite, "stop_all_below", recorder.stop_all_below)
    monkeypatch.setattr(real_suite, "stop_processes_below", recorder.stop_processes_below)
    return recorder


def stages(
    monkeypatch: pytest.MonkeyPatch, *, conformance: Callable[[], int], e2e: Callable[[], int]
) -> list[Path]:
    """Replace both stages; returns the run folders they were given."""
    roots: list[Path] = []

    def run_conformance(kit: Kit, root: Path, pytest_args: Any) -> int:
        roots.append(root)
        assert root.is_dir()
        return conformance()

    def run_e2e(kit: Kit, root: Path, versions: Any, pytest_args: Any) -> int:
        roots.append(root)
        return e2e()

    monkeypatch.setattr(real_suite, "_conformance", run_conformance)
    monkeypatch.setattr(real_suite, "_end_to_end", run_e2e)
    return roots


def test_no_kit_is_exit_code_2_naming_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("KUEUE_BRIDGE_SHARED_DIR", str(tmp_path / "absent"))
    assert real_suite.main([]) == 2
    err = capsys.readouterr().err
    assert f"the real-cluster kit is not at {tmp_path / 'absent' / 'real-cluster'}" in err


def test_a_kueue_version_the_kit_lacks_is_exit_code_2(kit: Kit, capsys: pytest.CaptureFixture[str]) -> None:
    assert real_suite.main(["--kueue-versions", "ff69552,v0.99.0"]) == 2
    assert "the kit has no Kueue v0.99.0" in capsys.readouterr().err


@pytest.mark.parametrize(("conformance", "e2e", "code"), [(0, 0, 0), (1, 0, 1), (0, 2, 1)])
def test_the_exit_code_says_whether_both_stages_passed(
    kit: Kit,
    sweep: Sweep,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    conformance: int,
    e2e: int,
    code: int,
) -> None:
    roots = stages(monkeypatch, conformance=lambda: conformance, e2e=lambda: e2e)
    assert real_suite.main([]) == code
    root = roots[0]
    assert roots == [root, root]
    assert not root.exists(), "the run's folder is removed"
    assert sweep.clusters == [root, root / "e2e"]
    assert sweep.processes == [root]
    out, err = capsys.readouterr()
    assert ("conformance: passed" in out) is (conformance == 0)
    assert ("end to end: passed" in out) is (e2e == 0)
    assert "make test-real: kueue.sh stop (c): something failed" in err
    assert "make test-real: stopped a process left behind: pid 4242: kueue-bridge webhook" in err


def test_one_stage_runs_alone(kit: Kit, sweep: Sweep, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []

    def stage(name: str) -> Callable[[], int]:
        def run() -> int:
            ran.append(name)
            return 0

        return run

    stages(monkeypatch, conformance=stage("conformance"), e2e=stage("e2e"))
    assert real_suite.main(["--stage", "e2e"]) == 0
    assert ran == ["e2e"]


def test_a_kit_error_is_exit_code_1_with_its_message_and_still_sweeps(
    kit: Kit, sweep: Sweep, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def failing() -> int:
        raise KitError("apiserver.sh start (conformance) exited with code 1:\nport 6443 is taken")

    stages(monkeypatch, conformance=failing, e2e=lambda: 0)
    assert real_suite.main([]) == 1
    assert "make test-real: apiserver.sh start (conformance) exited with code 1" in capsys.readouterr().err
    assert len(sweep.processes) == 1


def test_an_interrupt_is_exit_code_130_and_still_sweeps(
    kit: Kit, sweep: Sweep, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def interrupted() -> int:
        raise KeyboardInterrupt

    roots = stages(monkeypatch, conformance=lambda: 0, e2e=interrupted)
    assert real_suite.main([]) == 130
    assert "interrupted; stopping the clusters it started" in capsys.readouterr().err
    assert sweep.processes == [roots[0]]
    assert not roots[0].exists()


def test_keep_keeps_the_runs_folder_after_the_sweep(
    kit: Kit, sweep: Sweep, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    roots = stages(monkeypatch, conformance=lambda: 0, e2e=lambda: 1)
    try:
        assert real_suite.main(["--keep"]) == 1
        assert roots[0].is_dir()
        assert f"kept {roots[0]}" in capsys.readouterr().out
        assert sweep.processes == [roots[0]]
    finally:
        __import__("shutil").rmtree(roots[0], ignore_errors=True)


def test_pytest_arguments_follow_the_double_dash() -> None:
    args = real_suite._parse(["--stage", "e2e", "--kueue-versions", "v0.19.2", "--", "-x", "-k", "batch"])
    assert (args.stage, args.kueue_versions, args.pytest_args, args.keep) == (
        "e2e",
        "v0.19.2",
        ["-x", "-k", "batch"],
        False,
    )


@pytest.mark.parametrize(
    ("program", "ends_by"),
    [
        ("", -2),  # Python's default: the first SIGINT ends it (KeyboardInterrupt, then the signal)
        ("signal.signal(signal.SIGINT, signal.SIG_IGN)", -9),  # ignores it: its group is killed
    ],
)
def test_an_interrupted_pytest_gets_one_sigint_then_its_group_is_killed(
    monkeypatch: pytest.MonkeyPatch, program: str, ends_by: int
) -> None:
    monkeypatch.setattr(real_suite, "INTERRUPT_GRACE", 1.0)
    code = f"import signal, sys, time\n{program}\nprint('ready', flush=True)\ntime.sleep(60)"
    with subprocess.Popen(
        [sys.executable, "-c", code], start_new_session=True, stdout=subprocess.PIPE
    ) as process:
        try:
            assert process.stdout is not None and process.stdout.readline() == b"ready\n"
            real_suite._stop_pytest(process)
            assert process.returncode == ends_by
        finally:
            if process.returncode is None:
                process.kill()
