"""Deep copies of decoded JSON, the shape every object read from an API server has.

``copy.deepcopy`` is general (memo dictionary, ``__deepcopy__`` and ``__reduce_ex__`` lookups, a
keep-alive list) and costs several microseconds even for a three-entry label map. The reconciler
copies such small maps, lists and whole objects on every start, stop and patch, so a copy that knows
the JSON shape pays off: dicts and lists are rebuilt recursively, immutable scalars are shared, and
anything else falls back to ``copy.deepcopy``, so the result is always a correct deep copy.

Invariant: ``copy_json(value) == value`` and no dict or list of the result is shared with
``value``. Aliasing inside ``value`` (one list referenced twice) is not preserved: each reference
gets its own copy, which is what JSON (a tree) means anyway.

Two copies, one contract:

* ``json_tree_copy`` for whole objects and pod templates: an orjson round trip (C speed), ~6x
  faster than ``deepcopy`` on an API object; a tree holding anything orjson would convert instead
  of copy (datetimes, dataclasses, subclasses, non-string keys, ints beyond 64 bits) falls back to
  ``copy.deepcopy``, so such values keep their types.
* ``copy_json`` for the small values around them (label maps, toleration lists), where a round
  trip's fixed cost dominates.
"""

from __future__ import annotations

import copy
from typing import Any, Final, TypeVar

import orjson

__all__ = ["copy_json", "json_tree_copy"]

T = TypeVar("T")

_IMMUTABLE: Final = frozenset({str, int, float, bool, type(None)})

# Datetimes, dataclasses, subclasses of int/dict/list, non-str keys and ints beyond 64 bits make
# ``orjson.dumps`` raise instead of converting, so the ``copy.deepcopy`` fallback keeps them exactly.
# (Tuples come back as lists and enums as their values; neither occurs in decoded JSON.)
_STRICT_JSON: Final = (
    orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_SUBCLASS
)


def json_tree_copy(tree: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a decoded-JSON object (an API object, a pod template): an orjson round trip."""
    try:
        copied: dict[str, Any] = orjson.loads(orjson.dumps(tree, option=_STRICT_JSON))
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return copy.deepcopy(tree)
    return copied


def copy_json(value: T) -> T:
    """A deep copy of ``value`` (decoded JSON: dicts, lists, strings, numbers, booleans, ``None``)."""
    kind = type(value)
    if kind is dict:
        return {key: copy_json(item) for key, item in value.items()}  # type: ignore[attr-defined,return-value]
    if kind is list:
        return [copy_json(item) for item in value]  # type: ignore[attr-defined,return-value]
    if kind in _IMMUTABLE:
        return value
    return copy.deepcopy(value)
