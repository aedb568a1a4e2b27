"""A Workload's ``status.schedulingStats`` as Kueue's scheduler counts it (LOCAL RUNS ONLY).

Conditions and timestamps are ``shared.kube.conditions`` / ``shared.kube.times``, as everywhere; this
is the stand-in's own bookkeeping: one eviction counted per (reason, underlying cause), the way
``workload.ReportEvictedWorkload`` appends to ``schedulingStats.evictions``.
"""

from __future__ import annotations

from typing import Any

from shared.kube.conditions import writable_status

__all__ = ["count_eviction"]


def count_eviction(workload: dict[str, Any], reason: str, underlying_cause: str = "") -> None:
    """Count one eviction in ``status.schedulingStats.evictions`` (per reason and underlying cause)."""
    stats = writable_status(workload).setdefault("schedulingStats", {})
    evictions: list[dict[str, Any]] = stats.setdefault("evictions", [])
    for entry in evictions:
        if entry.get("reason") == reason and entry.get("underlyingCause", "") == underlying_cause:
            entry["count"] = int(entry.get("count", 0)) + 1
            return
    evictions.append({"reason": reason, "underlyingCause": underlying_cause, "count": 1})
