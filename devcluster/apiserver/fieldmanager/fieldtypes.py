"""Merge strategies of a kind's fields: what server-side apply needs to know about an object's shape.

structured-merge-diff types every field of an object before it merges, diffs or records ownership.
This module holds the devcluster's equivalent, a small tree of :class:`FieldType` nodes:

* :data:`SCALAR` — a leaf: scalars, and also atomic maps/structs (``x-kubernetes-map-type:
  atomic``, e.g. LabelSelector) and atomic lists (the default ``x-kubernetes-list-type``), which
  are owned and replaced as a whole;
* :class:`Struct` — a granular map: ``fields`` are declared (a struct's fields), ``elem`` types
  the undeclared keys (``additionalProperties``; :data:`DEDUCED` under
  ``x-kubernetes-preserve-unknown-fields``). ``elem=None`` is an *open* struct (built-in kinds, see
  :mod:`.builtin_fieldtypes`): an undeclared key is typed by its value as if declared.
  ``present`` marks a Go value struct (``spec``, ``metadata``...): it exists, empty, in the zero
  object, so setting it never "adds" it (no ``"."`` in an Update's ``fieldsV1``); ``null_fields``
  does the same for its nil slices without ``omitempty`` (a PodSpec's ``containers``);
* :class:`ListOf` — ``x-kubernetes-list-type: map`` (items by ``keys``, with the keys' schema
  defaults) or ``set`` (scalars by value);
* :data:`DEDUCED` — untyped: maps are granular (keys undeclared), lists atomic.

Custom resources get their tree from the CRD's structural schema (:func:`crd_field_type`, with
ObjectMeta's strategies under ``metadata``), compiled on first use per version and cached
(:class:`LazyFieldTypes`), because the Workload schema alone has thousands of nodes.
"""

from __future__ import annotations

from dataclasses import KW_ONLY, dataclass
from typing import Any, Final

__all__ = [
    "BY_VALUE",
    "DEDUCED",
    "OBJECT_META",
    "SCALAR",
    "FieldType",
    "LazyFieldTypes",
    "ListOf",
    "Struct",
    "crd_field_type",
    "resolve",
]


class FieldType:
    __slots__ = ()


class _Scalar(FieldType):
    __slots__ = ()

    def __repr__(self) -> str:
        return "SCALAR"


class _Deduced(FieldType):
    __slots__ = ()

    def __repr__(self) -> str:
        return "DEDUCED"


class _ByValue(FieldType):
    __slots__ = ()

    def __repr__(self) -> str:
        return "BY_VALUE"


SCALAR: Final = _Scalar()
DEDUCED: Final = _Deduced()
#: a declared field of a built-in struct whose strategies are all defaults: typed by its value
BY_VALUE: Final = _ByValue()


@dataclass(slots=True, eq=False)
class Struct(FieldType):
    fields: dict[str, FieldType]
    _: KW_ONLY
    elem: FieldType | None = None
    present: bool = False
    #: only ``fields`` exist (a structural-schema object without additionalProperties or
    #: preserve-unknown-fields, a built-in kind's top level): an applied configuration carrying
    #: another field is rejected ("field not declared in schema")
    closed: bool = False
    #: Go fields without ``omitempty`` that are nil slices/maps in the zero value: they exist
    #: (as null) wherever this struct does, so setting them never "adds" them either
    null_fields: frozenset[str] = frozenset()

    def child(self, name: str) -> tuple[FieldType | None, bool]:
        """(type of key ``name`` or None for "type it by its value", whether it is declared)."""
        found = self.fields.get(name)
        if found is BY_VALUE:
            return None, True
        if found is not None:
            return found, True
        if self.elem is not None:
            return self.elem, False
        return None, True


class ListOf(FieldType):
    __slots__ = ("elem", "key_defaults", "keys")

    def __init__(
        self,
        *,
        keys: tuple[str, ...] = (),
        elem: FieldType = SCALAR,
        key_defaults: dict[str, Any] | None = None,
    ) -> None:
        #: () for a set of scalars
        self.keys = keys
        self.elem = elem
        self.key_defaults = key_defaults or {}


_OPEN: Final = Struct({})
_DEDUCED_MAP: Final = Struct({}, elem=DEDUCED)


def resolve(declared: FieldType | None, item: Any) -> FieldType:
    """The type a value is handled with: leaves for mismatched shapes, deduced maps and lists."""
    if isinstance(declared, Struct):
        return declared if isinstance(item, dict) or item is None else SCALAR
    if isinstance(declared, ListOf):
        return declared if isinstance(item, list) or item is None else SCALAR
    if declared is SCALAR:
        return SCALAR
    if isinstance(item, dict):
        return _DEDUCED_MAP if declared is DEDUCED else _OPEN
    return SCALAR


#: metav1.ObjectMeta as the real OpenAPI types it (finalizers a set, ownerReferences by uid, atomic)
OBJECT_META: Final = Struct(
    {
        **dict.fromkeys(
            (
                "annotations",
                "creationTimestamp",
                "deletionGracePeriodSeconds",
                "deletionTimestamp",
                "generateName",
                "generation",
                "labels",
                "name",
                "namespace",
                "resourceVersion",
                "selfLink",
                "uid",
            ),
            BY_VALUE,
        ),
        "finalizers": ListOf(),
        "ownerReferences": ListOf(keys=("uid",), key_defaults={"uid": ""}),
        "managedFields": SCALAR,
    },
    present=True,
    closed=True,
)


def _compile(node: Any) -> FieldType:
    if not isinstance(node, dict):
        return DEDUCED
    if node.get("x-kubernetes-int-or-string"):
        return SCALAR
    kind = node.get("type")
    if kind == "array":
        list_type = node.get("x-kubernetes-list-type") or "atomic"
        raw_items = node.get("items")
        items: dict[str, Any] = raw_items if isinstance(raw_items, dict) else {}
        if list_type == "map":
            keys = tuple(node.get("x-kubernetes-list-map-keys") or ())
            properties = items.get("properties") or {}
            defaults = {
                name: properties[name]["default"]
                for name in keys
                if isinstance(properties.get(name), dict) and "default" in properties[name]
            }
            return ListOf(keys=keys, elem=_compile(items), key_defaults=defaults)
        if list_type == "set":
            return ListOf()
        return SCALAR
    properties = node.get("properties")
    additional = node.get("additionalProperties")
    preserve = bool(node.get("x-kubernetes-preserve-unknown-fields")) or additional is True
    if kind == "object" or properties or isinstance(additional, dict) or preserve:
        if node.get("x-kubernetes-map-type") == "atomic":
            return SCALAR
        fields = {name: _compile(sub) for name, sub in (properties or {}).items()}
        if isinstance(additional, dict):
            elem: FieldType = _compile(additional)
        else:
            elem = DEDUCED
        if node.get("x-kubernetes-embedded-resource"):
            fields.setdefault("apiVersion", SCALAR)
            fields.setdefault("kind", SCALAR)
            fields.setdefault("metadata", OBJECT_META)
        closed = not preserve and not isinstance(additional, dict)
        return Struct(fields, elem=elem, closed=closed)
    if kind in {"string", "integer", "number", "boolean"}:
        return SCALAR
    return DEDUCED


def crd_field_type(openapi_v3_schema: dict[str, Any]) -> Struct:
    """The whole custom resource: its schema, with ``apiVersion``/``kind`` and ObjectMeta's strategies."""
    root = _compile(openapi_v3_schema)
    fields = dict(root.fields) if isinstance(root, Struct) else {}
    fields.update({"apiVersion": SCALAR, "kind": SCALAR, "metadata": OBJECT_META})
    if not isinstance(root, Struct):
        return Struct(fields, elem=DEDUCED)
    return Struct(fields, elem=root.elem, closed=root.closed)


class LazyFieldTypes:
    """A CRD's per-version field types, compiled from the raw schemas when first asked for."""

    __slots__ = ("_compiled", "_schemas")

    def __init__(self, schemas: dict[str, dict[str, Any]]) -> None:
        self._schemas = schemas
        self._compiled: dict[str, Struct] = {}

    def get(self, version: str) -> Struct:
        compiled = self._compiled.get(version)
        if compiled is None:
            compiled = self._compiled[version] = crd_field_type(self._schemas.get(version) or {})
        return compiled
