"""``metadata.managedFields``: who last set which fields, approximately as kube-apiserver records it.

Every write records an entry for its field manager (``fieldManager`` parameter, else the client's
user-agent prefix, as the real server does), operation (``Update`` or ``Apply``), apiVersion,
time and subresource. The approximation: for ``Update`` the entry's ``fieldsV1`` is the union of the
fields this manager changed (not a full ownership transfer between managers); for ``Apply`` it is
exactly the applied configuration's fields; lists are owned as a whole. Nothing here rejects a
write, so no apply conflicts are ever reported.
"""

from __future__ import annotations

from typing import Any

from devcluster.apiserver.patching import fields_v1

__all__ = ["changed_fields", "record_apply", "record_update", "strip_bookkeeping"]

_BOOKKEEPING = ("resourceVersion", "managedFields")
_TRACKED_METADATA = {"labels", "annotations", "finalizers", "ownerReferences"}


def strip_bookkeeping(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` without resourceVersion and managedFields: what "did anything change" compares."""
    meta = {k: v for k, v in obj["metadata"].items() if k not in _BOOKKEEPING}
    return {**obj, "metadata": meta}


def _diff(old: Any, new: Any) -> Any:
    if isinstance(old, dict) and isinstance(new, dict):
        out = {}
        for key, value in new.items():
            if key not in old:
                out[key] = value
            elif old[key] != value:
                out[key] = _diff(old[key], value)
        return out
    return new


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for key, value in b.items():
        out[key] = _merge(out.get(key) or {}, value) if isinstance(value, dict) else value
    return out


def changed_fields(old: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """The part of ``new`` that differs from ``old``, restricted to fields managers own."""
    changed: dict[str, Any] = _diff(strip_bookkeeping(old) if old else {}, strip_bookkeeping(new))
    for dropped in ("apiVersion", "kind"):
        changed.pop(dropped, None)
    if isinstance(changed.get("metadata"), dict):
        changed["metadata"] = {k: v for k, v in changed["metadata"].items() if k in _TRACKED_METADATA}
        if not changed["metadata"]:
            changed.pop("metadata")
    return changed


def _set_entry(
    obj: dict[str, Any],
    *,
    manager: str,
    operation: str,
    version: str,
    subresource: str,
    fields: dict[str, Any],
    merge: bool,
    timestamp: str,
) -> None:
    entries = [dict(e) for e in obj["metadata"].get("managedFields") or [] if isinstance(e, dict)]
    existing = next(
        (
            e
            for e in entries
            if e.get("manager") == manager
            and e.get("operation") == operation
            and e.get("subresource", "") == subresource
        ),
        None,
    )
    entry: dict[str, Any] = {
        "manager": manager,
        "operation": operation,
        "apiVersion": obj.get("apiVersion") or version,
        "time": timestamp,
        "fieldsType": "FieldsV1",
        "fieldsV1": _merge(existing.get("fieldsV1") or {}, fields) if existing and merge else fields,
    }
    if subresource:
        entry["subresource"] = subresource
    obj["metadata"]["managedFields"] = [e for e in entries if e is not existing] + [entry]


def record_update(
    obj: dict[str, Any],
    old: dict[str, Any] | None,
    *,
    manager: str,
    version: str,
    subresource: str,
    timestamp: str,
) -> None:
    """Record an ``Update`` by ``manager`` of whatever changed from ``old`` to ``obj`` (in place)."""
    changed = changed_fields(old, obj)
    if changed:
        _set_entry(
            obj,
            manager=manager,
            operation="Update",
            version=version,
            subresource=subresource,
            fields=fields_v1(changed),
            merge=True,
            timestamp=timestamp,
        )


def record_apply(
    obj: dict[str, Any], applied: Any, *, manager: str, version: str, subresource: str, timestamp: str
) -> dict[str, Any]:
    """Record an ``Apply`` entry owning exactly the applied configuration's fields (in place)."""
    fields = (
        fields_v1({k: v for k, v in applied.items() if k not in {"apiVersion", "kind"}})
        if isinstance(applied, dict)
        else {}
    )
    _set_entry(
        obj,
        manager=manager,
        operation="Apply",
        version=version,
        subresource=subresource,
        fields=fields,
        merge=False,
        timestamp=timestamp,
    )
    return obj
