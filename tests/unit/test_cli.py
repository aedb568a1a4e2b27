from __future__ import annotations

import pytest

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
