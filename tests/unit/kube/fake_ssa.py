"""Field ownership for ``FakeApi``: just enough of server-side apply to test who may remove what.

kube-apiserver's rule, approximated: a field belongs to the managers that set it -- an apply owns
every field of its body (a forced one takes a field whose value it changes away from the others),
an update owns the fields whose value it changed (and takes them from the others). An apply
*removes* a field its manager applied before and leaves out now, unless another manager owns it.

Fields are leaf paths: map keys, and list items keyed by their ``type`` or ``name`` (conditions,
admission checks, pod sets); any other list is one leaf. Only what a write may change is tracked:
the ``status`` of a status-subresource write, everything but ``status`` and the server's
bookkeeping otherwise. Objects written by tests directly (``put_object``) have no owner.
"""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["FieldOwnership", "apply_merge"]

Path = tuple[Any, ...]
_KEYS = ("type", "name")
_BOOKKEEPING = ("apiVersion", "kind", "metadata")


def _item_key(item: Any) -> tuple[str, Any] | None:
    if isinstance(item, dict):
        for name in _KEYS:
            if name in item:
                return (name, item[name])
    return None


def _keyed(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(_item_key(item) is not None for item in value)


def leaf_paths(value: Any, prefix: Path = ()) -> set[Path]:
    if isinstance(value, dict) and value:
        found: set[Path] = set()
        for key, item in value.items():
            found |= leaf_paths(item, (*prefix, key))
        return found
    if _keyed(value):
        found = set()
        for item in value:
            found |= leaf_paths(item, (*prefix, _item_key(item)))
        return found
    return {prefix}


def _get(value: Any, path: Path) -> Any:
    for step in path:
        if isinstance(step, tuple) and isinstance(value, list):
            value = next((item for item in value if _item_key(item) == step), None)
        elif isinstance(value, dict):
            value = value.get(step)
        else:
            return None
    return value


def _remove(value: Any, path: Path) -> None:
    """Remove the leaf at ``path``, and every map or keyed item left empty by it."""
    if not path:
        return
    step, rest = path[0], path[1:]
    if isinstance(step, tuple) and isinstance(value, list):
        for index, item in enumerate(value):
            if _item_key(item) == step:
                if rest:
                    _remove(item, rest)
                if not rest or not item:
                    del value[index]
                return
        return
    if not isinstance(value, dict) or step not in value:
        return
    if rest:
        _remove(value[step], rest)
        if value[step] in ({}, []):
            del value[step]
    else:
        del value[step]


def _key_field_last(path: Path) -> bool:
    """An item's key field is removed after its other fields (the item is found by it)."""
    return len(path) >= 2 and isinstance(path[-2], tuple) and path[-1] == path[-2][0]


def apply_merge(target: Any, patch: Any) -> Any:
    """The applied body over the live object: maps merged, keyed lists merged by key."""
    if isinstance(patch, dict) and isinstance(target, dict):
        merged = dict(target)
        for key, value in patch.items():
            merged[key] = apply_merge(target.get(key), value)
        return merged
    if _keyed(patch) and isinstance(target, list):
        merged_items = list(target)
        for item in patch:
            index = next((i for i, old in enumerate(merged_items) if _item_key(old) == _item_key(item)), None)
            if index is None:
                merged_items.append(copy.deepcopy(item))
            else:
                merged_items[index] = apply_merge(merged_items[index], item)
        return merged_items
    return copy.deepcopy(patch)


def _scope(obj: dict[str, Any], subresource: str | None) -> dict[str, Any]:
    if subresource == "status":
        return {"status": obj.get("status")} if obj.get("status") is not None else {}
    return {k: v for k, v in obj.items() if k not in (*_BOOKKEEPING, "status")}


class FieldOwnership:
    """Per object (the caller's key), manager -> the leaf paths it owns."""

    def __init__(self) -> None:
        self._owners: dict[Any, dict[str, set[Path]]] = {}

    def owners(self, key: Any) -> dict[str, set[Path]]:
        return self._owners.setdefault(key, {})

    def forget(self, key: Any) -> None:
        self._owners.pop(key, None)

    def apply(
        self, key: Any, manager: str, old: dict[str, Any], patch: dict[str, Any], *, subresource: str | None
    ) -> dict[str, Any]:
        """The object after ``manager`` applied ``patch`` (forced) to ``old``."""
        owners = self.owners(key)
        scoped_patch = _scope(patch, subresource)
        applied = leaf_paths(scoped_patch) - {()}
        new: dict[str, Any] = apply_merge(old, scoped_patch)
        for path in sorted(owners.get(manager, set()) - applied, key=_key_field_last):
            if not any(path in paths for other, paths in owners.items() if other != manager):
                _remove(new, path)
        for top in old:
            if top not in new and isinstance(old[top], dict):
                new[top] = {}  # emptied, not gone
        for other, paths in owners.items():
            if other != manager:
                paths -= {path for path in applied if _get(old, path) != _get(new, path)}
        owners[manager] = applied
        return new

    def update(
        self, key: Any, manager: str, old: dict[str, Any], new: dict[str, Any], *, subresource: str | None
    ) -> None:
        """``manager`` wrote ``new`` over ``old`` with an update (or a merge or JSON patch)."""
        owners = self.owners(key)
        before, after = _scope(old, subresource), _scope(new, subresource)
        old_paths, new_paths = leaf_paths(before) - {()}, leaf_paths(after) - {()}
        changed = {path for path in new_paths if _get(before, path) != _get(after, path)}
        gone = old_paths - new_paths
        for paths in owners.values():
            paths -= changed | gone
        owners.setdefault(manager, set()).update(changed)
