"""Reading ``status.conditions`` of raw objects (``metav1.Condition`` and ``batch/v1`` shapes alike).

Both shapes have ``type``/``status``/``message``; ``status`` is the *string* ``"True"``/``"False"``/
``"Unknown"``. A malformed list (not a list, entries that are not objects) raises ``AdapterError``
naming the path instead of being skipped: a condition we cannot read could be the one that says the
job finished.
"""

from __future__ import annotations

from typing import Any

from shared.frameworks.base import AdapterError
from shared.frameworks.paths import describe_type, parse_path

__all__ = ["condition_is_true", "find_condition", "iter_conditions"]


def iter_conditions(
    obj: dict[str, Any], *, path: str = "status.conditions"
) -> list[tuple[int, dict[str, Any]]]:
    """``(index, condition)`` pairs, in order; an absent list is empty."""
    conditions = parse_path(path).get_typed(obj, list, default=[])
    out: list[tuple[int, dict[str, Any]]] = []
    for index, condition in enumerate(conditions):
        if not isinstance(condition, dict):
            raise AdapterError(f"{path}[{index}]", f"expected an object, got {describe_type(condition)}")
        out.append((index, condition))
    return out


def find_condition(
    obj: dict[str, Any], condition_type: str, *, path: str = "status.conditions"
) -> dict[str, Any] | None:
    """The first condition of ``condition_type`` (like ``apimeta.FindStatusCondition``), or ``None``."""
    for _, condition in iter_conditions(obj, path=path):
        if condition.get("type") == condition_type:
            return condition
    return None


def condition_is_true(obj: dict[str, Any], condition_type: str, *, path: str = "status.conditions") -> bool:
    """``apimeta.IsStatusConditionTrue``."""
    condition = find_condition(obj, condition_type, path=path)
    return condition is not None and condition.get("status") == "True"
