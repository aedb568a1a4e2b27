"""Mutating/ValidatingWebhookConfiguration validation: the ``matchConditions`` rules of
``pkg/apis/admissionregistration/validation``, with kube-apiserver's field paths and texts.

A configuration the real server refuses must not be accepted by the devcluster, or a manifest that
works in dev fails on the first real cluster. For each ``webhooks[i].matchConditions`` list, in
kube's order: at most 64 entries (``Too many: 65: must have at most 64 items``); per entry the
``expression`` (required after trimming spaces; must compile, ``Invalid value: "<expr>":
compilation failed: ...``), then the ``name`` (required; a qualified name, the label-key rule); then a duplicate ``name`` (``Duplicate value: "a"`` on the later entry).

Only ``matchConditions`` are validated here: the devcluster trusts the rest of these objects (the
kit's and our own manifests are checked against the real server by the conformance suite). The
compile check covers syntax errors and undeclared variables; see
:mod:`devcluster.apiserver.match_conditions` for the type errors kube also reports.
"""

from __future__ import annotations

from typing import Any

from devcluster.apiserver.errors import Cause
from devcluster.apiserver.match_conditions import MAX_MATCH_CONDITIONS, compile_problem
from devcluster.apiserver.validation.objectmeta import field_duplicate, field_invalid, field_required
from shared.validation_k8s import is_label_key

__all__ = ["validate_webhook_configuration"]


def _too_many(path: str, count: int) -> Cause:
    return Cause(
        path, "FieldValueTooMany", f"Too many: {count}: must have at most {MAX_MATCH_CONDITIONS} items"
    )


def _condition_causes(condition: Any, path: str) -> list[Cause]:
    condition = condition if isinstance(condition, dict) else {}
    causes: list[Cause] = []
    expression = condition.get("expression")
    expression = expression if isinstance(expression, str) else ""
    if not expression.strip():
        causes.append(field_required(f"{path}.expression"))
    else:
        problem = compile_problem(expression.strip())
        if problem is not None:
            causes.append(field_invalid(f"{path}.expression", expression.strip(), problem))
    name = condition.get("name")
    name = name if isinstance(name, str) else ""
    if not name:
        causes.append(field_required(f"{path}.name"))
    else:  # apimachinery's IsQualifiedName is the label-key check: an optional DNS prefix and '/'
        causes.extend(field_invalid(f"{path}.name", name, message) for message in is_label_key(name))
    return causes


def _match_conditions_causes(conditions: Any, path: str) -> list[Cause]:
    if not isinstance(conditions, list):
        return []
    causes: list[Cause] = []
    if len(conditions) > MAX_MATCH_CONDITIONS:
        causes.append(_too_many(path, len(conditions)))
    seen: set[str] = set()
    for index, condition in enumerate(conditions):
        entry = f"{path}[{index}]"
        causes.extend(_condition_causes(condition, entry))
        name = condition.get("name") if isinstance(condition, dict) else None
        if isinstance(name, str) and name:
            if name in seen:
                causes.append(field_duplicate(f"{entry}.name", name))
            seen.add(name)
    return causes


def validate_webhook_configuration(config: dict[str, Any]) -> list[Cause]:
    """Causes for every webhook's ``matchConditions`` (module docstring); empty when valid."""
    causes: list[Cause] = []
    webhooks = config.get("webhooks")
    for index, webhook in enumerate(webhooks if isinstance(webhooks, list) else []):
        if isinstance(webhook, dict):
            causes.extend(
                _match_conditions_causes(webhook.get("matchConditions"), f"webhooks[{index}].matchConditions")
            )
    return causes
