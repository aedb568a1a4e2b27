"""apimachinery's ``field.Error`` / ``ErrorList.ToAggregate()`` rendering, byte for byte.

Users read these strings in ``kubectl`` output and Kueue's integration tests assert them, so a denial
must read exactly like Kueue's: ``<path>: <Type>: <bad value>: <detail>``, with

* Required/Forbidden/TooLong/TooShort/Internal errors printing only the type (no bad value);
* the bad value printed like Go: strings with ``%q``, ``null`` for nil, numbers and booleans plain;
* duplicates dropped (``ToAggregate`` de-duplicates by message) and several errors joined as
  ``[e1, e2]`` (``utilerrors.aggregate.Error``), a single one as is.

``FieldError`` is ``shared.frameworks.FieldError`` so framework adapters and the generic rules share
one type.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Final

from shared.frameworks.base import FieldError

__all__ = [
    "FORBIDDEN",
    "IMMUTABLE",
    "INVALID",
    "REQUIRED",
    "TOO_LONG",
    "format_field_error",
    "go_quote",
    "to_aggregate",
]

INVALID: Final = "Invalid value"
FORBIDDEN: Final = "Forbidden"
REQUIRED: Final = "Required value"
TOO_LONG: Final = "Too long"
#: ``apivalidation.FieldImmutableErrorMsg``
IMMUTABLE: Final = "field is immutable"

_VALUELESS_TYPES = frozenset({"Required value", "Forbidden", "Too long", "Too short", "Internal error"})
_GO_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def go_quote(value: str) -> str:
    """Go's ``strconv.Quote`` (``%q``): printable runes kept, the rest escaped."""
    out = ['"']
    for char in value:
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif char in _GO_ESCAPES:
            out.append(_GO_ESCAPES[char])
        elif char.isprintable():
            out.append(char)
        else:
            code = ord(char)
            if code < 0x80:
                out.append(f"\\x{code:02x}")
            elif code <= 0xFFFF:
                out.append(f"\\u{code:04x}")
            else:
                out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _go_value(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, int | float):
        return str(value)
    return repr(value)


def format_field_error(error: FieldError) -> str:
    """``field.Error.Error()``."""
    body = error.type if error.type in _VALUELESS_TYPES else f"{error.type}: {_go_value(error.bad_value)}"
    if error.detail:
        body = f"{body}: {error.detail}"
    return f"{error.path}: {body}"


def to_aggregate(errors: Iterable[FieldError]) -> str | None:
    """``ErrorList.ToAggregate().Error()``; ``None`` for an empty list."""
    messages: list[str] = []
    for error in errors:
        message = format_field_error(error)
        if message not in messages:
            messages.append(message)
    if not messages:
        return None
    if len(messages) == 1:
        return messages[0]
    return "[" + ", ".join(messages) + "]"
