"""Pod validation: what kube-apiserver 1.36 lets a create and an update of a Pod do.

A Pod needs containers. Once created its spec is fixed but for container and init container
``image``, ``activeDeadlineSeconds``, additions to ``tolerations`` and a negative
``terminationGracePeriodSeconds`` set to 1 (``ValidatePodUpdate``): adding or removing a container is
``spec.containers: Forbidden: pod updates may not add or remove containers``, any other change is
``spec: Forbidden: pod updates may not change fields other than ...`` followed by a diff. kube prints
that diff with Go's ``cmp.Diff`` of its internal structs; the devcluster prints the changed JSON
paths instead (the message up to the diff is kube's). Status writes are not checked here.
"""

from __future__ import annotations

from typing import Any

import orjson

from devcluster.apiserver.errors import Cause
from devcluster.apiserver.validation.objectmeta import field_forbidden, field_required

__all__ = ["POD_SPEC_UPDATE_FORBIDDEN", "validate_pod"]

POD_SPEC_UPDATE_FORBIDDEN = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions "
    "to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was "
    "previously negative)"
)
_CONTAINER_LISTS = ("containers", "initContainers")


def _spec(pod: dict[str, Any]) -> dict[str, Any]:
    spec = pod.get("spec")
    return spec if isinstance(spec, dict) else {}


def _containers(spec: dict[str, Any], key: str) -> list[Any]:
    value = spec.get(key)
    return value if isinstance(value, list) else []


def _mutable_taken_from(new: dict[str, Any], old: dict[str, Any]) -> dict[str, Any]:
    """``new`` with what an update may change set to ``new``'s values on a copy of ``old``."""
    munged: dict[str, Any] = orjson.loads(orjson.dumps(old))
    for key in _CONTAINER_LISTS:
        for target, source in zip(_containers(munged, key), _containers(new, key), strict=False):
            if isinstance(target, dict) and isinstance(source, dict):
                target["image"] = source.get("image")
    for key in ("activeDeadlineSeconds",):
        if key in new:
            munged[key] = new[key]
        else:
            munged.pop(key, None)
    old_tolerations = _containers(old, "tolerations")
    new_tolerations = _containers(new, "tolerations")
    if all(t in new_tolerations for t in old_tolerations):
        munged["tolerations"] = new_tolerations
    grace, old_grace = new.get("terminationGracePeriodSeconds"), old.get("terminationGracePeriodSeconds")
    if isinstance(old_grace, int) and old_grace < 0 and grace == 1:
        munged["terminationGracePeriodSeconds"] = 1
    return munged


def _changed_paths(old: Any, new: Any, path: str) -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[str] = []
        for key in sorted(set(old) | set(new), key=str):
            out += _changed_paths(old.get(key), new.get(key), f"{path}.{key}")
        return out
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [
            p
            for i, (a, b) in enumerate(zip(old, new, strict=True))
            for p in _changed_paths(a, b, f"{path}[{i}]")
        ]
    return (
        []
        if old == new
        else [f"-  {path}: {orjson.dumps(old).decode()}\n+  {path}: {orjson.dumps(new).decode()}"]
    )


def validate_pod(pod: dict[str, Any], old: dict[str, Any] | None) -> list[Cause]:
    """Causes for a create (``old`` None) or a main-resource update of a Pod."""
    spec = _spec(pod)
    if old is None:
        return [] if _containers(spec, "containers") else [field_required("spec.containers")]
    old_spec = _spec(old)
    for key in _CONTAINER_LISTS:
        if len(_containers(spec, key)) != len(_containers(old_spec, key)):
            return [field_forbidden(f"spec.{key}", "pod updates may not add or remove containers")]
    munged = _mutable_taken_from(spec, old_spec)
    if munged == spec:
        return []
    diff = "\n".join(_changed_paths(munged, spec, "spec"))
    return [field_forbidden("spec", f"{POD_SPEC_UPDATE_FORBIDDEN}\n{diff}\n")]
