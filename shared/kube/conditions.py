"""``metav1.Condition`` lists on wire dicts, with apimachinery's ``meta`` semantics.

Controllers here keep objects as the raw dicts the API server returned (nothing a newer Kueue or
Kubernetes adds is ever dropped), so conditions are read and edited as dicts, in place. This is the
one implementation of ``meta.SetStatusCondition`` and of reading a condition's status: the Workload
model's typed conditions (``shared.models.condition.Condition``, read with ``find_condition_view``
and ``is_true``/``is_false``; written by ``shared.workload_state``), the AppWrapper and MultiKueue
controllers, the operator tools and the devcluster's stand-in all go through it, and
``tests/unit/kube/test_one_condition_rule.py`` keeps inline ``status == "True"`` checks and other
``set_condition`` definitions out of the source.

Invariants (``k8s.io/apimachinery/pkg/api/meta``):

* ``set_condition`` on a type not present appends it, with ``last_transition_time`` or else ``now``;
* on a present type, a changed ``status`` moves ``lastTransitionTime`` (to ``last_transition_time``
  or else ``now``); an unchanged one keeps it, so every deadline measured from a transition time
  survives re-asserting the condition;
* ``reason``, ``message`` and ``observedGeneration`` are always overwritten; ``observed_generation``
  ``None`` is Go's zero value, which ``omitempty`` leaves out of the object;
* it answers whether anything changed, so a caller writes only then;
* conditions are a list-map keyed by ``type`` in every CRD: nothing here ever adds a second entry
  of a type; other entries keep their order (new ones go last, as Kueue's do).

Reading is lenient (a hand-edited object with a non-list ``conditions`` or non-dict entries reads as
having no such condition); writing creates ``status.conditions`` when missing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, Final, Protocol, TypeGuard, TypeVar

from shared.kube.times import format_time

__all__ = [
    "FALSE",
    "TRUE",
    "UNKNOWN",
    "ConditionView",
    "Conditions",
    "conditions_of",
    "find_condition",
    "find_condition_view",
    "is_condition_true",
    "is_false",
    "is_object_condition_true",
    "is_true",
    "is_undecided",
    "object_condition",
    "read_status",
    "remove_condition",
    "set_condition",
    "set_object_condition",
    "writable_conditions",
    "writable_status",
]

Conditions = list[dict[str, Any]]

#: ``metav1.ConditionStatus`` values
TRUE: Final = "True"
FALSE: Final = "False"
UNKNOWN: Final = "Unknown"


class ConditionView(Protocol):
    """A typed condition (``shared.models.condition.Condition``): what the readers here need of it."""

    @property
    def type(self) -> str: ...

    @property
    def status(self) -> str: ...


View = TypeVar("View", bound=ConditionView)
#: a wire entry or a typed view: ``is_true`` and ``is_false`` narrow ``None`` away
AnyCondition = TypeVar("AnyCondition", bound=Mapping[str, Any] | ConditionView)


def _status(condition: Mapping[str, Any] | ConditionView | None) -> object:
    if condition is None:
        return None
    if type(condition) is dict or isinstance(condition, Mapping):
        return condition.get("status")
    return condition.status


def is_true(condition: AnyCondition | None) -> TypeGuard[AnyCondition]:
    """The condition (a wire entry or a typed view) is present with status ``"True"``."""
    return _status(condition) == TRUE


def is_false(condition: AnyCondition | None) -> TypeGuard[AnyCondition]:
    """Present with status ``"False"`` (an absent condition is not false)."""
    return _status(condition) == FALSE


def is_undecided(condition: Mapping[str, Any] | ConditionView | None) -> bool:
    """Absent, or with a status that is neither ``"True"`` nor ``"False"`` (``"Unknown"``)."""
    return _status(condition) not in (TRUE, FALSE)


def find_condition_view(conditions: Iterable[View] | None, condition_type: str) -> View | None:
    """``meta.FindStatusCondition`` over typed conditions: the one of ``condition_type``, or ``None``."""
    for condition in conditions or ():
        if condition.type == condition_type:
            return condition
    return None


def read_status(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """``obj.status`` for reading (empty when absent or not an object); never creates it."""
    status = obj.get("status") if obj is not None else None
    # ``type(...) is dict`` first: a wire object's status always is one, and ``isinstance`` against
    # the ``Mapping`` ABC costs a Python-level ``__instancecheck__`` call (this runs ~7 times a pass)
    return status if type(status) is dict or isinstance(status, Mapping) else {}


def conditions_of(obj: Mapping[str, Any] | None) -> Sequence[Any]:
    """``obj.status.conditions`` for reading (empty when absent or not a list); never creates it."""
    conditions = read_status(obj).get("conditions")
    return conditions if isinstance(conditions, list) else ()


def writable_status(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj.status`` for writing, created when missing (or not an object)."""
    status = obj.get("status")
    if not isinstance(status, dict):
        status = obj["status"] = {}
    return status


def writable_conditions(obj: dict[str, Any]) -> Conditions:
    """``obj.status.conditions`` for writing, created (with ``status``) when missing."""
    status = writable_status(obj)
    conditions = status.get("conditions")
    if not isinstance(conditions, list):
        conditions = status["conditions"] = []
    return conditions


def find_condition(conditions: Sequence[Any] | None, condition_type: str) -> dict[str, Any] | None:
    """``meta.FindStatusCondition``: the entry of ``condition_type`` (the object itself), or ``None``
    (also when ``conditions`` is not a list: a hand-edited object)."""
    if not isinstance(conditions, list | tuple):
        return None
    for condition in conditions:
        if isinstance(condition, dict) and condition.get("type") == condition_type:
            return condition
    return None


def is_condition_true(conditions: Sequence[Any] | None, condition_type: str) -> bool:
    """``meta.IsStatusConditionTrue``: present with status ``"True"``."""
    return is_true(find_condition(conditions, condition_type))


def set_condition(
    conditions: Conditions,
    *,
    condition_type: str,
    status: str,
    reason: str,
    message: str = "",
    observed_generation: int | None = None,
    last_transition_time: str | None = None,
    now: datetime,
) -> bool:
    """``meta.SetStatusCondition`` in place; whether anything changed."""
    existing = find_condition(conditions, condition_type)
    if existing is None:
        added: dict[str, Any] = {"type": condition_type, "status": status}  # metav1.Condition's order
        if observed_generation:
            added["observedGeneration"] = observed_generation
        added["lastTransitionTime"] = last_transition_time or format_time(now)
        added["reason"] = reason
        added["message"] = message
        conditions.append(added)
        return True
    changed = False
    if existing.get("status") != status:
        existing["status"] = status
        existing["lastTransitionTime"] = last_transition_time or format_time(now)
        changed = True
    if existing.get("reason") != reason:
        existing["reason"] = reason
        changed = True
    if existing.get("message", "") != message:
        existing["message"] = message
        changed = True
    if (existing.get("observedGeneration") or 0) != (observed_generation or 0):
        if observed_generation:
            existing["observedGeneration"] = observed_generation
        else:
            del existing["observedGeneration"]
        changed = True
    return changed


def remove_condition(conditions: Conditions, condition_type: str) -> bool:
    """``meta.RemoveStatusCondition`` in place; whether one was there."""
    for index, condition in enumerate(conditions):
        if isinstance(condition, dict) and condition.get("type") == condition_type:
            del conditions[index]
            return True
    return False


# --- on an object: its status.conditions, observedGeneration from its metadata.generation -------


def object_condition(obj: Mapping[str, Any] | None, condition_type: str) -> dict[str, Any] | None:
    """The condition of ``condition_type`` in ``obj.status.conditions`` (the entry itself)."""
    return find_condition(conditions_of(obj), condition_type)


def is_object_condition_true(obj: Mapping[str, Any] | None, condition_type: str) -> bool:
    """``is_condition_true(conditions_of(obj), condition_type)``; a wire object's status and
    conditions (a dict and a list) are walked inline: a reconcile pass asks this ~6 times, and the
    four nested calls were most of its cost."""
    status = obj.get("status") if obj is not None else None
    conditions = status.get("conditions") if type(status) is dict else None
    if type(conditions) is not list:
        return is_condition_true(conditions_of(obj), condition_type)
    for condition in conditions:
        if isinstance(condition, dict) and condition.get("type") == condition_type:
            return condition.get("status") == TRUE
    return False


def set_object_condition(
    obj: dict[str, Any], *, condition_type: str, status: str, reason: str, message: str = "", now: datetime
) -> bool:
    """``set_condition`` on ``obj.status.conditions`` observing ``obj.metadata.generation``, as Kueue
    sets a Workload's conditions (``ObservedGeneration: wl.Generation``)."""
    metadata = obj.get("metadata")
    generation = (
        metadata.get("generation") if type(metadata) is dict or isinstance(metadata, Mapping) else None
    )
    return set_condition(
        writable_conditions(obj),
        condition_type=condition_type,
        status=status,
        reason=reason,
        message=message,
        observed_generation=generation if isinstance(generation, int) else None,
        now=now,
    )
