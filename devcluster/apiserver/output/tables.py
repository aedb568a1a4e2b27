"""Server-side printing: ``meta.k8s.io`` Tables for clients that ask for them (``kubectl get``).

kubectl sends ``Accept: application/json;as=Table;v=v1;g=meta.k8s.io, ...;v=v1beta1..., application/json``
and prints whatever columns the server defines. :func:`negotiate` picks the Table when one of the
acceptable media types asks for it (v1 or v1beta1), else the plain object is served.

What a Table holds, as kube-apiserver builds it (``endpoints/handlers/response.go`` ``asTable``):

* ``columnDefinitions``: the printer's columns (:mod:`.crd_printer` picks it: :mod:`.printers` for
  built-in kinds; for custom resources ``Name`` then the version's ``additionalPrinterColumns``, or
  ``Age`` when it has none).
  Every column is always sent with its priority: kubectl hides priority > 0 unless ``-o wide``.
* ``rows``: one per object, ``cells`` in column order, and ``object`` per ``includeObject``:
  ``Metadata`` (the default) a ``PartialObjectMetadata``, ``Object`` the object as served, ``None``
  null; another value is a 400 ``Unable to convert to Table as requested: includeObject: Invalid
  value: "x": must be 'Metadata', 'Object', 'None', or empty``.
* ``metadata``: the list's ``resourceVersion`` / ``continue`` / ``remainingItemCount``, or the single
  object's ``resourceVersion``.

A watch asked for as Table streams one-row Tables, with the column definitions in the first event
only (kube's ``watchEmbeddedEncoder``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

import orjson

from devcluster.apiserver.errors import bad_request
from devcluster.apiserver.output.printers import Printer

__all__ = ["INCLUDE_OBJECT", "TableWriter", "acceptable", "negotiate"]

log = logging.getLogger(__name__)

INCLUDE_OBJECT = ("None", "Metadata", "Object")
_TABLE_VERSIONS = {"v1": "meta.k8s.io/v1", "v1beta1": "meta.k8s.io/v1beta1"}
_PLAIN = {
    "application/json",
    "application/*",
    "*/*",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
}


def acceptable(accept: str) -> list[tuple[str, dict[str, str]]]:
    """The plain media ranges of an Accept header (JSON, YAML, protobuf, wildcards) with their
    parameters (names lower-cased), best first: by quality, then in the client's order (the sort is
    stable). The first one whose rendering the server knows decides (:func:`negotiate`,
    ``partial.negotiate_partial``)."""
    ranges: list[tuple[float, int, str, dict[str, str]]] = []
    for index, part in enumerate(accept.split(",")):
        pieces = [piece.strip() for piece in part.split(";")]
        if not pieces[0]:
            continue
        params: dict[str, str] = {}
        for piece in pieces[1:]:
            key, _, value = piece.partition("=")
            params[key.strip().lower()] = value.strip()
        try:
            quality = float(params.pop("q", "1"))
        except ValueError:
            quality = 1.0
        if quality > 0:
            ranges.append((-quality, index, pieces[0].lower(), params))
    return [(media, params) for _quality, _index, media, params in sorted(ranges) if media in _PLAIN]


def negotiate(accept: str) -> str | None:
    """The Table apiVersion the Accept header asks for, or None for the plain object.

    A Table of an unknown group/version, like any rendering the server does not know, is skipped
    like an unsupported media type; a metadata-only one (``partial``) answers with no Table.
    """
    for _media, params in acceptable(accept):
        kind = params.get("as")
        if kind is None:
            return None
        if kind == "Table" and params.get("g") == "meta.k8s.io" and params.get("v") in _TABLE_VERSIONS:
            return _TABLE_VERSIONS[params["v"]]
        metadata_only = kind in ("PartialObjectMetadata", "PartialObjectMetadataList")
        if metadata_only and params.get("g") == "meta.k8s.io" and params.get("v") in _TABLE_VERSIONS:
            return None  # ``partial.negotiate_partial`` answers it
    return None


class TableWriter:
    """Renders objects of one request as Tables (``render`` for a read, ``frame`` for a watch)."""

    def __init__(
        self,
        *,
        printer: Printer,
        api_version: str,
        include_object: str,
        served: Callable[[dict[str, Any]], dict[str, Any]],
        clock: Callable[[], datetime],
    ) -> None:
        if include_object not in ("", *INCLUDE_OBJECT):
            raise bad_request(
                "Unable to convert to Table as requested: includeObject: Invalid value: "
                f"\"{include_object}\": must be 'Metadata', 'Object', 'None', or empty"
            )
        self.printer = printer
        self.api_version = api_version
        self.include_object = include_object or "Metadata"
        self.served = served
        self.clock = clock
        self._headers_sent = False

    def _row(self, obj: dict[str, Any], now: datetime) -> dict[str, Any]:
        try:
            cells = self.printer.cells(obj, now)
        except (TypeError, ValueError, AttributeError):  # a stored object of an odd shape
            log.exception("devcluster: cannot print %s", (obj.get("metadata") or {}).get("name"))
            cells = [None] * len(self.printer.columns)
        row: dict[str, Any] = {"cells": cells}
        if self.include_object == "Object":
            row["object"] = self.served(obj)
        elif self.include_object == "Metadata":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": self.api_version,
                "metadata": obj.get("metadata") or {},
            }
        else:
            row["object"] = None
        return row

    def table(
        self, objects: list[dict[str, Any]], metadata: dict[str, Any], *, headers: bool = True
    ) -> dict[str, Any]:
        now = self.clock()
        return {
            "kind": "Table",
            "apiVersion": self.api_version,
            "metadata": metadata,
            "columnDefinitions": self.printer.columns if headers else None,
            "rows": [self._row(obj, now) for obj in objects],
        }

    def render(self, objects: list[dict[str, Any]], metadata: dict[str, Any]) -> bytes:
        return orjson.dumps(self.table(objects, metadata))

    def frame(self, event_type: str, obj: dict[str, Any]) -> bytes:
        """One watch event whose object is a one-row Table; headers only in the first one."""
        rv = str((obj.get("metadata") or {}).get("resourceVersion") or "")
        headers = not self._headers_sent
        self._headers_sent = True
        table = self.table([obj], {"resourceVersion": rv} if rv else {}, headers=headers)
        return b'{"type":"' + event_type.encode() + b'","object":' + orjson.dumps(table) + b"}\n"
