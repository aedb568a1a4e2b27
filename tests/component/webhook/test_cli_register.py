"""``kueue-bridge webhook register`` writes our configurations, with the caBundle, to a cluster."""

from __future__ import annotations

import base64
import ssl
from pathlib import Path

import httpx
import pytest

from certs import generate_ca
from tests.e2e.conftest import devcluster, devcluster_factory
from webhook.__main__ import main

__all__ = ["devcluster", "devcluster_factory"]  # fixtures used below

CONFIG = """
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kb-system
integrations:
  frameworks: [batch/job]
"""


def test_register_creates_then_replaces_both_configurations(
    devcluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config, ca_file = tmp_path / "config.yaml", tmp_path / "ca.crt"
    config.write_text(CONFIG)
    ca = generate_ca()
    ca_file.write_bytes(ca.cert_pem)
    argv = [
        "register",
        f"--config={config}",
        "--url=https://127.0.0.1:9443",
        f"--ca-file={ca_file}",
        f"--kubeconfig={devcluster.kubeconfig_path}",
    ]
    assert main(argv) == 0
    assert main(argv) == 0  # idempotent
    assert capsys.readouterr().out.count("registered ") == 4
    with httpx.Client(
        base_url=devcluster.url,
        verify=ssl.create_default_context(cafile=str(devcluster.ca_file)),
        headers={"Authorization": f"Bearer {devcluster.token}"},
    ) as http:
        for plural, path in (
            ("mutatingwebhookconfigurations", "/mutate"),
            ("validatingwebhookconfigurations", "/validate"),
        ):
            listed = http.get(f"/apis/admissionregistration.k8s.io/v1/{plural}").json()["items"]
            (only,) = listed
            (hook,) = only["webhooks"]
            assert hook["clientConfig"]["url"] == f"https://127.0.0.1:9443{path}"
            assert base64.b64decode(hook["clientConfig"]["caBundle"]) == ca.cert_pem


def test_register_reports_an_unreachable_cluster_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config, ca_file, kubeconfig = tmp_path / "config.yaml", tmp_path / "ca.crt", tmp_path / "kubeconfig"
    config.write_text(CONFIG)
    ca_file.write_bytes(generate_ca().cert_pem)
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\ncurrent-context: x\n"
    )
    argv = [
        "register",
        f"--config={config}",
        "--url=https://h:1",
        f"--ca-file={ca_file}",
        f"--kubeconfig={kubeconfig}",
    ]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith("kueue-bridge webhook: ") and err.count("\n") == 1
