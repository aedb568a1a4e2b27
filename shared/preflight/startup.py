"""A component's preflight at start-up: log what is wrong, refuse to start on two controllers.

Every component (webhook, reconciler, multikueue, appwrapper) calls :func:`check_before_start`
before it serves or campaigns for its Lease. Findings that are not ``ok`` are logged as warnings
(one line each, with the fix); a ``conflict`` raises :class:`StartupRefused`, which the process
reports with :func:`refusal_line` on stderr and exit code 1 -- no traceback. The checks use a
client of their own (closed before the component starts) so that nothing of them stays behind.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

from shared.config import Configuration
from shared.kube import ClientSettings, ConnectionConfig, KubeClient
from shared.preflight.findings import Verdict
from shared.preflight.run import Component, StartupRefused, startup_checks

__all__ = ["check_before_start", "refusal_line", "report_refusal"]


async def check_before_start(
    connection: ConnectionConfig,
    config: Configuration,
    *,
    component: Component,
    logger: logging.Logger,
    settings: ClientSettings | None = None,
) -> None:
    """Run :func:`startup_checks` and log its findings; :class:`StartupRefused` on a conflict."""
    async with KubeClient.from_connection(connection, settings=settings or ClientSettings()) as client:
        findings = await startup_checks(client, config, component=component)
    for finding in findings:
        if finding.verdict is Verdict.OK:
            logger.debug("preflight %s: %s", finding.check, finding.message)
        else:
            logger.warning(
                "preflight %s %s: %s (fix: %s)", finding.verdict, finding.check, finding.message, finding.fix
            )


def refusal_line(component: str, refused: StartupRefused) -> str:
    return f"kueue-bridge {component}: refusing to start: {refused}"


def report_refusal(component: str, refused: StartupRefused, *, stderr: TextIO | None = None) -> int:
    """Print the one-line refusal and return the exit code (1)."""
    print(refusal_line(component, refused), file=stderr or sys.stderr)
    return 1
