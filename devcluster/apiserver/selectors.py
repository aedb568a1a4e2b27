"""Label and field selectors with kube-apiserver's syntax and semantics.

Label selectors are ``shared.labelselector`` (apimachinery's ``labels.Parse`` syntax and semantics,
``>``/``<`` included; a ``metav1.LabelSelector`` object is matched by :func:`label_selector_matches`);
this module turns a selector that does not parse into kube's 400. The API server's field selectors
are its own: ``path=v``, ``path==v``, ``path!=v`` over ``metadata.name``, ``metadata.namespace``
and the resource's own selectable fields; any other field is a 400 BadRequest whose text depends on
the kind, as on the real server (:func:`unknown_field_label`):
``"x" is not a known field selector: only "metadata.name", "metadata.namespace"`` for built-in kinds
without selectable fields of their own, ``field label "x" not supported for Job`` for batch Jobs,
``field label not supported: x`` for the other built-in kinds and for custom resources.

Selectors are parsed once per request into predicates; matching is a dict lookup per requirement.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pydantic import ValidationError

from devcluster.apiserver.errors import bad_request
from shared.labelselector import LabelSelector as SharedLabelSelector
from shared.labelselector import SelectorSyntaxError, parse_selector_string

__all__ = [
    "FieldSelector",
    "LabelSelector",
    "Selector",
    "field_value",
    "label_selector_matches",
    "unknown_field_label",
]


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


class LabelSelector:
    """A parsed ``labelSelector`` query parameter (``shared.labelselector``'s parser and matching);
    a string that does not parse is a 400 BadRequest."""

    def __init__(self, text: str) -> None:
        try:
            self.selector = parse_selector_string(text)
        except SelectorSyntaxError as exc:
            raise bad_request(f"unable to parse requirement: {exc.message}") from exc

    def matches(self, obj: dict[str, Any]) -> bool:
        if self.selector.empty:
            return True
        labels = obj.get("metadata", {}).get("labels") or {}
        return self.selector.matches(labels)


def label_selector_matches(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool | None:
    """Whether a ``metav1.LabelSelector`` object selects ``labels`` (``{}`` selects everything);
    ``None`` when it is not a valid selector (``LabelSelectorAsSelector`` fails: nothing is decided)."""
    try:
        parsed = SharedLabelSelector.model_validate(selector)
    except ValidationError:
        return None
    return parsed.matches({key: value for key, value in labels.items() if isinstance(value, str)})


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
