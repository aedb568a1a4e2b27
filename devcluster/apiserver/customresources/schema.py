"""Structural schemas: pruning, defaulting and validation of custom resources like kube-apiserver.

The devcluster stores custom resources the way the real apiextensions-apiserver does, so that code
tested against it sees the same objects a real cluster would return: unknown fields silently
dropped, ``default:`` values filled in, bad values rejected with the same field causes.

A :class:`StructuralSchema` compiles a CRD version's ``openAPIV3Schema`` once into a tree of
:class:`_Node` objects (slots, pre-compiled patterns, "has a default below" flags); every request then
walks only the object, never the (very large: the Workload CRD is 1.4 MB of YAML) schema text.

Invariants (each one is a real-server behaviour, not a choice):

* ``apiVersion``, ``kind`` and ``metadata`` at the root are never pruned, defaulted or validated
  here: ObjectMeta belongs to the generic registry (the caller), not to the schema.
* An object node prunes every field it does not declare unless it has
  ``x-kubernetes-preserve-unknown-fields: true``; declared fields are still recursed into.
  ``additionalProperties`` schemas apply to every map value. ``x-kubernetes-int-or-string`` values
  are scalars and never pruned.
* An ``x-kubernetes-embedded-resource`` object keeps ``apiVersion``/``kind``/``metadata``; its
  ``metadata`` is cut down to ObjectMeta's fields (the real server round-trips it through ObjectMeta).
* ``null`` for a non-nullable field is dropped before defaulting (and then defaulted if it has a
  default), as the real server has done since 1.20; ``null`` inside arrays is kept and fails
  validation.
* Defaults apply only to absent fields whose parent object exists, recursively (inside array items
  and map values too, and inside a default value just inserted). The real server also defaults on
  read; the devcluster defaults stored objects again when their CRD changes (``Cluster._default_stored``).
* Causes use apimachinery's field error types and message format exactly
  (``<field>: <Type string>[: <bad value>][: <detail>]``), with kube-openapi's "in body" details:
  ``spec.podSets[0].count: Invalid value: -1: spec.podSets[0].count in body should be greater than or
  equal to 0``. Type mismatches are ``FieldValueTypeInvalid`` (printed as "Invalid value").
* Ratcheting (rules in :mod:`.ratcheting`): on UPDATE/PATCH a subtree equal to its correlated old
  value is not validated at all; changed values get the causes CREATE gives. A ``/status`` write
  validates ``status`` alone (the real status strategy's status-schema validator).

Not implemented (documented gaps): ``x-kubernetes-validations`` CEL rules are skipped (the Workload
CRD's transition rules, e.g. "queueName is immutable while QuotaReserved", are not enforced);
``oneOf``/``not``; formats other than ``date-time`` (``int32``/``int64`` are range hints the real
server ignores too).
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from devcluster.apiserver.customresources import ratcheting
from devcluster.apiserver.customresources.ratcheting import NO_OLD, unchanged
from shared.frameworks.paths import describe_type

__all__ = ["OBJECT_META_FIELDS", "SchemaCause", "StructuralSchema"]

OBJECT_META_FIELDS: Final = frozenset(
    {
        "name",
        "generateName",
        "namespace",
        "selfLink",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "ownerReferences",
        "finalizers",
        "managedFields",
    }
)
_ROOT_PASSTHROUGH: Final = frozenset({"apiVersion", "kind", "metadata"})
_MISSING: Final = object()
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:?\d{2})$")

# apimachinery field.ErrorType values and how ErrorBody() prints them.
_REQUIRED = "FieldValueRequired"
_INVALID = "FieldValueInvalid"
_TYPE_INVALID = "FieldValueTypeInvalid"
_NOT_SUPPORTED = "FieldValueNotSupported"
_TOO_LONG = "FieldValueTooLong"
_TOO_MANY = "FieldValueTooMany"
_DUPLICATE = "FieldValueDuplicate"
_TYPE_STRINGS: Final = {
    _REQUIRED: "Required value",
    _INVALID: "Invalid value",
    _TYPE_INVALID: "Invalid value",
    _NOT_SUPPORTED: "Unsupported value",
    _TOO_LONG: "Too long",
    _TOO_MANY: "Too many",
    _DUPLICATE: "Duplicate value",
}
_OMIT = object()


@dataclass(frozen=True, slots=True)
class SchemaCause:
    """One field error, shaped like a Kubernetes ``StatusCause``.

    ``reason`` is the cause type (``FieldValueInvalid``...); ``message`` is the full
    ``field.Error.Error()`` string that the real server joins into a 422 Status message; ``body`` is
    the part after ``"<field>: "`` (what the real server puts in ``details.causes[].message``).
    """

    field: str
    reason: str
    message: str

    @property
    def body(self) -> str:
        prefix = f"{self.field}: "
        return self.message[len(prefix) :] if self.message.startswith(prefix) else self.message


def _go_value(value: Any) -> str:
    """Render a bad value the way apimachinery's ``ErrorBody`` does (%v, %q or JSON)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _go_number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    return json.dumps(value, separators=(",", ":"), sort_keys=True, ensure_ascii=False)


def _go_number(value: float | int) -> str:
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return str(value)


def _cause(reason: str, path: str, bad_value: Any = _OMIT, detail: str = "") -> SchemaCause:
    body = _TYPE_STRINGS[reason]
    if bad_value is not _OMIT and reason not in (_REQUIRED, _TOO_LONG):
        body = f"{body}: {_go_value(bad_value)}"
    if detail:
        body = f"{body}: {detail}"
    return SchemaCause(field=path, reason=reason, message=f"{path}: {body}")


class _Node:
    """One compiled schema node. Attributes mirror the OpenAPI keywords the server honours."""

    __slots__ = (
        "additional",
        "all_of",
        "any_of",
        "default",
        "embedded",
        "enum",
        "excl_max",
        "excl_min",
        "fmt",
        "has_default_below",
        "int_or_string",
        "items",
        "list_map_keys",
        "list_type",
        "max_items",
        "max_length",
        "max_props",
        "maximum",
        "min_items",
        "min_length",
        "min_props",
        "minimum",
        "multiple_of",
        "nullable",
        "pattern",
        "pattern_text",
        "preserve_unknown",
        "properties",
        "required",
        "type",
    )

    def __init__(self, raw: Mapping[str, Any]) -> None:
        self.type: str | None = raw.get("type")
        self.nullable = bool(raw.get("nullable", False))
        self.int_or_string = bool(raw.get("x-kubernetes-int-or-string", False))
        self.preserve_unknown = bool(raw.get("x-kubernetes-preserve-unknown-fields", False))
        self.embedded = bool(raw.get("x-kubernetes-embedded-resource", False))
        self.properties: dict[str, _Node] = {
            name: _Node(sub) for name, sub in (raw.get("properties") or {}).items()
        }
        additional = raw.get("additionalProperties")
        self.additional: _Node | None = None
        if isinstance(additional, Mapping):
            self.additional = _Node(additional)
        elif additional is True:
            self.preserve_unknown = True
        items = raw.get("items")
        self.items: _Node | None = _Node(items) if isinstance(items, Mapping) else None
        self.default: Any = raw.get("default", _MISSING)
        self.required: tuple[str, ...] = tuple(raw.get("required") or ())
        enum = raw.get("enum")
        self.enum: tuple[Any, ...] | None = tuple(enum) if enum is not None else None
        self.minimum: float | None = raw.get("minimum")
        self.maximum: float | None = raw.get("maximum")
        self.excl_min = bool(raw.get("exclusiveMinimum", False))
        self.excl_max = bool(raw.get("exclusiveMaximum", False))
        self.multiple_of: float | None = raw.get("multipleOf")
        self.min_length: int | None = raw.get("minLength")
        self.max_length: int | None = raw.get("maxLength")
        self.min_items: int | None = raw.get("minItems")
        self.max_items: int | None = raw.get("maxItems")
        self.min_props: int | None = raw.get("minProperties")
        self.max_props: int | None = raw.get("maxProperties")
        self.pattern_text: str | None = raw.get("pattern")
        self.pattern: re.Pattern[str] | None = None
        if self.pattern_text is not None:
            try:
                self.pattern = re.compile(self.pattern_text)
            except re.error:  # an RE2-only construct: the server would accept the CRD; we skip it
                self.pattern = None
        self.fmt: str | None = raw.get("format")
        self.list_type: str | None = raw.get("x-kubernetes-list-type")
        self.list_map_keys: tuple[str, ...] = tuple(raw.get("x-kubernetes-list-map-keys") or ())
        self.any_of = tuple(_Node(sub) for sub in raw.get("anyOf") or ())
        self.all_of = tuple(_Node(sub) for sub in raw.get("allOf") or ())
        children = [*self.properties.values(), self.additional, self.items]
        self.has_default_below: bool = any(
            child is not None and (child.default is not _MISSING or child.has_default_below)
            for child in children
        )

    def type_names(self) -> str:
        return "integer,string" if self.int_or_string else (self.type or "")

    def type_matches(self, value: Any) -> bool:
        if self.int_or_string:
            return (isinstance(value, int) and not isinstance(value, bool)) or isinstance(value, str)
        kind = describe_type(value)
        if self.type is None or self.type == kind:
            return True
        if self.type == "number" and kind == "integer":
            return True
        return self.type == "integer" and kind == "number" and float(value).is_integer()


class StructuralSchema:
    """A compiled CRD version schema: ``prune``, ``apply_defaults`` and ``validate`` in place."""

    def __init__(self, openapi_v3_schema: dict[str, Any]) -> None:
        self._root = _Node(openapi_v3_schema)

    # --- pruning -----------------------------------------------------------------------------------
    def prune(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Drop unknown fields (in place); returns ``obj`` for chaining."""
        root = self._root
        for key in list(obj):
            if key in _ROOT_PASSTHROUGH:
                continue
            child = root.properties.get(key)
            if child is None:
                if not root.preserve_unknown:
                    del obj[key]
                continue
            if obj[key] is None and not child.nullable:
                del obj[key]
                continue
            _prune_value(obj[key], child)
        return obj

    # --- defaulting --------------------------------------------------------------------------------
    def apply_defaults(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Fill ``default:`` values for absent fields (in place); returns ``obj``."""
        _default_object(obj, self._root, root=True)
        return obj

    # --- validation --------------------------------------------------------------------------------
    def validate(
        self, obj: dict[str, Any], *, old_obj: dict[str, Any] | None = None, status_only: bool = False
    ) -> list[SchemaCause]:
        """All schema violations of ``obj``. On update (``old_obj``) subtrees equal to their
        correlated old value are skipped, their errors being ratcheted (:mod:`.ratcheting`);
        ``status_only`` (the ``/status`` subresource) validates ``status`` alone."""
        causes: list[SchemaCause] = []
        old: Any = NO_OLD if old_obj is None else old_obj
        root = self._root
        if status_only:
            if (status_node := root.properties.get("status")) is not None and "status" in obj:
                _validate(obj["status"], status_node, "status", causes, _old_child(old, "status"))
        else:
            missing = [n for n in root.required if n not in obj and n not in _ROOT_PASSTHROUGH]
            causes += [_cause(_REQUIRED, name) for name in missing]
            for key, value in obj.items():
                child = None if key in _ROOT_PASSTHROUGH else root.properties.get(key) or root.additional
                if child is not None:
                    _validate(value, child, key, causes, _old_child(old, key))
            if causes and unchanged(obj, old):
                return []  # only the root's own errors can be left; the whole object is unchanged
        old_causes = None if old_obj is None else (lambda: self.validate(old_obj))
        return ratcheting.duplicates_last(causes, duplicate=_DUPLICATE, old_causes=old_causes)


def _old_child(old: Any, key: str) -> Any:
    """The correlated old value of an object's property or map value (:data:`NO_OLD` if none)."""
    return old.get(key, NO_OLD) if isinstance(old, dict) else NO_OLD


def _prune_value(value: Any, node: _Node) -> None:
    if isinstance(value, dict):
        _prune_object(value, node)
    elif isinstance(value, list) and node.items is not None:
        for item in value:
            _prune_value(item, node.items)


def _prune_object(obj: dict[str, Any], node: _Node) -> None:
    if node.int_or_string:
        return
    embedded = node.embedded
    for key in list(obj):
        if embedded and key in _ROOT_PASSTHROUGH:
            metadata = obj[key]
            if key == "metadata" and isinstance(metadata, dict):
                for meta_key in [k for k in metadata if k not in OBJECT_META_FIELDS]:
                    del metadata[meta_key]
            continue
        child = node.properties.get(key) or node.additional
        if child is None:
            if not node.preserve_unknown:
                del obj[key]
            continue
        value = obj[key]
        if value is None and not child.nullable and key in node.properties:
            del obj[key]
            continue
        _prune_value(value, child)


def _default_value(value: Any, node: _Node) -> None:
    if isinstance(value, dict):
        _default_object(value, node, root=False)
    elif isinstance(value, list) and node.items is not None and _defaults_apply(node.items):
        for item in value:
            _default_value(item, node.items)


def _defaults_apply(node: _Node) -> bool:
    return node.has_default_below


def _default_object(obj: dict[str, Any], node: _Node, *, root: bool) -> None:
    if not node.has_default_below:
        return
    for name, child in node.properties.items():
        if root and name in _ROOT_PASSTHROUGH:
            continue
        current = obj.get(name, _MISSING)
        if child.default is not _MISSING and (
            current is _MISSING or (current is None and not child.nullable)
        ):
            obj[name] = copy.deepcopy(child.default)
            current = obj[name]
        if current is not _MISSING and current is not None and child.has_default_below:
            _default_value(current, child)
    additional = node.additional
    if additional is not None and additional.has_default_below:
        for key, value in obj.items():
            if key not in node.properties:
                _default_value(value, additional)


def _validate(value: Any, node: _Node, path: str, causes: list[SchemaCause], old: Any = NO_OLD) -> None:
    """Append ``value``'s violations; ``old`` is its correlated old value (or :data:`NO_OLD`)."""
    if old is not NO_OLD and unchanged(value, old):
        return  # every error here would be ratcheted: skip the subtree
    if value is None:
        if not node.nullable and (node.type is not None or node.int_or_string):
            causes.append(
                _cause(
                    _TYPE_INVALID, path, "null", f'{path} in body must be of type {node.type_names()}: "null"'
                )
            )
        return
    if not node.type_matches(value):
        actual = describe_type(value)
        detail = f'{path} in body must be of type {node.type_names()}: "{actual}"'
        causes.append(_cause(_TYPE_INVALID, path, actual, detail))
        return
    if node.enum is not None and value not in node.enum:
        supported = ", ".join(
            json.dumps(v, ensure_ascii=False)
            if isinstance(v, str)
            else json.dumps(json.dumps(v, separators=(",", ":")))
            for v in node.enum
        )
        causes.append(_cause(_NOT_SUPPORTED, path, value, f"supported values: {supported}"))
    if isinstance(value, str):
        _validate_string(value, node, path, causes)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        _validate_number(value, node, path, causes)
    elif isinstance(value, list):
        _validate_array(value, node, path, causes, old)
    elif isinstance(value, dict):
        _validate_object(value, node, path, causes, old)
    for sub in node.all_of:
        _validate(value, sub, path, causes, old)
    if node.any_of and not node.int_or_string:
        branch_failures: list[list[SchemaCause]] = []
        for sub in node.any_of:
            branch: list[SchemaCause] = []
            _validate(value, sub, path, branch, old)
            if not branch:
                break
            branch_failures.append(branch)
        else:
            detail = f"{path} in body must validate at least one schema (anyOf)"
            causes.append(_cause(_INVALID, path, "", detail))
            causes.extend(sorted(branch_failures, key=len)[0])


def _validate_string(value: str, node: _Node, path: str, causes: list[SchemaCause]) -> None:
    if node.max_length is not None and len(value) > node.max_length:
        unit = "byte" if node.max_length == 1 else "bytes"
        causes.append(_cause(_TOO_LONG, path, detail=f"may not be more than {node.max_length} {unit}"))
    if node.min_length is not None and len(value) < node.min_length:
        detail = f"{path} in body should be at least {node.min_length} chars long"
        causes.append(_cause(_INVALID, path, value, detail))
    if node.pattern is not None and node.pattern.search(value) is None:
        detail = f"{path} in body should match '{node.pattern_text}'"
        causes.append(_cause(_INVALID, path, value, detail))
    if node.fmt == "date-time" and _DATE_TIME.match(value) is None:
        detail = f'{path} in body must be of type date-time: "{value}"'
        causes.append(_cause(_TYPE_INVALID, path, value, detail))


def _validate_number(value: float, node: _Node, path: str, causes: list[SchemaCause]) -> None:
    if node.minimum is not None:
        below = value <= node.minimum if node.excl_min else value < node.minimum
        if below:
            relation = "greater than" if node.excl_min else "greater than or equal to"
            detail = f"{path} in body should be {relation} {_go_number(node.minimum)}"
            causes.append(_cause(_INVALID, path, value, detail))
    if node.maximum is not None:
        above = value >= node.maximum if node.excl_max else value > node.maximum
        if above:
            relation = "less than" if node.excl_max else "less than or equal to"
            detail = f"{path} in body should be {relation} {_go_number(node.maximum)}"
            causes.append(_cause(_INVALID, path, value, detail))
    if node.multiple_of and (value / node.multiple_of) != int(value / node.multiple_of):
        detail = f"{path} in body should be a multiple of {_go_number(node.multiple_of)}"
        causes.append(_cause(_INVALID, path, value, detail))


def _check_size(
    size: int, maximum: int | None, minimum: int | None, noun: str, path: str, causes: list[SchemaCause]
) -> None:
    """maxItems/minItems or maxProperties/minProperties; the too-many message says "item(s)" for both
    arrays and objects, the too-few one names ``noun``."""
    if maximum is not None and size > maximum:
        unit = "item" if maximum == 1 else "items"
        causes.append(_cause(_TOO_MANY, path, size, f"must have at most {maximum} {unit}"))
    if minimum is not None and size < minimum:
        causes.append(_cause(_INVALID, path, size, f"{path} in body should have at least {minimum} {noun}"))


def _validate_array(value: list[Any], node: _Node, path: str, causes: list[SchemaCause], old: Any) -> None:
    _check_size(len(value), node.max_items, node.min_items, "items", path, causes)
    if node.items is not None:
        # only list-map items correlate one by one; atomic and set lists only as a whole
        correlated = (
            ratcheting.correlate_map_list(value, old, node.list_map_keys)
            if old is not NO_OLD and node.list_type == "map" and node.list_map_keys
            else None
        )
        for index, item in enumerate(value):
            item_old = NO_OLD if correlated is None else correlated[index]
            _validate(item, node.items, f"{path}[{index}]", causes, item_old)
    duplicates = ratcheting.list_duplicates(value, list_type=node.list_type, keys=node.list_map_keys)
    causes += [_cause(_DUPLICATE, f"{path}[{index}]", bad) for index, bad in duplicates]


def _validate_object(
    value: dict[str, Any], node: _Node, path: str, causes: list[SchemaCause], old: Any
) -> None:
    for name in node.required:
        if name not in value:
            causes.append(_cause(_REQUIRED, f"{path}.{name}"))
    _check_size(len(value), node.max_props, node.min_props, "properties", path, causes)
    if node.int_or_string:
        return
    for key, item in value.items():
        if node.embedded and key in _ROOT_PASSTHROUGH:
            continue
        child = node.properties.get(key) or node.additional
        if child is not None:
            _validate(item, child, f"{path}.{key}", causes, _old_child(old, key))
