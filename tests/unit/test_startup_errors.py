"""Start-up errors a user fixes from the outside end a process with one line and exit code 1.

A port already in use (two components on one host with the same configuration) names the flag or
field to change; a kubeconfig that cannot be loaded names the file. Each component's real ``main``
runs in-process here, against a port this test holds open.
"""

from __future__ import annotations

import socket
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from appwrapper.__main__ import main as appwrapper_main
from devrun.components import generate_certs
from multikueue.__main__ import main as multikueue_main
from reconciler.__main__ import main as reconciler_main

KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
"""
CONTROLLERS: dict[str, Callable[[list[str]], int]] = {
    "reconciler": reconciler_main,
    "appwrapper": appwrapper_main,
    "multikueue": multikueue_main,
}


@pytest.fixture
def taken_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def _files(tmp_path: Path, *, probe_port: int, webhook_port: int) -> tuple[Path, Path]:
    config = tmp_path / "config.yaml"
    config.write_text(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\n"
        "kind: Configuration\n"
        "integrations: {frameworks: [batch/job, workload.codeflare.dev/appwrapper]}\n"
        "internalCertManagement: {enable: false}\n"
        f"health: {{healthProbeBindAddress: '127.0.0.1:{probe_port}'}}\n"
        f"webhook: {{host: 127.0.0.1, port: {webhook_port}, certDir: {tmp_path / 'certs'}}}\n"
    )
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    return config, kubeconfig


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


@pytest.mark.parametrize("component", sorted(CONTROLLERS))
def test_a_taken_probe_port_is_one_line_naming_the_flag(
    component: str, taken_port: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config, kubeconfig = _files(tmp_path, probe_port=taken_port, webhook_port=9443)
    assert CONTROLLERS[component](["--config", str(config), "--kubeconfig", str(kubeconfig)]) == 1
    line = _one_line(capsys.readouterr().err)
    assert line == (
        f"kueue-bridge {component}: cannot listen on 127.0.0.1:{taken_port} for probes and metrics: "
        "address already in use; give this process another address with --probe-address HOST:PORT "
        "(or health.healthProbeBindAddress in the configuration; port 0 picks a free one)"
    )


@pytest.mark.parametrize("component", sorted(CONTROLLERS))
def test_a_kubeconfig_that_cannot_be_read_is_one_line_naming_the_file(
    component: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config, _ = _files(tmp_path, probe_port=0, webhook_port=9443)
    missing = tmp_path / "missing"
    assert CONTROLLERS[component](["--config", str(config), "--kubeconfig", str(missing)]) == 1
    line = _one_line(capsys.readouterr().err)
    assert line.startswith(
        f"kueue-bridge {component}: cannot load the connection: {missing}: cannot read kubeconfig"
    )
    assert line.endswith("; pass --kubeconfig FILE")


def test_a_taken_webhook_port_is_one_line_naming_the_fields(taken_port: int, tmp_path: Path) -> None:
    config, kubeconfig = _files(tmp_path, probe_port=0, webhook_port=taken_port)
    generate_certs(tmp_path / "certs")
    # a process of its own: the webhook configures the root logger, which must not outlive a test
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "kueue_bridge.cli",
            "webhook",
            "--config",
            str(config),
            "--kubeconfig",
            str(kubeconfig),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 1, done.stderr
    err = done.stderr
    assert "Traceback" not in err
    assert (
        f"kueue-bridge webhook: cannot listen on 127.0.0.1:{taken_port} for admission requests: "
        "address already in use; set another webhook.host/webhook.port in the configuration"
    ) in err
