"""The README's configuration examples are checked against the code, so the docs cannot rot."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import BaseModel

from shared.config import CONFIG_API_VERSION, Configuration, default_config, parse_config
from shared.config_cli import main, render_config

README = Path(__file__).resolve().parents[3] / "README.md"
_FENCE = re.compile(r"^```(?P<lang>[a-z]*)\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)


def _section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"\n## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def _blocks(text: str, lang: str) -> list[str]:
    return [match.group("body") for match in _FENCE.finditer(text) if match.group("lang") == lang]


def _configuration_blocks() -> list[str]:
    text = README.read_text(encoding="utf-8")
    return [block for block in _blocks(text, "yaml") if f"apiVersion: {CONFIG_API_VERSION}" in block]


def test_the_readme_has_configuration_examples() -> None:
    assert len(_configuration_blocks()) >= 4


@pytest.mark.parametrize("index", range(len(_configuration_blocks())))
def test_every_configuration_example_is_valid(index: int) -> None:
    parse_config(_configuration_blocks()[index], source=f"README.md yaml block {index}")


def test_every_default_block_is_the_output_of_config_default() -> None:
    [printed] = [
        block
        for block in _blocks(_section("Configuration"), "yaml")
        if "fieldManager" in block and "leaseDuration" in block
    ]
    assert printed == render_config(default_config())


def test_the_error_example_is_what_validate_prints(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    [expected] = [block for block in _blocks(_section("Configuration"), "") if block.startswith("bad.yaml: ")]
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
    rows = [line.split("|")[1] for line in _section("Configuration").splitlines() if line.startswith("| `")]
    checked = 0
    for row in rows:
        names = re.findall(r"`([a-zA-Z]+(?:\.[a-zA-Z]+)*)`", row)
        parent = names[0].rpartition(".")[0]
        for name in names:
            dotted = name if "." in name or not parent else f"{parent}.{name}"
            assert _field_exists(dotted), f"README documents {dotted!r}, which Configuration lacks"
            checked += 1
    assert checked >= 40
