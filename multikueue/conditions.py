"""The ``Active`` condition of MultiKueueClusters and AdmissionChecks, written as Kueue writes it.

Kueue compares the wanted condition with the current one by status, reason and message only
(``cmpConditionState``) and writes nothing when they agree, so a reconcile that changes nothing
costs no write and wakes nobody. Otherwise the condition is set on a copy of the raw object with
``shared.kube.conditions.set_condition`` (the transition time moves only when the status flips) and
the status subresource is replaced, guarded by the object's resourceVersion: a stale view is a
``Conflict`` and the caller's reconcile is retried, never a lost update. Every other entry of
``status.conditions`` is written back exactly as read, whoever wrote it and whatever its shape.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from shared.jsontree import json_tree_copy
from shared.kube import GroupVersionKind, KubeClient, NotFound
from shared.kube.conditions import object_condition, set_condition, writable_conditions
from shared.models.condition import Condition

__all__ = ["condition_of", "write_condition"]


def condition_of(obj: dict[str, Any], condition_type: str) -> Condition | None:
    """The object's condition of ``condition_type`` as a typed view (``None`` when absent or malformed)."""
    found = object_condition(obj, condition_type)
    if found is None:
        return None
    try:
        return Condition.model_validate(found)
    except ValueError:
        return None


def _same_state(current: dict[str, Any] | None, wanted: Condition) -> bool:
    return current is not None and (
        current.get("status"),
        current.get("reason", ""),
        current.get("message", ""),
    ) == (wanted.status, wanted.reason, wanted.message)


async def write_condition(
    client: KubeClient,
    gvk: GroupVersionKind,
    obj: dict[str, Any],
    wanted: Condition,
    *,
    now: datetime,
) -> bool:
    """Set ``wanted`` on ``obj`` (a cached object, not modified) unless it already says the same.

    Returns whether a write was made; a vanished object is not an error (nothing left to report on).
    """
    if _same_state(object_condition(obj, wanted.type), wanted):
        return False
    updated = json_tree_copy(obj)
    set_condition(
        writable_conditions(updated),
        condition_type=wanted.type,
        status=wanted.status,
        reason=wanted.reason,
        message=wanted.message,
        observed_generation=wanted.observed_generation,
        last_transition_time=wanted.last_transition_time,
        now=now,
    )
    try:
        await client.update_status(gvk, updated)
    except NotFound:
        return False
    return True
