"""The printer of a stored resource type: kube's own for built-in kinds (:mod:`.printers`), the
version's ``additionalPrinterColumns`` for custom resources (apiextensions ``tableconvertor``).

Custom-resource cells (apiextensions ``tableconvertor``): the first value the column's JSONPath
finds (:mod:`.jsonpath`), missing keys allowed; ``string`` columns print it as ``JSONPath.PrintResults``
does, ``integer``/``number``/``boolean`` keep a value of that JSON type (an integer column truncates a
float), ``date`` is the age of an RFC 3339 timestamp (``<invalid>`` when it does not parse); a value
of another type, a missing value or an evaluation error is a null cell (kubectl shows ``<none>``).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from devcluster.apiserver.output.jsonpath import JSONPathError, compile_path, find, print_value
from devcluster.apiserver.output.printers import (
    AGE_DESCRIPTION,
    NAME_DESCRIPTION,
    PRINTERS,
    Printer,
    column,
    default_printer,
)
from devcluster.apiserver.registry.resources import ResourceType
from shared.kube.times import human_duration, parse_time

__all__ = ["crd_printer", "printer_for"]

log = logging.getLogger(__name__)


@functools.lru_cache(maxsize=512)
def _compiled(path: str) -> tuple[Any, ...] | None:
    try:
        return compile_path(path)
    except JSONPathError as exc:
        log.info("printer column %r cannot be evaluated: %s", path, exc)
        return None


def _custom_cell(column_type: str, value: Any, now: datetime) -> Any:
    """apiextensions' ``cellForJSONValue`` for non-string columns."""
    if value is None:
        return None
    if column_type == "integer":
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return int(value)
    if column_type == "number":
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None
        return float(value)
    if column_type == "boolean":
        return value if isinstance(value, bool) else None
    if column_type == "date":
        if not isinstance(value, str):
            return None
        stamp = parse_time(value)
        if stamp is None or "T" not in value:
            return "<invalid>"
        return human_duration((now - stamp).total_seconds())
    return None


def crd_printer(definitions: tuple[Mapping[str, Any], ...]) -> Printer:
    """A custom resource version's printer: ``Name``, then its ``additionalPrinterColumns``
    (``definitions``), or ``Age`` when it has none."""
    if not definitions:
        definitions = (
            {
                "name": "Age",
                "type": "date",
                "description": AGE_DESCRIPTION,
                "jsonPath": ".metadata.creationTimestamp",
            },
        )
    columns = [column("Name", "string", NAME_DESCRIPTION, format_="name")]
    paths: list[tuple[str, tuple[Any, ...] | None]] = []
    for definition in definitions:
        path = str(definition.get("jsonPath") or "")
        columns.append(
            column(
                str(definition.get("name") or ""),
                str(definition.get("type") or ""),
                str(
                    definition.get("description")
                    or f"Custom resource definition column (in JSONPath format): {path}"
                ),
                priority=int(definition.get("priority") or 0),
                format_=str(definition.get("format") or ""),
            )
        )
        paths.append((str(definition.get("type") or ""), _compiled(path)))

    def cells(obj: Mapping[str, Any], now: datetime) -> list[Any]:
        row: list[Any] = [str((obj.get("metadata") or {}).get("name") or "")]
        for column_type, path in paths:
            try:
                found = find(path, obj) if path is not None else []
            except JSONPathError:
                found = []
            if not found:
                row.append(None)
            elif column_type == "string":
                row.append(print_value(found[0]))
            else:
                row.append(_custom_cell(column_type, found[0], now))
        return row

    return Printer(columns, cells)


def printer_for(rtype: ResourceType, version: str) -> Printer:
    """The printer of a stored resource type as served in ``version``."""
    if not rtype.builtin:
        return crd_printer(rtype.printer_columns.get(version, ()))
    return PRINTERS.get(rtype.key) or default_printer()
