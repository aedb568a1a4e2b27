"""The live progress table of ``kueue-bridge dev``: one row per sample job, from job + Workload.

A row's STATE is derived from what the API server shows, never from what the runner did, so the
table is also an end-to-end check of the webhook, the reconciler, the Kueue stand-in and the job
runner together:

* ``Suspended`` — the job is suspended and has no Workload yet (the webhook suspended it);
* ``Pending`` — its Workload exists and has no quota reservation;
* ``Admitted`` — the Workload has ``QuotaReserved=True`` but the job is still suspended;
* ``Running`` — the job is unsuspended (the reconciler started it) and its Workload is not finished;
* ``Finished(Succeeded|Failed)`` — the Workload has ``Finished=True`` (the reconciler saw the job
  finish); the reason is the condition's.

WHY, for a job that is neither running nor finished, is the reason of ``kueue-bridge explain``'s
verdict (computed by the caller, which reads the queues; this module stays pure).

In a MultiKueue fleet (``--workers N``) the table gains CLUSTER: the worker the job was dispatched
to, read from the manager Workload's ``status.clusterName`` or, failing that, from an admission
check's message ``The workload was admitted on "<cluster>"`` (Kueue's text; a kind without
``spec.managedBy`` keeps its check ``Pending`` with that message); ``-`` while not dispatched. The
manager's copy of such a kind stays suspended while the worker's copy runs, so in a fleet a job is
also ``Running`` when its copy on that worker is unsuspended. Without a fleet no row has a cluster
and the column is left out, so ``make dev``'s table is unchanged.

``Finished`` deliberately waits for the *Workload*, not the job: a job completed by the job runner
whose Workload is never finished means the reconciler is broken, and ``--exit-when-done`` must not
succeed then. Rendering is pure (:func:`render_table`); :class:`TableDisplay` redraws in place on a
terminal and, on anything else (CI logs, pipes), appends the table only when a row changed.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Final, TextIO

from shared.constants import Condition
from shared.kube.conditions import is_true
from shared.kube.times import age_since

__all__ = [
    "FINISHED_PREFIX",
    "JobRow",
    "TableDisplay",
    "cluster_of",
    "job_row",
    "render_table",
    "workload_of",
]

FINISHED_PREFIX: Final = "Finished"
HEADERS: Final = ("KIND", "NAMESPACE/NAME", "STATE", "WORKLOAD", "CLUSTERQUEUE", "CLUSTER", "AGE", "WHY")
#: Kueue's MultiKueue check message once a worker admitted the copy (``fmt.Sprintf("... %q", name)``)
_ADMITTED_ON: Final = re.compile(r'^The workload was admitted on "([^"]+)"$')


@dataclass(frozen=True, slots=True)
class JobRow:
    kind: str
    key: str
    state: str
    workload: str
    cluster_queue: str
    age: str
    why: str = ""
    #: the worker it was dispatched to, ``-`` if none yet; None outside a fleet (no CLUSTER column)
    cluster: str | None = None

    @property
    def finished(self) -> bool:
        return self.state.startswith(FINISHED_PREFIX)

    def cells(self) -> tuple[str, ...]:
        """One cell per header of :data:`HEADERS` (CLUSTER empty outside a fleet)."""
        return (
            self.kind,
            self.key,
            self.state,
            self.workload,
            self.cluster_queue,
            self.cluster or "",
            self.age,
            self.why,
        )


def _condition(obj: Mapping[str, Any], condition_type: str) -> Mapping[str, Any] | None:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(condition, Mapping) and condition.get("type") == condition_type:
            return condition
    return None


def _is_true(obj: Mapping[str, Any], condition_type: str) -> bool:
    return is_true(_condition(obj, condition_type))


def workload_of(job: Mapping[str, Any], workloads: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The Workload owned by ``job`` (matched by owner UID, as Kueue's own lookup does)."""
    uid = (job.get("metadata") or {}).get("uid")
    if not uid:
        return None
    for workload in workloads:
        for owner in (workload.get("metadata") or {}).get("ownerReferences") or []:
            if isinstance(owner, Mapping) and owner.get("uid") == uid:
                return workload
    return None


def cluster_of(workload: Mapping[str, Any] | None) -> str | None:
    """The worker a MultiKueue manager's Workload was dispatched to, or None."""
    status = (workload or {}).get("status") or {}
    name = status.get("clusterName")
    if isinstance(name, str) and name:
        return name
    for check in status.get("admissionChecks") or []:
        if isinstance(check, Mapping):
            found = _ADMITTED_ON.match(str(check.get("message") or ""))
            if found:
                return found.group(1)
    return None


def _suspended(obj: Mapping[str, Any] | None, suspend_path: Sequence[str]) -> bool:
    value: Any = obj
    for key in suspend_path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value is True


def _state(*, suspended: bool, workload: Mapping[str, Any] | None) -> str:
    if workload is not None and _is_true(workload, Condition.FINISHED):
        reason = (_condition(workload, Condition.FINISHED) or {}).get("reason") or "Succeeded"
        return f"{FINISHED_PREFIX}({reason})"
    if not suspended:
        return "Running"
    if workload is None:
        return "Suspended"
    if _is_true(workload, Condition.QUOTA_RESERVED):
        return "Admitted"
    return "Pending"


def job_row(
    *,
    job: Mapping[str, Any],
    suspend_path: Sequence[str],
    workloads: Sequence[Mapping[str, Any]],
    now: datetime,
    why: str = "",
    copies: Mapping[str, Mapping[str, Any] | None] | None = None,
) -> JobRow:
    """One table row for ``job``; ``suspend_path`` is where its kind keeps the suspend flag.

    ``why`` is ``kueue-bridge explain``'s reason for a job that is not running (empty otherwise).
    ``copies``, in a fleet only, is the job's copy on each worker by cluster name (None if absent):
    the row then names its worker and is ``Running`` while the copy there is unsuspended.
    """
    metadata = job.get("metadata") or {}
    workload = workload_of(job, workloads)
    admission = ((workload or {}).get("status") or {}).get("admission") or {}
    suspended = _suspended(job, suspend_path)
    cluster: str | None = None
    if copies is not None:
        cluster = cluster_of(workload)
        copy = copies.get(cluster) if cluster else None
        if copy is not None and not _suspended(copy, suspend_path):
            suspended = False
        cluster = cluster or "-"
    return JobRow(
        kind=str(job.get("kind", "?")),
        key=f"{metadata.get('namespace', '')}/{metadata.get('name', '')}",
        state=_state(suspended=suspended, workload=workload),
        workload=str((workload or {}).get("metadata", {}).get("name") or "-"),
        cluster_queue=str(admission.get("clusterQueue") or "-"),
        age=age_since(metadata.get("creationTimestamp"), now=now, unknown="-"),
        why=why,
        cluster=cluster,
    )


def render_table(rows: Sequence[JobRow], *, omit: Sequence[str] = ()) -> list[str]:
    """Aligned lines, header first (kubectl's layout: columns separated by three spaces).

    ``omit`` names columns to leave out (a narrow terminal drops ``WORKLOAD`` first); CLUSTER is
    left out when no row has a cluster (a single-cluster run).
    """
    if all(row.cluster is None for row in rows):
        omit = (*omit, "CLUSTER")
    keep = [index for index, header in enumerate(HEADERS) if header not in omit]
    table = [tuple(line[index] for index in keep) for line in (HEADERS, *(row.cells() for row in rows))]
    widths = [max(len(line[column]) for line in table) for column in range(len(keep))]
    return [
        "   ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in table
    ]


class TableDisplay:
    """Shows successive tables: redrawn in place on a TTY, appended on change otherwise."""

    def __init__(
        self,
        *,
        out: TextIO,
        tty: bool | None = None,
        clock: Callable[[], datetime] | None = None,
        width: Callable[[], int] | None = None,
    ) -> None:
        self._out = out
        self._tty = out.isatty() if tty is None else tty
        # a wrapped line would break the cursor-up count of the next redraw: cut at the width
        self._width = width or (lambda: shutil.get_terminal_size().columns)
        self._drawn_lines = 0
        self._last_states: tuple[tuple[str, str, str, str], ...] | None = None
        self._clock = clock or (lambda: datetime.now(UTC))

    def show(self, rows: Sequence[JobRow], *, footer: str = "") -> None:
        width = max(self._width() - 1, 20) if self._tty else 0
        lines = render_table(rows)
        if self._tty and max(len(line) for line in lines) > width:
            lines = render_table(rows, omit=("WORKLOAD",))
        if footer:
            lines.append(footer)
        if self._tty:
            lines = [line[:width] for line in lines]
            # cursor up over the previous drawing, clear to the end of the screen, draw again
            prefix = f"\x1b[{self._drawn_lines}F\x1b[J" if self._drawn_lines else ""
            self._out.write(prefix + "\n".join(lines) + "\n")
            self._drawn_lines = len(lines)
        else:
            states = tuple((row.key, row.state, row.why, row.cluster or "") for row in rows)
            if states == self._last_states:
                return
            self._last_states = states
            stamp = self._clock().strftime("%H:%M:%S")
            self._out.write(f"--- {stamp}\n" + "\n".join(lines) + "\n")
        self._out.flush()

    def final(self, rows: Sequence[JobRow], *, footer: str = "") -> None:
        """The last table, always written (also when nothing changed since the previous one)."""
        self._last_states = None
        self.show(rows, footer=footer)
