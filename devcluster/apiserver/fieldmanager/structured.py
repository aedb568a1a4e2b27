"""structured-merge-diff's operations on plain JSON objects: field sets, diffs, apply merges, removal.

These are the building blocks kube-apiserver's field manager composes (see :mod:`.managedfields`):

* :func:`to_field_set` — the fields a value sets (an applied configuration's owned set): scalars,
  atomic lists/maps, list items (list-map items by key, set items by value) and empty or null
  maps; plus every undeclared map key itself (an ``additionalProperties`` entry, an untyped map).
* :func:`compare` — what changed from ``old`` to ``new`` as (added, modified, removed) sets; a
  container that did not exist before is itself "added" (that is the ``"."`` of an Update entry),
  a Go value struct (``present``) never is. Equal subtrees are skipped without walking them.
* :func:`merge` — the applied configuration merged into the live object: granular maps and
  list-maps/sets merge item by item, everything else is replaced; list items keep structured-merge-diff's
  order (the configuration's order for its items, live-only items where they were).
* :func:`remove_items` and :func:`ensure_named_fields_are_members` — the pruning of fields an
  applier stopped sending.

Invariant: nothing here mutates its inputs (stored objects are shared); merge results may share
subtrees with both inputs, so callers copy before changing them in place. A configuration that
cannot be typed (a list-map item without its keys, duplicate items) raises :class:`TypingError`.
"""

from __future__ import annotations

from typing import Any, Final

from devcluster.apiserver.fieldmanager.fieldsets import SELF, FieldSet, field, is_member, key, printed, value
from devcluster.apiserver.fieldmanager.fieldtypes import DEDUCED, SCALAR, FieldType, ListOf, Struct, resolve

__all__ = [
    "Comparison",
    "TypingError",
    "compare",
    "ensure_named_fields_are_members",
    "merge",
    "remove_items",
    "to_field_set",
]


class _Missing:
    __slots__ = ()


MISSING: Final = _Missing()
_OPEN_NODE: Final = Struct({})
_DEDUCED_NODE: Final = Struct({}, elem=DEDUCED)

#: (added, modified, removed); each None when empty
Comparison = tuple[FieldSet | None, FieldSet | None, FieldSet | None]


class TypingError(ValueError):
    """The value does not fit its type (structured-merge-diff's "failed to create typed ..." errors)."""


def _make(member: bool, children: dict[str, Any]) -> FieldSet | None:
    if children:
        if member:
            children[SELF] = {}
        return children
    return {} if member else None


def _element(t: ListOf, item: Any) -> str:
    """The path element of one list item: ``k:{...}`` for list-maps, ``v:...`` for sets."""
    if not t.keys:
        if isinstance(item, dict):
            raise TypingError("associative list without keys has an element that's a map type")
        if isinstance(item, list):
            raise TypingError("not supported: associative list with lists as elements")
        if item is None:
            raise TypingError("associative list without keys has an element that's an explicit null")
        return value(item)
    if item is None:
        raise TypingError("associative list with keys may not have a null element")
    if not isinstance(item, dict):
        raise TypingError("associative list with keys may not have non-map elements")
    fields = {}
    for name in t.keys:
        if name in item:
            fields[name] = item[name]
        elif name in t.key_defaults:
            fields[name] = t.key_defaults[name]
    if not fields:
        keys = " ".join(f'"{name}"' for name in t.keys)
        raise TypingError(
            f"associative list with keys has an element that omits all key fields [{keys}] "
            "(and doesn't have default values for any key fields)"
        )
    return key(fields)


def _container(t: FieldType, item: Any) -> bool:
    return (isinstance(t, Struct) and isinstance(item, dict)) or (
        isinstance(t, ListOf) and isinstance(item, list)
    )


# -- ToFieldSet ----------------------------------------------------------------------------------
def to_field_set(obj: dict[str, Any], t: Struct, *, strict: bool = False) -> FieldSet | None:
    """The set of fields ``obj`` sets (raises :class:`TypingError` for an untypable list).

    ``strict`` (an applied configuration) also rejects duplicate list items and, in closed
    custom-resource structs, undeclared fields; stored objects may have both.
    """
    return _make(False, _struct_fields(obj, t, strict))


def _struct_fields(obj: dict[str, Any], t: Struct, strict: bool) -> dict[str, Any]:
    children: dict[str, Any] = {}
    for name, item in obj.items():
        declared, is_declared = t.child(name)
        if strict and t.closed and name not in t.fields:
            raise TypingError(f".{name}: field not declared in schema")
        kind = resolve(declared, item)
        if kind is SCALAR or item is None:
            children[field(name)] = {}
            continue
        empty_map = isinstance(item, dict) and not item
        try:
            sub = _container_fields(item, kind, strict)
        except TypingError as exc:
            raise TypingError(
                f".{name}{exc}" if str(exc).startswith((".", "[")) else f".{name}: {exc}"
            ) from None
        node = _make(not is_declared or empty_map, sub)
        if node is not None:
            children[field(name)] = node
    return children


def _container_fields(item: Any, t: FieldType, strict: bool) -> dict[str, Any]:
    if isinstance(t, Struct):
        return _struct_fields(item, t, strict) if isinstance(item, dict) else {}
    if not isinstance(t, ListOf) or not isinstance(item, list):
        return {}
    children: dict[str, Any] = {}
    seen: set[str] = set()
    duplicates: set[str] = set()
    for entry in item:
        element = _element(t, entry)
        if element in seen:
            if strict:
                raise TypingError(f"duplicate entries for key {printed(element)}")
            duplicates.add(element)
        seen.add(element)
    for entry in item:
        element = _element(t, entry)
        if element in duplicates:
            children[element] = {}
            continue
        kind = resolve(t.elem, entry)
        try:
            sub = _container_fields(entry, kind, strict) if _container(kind, entry) else {}
        except TypingError as exc:
            raise TypingError(f"{printed(element)}{exc}") from None
        node = _make(True, sub)
        if node is not None:
            children[element] = node
    return children


# -- Compare -------------------------------------------------------------------------------------
def compare(old: dict[str, Any] | None, new: dict[str, Any], t: Struct) -> Comparison:
    """(added, modified, removed) from ``old`` (None: the zero object) to ``new``."""
    added: dict[str, Any] = {}
    modified: dict[str, Any] = {}
    removed: dict[str, Any] = {}
    _compare_struct(old or {}, new, t, added, modified, removed)
    return _make(False, added), _make(False, modified), _make(False, removed)


def _compare(lhs: Any, rhs: Any, declared: FieldType | None) -> Comparison:
    if lhs is not MISSING and rhs is not MISSING and lhs == rhs:
        return None, None, None
    # a missing or null side takes the other's shape (structured-merge-diff's "nil is a wildcard")
    kind = resolve(declared, rhs if rhs is not MISSING and rhs is not None else lhs)
    left = None if lhs is MISSING else lhs
    right = None if rhs is MISSING else rhs
    container = (
        kind is not SCALAR
        and (left is None or _container(kind, left))
        and (right is None or _container(kind, right))
        and bool(left or right)
    )
    if not container:
        if lhs is MISSING:
            return {}, None, None
        if rhs is MISSING:
            return None, None, {}
        return None, {}, None
    added: dict[str, Any] = {}
    modified: dict[str, Any] = {}
    removed: dict[str, Any] = {}
    if isinstance(kind, Struct):
        _compare_struct(left or {}, right or {}, kind, added, modified, removed)
    elif isinstance(kind, ListOf) and not _compare_list(
        left or [], right or [], kind, added, modified, removed
    ):
        if lhs is MISSING:
            return {}, None, None
        if rhs is MISSING:
            return None, None, {}
        return None, {}, None
    return _make(lhs is MISSING, added), _make(False, modified), _make(rhs is MISSING, removed)


def _compare_struct(
    lhs: dict[str, Any],
    rhs: dict[str, Any],
    t: Struct,
    added: dict[str, Any],
    modified: dict[str, Any],
    removed: dict[str, Any],
) -> None:
    for name in {**lhs, **rhs}:
        left = lhs.get(name, MISSING)
        right = rhs.get(name, MISSING)
        if left is right:
            continue
        declared, _ = t.child(name)
        if isinstance(declared, Struct) and declared.present:
            left = {} if left is MISSING else left
            right = {} if right is MISSING else right
        elif name in t.null_fields:
            left = None if left is MISSING else left
            right = None if right is MISSING else right
        _record(field(name), _compare(left, right, declared), added, modified, removed)


def _record(
    element: str,
    compared: tuple[Any, Any, Any],
    added: dict[str, Any],
    modified: dict[str, Any],
    removed: dict[str, Any],
) -> None:
    """File one element's (added, modified, removed) sub-sets, each only when there is one."""
    for found, into in zip(compared, (added, modified, removed), strict=True):
        if found is not None:
            into[element] = found


def _index(t: ListOf, items: list[Any]) -> dict[str, list[Any]] | None:
    indexed: dict[str, list[Any]] = {}
    for item in items:
        try:
            element = _element(t, item)
        except TypingError:
            return None
        indexed.setdefault(element, []).append(item)
    return indexed


def _compare_list(
    lhs: list[Any],
    rhs: list[Any],
    t: ListOf,
    added: dict[str, Any],
    modified: dict[str, Any],
    removed: dict[str, Any],
) -> bool:
    """Item-by-item comparison; False when an item has no path element (then: a leaf)."""
    left, right = _index(t, lhs), _index(t, rhs)
    if left is None or right is None:
        return False
    for element in {**left, **right}:
        litems, ritems = left.get(element, []), right.get(element, [])
        if len(litems) <= 1 and len(ritems) <= 1:
            a, m, r = _compare(litems[0] if litems else MISSING, ritems[0] if ritems else MISSING, t.elem)
        elif len(litems) >= 2 and len(ritems) >= 2:
            a, m, r = None, ({} if litems != ritems else None), None
        elif len(litems) >= 2:
            a, m, _ = _compare(MISSING, ritems[0], t.elem) if ritems else (None, None, None)
            r = {}
        else:
            _, m, r = _compare(litems[0], MISSING, t.elem) if litems else (None, None, None)
            a = {}
        _record(element, (a, m, r), added, modified, removed)
    return True


# -- Merge (apply) -------------------------------------------------------------------------------
def merge(live: dict[str, Any], config: dict[str, Any], t: Struct) -> dict[str, Any]:
    """``config`` applied onto ``live`` (raises :class:`TypingError` for duplicate config items)."""
    merged = _merge(live, config, t)
    return merged if isinstance(merged, dict) else {}


def _merge(lhs: Any, rhs: Any, declared: FieldType | None) -> Any:
    if rhs is MISSING:
        return lhs
    if lhs is MISSING:
        return rhs
    kind = resolve(declared, rhs)
    if isinstance(kind, Struct) and isinstance(lhs, dict) and isinstance(rhs, dict) and (lhs or rhs):
        out = dict(lhs)
        for name, item in rhs.items():
            out[name] = _merge(lhs.get(name, MISSING), item, kind.child(name)[0])
        return out
    if isinstance(kind, ListOf) and isinstance(lhs, list) and isinstance(rhs, list) and (lhs or rhs):
        return _merge_list(lhs, rhs, kind)
    return rhs


def _merge_list(lhs: list[Any], rhs: list[Any], t: ListOf) -> list[Any]:
    rhs_elements = [_element(t, item) for item in rhs]
    observed_rhs: dict[str, Any] = {}
    for element, item in zip(rhs_elements, rhs, strict=True):
        if element in observed_rhs:
            raise TypingError(f"duplicate entries for key {printed(element)}")
        observed_rhs[element] = item
    lhs_index = _index(t, lhs)
    if lhs_index is None:
        return rhs
    lhs_elements = [_element(t, item) for item in lhs]
    observed_lhs = {e: items[0] if len(items) == 1 else MISSING for e, items in lhs_index.items()}
    shared = [e for e in rhs_elements if e in observed_lhs]
    next_shared = shared.pop(0) if shared else None
    merged_rhs: set[str] = set()
    out: list[Any] = []
    li = ri = 0
    while li < len(lhs_elements) or ri < len(rhs_elements):
        if li < len(lhs_elements) and ri < len(rhs_elements):
            element = lhs_elements[li]
            if element == rhs_elements[ri]:
                merged_rhs.add(element)
                out.append(_merge(observed_lhs[element], observed_rhs[element], t.elem))
                li += 1
                ri += 1
                next_shared = shared.pop(0) if shared else None
                continue
            if element in observed_rhs and next_shared is not None and next_shared != element:
                li += 1
                continue
        if li < len(lhs_elements):
            element = lhs_elements[li]
            if element not in observed_rhs:
                out.append(lhs[li])
                li += 1
                continue
            if element in merged_rhs:
                li += 1
        if ri < len(rhs_elements):
            element = rhs_elements[ri]
            merged_rhs.add(element)
            out.append(_merge(observed_lhs.get(element, MISSING), observed_rhs[element], t.elem))
            ri += 1
            if next_shared is not None and next_shared == element:
                next_shared = shared.pop(0) if shared else None
    return out


# -- RemoveItems and EnsureNamedFieldsAreMembers -------------------------------------------------
def remove_items(obj: dict[str, Any], fields: FieldSet | None, t: Struct) -> dict[str, Any]:
    """``obj`` without the members of ``fields``; containers emptied by it become ``None``."""
    if not fields:
        return obj
    result = _remove(obj, fields, t)
    return result if isinstance(result, dict) else {}


def _remove(item: Any, fields: FieldSet, declared: FieldType | None) -> Any:
    kind = resolve(declared, item)
    if isinstance(kind, Struct) and isinstance(item, dict) and item:
        out = {}
        for name, sub_item in item.items():
            sub = fields.get(field(name))
            if sub is None:
                out[name] = sub_item
            elif not is_member(sub):
                out[name] = _remove(sub_item, sub, kind.child(name)[0])
        return out or None
    if isinstance(kind, ListOf) and isinstance(item, list) and item:
        kept = []
        for entry in item:
            try:
                element = _element(kind, entry)
            except TypingError:
                kept.append(entry)
                continue
            sub = fields.get(element)
            if sub is None:
                kept.append(entry)
            elif not is_member(sub):
                kept.append(_remove(entry, sub, kind.elem))
        return kept or None
    return item


def _node_type(t: FieldType | None, element: str) -> FieldType:
    if isinstance(t, Struct) and element.startswith("f:"):
        declared, _ = t.child(element[2:])
        if declared is None:
            return _OPEN_NODE
        return _DEDUCED_NODE if declared is DEDUCED else declared
    if isinstance(t, ListOf):
        return t.elem
    return SCALAR


def ensure_named_fields_are_members(fields: FieldSet | None, t: Struct) -> FieldSet | None:
    """``fields`` where every declared struct field with owned children is also a member."""
    if not fields:
        return fields
    return _ensure_named(fields, t)


def _ensure_named(fields: FieldSet, t: FieldType) -> FieldSet:
    out: dict[str, Any] = {}
    for element, sub in fields.items():
        if element == SELF or not sub:
            out[element] = sub
            continue
        named = _ensure_named(sub, _node_type(t, element))
        if (
            SELF not in named
            and isinstance(t, Struct)
            and element.startswith("f:")
            and t.child(element[2:])[1]
            and any(child != SELF for child in named)
        ):
            named = {**named, SELF: {}}
        out[element] = named
    return out
