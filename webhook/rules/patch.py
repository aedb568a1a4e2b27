"""Minimal JSON patches computed from explicit intent, never from a re-serialised model.

The defaulting rules mutate a *copy of the raw request object* (the adapters write through field
paths) and ``diff_ops`` turns the difference into RFC 6902 operations:

* a key only in the new object -> ``add`` of that key (so absent ``metadata.labels`` becomes one
  ``add /metadata/labels {...}``, exactly what the API server needs);
* a changed scalar, list or type -> ``replace`` of that path;
* a key only in the old object -> **no operation**. The webhook never removes a field (Kueue's
  LosslessDefaulter lesson, tekton-kueue #319): a ``remove`` would silently delete data the
  webhook does not model. A rule that must delete something has to say so explicitly
  (``allow_remove``).

Keys are escaped per RFC 6901 (``~`` -> ``~0``, ``/`` -> ``~1``), so the label
``kueue.x-k8s.io/queue-name`` is ``/metadata/labels/kueue.x-k8s.io~1queue-name``.
"""

from __future__ import annotations

from collections.abc import Container
from typing import Any

__all__ = ["diff_ops", "escape_pointer_token", "pointer"]


def escape_pointer_token(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def pointer(*tokens: str | int) -> str:
    return "".join("/" + escape_pointer_token(str(token)) for token in tokens)


def diff_ops(
    before: dict[str, Any], after: dict[str, Any], *, allow_remove: Container[str] = ()
) -> list[dict[str, Any]]:
    """add/replace operations turning ``before`` into ``after`` (removals only for ``allow_remove``)."""
    ops: list[dict[str, Any]] = []
    _diff(before, after, "", ops, allow_remove)
    return ops


def _diff(
    before: dict[str, Any],
    after: dict[str, Any],
    prefix: str,
    ops: list[dict[str, Any]],
    allow_remove: Container[str],
) -> None:
    for key, new in after.items():
        if key not in before:
            ops.append({"op": "add", "path": prefix + "/" + escape_pointer_token(key), "value": new})
            continue
        old = before[key]
        # Equal subtrees are skipped by one C-level comparison instead of a walk: most of an object
        # is untouched by defaulting. ``==`` equates 1, 1.0 and true, but no rule writes a number,
        # and a boolean (``suspend``) is only written where the adapter has read a boolean.
        if old is new or (type(old) is type(new) and old == new):
            continue
        path = prefix + "/" + escape_pointer_token(key)
        if isinstance(old, dict) and isinstance(new, dict):
            _diff(old, new, path, ops, allow_remove)
        else:
            ops.append({"op": "replace", "path": path, "value": new})
    if not allow_remove:
        return
    for key in before.keys() - after.keys():
        path = prefix + "/" + escape_pointer_token(key)
        if path in allow_remove:
            ops.append({"op": "remove", "path": path})
