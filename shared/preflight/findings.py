"""A preflight finding, the report made of them, and their text and JSON renderings.

A ``Finding`` is one line of ``kueue-bridge preflight``: which check, its verdict (``ok``, ``warn``,
``fail``), what it found and, unless it is ``ok``, how to fix it. It also names what it concerns
(kinds, namespaces, AdmissionChecks, worker clusters) so that ``kueue-bridge explain`` can show the
findings about one job, and whether it is a **conflict** (two controllers for one kind or one
AdmissionCheck), the one finding on which the components refuse to start.

Invariants: a ``fail`` and a ``warn`` always carry a fix; a finding never contains a credential
(messages name Secrets, users and fields, never their values); rendering is deterministic (findings
keep the order the checks produced them in).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

__all__ = ["Finding", "Report", "Verdict", "render_json", "render_text"]


class Verdict(StrEnum):
    OK = "ok"
    WARN = "warn"
    FAIL = "fail"


@dataclass(frozen=True)
class Finding:
    """One check's result (see the module docstring)."""

    check: str
    verdict: Verdict
    message: str
    fix: str = ""
    kinds: tuple[str, ...] = ()
    namespaces: tuple[str, ...] = ()
    admission_checks: tuple[str, ...] = ()
    clusters: tuple[str, ...] = ()
    conflict: bool = False

    def __post_init__(self) -> None:
        if self.verdict is not Verdict.OK and not self.fix:
            raise ValueError(f"{self.check}: a {self.verdict} finding needs a fix")

    def concerns(
        self, *, kind: str | None = None, namespace: str | None = None, admission_checks: Iterable[str] = ()
    ) -> bool:
        """Whether this finding is about a job of ``kind`` in ``namespace`` behind ``admission_checks``.

        A finding that names nothing in a dimension concerns every value of it; one that names
        values concerns only those.
        """
        if self.kinds and kind not in self.kinds:
            return False
        if self.namespaces and namespace not in self.namespaces:
            return False
        return not self.admission_checks or bool(set(self.admission_checks) & set(admission_checks))

    def in_cluster(self, cluster: str) -> Finding:
        """The same finding, said about worker cluster ``cluster`` (``--all-clusters``)."""
        return replace(self, check=f"{cluster}: {self.check}", clusters=(cluster, *self.clusters))

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"check": self.check, "verdict": str(self.verdict), "message": self.message}
        if self.fix:
            body["fix"] = self.fix
        for name in ("kinds", "namespaces", "admission_checks", "clusters"):
            values = getattr(self, name)
            if values:
                body["admissionChecks" if name == "admission_checks" else name] = list(values)
        if self.conflict:
            body["conflict"] = True
        return body


@dataclass
class Report:
    """Every finding of one preflight run."""

    findings: list[Finding] = field(default_factory=list)

    def add(self, findings: Iterable[Finding]) -> None:
        self.findings.extend(findings)

    @property
    def failed(self) -> bool:
        return any(f.verdict is Verdict.FAIL for f in self.findings)

    def count(self, verdict: Verdict) -> int:
        return sum(1 for f in self.findings if f.verdict is verdict)

    def summary(self) -> str:
        return (
            f"{self.count(Verdict.OK)} ok, {self.count(Verdict.WARN)} warnings, "
            f"{self.count(Verdict.FAIL)} failures"
        )


def render_text(findings: Sequence[Finding], *, summary: str | None = None) -> str:
    """One line per finding (``VERDICT  check: message``), its fix indented below it."""
    lines: list[str] = []
    for finding in findings:
        lines.append(f"{str(finding.verdict).upper():<4}  {finding.check}: {finding.message}")
        if finding.fix:
            lines.append(f"      fix: {finding.fix}")
    if summary is not None:
        lines.append(summary)
    return "".join(line + "\n" for line in lines)


def render_json(report: Report) -> dict[str, Any]:
    return {
        "findings": [finding.to_json() for finding in report.findings],
        "summary": {verdict.value: report.count(verdict) for verdict in Verdict},
        "failed": report.failed,
    }
