"""The adapters' strict read of ``status.conditions`` on raw objects (``metav1.Condition`` and
``batch/v1`` shapes alike).

Finding a condition and reading its status are ``shared.kube.conditions``' (``find_condition``,
``is_true``); this module adds only what an adapter needs on top: a malformed list (not a list,
entries that are not objects) raises ``AdapterError`` naming the path instead of being skipped, since
a condition we cannot read could be the one that says the job finished.
"""

from __future__ import annotations

from typing import Any

from shared.frameworks.base import AdapterError
from shared.frameworks.paths import describe_type, parse_path
from shared.kube import conditions as kube_conditions

__all__ = ["find_condition", "iter_conditions"]


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
    """``shared.kube.conditions.find_condition`` on the list at ``path``, checked first."""
    return kube_conditions.find_condition(
        [condition for _, condition in iter_conditions(obj, path=path)], condition_type
    )
