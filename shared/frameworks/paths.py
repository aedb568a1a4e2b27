"""Field paths into raw Kubernetes objects: ``spec.replicatedJobs[0].template``.

Adapters read and write user objects through paths rather than typed models, so a path is the unit
of both access and error reporting. Grammar (a superset of what Kueue's and AppWrapper's messages
print):

* ``name`` segments separated by ``.``: map keys (``spec.template``);
* ``[N]`` with a non-negative integer: a list index (``replicatedJobs[0]``);
* ``[key]``, ``['key']`` or ``["key"]``: a map key that may contain dots or slashes
  (``metadata.annotations[kueue.x-k8s.io/job-min-parallelism]``), spelled as ``field.Path`` spells it.

Invariants:

* **Parse once.** ``parse_path`` is cached; a ``FieldPath`` is immutable and hashable.
* **Absent means null.** A missing key and an explicit JSON ``null`` are the same thing (the API
  server does not distinguish them either), so ``get`` with a default returns the default for both.
* **Wrong shapes are errors, never crashes.** Walking into a string, indexing a map, or an index out
  of range raises ``AdapterError`` whose ``path`` is the full path *up to the offending segment*, so
  the message points at the field a user must fix. ``KeyError``/``TypeError``/``IndexError`` never
  escape.
* **Writes create maps, never lists.** ``set`` creates missing intermediate maps; it never invents
  list elements, because a half-built list entry would be an invalid object.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final, TypeVar

from shared.frameworks.base import AdapterError

__all__ = [
    "MISSING",
    "FieldPath",
    "PathSyntaxError",
    "describe_type",
    "parse_path",
]

Segment = str | int
T = TypeVar("T")


class _Missing:
    """Sentinel for "no default given" (``None`` is a legitimate default)."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Final = _Missing()


class PathSyntaxError(ValueError):
    """The text is not a valid field path (a configuration error, raised at parse time)."""

    def __init__(self, text: str, message: str) -> None:
        super().__init__(f"invalid field path {text!r}: {message}")
        self.text = text
        self.message = message


#: JSON Schema's type names, by the Python type a decoder gives (``bool`` before its subclass ``int``)
_JSON_SCHEMA_TYPES: Final[tuple[tuple[type, str], ...]] = (
    (type(None), "null"),
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    (dict, "object"),
    (list, "array"),
)


def describe_type(value: Any) -> str:
    """The JSON type name of a decoded value, for error messages."""
    return next((name for kind, name in _JSON_SCHEMA_TYPES if isinstance(value, kind)), type(value).__name__)


_NAME = re.compile(r"[^.\[\]]+")
_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$-]*")  # rendered dotted; anything else in [brackets]
_INDEX = re.compile(r"\[(?:'([^']*)'|\"([^\"]*)\"|([^\]]*))\]")


def _render(segments: tuple[Segment, ...]) -> str:
    out: list[str] = []
    for segment in segments:
        if isinstance(segment, int):
            out.append(f"[{segment}]")
        elif _IDENTIFIER.fullmatch(segment):
            out.append(f".{segment}" if out else segment)
        else:
            out.append(f"[{segment}]")
    return "".join(out)


@dataclass(frozen=True)
class FieldPath:
    """A parsed path. Build with ``parse_path``; combine with ``join``/``index``/``key``."""

    segments: tuple[Segment, ...]

    @property
    def text(self) -> str:
        return _render(self.segments)

    def __str__(self) -> str:
        return self.text

    def join(self, other: FieldPath) -> FieldPath:
        """``self`` followed by ``other`` (a path relative to the value at ``self``)."""
        return FieldPath(self.segments + other.segments)

    def index(self, position: int) -> FieldPath:
        return FieldPath((*self.segments, position))

    def key(self, name: str) -> FieldPath:
        return FieldPath((*self.segments, name))

    def parent(self) -> FieldPath:
        return FieldPath(self.segments[:-1])

    # --- reading ---------------------------------------------------------------------------------

    def get(self, obj: Any, default: Any = MISSING) -> Any:
        """The value at this path; ``default`` when absent/null, else ``AdapterError``."""
        cursor = obj
        for depth, segment in enumerate(self.segments):
            if cursor is None:
                return self._absent(depth, default)
            if type(segment) is str and type(cursor) is dict:  # the common case, inline (hot path)
                cursor = cursor.get(segment, _ABSENT)
            else:
                cursor = self._step(cursor, depth, segment)
            if cursor is _ABSENT:
                return self._absent(depth + 1, default)
        if cursor is None:
            return self._absent(len(self.segments), default)
        return cursor

    def get_typed(self, obj: Any, expected: type[T], default: Any = MISSING) -> T:
        """Like ``get`` but the value must be an instance of ``expected`` (bools are not ints)."""
        value = self.get(obj, default)
        if value is default and default is not MISSING:
            return value  # type: ignore[no-any-return]
        if type(value) is expected:  # the usual case, without the call (a bool is never an int here)
            return value
        if not _is_instance(value, expected):
            raise AdapterError(self.text, f"expected {_type_word(expected)}, got {describe_type(value)}")
        return value  # type: ignore[no-any-return]

    def exists(self, obj: Any) -> bool:
        return self.get(obj, default=_ABSENT) is not _ABSENT

    # --- writing ---------------------------------------------------------------------------------

    def set(self, obj: Any, value: Any) -> None:
        """Write ``value``, creating missing intermediate maps (never list elements)."""
        if not self.segments:
            raise AdapterError("<root>", "cannot replace the whole object")
        cursor = obj
        for depth, segment in enumerate(self.segments[:-1]):
            nxt = self._step(cursor, depth, segment)
            if nxt is _ABSENT or nxt is None:
                if isinstance(segment, int):
                    raise AdapterError(self._prefix(depth + 1), "list index out of range")
                nxt = {}
                cursor[segment] = nxt
            cursor = nxt
        last = self.segments[-1]
        self._check_container(cursor, len(self.segments) - 1, last)
        if isinstance(last, int) and last >= len(cursor):
            raise AdapterError(self.text, f"list index out of range (length {len(cursor)})")
        cursor[last] = value

    def delete(self, obj: Any) -> bool:
        """Remove the field; return whether it was present. Deleting a list element is refused."""
        if not self.segments:
            raise AdapterError("<root>", "cannot delete the whole object")
        parent = self.parent().get(obj, default=None)
        if parent is None:
            return False
        last = self.segments[-1]
        if isinstance(last, int):
            raise AdapterError(self.text, "cannot delete a list element by path")
        self._check_container(parent, len(self.segments) - 1, last)
        if last in parent:
            del parent[last]
            return True
        return False

    # --- internals -------------------------------------------------------------------------------

    def _prefix(self, depth: int) -> str:
        return _render(self.segments[:depth]) or "<root>"

    def _absent(self, depth: int, default: Any) -> Any:
        if default is MISSING:
            raise AdapterError(self._prefix(depth), "required field is missing")
        return default

    def _check_container(self, cursor: Any, depth: int, segment: Segment) -> None:
        if isinstance(segment, int):
            if not isinstance(cursor, list):
                raise AdapterError(self._prefix(depth), f"expected an array, got {describe_type(cursor)}")
        elif not isinstance(cursor, dict):
            raise AdapterError(self._prefix(depth), f"expected an object, got {describe_type(cursor)}")

    def _step(self, cursor: Any, depth: int, segment: Segment) -> Any:
        self._check_container(cursor, depth, segment)
        if isinstance(segment, int):
            if segment >= len(cursor):
                return _ABSENT
            return cursor[segment]
        return cursor.get(segment, _ABSENT)


_ABSENT: Final = object()


def _is_instance(value: Any, expected: type) -> bool:
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if expected is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    return isinstance(value, expected)


def _type_word(expected: type) -> str:
    return {
        int: "an integer",
        float: "a number",
        str: "a string",
        bool: "a boolean",
        dict: "an object",
        list: "an array",
    }.get(expected, expected.__name__)


@lru_cache(maxsize=1024)
def parse_path(text: str) -> FieldPath:
    """Parse ``text`` once (cached); raises ``PathSyntaxError`` naming the text."""
    if not isinstance(text, str) or not text:
        raise PathSyntaxError(str(text), "empty path")
    segments: list[Segment] = []
    pos = 0
    expect_name = True
    while pos < len(text):
        char = text[pos]
        if char == "[":
            match = _INDEX.match(text, pos)
            if match is None:
                raise PathSyntaxError(text, f"unclosed '[' at position {pos}")
            quoted = match.group(1) if match.group(1) is not None else match.group(2)
            raw = match.group(3)
            if quoted is not None:
                if not quoted:
                    raise PathSyntaxError(text, f"empty key at position {pos}")
                segments.append(quoted)
            elif raw is not None and raw.isdigit():
                segments.append(int(raw))
            elif raw:
                if raw.startswith("-") and raw[1:].isdigit():
                    raise PathSyntaxError(text, f"negative index at position {pos}")
                segments.append(raw)
            else:
                raise PathSyntaxError(text, f"empty index at position {pos}")
            pos = match.end()
            expect_name = False
        elif char == ".":
            if expect_name:
                raise PathSyntaxError(text, f"unexpected '.' at position {pos}")
            pos += 1
            expect_name = True
            if pos == len(text):
                raise PathSyntaxError(text, "path ends with '.'")
        else:
            if not expect_name:
                raise PathSyntaxError(text, f"expected '.' or '[' at position {pos}")
            match = _NAME.match(text, pos)
            if match is None:  # only a stray ']' gets here
                raise PathSyntaxError(text, f"unexpected {char!r} at position {pos}")
            segments.append(match.group(0))
            pos = match.end()
            expect_name = False
    if expect_name:
        raise PathSyntaxError(text, "path ends with '.'")
    return FieldPath(tuple(segments))
