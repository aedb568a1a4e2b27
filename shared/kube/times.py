"""Kubernetes timestamps: ``metav1.Time`` and ``metav1.MicroTime`` on the wire, and kubectl's ages.

The one place that turns a ``datetime`` into the text the API server stores and back; every
component, the operator tools and the devcluster use it.

Invariants:

* ``format_time`` is ``metav1.Time``'s JSON form: RFC 3339 in UTC with second precision and ``Z``
  (``2026-01-02T03:04:05Z``); ``format_micro_time`` is ``metav1.MicroTime``'s: six fraction digits.
  Both convert an aware ``datetime`` to UTC first and read a naive one as UTC already.
* ``parse_time`` reads what Go's ``time.Parse(time.RFC3339, ...)`` reads (a ``T``, a zone ``Z`` or
  ``±hh:mm``, any fraction) and answers ``None`` for anything else, a missing value included: a
  reader of an odd object (hand-edited, a display) never fails on a timestamp. Callers that need a
  time pick their own fallback.
* ``human_duration`` is apimachinery's ``duration.HumanDuration``, what ``kubectl get`` prints in
  its AGE column.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any, Final

__all__ = ["age_since", "format_micro_time", "format_time", "human_duration", "parse_time", "utc_now"]

_RFC3339: Final = re.compile(
    r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})", re.ASCII | re.IGNORECASE
)


def utc_now() -> datetime:
    """The current time, aware, in UTC (the default clock of a loop that takes one)."""
    return datetime.now(UTC)


def _utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo is None or moment.tzinfo is UTC else moment.astimezone(UTC)


def format_time(moment: datetime) -> str:
    """``metav1.Time``: ``2026-01-02T03:04:05Z``."""
    m = _utc(moment)
    return f"{m.year:04d}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:{m.minute:02d}:{m.second:02d}Z"


def format_micro_time(moment: datetime) -> str:
    """``metav1.MicroTime``: ``2026-01-02T03:04:05.000123Z`` (f-strings: ``strftime`` with ``%f`` is
    several times slower, and every Event and Lease renewal carries one)."""
    m = _utc(moment)
    return (
        f"{m.year:04d}-{m.month:02d}-{m.day:02d}T{m.hour:02d}:{m.minute:02d}:"
        f"{m.second:02d}.{m.microsecond:06d}Z"
    )


def parse_time(value: Any) -> datetime | None:
    """An RFC 3339 timestamp as an aware ``datetime``; ``None`` when missing or not RFC 3339."""
    if not isinstance(value, str) or not _RFC3339.fullmatch(value):
        return None
    try:
        return datetime.fromisoformat(value.upper().replace("Z", "+00:00"))
    except ValueError:  # matched the shape, not the calendar (month 13)
        return None


def human_duration(seconds: float) -> str:
    """apimachinery's ``duration.HumanDuration``: ``5s``, ``3m2s``, ``15m``, ``2h5m``, ``3d4h``, ``2y10d``."""
    whole = int(seconds)  # Go's int() truncates toward zero
    if whole < -1:
        return "<invalid>"
    if whole < 0:
        return "0s"
    if whole < 120:
        return f"{whole}s"
    minutes = whole // 60
    if minutes < 10:
        return _two_units(minutes, "m", whole % 60, "s")
    if minutes < 180:
        return f"{minutes}m"
    hours = whole // 3600
    if hours < 8:
        return _two_units(hours, "h", minutes % 60, "m")
    if hours < 48:
        return f"{hours}h"
    days = hours // 24
    if hours < 24 * 8:
        return _two_units(days, "d", hours % 24, "h")
    if hours < 24 * 365 * 2:
        return f"{days}d"
    years = days // 365
    if hours < 24 * 365 * 8:
        return _two_units(years, "y", days % 365, "d")
    return f"{years}y"


def _two_units(count: int, unit: str, rest: int, rest_unit: str) -> str:
    """HumanDuration's two-unit form: ``3m2s``, or ``3m`` when the smaller unit's count is 0."""
    return f"{count}{unit}{rest}{rest_unit}" if rest else f"{count}{unit}"


def age_since(value: Any, *, now: datetime, unknown: str = "<unknown>") -> str:
    """kubectl's ``translateTimestampSince``: the age of timestamp ``value`` at ``now``, ``unknown``
    when it is missing or unreadable."""
    moment = parse_time(value)
    return human_duration((now - moment).total_seconds()) if moment is not None else unknown
