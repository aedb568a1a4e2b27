"""The request side of field ownership: who writes (fieldManager), where, and what an apply may send.

* :func:`field_scope` — the :class:`~.managedfields.FieldScope` of one request: the manager (the
  ``fieldManager`` parameter, else the user-agent's first segment), the request's apiVersion and
  subresource, and the kind's field types (:mod:`.builtin_fieldtypes`, or the CRD's schema).
* :func:`field_manager_causes` — ValidateFieldManager (``query_options`` reports them): at most 128
  bytes of printable characters, reported as the real server does on CreateOptions, UpdateOptions
  or PatchOptions (422 with ``details.group: meta.k8s.io``).
* :func:`applied_configuration` — an apply body's checks, in kube-apiserver's words: an object of
  exactly the URL's kind and apiVersion (else 400 "invalid object type: <group>/<version>,
  Kind=<kind>"), a mapping (else the YAML decoder's 400), no ``metadata.managedFields``.
"""

from __future__ import annotations

from typing import Any

import orjson

from devcluster.apiserver.errors import Cause, bad_request
from devcluster.apiserver.fieldmanager.builtin_fieldtypes import builtin_field_type
from devcluster.apiserver.fieldmanager.fieldtypes import crd_field_type
from devcluster.apiserver.fieldmanager.managedfields import FieldScope
from devcluster.apiserver.registry.resources import ResourceType
from shared.kube import GroupVersionKind

__all__ = ["applied_configuration", "field_manager_causes", "field_scope"]


def field_scope(
    rtype: ResourceType, *, version: str, subresource: str, manager: str, timestamp: str
) -> FieldScope:
    if rtype.builtin:
        field_type = builtin_field_type(rtype.key)
    elif rtype.field_types is not None:
        field_type = rtype.field_types.get(version)
    else:
        field_type = crd_field_type({})
    return FieldScope(
        manager=manager,
        api_version=rtype.api_version(version),
        subresource=subresource,
        field_type=field_type,
        has_status=rtype.has_status,
        custom=not rtype.builtin,
        timestamp=timestamp,
    )


def field_manager_causes(manager: str) -> list[Cause]:
    """ValidateFieldManager: at most 128 bytes, printable characters only."""
    causes = []
    if len(manager.encode()) > 128:
        causes.append(Cause("fieldManager", "FieldValueTooLong", "Too long: may not be more than 128 bytes"))
    position = 0
    for char in manager:
        if not char.isprintable():
            causes.append(
                Cause(
                    "fieldManager",
                    "FieldValueInvalid",
                    f"Invalid value: {orjson.dumps(manager).decode()}: invalid character "
                    f"U+{ord(char):04X} (at position {position})",
                )
            )
        position += len(char.encode())
    return causes


_GO_JSON_TYPES = {list: "array", str: "string", bool: "bool", int: "number", float: "number"}


def applied_configuration(rtype: ResourceType, *, version: str, body: Any, codec: Any) -> dict[str, Any]:
    """The apply body as an object of this kind, rejected as kube-apiserver rejects it."""
    config: dict[str, Any] = body if isinstance(body, dict) else {}
    if not isinstance(body, dict):
        if body is None:
            raise bad_request("invalid object type: /, Kind=")
        raise bad_request(
            "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal "
            f"{_GO_JSON_TYPES.get(type(body), 'object')} into Go value of type map[string]interface {{}}"
        )
    api_version = config.get("apiVersion") if isinstance(config.get("apiVersion"), str) else ""
    kind = config.get("kind") if isinstance(config.get("kind"), str) else ""
    expected = codec.served_api_version if codec is not None else rtype.api_version(version)
    if api_version != expected or kind != rtype.kind:
        sent = GroupVersionKind.from_api_version(api_version or "", kind or "")
        raise bad_request(f"invalid object type: {sent.group}/{sent.version}, Kind={kind}")
    if codec is not None:
        config = dict(codec.to_storage(config))
    meta = config.get("metadata")
    if meta is None:
        meta = config["metadata"] = {}
    if not isinstance(meta, dict):
        raise bad_request("metadata must be an object")
    if meta.get("managedFields") is not None:
        raise bad_request("metadata.managedFields must be nil")
    return config
