from __future__ import annotations

import ssl

from certs import KeyPair
from certs.__main__ import main
from kueue_bridge.cli import main as cli_main


def test_generate_writes_a_usable_cert_dir(tmp_path, capsys) -> None:
    out = tmp_path / "certs"
    assert (
        cli_main(
            [
                "certs",
                "generate",
                "--out",
                str(out),
                "--service",
                "wh",
                "--namespace",
                "ns",
                "--ip",
                "127.0.0.1",
            ]
        )
        == 0
    )
    assert "wrote tls.crt" in capsys.readouterr().out
    for name in ("tls.crt", "tls.key", "ca.crt", "ca.key"):
        assert (out / name).is_file()
    pair = KeyPair(cert_pem=(out / "tls.crt").read_bytes(), key_pem=(out / "tls.key").read_bytes())
    assert pair.dns_names() == ["wh.ns.svc", "wh", "wh.ns", "wh.ns.svc.cluster.local"]
    ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(out / "tls.crt", out / "tls.key")


def test_inject_reports_a_missing_ca_file(tmp_path, capsys) -> None:
    code = main(
        ["inject", "--ca-file", str(tmp_path / "nope.crt"), "--webhook-config", "x", "--kubeconfig", "k"]
    )
    assert code == 1
    assert "nope.crt" in capsys.readouterr().err
