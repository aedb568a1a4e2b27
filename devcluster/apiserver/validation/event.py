"""Event validation, core ``v1`` and ``events.k8s.io/v1``, with kube-apiserver's rules and texts.

Both APIs store one core Event (:mod:`devcluster.apiserver.registry.events`), and validation runs on that
stored shape, so field paths are the core names in either API (``involvedObject.namespace``,
``message``, ``count``), as kube reports them (``pkg/apis/core/validation/events.go``); only the
reporting controller is named as the request's API names it (``reportingComponent`` in core v1,
``reportingController`` in events.k8s.io).

* Every write gets the legacy rules: without ``eventTime``, ``involvedObject.namespace`` must equal
  the Event's namespace (or be empty in ``default``); with it, an empty ``involvedObject.namespace``
  is only allowed in ``default`` and ``kube-system``, and the reporting controller (a qualified
  name), ``reportingInstance``, ``action`` and ``reason`` are required with their length limits.
* Writes through ``events.k8s.io`` (``strict``) also need a DNS-subdomain name, ``eventTime``, a
  ``type`` of Normal or Warning, a valid ``series``, and none of the deprecated fields; on update,
  what an Event says is immutable (involvedObject, reason, message, type, action, eventTime, ...).
  Core v1 writes are not held to these, for old clients.

Core v1 Events are named by the generic path-segment rule only (the resource type's ``name_rule``).
"""

from __future__ import annotations

from typing import Any

import orjson

from devcluster.apiserver.errors import Cause
from devcluster.apiserver.validation.objectmeta import field_invalid, field_required
from shared.validation_k8s import is_dns1123_subdomain, is_label_key

__all__ = ["EVENTS_GROUP", "validate_event"]

EVENTS_GROUP = "events.k8s.io"
_LENGTH_LIMIT = 128
_NOTE_LENGTH_LIMIT = 1024
_TYPES = ("Normal", "Warning")
#: Go's field order of the internal structs kube prints in an immutability error
_OBJECT_REFERENCE = (
    ("kind", "Kind"),
    ("namespace", "Namespace"),
    ("name", "Name"),
    ("uid", "UID"),
    ("apiVersion", "APIVersion"),
    ("resourceVersion", "ResourceVersion"),
    ("fieldPath", "FieldPath"),
)
_SOURCE = (("component", "Component"), ("host", "Host"))
#: (stored field, reported path, Go struct fields or None for a scalar), in the order kube checks
#: them (``reason`` twice, as kube does)
_IMMUTABLE: tuple[tuple[str, str, tuple[tuple[str, str], ...] | None], ...] = (
    ("involvedObject", "involvedObject", _OBJECT_REFERENCE),
    ("reason", "reason", None),
    ("message", "message", None),
    ("source", "source", _SOURCE),
    ("firstTimestamp", "firstTimestamp", None),
    ("lastTimestamp", "lastTimestamp", None),
    ("count", "count", None),
    ("reason", "reason", None),
    ("type", "type", None),
    ("eventTime", "eventTime", None),
    ("action", "action", None),
    ("related", "related", _OBJECT_REFERENCE),
    ("reportingComponent", "reportingController", None),
    ("reportingInstance", "reportingInstance", None),
)
_ZERO: dict[str, Any] = {"count": 0, "firstTimestamp": None, "lastTimestamp": None, "eventTime": None}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _go_struct(value: Any, fields: tuple[tuple[str, str], ...]) -> Any:
    """The internal Go struct as ``json.Marshal`` prints it (no tags: Go names, declaration order)."""
    if not isinstance(value, dict):
        value = {}
    return {go: value.get(json_name, "") for json_name, go in fields}


def _legacy(event: dict[str, Any], *, strict: bool) -> list[Cause]:
    causes: list[Cause] = []
    namespace = _text(event["metadata"].get("namespace"))
    involved = event.get("involvedObject")
    involved_namespace = _text(involved.get("namespace")) if isinstance(involved, dict) else ""
    mismatch = field_invalid("involvedObject.namespace", involved_namespace, "does not match event.namespace")
    if not event.get("eventTime"):
        if not involved_namespace:
            if namespace not in ("", "default"):
                causes.append(mismatch)
        elif namespace != involved_namespace:
            causes.append(mismatch)
    else:
        if not involved_namespace and namespace not in ("default", "kube-system"):
            causes.append(mismatch)
        controller_field = "reportingController" if strict else "reportingComponent"
        controller = _text(event.get("reportingComponent"))
        if not controller:
            causes.append(field_required(controller_field))
        causes.extend(field_invalid(controller_field, controller, e) for e in is_label_key(controller))
        for name in ("reportingInstance", "action", "reason"):
            value = _text(event.get(name))
            if not value:
                causes.append(field_required(name))
            if len(value) > _LENGTH_LIMIT:
                causes.append(field_invalid(name, "", f"can have at most {_LENGTH_LIMIT} characters"))
        if len(_text(event.get("message"))) > _NOTE_LENGTH_LIMIT:
            causes.append(field_invalid("message", "", f"can have at most {_NOTE_LENGTH_LIMIT} characters"))
    causes.extend(field_invalid("namespace", namespace, e) for e in is_dns1123_subdomain(namespace))
    return causes


def _series(event: dict[str, Any]) -> list[Cause]:
    series = event.get("series")
    if not isinstance(series, dict):
        return []
    causes: list[Cause] = []
    count = series.get("count")
    if not isinstance(count, int) or count < 2:
        causes.append(field_invalid("series.count", "", "should be at least 2"))
    if not series.get("lastObservedTime"):
        causes.append(field_required("series.lastObservedTime"))
    return causes


def _create(event: dict[str, Any]) -> list[Cause]:
    name = _text(event["metadata"].get("name"))
    causes = [field_invalid("metadata.name", name, e) for e in is_dns1123_subdomain(name)] if name else []
    causes += _series(event)
    if not event.get("eventTime"):
        causes.append(field_required("eventTime"))
    event_type = _text(event.get("type"))
    if event_type not in _TYPES:
        causes.append(field_invalid("type", "", f"has invalid value: {event_type}"))
    for field in ("firstTimestamp", "lastTimestamp"):
        if event.get(field):
            causes.append(field_invalid(field, "", "needs to be unset"))
    if event.get("count"):
        causes.append(field_invalid("count", "", "needs to be unset"))
    source = event.get("source")
    if isinstance(source, dict) and (source.get("component") or source.get("host")):
        causes.append(field_invalid("source", "", "needs to be unset"))
    return causes


def _immutable(event: dict[str, Any], old: dict[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    if event.get("series") != old.get("series"):
        causes += _series(event)
    for field, path, struct in _IMMUTABLE:
        new_value, old_value = event.get(field, _ZERO.get(field, "")), old.get(field, _ZERO.get(field, ""))
        if struct is not None:
            unset = field == "related"
            new_shown = None if unset and new_value is None else _go_struct(new_value, struct)
            old_shown = None if unset and old_value is None else _go_struct(old_value, struct)
            if new_shown != old_shown:
                shown = orjson.dumps(new_shown).decode()
                causes.append(Cause(path, "FieldValueInvalid", f"Invalid value: {shown}: field is immutable"))
        elif (new_value or _ZERO.get(field, "")) != (old_value or _ZERO.get(field, "")):
            causes.append(field_invalid(path, new_value, "field is immutable"))
    return causes


def validate_event(event: dict[str, Any], old: dict[str, Any] | None, *, served_group: str) -> list[Cause]:
    """Causes for a create (``old`` None) or update of a stored-shape Event; ``served_group`` is the
    API group of the request (``events.k8s.io`` is strict, see the module docstring)."""
    strict = served_group == EVENTS_GROUP
    causes = _legacy(event, strict=strict)
    if strict:
        causes += _create(event) if old is None else _immutable(event, old)
    return causes
