"""The Workload model's ``metav1.Condition``: a typed view whose rules are ``shared.kube.conditions``'.

Components that hold a ``Workload`` model (the reconciler, ``shared.workload_state``, the operator
tools) read its conditions as ``Condition`` objects; ``set_condition`` applies
``meta.SetStatusCondition`` through the one dict implementation (``shared.kube.conditions``) on the
single condition it touches, so the model and the raw-dict controllers can never disagree on when
``lastTransitionTime`` moves. The condition object already in the list is updated in place (a
caller holding it sees the change).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from shared.kube import conditions as wire
from shared.models.base import KubeModel

__all__ = [
    "Condition",
    "find_condition",
    "is_condition_false",
    "is_condition_true",
    "remove_condition",
    "set_condition",
]


class Condition(KubeModel):
    type: str
    status: str  # "True" | "False" | "Unknown"
    reason: str = ""
    message: str = ""
    last_transition_time: str | None = None
    observed_generation: int | None = None


def find_condition(conditions: list[Condition] | None, condition_type: str) -> Condition | None:
    for condition in conditions or []:
        if condition.type == condition_type:
            return condition
    return None


def is_condition_true(conditions: list[Condition] | None, condition_type: str) -> bool:
    condition = find_condition(conditions, condition_type)
    return condition is not None and condition.status == "True"


def is_condition_false(conditions: list[Condition] | None, condition_type: str) -> bool:
    """``True`` only for a condition present with status ``"False"`` (absent is not false)."""
    condition = find_condition(conditions, condition_type)
    return condition is not None and condition.status == "False"


def remove_condition(conditions: list[Condition], condition_type: str) -> bool:
    """Delete the condition of ``condition_type`` in place; return whether one was there."""
    for index, condition in enumerate(conditions):
        if condition.type == condition_type:
            del conditions[index]
            return True
    return False


def set_condition(conditions: list[Condition], new: Condition, *, now: datetime) -> bool:
    """``meta.SetStatusCondition``: insert or update ``new`` in place; whether anything changed."""
    existing = find_condition(conditions, new.type)
    current = [] if existing is None else [_wire_of(existing)]
    changed = wire.set_condition(
        current,
        condition_type=new.type,
        status=new.status,
        reason=new.reason,
        message=new.message,
        observed_generation=new.observed_generation,
        last_transition_time=new.last_transition_time,
        now=now,
    )
    if not changed:
        return False
    (result,) = current
    if existing is None:
        added = new.model_copy()
        added.last_transition_time = result["lastTransitionTime"]
        conditions.append(added)
    else:
        existing.status = result["status"]
        existing.last_transition_time = result.get("lastTransitionTime")
        existing.reason = result["reason"]
        existing.message = result["message"]
        existing.observed_generation = result.get("observedGeneration")
    return True


def _wire_of(condition: Condition) -> dict[str, Any]:
    """The fields ``meta.SetStatusCondition`` compares, as the wire spells them."""
    wire_form: dict[str, Any] = {
        "type": condition.type,
        "status": condition.status,
        "reason": condition.reason,
        "message": condition.message,
    }
    if condition.last_transition_time is not None:
        wire_form["lastTransitionTime"] = condition.last_transition_time
    if condition.observed_generation:
        wire_form["observedGeneration"] = condition.observed_generation
    return wire_form
