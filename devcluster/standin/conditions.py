"""Condition and timestamp helpers on plain JSON objects for the devcluster add-ons (LOCAL RUNS ONLY).

The add-ons edit objects exactly as read from the API (dicts), so that nothing the stand-in does not
understand is lost on write. ``set_condition`` follows apimachinery's ``meta.SetStatusCondition``:
``lastTransitionTime`` moves only when ``status`` changes; reason, message and observedGeneration
are always refreshed; a new type is appended.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

__all__ = [
    "count_eviction",
    "find_condition",
    "format_time",
    "is_true",
    "parse_time",
    "set_condition",
    "status_of",
    "utc_now",
]


def utc_now() -> datetime:
    return datetime.now(UTC)


def format_time(moment: datetime) -> str:
    """RFC 3339 with second precision and ``Z``, as metav1.Time serialises."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def status_of(obj: dict[str, Any]) -> dict[str, Any]:
    status = obj.get("status")
    if not isinstance(status, dict):
        status = {}
        obj["status"] = status
    return status


def find_condition(obj: dict[str, Any], condition_type: str) -> dict[str, Any] | None:
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition.get("type") == condition_type:
            return dict(condition)
    return None


def is_true(obj: dict[str, Any], condition_type: str) -> bool:
    condition = find_condition(obj, condition_type)
    return condition is not None and condition.get("status") == "True"


def set_condition(
    obj: dict[str, Any],
    *,
    condition_type: str,
    status: str,
    reason: str,
    message: str,
    now: datetime,
    with_generation: bool = True,
) -> bool:
    """Set one condition on ``obj['status']['conditions']``; return whether anything changed."""
    conditions: list[dict[str, Any]] = status_of(obj).setdefault("conditions", [])
    wanted: dict[str, Any] = {"type": condition_type, "status": status, "reason": reason, "message": message}
    if with_generation:
        wanted["observedGeneration"] = (obj.get("metadata") or {}).get("generation", 0)
    for condition in conditions:
        if condition.get("type") != condition_type:
            continue
        changed = any(condition.get(key) != value for key, value in wanted.items())
        if condition.get("status") != status or "lastTransitionTime" not in condition:
            condition["lastTransitionTime"] = format_time(now)
        condition.update(wanted)
        return changed
    conditions.append({**wanted, "lastTransitionTime": format_time(now)})
    return True


def count_eviction(workload: dict[str, Any], reason: str, underlying_cause: str = "") -> None:
    """Count one eviction in ``status.schedulingStats.evictions`` (per reason and underlying cause)."""
    stats = status_of(workload).setdefault("schedulingStats", {})
    evictions: list[dict[str, Any]] = stats.setdefault("evictions", [])
    for entry in evictions:
        if entry.get("reason") == reason and entry.get("underlyingCause", "") == underlying_cause:
            entry["count"] = int(entry.get("count", 0)) + 1
            return
    evictions.append({"reason": reason, "underlyingCause": underlying_cause, "count": 1})


def remove_condition(obj: dict[str, Any], condition_type: str) -> None:
    status = status_of(obj)
    status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != condition_type]
