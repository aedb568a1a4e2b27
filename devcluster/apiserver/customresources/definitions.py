"""CustomResourceDefinitions: from a CRD object to a served resource type, and CR validation.

A CRD that passes validation becomes a :class:`~devcluster.apiserver.registry.resources.ResourceType` serving
every
``served`` version (storage version first... preferred order follows kube's version priority), with
its ``status``/``scale`` subresources, and its status gets ``NamesAccepted`` and ``Established``
True at once (there is no separate controller delay to wait for). Objects are stored once per
resource and served in any served version with only ``apiVersion`` rewritten (conversion strategy
None); a Webhook conversion strategy is accepted and treated the same way (documented gap).

Structural schemas are compiled once per CRD version by
``devcluster.apiserver.customresources.schema.StructuralSchema``
(written separately); :func:`compile_schema` is the seam: without that module custom resources are
stored unvalidated, never rejected.
"""

from __future__ import annotations

import importlib
from datetime import datetime
from typing import Any

from devcluster.apiserver.errors import Cause
from devcluster.apiserver.fieldmanager.fieldtypes import LazyFieldTypes
from devcluster.apiserver.registry.resources import ResourceType
from devcluster.apiserver.validation.objectmeta import field_invalid, field_required
from shared.kube.times import format_time

__all__ = [
    "CRD_CLEANUP_FINALIZER",
    "CRD_KEY",
    "compile_schema",
    "crd_status",
    "resource_type_for",
    "validate_crd",
    "validate_custom_resource",
]

CRD_KEY = ("apiextensions.k8s.io", "customresourcedefinitions")
CRD_CLEANUP_FINALIZER = "customresourcecleanup.apiextensions.k8s.io"


def compile_schema(openapi_v3_schema: dict[str, Any]) -> Any:
    """A compiled structural schema, or None when ``devcluster.apiserver.customresources.schema`` is not available."""
    try:
        module = importlib.import_module("devcluster.apiserver.customresources.schema")
    except ModuleNotFoundError:
        return None
    return module.StructuralSchema(openapi_v3_schema)


def validate_crd(crd: dict[str, Any]) -> list[Cause]:
    spec = crd.get("spec")
    if not isinstance(spec, dict):
        return [field_required("spec")]
    causes: list[Cause] = []
    group = spec.get("group")
    names: dict[str, Any] = spec["names"] if isinstance(spec.get("names"), dict) else {}
    plural, kind = names.get("plural"), names.get("kind")
    if not group:
        causes.append(field_required("spec.group"))
    if not plural:
        causes.append(field_required("spec.names.plural"))
    if not kind:
        causes.append(field_required("spec.names.kind"))
    name = crd.get("metadata", {}).get("name")
    if group and plural and name != f"{plural}.{group}":
        causes.append(field_invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    if spec.get("scope") not in {"Namespaced", "Cluster"}:
        causes.append(
            Cause(
                "spec.scope",
                "FieldValueNotSupported",
                f'Unsupported value: "{spec.get("scope")}": supported values: "Cluster", "Namespaced"',
            )
        )
    versions = spec.get("versions")
    if not isinstance(versions, list) or not versions:
        causes.append(
            field_invalid(
                "spec.versions", versions, "must have exactly one version marked as storage version"
            )
        )
    else:
        storage = [v for v in versions if isinstance(v, dict) and v.get("storage")]
        if len(storage) != 1:
            causes.append(
                field_invalid(
                    "spec.versions",
                    versions and "...",
                    "must have exactly one version marked as storage version",
                )
            )
    return causes


def resource_type_for(crd: dict[str, Any]) -> ResourceType:
    spec = crd["spec"]
    names = spec["names"]
    served = [v for v in spec["versions"] if v.get("served", True)]
    from devcluster.apiserver.registry.resources import _version_priority

    served.sort(key=lambda v: _version_priority(v["name"]))
    subresources: set[str] = set()
    schemas: dict[str, Any] = {}
    raw_schemas: dict[str, dict[str, Any]] = {}
    columns: dict[str, tuple[dict[str, Any], ...]] = {}
    for version in served:
        printer_columns = version.get("additionalPrinterColumns")
        if isinstance(printer_columns, list):
            columns[version["name"]] = tuple(c for c in printer_columns if isinstance(c, dict))
        subs = version.get("subresources") or {}
        if "status" in subs:
            subresources.add("status")  # /scale is not served (no client of ours uses it)
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        if isinstance(schema, dict):
            raw_schemas[version["name"]] = schema
            compiled = compile_schema(schema)
            if compiled is not None:
                schemas[version["name"]] = compiled
    return ResourceType(
        group=spec["group"],
        versions=tuple(v["name"] for v in served),
        plural=names["plural"],
        singular=names.get("singular") or names["kind"].lower(),
        kind=names["kind"],
        namespaced=spec["scope"] == "Namespaced",
        short_names=tuple(names.get("shortNames") or ()),
        categories=tuple(names.get("categories") or ()),
        subresources=frozenset(subresources),
        builtin=False,
        tracks_generation=True,
        schemas=schemas,
        field_types=LazyFieldTypes(raw_schemas),
        crd_uid=crd["metadata"].get("uid", ""),
        printer_columns=columns,
    )


def crd_status(crd: dict[str, Any], *, now: datetime) -> dict[str, Any]:
    """The status the apiextensions controllers converge to for an accepted CRD."""
    spec = crd["spec"]
    names = dict(spec["names"])
    names.setdefault("singular", names["kind"].lower())
    names.setdefault("listKind", names["kind"] + "List")
    stamp = format_time(now)
    old_status = crd.get("status") or {}
    stored = list(old_status.get("storedVersions") or [])
    for version in spec["versions"]:
        if version.get("storage") and version["name"] not in stored:
            stored.append(version["name"])
    return {
        "acceptedNames": names,
        "conditions": [
            {
                "type": "NamesAccepted",
                "status": "True",
                "lastTransitionTime": stamp,
                "reason": "NoConflicts",
                "message": "no conflicts found",
            },
            {
                "type": "Established",
                "status": "True",
                "lastTransitionTime": stamp,
                "reason": "InitialNamesAccepted",
                "message": "the initial names have been accepted",
            },
        ],
        "storedVersions": stored,
    }


def validate_custom_resource(
    rtype: ResourceType,
    *,
    version: str,
    obj: dict[str, Any],
    old: dict[str, Any] | None,
    subresource: str = "",
) -> list[Cause]:
    """Prune, default and validate ``obj`` (in place) against the version's structural schema.

    ``old`` is the stored object on UPDATE/PATCH (None on CREATE): errors in values unchanged
    from it are ratcheted away; a ``status`` subresource write validates ``status`` only.
    """
    schema = rtype.schemas.get(version)
    if schema is None:
        return []
    schema.prune(obj)
    schema.apply_defaults(obj)
    causes = []
    for cause in schema.validate(obj, old_obj=old, status_only=subresource == "status"):
        body = getattr(cause, "body", None) or cause.message
        causes.append(Cause(cause.field, cause.reason, body))
    return causes
