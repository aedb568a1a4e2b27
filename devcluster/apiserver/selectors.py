"""Label and field selectors with kube-apiserver's syntax and semantics.

Label selectors: ``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k`` (exists),
``!k`` (does not exist), comma separated (all must hold). As in Kubernetes, ``!=`` and ``notin``
also match objects that lack the label; a ``metav1.LabelSelector`` object is matched by
:func:`label_selector_matches`. Field selectors: ``path=v``, ``path==v``, ``path!=v`` over
``metadata.name``, ``metadata.namespace`` and the resource's own selectable fields; any other field
is a 400 BadRequest whose text depends on the kind, as on the real server (:func:`unknown_field_label`):
``"x" is not a known field selector: only "metadata.name", "metadata.namespace"`` for built-in kinds
without selectable fields of their own, ``field label "x" not supported for Job`` for batch Jobs,
``field label not supported: x`` for the other built-in kinds and for custom resources.

Selectors are parsed once per request into predicates; matching is a dict lookup per requirement.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from devcluster.apiserver.errors import bad_request

__all__ = [
    "FieldSelector",
    "LabelSelector",
    "Selector",
    "field_value",
    "label_selector_matches",
    "unknown_field_label",
]

_KEY = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_SET_REQ = re.compile(r"^\s*(\S+)\s+(in|notin)\s*\((.*)\)\s*$")


def _split_top_level(text: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [p for p in (part.strip() for part in parts) if p]


def _check_key(key: str) -> None:
    if not _KEY.match(key) or len(key.rsplit("/", 1)[-1]) > 63:
        raise bad_request(f"unable to parse requirement: invalid label key {key!r}")


def _check_value(value: str) -> None:
    if len(value) > 63 or not _VALUE.match(value):
        raise bad_request(f"unable to parse requirement: invalid label value: {value!r}")


@dataclass(frozen=True, slots=True)
class _Requirement:
    key: str
    op: str  # "=", "!=", "in", "notin", "exists", "!"
    values: frozenset[str]

    def matches(self, labels: dict[str, str]) -> bool:
        present = self.key in labels
        if self.op == "exists":
            return present
        if self.op == "!":
            return not present
        if self.op in {"=", "in"}:
            return present and labels[self.key] in self.values
        return not present or labels[self.key] not in self.values


class LabelSelector:
    """A parsed ``labelSelector`` query parameter."""

    def __init__(self, text: str) -> None:
        self.requirements: list[_Requirement] = []
        for part in _split_top_level(text):
            self.requirements.append(self._parse(part))

    @staticmethod
    def _parse(part: str) -> _Requirement:
        set_match = _SET_REQ.match(part)
        if set_match:
            key, op, raw = set_match.groups()
            _check_key(key)
            values = frozenset(v.strip() for v in raw.split(",") if v.strip())
            for value in values:
                _check_value(value)
            return _Requirement(key, op, values)
        for token, op in (("!=", "!="), ("==", "="), ("=", "=")):
            if token in part:
                key, value = (s.strip() for s in part.split(token, 1))
                _check_key(key)
                _check_value(value)
                return _Requirement(key, op, frozenset({value}))
        if part.startswith("!"):
            key = part[1:].strip()
            _check_key(key)
            return _Requirement(key, "!", frozenset())
        if " " in part or "(" in part:
            raise bad_request(
                f"unable to parse requirement: found '{part}', expected: '=', '!=', '==', 'in', notin'"
            )
        _check_key(part)
        return _Requirement(part, "exists", frozenset())

    def matches(self, obj: dict[str, Any]) -> bool:
        if not self.requirements:
            return True
        labels = obj.get("metadata", {}).get("labels") or {}
        return all(req.matches(labels) for req in self.requirements)

    @classmethod
    def from_match_labels(cls, match: dict[str, Any]) -> LabelSelector:
        """A ``metav1.LabelSelector`` object (matchLabels / matchExpressions) as a selector."""
        selector = cls("")
        for key, value in (match.get("matchLabels") or {}).items():
            selector.requirements.append(_Requirement(key, "=", frozenset({str(value)})))
        ops = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}
        for expr in match.get("matchExpressions") or []:
            op = ops.get(expr.get("operator", ""))
            if op is None:
                raise bad_request(f"{expr.get('operator')!r} is not a valid label selector operator")
            selector.requirements.append(_Requirement(expr["key"], op, frozenset(expr.get("values") or [])))
        return selector


def label_selector_matches(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool | None:
    """Whether a ``metav1.LabelSelector`` object selects ``labels`` (``{}`` selects everything);
    ``None`` when it is not a valid selector (``LabelSelectorAsSelector`` fails: nothing is decided)."""
    match_labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not isinstance(match_labels, Mapping) or not isinstance(expressions, list):
        return None
    matched = all(labels.get(key) == value for key, value in match_labels.items())
    for expression in expressions:
        if not isinstance(expression, Mapping):
            return None
        key, operator, values = (
            expression.get("key"),
            expression.get("operator"),
            expression.get("values") or [],
        )
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist") or not isinstance(values, list):
            return None
        if not isinstance(key, str):
            return None
        present, value = key in labels, labels.get(key)
        if operator == "In":
            matched &= present and value in values
        elif operator == "NotIn":
            matched &= not present or value not in values
        else:
            matched &= present == (operator == "Exists")
    return matched


def field_value(obj: dict[str, Any], path: str) -> str:
    """The string form kube compares a field selector against ("" when absent)."""
    current: Any = obj
    for part in path.split("."):
        if not isinstance(current, dict):
            return ""
        current = current.get(part)
    if current is None:
        return ""
    if isinstance(current, bool):
        return "true" if current else "false"
    return str(current)


def _field_requirement(text: str, part: str) -> tuple[str, bool, str]:
    for token, equal in (("!=", False), ("==", True), ("=", True)):
        if token in part:
            path, value = (s.strip() for s in part.split(token, 1))
            return path, equal, value
    raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")


def unknown_field_label(
    *, group: str, kind: str, builtin: bool, selectable: tuple[str, ...]
) -> Callable[[str], str]:
    """The message kube-apiserver gives for an unknown field label of this kind: the generic
    ``DefaultMetaV1FieldSelectorConversion`` for built-in kinds that register no field label
    conversion (no selectable fields of their own), else the kind's conversion function's text."""
    if builtin and not selectable:
        return lambda path: (
            f'"{path}" is not a known field selector: only "metadata.name", "metadata.namespace"'
        )
    if builtin and group == "batch":
        return lambda path: f'field label "{path}" not supported for {kind}'
    return lambda path: f"field label not supported: {path}"


class FieldSelector:
    """A parsed ``fieldSelector`` query parameter, checked against the resource's selectable fields."""

    def __init__(
        self, text: str, *, allowed: tuple[str, ...], unknown: Callable[[str], str] | None = None
    ) -> None:
        self.requirements: list[tuple[str, bool, str]] = []  # (path, equal?, value)
        allowed_set = {"metadata.name", "metadata.namespace", *allowed}
        for part in _split_top_level(text):
            path, equal, value = _field_requirement(text, part)
            if path not in allowed_set:
                raise bad_request(
                    unknown(path) if unknown is not None else f"field label not supported: {path}"
                )
            self.requirements.append((path, equal, value))

    def matches(self, obj: dict[str, Any]) -> bool:
        return all((field_value(obj, path) == value) == equal for path, equal, value in self.requirements)

    def exact_name(self) -> str | None:
        for path, equal, value in self.requirements:
            if path == "metadata.name" and equal:
                return value
        return None


class Selector:
    """Label and field selectors together; ``matches`` is the predicate lists and watches apply."""

    def __init__(
        self,
        *,
        labels: str,
        fields: str,
        allowed_fields: tuple[str, ...],
        unknown_field: Callable[[str], str] | None = None,
    ) -> None:
        self.label = LabelSelector(labels) if labels else None
        self.field = FieldSelector(fields, allowed=allowed_fields, unknown=unknown_field) if fields else None
        self.matches: Callable[[dict[str, Any]], bool]
        if self.label is None and self.field is None:
            self.matches = _always
        else:
            self.matches = self._both

    def _both(self, obj: dict[str, Any]) -> bool:
        if self.label is not None and not self.label.matches(obj):
            return False
        return self.field is None or self.field.matches(obj)

    @property
    def empty(self) -> bool:
        return self.label is None and self.field is None


def _always(obj: dict[str, Any]) -> bool:
    return True
