from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bridge_tools.config.cli import EXIT_INVALID, EXIT_OK, EXIT_USAGE, main
from kueue_bridge.cli import main as kueue_bridge_main
from shared.config import default_config, dump_config, parse_config

HEADER = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_validate_prints_the_normalised_configuration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(tmp_path, HEADER + "waitForPodsReady: {timeout: 90s}\n")
    assert main(["validate", str(path)]) == EXIT_OK
    captured = capsys.readouterr()
    assert captured.err == ""
    printed = yaml.safe_load(captured.out)
    assert printed["waitForPodsReady"]["timeout"] == "1m30s"
    assert printed["waitForPodsReady"]["recoveryTimeout"] == "1m30s"
    assert printed["leaderElection"]["leaseDuration"] == "15s"
    assert printed["kueueBridge"]["fieldManager"] == "kueue-bridge"
    assert parse_config(captured.out, source="printed") == parse_config(path.read_text(), source="original")


def test_validate_reports_every_error_with_file_and_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = _write(
        tmp_path, HEADER + "integrations: {frameworks: [foo]}\nwebhook: {port: 0}\nhealth: {extra: 1}\n"
    )
    assert main(["validate", str(path)]) == EXIT_INVALID
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        f'{path}: health.extra: unknown field "extra"',
        f'{path}: integrations.frameworks[0]: Unsupported value: "foo": supported values: "batch/job", '
        '"jobset.x-k8s.io/jobset", "workload.codeflare.dev/appwrapper", "tekton.dev/pipelinerun"',
        f"{path}: webhook.port: Invalid value: 0: must be between 1 and 65535, inclusive",
    ]


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ("apiVersion: [unclosed\n", "invalid YAML at line 2, column 1"),
        ("key: value: other\n", "invalid YAML at line 1, column 11"),
        ("- a list\n", "must be a mapping"),
        ("", "the configuration is empty"),
        ("apiVersion: v1\nkind: ConfigMap\n", 'apiVersion: Unsupported value: "v1"'),
        ("\x00binary", "invalid YAML"),
    ],
)
def test_bad_documents_never_raise(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, fragment: str
) -> None:
    path = _write(tmp_path, text)
    assert main(["validate", str(path)]) == EXIT_INVALID
    err = capsys.readouterr().err
    assert err.startswith(f"{path}: ")
    assert fragment in err


def test_unreadable_files(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(tmp_path / "missing.yaml")]) == EXIT_INVALID
    assert "cannot read the configuration" in capsys.readouterr().err
    assert main(["validate", str(tmp_path)]) == EXIT_INVALID
    assert "cannot read the configuration" in capsys.readouterr().err
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe\xfa")
    assert main(["validate", str(binary)]) == EXIT_INVALID
    assert "cannot read the configuration" in capsys.readouterr().err


def test_default_prints_the_default_configuration(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["default"]) == EXIT_OK
    out = capsys.readouterr().out
    assert yaml.safe_load(out) == dump_config(default_config())
    assert out.startswith("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n")


def test_namespace_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["default", "--namespace", "ops"]) == EXIT_OK
    assert yaml.safe_load(capsys.readouterr().out)["leaderElection"]["resourceNamespace"] == "ops"
    path = _write(tmp_path, HEADER)
    assert main(["validate", str(path), "--namespace", "Not_Valid"]) == EXIT_INVALID
    assert f"{path}: namespace: Invalid value" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv", [[], ["frobnicate"], ["validate"], ["validate", "a", "b"], ["default", "--bogus"]]
)
def test_usage_errors(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == EXIT_USAGE
    assert "usage: kueue-bridge config" in capsys.readouterr().err


def test_help_exits_zero(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == EXIT_OK
    assert "validate" in capsys.readouterr().out


def test_dispatched_by_the_console_script(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _write(tmp_path, HEADER)
    assert kueue_bridge_main(["config", "validate", str(path)]) == EXIT_OK
    assert "kind: Configuration" in capsys.readouterr().out
