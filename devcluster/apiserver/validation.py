"""ObjectMeta validation with kube-apiserver's rules and message texts.

Causes are :class:`~devcluster.apiserver.errors.Cause` values whose ``message`` is what apimachinery's
``field.Error.ErrorBody()`` prints (``Invalid value: "x": <detail>``), so the 422 ``Status`` a client
receives reads exactly like the real one. Only metadata rules and the handful of per-kind rules the
project's tests depend on live here; custom resources are validated by their structural schema
(:mod:`devcluster.apiserver.crds`).
"""

from __future__ import annotations

from typing import Any

import orjson

from devcluster.apiserver.errors import Cause
from shared.validation_k8s import is_dns1123_label, is_dns1123_subdomain, is_label_key, is_label_value

__all__ = [
    "field_invalid",
    "field_required",
    "validate_object_meta",
]

_TOTAL_ANNOTATION_BYTES = 256 * 1024


def _quote(value: Any) -> str:
    if isinstance(value, str):
        return orjson.dumps(value).decode()
    return orjson.dumps(value).decode() if not isinstance(value, int | float) else str(value)


def field_invalid(path: str, value: Any, detail: str) -> Cause:
    body = f"Invalid value: {_quote(value)}"
    return Cause(path, "FieldValueInvalid", f"{body}: {detail}" if detail else body)


def field_required(path: str, detail: str = "") -> Cause:
    return Cause(path, "FieldValueRequired", f"Required value: {detail}" if detail else "Required value")


def _forbidden(path: str, detail: str) -> Cause:
    return Cause(path, "FieldValueForbidden", f"Forbidden: {detail}")


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
        causes.append(_forbidden("metadata.namespace", "not allowed on this type"))
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
                causes.append(
                    Cause(
                        "metadata.annotations",
                        "FieldValueTooLong",
                        f"Too long: may not be more than {_TOTAL_ANNOTATION_BYTES} bytes",
                    )
                )
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
                        _forbidden(
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
            for index, ref in enumerate(owner_refs):
                path = f"metadata.ownerReferences[{index}]"
                if not isinstance(ref, dict):
                    causes.append(field_invalid(path, ref, "must be an object"))
                    continue
                for key in ("apiVersion", "kind", "name", "uid"):
                    if not ref.get(key):
                        causes.append(
                            field_required(
                                f"{path}.{key}",
                                f"{key} must not be empty" if key != "uid" else "uid must not be empty",
                            )
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
