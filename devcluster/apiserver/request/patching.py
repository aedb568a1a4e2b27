"""PATCH bodies: JSON merge patch, JSON patch and strategic merge patch.

* Merge patch is RFC 7386 (``shared.merge_patch``, as the controllers' patches are made).
  JSON patch is RFC 6902 via ``jsonpatch``, with the one deviation of
  the library kube-apiserver uses (evanphx/json-patch v4): ``replace`` of a key missing from an
  existing object *adds* it (kube answers 200 with the key set); a missing parent is still an error.
  An operation that cannot be applied is kube's generic 422 Invalid "the server rejected our request
  due to an error in our request" with empty details; an undecodable patch is a 400. Mutating
  webhooks' patches go through the same :func:`apply_operations`, as kube uses the same library.
* Strategic merge patch (built-in kinds only; a custom resource answers 415 as the real server
  does) merges maps, and merges lists whose Go type declares a ``patchMergeKey``: the table
  :data:`MERGE_KEYS` holds the keys for the fields our kinds use (containers/env/volumes by
  ``name``, ports by ``containerPort``, volumeMounts by ``mountPath``, ownerReferences by ``uid``,
  conditions by ``type``) and lists of scalars with strategy ``merge`` (finalizers) are unioned.
  Merged lists are ordered as kube orders them: the patch's items in the patch's order, new ones
  before the live-only items that follow them (so a finalizer added by a patch comes first).
  Directives ``$patch: replace|delete|merge``, ``$deleteFromPrimitiveList/<f>``,
  ``$setElementOrder/<f>`` (honoured as no-op ordering hint) and ``$retainKeys`` (ignored) are read.
  Any other list is replaced, as for a Go field without a patch strategy.
* Server-side apply is not here: it merges by field types and ownership
  (:mod:`devcluster.apiserver.fieldmanager.managedfields`).
"""

from __future__ import annotations

from typing import Any

import jsonpatch
import orjson

from devcluster.apiserver.errors import bad_request, patch_not_applied

__all__ = [
    "MERGE_KEYS",
    "JsonPatchNotApplied",
    "apply_json_patch",
    "apply_operations",
    "apply_strategic_merge_patch",
]

#: field name -> merge key ("" = list of scalars merged as a set)
MERGE_KEYS: dict[str, str] = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "volumes": "name",
    "env": "name",
    "imagePullSecrets": "name",
    "resourceClaims": "name",
    "webhooks": "name",
    "ports": "containerPort",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "hostAliases": "ip",
    "topologySpreadConstraints": "topologyKey",
    "ownerReferences": "uid",
    "conditions": "type",
    "finalizers": "",
}


class JsonPatchNotApplied(ValueError):
    """An operation of a well-formed JSON patch does not apply to the document."""


def _as_applied_by_kube(doc: Any, operation: dict[str, Any]) -> dict[str, Any]:
    """``operation``, with a ``replace`` of a missing object key turned into the ``add`` v4 does."""
    path = operation.get("path")
    if operation.get("op") != "replace" or not isinstance(path, str) or not path:
        return operation
    pointer = jsonpatch.JsonPointer(path)
    try:
        parent = jsonpatch.JsonPointer.from_parts(pointer.parts[:-1]).resolve(doc)
    except jsonpatch.JsonPointerException:
        parent = None
    if not isinstance(parent, dict | list):
        raise JsonPatchNotApplied(f"replace operation does not apply: doc is missing path: {path}")
    if isinstance(parent, dict) and pointer.parts[-1] not in parent:
        return {**operation, "op": "add"}
    return operation


def apply_operations(doc: Any, patch: jsonpatch.JsonPatch) -> Any:
    """Apply a compiled patch as kube-apiserver does (module docstring); ``doc`` is not modified."""
    try:
        for operation in patch.patch:
            doc = jsonpatch.JsonPatch([_as_applied_by_kube(doc, operation)]).apply(doc)
    except (
        jsonpatch.JsonPatchException,
        jsonpatch.JsonPointerException,
        KeyError,
        IndexError,
        TypeError,
    ) as exc:
        raise JsonPatchNotApplied(str(exc) or exc.__class__.__name__) from exc
    return doc


def apply_json_patch(target: dict[str, Any], patch: Any) -> Any:
    if not isinstance(patch, list):
        raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
    try:
        compiled = jsonpatch.JsonPatch(patch)
    except (jsonpatch.InvalidJsonPatch, jsonpatch.JsonPointerException, TypeError, AttributeError) as exc:
        raise bad_request(str(exc)) from exc
    try:
        return apply_operations(target, compiled)
    except JsonPatchNotApplied as exc:
        raise patch_not_applied() from exc


def _smp_map(original: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any] | None:
    directive = patch.get("$patch")
    if directive == "delete":
        return None
    if directive == "replace":
        return {k: v for k, v in patch.items() if k != "$patch"}
    result = dict(original)
    for key, value in patch.items():
        if key in {"$patch", "$retainKeys"}:
            continue
        if key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            if isinstance(result.get(field), list) and isinstance(value, list):
                result[field] = [item for item in result[field] if item not in value]
            continue
        if value is None:
            result.pop(key, None)
            continue
        current = result.get(key)
        if isinstance(value, dict):
            merged = _smp_map(current if isinstance(current, dict) else {}, value)
            if merged is None:
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list) and key in MERGE_KEYS:
            result[key] = _smp_list(current if isinstance(current, list) else [], value, MERGE_KEYS[key])
        else:
            result[key] = value
    return result


def _smp_identity(item: Any, merge_key: str) -> Any:
    """What identifies a list item: its merge key's value, or the scalar itself."""
    if merge_key:
        return item.get(merge_key) if isinstance(item, dict) else None
    return orjson.dumps(item)


def _smp_order(merged: list[Any], patch: list[Any], original: list[Any], merge_key: str) -> list[Any]:
    """kube's ``normalizeElementOrder``: the items the patch names keep the patch's order, the
    others the live order, and the two are interleaved by live position (``mergeSortedSlice``):
    an item new to the live list goes before the live-only items that follow it."""
    live = {_smp_identity(item, merge_key): index for index, item in enumerate(original)}
    in_patch = {_smp_identity(item, merge_key): index for index, item in enumerate(patch)}
    patched = sorted(
        (item for item in merged if _smp_identity(item, merge_key) in in_patch),
        key=lambda item: in_patch[_smp_identity(item, merge_key)],
    )
    live_only = sorted(
        (item for item in merged if _smp_identity(item, merge_key) not in in_patch),
        key=lambda item: live.get(_smp_identity(item, merge_key), len(live)),
    )
    ordered: list[Any] = []
    left = right = 0
    while left < len(live_only) or right < len(patched):
        if right >= len(patched):
            ordered.append(live_only[left])
            left += 1
            continue
        if left >= len(live_only):
            ordered.append(patched[right])
            right += 1
            continue
        left_at = live.get(_smp_identity(live_only[left], merge_key))
        right_at = live.get(_smp_identity(patched[right], merge_key))
        if left_at is not None and right_at is not None and left_at < right_at:
            ordered.append(live_only[left])
            left += 1
        else:
            ordered.append(patched[right])
            right += 1
    return ordered


def _smp_list(original: list[Any], patch: list[Any], merge_key: str) -> list[Any]:
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [item for item in patch if not (isinstance(item, dict) and item.get("$patch") == "replace")]
    if not merge_key:
        union: list[Any] = []
        for item in [*original, *patch]:
            if item not in union:
                union.append(item)
        return _smp_order(union, patch, original, merge_key)
    result = list(original)
    for item in patch:
        if not isinstance(item, dict) or merge_key not in item:
            raise bad_request(f"map: {item} does not contain declared merge key: {merge_key}")
        index = next(
            (
                i
                for i, existing in enumerate(result)
                if isinstance(existing, dict) and existing.get(merge_key) == item[merge_key]
            ),
            None,
        )
        if item.get("$patch") == "delete":
            if index is not None:
                result.pop(index)
            continue
        if index is None:
            result.append({k: v for k, v in item.items() if k != "$patch"})
        else:
            merged = _smp_map(result[index], item)
            if merged is None:
                result.pop(index)
            else:
                result[index] = merged
    kept = [item for item in patch if not (isinstance(item, dict) and item.get("$patch") == "delete")]
    return _smp_order(result, kept, original, merge_key)


def apply_strategic_merge_patch(target: dict[str, Any], patch: Any) -> dict[str, Any]:
    if not isinstance(patch, dict):
        raise bad_request("strategic merge patch must be a JSON object")
    merged = _smp_map(target, patch)
    return merged if merged is not None else {}
