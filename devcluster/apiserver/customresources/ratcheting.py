"""CRD validation ratcheting: which old value a new value is compared with, and "unchanged".

Also the list-type item identities ratcheting rests on: list-map keys correlate old and new
items, and the same keys (or whole items of a ``set``) make duplicates.

kube-apiserver (KEP-4008, feature gate ``CRDValidationRatcheting``: beta and on by default since 1.30,
GA in 1.33) lets an UPDATE or PATCH keep a value that fails the CRD's schema as long as the
value is unchanged. :mod:`.schema` applies these rules while it walks the new object; this
module holds the rules' two questions, answered as apiextensions-apiserver answers them:

* **Correlation.** A node of the new object is compared with its *correlated* old value, found by
  following the schema from the root: an object's property or ``additionalProperties`` value by
  its key (present in both old and new, else uncorrelated); an item of an
  ``x-kubernetes-list-type: map`` list by its ``x-kubernetes-list-map-keys`` values. Items of
  ``atomic`` (the default) and ``set`` lists are never correlated one by one: such a list is
  correlated only as a whole, so changing one item revalidates every item.
* **Unchanged.** Deep equality as Go's ``reflect.DeepEqual`` sees decoded JSON: ``1``, ``1.0`` and
  ``true`` are three different values (Python's ``==`` says they are equal), key order does not
  matter, ``null`` equals ``null``.

Rule (kube-openapi's validator wrapped by apiextensions' ``RatchetingSchemaValidator``): every
schema error found at or below a correlated node whose new value equals its old value is
dropped (turned into a warning we do not return); this includes ``required``, ``enum``,
``format``, type, size and pattern errors, and the errors of uncorrelated items inside an
unchanged list. Because *all* errors of such a subtree are dropped, :mod:`.schema` does not
walk it at all: an equality check is much cheaper than validation, and a status update then
never revalidates the spec. Never ratcheted: CREATE; ``apiVersion``/``kind`` at the root (not
validated by the schema here anyway).

Duplicate items of ``set``/``map`` lists are found by a separate pass in the real server
(``structurallisttype``) with a coarser rule: they are reported only when the old object has no
duplicate at all. CEL rules (``x-kubernetes-validations``) ratchet the same way per correlated
node in the real server (rules using ``oldSelf`` are transition rules and are not ratcheted), but
the devcluster does not evaluate CEL.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Final, Protocol, TypeVar

import orjson

__all__ = ["NO_OLD", "correlate_map_list", "duplicates_last", "list_duplicates", "unchanged"]

NO_OLD: Final[Any] = object()
"""Marks a node with no correlated old value (CREATE, new key, uncorrelatable list item)."""

_SORTED: Final = orjson.OPT_SORT_KEYS


class _Cause(Protocol):
    @property
    def reason(self) -> str: ...


_C = TypeVar("_C", bound=_Cause)


def duplicates_last(
    causes: list[_C], *, duplicate: str, old_causes: Callable[[], list[_C]] | None
) -> list[_C]:
    """Move duplicate-item causes (reason ``duplicate``) after the schema causes, as the real
    server's separate list-type pass reports them; on update (``old_causes`` given: the old
    object's causes on CREATE) drop them all when the old object has any duplicate itself. The old
    object is only revalidated when the new one has a duplicate."""
    duplicates = [cause for cause in causes if cause.reason == duplicate]
    if not duplicates:
        return causes
    kept = [cause for cause in causes if cause.reason != duplicate]
    if old_causes is not None and any(cause.reason == duplicate for cause in old_causes()):
        return kept
    return kept + duplicates


def unchanged(new: Any, old: Any) -> bool:
    """``reflect.DeepEqual`` of two decoded JSON values (see the module docstring)."""
    if old is NO_OLD:
        return False
    if new is old:
        return True
    if type(new) is not type(old) or new != old:
        return False
    if not isinstance(new, (dict, list)):
        return True
    # Loosely equal containers: confirm without Python's 1 == 1.0 == True conflation.
    try:
        return orjson.dumps(new, option=_SORTED) == orjson.dumps(old, option=_SORTED)
    except (orjson.JSONEncodeError, TypeError):  # e.g. an integer beyond 64 bits
        return _strictly_equal(new, old)


def _strictly_equal(new: Any, old: Any) -> bool:
    if type(new) is not type(old):
        return False
    if isinstance(new, dict):
        return new.keys() == old.keys() and all(_strictly_equal(v, old[k]) for k, v in new.items())
    if isinstance(new, list):
        return len(new) == len(old) and all(_strictly_equal(a, b) for a, b in zip(new, old, strict=True))
    return bool(new == old)


def _map_key(item: Any, keys: Sequence[str]) -> tuple[Any, ...] | None:
    """The identity of a list-map item, or None when it has none usable (not an object, unhashable)."""
    if not isinstance(item, dict):
        return None
    identity = tuple((name in item, type(item.get(name)), item.get(name)) for name in keys)
    try:
        hash(identity)
    except TypeError:
        return None
    return identity


def correlate_map_list(new: list[Any], old: Any, keys: Sequence[str]) -> list[Any]:
    """For each item of a new ``x-kubernetes-list-type: map`` list, the old item with the same keys.

    Items with no old counterpart (or when ``old`` is not a list) get :data:`NO_OLD`. When the old
    list itself repeats a key (already an error), the first old item with that key is used.
    """
    if not isinstance(old, list) or not old:
        return [NO_OLD] * len(new)
    by_key: dict[tuple[Any, ...], Any] = {}
    for item in old:
        identity = _map_key(item, keys)
        if identity is not None:
            by_key.setdefault(identity, item)
    correlated: list[Any] = []
    for item in new:
        identity = _map_key(item, keys)
        correlated.append(NO_OLD if identity is None else by_key.get(identity, NO_OLD))
    return correlated


def list_duplicates(items: list[Any], *, list_type: str | None, keys: Sequence[str]) -> list[tuple[int, Any]]:
    """``(index, reported value)`` of each item repeating an earlier one: the whole item in a
    ``set`` list, the ``x-kubernetes-list-map-keys`` values in a ``map`` list (non-objects skipped)."""
    found: list[tuple[int, Any]] = []
    if list_type == "set":
        seen: list[Any] = []
        for index, item in enumerate(items):
            if item in seen:
                found.append((index, item))
            else:
                seen.append(item)
    elif list_type == "map" and keys:
        seen_keys: set[str] = set()
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                continue
            key_values = {k: item[k] for k in keys if k in item}
            fingerprint = json.dumps(key_values, sort_keys=True)
            if fingerprint in seen_keys:
                found.append((index, key_values))
            else:
                seen_keys.add(fingerprint)
    return found
