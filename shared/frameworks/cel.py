"""Compile-once CEL expressions for the declarative adapter.

Expressions come from configuration, so every failure is reported against the **configuration field**
that holds the expression (``integrations.externalFrameworks[0].adapter.finished``), not against the
job: a user reading the error must know which line of their config to fix.

Invariants:

* **Compile at start-up, once.** ``compile_expression`` parses and type-checks the syntax when the
  adapter is built; programs are cached by source text, so many frameworks (or many pod sets) that
  share an expression share a compiled program.
* **Three variables, always bound.** ``object`` is the whole job; ``element`` and ``index`` are the
  current list item and its position inside a ``forEach`` pod set, and ``null`` elsewhere. Binding them
  always means an expression never fails with "undefined variable" just because of where it is used.
* **Evaluation never raises anything but ``AdapterError``.** The CEL runtime raises ``KeyError`` for a
  missing field, ``TypeError`` for a bad overload, ``ZeroDivisionError``, ``RuntimeError``…; all become
  ``AdapterError(field, ...)``. A result of the wrong type is an error too (``bool`` is never an int).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import cel

from shared.frameworks.base import AdapterConfigError, AdapterError
from shared.frameworks.paths import describe_type

__all__ = [
    "CelExpression",
    "CelSyntaxError",
    "compile_expression",
]


class CelSyntaxError(AdapterConfigError):
    """The expression does not compile; ``path`` is the configuration field holding it."""


@lru_cache(maxsize=512)
def _compile_cached(source: str) -> cel.Program:
    return cel.compile(source)


@dataclass(frozen=True)
class CelExpression:
    """A compiled expression plus the configuration field it came from."""

    source: str
    field: str
    program: cel.Program

    def evaluate(self, obj: dict[str, Any], *, element: Any = None, index: int | None = None) -> Any:
        """The raw result; raises ``AdapterError`` naming ``field`` on any evaluation failure."""
        variables = {"object": obj, "element": element, "index": index}
        try:
            return self.program.execute(variables)
        except KeyError as exc:
            raise AdapterError(
                self.field, f"CEL evaluation of {self.source!r} failed: no such key: {exc}"
            ) from exc
        except Exception as exc:  # the CEL runtime raises many builtin types; all mean "bad input"
            raise AdapterError(self.field, f"CEL evaluation of {self.source!r} failed: {exc}") from exc

    def evaluate_bool(self, obj: dict[str, Any], *, element: Any = None, index: int | None = None) -> bool:
        result = self.evaluate(obj, element=element, index=index)
        if not isinstance(result, bool):
            raise self._wrong_type("a bool", result)
        return result

    def evaluate_int(self, obj: dict[str, Any], *, element: Any = None, index: int | None = None) -> int:
        result = self.evaluate(obj, element=element, index=index)
        if isinstance(result, bool) or not isinstance(result, int):
            raise self._wrong_type("an int", result)
        return result

    def evaluate_str(self, obj: dict[str, Any], *, element: Any = None, index: int | None = None) -> str:
        result = self.evaluate(obj, element=element, index=index)
        if not isinstance(result, str):
            raise self._wrong_type("a string", result)
        return result

    def evaluate_optional_str(
        self, obj: dict[str, Any], *, element: Any = None, index: int | None = None
    ) -> str | None:
        """A string, or ``None`` for a ``null`` or empty result."""
        result = self.evaluate(obj, element=element, index=index)
        if result is None or result == "":
            return None
        if not isinstance(result, str):
            raise self._wrong_type("a string or null", result)
        return result

    def _wrong_type(self, wanted: str, result: Any) -> AdapterError:
        return AdapterError(
            self.field,
            f"CEL expression {self.source!r} must evaluate to {wanted}, got {describe_type(result)} {result!r}",
        )


def compile_expression(source: str, *, field: str) -> CelExpression:
    """Compile ``source`` (cached by text); raises ``CelSyntaxError`` naming ``field``."""
    if not isinstance(source, str) or not source.strip():
        raise CelSyntaxError(field, "CEL expression is empty")
    try:
        program = _compile_cached(source)
    except Exception as exc:  # cel raises ValueError for syntax errors; be robust to others
        raise CelSyntaxError(field, f"invalid CEL expression {source!r}: {exc}") from exc
    return CelExpression(source=source, field=field, program=program)
