"""Kubernetes label selectors: the ``metav1.LabelSelector`` object and the ``?labelSelector=`` string.

Two spellings of the same idea, with apimachinery's semantics (``pkg/labels/selector.go``):

* ``LabelSelector`` is the structured form found in API objects and in the configuration
  (``managedJobsNamespaceSelector``): ``matchLabels`` plus ``matchExpressions`` with the operators
  ``In``, ``NotIn``, ``Exists`` and ``DoesNotExist``. It is a frozen pydantic model that rejects
  unknown fields and validates like ``ValidateLabelSelector``: ``In``/``NotIn`` need values,
  ``Exists``/``DoesNotExist`` must have none, an unknown operator is an error on
  ``matchExpressions[i].operator``, keys must be qualified names and values valid label values.
* ``Selector`` is the parsed string form used by list/watch requests (``a=b,c!=d,e in (f,g),h,!i``),
  produced by ``parse_selector_string`` and printed back by ``format_selector``.

Matching rules (identical for both, and the reason ``NotIn`` is not the negation of ``In``):
``In``/``=``/``==`` need the key present with a listed value; ``NotIn``/``!=`` match when the key is
absent *or* has another value; ``Exists``/``DoesNotExist`` look at the key only; ``>``/``<`` (string
form only) need the key present with an integer value. An empty ``LabelSelector`` (``{}``) and an
empty string select everything; a *missing* selector (``None``) selects nothing, as
``LabelSelectorAsSelector(nil)`` does -- callers decide what ``None`` means for them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic_core import PydanticCustomError

from shared.kueue.jobmeta import parse_go_int
from shared.validation_k8s import is_label_key, is_label_value

__all__ = [
    "KUBE_SYSTEM",
    "NAMESPACE_NAME_LABEL",
    "LabelSelector",
    "LabelSelectorRequirement",
    "Operator",
    "Requirement",
    "Selector",
    "SelectorSyntaxError",
    "format_selector",
    "parse_selector_string",
    "selector_from_label_selector",
    "system_namespaces_excluded",
]

#: the label kube-apiserver sets on every Namespace: its name (so a selector can name namespaces)
NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"
KUBE_SYSTEM: Final = "kube-system"


def system_namespaces_excluded(kueue_namespace: str) -> dict[str, Any]:
    """The namespaceSelector (wire form) Kueue uses to leave ``kube-system`` and its own namespace
    alone: its default ``managedJobsNamespaceSelector`` and its job webhooks' selector."""
    requirement = {"key": NAMESPACE_NAME_LABEL, "operator": "NotIn", "values": [KUBE_SYSTEM, kueue_namespace]}
    return {"matchExpressions": [requirement]}


def _invalid(value: str, messages: list[str]) -> PydanticCustomError:
    detail = "; ".join(messages)
    return PydanticCustomError(
        "k8s_invalid", "Invalid value: {value}: {detail}", {"value": f'"{value}"', "detail": detail}
    )


# --- requirements -----------------------------------------------------------------------------------
class Operator(StrEnum):
    """Selector operators; the first four are the only ones a ``LabelSelector`` may use."""

    IN = "In"
    NOT_IN = "NotIn"
    EXISTS = "Exists"
    DOES_NOT_EXIST = "DoesNotExist"
    EQUALS = "="
    DOUBLE_EQUALS = "=="
    NOT_EQUALS = "!="
    GREATER_THAN = "gt"
    LESS_THAN = "lt"


_STRUCTURED_OPERATORS: Final = (Operator.IN, Operator.NOT_IN, Operator.EXISTS, Operator.DOES_NOT_EXIST)


@dataclass(frozen=True)
class Requirement:
    """One ``key <operator> values`` clause; ``values`` is sorted and de-duplicated."""

    key: str
    operator: Operator
    values: tuple[str, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        present = self.key in labels
        match self.operator:
            case Operator.EXISTS:
                return present
            case Operator.DOES_NOT_EXIST:
                return not present
            case Operator.IN | Operator.EQUALS | Operator.DOUBLE_EQUALS:
                return present and labels[self.key] in self.values
            case Operator.NOT_IN | Operator.NOT_EQUALS:
                return not present or labels[self.key] not in self.values
            case Operator.GREATER_THAN | Operator.LESS_THAN:
                actual = parse_go_int(labels[self.key]) if present else None
                bound = parse_go_int(self.values[0])
                if actual is None or bound is None:
                    return False
                return actual > bound if self.operator is Operator.GREATER_THAN else actual < bound

    def __str__(self) -> str:
        match self.operator:
            case Operator.EXISTS:
                return self.key
            case Operator.DOES_NOT_EXIST:
                return f"!{self.key}"
            case Operator.IN | Operator.NOT_IN:
                word = "in" if self.operator is Operator.IN else "notin"
                return f"{self.key} {word} ({','.join(self.values)})"
            case Operator.GREATER_THAN:
                return f"{self.key}>{self.values[0]}"
            case Operator.LESS_THAN:
                return f"{self.key}<{self.values[0]}"
            case _:
                return f"{self.key}{self.operator.value}{self.values[0]}"


@dataclass(frozen=True)
class Selector:
    """A conjunction of requirements (sorted by key); no requirements selects everything."""

    requirements: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(requirement.matches(labels) for requirement in self.requirements)

    @property
    def empty(self) -> bool:
        return not self.requirements

    def __str__(self) -> str:
        return ",".join(str(requirement) for requirement in self.requirements)


def _make_selector(requirements: Iterable[Requirement]) -> Selector:
    return Selector(tuple(sorted(requirements, key=lambda requirement: requirement.key)))


# --- the structured form ---------------------------------------------------------------------------
def _drop_nulls(value: object) -> object:
    """``null`` means unset in Kubernetes JSON (``values: null`` is no values)."""
    if isinstance(value, dict):
        return {key: item for key, item in value.items() if item is not None}
    return value


class _SelectorModel(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, strict=True)

    _nulls_are_unset = model_validator(mode="before")(_drop_nulls)


_VALUES_REQUIRED: Final = "must be specified when `operator` is 'In' or 'NotIn'"
_VALUES_FORBIDDEN: Final = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"


class LabelSelectorRequirement(_SelectorModel):
    """One ``matchExpressions`` entry; fields validate in order so ``values`` can see ``operator``."""

    key: str
    operator: str
    values: tuple[str, ...] = Field(default=(), validate_default=True, strict=False)

    @field_validator("key")
    @classmethod
    def _valid_key(cls, key: str) -> str:
        if errors := is_label_key(key):
            raise _invalid(key, errors)
        return key

    @field_validator("operator")
    @classmethod
    def _known_operator(cls, operator: str) -> str:
        if operator not in _STRUCTURED_OPERATORS:
            message = "Invalid value: {value}: not a valid selector operator"
            raise PydanticCustomError("k8s_invalid", message, {"value": f'"{operator}"'})
        return operator

    @field_validator("values")
    @classmethod
    def _values_fit_operator(cls, values: tuple[str, ...], info: ValidationInfo) -> tuple[str, ...]:
        operator = info.data.get("operator")  # absent when the operator itself was invalid
        if operator in (Operator.IN, Operator.NOT_IN) and not values:
            raise PydanticCustomError("k8s_required", f"Required value: {_VALUES_REQUIRED}")
        if operator in (Operator.EXISTS, Operator.DOES_NOT_EXIST) and values:
            raise PydanticCustomError("k8s_forbidden", f"Forbidden: {_VALUES_FORBIDDEN}")
        for value in values:
            if errors := is_label_value(value):
                raise _invalid(value, errors)
        return values

    @model_serializer(mode="plain")
    def _wire(self) -> dict[str, object]:
        wire: dict[str, object] = {"key": self.key, "operator": self.operator}
        if self.values:
            wire["values"] = list(self.values)
        return wire

    def to_requirement(self) -> Requirement:
        return Requirement(self.key, Operator(self.operator), tuple(sorted(set(self.values))))


class LabelSelector(_SelectorModel):
    """``metav1.LabelSelector``: every ``matchLabels`` pair and every expression must hold."""

    match_labels: dict[str, str] = Field(default_factory=dict, alias="matchLabels")
    match_expressions: tuple[LabelSelectorRequirement, ...] = Field(
        default=(), alias="matchExpressions", strict=False
    )

    @field_validator("match_labels")
    @classmethod
    def _valid_labels(cls, labels: dict[str, str]) -> dict[str, str]:
        for key, value in labels.items():
            if errors := is_label_key(key):
                raise _invalid(key, errors)
            if errors := is_label_value(value):
                raise _invalid(value, errors)
        return labels

    def matches(self, labels: Mapping[str, str]) -> bool:
        return selector_from_label_selector(self).matches(labels)

    @model_serializer(mode="plain")
    def to_wire(self) -> dict[str, object]:
        """The selector as Kubernetes JSON; empty parts are omitted as the API server does."""
        wire: dict[str, object] = {}
        if self.match_labels:
            wire["matchLabels"] = dict(self.match_labels)
        if self.match_expressions:
            wire["matchExpressions"] = [expression.model_dump() for expression in self.match_expressions]
        return wire


def selector_from_label_selector(selector: LabelSelector) -> Selector:
    """``metav1.LabelSelectorAsSelector`` for a non-nil selector."""
    requirements = [
        Requirement(key, Operator.EQUALS, (value,)) for key, value in selector.match_labels.items()
    ]
    requirements.extend(expression.to_requirement() for expression in selector.match_expressions)
    return _make_selector(requirements)


def format_selector(selector: Selector | LabelSelector) -> str:
    """The canonical ``?labelSelector=`` string (requirements sorted by key, values sorted)."""
    if isinstance(selector, LabelSelector):
        selector = selector_from_label_selector(selector)
    return str(selector)


# --- the string form -------------------------------------------------------------------------------
class SelectorSyntaxError(ValueError):
    """A ``?labelSelector=`` string that does not parse; ``position`` is the 0-based offset."""

    def __init__(self, text: str, position: int, message: str) -> None:
        super().__init__(f"unable to parse label selector {text!r} at offset {position}: {message}")
        self.text = text
        self.position = position
        self.message = message


_TOKEN: Final = re.compile(r"\s*(?:(?P<op>==|=|!=|!|\(|\)|,|>|<)|(?P<word>[^\s=!(),<>]+))")
_WORD_OPERATORS: Final = {"in": Operator.IN, "notin": Operator.NOT_IN}
_SYMBOL_OPERATORS: Final = {
    "=": Operator.EQUALS,
    "==": Operator.DOUBLE_EQUALS,
    "!=": Operator.NOT_EQUALS,
    ">": Operator.GREATER_THAN,
    "<": Operator.LESS_THAN,
}


@dataclass(frozen=True)
class _Token:
    kind: str  # "op", "word" or "end"
    text: str
    position: int


def _tokenize(text: str) -> list[_Token]:
    tokens: list[_Token] = []
    position = 0
    while position < len(text):
        if text[position:].strip() == "":
            break
        match = _TOKEN.match(text, position)
        if match is None:  # pragma: no cover - every non-space character is an op or a word
            raise SelectorSyntaxError(text, position, "unexpected character")
        kind = "op" if match.group("op") is not None else "word"
        tokens.append(_Token(kind, match.group(kind), match.start(kind)))
        position = match.end()
    tokens.append(_Token("end", "", len(text)))
    return tokens


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.index = 0

    def _peek(self) -> _Token:
        return self.tokens[self.index]

    def _next(self) -> _Token:
        token = self.tokens[self.index]
        self.index += 1
        return token

    def _fail(self, token: _Token, message: str) -> SelectorSyntaxError:
        return SelectorSyntaxError(self.text, token.position, message)

    def _key(self, token: _Token) -> str:
        if token.kind != "word" or token.text in _WORD_OPERATORS:
            raise self._fail(token, f"expected a label key, found {token.text or 'end of string'!r}")
        if errors := is_label_key(token.text):
            raise self._fail(token, f"invalid label key {token.text!r}: {'; '.join(errors)}")
        return token.text

    def _value(self, *, allow_empty: bool) -> str:
        token = self._peek()
        if token.kind != "word":
            if allow_empty:
                return ""
            raise self._fail(token, f"expected a label value, found {token.text or 'end of string'!r}")
        self.index += 1
        if errors := is_label_value(token.text):
            raise self._fail(token, f"invalid label value {token.text!r}: {'; '.join(errors)}")
        return token.text

    def _value_set(self, start: _Token) -> tuple[str, ...]:
        opening = self._next()
        if opening.text != "(":
            raise self._fail(opening, f"expected '(' after {start.text!r}")
        values: list[str] = []
        while True:
            values.append(self._value(allow_empty=True))
            separator = self._next()
            if separator.text == ")":
                break
            if separator.text != ",":
                raise self._fail(separator, "expected ',' or ')' in a value set")
        # "in ()" is the set of the empty value, as apimachinery's Parser.parseValues reads it (a
        # LabelSelector's matchExpressions with no values is the error, not the string form): kube-apiserver
        # answers ?labelSelector=env%20in%20() with the objects whose env label is present and empty
        return tuple(sorted(set(values)))

    def _requirement(self) -> Requirement:
        token = self._next()
        if token.text == "!":
            return Requirement(self._key(self._next()), Operator.DOES_NOT_EXIST)
        key = self._key(token)
        following = self._peek()
        if following.kind == "end" or following.text == ",":
            return Requirement(key, Operator.EXISTS)
        self.index += 1
        if following.kind == "word" and following.text in _WORD_OPERATORS:
            return Requirement(key, _WORD_OPERATORS[following.text], self._value_set(following))
        if following.kind == "op" and following.text in _SYMBOL_OPERATORS:
            operator = _SYMBOL_OPERATORS[following.text]
            if operator in (Operator.GREATER_THAN, Operator.LESS_THAN):
                bound = self._value(allow_empty=False)
                if parse_go_int(bound) is None:
                    message = f"for 'gt', 'lt' operators, the value must be an integer: {bound!r}"
                    raise self._fail(following, message)
                return Requirement(key, operator, (bound,))
            return Requirement(key, operator, (self._value(allow_empty=True),))
        raise self._fail(following, f"unknown operator {following.text!r} after key {key!r}")

    def parse(self) -> Selector:
        requirements: list[Requirement] = []
        if self._peek().kind == "end":
            return Selector()
        while True:
            requirements.append(self._requirement())
            separator = self._next()
            if separator.kind == "end":
                return _make_selector(requirements)
            if separator.text != ",":
                raise self._fail(separator, f"expected ',' between requirements, found {separator.text!r}")


def parse_selector_string(text: str) -> Selector:
    """Parse ``labels.Parse`` syntax; raises ``SelectorSyntaxError`` naming the offset."""
    return _Parser(text).parse()
