"""The part of kube's CEL type check the devcluster can reproduce for webhook ``matchConditions``.

kube-apiserver compiles a condition in an environment that declares ``object``, ``oldObject``,
``request`` (the typed ``AdmissionRequest``), ``authorizer`` and ``namespaceObject``, and refuses a
configuration whose expression does not check, e.g. (1.36.2, verbatim)::

    compilation failed: ERROR: <input>:1:1: undeclared reference to 'params' (in container '')
     | params.a == 1
     | ^

The ``cel`` binding parses but has no checker, so :func:`type_issues` reproduces two common
mistakes with kube's texts and positions (1-based line and column, the source line and a caret):

* **undeclared variables**: names the binding's static ``references()`` reports that kube does not
  declare, minus comprehension variables (``x`` of ``list.all(x, ...)``) and type names
  (``int``, ``map``); one issue per use;
* **unknown fields of ``request``** and of its typed parts (``kind``/``requestKind``,
  ``resource``/``requestResource``, ``userInfo``): ``undefined field 'userinfo'`` at the ``.``
  before the field, or at ``has(``'s parenthesis when the field is the one ``has`` tests.

Everything else kube's checker finds (undeclared functions, overloads, non-bool results) is not
reproduced. Lenient by construction: what cannot be located with certainty is let through, and
fails at request time instead (the webhook's failurePolicy then applies).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final

__all__ = ["DECLARED_VARIABLES", "type_issues"]

#: the variables kube declares for webhook matchConditions
DECLARED_VARIABLES: Final = frozenset({"object", "oldObject", "request", "authorizer", "namespaceObject"})
_TYPE_NAMES: Final = frozenset(
    {"bool", "bytes", "double", "dyn", "int", "list", "map", "null_type", "string", "type", "uint"}
)
#: ``.all(x, ...)``, ``.map(k, v, ...)``...: the names a macro binds
_COMPREHENSION: Final = re.compile(r"\.\s*[A-Za-z_]\w*\s*\(\s*([A-Za-z_]\w*)\s*,(?:\s*([A-Za-z_]\w*)\s*,)?")
#: string/bytes literals (any quoting, optional r/b prefixes), numbers, identifiers
_TOKEN: Final = re.compile(
    r"(?P<string>[rRbB]{0,2}(?:\"\"\"[\s\S]*?\"\"\"|'''[\s\S]*?'''|\"(?:\\.|[^\"\\\n])*\"|'(?:\\.|[^'\\\n])*'))"
    r"|(?P<number>\d[\w.]*)"
    r"|(?P<ident>[A-Za-z_]\w*)"
)
_REQUEST_CHAIN: Final = re.compile(r"(?<![\w.])request((?:\s*\.\s*[A-Za-z_]\w*)+)")
_SELECT: Final = re.compile(r"\s*(\.)\s*([A-Za-z_]\w*)")

_Schema = Mapping[str, "_Schema | None"]
_GVK: Final[_Schema] = {"group": None, "version": None, "kind": None}
_GVR: Final[_Schema] = {"group": None, "version": None, "resource": None}
#: the declared fields of kube's AdmissionRequest type; None: a leaf (or dyn) not checked further
_REQUEST: Final[_Schema] = {
    "kind": _GVK,
    "requestKind": _GVK,
    "resource": _GVR,
    "requestResource": _GVR,
    "subResource": None,
    "requestSubResource": None,
    "name": None,
    "namespace": None,
    "operation": None,
    "userInfo": {"username": None, "uid": None, "groups": None, "extra": None},
    "dryRun": None,
    "options": None,
}


def _without_literals(expression: str) -> str:
    """``expression`` with string and bytes literals blanked (same length, newlines kept)."""
    pieces: list[str] = []
    last = 0
    for match in _TOKEN.finditer(expression):
        if match.group("string") is not None:
            pieces.append(expression[last : match.start()])
            pieces.append(re.sub(r"[^\n]", " ", match.group()))
            last = match.end()
    pieces.append(expression[last:])
    return "".join(pieces)


def _undeclared_uses(expression: str, variables: Iterable[str]) -> list[tuple[int, str]]:
    bound = {name for match in _COMPREHENSION.finditer(expression) for name in match.groups() if name}
    unknown = set(variables) - DECLARED_VARIABLES - _TYPE_NAMES - bound
    if not unknown:
        return []
    uses: list[tuple[int, str]] = []
    for match in _TOKEN.finditer(expression):
        name = match.group("ident")
        if name not in unknown:
            continue
        if expression[: match.start()].rstrip().endswith(".") or expression[
            match.end() :
        ].lstrip().startswith("("):
            continue  # a field or a function, not a variable
        uses.append((match.start(), f"undeclared reference to '{name}' (in container '')"))
    return uses


def _undefined_request_fields(expression: str) -> list[tuple[int, str]]:
    code = _without_literals(expression)
    issues: list[tuple[int, str]] = []
    for chain in _REQUEST_CHAIN.finditer(code):
        schema: _Schema | None = _REQUEST
        position = chain.start(1)
        selects = list(_SELECT.finditer(code, position, chain.end(1)))
        for index, select in enumerate(selects):
            if schema is None or code[select.end() :].lstrip().startswith("("):
                break  # a leaf, or a method call on the value
            field = select.group(2)
            if field not in schema:
                at = select.start(1)
                opening = re.search(r"has\s*\(\s*$", code[: chain.start()])
                last = index == len(selects) - 1
                if opening is not None and last and code[chain.end() :].lstrip().startswith(")"):
                    at = code.index("(", opening.start())
                issues.append((at, f"undefined field '{field}'"))
                break
            schema = schema[field]
    return issues


def type_issues(expression: str, variables: Iterable[str]) -> list[str]:
    """kube's checker issues for ``expression`` (module docstring), in source order; ``variables``
    are the names the binding's ``Program.references()`` found."""
    found = sorted(_undeclared_uses(expression, variables) + _undefined_request_fields(expression))
    lines = expression.split("\n")
    issues = []
    for offset, message in found:
        line = expression.count("\n", 0, offset) + 1
        column = offset - (expression.rfind("\n", 0, offset) + 1) + 1
        issues.append(
            f"ERROR: <input>:{line}:{column}: {message}\n | {lines[line - 1]}\n | {'.' * (column - 1)}^"
        )
    return issues
