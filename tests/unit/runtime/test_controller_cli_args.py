"""``shared.runtime.cli_args``: the options, configuration loading and identity every controller process shares."""

from __future__ import annotations

import argparse
import io
from collections.abc import Callable
from pathlib import Path

import pytest

from appwrapper.__main__ import _parser as appwrapper_parser
from multikueue.__main__ import _parser as multikueue_parser
from reconciler.__main__ import _parser as reconciler_parser
from shared.runtime.cli_args import controller_parser, default_identity, load_config_or_report, positive_int


@pytest.mark.parametrize("text", ["0", "-1", "two", "1.5", ""])
def test_positive_int_refuses_what_is_not_a_count(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="must be"):
        positive_int(text)


def test_positive_int_reads_a_count() -> None:
    assert positive_int("16") == 16


@pytest.mark.parametrize("make_parser", [reconciler_parser, appwrapper_parser, multikueue_parser])
def test_every_controller_takes_the_common_options(
    make_parser: Callable[[], argparse.ArgumentParser],
) -> None:
    parser = make_parser()
    args = parser.parse_args(
        [
            "--config",
            "c.yaml",
            "--kubeconfig",
            "k",
            "--identity",
            "me",
            "--log-format",
            "json",
            "--probe-address",
            ":1",
        ]
    )
    assert (args.config, args.kubeconfig, args.identity, args.log_format, args.probe_address) == (
        "c.yaml",
        "k",
        "me",
        "json",
        ":1",
    )


def test_the_config_flag_is_required() -> None:
    with pytest.raises(SystemExit):
        controller_parser(prog="p", description="d").parse_args([])


def test_a_bad_config_is_reported_line_by_line_and_gives_none(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nwaitForPodsReady: 3\n")
    stderr = io.StringIO()
    assert load_config_or_report(str(path), stderr=stderr) is None
    assert "waitForPodsReady" in stderr.getvalue()


def test_a_missing_config_file_is_reported(tmp_path: Path) -> None:
    stderr = io.StringIO()
    assert load_config_or_report(str(tmp_path / "absent.yaml"), stderr=stderr) is None
    assert "absent.yaml" in stderr.getvalue()


def test_default_identities_are_unique_per_process_start() -> None:
    assert default_identity() != default_identity()
