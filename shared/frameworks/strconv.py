"""Go ``strconv`` parsing, byte-for-byte: what Kueue accepts in annotations, and its error text.

Kueue reads integers and booleans from annotations with ``strconv.Atoi``/``ParseInt``/``ParseBool``
and, in validation, puts ``err.Error()`` into the field error detail. Python's ``int()`` accepts more
(``" 5"``, ``"1_000"``, ``"٣"``) and ``bool`` parsing has no standard, so we re-implement the Go rules to
admit exactly the same values and print exactly the same messages.
"""

from __future__ import annotations

import json
import re

__all__ = ["GoParseError", "atoi", "parse_bool", "parse_int32"]

_DECIMAL = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1
_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


class GoParseError(ValueError):
    """``str(error)`` is Go's ``*strconv.NumError`` text, e.g. ``strconv.Atoi: parsing "x": invalid syntax``."""


def _quote(value: str) -> str:
    # Go's %q for the printable ASCII annotations users write; json.dumps escapes the same characters.
    return json.dumps(value, ensure_ascii=False)


def _parse_decimal(func: str, value: str, low: int, high: int) -> int:
    if not _DECIMAL.fullmatch(value):
        raise GoParseError(f"strconv.{func}: parsing {_quote(value)}: invalid syntax")
    number = int(value)
    if not low <= number <= high:
        raise GoParseError(f"strconv.{func}: parsing {_quote(value)}: value out of range")
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
    raise GoParseError(f"strconv.ParseBool: parsing {_quote(value)}: invalid syntax")
