"""Go ``strconv``, byte-for-byte: what Kueue accepts in annotations, and the text it prints.

Kueue reads integers and booleans from annotations with ``strconv.Atoi``/``ParseInt``/``ParseBool``
and, in validation, puts ``err.Error()`` into the field error detail. Python's ``int()`` accepts more
(``" 5"``, ``"1_000"``, ``"٣"``) and ``bool`` parsing has no standard, so we re-implement the Go rules to
admit exactly the same values and print exactly the same messages.

``quote`` is ``strconv.Quote`` (Go's ``%q``), which every Kueue and apimachinery message uses to
print a user's string (``parsing "x"``, ``Invalid value: "x"``, ``Job.batch "x" not found``):
``json.dumps`` escapes differently (``\u0001`` for ``\x01``, DEL and U+00A0 kept as is), and
annotations may hold any character.
"""

from __future__ import annotations

import re

__all__ = ["GoParseError", "atoi", "parse_bool", "parse_int32", "quote"]

_DECIMAL = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


class GoParseError(ValueError):
    """``str(error)`` is Go's ``*strconv.NumError`` text, e.g. ``strconv.Atoi: parsing "x": invalid syntax``."""


_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def quote(value: str) -> str:
    """``strconv.Quote``: printable runes (``unicode.IsPrint``) kept, the rest escaped as Go does."""
    if value.isprintable() and '"' not in value and "\\" not in value:
        return f'"{value}"'  # nothing to escape (the common case, and fast for a huge value)
    out = ['"']
    for char in value:
        if char in ('"', "\\"):
            out.append("\\" + char)
        elif char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif char.isprintable():  # Python's rule is Go's IsPrint: L, M, N, P, S and the ASCII space
            out.append(char)
        else:
            code = ord(char)
            if code < 0x80:
                out.append(f"\\x{code:02x}")
            elif 0xD800 <= code <= 0xDFFF:  # Go decoded a lone surrogate to U+FFFD, a printable rune
                out.append("\ufffd")
            elif code <= 0xFFFF:
                out.append(f"\\u{code:04x}")
            else:
                out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _parse_decimal(func: str, value: str, low: int, high: int) -> int:
    if not _DECIMAL.fullmatch(value):
        raise GoParseError(f"strconv.{func}: parsing {quote(value)}: invalid syntax")
    number = int(value)
    if not low <= number <= high:
        raise GoParseError(f"strconv.{func}: parsing {quote(value)}: value out of range")
    return number


def atoi(value: str) -> int:
    """``strconv.Atoi`` (64-bit ``int``)."""
    return _parse_decimal("Atoi", value, _INT64_MIN, _INT64_MAX)


def parse_int32(value: str) -> int:
    """``strconv.ParseInt(value, 10, 32)``."""
    return _parse_decimal("ParseInt", value, _INT32_MIN, _INT32_MAX)


def parse_bool(value: str) -> bool:
    """``strconv.ParseBool``: 1/t/T/TRUE/true/True and 0/f/F/FALSE/false/False only."""
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise GoParseError(f"strconv.ParseBool: parsing {quote(value)}: invalid syntax")
