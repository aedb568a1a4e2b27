"""``metav1.Condition`` with Kubernetes' ``SetStatusCondition`` semantics.

Invariant (``k8s.io/apimachinery/pkg/api/meta.SetStatusCondition``): setting a condition whose
``status`` is unchanged keeps its ``lastTransitionTime``; reason, message and
``observedGeneration`` are always updated. A new or flipped condition gets ``now`` as its
transition time. Time is passed in (``now``) so tests use a fake clock.

``remove_condition`` mirrors ``meta.RemoveStatusCondition``. Conditions are a list-map keyed by
``type`` in every Kueue CRD, so these helpers never create a second entry of the same type; order
of the other entries is kept (Kueue appends new conditions at the end, as the golden objects show).
"""

from __future__ import annotations

from datetime import UTC, datetime

from shared.models.base import KubeModel

__all__ = [
    "Condition",
    "find_condition",
    "format_time",
    "is_condition_false",
    "is_condition_true",
    "remove_condition",
    "set_condition",
]


def format_time(moment: datetime) -> str:
    """RFC 3339 with second precision and a ``Z`` suffix, as ``metav1.Time`` serialises."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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


def set_condition(
    conditions: list[Condition],
    new: Condition,
    *,
    now: datetime,
) -> bool:
    """Insert or update ``new`` in ``conditions`` in place; return whether anything changed."""
    existing = find_condition(conditions, new.type)
    if existing is None:
        added = new.model_copy()
        if added.last_transition_time is None:
            added.last_transition_time = format_time(now)
        conditions.append(added)
        return True
    changed = False
    if existing.status != new.status:
        existing.status = new.status
        existing.last_transition_time = new.last_transition_time or format_time(now)
        changed = True
    for attribute in ("reason", "message", "observed_generation"):
        value = getattr(new, attribute)
        if getattr(existing, attribute) != value:
            setattr(existing, attribute, value)
            changed = True
    return changed
