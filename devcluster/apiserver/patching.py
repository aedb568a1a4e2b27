"""PATCH bodies: JSON merge patch, JSON patch, strategic merge patch and (approximate) apply.

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
  Directives ``$patch: replace|delete|merge``, ``$deleteFromPrimitiveList/<f>``,
  ``$setElementOrder/<f>`` (honoured as no-op ordering hint) and ``$retainKeys`` (ignored) are read.
  Any other list is replaced, as for a Go field without a patch strategy.
* Server-side apply is approximated: the applied configuration is merged into the live object
  (strategic rules for built-ins, merge rules for custom resources) and the field manager is
  recorded in ``managedFields``; there is no field ownership, so no apply conflicts are reported.
"""

from __future__ import annotations

from typing import Any

import jsonpatch

from devcluster.apiserver.errors import bad_request, patch_not_applied

__all__ = [
    "MERGE_KEYS",
    "JsonPatchNotApplied",
    "apply_json_patch",
    "apply_operations",
    "apply_strategic_merge_patch",
    "fields_v1",
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


def _smp_list(original: list[Any], patch: list[Any], merge_key: str) -> list[Any]:
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [item for item in patch if not (isinstance(item, dict) and item.get("$patch") == "replace")]
    if not merge_key:
        union = list(original)
        for item in patch:
            if item not in union:
                union.append(item)
        return union
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
    return result


def apply_strategic_merge_patch(target: dict[str, Any], patch: Any) -> dict[str, Any]:
    if not isinstance(patch, dict):
        raise bad_request("strategic merge patch must be a JSON object")
    merged = _smp_map(target, patch)
    return merged if merged is not None else {}


def fields_v1(obj: Any) -> dict[str, Any]:
    """A FieldsV1-shaped set of the fields in ``obj`` (lists are owned atomically)."""
    if not isinstance(obj, dict):
        return {}
    out: dict[str, Any] = {}
    for key, value in obj.items():
        if key in {"apiVersion", "kind"}:
            continue
        if isinstance(value, dict) and value:
            out[f"f:{key}"] = fields_v1(value)
        else:
            out[f"f:{key}"] = {}
    return out
