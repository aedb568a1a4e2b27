"""The configuration reference: every field of ``Configuration``, its type and default, as a table.

``python -m bridge_tools.config_reference`` writes the table into ``docs/configuration.md``, between
:data:`BEGIN` and :data:`END`; ``--check`` only compares and exits 1 when the page is stale, and
``tests/unit/tools/test_config_reference.py`` fails the same way. So the table cannot drift from
the model: a field added, renamed, re-typed or given another default changes the table.

Where each column comes from (``shared.config.model``):

* **Field**: the wire path, by alias (``waitForPodsReady.requeuingStrategy.timestamp``). The
  document's own sections are walked into; a list of objects (``integrations.externalFrameworks``)
  and a value of another package's model (a label selector, a declarative adapter) are one row.
* **Type**: from the annotation; ``duration`` is a Go duration string (``GoDuration``).
* **Default**: the value ``kueue-bridge config default`` prints for that field (Kueue's defaulting
  applied, so defaults that follow another field show the value they get with the defaults);
  ``unset`` when it prints nothing.
* **Notes**: the field's docstring (pydantic's ``use_attribute_docstrings``); a field typed ``Any``
  is a section of Kueue's that is accepted and kept but has no effect here.

Invariant: :func:`reference_rows` lists every leaf field of the model exactly once, in declaration
order, and the rendered table depends on nothing but the model.
"""

from __future__ import annotations

import argparse
import sys
import types
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Final, Union, get_args, get_origin

import yaml
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from shared.config import Configuration, default_config

__all__ = ["BEGIN", "DEFAULT_PAGE", "END", "Row", "main", "reference_rows", "render_table", "splice"]

BEGIN: Final = (
    "<!-- BEGIN configuration reference: generated from shared.config.model by"
    " `python -m bridge_tools.config_reference`; do not edit by hand -->"
)
END: Final = "<!-- END configuration reference -->"
#: The page the table lives in, relative to the repository root (the command's working directory).
DEFAULT_PAGE: Final = Path("docs/configuration.md")
_MODEL_MODULE: Final = Configuration.__module__
_KUEUE_ONLY: Final = "Kueue only: accepted and kept, so Kueue's own file is valid; no effect in kueue-bridge."


@dataclass(frozen=True)
class Row:
    """One field of the table: its wire path, type, default and notes (markdown)."""

    path: str
    type: str
    default: str
    notes: str


def _optional_inner(annotation: Any) -> Any:
    """``X | None`` -> ``X``; anything else unchanged."""
    if get_origin(annotation) in (Union, types.UnionType):
        inner = [arg for arg in get_args(annotation) if arg is not type(None)]
        if len(inner) == 1:
            return inner[0]
    return annotation


def _section_model(annotation: Any) -> type[BaseModel] | None:
    """The model of a section of the document itself (walked into), else ``None``."""
    inner = _optional_inner(annotation)
    if isinstance(inner, type) and issubclass(inner, BaseModel) and inner.__module__ == _MODEL_MODULE:
        return inner
    return None


def _type_name(annotation: Any) -> str:
    inner = _optional_inner(annotation)
    origin = get_origin(inner)
    if inner is Any:
        return "any"
    if origin is Annotated:
        return _type_name(get_args(inner)[0])
    if origin is tuple:
        item = _optional_inner(get_args(inner)[0])
        return f"list of {'objects' if isinstance(item, type) and issubclass(item, BaseModel) else _type_name(item)}"
    if origin is dict:
        key, value = get_args(inner)
        return f"map of {_type_name(key)} to {_type_name(value)}"
    if inner is timedelta:
        return "duration"
    if inner is str:
        return "string"
    if isinstance(inner, type) and issubclass(inner, BaseModel):
        return "label selector" if inner.__name__ == "LabelSelector" else "object"
    return getattr(inner, "__name__", str(inner))


def _default_text(value: Any) -> str:
    if value is None:
        return "unset"
    if value == "":
        return '`""`'
    if value == [] or value == {}:
        return "`[]`" if value == [] else "`{}`"
    rendered = yaml.safe_dump(value, default_flow_style=True, width=10_000, sort_keys=False).strip()
    rendered = rendered.removesuffix("\n...").strip()
    return f"`{rendered}`"


def _notes(field: FieldInfo, annotation: Any) -> str:
    if _optional_inner(annotation) is Any:
        return _KUEUE_ONLY
    text = " ".join((field.description or "").split())
    return text.replace("``", "`")


def _walk(model: type[BaseModel], defaults: Any, prefix: str) -> Iterator[Row]:
    for name, field in model.model_fields.items():
        key = field.alias or name
        path = f"{prefix}{key}"
        default = defaults.get(key) if isinstance(defaults, dict) else None
        section = _section_model(field.annotation)
        if section is not None:
            yield from _walk(section, default, f"{path}.")
            continue
        yield Row(
            path=path,
            type=_type_name(field.annotation),
            default=_default_text(default),
            notes=_notes(field, field.annotation),
        )


def reference_rows() -> list[Row]:
    """Every leaf field of ``Configuration``, in declaration order, with the defaults filled in."""
    defaults = default_config().model_dump(mode="json", by_alias=True, exclude_none=True)
    return list(_walk(Configuration, defaults, ""))


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def render_table(rows: Sequence[Row] | None = None) -> str:
    """The markdown table of ``rows`` (every field when not given), ending with a newline."""
    lines = ["| Field | Type | Default | Notes |", "|---|---|---|---|"]
    for row in reference_rows() if rows is None else rows:
        cells = (f"`{row.path}`", row.type, row.default, row.notes)
        lines.append("| " + " | ".join(_cell(cell) for cell in cells) + " |")
    return "\n".join(lines) + "\n"


def splice(page: str, table: str) -> str:
    """``page`` with the text between :data:`BEGIN` and :data:`END` replaced by ``table``.

    Raises ``ValueError`` when the markers are missing, repeated or out of order: a page the
    generator cannot place the table in is not silently left stale.
    """
    if page.count(BEGIN) != 1 or page.count(END) != 1 or page.index(BEGIN) > page.index(END):
        raise ValueError(f"the page must hold one {BEGIN!r} line followed by one {END!r} line")
    head, rest = page.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    return f"{head}{BEGIN}\n\n{table}\n{END}{tail}"  # blank lines: markdown reads the table as a table


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bridge_tools.config_reference",
        description="Write the configuration reference table into the docs page (from the model).",
    )
    parser.add_argument("--page", type=Path, default=DEFAULT_PAGE, help="the page (default: %(default)s)")
    parser.add_argument("--check", action="store_true", help="only compare: exit 1 when the page is stale")
    args = parser.parse_args(argv)
    try:
        current = args.page.read_text(encoding="utf-8")
        wanted = splice(current, render_table())
    except (OSError, ValueError) as exc:
        print(f"{args.page}: {exc}", file=sys.stderr)
        return 1
    if wanted == current:
        return 0
    if args.check:
        print(
            f"{args.page}: the configuration reference is stale; run python -m bridge_tools.config_reference",
            file=sys.stderr,
        )
        return 1
    args.page.write_text(wanted, encoding="utf-8")
    print(f"{args.page}: configuration reference written")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
