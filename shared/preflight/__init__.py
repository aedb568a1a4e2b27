"""Preflight: read-only checks for the misconfigurations that break kueue-bridge and Kueue together.

``kueue-bridge preflight`` (``bridge_tools.preflight.cli``) runs :func:`run_preflight`; every
component runs :func:`startup_checks` before it starts and refuses to on a two-controllers
conflict; ``kueue-bridge explain`` shows the findings that concern one job. Modules: ``findings``
(the finding, the report, their text and JSON), ``kueue_setup`` (Kueue installed; Kueue's own
Configuration; two controllers per kind or per AdmissionCheck), ``kinds_served``, ``webhook_checks``,
``webhook_probe`` (the dry-run create), ``access_checks`` (SubjectAccessReviews),
``multikueue_checks`` (workers), ``run`` and ``startup`` (the components' side).

Nothing here writes: every request is a read, a SubjectAccessReview, or a server-side dry-run create
(``webhook_probe``), which stores nothing.

Modules:

* ``access_checks`` -- do our ServiceAccounts (and Kueue's) have every right kueue-bridge needs? One
  review per right
* ``findings`` -- a preflight finding, the report made of them, and their text and JSON renderings
* ``kinds_served`` -- is every configured kind served, in the configured version, under the
  configured plural?
* ``kueue_setup`` -- is Kueue installed, which version and APIs, and which kinds does Kueue itself
  manage?
* ``multikueue_checks`` -- can ``kueue-bridge multikueue`` dispatch to every worker of every
  AdmissionCheck it handles?
* ``run`` -- run the preflight checks: all of them (``kueue-bridge preflight``), or a component's at
  start-up
* ``startup`` -- a component's preflight at start-up: log what is wrong, refuse to start on two
  controllers
* ``webhook_checks`` -- are our admission webhooks registered for exactly the configured kinds,
  reachable and trusted?
* ``webhook_probe`` -- the end-to-end half of the webhook checks: a server-side dry-run create of a
  probe object
"""

from shared.preflight.findings import Finding, Report, Verdict, render_json, render_text
from shared.preflight.run import (
    Component,
    PreflightOptions,
    StartupRefused,
    job_checks,
    run_preflight,
    startup_checks,
)
from shared.preflight.startup import check_before_start, refusal_line, report_refusal

__all__ = [
    "Component",
    "Finding",
    "PreflightOptions",
    "Report",
    "StartupRefused",
    "Verdict",
    "check_before_start",
    "job_checks",
    "refusal_line",
    "render_json",
    "render_text",
    "report_refusal",
    "run_preflight",
    "startup_checks",
]
