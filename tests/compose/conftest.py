"""``make test-compose`` counts only passes: with ``KUEUE_BRIDGE_TEST_COMPOSE=1`` a skipped test, or none
at all, fails the run (pytest itself exits 0 when every test was skipped).

It also prints the figures the run measured (``tests.compose.stack.TIMINGS``) at the end.
"""

from __future__ import annotations

import os

import pytest

from tests.compose.stack import ENABLING_VARIABLE, TIMINGS

_outcomes: dict[str, int] = {"passed": 0, "skipped": 0, "failed": 0}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" or report.outcome != "passed":
        _outcomes[report.outcome] += 1


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if os.environ.get(ENABLING_VARIABLE) != "1":
        return
    if session.exitstatus == 0 and (_outcomes["skipped"] or not _outcomes["passed"]):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if os.environ.get(ENABLING_VARIABLE) != "1":
        return
    if _outcomes["skipped"] or not _outcomes["passed"]:
        terminalreporter.write_line(
            f"FAILED: {ENABLING_VARIABLE}=1 counts only passes: "
            f"{_outcomes['passed']} passed, {_outcomes['skipped']} skipped",
            red=True,
        )
    if TIMINGS:
        figures = ", ".join(f"{name} {seconds:.1f}s" for name, seconds in TIMINGS.items())
        terminalreporter.write_line(f"docker compose figures: {figures}")
