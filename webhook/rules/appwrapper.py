"""The AppWrapper operator's admission rules (``internal/webhook/appwrapper_webhook.go``), on raw dicts.

Kueue validates an AppWrapper like any job (``webhook.rules.validation``); the AppWrapper operator's own
webhook adds rules about what is wrapped, which kueue-bridge applies in the same ``/validate`` call.
On **create**, for every component ``spec.components[i]``, with the operator's paths and messages:

1. the template must decode as an object with ``apiVersion`` and ``kind`` ("failed to decode as JSON");
2. no nested AppWrappers ("Nested AppWrappers are forbidden");
3. no object in another namespace ("AppWrappers cannot create objects in other namespaces");
4. the requesting user may create the wrapped kind in the namespace: a SubjectAccessReview per
   component, made by the caller (it needs the API server) and passed in as ``access``
   ("User <name> is not authorized to create <resource> in <namespace>"; a failed review is an
   ``Internal error``: fail closed); a kind the API server does not serve is denied too (our
   addition: the operator admits it and fails at creation);
5. every declared pod set names a path (``podspec must specify path``) that leads to a pod template
   ("path does not refer to a v1.PodSpecTemplate: <why>", with AppWrapper's path walker's own texts);
6. for the kinds AppWrapper infers pod sets for, declared pod sets must match the inferred ones
   (same count, every inferred path, same replicas; no duplicate paths);
7. 1 to 8 pod sets in all (a Kueue Workload's limit).

On **create** the mutating webhook also stamps the requesting user's name and UID as the labels
``workload.codeflare.dev/user`` / ``workload.codeflare.dev/userid`` (sanitised as AppWrapper
does; its values win over the user's), :func:`stamp_user_labels`.

On **update** everything the create rules looked at is immutable ("attempt to change immutable
field"): the number of components, each template, each declared pod set's path and replicas, the
user-identity labels and ``spec.managedBy``. ``suspend`` and ``podSetInfos`` stay mutable: Kueue
writes them.

Known difference: pod specs are checked for shape (a ``spec`` object), not decoded field by field
into a typed ``PodSpec`` as Go's converter does; inference errors use our path messages.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from shared.frameworks.appwrapper import AppWrapperAdapter, ResolvedPodSet
from shared.frameworks.base import FORBIDDEN, INVALID, REQUIRED, AdapterError, FieldError
from shared.frameworks.builtin_kinds import APPWRAPPER
from shared.frameworks.strconv import GoParseError, atoi
from shared.jsontree import copy_json

__all__ = [
    "MAX_POD_SETS",
    "USER_ID_LABEL",
    "USER_NAME_LABEL",
    "WrappedKind",
    "not_authorized",
    "not_served",
    "sanitize_label",
    "stamp_user_labels",
    "validate_appwrapper_create",
    "validate_appwrapper_update",
    "wrapped_kinds",
]

MAX_POD_SETS: Final = 8
USER_NAME_LABEL: Final = "workload.codeflare.dev/user"
USER_ID_LABEL: Final = "workload.codeflare.dev/userid"
IMMUTABLE: Final = "attempt to change immutable field"
_COMPONENTS: Final = "spec.components"
_TEMPLATE: Final = "template"


class PathError(ValueError):
    """``str()`` is AppWrapper's ``getValueAtPath`` error text."""


def _value_at_path(obj: Any, path: str) -> Any:
    """AppWrapper's ``getValueAtPath``: ``template`` is the object itself, then ``.key`` and ``[i]``."""
    processed = _TEMPLATE
    if not path.startswith(processed):
        raise PathError("first element of the path must be 'template'")
    remaining = path[len(processed) :]
    cursor = obj
    while remaining:
        if remaining.startswith("["):
            end = remaining.find("]")
            if end < 0:
                raise PathError(f"at path position '{processed}' invalid array index '{remaining}'")
            try:
                index = atoi(remaining[1:end])
            except GoParseError:
                raise PathError(
                    f"at path position '{processed}' invalid index expression '{remaining[1:end]}'"
                ) from None
            if not isinstance(cursor, list):
                raise PathError(f"at path position '{processed}' found non-array value")
            if index < 0 or index >= len(cursor):
                raise PathError(f"at path position '{processed}' out of bounds index '{index}'")
            cursor = cursor[index]
            processed += remaining[:end]
            remaining = remaining[end + 1 :]
        elif remaining.startswith("."):
            remaining = remaining[1:]
            processed += "."
            end = len(remaining)
            dot = remaining.find(".")
            if dot > 0:
                end = dot
            bracket = remaining.find("[")
            if 0 < bracket < end:
                end = bracket
            key = remaining[:end]
            if not isinstance(cursor, dict):
                raise PathError(f"at path position '{processed}' non-map value")
            if key not in cursor:
                raise PathError(f"at path position '{processed}' missing field '{key}'")
            cursor = cursor[key]
            remaining = remaining[len(key) :]
            processed += key
        else:
            raise PathError(f"at path position '{processed}' invalid path element '{remaining}'")
    return cursor


def _pod_template_problem(obj: Any, path: str) -> str | None:
    """Why ``path`` is not a pod template in ``obj`` (AppWrapper's ``GetPodTemplateSpec``), or ``None``."""
    try:
        value = _value_at_path(obj, path)
    except PathError as exc:
        return str(exc)
    if not isinstance(value, dict):
        return f"at path position '{path}' non-map value"
    if not isinstance(value.get("spec"), dict):
        return f"content at {path} does not contain a spec"
    return None


@dataclass(frozen=True)
class WrappedKind:
    """What a SubjectAccessReview asks about for component ``index``."""

    index: int
    api_version: str
    kind: str

    @property
    def path(self) -> str:
        return f"{_COMPONENTS}[{self.index}].{_TEMPLATE}"


def _template(component: Any) -> dict[str, Any] | None:
    template = component.get(_TEMPLATE) if isinstance(component, dict) else None
    if not isinstance(template, dict):
        return None
    if not isinstance(template.get("apiVersion"), str) or not template["apiVersion"]:
        return None
    if not isinstance(template.get("kind"), str) or not template["kind"]:
        return None
    return template


def _components(obj: Mapping[str, Any]) -> list[Any]:
    components = (obj.get("spec") or {}).get("components")
    return components if isinstance(components, list) else []


def wrapped_kinds(obj: Mapping[str, Any]) -> list[WrappedKind]:
    """Every component whose template decodes: what the user must be allowed to create."""
    found: list[WrappedKind] = []
    for index, component in enumerate(_components(obj)):
        template = _template(component)
        if template is not None:
            found.append(WrappedKind(index, template["apiVersion"], template["kind"]))
    return found


def not_authorized(wrapped: WrappedKind, *, user: str, resource: str, namespace: str) -> FieldError:
    """The operator's denial for a SubjectAccessReview that was not allowed."""
    return FieldError(
        wrapped.path, FORBIDDEN, f"User {user} is not authorized to create {resource} in {namespace}"
    )


def not_served(wrapped: WrappedKind) -> FieldError:
    """kueue-bridge's denial of a component whose kind the API server does not serve."""
    return FieldError(
        f"{wrapped.path}.kind",
        INVALID,
        f"no resource is served for {wrapped.api_version}, Kind={wrapped.kind}; "
        "is its CustomResourceDefinition installed?",
        wrapped.kind,
    )


_LABEL_UNSAFE: Final = re.compile(r"[^-_.\w]", re.ASCII)


def sanitize_label(value: str) -> str:
    """AppWrapper's ``SanitizeLabel``: at most 63 characters, others than ``-_.`` and ASCII
    alphanumerics replaced by ``_``, ``-_.`` trimmed from both ends."""
    truncated = value.encode()[:63].decode(errors="replace")  # Go cuts bytes, not characters
    return _LABEL_UNSAFE.sub("_", truncated).strip("-_.")


def stamp_user_labels(obj: dict[str, Any], *, user_info: Mapping[str, Any]) -> None:
    """The operator's defaulting on create: the requesting user's name and UID as labels; these
    values win over any the user wrote, so they cannot be spoofed (and updates may not change them)."""
    metadata = obj.setdefault("metadata", {})
    labels = metadata.get("labels")
    if not isinstance(labels, dict):
        labels = metadata["labels"] = {}
    labels[USER_NAME_LABEL] = sanitize_label(str(user_info.get("username") or ""))
    labels[USER_ID_LABEL] = sanitize_label(str(user_info.get("uid") or ""))


def _replicas(pod_set: Any) -> Any:
    replicas = pod_set.get("replicas") if isinstance(pod_set, dict) else None
    return 1 if replicas is None else replicas


def _pod_sets_problem(declared: list[Any], inferred: list[ResolvedPodSet]) -> str | None:
    """AppWrapper's ``ValidatePodSets``."""
    if not declared:
        return None
    by_path: dict[Any, Any] = {}
    for pod_set in declared:
        path = pod_set.get("path") if isinstance(pod_set, dict) else None
        if path in by_path:
            return f"multiple DeclaredPodSets with path '{path}'"
        by_path[path] = pod_set
    if inferred:
        if len(inferred) != len(declared):
            return f"DeclaredPodSet count {len(declared)} differs from inferred count {len(inferred)}"
        for pod_set in inferred:
            match = by_path.get(pod_set.path)
            if match is None:
                return f"PodSet with path '{pod_set.path}' is missing"
            if _replicas(match) != pod_set.replicas:
                return (
                    f"replica count {_replicas(match)} differs from inferred count {pod_set.replicas} "
                    f"for PodSet at path position '{pod_set.path}'"
                )
    return None


def validate_appwrapper_create(
    obj: Mapping[str, Any], *, access: Mapping[int, FieldError] | None = None
) -> list[FieldError]:
    """The operator's create rules (module doc); ``access``: component index -> SAR denial."""
    access = access or {}
    errors: list[FieldError] = []
    namespace = str((obj.get("metadata") or {}).get("namespace") or "")
    components = _components(obj)
    adapter = AppWrapperAdapter(copy_json(dict(obj)))
    pod_set_count = 0
    for index, component in enumerate(components):
        path = f"{_COMPONENTS}[{index}]"
        template = _template(component)
        if template is None:
            bad = component.get(_TEMPLATE) if isinstance(component, dict) else component
            errors.append(FieldError(f"{path}.{_TEMPLATE}", INVALID, "failed to decode as JSON", bad))
            continue
        api_version, kind = template["apiVersion"], template["kind"]
        if (api_version, kind) == (APPWRAPPER.gvk.api_version, APPWRAPPER.gvk.kind):
            errors.append(FieldError(f"{path}.{_TEMPLATE}", FORBIDDEN, "Nested AppWrappers are forbidden"))
        template_namespace = (
            (template.get("metadata") or {}).get("namespace")
            if isinstance(template.get("metadata"), dict)
            else None
        )
        if template_namespace and template_namespace != namespace:
            errors.append(
                FieldError(
                    f"{path}.{_TEMPLATE}.metadata.namespace",
                    FORBIDDEN,
                    "AppWrappers cannot create objects in other namespaces",
                )
            )
        if index in access:
            errors.append(access[index])
        declared = component.get("podSets") or []
        declared = declared if isinstance(declared, list) else []
        for position, pod_set in enumerate(declared):
            pod_set_path = f"{path}.podSets[{position}].path"
            where = pod_set.get("path") if isinstance(pod_set, dict) else None
            where = where if isinstance(where, str) else ""
            if not where:
                errors.append(FieldError(pod_set_path, REQUIRED, "podspec must specify path"))
            problem = _pod_template_problem(template, where)
            if problem is not None:
                errors.append(
                    FieldError(
                        pod_set_path,
                        INVALID,
                        f"path does not refer to a v1.PodSpecTemplate: {problem}",
                        where,
                    )
                )
        inference_problem: str | None
        try:
            inferred = adapter.inferred_pod_sets(index)
        except AdapterError as exc:
            inferred, inference_problem = [], str(exc)
        else:
            inference_problem = next(
                (
                    f"{pod_set.path} does not refer to a v1.PodSpecTemplate: {problem}"
                    for pod_set in inferred
                    if (problem := _pod_template_problem(template, pod_set.path)) is not None
                ),
                None,
            )
        if inference_problem is not None:
            errors.append(
                FieldError(
                    f"{path}.{_TEMPLATE}", INVALID, f"error inferring PodSets: {inference_problem}", template
                )
            )
            continue
        pod_set_count += max(len(declared), len(inferred))
        problem = _pod_sets_problem(declared, inferred)
        if problem is not None:
            errors.append(FieldError(f"{path}.podSets", INVALID, problem, declared))
    if pod_set_count == 0:
        errors.append(FieldError(_COMPONENTS, INVALID, "components contains no podspecs", components))
    if pod_set_count > MAX_POD_SETS:
        errors.append(
            FieldError(
                _COMPONENTS,
                INVALID,
                f"components contains {pod_set_count} podspecs; at most {MAX_POD_SETS} are allowed",
                components,
            )
        )
    return errors


def _label(obj: Mapping[str, Any], key: str) -> Any:
    labels = (obj.get("metadata") or {}).get("labels")
    return labels.get(key, "") if isinstance(labels, dict) else ""


def validate_appwrapper_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[FieldError]:
    """The operator's update rules: what create validated may not change (module doc)."""
    old_components, new_components = _components(old), _components(new)
    if len(old_components) != len(new_components):
        return [FieldError(_COMPONENTS, FORBIDDEN, IMMUTABLE)]
    errors: list[FieldError] = []
    for index, (before, after) in enumerate(zip(old_components, new_components, strict=True)):
        path = f"{_COMPONENTS}[{index}]"
        before = before if isinstance(before, dict) else {}
        after = after if isinstance(after, dict) else {}
        if before.get(_TEMPLATE) != after.get(_TEMPLATE):
            errors.append(FieldError(f"{path}.{_TEMPLATE}.raw", FORBIDDEN, IMMUTABLE))
        old_sets = before.get("podSets") or []
        new_sets = after.get("podSets") or []
        if not isinstance(old_sets, list) or not isinstance(new_sets, list) or len(old_sets) != len(new_sets):
            errors.append(FieldError(f"{path}.podsets", FORBIDDEN, IMMUTABLE))
            continue
        for position, (old_set, new_set) in enumerate(zip(old_sets, new_sets, strict=True)):
            if _replicas(old_set) != _replicas(new_set):
                errors.append(FieldError(f"{path}.podsets[{position}].replicas", FORBIDDEN, IMMUTABLE))
            old_path = old_set.get("path") if isinstance(old_set, dict) else None
            new_path = new_set.get("path") if isinstance(new_set, dict) else None
            if old_path != new_path:
                errors.append(FieldError(f"{path}.podsets[{position}].path", FORBIDDEN, IMMUTABLE))
    for label in (USER_NAME_LABEL, USER_ID_LABEL):
        if _label(old, label) != _label(new, label):
            errors.append(FieldError(f"metadata.labels[{label}]", FORBIDDEN, IMMUTABLE))
    if (old.get("spec") or {}).get("managedBy") != (new.get("spec") or {}).get("managedBy"):
        errors.append(FieldError("spec.managedBy", FORBIDDEN, IMMUTABLE))
    return errors
