"""OpenAPI documents: just enough for kubectl to hand validation and patch computation to us.

kubectl (``--validate=strict``, the default) first asks ``/openapi/v3`` whether the server validates
fields itself: it looks, in the group-version document, for the kind's PATCH operation carrying a
``fieldValidation`` query parameter. Every group-version document here lists, for each resource,
that operation (with its ``x-kubernetes-group-version-kind``) and no schemas, so kubectl sends the
object and lets the devcluster validate it (built-in rules, CRD structural schemas).

``/openapi/v2`` is not served (404): kubectl then computes ``kubectl apply`` strategic merge
patches from its compiled-in types, which is what it does for any kind without published schema.
"""

from __future__ import annotations

import hashlib
from typing import Any

from devcluster.apiserver.registry.resources import Registry

__all__ = ["openapi_v3"]


def _group_versions(registry: Registry) -> list[tuple[str, str]]:
    seen: list[tuple[str, str]] = []
    for rtype in registry:
        for version in rtype.versions:
            if (rtype.group, version) not in seen:
                seen.append((rtype.group, version))
    return seen


def _prefix(group: str, version: str) -> str:
    return f"api/{version}" if not group else f"apis/{group}/{version}"


def _document(registry: Registry, group: str, version: str) -> dict[str, Any]:
    paths: dict[str, Any] = {}
    for rtype in registry:
        if rtype.group != group or version not in rtype.versions:
            continue
        scope = "namespaces/{namespace}/" if rtype.namespaced else ""
        path = f"/{_prefix(group, version)}/{scope}{rtype.plural}/{{name}}"
        paths[path] = {
            "patch": {
                "operationId": f"patch{rtype.kind}",
                "x-kubernetes-group-version-kind": {"group": group, "version": version, "kind": rtype.kind},
                "parameters": [
                    {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
                    {"name": "fieldManager", "in": "query", "schema": {"type": "string"}},
                    {"name": "dryRun", "in": "query", "schema": {"type": "string"}},
                ],
                "responses": {"200": {"description": "OK"}},
            }
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.36.0"},
        "paths": paths,
        "components": {"schemas": {}},
    }


def openapi_v3(registry: Registry, path: list[str]) -> dict[str, Any] | None:
    """The root discovery document (``path`` empty) or one group-version document, else None."""
    if not path:
        root = {}
        for group, version in _group_versions(registry):
            prefix = _prefix(group, version)
            digest = (
                hashlib.sha256(repr(_document(registry, group, version)).encode()).hexdigest()[:32].upper()
            )
            root[prefix] = {"serverRelativeURL": f"/openapi/v3/{prefix}?hash={digest}"}
        return {"paths": root}
    if path[0] == "api" and len(path) == 2:
        group, version = "", path[1]
    elif path[0] == "apis" and len(path) == 3:
        group, version = path[1], path[2]
    else:
        return None
    if (group, version) not in _group_versions(registry):
        return None
    return _document(registry, group, version)
