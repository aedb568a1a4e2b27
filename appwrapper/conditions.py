"""``metav1.Condition`` lists on raw dicts, with apimachinery's ``meta.SetStatusCondition`` semantics.

The AppWrapper is kept as the raw dict the API server returned (nothing the controller does not
know about is ever dropped), so its conditions are edited in place here rather than through a model.

Invariants (``k8s.io/apimachinery/pkg/api/meta``):

* setting a condition whose ``status`` is unchanged keeps its ``lastTransitionTime`` -- every
  deadline of the phase machine is measured from a transition time, and AppWrapper deliberately
  keeps some messages constant so that re-asserting a condition does not restart its clock;
  ``reason`` and ``message`` are always overwritten;
* a new or flipped condition gets ``now``, serialised as ``metav1.Time`` does (RFC 3339, seconds);
  deadlines are always computed from the *serialised* value, so a controller that restarts and
  reads the stored object computes exactly the deadline its predecessor did;
* AppWrapper's ``clearCondition`` only touches a condition that is currently ``True``.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from shared.models.condition import format_time

__all__ = [
    "clear_condition",
    "find_condition",
    "format_time",
    "is_true",
    "parse_time",
    "set_condition",
    "transition_time",
]

Conditions = list[dict[str, Any]]


def parse_time(text: Any) -> datetime | None:
    """A ``metav1.Time`` string as an aware datetime; ``None`` when absent or unreadable."""
    if not isinstance(text, str) or not text:
        return None
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def find_condition(conditions: Conditions, condition_type: str) -> dict[str, Any] | None:
    for condition in conditions:
        if condition.get("type") == condition_type:
            return condition
    return None


def is_true(conditions: Conditions, condition_type: str) -> bool:
    condition = find_condition(conditions, condition_type)
    return condition is not None and condition.get("status") == "True"


def set_condition(
    conditions: Conditions,
    *,
    condition_type: str,
    status: str,
    reason: str,
    message: str = "",
    now: datetime,
) -> None:
    """``meta.SetStatusCondition`` (no ``observedGeneration``: AppWrapper never sets one)."""
    existing = find_condition(conditions, condition_type)
    if existing is None:
        conditions.append(
            {
                "type": condition_type,
                "status": status,
                "lastTransitionTime": format_time(now),
                "reason": reason,
                "message": message,
            }
        )
        return
    if existing.get("status") != status:
        existing["status"] = status
        existing["lastTransitionTime"] = format_time(now)
    existing["reason"] = reason
    existing["message"] = message


def clear_condition(
    conditions: Conditions, *, condition_type: str, reason: str, message: str = "", now: datetime
) -> None:
    """AppWrapper's ``clearCondition``: a ``True`` condition becomes ``False``; anything else stays."""
    if is_true(conditions, condition_type):
        set_condition(
            conditions, condition_type=condition_type, status="False", reason=reason, message=message, now=now
        )


def transition_time(conditions: Conditions, condition_type: str, *, default: datetime) -> datetime:
    """The condition's ``lastTransitionTime``; ``default`` when it is missing or unreadable.

    The operator dereferences the condition unconditionally (it always exists where it is read);
    an object edited by hand may lack it, and ``default`` (the current time) then starts the clock
    afresh instead of crashing the reconcile.
    """
    condition = find_condition(conditions, condition_type)
    moment = parse_time(condition.get("lastTransitionTime")) if condition is not None else None
    return moment if moment is not None else default
