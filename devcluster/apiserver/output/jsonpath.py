"""JSONPath as kube-apiserver evaluates CRD ``additionalPrinterColumns`` (client-go ``util/jsonpath``).

A column's ``jsonPath`` (e.g. ``.status.conditions[?(@.type=="Admitted")].status``) is parsed once
(:func:`compile_path`) and evaluated against the JSON object with missing keys allowed, exactly as
the CRD table convertor does: the cell is the *first* value found, or nothing.

Semantics kept from client-go (each has a unit test):

* ``.name`` / ``['name']`` / ``["name"]`` look a key up in an object; on anything else, or when the
  key is absent, they yield nothing (never an error: missing keys are allowed).
* ``[n]``, ``[-n]``, ``[a:b]``, ``[a:b:s]``, ``[a,b]``, ``[*]``/``.*`` and ``..name`` (recursive
  descent); an index out of range or an index applied to a non-list is an *error*.
* ``[?(@.path OP literal)]`` with ``== != < > <= >=``, or ``[?(@.path)]`` (exists). An element whose
  left side is missing is skipped; comparing values of different kinds (``"1"`` with ``1``, an int
  with a float) is an error, as Go's ``text/template`` comparison is.
* An error anywhere makes the whole cell empty (the table convertor prints ``<none>``).

:func:`print_value` renders a found value the way ``JSONPath.PrintResults`` does for ``string``
columns: strings as they are, maps and lists as Go's ``json.Marshal`` (sorted keys, compact, ``<>&``
escaped), numbers and booleans as Go's ``fmt.Fprint``, JSON null as ``<no value>``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final

import orjson

__all__ = ["JSONPathError", "compile_path", "find", "go_json", "go_number", "print_value"]


class JSONPathError(Exception):
    """The path does not parse, or evaluating it failed (index out of range, bad comparison)."""


# --- the syntax tree -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Field:
    names: tuple[str, ...]  # one name, or a union of quoted names


@dataclass(frozen=True, slots=True)
class _Wildcard:
    pass


@dataclass(frozen=True, slots=True)
class _Recursive:
    pass


@dataclass(frozen=True, slots=True)
class _Slice:
    start: int | None
    stop: int | None
    step: int | None
    single: bool  # ``[n]``: the stop is derived (n + 1)


@dataclass(frozen=True, slots=True)
class _Union:
    indexes: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class _Literal:
    value: Any


@dataclass(frozen=True, slots=True)
class _Filter:
    left: tuple[Any, ...] | _Literal
    operator: str  # one of == != < > <= >= exists
    right: tuple[Any, ...] | _Literal | None


_FILTER = re.compile(r"^([^!<>=]+)([!<>=]+)(.+?)$", re.S)
_OPERATORS = frozenset({"==", "!=", "<", ">", "<=", ">="})
_INT = re.compile(r"^-?\d+$")
_FLOAT = re.compile(r"^-?\d+\.\d*$|^-?\d*\.\d+$|^-?\d+(\.\d*)?[eE][-+]?\d+$")


# --- parsing -------------------------------------------------------------------------------------


def compile_path(text: str) -> tuple[Any, ...]:
    """Parse a column's path (``.spec.x``, ``$.spec.x`` or ``{.spec.x}``); raises JSONPathError."""
    body = text.strip()
    if body.startswith("{") and body.endswith("}"):
        body = body[1:-1].strip()
    return _parse_steps(body)


def _parse_steps(text: str) -> tuple[Any, ...]:
    steps: list[Any] = []
    i = 0
    if text.startswith(("$", "@")):
        i = 1
    while i < len(text):
        char = text[i]
        if text.startswith("..", i):
            steps.append(_Recursive())
            i += 1  # the second dot starts the field that follows
            continue
        if char == ".":
            i += 1
            if i < len(text) and text[i] == "*":
                steps.append(_Wildcard())
                i += 1
                continue
            start = i
            while i < len(text) and text[i] not in ".[ ":
                i += 1
            if i == start:
                if i < len(text) and text[i] == "[":
                    continue
                raise JSONPathError(f"missing field name at {start} in {text!r}")
            steps.append(_Field((text[start:i],)))
            continue
        if char == "[":
            end = _closing_bracket(text, i)
            steps.append(_parse_bracket(text[i + 1 : end].strip()))
            i = end + 1
            continue
        if char.isspace():
            i += 1
            continue
        raise JSONPathError(f"unexpected {char!r} at {i} in {text!r}")
    return tuple(steps)


def _closing_bracket(text: str, start: int) -> int:
    depth, quote = 0, ""
    for index in range(start, len(text)):
        char = text[index]
        if quote:
            if char == quote:
                quote = ""
            continue
        if char in "'\"":
            quote = char
        elif char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                return index
    raise JSONPathError(f"unclosed array expect ] in {text!r}")


def _parse_bracket(inner: str) -> Any:
    if inner == "*":
        return _Wildcard()
    if inner.startswith("?"):
        body = inner[1:].strip()
        if not (body.startswith("(") and body.endswith(")")):
            raise JSONPathError(f"unclosed filter expression in {inner!r}")
        return _parse_filter(body[1:-1].strip())
    if inner[:1] in "'\"":
        names = tuple(_unquote(part.strip()) for part in _split_union(inner))
        return _Field(names)
    if "," in inner:
        try:
            return _Union(tuple(int(part) for part in inner.split(",")))
        except ValueError as exc:
            raise JSONPathError(f"invalid array index in [{inner}]") from exc
    parts = inner.split(":")
    if len(parts) > 3:
        raise JSONPathError(f"invalid array index in [{inner}]")
    try:
        numbers = [int(part) if part.strip() else None for part in parts]
    except ValueError as exc:
        raise JSONPathError(f"invalid array index in [{inner}]") from exc
    if len(parts) == 1:
        if numbers[0] is None:
            raise JSONPathError("invalid array index []")
        return _Slice(numbers[0], None, None, single=True)
    return _Slice(numbers[0], numbers[1], numbers[2] if len(numbers) == 3 else None, single=False)


def _split_union(text: str) -> list[str]:
    parts, current, quote = [], "", ""
    for char in text:
        if quote:
            current += char
            if char == quote:
                quote = ""
        elif char in "'\"":
            quote = char
            current += char
        elif char == ",":
            parts.append(current)
            current = ""
        else:
            current += char
    parts.append(current)
    return parts


def _unquote(text: str) -> str:
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    raise JSONPathError(f"unclosed quote in {text!r}")


def _parse_filter(body: str) -> _Filter:
    match = _FILTER.match(body)
    if match is None:
        return _Filter(_parse_operand(body), "exists", None)
    left, operator, right = (part.strip() for part in match.groups())
    if operator not in _OPERATORS:
        raise JSONPathError(f"unrecognized filter operator {operator}")
    return _Filter(_parse_operand(left), operator, _parse_operand(right))


def _parse_operand(text: str) -> tuple[Any, ...] | _Literal:
    if text[:1] in "'\"":
        return _Literal(_unquote(text))
    if text in {"true", "false"}:
        return _Literal(text == "true")
    if _INT.match(text):
        return _Literal(int(text))
    if _FLOAT.match(text):
        return _Literal(float(text))
    return _parse_steps(text)


# --- evaluation ----------------------------------------------------------------------------------


def find(path: tuple[Any, ...], obj: Any) -> list[Any]:
    """Every value the path selects in ``obj`` (missing keys allowed); raises JSONPathError."""
    values = [obj]
    for step in path:
        values = list(_apply(step, values))
    return values


def _apply(step: Any, values: list[Any]) -> Iterator[Any]:
    if isinstance(step, _Field):
        for value in values:
            if isinstance(value, dict):
                for name in step.names:
                    if name in value:
                        yield value[name]
    elif isinstance(step, _Wildcard):
        for value in values:
            if isinstance(value, dict):
                yield from (value[key] for key in sorted(value))
            elif isinstance(value, list):
                yield from value
    elif isinstance(step, _Recursive):
        for value in values:
            yield from _descend(value)
    elif isinstance(step, _Slice):
        for value in values:
            yield from _slice(step, value)
    elif isinstance(step, _Union):
        for value in values:
            if value is None:
                continue
            if not isinstance(value, list):
                raise JSONPathError("not array or slice")
            for index in step.indexes:
                yield from _slice(_Slice(index, None, None, single=True), value)
    elif isinstance(step, _Filter):
        for value in values:
            yield from _filter(step, value)


def _descend(value: Any) -> Iterator[Any]:
    yield value
    children = [value[key] for key in sorted(value)] if isinstance(value, dict) else value
    if isinstance(children, list):
        for child in children:
            yield from _descend(child)


def _slice(step: _Slice, value: Any) -> Iterator[Any]:
    if value is None:
        return
    if not isinstance(value, list):
        raise JSONPathError(f"{_go_kind(value)} is not array or slice")
    length = len(value)
    start = step.start if step.start is not None else 0
    if start < 0:
        start += length
    if step.single:
        stop = start + 1
    else:
        stop = step.stop if step.stop is not None else length
        if stop < 0:
            stop += length
    if stop == start:
        return
    if start >= length or start < 0:
        raise JSONPathError(f"array index out of bounds: index {start}, length {length}")
    if stop > length or stop < 0:
        raise JSONPathError(f"array index out of bounds: index {stop - 1}, length {length}")
    if start > stop:
        raise JSONPathError(f"starting index {start} is greater than ending index {stop}")
    stride = 1
    if step.step is not None:
        if step.step <= 0:
            raise JSONPathError("step must be > 0")
        stride = step.step
    yield from value[start:stop:stride]


def _operand(operand: tuple[Any, ...] | _Literal, element: Any) -> list[Any]:
    return [operand.value] if isinstance(operand, _Literal) else find(operand, element)


def _filter(step: _Filter, value: Any) -> Iterator[Any]:
    if not isinstance(value, list):
        raise JSONPathError(f"{_go_kind(value)} is not array or slice and cannot be filtered")
    for element in value:
        lefts = _operand(step.left, element)
        if step.operator == "exists":
            if lefts:
                yield element
            continue
        if not lefts:
            continue
        if len(lefts) > 1:
            raise JSONPathError("can only compare one element at a time")
        assert step.right is not None
        rights = _operand(step.right, element)
        if not rights:
            continue
        if len(rights) > 1:
            raise JSONPathError("can only compare one element at a time")
        if _compare(step.operator, lefts[0], rights[0]):
            yield element


#: the Go kinds a filter compares (``bool`` before its subclass ``int``); any other value is "other"
_KINDS: Final[tuple[tuple[type, str], ...]] = (
    (bool, "bool"),
    (int, "int"),
    (float, "float"),
    (str, "string"),
)


def _kind(value: Any) -> str:
    return next((name for kind, name in _KINDS if isinstance(value, kind)), "other")


def _compare(operator: str, left: Any, right: Any) -> bool:
    """Go text/template's eq/ne/lt/le/gt/ge: same basic kind only."""
    kind = _kind(left)
    if kind != _kind(right) or kind == "other":
        raise JSONPathError("incompatible types for comparison")
    if operator == "==":
        return bool(left == right)
    if operator == "!=":
        return bool(left != right)
    if kind == "bool":
        raise JSONPathError("invalid type for comparison")
    if operator == "<":
        return bool(left < right)
    if operator == ">":
        return bool(left > right)
    if operator == "<=":
        return bool(left <= right)
    return bool(left >= right)


def _go_kind(value: Any) -> str:
    return {"bool": "bool", "int": "int64", "float": "float64", "string": "string"}.get(
        _kind(value), "map[string]interface {}" if isinstance(value, dict) else "<nil>"
    )


# --- printing like Go ----------------------------------------------------------------------------


def go_number(value: float) -> str:
    """``fmt.Fprint`` of a float64 (``%v``: the shortest digits, ``%e`` form when the decimal
    exponent is below -4 or at least 6, e.g. ``1e+06``, ``0.0001``, ``1.5``)."""
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if math.isnan(value):
        return "NaN"
    if value == 0:
        return "0"
    sign, digit_tuple, exponent = Decimal(repr(value)).normalize().as_tuple()
    assert isinstance(exponent, int)
    digits = "".join(str(d) for d in digit_tuple)
    exp = len(digits) - 1 + exponent  # the decimal exponent of the leading digit
    prefix = "-" if sign else ""
    if exp < -4 or exp >= 6:
        mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{prefix}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if exponent >= 0:
        return prefix + digits + "0" * exponent
    point = len(digits) + exponent
    if point > 0:
        return prefix + digits[:point] + "." + digits[point:]
    return prefix + "0." + "0" * -point + digits


def go_json(value: Any) -> str:
    """Go's ``json.Marshal`` of decoded JSON: sorted keys, no spaces, ``<``, ``>``, ``&`` escaped."""
    text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS).decode()
    return (
        text.replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("&", "\\u0026")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def print_value(value: Any) -> str:
    """What ``JSONPath.PrintResults`` writes for one found value."""
    if value is None:
        return "<no value>"
    if isinstance(value, dict | list):
        return go_json(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return go_number(value)
    return str(value)
