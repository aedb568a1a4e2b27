"""apimachinery's ``field.Error`` / ``ErrorList.ToAggregate()`` rendering, byte for byte.

Users read these strings in ``kubectl`` output and Kueue's integration tests assert them, so a denial
must read exactly like Kueue's: ``<path>: <Type>: <bad value>: <detail>``, with

* Required/Forbidden/TooLong/TooShort/Internal errors printing only the type (no bad value);
* the bad value printed like Go: strings with ``%q`` (``shared.frameworks.strconv.quote``), ``null``
  for nil, numbers and booleans plain, anything else as ``json.Marshal`` would;
* duplicates dropped (``ToAggregate`` de-duplicates by message) and several errors joined as
  ``[e1, e2]`` (``utilerrors.aggregate.Error``), a single one as is.

One deliberate difference: an aggregate stops listing errors once it is longer than
``MAX_AGGREGATE_CHARS`` and ends with ``... and N more errors``. Kueue reports, e.g., every
duplicate name of an ``admission-gated-by`` annotation with the whole annotation as bad value, so a
256 KiB annotation of thousands of repeated names makes a message of gigabytes (and minutes of
CPU); real denials are far below the limit and unchanged. Identical errors are formatted once.

``FieldError`` is ``shared.frameworks.FieldError`` so framework adapters and the generic rules share
one type, and its type texts (``INVALID``, ``FORBIDDEN``, ...) are written there once.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Final

from shared.frameworks.base import FORBIDDEN, INTERNAL, REQUIRED, TOO_LONG, TOO_SHORT, FieldError
from shared.frameworks.strconv import quote

__all__ = [
    "IMMUTABLE",
    "MAX_AGGREGATE_CHARS",
    "format_field_error",
    "go_quote",
    "to_aggregate",
]

#: ``apivalidation.FieldImmutableErrorMsg``
IMMUTABLE: Final = "field is immutable"
#: an aggregate stops listing errors past this length (see the module docstring)
MAX_AGGREGATE_CHARS: Final = 64 * 1024

_VALUELESS_TYPES = frozenset({REQUIRED, FORBIDDEN, TOO_LONG, TOO_SHORT, INTERNAL})
#: Go's ``json.Marshal`` escapes these in strings (HTML safety); ``json.dumps`` does not
_JSON_HTML_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)

#: ``strconv.Quote`` (``%q``), kept under its historical name for callers in this package
go_quote = quote


def _go_value(value: Any) -> str:
    """The bad value as ``ErrorBody`` prints it: ``%v`` for numbers and booleans, ``%q`` for strings,
    ``json.Marshal`` for everything else (``null`` for nil, a pointer's target, maps with sorted keys).

    Floats print with Python's ``repr``; Go's ``%v`` differs from it for exponents >= 6 (``1e+06``),
    but no rule of ours reports a float.
    """
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return quote(value)
    if isinstance(value, int | float):
        return str(value)
    encoded = json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"), default=str)
    return encoded.translate(_JSON_HTML_ESCAPES)


def format_field_error(error: FieldError) -> str:
    """``field.Error.Error()``."""
    body = error.type if error.type in _VALUELESS_TYPES else f"{error.type}: {_go_value(error.bad_value)}"
    if error.detail:
        body = f"{body}: {error.detail}"
    return f"{error.path}: {body}"


def to_aggregate(errors: Iterable[FieldError]) -> str | None:
    """``ErrorList.ToAggregate().Error()``; ``None`` for an empty list."""
    pending = list(errors)
    messages: list[str] = []
    seen_messages: set[str] = set()
    # the same error object values (e.g. one huge annotation value) are formatted once
    seen_errors: set[tuple[str, str, str, int]] = set()
    size = 0
    for index, error in enumerate(pending):
        key = (error.path, error.type, error.detail, id(error.bad_value))
        if key in seen_errors:
            continue
        if size > MAX_AGGREGATE_CHARS:
            messages.append(f"... and {len(pending) - index} more errors")
            break
        seen_errors.add(key)
        message = format_field_error(error)
        if message not in seen_messages:
            seen_messages.add(message)
            messages.append(message)
            size += len(message) + 2
    if not messages:
        return None
    if len(messages) == 1:
        return messages[0]
    return "[" + ", ".join(messages) + "]"
