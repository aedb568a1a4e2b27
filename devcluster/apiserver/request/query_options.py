"""Query parameters as kube-apiserver reads them: decoded into ``*Options``, then validated.

kube converts a request's query parameters into ``ListOptions``, ``CreateOptions``,
``UpdateOptions``, ``PatchOptions`` or ``DeleteOptions`` before it looks at the object:

* a value that does not convert is a 400 with Go's ``strconv`` text, e.g. ``limit=many`` ->
  ``strconv.ParseInt: parsing "many": invalid syntax``; a ``resourceVersion`` that is not a number
  is ``invalid resource version: resourceVersion: Invalid value: "abc": strconv.ParseUint: ...``;
* a converted but invalid one is a 422 Invalid of ``<Kind>Options.meta.k8s.io ""``: ``dryRun``
  other than ``All``, a ``fieldManager`` over 128 bytes or with unprintable characters, an unknown
  ``fieldValidation``, a ``propagationPolicy`` kube does not know, ``resourceVersionMatch`` misuse on a list
  or watch;
* booleans are true unless ``false`` or ``0`` (kube's ``Convert_Slice_string_To_bool``: even
  ``watch=maybe`` watches).

So a bad parameter is refused before a missing object is reported (a DELETE with a bad policy is a
422 even when nothing has that name).
"""

from __future__ import annotations

from typing import Any

from devcluster.apiserver.errors import Cause, bad_request, invalid
from devcluster.apiserver.fieldmanager.ownership import field_manager_causes
from devcluster.apiserver.validation.objectmeta import (
    field_forbidden,
    field_invalid,
    field_not_supported,
)

__all__ = [
    "flag",
    "integer",
    "validate_delete_options",
    "validate_list_options",
    "validate_write_options",
]

_FIELD_VALIDATION = ("Ignore", "Strict", "Warn")
_POLICIES = ("Foreground", "Background", "Orphan", "nil")


def flag(params: dict[str, str], name: str) -> bool:
    """A boolean parameter: present and not ``false``/``0`` (case-insensitive)."""
    value = params.get(name)
    return value is not None and value.lower() not in ("false", "0")


def integer(params: dict[str, str], name: str) -> int | None:
    """An int64 parameter, or the 400 ``strconv.ParseInt`` gives."""
    value = params.get(name)
    if value is None:
        return None
    try:
        return int(value, 10) if value.strip() == value else int("x")
    except ValueError:
        raise bad_request(f'strconv.ParseInt: parsing "{value}": invalid syntax') from None


def _invalid(kind: str, causes: list[Cause]) -> None:
    if causes:
        raise invalid(group="meta.k8s.io", kind=kind, name="", causes=causes)


def _dry_run(params: dict[str, str]) -> list[Cause]:
    value = params.get("dryRun")
    if value is None or value == "All":
        return []
    return [field_not_supported("dryRun", [value], ["All"])]


def _field_validation(params: dict[str, str]) -> list[Cause]:
    value = params.get("fieldValidation", "")
    return (
        []
        if value in ("", *_FIELD_VALIDATION)
        else [field_not_supported("fieldValidation", value, ("", *_FIELD_VALIDATION))]
    )


def validate_write_options(params: dict[str, str], *, method: str) -> None:
    """``CreateOptions`` (POST), ``UpdateOptions`` (PUT) or ``PatchOptions`` (PATCH). A patch's
    ``fieldManager`` and ``force`` rules are the patch verb's (:meth:`Rest.patch`), next to apply."""
    kind = {"POST": "CreateOptions", "PUT": "UpdateOptions"}.get(method, "PatchOptions")
    causes = [] if kind == "PatchOptions" else field_manager_causes(params.get("fieldManager", ""))
    causes += _dry_run(params) + _field_validation(params)
    _invalid(kind, causes)


def validate_delete_options(params: dict[str, str], options: dict[str, Any]) -> None:
    """``DeleteOptions`` from the query and the body (``gracePeriodSeconds`` must be a number)."""
    integer(params, "gracePeriodSeconds")
    causes: list[Cause] = []
    policy, orphan = options.get("propagationPolicy"), options.get("orphanDependents")
    if policy is not None and orphan is not None:
        causes.append(
            field_invalid(
                "propagationPolicy", policy, "orphanDependents and deletionPropagation cannot be both set"
            )
        )
    if policy is not None and policy not in _POLICIES[:3]:
        causes.append(field_not_supported("propagationPolicy", policy, _POLICIES))
    causes += _dry_run(params)
    _invalid("DeleteOptions", causes)


def validate_list_options(params: dict[str, str]) -> None:
    """``ListOptions`` of a list or a watch: numbers first (400), then the 422 rules."""
    integer(params, "limit")
    integer(params, "timeoutSeconds")
    version = params.get("resourceVersion", "")
    if version and not version.isdigit():
        raise bad_request(
            f'invalid resource version: resourceVersion: Invalid value: "{version}": '
            f'strconv.ParseUint: parsing "{version}": invalid syntax'
        )
    match = params.get("resourceVersionMatch", "")
    path = "resourceVersionMatch"
    causes: list[Cause] = []
    if flag(params, "watch"):
        initial = "sendInitialEvents" in params
        if initial and match != "NotOlderThan":
            causes.append(
                field_forbidden(
                    path, "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan"
                )
            )
        if match:
            if not initial:
                causes.append(
                    field_forbidden(
                        path,
                        "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                    )
                )
            if match != "NotOlderThan":
                causes.append(field_not_supported(path, match, ["NotOlderThan"]))
            if params.get("continue"):
                causes.append(
                    field_forbidden(path, "resourceVersionMatch is forbidden when continue is provided")
                )
    else:
        if match:
            if not version:
                causes.append(
                    field_forbidden(
                        path, "resourceVersionMatch is forbidden unless resourceVersion is provided"
                    )
                )
            if params.get("continue"):
                causes.append(
                    field_forbidden(path, "resourceVersionMatch is forbidden when continue is provided")
                )
            if match not in ("Exact", "NotOlderThan"):
                causes.append(field_not_supported(path, match, ["Exact", "NotOlderThan", ""]))
            if match == "Exact" and version == "0":
                causes.append(
                    field_forbidden(path, 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"')
                )
        if "sendInitialEvents" in params:
            causes.append(field_forbidden("sendInitialEvents", "sendInitialEvents is forbidden for list"))
    _invalid("ListOptions", causes)
