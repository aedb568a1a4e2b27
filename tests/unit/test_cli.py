from __future__ import annotations

import importlib.util
import subprocess
from importlib import metadata
from pathlib import Path

import pytest

from kueue_bridge import build_info
from kueue_bridge.build_info import COMMIT_ENV
from kueue_bridge.cli import COMPONENTS, main


def test_help_lists_every_component(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in COMPONENTS:
        assert name in out


def test_unknown_component_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["frobnicate"]) == 2
    assert "unknown component 'frobnicate'" in capsys.readouterr().err


def test_no_arguments_prints_usage_and_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([]) == 2
    assert "usage: kueue-bridge" in capsys.readouterr().out


def test_help_lists_only_the_components_this_installation_has(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The image installs no devcluster/devrun: --help must not offer what cannot run."""
    real_find_spec = importlib.util.find_spec

    def without_dev_tools(name: str, *args: object) -> object:
        return None if name in {"devcluster", "devrun"} else real_find_spec(name)

    monkeypatch.setattr(importlib.util, "find_spec", without_dev_tools)
    assert main(["--help"]) == 0
    _, _, table = capsys.readouterr().out.partition("components:\n")
    listed = {line.split()[0] for line in table.splitlines()}
    assert listed == set(COMPONENTS) - {"dev", "devcluster"}
    assert main(["dev"]) == 2
    assert "development tool and is not installed here" in capsys.readouterr().err


def test_version_prints_the_version_and_the_baked_in_commit(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(COMMIT_ENV, "0123abcd")
    assert main(["version"]) == 0
    assert (
        capsys.readouterr().out.strip()
        == f"kueue-bridge {metadata.version('kueue-bridge')} (commit 0123abcd)"
    )


def test_version_falls_back_to_the_checkout_then_unknown(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(COMMIT_ENV, raising=False)
    head = subprocess.run(
        ["git", "-C", str(Path(__file__).parent), "rev-parse", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    assert main(["version"]) == 0
    assert capsys.readouterr().out.strip().endswith(f"(commit {head or 'unknown'})")
    monkeypatch.setattr(build_info, "_checkout_head", lambda: None)
    assert build_info.commit() == "unknown"
