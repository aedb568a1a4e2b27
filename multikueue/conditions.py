"""The ``Active`` condition of MultiKueueClusters and AdmissionChecks, written as Kueue writes it.

Kueue compares the wanted condition with the current one by status, reason and message only
(``cmpConditionState``) and writes nothing when they agree, so a reconcile that changes nothing
costs no write and wakes nobody. Otherwise the condition is set with ``SetStatusCondition``
semantics (the transition time moves only when the status flips) and the status subresource is
replaced, guarded by the object's resourceVersion: a stale view is a ``Conflict`` and the caller's
reconcile is retried, never a lost update.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from shared.jsontree import json_tree_copy
from shared.kube import GroupVersionKind, KubeClient, NotFound
from shared.models.condition import Condition, find_condition, set_condition

__all__ = ["condition_of", "write_condition"]


def condition_of(obj: dict[str, Any], condition_type: str) -> Condition | None:
    """The object's condition of ``condition_type`` (``None`` when absent or malformed)."""
    for item in (obj.get("status") or {}).get("conditions") or []:
        if isinstance(item, dict) and item.get("type") == condition_type:
            try:
                return Condition.model_validate(item)
            except ValueError:
                return None
    return None


def _same_state(current: Condition | None, wanted: Condition) -> bool:
    return current is not None and (current.status, current.reason, current.message) == (
        wanted.status,
        wanted.reason,
        wanted.message,
    )


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
    if _same_state(condition_of(obj, wanted.type), wanted):
        return False
    updated = json_tree_copy(obj)
    status = updated.get("status")
    if not isinstance(status, dict):
        status = updated["status"] = {}
    conditions: list[Condition] = []
    for item in status.get("conditions") or []:
        try:
            conditions.append(Condition.model_validate(item))
        except ValueError:
            continue
    set_condition(conditions, wanted, now=now)
    existing = find_condition(conditions, wanted.type)
    if existing is not None:
        existing.observed_generation = wanted.observed_generation
    status["conditions"] = [condition.to_wire() for condition in conditions]
    try:
        await client.update_status(gvk, updated)
    except NotFound:
        return False
    return True
