"""RFC 7386 JSON merge patches computed from a before/after pair of raw objects.

Controllers mutate a deep copy of an object in memory (adapters write through paths) and send only
the difference. A merge patch (rather than a full update) keeps us from overwriting fields other
controllers changed meanwhile; adding ``metadata.resourceVersion`` to the patch turns it into an
optimistic-lock write (the API server answers 409 Conflict if the object moved on), which is what
client-go's ``MergeFromWithOptimisticLock`` does.

Invariants: ``apply_merge_patch(before, create_merge_patch(before, after)) == after`` for JSON
objects whose lists contain no ``None`` (merge patches replace lists wholesale and cannot express a
``null`` value inside a map, RFC 7386 §2); keys whose value is unchanged are never sent.
"""

from __future__ import annotations

from typing import Any

from shared.jsontree import copy_json

__all__ = ["apply_merge_patch", "create_merge_patch", "with_optimistic_lock"]


def create_merge_patch(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The smallest merge patch turning ``before`` into ``after`` (removed keys become ``None``)."""
    patch: dict[str, Any] = {}
    for key, old_value in before.items():
        if key not in after:
            patch[key] = None
            continue
        new_value = after[key]
        if isinstance(old_value, dict) and isinstance(new_value, dict):
            nested = create_merge_patch(old_value, new_value)
            if nested:
                patch[key] = nested
        elif old_value != new_value or type(old_value) is not type(new_value):
            patch[key] = copy_json(new_value)
    for key, new_value in after.items():
        if key not in before:
            patch[key] = copy_json(new_value)
    return patch


def apply_merge_patch(target: Any, patch: Any) -> Any:
    """Apply ``patch`` to ``target`` per RFC 7386 and return the result (inputs are not mutated)."""
    if not isinstance(patch, dict):
        return copy_json(patch)
    result: dict[str, Any] = copy_json(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = apply_merge_patch(result.get(key), value)
    return result


def with_optimistic_lock(patch: dict[str, Any], *, resource_version: str) -> dict[str, Any]:
    """``patch`` plus ``metadata.resourceVersion``: the server rejects it if the object changed."""
    locked = dict(patch)
    metadata = dict(locked.get("metadata") or {})
    metadata["resourceVersion"] = resource_version
    locked["metadata"] = metadata
    return locked
