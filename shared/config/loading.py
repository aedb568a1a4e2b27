"""Reading a configuration file: YAML (duplicate keys refused), pydantic errors translated to
camelCase field paths, Kueue's rules, and ``ConfigError`` carrying every issue at once.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Final

import yaml
from pydantic import (
    ValidationError,
)

from shared.config.model import (
    _NOT_POSITIVE,
    CONFIG_API_VERSION,
    CONFIG_KIND,
    DEFAULT_NAMESPACE,
    Configuration,
    _fill_dependent_defaults,
)
from shared.config.rules import ConfigIssue, _rule_issues, _Sections, validate_configuration

__all__ = [
    "ConfigError",
    "default_config",
    "dump_config",
    "load_config",
    "parse_config",
]


# --- loading -----------------------------------------------------------------------------------------
class ConfigError(ValueError):
    """The configuration is invalid; ``errors`` lists every problem as ``(field path, message)``."""

    def __init__(self, source: str, errors: list[ConfigIssue]) -> None:
        self.source = source
        self.errors = errors
        super().__init__("\n".join(self.lines()))

    def lines(self) -> list[str]:
        """One ``<source>: <path>: <message>`` line per problem (no path for document-level ones)."""
        return [f"{self.source}: {f'{p}: ' if p else ''}{m}" for p, m in self.errors]


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML keeps the last of two equal keys; Kubernetes' strict decoding refuses them, so do we."""


def _construct_unique_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if isinstance(key, str | int | float | bool) and key in seen:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f"found duplicate key {key!r}",
                key_node.start_mark,
            )
        if isinstance(key, str | int | float | bool):
            seen.add(key)
    return loader.construct_mapping(node)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping)


def _load_yaml(text: str) -> Any:
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        detail = "; ".join(part for part in (exc.context, exc.problem) if part)
        raise _DocumentError(f"invalid YAML at {where}{detail}") from None
    except yaml.YAMLError as exc:
        raise _DocumentError(f"invalid YAML: {exc}") from None


class _DocumentError(Exception):
    pass


_TYPE_NAMES: Final = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "bool_type": "a boolean",
    "dict_type": "an object",
    "model_type": "an object",
    "tuple_type": "a list",
    "list_type": "a list",
}


def _yaml_type(value: object) -> str:
    for kind, name in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string")):
        if isinstance(value, kind):
            return name
    return {list: "list", dict: "object", type(None): "null"}.get(type(value), type(value).__name__)


_FIELD_NAME = re.compile(r"^[a-z][A-Za-z0-9]*$")
_SCALAR_BRANCHES: Final = frozenset({"str", "int", "float", "bool"})


def _issue_from_pydantic(error: Any, document: object) -> ConfigIssue | None:
    """Translate one pydantic error; ``None`` for a union branch that does not fit the input.

    The path is rebuilt by walking the input along pydantic's ``loc``: list positions become
    ``[i]``, keys ``.key``; anything else is a union branch tag (``str``, ``NameSource``,
    ``function-after[...]``), dropped from the path -- and the whole error is dropped when the
    branch does not match the shape of the input (a "must be a string" for an object, or vice versa).
    """
    path, node = "", document
    loc = error["loc"]
    for part in loc:
        if isinstance(part, int) and isinstance(node, list):
            path, node = f"{path}[{part}]", node[part] if part < len(node) else None
        elif isinstance(node, dict) and part in node:
            path, node = f"{path}.{part}" if path else str(part), node[part]
        elif isinstance(part, str) and (part in _SCALAR_BRANCHES or not _FIELD_NAME.match(part)):
            if (part in _SCALAR_BRANCHES) == isinstance(node, dict):
                return None
        else:
            path, node = f"{path}.{part}" if path else str(part), None
    kind, message = error["type"], error["msg"]
    if kind == "extra_forbidden":
        message = f'unknown field "{loc[-1]}"'
    elif kind in _TYPE_NAMES:
        message = f"must be {_TYPE_NAMES[kind]}, not {_yaml_type(error['input'])}"
    elif kind == "value_error":
        message = message.removeprefix("Value error, ")
    elif kind == "greater_than" and (error.get("ctx") or {}).get("gt") == 0:
        message = f"Invalid value: {error['input']}: {_NOT_POSITIVE}"
    return ConfigIssue(path, message)


def _pydantic_issues(exc: ValidationError, document: object) -> list[ConfigIssue]:
    issues = [_issue_from_pydantic(error, document) for error in exc.errors()]
    return list(dict.fromkeys(issue for issue in issues if issue is not None))


def _recover_sections(document: dict[str, Any]) -> _Sections:
    """Parse each top-level section on its own, so the rules of the sound ones run despite errors elsewhere."""
    sections = _Sections()
    for name, field in Configuration.model_fields.items():
        target = "selector" if name == "managed_jobs_namespace_selector" else name
        alias = field.alias or name
        if target not in _Sections.__dataclass_fields__ or alias not in document:
            continue
        try:
            probe = Configuration.model_validate({alias: document[alias]}, by_name=False)
        except ValidationError:
            continue  # a broken section's rules would run on defaults, reporting phantom problems
        setattr(sections, target, getattr(probe, name))
    return sections


def parse_config(text: str, *, source: str, default_namespace: str = DEFAULT_NAMESPACE) -> Configuration:
    """Parse, default and validate a configuration document; raises ``ConfigError`` listing every problem.

    ``default_namespace`` is used when the file sets no ``namespace`` (Kueue reads the service-account
    namespace file here; pass its content from the process entry point).
    """
    try:
        document = _load_yaml(text)
    except _DocumentError as exc:
        raise ConfigError(source, [ConfigIssue("", str(exc))]) from None
    if document is None:
        raise ConfigError(source, [ConfigIssue("", "the configuration is empty")])
    if not isinstance(document, dict):
        message = f"the configuration must be a mapping (apiVersion, kind, ...), not a {_yaml_type(document)}"
        raise ConfigError(source, [ConfigIssue("", message)])
    if document.get("namespace") is None:
        document["namespace"] = default_namespace
    document = _fill_dependent_defaults(document)
    assert isinstance(document, dict)
    for required in ("apiVersion", "kind"):
        if required not in document:
            raise ConfigError(source, [ConfigIssue(required, "Field required")])
    try:
        config = Configuration.model_validate(document, by_name=False)
    except ValidationError as exc:
        issues = _pydantic_issues(exc, document) + _rule_issues(_recover_sections(document))
        raise ConfigError(source, issues) from None
    if issues := validate_configuration(config):
        raise ConfigError(source, issues)
    return config


def load_config(path: str | Path, *, default_namespace: str = DEFAULT_NAMESPACE) -> Configuration:
    """Read and parse a configuration file; an unreadable file is a ``ConfigError`` too."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(str(path), [ConfigIssue("", f"cannot read the configuration: {exc}")]) from None
    return parse_config(text, source=str(path), default_namespace=default_namespace)


def default_config(*, namespace: str = DEFAULT_NAMESPACE) -> Configuration:
    """The configuration an empty file (only apiVersion and kind) would give."""
    return parse_config(
        f"apiVersion: {CONFIG_API_VERSION}\nkind: {CONFIG_KIND}\n",
        source="<default>",
        default_namespace=namespace,
    )


def dump_config(config: Configuration) -> dict[str, Any]:
    """The configuration as wire data: camelCase, Go durations, every default present, no nulls."""
    return config.model_dump(mode="json", by_alias=True, exclude_none=True)
