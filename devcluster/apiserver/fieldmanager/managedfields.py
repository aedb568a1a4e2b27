"""``metadata.managedFields``: field ownership as kube-apiserver's field manager keeps it.

Every write goes through one of two entry points, with the same rules as the real server's
structured-merge-diff field manager (each checked against kube-apiserver 1.36 by the conformance
tests in ``tests/devcluster/test_field_ownership.py``):

* :func:`record_update` (create, update, every non-apply patch): the fields the write added or
  changed become the writer's (one ``Update`` entry per manager, apiVersion and subresource; its
  set grows, its ``time`` moves only when it took something), and leave every other manager's set;
  fields the write removed leave every set. No conflicts. An object that has no managedFields at
  all is not tracked by updates until something applies to it (the real server's rule for objects
  written before server-side apply existed), except at creation.
* :func:`record_apply` (``application/apply-patch+yaml``): the configuration is merged into the
  live object; the applier's ``Apply`` entry becomes exactly the configuration's fields; fields the
  applier owned before and no longer sends are removed from the object unless another manager
  (applier or updater) also owns them; a change to a field another manager owns is a 409
  :func:`conflict_error` naming each field and manager unless ``force`` is set, in which case the
  field moves to the applier. The entry's ``time`` moves only when the object changed.

Common rules: a manager whose set becomes empty loses its entry; ``apiVersion``, ``kind`` and the
server-owned metadata (name, namespace, uid, resourceVersion, generation, creationTimestamp,
managedFields) are never owned; changes that the endpoint does not persist are never owned (the
main endpoint of a kind with a status subresource ignores ``status``, ``/status`` everything else);
an update that leaves more than ten ``Update`` entries folds the oldest into ``ancient-changes``; entries are
sorted as the
real server sorts them (Apply before Update, then time, manager, apiVersion, subresource).

Known simplification: entries of other apiVersions are compared in the request's version (the
devcluster stores every version of a kind in one shape, so this only matters for Events written
as both ``v1`` and ``events.k8s.io/v1``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import orjson

from devcluster.apiserver.errors import StatusError
from devcluster.apiserver.fieldmanager import fieldsets, structured
from devcluster.apiserver.fieldmanager.fieldsets import FieldSet
from devcluster.apiserver.fieldmanager.fieldtypes import Struct

__all__ = ["FieldScope", "conflict_error", "record_apply", "record_update"]

_MAX_UPDATE_MANAGERS: Final = 10
_ANCIENT: Final = "ancient-changes"
#: stripMetaManager's paths: never owned by anyone (only "metadata" itself, not its children)
_STRIPPED: Final[FieldSet] = {
    "f:apiVersion": {},
    "f:kind": {},
    "f:metadata": {
        ".": {},
        **{
            f"f:{name}": {}
            for name in (
                "name",
                "namespace",
                "creationTimestamp",
                "selfLink",
                "uid",
                "clusterName",
                "generation",
                "managedFields",
                "resourceVersion",
            )
        },
    },
}

#: (manager, operation, apiVersion for updates else "", subresource)
_Identifier = tuple[str, str, str, str]


def _without_managed(obj: Any) -> Any:
    if not isinstance(obj, dict) or "managedFields" not in obj.get("metadata", {}):
        return obj
    return {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k != "managedFields"}}


@dataclass(frozen=True, slots=True)
class FieldScope:
    """Who writes what, where: the request's manager, version and subresource, and the kind's types."""

    manager: str
    api_version: str
    subresource: str
    field_type: Struct
    #: the kind has a status subresource (its main endpoint does not persist status)
    has_status: bool
    #: custom resources serialise entries with sorted keys (unstructured), built-ins in Go order
    custom: bool
    timestamp: str

    def owned(self, fields: FieldSet | None) -> FieldSet | None:
        """``fields`` without what this endpoint never persists (the strategy's reset fields)."""
        if fields is None:
            return None
        if self.subresource in {"status", "finalize"}:
            kept = "f:status" if self.subresource == "status" else "f:spec"
            return {kept: fields[kept]} if kept in fields else None
        if self.has_status and "f:status" in fields:
            return fieldsets.recursive_difference(fields, {"f:status": {}})
        return fields


@dataclass(slots=True)
class _Managed:
    fields: FieldSet | None
    time: str | None
    api_version: str
    #: the stored entry, reused as is when nothing about it changed
    entry: dict[str, Any] | None = None
    changed: bool = False
    #: ``fields`` is already in serialisation order (stored, or only ever reduced since)
    ordered: bool = False
    #: an ordered tree ``fields`` grew from (its unchanged subtrees need no sorting)
    grown_from: FieldSet | None = None


def _decode(entries: Any, *, stored: bool = True) -> dict[_Identifier, _Managed] | None:
    """The entries by manager identifier; None when they are not a valid managedFields list.

    As DecodeManagedFields: every entry needs operation Apply or Update, an apiVersion and
    fieldsType FieldsV1; of two entries with one identifier the later wins. ``stored`` entries
    were written by this module (in order); a client's are re-serialised.
    """
    if not isinstance(entries, list):
        return None
    managed: dict[_Identifier, _Managed] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            return None
        operation = entry.get("operation")
        fields = entry.get("fieldsV1") or {}
        api_version = entry.get("apiVersion")
        if operation not in {"Apply", "Update"} or not isinstance(fields, dict):
            return None
        if not isinstance(api_version, str) or not api_version or entry.get("fieldsType") != "FieldsV1":
            return None
        identifier = (
            str(entry.get("manager") or ""),
            operation,
            "" if operation == "Apply" else api_version,
            str(entry.get("subresource") or ""),
        )
        time = entry.get("time")
        managed[identifier] = _Managed(
            fields=fields or None,
            time=time if isinstance(time, str) else None,
            api_version=api_version,
            entry=entry if stored else None,
            changed=not stored,
            ordered=stored,
        )
    return managed


def _is_reset(entries: Any) -> bool:
    """``[]`` or ``[{}]`` sent by a client: drop every entry (the documented way to clear them)."""
    return isinstance(entries, list) and (entries == [] or entries == [{}])


def _encode(managed: dict[_Identifier, _Managed], *, custom: bool) -> list[dict[str, Any]]:
    def order(item: tuple[_Identifier, _Managed]) -> tuple[str, str, str, str, str]:
        (manager, operation, _, subresource), state = item
        return (operation, state.time or "", manager, state.api_version, subresource)

    out: list[dict[str, Any]] = []
    for (manager, operation, _, subresource), state in sorted(managed.items(), key=order):
        if state.entry is not None and not state.changed:
            out.append(state.entry)
            continue
        entry: dict[str, Any] = {"manager": manager, "operation": operation, "apiVersion": state.api_version}
        if state.time is not None:
            entry["time"] = state.time
        entry["fieldsType"] = "FieldsV1"
        fields = state.fields or {}
        entry["fieldsV1"] = fields if state.ordered else fieldsets.canonical(fields, state.grown_from)
        if subresource:
            entry["subresource"] = subresource
        out.append(dict(sorted(entry.items())) if custom else entry)
    return out


def _set(state: _Managed, fields: FieldSet | None) -> None:
    if fields is not state.fields:
        state.fields = fields
        state.changed = True


def _forget(managed: dict[_Identifier, _Managed], removed: FieldSet | None) -> None:
    """Fields gone from the object leave every set; managers left with nothing lose their entry."""
    for identifier, state in list(managed.items()):
        if removed is not None:
            _set(state, fieldsets.difference(state.fields, removed))
        if not state.fields:
            del managed[identifier]


def _cap_updaters(managed: dict[_Identifier, _Managed]) -> None:
    """More than ten Update entries: the oldest fold, per apiVersion, into ``ancient-changes``.

    As capManagersManager does: oldest first, the first entry of each version is kept until a
    second one of that version comes; then both become the version's bucket, and so on.
    """
    updaters = [i for i in managed if i[1] != "Apply"]
    if len(updaters) <= _MAX_UPDATE_MANAGERS:
        return
    updaters.sort(key=lambda i: (managed[i].time or "", orjson.dumps(i)))
    first_of_version: dict[str, _Identifier] = {}
    length = len(updaters)
    for identifier in updaters:
        if length <= _MAX_UPDATE_MANAGERS:
            break
        state = managed[identifier]
        version = state.api_version
        first = first_of_version.get(version)
        if first is None:
            first_of_version[version] = identifier
            continue
        bucket = (_ANCIENT, "Update", version, "")
        if bucket not in managed:
            moved = managed.pop(first)
            managed[bucket] = _Managed(
                fields=moved.fields, time=moved.time, api_version=version, changed=True
            )
        target = managed[bucket]
        target.fields = fieldsets.union(state.fields, target.fields)
        target.time = state.time
        target.changed = True
        del managed[identifier]
        length -= 1


def _changes(old: dict[str, Any] | None, new: dict[str, Any], scope: FieldScope) -> tuple[Any, Any, Any]:
    added, modified, removed = structured.compare(old, new, scope.field_type)
    return scope.owned(added), scope.owned(modified), scope.owned(removed)


def _take(
    managed: dict[_Identifier, _Managed],
    old: dict[str, Any] | None,
    new: dict[str, Any],
    identifier: _Identifier,
    scope: FieldScope,
) -> None:
    """One Update (in place): what changed from ``old`` to ``new`` moves to ``identifier``."""
    added, modified, removed = _changes(old, new, scope)
    taken = fieldsets.union(added, modified)
    for state in managed.values():
        if taken is not None:
            _set(state, fieldsets.difference(state.fields, taken))
    _forget(managed, removed)
    current = fieldsets.difference(taken, _STRIPPED)
    if current:
        previous = managed.get(identifier)
        if previous is None:
            managed[identifier] = _Managed(
                fields=current, time=scope.timestamp, api_version=scope.api_version, changed=True
            )
        else:
            grown = fieldsets.union(previous.fields, current)
            if grown is not previous.fields:
                if previous.ordered:
                    previous.grown_from = previous.fields
                previous.fields = grown
                previous.ordered = False
            previous.time = scope.timestamp
            previous.changed = True


def record_update(
    *,
    old: dict[str, Any] | None,
    new: dict[str, Any],
    base: Any,
    scope: FieldScope,
) -> list[dict[str, Any]]:
    """The managedFields after a non-apply write of ``new`` over ``old`` (None: a create).

    ``base`` is what the client sent in ``metadata.managedFields`` (None on a subresource):
    entries that decode replace the stored ones (a client may rewrite them), ``[]`` or ``[{}]``
    clears them, anything else leaves the stored ones in place.
    """
    stored = (old or {}).get("metadata", {}).get("managedFields") or []
    if _is_reset(base):
        managed: dict[_Identifier, _Managed] = {}
    else:
        managed = (_decode(base, stored=base == stored) or {}) if base is not None else {}
        if not managed:
            managed = _decode(stored) or {}
    if not managed and old is not None:
        return []  # never tracked: updates do not start tracking (skipNonAppliedManager)
    identifier = (scope.manager, "Update", scope.api_version, scope.subresource)
    _take(managed, _without_managed(old), _without_managed(new), identifier, scope)
    _cap_updaters(managed)
    return _encode(managed, custom=scope.custom)


def conflict_error(conflicts: dict[_Identifier, FieldSet]) -> StatusError:
    """409 Conflict naming every contested field and its manager(s), as the real server words it."""

    def who(identifier: _Identifier) -> str:
        manager, operation, api_version, subresource = identifier
        text = orjson.dumps(manager).decode()
        if subresource:
            text += f' with subresource "{subresource}"'
        if operation == "Update":
            text += f" using {api_version}"
        return text

    ordered = sorted(conflicts.items(), key=lambda item: item[0])
    causes: list[dict[str, str]] = []
    lines: list[str] = []
    total = 0
    for identifier, fields in ordered:
        contested = fieldsets.paths(fields)
        total += len(contested)
        lines.append(f"conflicts with {who(identifier)}:")
        lines.extend(f"- {path}" for path in contested)
        causes.extend(
            {"reason": "FieldManagerConflict", "message": f"conflict with {who(identifier)}", "field": path}
            for path in contested
        )
    if total == 1:
        message = f"Apply failed with 1 conflict: {causes[0]['message']}: {causes[0]['field']}"
    else:
        message = f"Apply failed with {total} conflicts: " + "\n".join(lines)
    return StatusError(409, "Conflict", message, {"causes": causes})


def _without_nulls(obj: Any, owned: FieldSet | None, *, custom: bool) -> Any:
    """Drop the nulls removal left behind (a typed Go object omits them); in a custom resource an
    emptied map that a manager owns as such stays ``{}``, as the real server stores it."""
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        for name, item in obj.items():
            sub = owned.get(f"f:{name}") if owned else None
            if item is None:
                if custom and sub is not None and fieldsets.is_member(sub):
                    out[name] = {}
                continue
            out[name] = _without_nulls(item, sub, custom=custom)
        return out
    if isinstance(obj, list):
        return [item for item in obj if item is not None]
    return obj


def _prune(
    merged: dict[str, Any],
    managed: dict[_Identifier, _Managed],
    last: FieldSet | None,
    field_type: Struct,
) -> dict[str, Any]:
    """Remove what the applier owned last time, does not send now, and nobody else owns.

    Containers the removal empties are left as ``None`` (structured-merge-diff's nulls): the
    ownership changes are computed with them, the stored object without (:func:`_without_nulls`).
    """
    if not last:
        return merged
    everyone: FieldSet | None = None
    for state in managed.values():
        everyone = fieldsets.union(everyone, state.fields)
    everyone = structured.ensure_named_fields_are_members(everyone, field_type)
    last = structured.ensure_named_fields_are_members(last, field_type)
    pruned = structured.remove_items(merged, last, field_type)
    merged_set = structured.ensure_named_fields_are_members(
        structured.to_field_set(merged, field_type), field_type
    )
    pruned_set = structured.ensure_named_fields_are_members(
        structured.to_field_set(pruned, field_type), field_type
    )
    pruned = structured.remove_items(
        merged, fieldsets.difference(merged_set, fieldsets.union(pruned_set, everyone)), field_type
    )
    pruned_set = structured.ensure_named_fields_are_members(
        structured.to_field_set(pruned, field_type), field_type
    )
    dangling = fieldsets.intersection(fieldsets.difference(merged_set, pruned_set), last)
    return structured.remove_items(merged, dangling, field_type)


def record_apply(
    *,
    live: dict[str, Any] | None,
    config: dict[str, Any],
    scope: FieldScope,
    force: bool,
) -> tuple[dict[str, Any], list[dict[str, Any]], bool]:
    """Merge ``config`` into ``live`` (None: the object does not exist yet) as ``scope.manager``.

    Returns (the new object, its managedFields, whether the object itself changed). Raises the
    409 of :func:`conflict_error`, or a 500 for a configuration that does not fit the kind's types.
    """
    current = live or {}
    managed = _decode(current.get("metadata", {}).get("managedFields") or []) or {}
    live_object = {
        **current,
        "metadata": {k: v for k, v in current.get("metadata", {}).items() if k != "managedFields"},
    }
    if not managed and live is not None:
        # an object nobody tracked yet: what it has becomes "before-first-apply"'s first
        before = ("before-first-apply", "Update", scope.api_version, scope.subresource)
        _take(managed, None, live_object, before, scope)
    try:
        # unstripped while pruning (it keeps metadata.name owned, hence metadata); stripped at the end
        applied = scope.owned(structured.to_field_set(config, scope.field_type, strict=True))
        merged = structured.merge(live_object, config, scope.field_type)
        identifier = (scope.manager, "Apply", "", scope.subresource)
        previous = managed.get(identifier)
        last = previous.fields if previous is not None else None
        state = _Managed(
            fields=applied,
            time=previous.time if previous is not None else None,
            api_version=scope.api_version,
            entry=previous.entry if previous is not None else None,
        )
        managed[identifier] = state
        merged = _prune(merged, managed, last, scope.field_type)
        added, modified, removed = _changes(live_object if live is not None else None, merged, scope)
    except structured.TypingError as exc:
        raw_meta = config.get("metadata")
        meta: dict[str, Any] = raw_meta if isinstance(raw_meta, dict) else {}
        group_version = scope.api_version if "/" in scope.api_version else f"/{scope.api_version}"
        raise StatusError(
            500,
            "",
            f"failed to create typed patch object ({meta.get('namespace') or ''}/{meta.get('name') or ''}; "
            f"{group_version}, Kind={config.get('kind', '')}): {exc}",
        ) from exc
    taken = fieldsets.union(added, modified)
    conflicts = {
        other: contested
        for other, owner in managed.items()
        if other != identifier and (contested := fieldsets.intersection(owner.fields, taken)) is not None
    }
    if conflicts and not force:
        raise conflict_error(conflicts)
    for other, contested in conflicts.items():
        _set(managed[other], fieldsets.difference(managed[other].fields, contested))
    for other, owner in managed.items():
        if other != identifier and removed is not None:
            _set(owner, fieldsets.difference(owner.fields, removed))
    state.fields = fieldsets.difference(state.fields, _STRIPPED)
    if previous is not None and previous.fields == state.fields:
        state.fields, state.ordered = previous.fields, previous.ordered
    state.changed = (
        previous is None or state.fields is not previous.fields or previous.api_version != scope.api_version
    )
    _forget(managed, None)
    owned: FieldSet | None = None
    for owner in managed.values():
        owned = fieldsets.union(owned, owner.fields)
    merged = _without_nulls(merged, owned, custom=scope.custom)
    object_changed = merged != live_object
    if object_changed and identifier in managed:
        managed[identifier].time = scope.timestamp
        managed[identifier].changed = True
    return merged, _encode(managed, custom=scope.custom), object_changed
