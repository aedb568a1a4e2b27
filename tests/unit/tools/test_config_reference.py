"""The configuration reference of docs/configuration.md is the table generated from the model.

``bridge_tools.config_reference`` renders every field of ``Configuration`` with its type, default and
docstring; the committed page must hold exactly that table, so a field added, renamed, re-typed or
given another default fails here until ``python -m bridge_tools.config_reference`` is run.
"""

from __future__ import annotations

from pathlib import Path
from types import UnionType
from typing import get_args

import pytest
from pydantic import BaseModel

from bridge_tools.config_reference import BEGIN, END, Row, main, reference_rows, render_table, splice
from shared.config import Configuration, default_config
from shared.config_cli import render_config
from tests.docs_text import DOCS_DIR

PAGE = DOCS_DIR / "configuration.md"


def test_the_committed_table_is_the_generated_one() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert splice(text, render_table()) == text, (
        "docs/configuration.md's configuration reference differs from the model; "
        "run: python -m bridge_tools.config_reference"
    )


def _leaf_paths(model: type[BaseModel], prefix: str = "") -> list[str]:
    paths = []
    for name, field in model.model_fields.items():
        key = f"{prefix}{field.alias or name}"
        # a section of the document, or an optional one (``X | None``); a list of objects is one row
        candidates = get_args(field.annotation) if isinstance(field.annotation, UnionType) else ()
        nested = [
            arg
            for arg in (field.annotation, *candidates)
            if isinstance(arg, type)
            and issubclass(arg, BaseModel)
            and arg.__module__ == Configuration.__module__
        ]
        paths += _leaf_paths(nested[0], f"{key}.") if nested else [key]
    return paths


def test_every_field_is_a_row_once_in_declaration_order() -> None:
    assert [row.path for row in reference_rows()] == _leaf_paths(Configuration)
    assert len(reference_rows()) >= 50


def test_defaults_are_what_config_default_prints() -> None:
    rows = {row.path: row for row in reference_rows()}
    printed = render_config(default_config())
    assert "timeout: 30m0s" in printed
    assert rows["waitForPodsReady.timeout"].default == "`30m0s`"
    assert rows["leaderElection.resourceNamespace"].default == "`kueue-system`"
    assert rows["webhook.host"].default == '`""`'
    assert rows["integrations.frameworks"].default == "`[batch/job]`"
    assert rows["waitForPodsReady.requeuingStrategy.backoffLimitCount"].default == "unset"
    assert rows["waitForPodsReady.timeout"].type == "duration"
    assert rows["controller.groupKindConcurrency"].type == "map of string to int"
    assert rows["tls"].notes.startswith("Kueue only")
    assert "Lease" in rows["leaderElection.resourceName"].notes


def test_a_changed_model_makes_the_page_stale(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "configuration.md"
    page.write_text(PAGE.read_text(encoding="utf-8"), encoding="utf-8")
    assert main(["--page", str(page), "--check"]) == 0
    stale = splice(page.read_text(encoding="utf-8"), render_table([Row("webhook.port", "int", "`9444`", "")]))
    page.write_text(stale, encoding="utf-8")
    assert main(["--page", str(page), "--check"]) == 1
    assert "stale" in capsys.readouterr().err
    assert page.read_text(encoding="utf-8") == stale  # --check never writes
    assert main(["--page", str(page)]) == 0
    assert page.read_text(encoding="utf-8") == PAGE.read_text(encoding="utf-8")


def test_a_page_without_markers_is_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "configuration.md"
    page.write_text("# Configuration\n", encoding="utf-8")
    assert main(["--page", str(page)]) == 1
    assert BEGIN in capsys.readouterr().err
    with pytest.raises(ValueError, match="must hold one"):
        splice(f"{END}\n{BEGIN}\n", "| table |\n")
