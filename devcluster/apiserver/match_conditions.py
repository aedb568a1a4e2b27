"""Webhook ``matchConditions``: compiled once, evaluated per request, judged as kube-apiserver does.

A webhook whose rules and selectors match is only called when its CEL ``matchConditions`` agree
(``k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions``). The outcome, in kube's order:

* any condition evaluates to ``false`` -> the webhook is skipped, whatever errors others raised;
* otherwise any evaluation error -> with ``failurePolicy: Fail`` the request is refused, 403
  ``Forbidden``: ``<resource>[.<group>] "<name>" is forbidden: <error>``, where ``<error>`` is
  ``expression '<expr>' resulted in error: <cause>`` for one error and ``[<e1>, <e2>]`` for several
  (``utilerrors.NewAggregate``); with ``Ignore`` the webhook is skipped;
* otherwise (all ``true``) the webhook is called.

Variables are those kube binds: ``object`` and ``oldObject`` (``null`` where the operation has none:
CREATE has no old object, DELETE no object), ``namespaceObject`` (declared, always ``null`` for
webhooks), ``authorizer`` and ``request``, the AdmissionRequest as sent to the
webhook but without ``uid``, ``object`` and ``oldObject``, *with Go's omitempty*: a request without
a subresource has no ``subResource`` key, so ``request.subResource`` is the error
``no such key: subResource`` on both servers. Field access on a ``null`` variable is kube's
``no such key: <field>`` too.

Invariants and known differences (stated, not hidden):

* **Compile once per expression text** (:func:`compiled`, an LRU cache shared by every webhook and
  by configuration validation), never per request.
* Configuration validation (:func:`compile_problem`) reproduces kube's texts byte for byte for
  **syntax** errors (``compilation failed: ERROR: <input>:1:24: Syntax error: ...``, the source
  line and caret after `` | ``) and for the type errors :mod:`.cel_checks` can find (undeclared
  variables, unknown ``request`` fields). The rest of kube's type check has no counterpart in the
  ``cel`` binding: an undeclared function, an overload mismatch or a non-bool result is accepted
  here and becomes an evaluation error at request time (failurePolicy applies), not a 422.
* ``authorizer`` is bound (by the caller's ``bind``, :mod:`.cel_authorizer`) only for expressions
  that reference it, since building it costs a ``cel.Context`` per evaluation.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

import cel

from devcluster.apiserver.cel_checks import type_issues

__all__ = [
    "MAX_MATCH_CONDITIONS",
    "Binder",
    "MatchOutcome",
    "compile_problem",
    "compiled",
    "evaluate_match_conditions",
]

Binder = Callable[[Mapping[str, Any], bool], Any]
"""``(variables, with_authorizer)`` -> the dict or ``cel.Context`` a program executes with."""

#: kube's limit on ``matchConditions`` per webhook
MAX_MATCH_CONDITIONS: Final = 64
_PARSE_PREFIX: Final = "Failed to parse expression "
#: CEL's names for the binding's result types (kube's "must evaluate to bool but got <type>")
_CEL_TYPE_NAMES: Final[dict[type, str]] = {
    str: "string",
    int: "int",
    float: "double",
    bytes: "bytes",
    list: "list",
    dict: "map",
    type(None): "null_type",
}


@lru_cache(maxsize=1024)
def compiled(expression: str) -> cel.Program:
    """The program for ``expression`` (cached by text); raises ``ValueError`` when it does not parse."""
    return cel.compile(expression)


def _kube_compile_text(message: str, expression: str) -> str:
    """The ``cel`` library's parse error as cel-go prints it (``Issues.String()``)."""
    quoted = f"{_PARSE_PREFIX}'{expression}': "
    if message.startswith(quoted):
        message = message[len(quoted) :]
    lines = message.split("\n")
    return "\n".join(" " + line if line.startswith("|") else line for line in lines)


def compile_problem(expression: str) -> str | None:
    """kube's ``Invalid value`` detail for an expression that does not compile, None when it does."""
    try:
        program = compiled(expression)
    except Exception as exc:  # the binding raises ValueError for parse errors; be robust to others
        return "compilation failed: " + _kube_compile_text(str(exc), expression)
    issues = type_issues(expression, program.references()["variables"])
    if not issues:
        return None
    return "compilation failed: " + "\n".join(issues)


@dataclass(frozen=True, slots=True)
class MatchOutcome:
    """``matches``: call the webhook. ``error``: the aggregated evaluation error (call nothing)."""

    matches: bool
    error: str | None = None


def _cause(exc: Exception) -> str:
    if isinstance(exc, KeyError) and exc.args:
        return f"no such key: {exc.args[0]}"
    return str(exc) or type(exc).__name__


@lru_cache(maxsize=1024)
def _uses_authorizer(expression: str) -> bool:
    return "authorizer" in compiled(expression).references()["variables"]


def _evaluate(expression: str, variables: Mapping[str, Any], bind: Binder) -> Any:
    """One evaluation; a selection on a ``null`` variable fails the way cel-go reports it."""
    program = compiled(expression)
    with_authorizer = _uses_authorizer(expression)
    try:
        return program.execute(bind(variables, with_authorizer))
    except TypeError:
        absent = [name for name, value in variables.items() if value is None]
        if not absent:
            raise
        # The binding reports ``null.field`` as an overload error without naming the field; cel-go
        # says ``no such key: <field>``. Re-running with the null variables as empty maps names it.
        try:
            program.execute(bind({**variables, **{name: {} for name in absent}}, with_authorizer))
        except KeyError as missing:
            raise missing from None
        except Exception:
            pass
        raise


def _plain(variables: Mapping[str, Any], with_authorizer: bool) -> Any:
    return dict(variables)


def evaluate_match_conditions(
    conditions: Sequence[Mapping[str, Any]],
    *,
    variables: Mapping[str, Any],
    fail_closed: bool,
    bind: Binder = _plain,
) -> MatchOutcome:
    """Judge one webhook's conditions (module docstring); ``fail_closed`` is ``failurePolicy: Fail``;
    ``bind`` makes what a program executes with (it adds ``authorizer`` when asked to)."""
    errors: list[str] = []
    for condition in conditions:
        expression = str(condition.get("expression") or "")
        try:
            result = _evaluate(expression, variables, bind)
        except Exception as exc:  # CEL runtime errors arrive as KeyError, TypeError, RuntimeError...
            errors.append(f"expression '{expression}' resulted in error: {_cause(exc)}")
            continue
        if result is False:
            return MatchOutcome(matches=False)
        if result is not True:  # kube's type check refuses such an expression at configuration time
            shown = _CEL_TYPE_NAMES.get(type(result), type(result).__name__)
            errors.append(
                f"expression '{expression}' resulted in error: must evaluate to bool but got {shown}"
            )
    if errors:
        if not fail_closed:
            return MatchOutcome(matches=False)
        return MatchOutcome(matches=False, error=errors[0] if len(errors) == 1 else f"[{', '.join(errors)}]")
    return MatchOutcome(matches=True)
