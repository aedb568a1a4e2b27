"""``kueue-bridge appwrapper``: start-up refusals (the process itself runs in tests/e2e)."""

from __future__ import annotations

from pathlib import Path

import pytest

from appwrapper.__main__ import main
from kueue_bridge.cli import COMPONENTS


def test_the_cli_knows_the_component() -> None:
    assert COMPONENTS["appwrapper"][0] == "appwrapper.__main__"


def test_a_configuration_without_appwrapper_stops_start_up(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n")
    assert main(["--config", str(config)]) == 1
    assert capsys.readouterr().err == (
        f"{config}: workload.codeflare.dev/appwrapper is not a configured framework "
        "(integrations.frameworks or integrations.externalFrameworks): nothing to do\n"
    )


def test_a_bad_configuration_stops_start_up_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
        "integrations: {frameworks: [workload.codeflare.dev/appwrapper]}\nclientConnection: {qps: -1}\n"
    )
    assert main(["--config", str(config)]) == 1
    assert "clientConnection.qps" in capsys.readouterr().err
