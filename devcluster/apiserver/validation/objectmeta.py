"""ObjectMeta validation with kube-apiserver's rules and message texts.

Causes are :class:`~devcluster.apiserver.errors.Cause` values whose ``message`` is what apimachinery's
``field.Error.ErrorBody()`` prints (``Invalid value: "x": <detail>``), so the 422 ``Status`` a client
receives reads exactly like the real one. The bad value is rendered as current apimachinery does:
numbers and booleans plain, strings quoted (JSON quoting, which equals Go's ``%q`` for printable
text), anything else as ``json.Marshal`` writes it (compact, map keys sorted, ``<``/``>``/``&``
escaped), ``null`` for nil; :data:`OMIT` leaves it out. Metadata rules live here, batch/v1 Job rules
in :mod:`devcluster.apiserver.validation.job`; custom resources are validated by their structural
schema (:mod:`devcluster.apiserver.customresources.definitions`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

import orjson

from devcluster.apiserver.errors import Cause
from shared.kube import GroupVersionKind
from shared.validation_k8s import is_dns1123_label, is_dns1123_subdomain, is_label_key, is_label_value

__all__ = [
    "OMIT",
    "field_duplicate",
    "field_forbidden",
    "field_invalid",
    "field_not_supported",
    "field_required",
    "field_too_long",
    "go_value",
    "validate_object_meta",
]

_TOTAL_ANNOTATION_BYTES = 256 * 1024
#: ``field.OmitValueType{}``: the cause prints no bad value (``Invalid value: <detail>``)
OMIT: Final = object()
_HTML_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"}


def go_value(value: Any) -> str:
    """How ``field.Error.ErrorBody()`` prints a bad value (see the module docstring)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str):
        return orjson.dumps(value).decode()
    encoded = orjson.dumps(value, option=orjson.OPT_SORT_KEYS, default=str).decode()
    for char, escape in _HTML_ESCAPES.items():
        encoded = encoded.replace(char, escape)
    return encoded


def _body(kind: str, value: Any, detail: str) -> str:
    body = kind if value is OMIT else f"{kind}: {go_value(value)}"
    return f"{body}: {detail}" if detail else body


def field_invalid(path: str, value: Any, detail: str) -> Cause:
    return Cause(path, "FieldValueInvalid", _body("Invalid value", value, detail))


def field_not_supported(path: str, value: Any, supported: Sequence[str]) -> Cause:
    detail = "supported values: " + ", ".join(orjson.dumps(v).decode() for v in supported)
    return Cause(path, "FieldValueNotSupported", _body("Unsupported value", value, detail))


def field_required(path: str, detail: str = "") -> Cause:
    return Cause(path, "FieldValueRequired", f"Required value: {detail}" if detail else "Required value")


def field_duplicate(path: str, value: Any) -> Cause:
    return Cause(path, "FieldValueDuplicate", _body("Duplicate value", value, ""))


def field_forbidden(path: str, detail: str) -> Cause:
    return Cause(path, "FieldValueForbidden", f"Forbidden: {detail}")


def field_too_long(path: str, max_length: int) -> Cause:
    unit = "byte" if max_length == 1 else "bytes"
    return Cause(path, "FieldValueTooLong", f"Too long: may not be more than {max_length} {unit}")


def _name_errors(name: str, rule: str) -> list[str]:
    if rule == "label":
        return is_dns1123_label(name)
    if rule == "path":
        return [f"may not contain '{c}'" for c in ("/", "%") if c in name] + (
            [f"may not be '{name}'"] if name in {".", ".."} else []
        )
    return is_dns1123_subdomain(name)


def validate_object_meta(
    meta: Any, *, namespaced: bool, name_rule: str, old: dict[str, Any] | None = None
) -> list[Cause]:
    """Causes for a create (``old`` None) or update of ``metadata``."""
    if not isinstance(meta, dict):
        return [field_invalid("metadata", meta, "must be an object")]
    causes: list[Cause] = []
    name = meta.get("name")
    if not name:
        if old is None:
            causes.append(field_required("metadata.name", "name or generateName is required"))
    elif not isinstance(name, str):
        causes.append(field_invalid("metadata.name", name, "must be a string"))
    else:
        causes.extend(field_invalid("metadata.name", name, e) for e in _name_errors(name, name_rule))
    generate_name = meta.get("generateName")
    if old is None and generate_name and not name and isinstance(generate_name, str):
        trimmed = generate_name.rstrip("-") or generate_name
        causes.extend(
            field_invalid("metadata.generateName", generate_name, e) for e in _name_errors(trimmed, name_rule)
        )
    namespace = meta.get("namespace")
    if namespaced and not namespace:
        causes.append(field_required("metadata.namespace"))
    elif not namespaced and namespace:
        causes.append(field_forbidden("metadata.namespace", "not allowed on this type"))
    labels = meta.get("labels")
    if labels is not None:
        if not isinstance(labels, dict):
            causes.append(field_invalid("metadata.labels", labels, "must be a map of strings"))
        else:
            for key, value in labels.items():
                causes.extend(field_invalid("metadata.labels", key, e) for e in is_label_key(key))
                if not isinstance(value, str):
                    causes.append(field_invalid(f"metadata.labels[{key}]", value, "must be a string"))
                else:
                    causes.extend(field_invalid("metadata.labels", value, e) for e in is_label_value(value))
    annotations = meta.get("annotations")
    if annotations is not None:
        if not isinstance(annotations, dict):
            causes.append(field_invalid("metadata.annotations", annotations, "must be a map of strings"))
        else:
            total = 0
            for key, value in annotations.items():
                causes.extend(
                    field_invalid("metadata.annotations", key, e) for e in is_label_key(key.lower())
                )
                if not isinstance(value, str):
                    causes.append(field_invalid(f"metadata.annotations[{key}]", value, "must be a string"))
                    continue
                total += len(key) + len(value)
            if total > _TOTAL_ANNOTATION_BYTES:
                causes.append(field_too_long("metadata.annotations", _TOTAL_ANNOTATION_BYTES))
    finalizers = meta.get("finalizers")
    if finalizers is not None:
        if not isinstance(finalizers, list) or not all(isinstance(f, str) for f in finalizers):
            causes.append(field_invalid("metadata.finalizers", finalizers, "must be a list of strings"))
        else:
            for index, finalizer in enumerate(finalizers):
                errors = is_label_key(finalizer)
                causes.extend(field_invalid(f"metadata.finalizers[{index}]", finalizer, e) for e in errors)
            if old is not None and old["metadata"].get("deletionTimestamp"):
                added = set(finalizers) - set(old["metadata"].get("finalizers") or [])
                if added:
                    causes.append(
                        field_forbidden(
                            "metadata.finalizers",
                            "no new finalizers can be added if the object is being deleted, "
                            f"found new finalizers {sorted(added)!r}".replace("'", '"'),
                        )
                    )
    owner_refs = meta.get("ownerReferences")
    if owner_refs is not None:
        if not isinstance(owner_refs, list):
            causes.append(field_invalid("metadata.ownerReferences", owner_refs, "must be a list"))
        else:
            for ref in owner_refs:
                # kube's validateOwnerReference: paths without the index, "version" for apiVersion
                path = "metadata.ownerReferences"
                if not isinstance(ref, dict):
                    causes.append(field_invalid(path, ref, "must be an object"))
                    continue
                api_version = str(ref.get("apiVersion") or "")
                if not GroupVersionKind.from_api_version(api_version, "").version:
                    causes.append(
                        field_invalid(f"{path}.apiVersion", api_version, "version must not be empty")
                    )
                for key in ("kind", "name", "uid"):
                    if not ref.get(key):
                        causes.append(
                            field_invalid(f"{path}.{key}", str(ref.get(key) or ""), "must not be empty")
                        )
            controllers = sum(1 for ref in owner_refs if isinstance(ref, dict) and ref.get("controller"))
            if controllers > 1:
                causes.append(
                    field_invalid(
                        "metadata.ownerReferences",
                        owner_refs,
                        "Only one reference can have Controller set to true",
                    )
                )
    if old is not None:
        old_meta = old["metadata"]
        if meta.get("uid") and meta["uid"] != old_meta.get("uid"):
            causes.append(field_invalid("metadata.uid", meta["uid"], "field is immutable"))
        if name and name != old_meta.get("name"):
            causes.append(field_invalid("metadata.name", name, "field is immutable"))
    return causes
