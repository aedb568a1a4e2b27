"""Turn a CRD's ``openAPIV3Schema`` into a JSON Schema that rejects fields the CRD does not know.

The API server *prunes* unknown fields of a structural schema silently (or rejects them under
``fieldValidation=Strict``); to make "``to_wire()`` only emits fields the CRD accepts" testable, this
helper closes every object the CRD describes:

* an object with ``properties`` and without ``x-kubernetes-preserve-unknown-fields`` gets
  ``additionalProperties: false``;
* ``x-kubernetes-embedded-resource`` objects also accept ``apiVersion``/``kind``/``metadata``;
* ``x-kubernetes-int-or-string`` becomes ``anyOf: [integer, string]`` (a ``pattern`` beside it only
  constrains the string branch, as in Kubernetes);
* ``nullable: true`` adds ``"null"`` to the type;
* a Go (RE2) inline flag after the anchor, ``^(?i)...``, is moved first, where Python's ``re``
  requires global flags.

Everything else (``required``, ``enum``, ``pattern``, ``maxItems``, ``minimum`` ...) is standard JSON
Schema and is kept; CEL ``x-kubernetes-validations`` cannot be evaluated here and are dropped, and
``format`` is not checked. Objects without ``properties`` (the root ``metadata``) stay open, as the
API server validates ObjectMeta itself.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs in the dev extra
import yaml

__all__ = ["crd_file_for", "load_crd_json_schema", "schema_errors", "to_json_schema"]

_DROPPED = {"description", "x-kubernetes-validations", "nullable", "default"}
_NESTED_LISTS = ("allOf", "anyOf", "oneOf")


def to_json_schema(node: dict[str, Any]) -> dict[str, Any]:
    """A closed JSON Schema (draft 4) equivalent of one structural-schema node."""
    result: dict[str, Any] = {
        key: value
        for key, value in node.items()
        if key not in _DROPPED and not key.startswith("x-kubernetes-")
    }
    if "properties" in node:
        properties = {name: to_json_schema(child) for name, child in node["properties"].items()}
        if node.get("x-kubernetes-embedded-resource"):
            properties.setdefault("apiVersion", {"type": "string"})
            properties.setdefault("kind", {"type": "string"})
            properties.setdefault("metadata", {"type": "object"})
        result["properties"] = properties
        if not node.get("x-kubernetes-preserve-unknown-fields"):
            result["additionalProperties"] = False
    if isinstance(node.get("items"), dict):
        result["items"] = to_json_schema(node["items"])
    if isinstance(node.get("additionalProperties"), dict):
        result["additionalProperties"] = to_json_schema(node["additionalProperties"])
    if isinstance(node.get("not"), dict):
        result["not"] = to_json_schema(node["not"])
    for keyword in _NESTED_LISTS:
        if keyword in node:
            result[keyword] = [to_json_schema(child) for child in node[keyword]]
    if isinstance(node.get("pattern"), str):
        result["pattern"] = _python_regex(node["pattern"])
    if node.get("x-kubernetes-int-or-string"):
        result.pop("type", None)
        result.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    if node.get("nullable") and isinstance(result.get("type"), str):
        result["type"] = [result["type"], "null"]
    return result


def _python_regex(pattern: str) -> str:
    for flag in ("(?i)",):
        if pattern.startswith(f"^{flag}"):
            return flag + "^" + pattern[len(flag) + 1 :]
    return pattern


def crd_file_for(crd_dir: Path, *, plural: str) -> Path:
    return crd_dir / f"kueue.x-k8s.io_{plural}.yaml"


@functools.cache
def _load_crd(crd_file: Path) -> dict[str, Any]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    crd: dict[str, Any] = yaml.load(crd_file.read_text(), Loader=loader)
    return crd


def load_crd_json_schema(crd_file: Path, *, version: str) -> dict[str, Any]:
    """The closed JSON Schema of ``version`` (e.g. ``v1beta2``) of the CRD in ``crd_file``."""
    crd = _load_crd(crd_file)
    for served in crd["spec"]["versions"]:
        if served["name"] == version:
            schema = to_json_schema(served["schema"]["openAPIV3Schema"])
            jsonschema.Draft4Validator.check_schema(schema)
            return schema
    raise LookupError(f"{crd_file.name} has no version {version}")


def schema_errors(schema: dict[str, Any], instance: dict[str, Any]) -> list[str]:
    """Every violation, as ``path: message`` (``[]`` when the instance is valid)."""
    validator = jsonschema.Draft4Validator(schema)
    return sorted(
        f"{'.'.join(str(part) for part in error.absolute_path) or '<root>'}: {error.message}"
        for error in validator.iter_errors(instance)
    )
