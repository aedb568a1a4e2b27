"""The ``Preflight`` section of ``kueue-bridge explain``: the preflight findings about this one job.

After the chain has found its verdict, the checks of :func:`shared.preflight.job_checks` run for the
job's kind, its namespace and the admission checks of its ClusterQueue: Kueue hands the kind to
kueue-bridge and does not manage it too, the kind is served, our webhooks cover it and the API server
reaches them (a dry-run create in the job's namespace), the webhook's, reconciler's and Kueue's
ServiceAccounts may do what they must with it, and MultiKueue can dispatch it to every worker.
Problems are listed with their fix; when there is none the section says how many checks passed.
A misconfiguration is often the reason behind a verdict (a job that "runs without a Workload"
because Kueue's own integration is on, a check stuck ``Pending`` because a worker lacks the CRD),
so it is shown next to it rather than left to a separate command.
"""

from __future__ import annotations

from datetime import datetime

from bridge_tools.explain.verdict import Explanation
from shared.config import Configuration
from shared.frameworks.registry import Framework
from shared.kube import KubeClient
from shared.preflight import PreflightOptions, Verdict, job_checks

__all__ = ["SECTION", "add_preflight_findings"]

SECTION = "Preflight"


async def add_preflight_findings(
    client: KubeClient,
    explanation: Explanation,
    *,
    config: Configuration,
    framework: Framework,
    namespace: str,
    options: PreflightOptions,
    now: datetime,
) -> None:
    checks = [row[0] for row in explanation.section("Admission checks").rows]
    findings = await job_checks(
        client,
        config,
        kind=framework.gvk.kind_arg,
        namespace=namespace,
        admission_checks=checks,
        options=options,
        now=now,
    )
    section = explanation.section(SECTION)
    problems = [finding for finding in findings if finding.verdict is not Verdict.OK]
    for finding in problems:
        section.note(f"{str(finding.verdict).upper():<4}  {finding.check}: {finding.message}")
        section.note(f"      fix: {finding.fix}")
    passed = len(findings) - len(problems)
    summary = (
        f"{passed} check(s) about this job passed"
        if problems
        else f"all {passed} check(s) about this job passed"
    )
    section.note(f"{summary}; kueue-bridge preflight --config FILE checks the whole installation")
