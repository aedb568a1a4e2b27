"""Kubernetes timestamps read leniently and ages printed the way ``kubectl`` prints them.

Operator-facing output (``kueue-bridge dev``'s table, ``kueue-bridge explain``) shows how long ago
something happened as ``kubectl get`` does (``7s``, ``3m12s``, ``2h5m``), computed from RFC 3339
timestamps the API server wrote. Invariant: nothing here raises on bad input -- a missing or
malformed timestamp is ``None``, a negative age (clock skew) prints as ``0s`` -- because a display
must never fail on an odd object.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

__all__ = ["age_since", "format_age", "parse_timestamp"]


def parse_timestamp(value: Any) -> datetime | None:
    """An RFC 3339 timestamp (``2026-01-02T03:04:05Z``, fractions allowed) as an aware datetime."""
    if not isinstance(value, str) or not value:
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo is not None else None


def format_age(seconds: float) -> str:
    """kubectl's short age: ``7s``, ``3m12s``, ``2h5m``."""
    whole = max(int(seconds), 0)
    if whole < 60:
        return f"{whole}s"
    minutes, secs = divmod(whole, 60)
    if minutes < 60:
        return f"{minutes}m{secs}s" if secs else f"{minutes}m"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes}m" if minutes else f"{hours}h"


def age_since(value: Any, *, now: datetime) -> str:
    """The age of timestamp ``value`` at ``now``, or ``-`` when it is missing or malformed."""
    moment = parse_timestamp(value)
    return format_age((now - moment).total_seconds()) if moment is not None else "-"
