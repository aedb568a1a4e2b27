"""Field sets: sets of field paths, kept in the ``FieldsV1`` tree shape that ``managedFields`` stores.

A field set is a tree of nested dicts keyed by serialised path elements, exactly as kube-apiserver
writes ``metadata.managedFields[].fieldsV1`` (structured-merge-diff's ``fieldpath.Set``):

* ``f:<name>`` a field of a map or struct, ``k:<json>`` a list-map item by its keys
  (``k:{"containerPort":80,"protocol":"TCP"}``, keys sorted by name), ``v:<json>`` an item of a
  list of scalars, ``i:<n>`` a list index (never produced: non-associative lists are atomic);
* a node whose dict is empty is a *member* of the set (a leaf); a node with children is a member
  only when it also holds the key ``"."``; a node that is neither has no entry at all.

Invariants: every function here returns a new tree and never mutates its arguments, so trees read
from stored objects (immutable, see :mod:`devcluster.apiserver.storage.store`) can be shared; ``None`` stands
for the empty set.
:func:`canonical` sorts a tree the way the real server serialises it (``"."`` first, then path
elements in structured-merge-diff's order: fields by name, then keys, then values, then indexes),
so an entry the devcluster writes is byte-for-byte the real server's.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import orjson

__all__ = [
    "SELF",
    "FieldSet",
    "canonical",
    "difference",
    "field",
    "intersection",
    "is_member",
    "key",
    "leaf",
    "paths",
    "printed",
    "recursive_difference",
    "union",
    "value",
]

#: a field-set node (``{}`` is a member leaf); ``None`` is the empty set
FieldSet = dict[str, Any]
#: the marker of a node that is a member and has children
SELF = "."


def leaf() -> FieldSet:
    return {}


def is_member(node: FieldSet) -> bool:
    return not node or SELF in node


def _go_json(data: Any) -> str:
    """JSON as Go's encoding/json writes it (compact, sorted keys, HTML characters escaped)."""
    text = orjson.dumps(data, option=orjson.OPT_SORT_KEYS).decode()
    if "<" in text or ">" in text or "&" in text or "\u2028" in text or "\u2029" in text:
        text = (
            text.replace("<", "\\u003c")
            .replace(">", "\\u003e")
            .replace("&", "\\u0026")
            .replace("\u2028", "\\u2028")
            .replace("\u2029", "\\u2029")
        )
    return text


def field(name: str) -> str:
    return "f:" + name


def key(fields: dict[str, Any]) -> str:
    return "k:" + _go_json(fields)


def value(item: Any) -> str:
    return "v:" + _go_json(item)


# -- set algebra (all recursive on the tree shape; None = empty) ---------------------------------
# Results put "." first and keep the left operand's element order, so the difference or intersection
# of trees in serialisation order is in that order too; an operand that comes out unchanged is
# returned itself (callers keep stored entries as they are when nothing about them changed).
def _finish(out: dict[str, Any], member: bool) -> FieldSet | None:
    if len(out) > (1 if member else 0):
        return out
    return {} if member else None


def _left_children(
    a: FieldSet,
    b: FieldSet,
    member: bool,
    combine: Callable[[FieldSet, FieldSet], FieldSet | None],
) -> tuple[dict[str, Any], bool]:
    """``a``'s children, each combined with its namesake in ``b`` (kept as is without one), under a
    ``"."`` when ``member``; and whether that is ``a`` unchanged."""
    out: dict[str, Any] = {SELF: {}} if member else {}
    same = member == is_member(a)
    for name, sub in a.items():
        if name == SELF:
            continue
        other = b.get(name)
        combined = sub if other is None else combine(sub, other)
        same = same and combined is sub
        if combined is not None:
            out[name] = combined
    return out, same


def union(a: FieldSet | None, b: FieldSet | None) -> FieldSet | None:
    if a is None or a is b:
        return b
    if b is None:
        return a
    member = is_member(a) or is_member(b)
    out, same = _left_children(a, b, member, union)
    for name, sub in b.items():
        if name != SELF and name not in a:
            out[name] = sub
            same = False
    return a if same else _finish(out, member)


def difference(a: FieldSet | None, b: FieldSet | None) -> FieldSet | None:
    """Paths of ``a`` that are not in ``b`` (membership is per path: children stay)."""
    if a is None or b is None:
        return a
    if a is b:
        return None
    member = is_member(a) and not is_member(b)
    out, same = _left_children(a, b, member, difference)
    return a if same else _finish(out, member)


def intersection(a: FieldSet | None, b: FieldSet | None) -> FieldSet | None:
    if a is None or b is None:
        return None
    if a is b:
        return a
    member = is_member(a) and is_member(b)
    out: dict[str, Any] = {SELF: {}} if member else {}
    for name, sub in a.items():
        if name == SELF:
            continue
        other = b.get(name)
        if other is not None:
            both = intersection(sub, other)
            if both is not None:
                out[name] = both
    return _finish(out, member)


def recursive_difference(a: FieldSet | None, b: FieldSet | None) -> FieldSet | None:
    """Paths of ``a`` that are neither in ``b`` nor below a member of ``b``."""
    if a is None or b is None:
        return a
    if is_member(b):
        return None
    member = is_member(a)
    out, same = _left_children(a, b, member, recursive_difference)
    return a if same else _finish(out, member)


# -- ordering and printing ---------------------------------------------------------------------
def _value_rank(item: Any) -> tuple[int, Any]:
    """structured-merge-diff's value order: numbers, strings, booleans, then the rest."""
    if isinstance(item, bool):
        return (2, item)
    if isinstance(item, int | float):
        return (0, item)
    if isinstance(item, str):
        return (1, item)
    if item is None:
        return (5, 0)
    return (3 if isinstance(item, list) else 4, _go_json(item))


@functools.lru_cache(maxsize=8192)
def _element_order(element: str) -> tuple[Any, ...]:
    kind, text = element[:2], element[2:]
    if kind == "f:":
        return (0, text.encode())
    if kind == "k:":
        fields = orjson.loads(text)
        return (1, tuple((name.encode(), _value_rank(fields[name])) for name in sorted(fields)))
    if kind == "v:":
        return (2, _value_rank(orjson.loads(text)))
    return (3, int(text) if text.isdigit() else 0)


def canonical(node: FieldSet, ordered: FieldSet | None = None) -> FieldSet:
    """``node`` with every level in the real server's serialisation order.

    ``ordered`` is a tree already in that order that ``node`` was grown from: its subtrees that
    ``node`` still holds as they are (the same objects) are reused without sorting them again.
    """
    if not node or node is ordered:
        return node or {}
    out: dict[str, Any] = {}
    if SELF in node:
        out[SELF] = {}
    names = [n for n in node if n != SELF]
    if len(names) > 1:
        names.sort(key=_element_order)
    for name in names:
        sub = node[name]
        out[name] = canonical(sub, ordered.get(name) if ordered else None) if sub else {}
    return out


def printed(element: str) -> str:
    """One path element as ``fieldpath.Path.String()`` prints it (conflict messages)."""
    kind, text = element[:2], element[2:]
    if kind == "f:":
        return "." + text
    if kind == "k:":
        fields = orjson.loads(text)
        return "[" + ",".join(f"{name}={_go_json(fields[name])}" for name in sorted(fields)) + "]"
    if kind == "v:":
        return f"[={_go_json(orjson.loads(text))}]"
    return f"[{text}]"


def paths(node: FieldSet | None) -> list[str]:
    """Every member path of ``node``, printed (``.data.a``, ``.x[name="c"]``), in ``Set.Iterate``
    order: at each level the members first, then the subtrees of the elements with children."""
    out: list[str] = []
    if node:
        _collect(canonical(node), "", out)
    return out


def _collect(node: FieldSet, prefix: str, out: list[str]) -> None:
    elements = [name for name in node if name != SELF]
    out.extend(prefix + printed(name) for name in elements if is_member(node[name]))
    for name in elements:
        sub = node[name]
        if sub and any(child != SELF for child in sub):
            _collect(sub, prefix + printed(name), out)
