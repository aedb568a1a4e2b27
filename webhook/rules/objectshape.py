"""The types of the ``metadata`` fields the admission rules read, checked before any rule runs.

Kueue's webhook decodes the request object into its Go type first; a field of the wrong JSON type
fails that decoding and controller-runtime answers ``Errored(400)``. The rules here read the raw
dict instead, so this check stands in for the decoding of ``ObjectMeta``: the first field with the
wrong type is a denial with code 400 (``BadRequest``) naming it, and the rules may then rely on

* ``metadata`` being an object;
* ``name``, ``namespace``, ``uid``, ``deletionTimestamp`` being strings (or absent/null);
* ``labels`` and ``annotations`` being maps of strings;
* ``ownerReferences`` being a list of objects whose ``apiVersion``, ``kind``, ``name`` and ``uid``
  are strings and ``controller``/``blockOwnerDeletion`` booleans (each absent/null allowed, as Go's
  zero values).

Like the decoder, absent and null are fine (zero values); only a present value of another type is
refused. Fields under ``spec`` are the adapters' business: they raise ``AdapterError`` naming the
path, which the handler turns into the same 400 denial.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from shared.frameworks.base import INVALID, REQUIRED, FieldError

__all__ = ["check_object_shape"]

_STRING_FIELDS: Final = ("name", "namespace", "uid", "deletionTimestamp")
_REFERENCE_STRINGS: Final = ("apiVersion", "kind", "name", "uid")
_REFERENCE_BOOLEANS: Final = ("controller", "blockOwnerDeletion")


def _check_string_map(metadata: Mapping[str, Any], key: str, prefix: str) -> FieldError | None:
    value = metadata.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        return FieldError(f"{prefix}metadata.{key}", INVALID, "must be a map of strings", None)
    for item_key, item in value.items():
        if not isinstance(item, str):
            return FieldError(f"{prefix}metadata.{key}[{item_key}]", INVALID, "must be a string", None)
    return None


def _check_owner_references(metadata: Mapping[str, Any], prefix: str) -> FieldError | None:
    references = metadata.get("ownerReferences")
    path = f"{prefix}metadata.ownerReferences"
    if references is None:
        return None
    if not isinstance(references, list):
        return FieldError(path, INVALID, "must be a list of objects", None)
    for index, reference in enumerate(references):
        if not isinstance(reference, dict):
            return FieldError(path, INVALID, "must be a list of objects", None)
        for key in _REFERENCE_STRINGS:
            value = reference.get(key)
            if value is not None and not isinstance(value, str):
                return FieldError(f"{path}[{index}].{key}", INVALID, "must be a string", None)
        for key in _REFERENCE_BOOLEANS:
            value = reference.get(key)
            if value is not None and not isinstance(value, bool):
                return FieldError(f"{path}[{index}].{key}", INVALID, "must be a boolean", None)
    return None


def check_object_shape(obj: Mapping[str, Any], *, prefix: str = "") -> FieldError | None:
    """The first metadata field the rules read that has the wrong type (``None`` when all are fine)."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict):
        return FieldError(
            f"{prefix}metadata", REQUIRED if metadata is None else INVALID, "must be an object", None
        )
    for key in _STRING_FIELDS:
        value = metadata.get(key)
        if value is not None and not isinstance(value, str):
            return FieldError(f"{prefix}metadata.{key}", INVALID, "must be a string", None)
    for key in ("labels", "annotations"):
        error = _check_string_map(metadata, key, prefix)
        if error is not None:
            return error
    return _check_owner_references(metadata, prefix)
