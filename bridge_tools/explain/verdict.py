"""The result of ``kueue-bridge explain``: one verdict, then the evidence, as text or JSON.

The verdict answers the user's question in one line (``Pending: ClusterQueue team-cq has 8/8 cpu
in use in flavor default; this job needs 2 cpu``); the sections below it show what the verdict was
read from, following the chain job -> Workload -> LocalQueue -> ClusterQueue -> admission checks ->
eviction history -> events, so a user can check the reasoning and see what else is going on.

Invariants (the text output is read by people and grepped by scripts, so it must be stable):

* The **first line is the verdict**: ``<headline>: <reason>``. ``headline`` is one of the
  ``State`` values' ``headline``; ``reason`` is one sentence without a trailing period.
* Sections come in the order they were added, each a title line then two-space indented,
  aligned ``key  value`` fields, then an aligned table (columns separated by two spaces, trailing
  blanks stripped), then notes. Empty sections are not printed.
* ``-o json`` carries exactly the same content: ``state``, ``headline``, ``reason``, ``verdict``
  and the sections (fields as an ordered mapping, tables as columns + rows).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

__all__ = ["Explanation", "Section", "State", "render_json", "render_text"]


class State(StrEnum):
    """Where the job stands, most blocked first."""

    NOT_QUEUED = "NotQueued"  # kueue-bridge will not (or cannot) create a Workload for it
    WAITING = "Waiting"  # it should get a Workload, has none yet
    CHILD = "ManagedByParent"  # a managed ancestor holds the Workload
    PENDING = "Pending"  # Workload without quota
    EVICTED = "Evicted"
    DEACTIVATED = "Deactivated"
    QUOTA_RESERVED = "QuotaReserved"  # quota reserved, admission checks not all Ready
    ADMITTED = "Admitted"  # admitted, job not started yet
    RUNNING = "Running"
    FINISHED = "Finished"

    @property
    def headline(self) -> str:
        return _HEADLINES.get(self, self.value)

    @property
    def running_or_done(self) -> bool:
        return self in (State.RUNNING, State.FINISHED)


_HEADLINES = {
    State.NOT_QUEUED: "Not queued",
    State.WAITING: "Waiting",
    State.CHILD: "Managed by parent",
    State.QUOTA_RESERVED: "Quota reserved",
}


@dataclass
class Section:
    """A titled block of evidence: fields, then an optional table, then notes."""

    title: str
    fields: list[tuple[str, str]] = field(default_factory=list)
    columns: tuple[str, ...] = ()
    rows: list[tuple[str, ...]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add(self, key: str, value: object) -> Section:
        self.fields.append((key, _text(value)))
        return self

    def row(self, *cells: object) -> Section:
        self.rows.append(tuple(_text(cell) for cell in cells))
        return self

    def note(self, text: str) -> Section:
        self.notes.append(text)
        return self

    @property
    def empty(self) -> bool:
        return not (self.fields or self.rows or self.notes)


def _text(value: object) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@dataclass
class Explanation:
    state: State
    reason: str
    sections: list[Section] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return f"{self.state.headline}: {self.reason}"

    def section(self, title: str) -> Section:
        """The section titled ``title``, created (at the end) if it does not exist yet."""
        for existing in self.sections:
            if existing.title == title:
                return existing
        created = Section(title)
        self.sections.append(created)
        return created


def _table(columns: tuple[str, ...], rows: list[tuple[str, ...]]) -> list[str]:
    lines = [columns, *rows]
    widths = [max(len(line[index]) for line in lines if index < len(line)) for index in range(len(columns))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=False)).rstrip()
        for line in lines
    ]


def render_text(explanation: Explanation) -> str:
    out = [explanation.verdict]
    for section in explanation.sections:
        if section.empty:
            continue
        out.append("")
        out.append(section.title)
        if section.fields:
            width = max(len(key) for key, _ in section.fields)
            out.extend(f"  {key.ljust(width)}  {value}".rstrip() for key, value in section.fields)
        if section.rows:
            out.extend(f"  {line}" for line in _table(section.columns, section.rows))
        out.extend(f"  {note}" for note in section.notes)
    return "\n".join(out) + "\n"


def render_json(explanation: Explanation) -> dict[str, Any]:
    return {
        "verdict": explanation.verdict,
        "state": explanation.state.value,
        "headline": explanation.state.headline,
        "reason": explanation.reason,
        "sections": [
            {
                "title": section.title,
                "fields": dict(section.fields),
                "columns": list(section.columns),
                "rows": [list(row) for row in section.rows],
                "notes": list(section.notes),
            }
            for section in explanation.sections
            if not section.empty
        ],
    }
