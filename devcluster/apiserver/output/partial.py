"""Metadata-only answers (``meta.k8s.io`` PartialObjectMetadata) for clients that ask for them.

A client that only needs an object's metadata -- client-go's metadata client and metadata-only
informers, or kueue-bridge's writers, which drop the object a write returns -- sends
``Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`` (``...List`` for lists).
kube-apiserver 1.36 then answers, as verified against the real one
(tests/devcluster/test_partial_metadata.py):

* an object (get, create, update, patch, delete) as ``{"kind": "PartialObjectMetadata",
  "apiVersion": "meta.k8s.io/v1", "metadata": ...}``; asked for the ``List`` kind instead:
  406 NotAcceptable ``you requested PartialObjectMetadataList, but the requested object is not a
  list (*batch.Job)``;
* a list as ``PartialObjectMetadataList`` (the list's metadata, items as above); asked for the
  object kind instead: 406 ``you requested PartialObjectMetadata, but the requested object is a
  list (*batch.JobList)``;
* a watch asked for as ``PartialObjectMetadata`` streams events whose objects are that; asked for
  as the ``List`` kind it streams nothing at all (200, no events) -- kept here as it is;
* ``meta.k8s.io/v1beta1`` likewise, with that apiVersion. Errors are plain ``Status`` objects.

The Go type in a 406 names the object kube-apiserver had: ``*<group's first label>.<Kind>`` for
built-in kinds, its internal API package (``*core.X`` for the core group), and
``*unstructured.Unstructured`` for custom resources. Which media range decides follows
:func:`~devcluster.apiserver.output.tables.acceptable`: the
first acceptable one, so a Table or plain JSON earlier in the header wins.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from devcluster.apiserver.errors import StatusError
from devcluster.apiserver.output.tables import acceptable
from devcluster.apiserver.registry.resources import ResourceType

__all__ = ["PartialMetadata", "negotiate_partial"]

_KINDS = ("PartialObjectMetadata", "PartialObjectMetadataList")
_VERSIONS = ("v1", "v1beta1")


def _go_type(rtype: ResourceType, *, listing: bool) -> str:
    suffix = "List" if listing else ""
    if not rtype.builtin:
        return f"*unstructured.Unstructured{suffix}"
    package = rtype.group.split(".")[0] if rtype.group else "core"  # kube's internal API packages
    return f"*{package}.{rtype.kind}{suffix}"


def _not_acceptable(message: str) -> StatusError:
    return StatusError(406, "NotAcceptable", message)


@dataclass(frozen=True, slots=True)
class PartialMetadata:
    """The metadata-only rendering a request asked for: ``kind`` and ``meta.k8s.io`` apiVersion."""

    kind: str
    api_version: str

    @property
    def listing(self) -> bool:
        return self.kind == "PartialObjectMetadataList"

    def _item(self, obj: dict[str, Any]) -> dict[str, Any]:
        return {"kind": "PartialObjectMetadata", "apiVersion": self.api_version, "metadata": obj["metadata"]}

    def object(self, rtype: ResourceType, obj: dict[str, Any]) -> bytes:
        """One object's answer, or the 406 for a ``List`` request."""
        if self.listing:
            raise _not_acceptable(
                f"you requested {self.kind}, but the requested object is not a list "
                f"({_go_type(rtype, listing=False)})"
            )
        return orjson.dumps(self._item(obj))

    def list(self, rtype: ResourceType, items: list[dict[str, Any]], meta: dict[str, Any]) -> bytes:
        """A list's answer, or the 406 for an object request."""
        if not self.listing:
            raise _not_acceptable(
                f"you requested {self.kind}, but the requested object is a list ({_go_type(rtype, listing=True)})"
            )
        body = {
            "kind": self.kind,
            "apiVersion": self.api_version,
            "metadata": meta,
            "items": [self._item(item) for item in items],
        }
        return orjson.dumps(body)

    def frame(self, event_type: str, obj: dict[str, Any]) -> bytes:
        """One watch event (nothing at all for the ``List`` kind, as kube-apiserver streams it)."""
        if self.listing:
            return b""
        return b'{"type":"' + event_type.encode() + b'","object":' + orjson.dumps(self._item(obj)) + b"}\n"


def negotiate_partial(accept: str) -> PartialMetadata | None:
    """The metadata-only rendering the Accept header asks for, or None (plain object or Table)."""
    for _media, params in acceptable(accept):
        kind = params.get("as")
        if kind is None:
            return None
        if params.get("g") != "meta.k8s.io" or params.get("v") not in _VERSIONS:
            continue  # a rendering of an unknown group/version is skipped (as in tables.negotiate)
        if kind == "Table":
            return None
        if kind in _KINDS:
            return PartialMetadata(kind=kind, api_version=f"meta.k8s.io/{params['v']}")
    return None
