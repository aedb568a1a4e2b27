"""The configuration examples of the docs (``docs/configuration.md`` and every other page) are checked
against the code, so the docs cannot rot."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import BaseModel

from shared.config import CONFIG_API_VERSION, Configuration, default_config, parse_config
from shared.config_cli import main, render_config
from tests.docs_text import documentation_files, page

_FENCE = re.compile(r"^```(?P<lang>[a-z]*)\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)


def _blocks(text: str, lang: str) -> list[str]:
    return [match.group("body") for match in _FENCE.finditer(text) if match.group("lang") == lang]


def _configuration_blocks() -> list[str]:
    """Every YAML block of the README and the docs that is a whole configuration file."""
    return [
        block
        for path in documentation_files()
        for block in _blocks(path.read_text(encoding="utf-8"), "yaml")
        if f"apiVersion: {CONFIG_API_VERSION}" in block
    ]


def test_the_docs_have_configuration_examples() -> None:
    assert len(_configuration_blocks()) >= 4


@pytest.mark.parametrize("index", range(len(_configuration_blocks())))
def test_every_configuration_example_is_valid(index: int) -> None:
    parse_config(_configuration_blocks()[index], source=f"docs yaml block {index}")


def test_every_default_block_is_the_output_of_config_default() -> None:
    [printed] = [
        block
        for block in _blocks(page("configuration.md"), "yaml")
        if "fieldManager" in block and "leaseDuration" in block
    ]
    assert printed == render_config(default_config())


def test_the_error_example_is_what_validate_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    [expected] = [block for block in _blocks(page("configuration.md"), "") if block.startswith("bad.yaml: ")]
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        f"apiVersion: {CONFIG_API_VERSION}\nkind: Configuration\n"
        "integrations: {frameworks: [ray.io/rayjob]}\nwaitForPodsReady: {timeout: -5m}\n",
        encoding="utf-8",
    )
    assert main(["validate", str(bad)]) == 1
    assert capsys.readouterr().err.replace(str(bad), "bad.yaml") == expected


def _field_exists(dotted: str) -> bool:
    model: Any = Configuration
    for part in dotted.split("."):
        fields = {field.alias or name: field for name, field in model.model_fields.items()}
        if part not in fields:
            return False
        model = fields[part].annotation
        model = next(
            (arg for arg in get_args(model) if isinstance(arg, type) and issubclass(arg, BaseModel)), model
        )
    return True


def test_every_documented_field_exists() -> None:
    rows = [line.split("|")[1] for line in page("configuration.md").splitlines() if line.startswith("| `")]
    checked = 0
    for row in rows:
        names = re.findall(r"`([a-zA-Z]+(?:\.[a-zA-Z]+)*)`", row)
        parent = names[0].rpartition(".")[0]
        for name in names:
            dotted = name if "." in name or not parent else f"{parent}.{name}"
            assert _field_exists(dotted), (
                f"docs/configuration.md documents {dotted!r}, which Configuration lacks"
            )
            checked += 1
    assert checked >= 40
