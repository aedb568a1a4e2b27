"""The one-shot steps of docker-compose.yaml, run with our image's Python: ``steps.py pki|wait-apiserver|register-webhooks``.

Compose orders start-up with these instead of healthchecks (podman without systemd runs none, so a
``service_healthy`` dependency never becomes true there): each step polls what it needs with a
deadline and exits, and the next services depend on it with ``service_completed_successfully``.

* ``pki --api-port PORT``: every certificate and credential of the compose cluster, into the ``pki``
  and ``kueue-certs`` volumes. Certificates and keys are made once (a second ``up`` keeps them); the
  kubeconfigs are written every time, so a changed ``KUEUE_BRIDGE_API_PORT`` reaches
  ``host.kubeconfig``.

  - ``apiserver/``: the API server's CA and serving certificate (``kube-apiserver``, ``localhost``,
    ``127.0.0.1``: the host reaches it through the published port);
  - ``service-account.key`` / ``service-account.pub``: the service-account token signing key (RSA)
    and its public key (``--service-account-key-file`` wants a public key it can parse);
  - ``webhook/``: kueue-bridge's webhook CA and serving certificate (``webhook``);
  - ``tokens.csv``: one bearer token, user ``admin`` in ``system:masters``;
  - ``admin.kubeconfig`` (``https://kube-apiserver:6443``, for the containers) and
    ``host.kubeconfig`` (``https://127.0.0.1:PORT``, for the host), both self-contained;
  - the ``kueue-certs`` volume: ``tls.crt``/``tls.key`` for Kueue's metrics and webhook servers,
    which Kueue reads from its fixed path ``/etc/kueue/metrics/certs``.

  Everything belongs to uid/gid 65532 (the user of our image and of Kueue's), keys and kubeconfigs
  mode 0600; the API server and etcd run as root.
* ``wait-apiserver``: polls the API server's ``/readyz`` until it answers ``ok``.
* ``register-webhooks``: polls the webhook's ``/readyz`` until it answers, then runs ``kueue-bridge
  webhook register`` with the webhook CA as caBundle. Registering earlier would send creates, under
  ``failurePolicy: Fail``, to a server that is not listening yet.

Exit codes: 0 done, 1 a deadline passed or a step failed (message on stderr), 2 usage error.
"""

from __future__ import annotations

import argparse
import base64
import os
import secrets
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import yaml
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

__all__ = ["main"]

PKI = Path("/pki")
KUEUE_CERTS = Path("/kueue-certs")
CONFIG = "/etc/kueue-bridge/config.yaml"
API_URL = "https://kube-apiserver:6443"
WEBHOOK_URL = "https://webhook:9443"
#: the uid and gid our image and Kueue's run as
OWNER = 65532
POLL_SECONDS = 1.0
DEFAULT_DEADLINE_SECONDS = 180.0


def _write(path: Path, data: bytes, *, mode: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    path.chmod(mode)


def _certs_generate(out: Path, *, service: str, namespace: str, dns: list[str], ips: list[str]) -> None:
    """``kueue-bridge certs generate`` into ``out``, unless it holds a certificate already."""
    if (out / "tls.crt").exists() and (out / "tls.key").exists():
        print(f"kept {out}")
        return
    argv = [
        "kueue-bridge",
        "certs",
        "generate",
        "--out",
        str(out),
        "--service",
        service,
        "--namespace",
        namespace,
    ]
    argv += [arg for name in dns for arg in ("--dns", name)]
    argv += [arg for ip in ips for arg in ("--ip", ip)]
    subprocess.run(argv, check=True)


def _service_account_keys(directory: Path) -> None:
    private, public = directory / "service-account.key", directory / "service-account.pub"
    if private.exists() and public.exists():
        return
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )
    _write(private, pem, mode=0o600)
    public_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    _write(public, public_pem, mode=0o644)
    print(f"wrote {private.name}, {public.name}")


def _token(tokens_csv: Path) -> str:
    if tokens_csv.exists():
        return tokens_csv.read_text().split(",", 1)[0]
    token = secrets.token_urlsafe(32)
    _write(tokens_csv, f"{token},admin,admin,system:masters\n".encode(), mode=0o600)
    return token


def _kubeconfig(*, server: str, ca_pem: bytes, token: str) -> bytes:
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {
                "name": "kueue-bridge-compose",
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca_pem).decode(),
                },
            }
        ],
        "users": [{"name": "admin", "user": {"token": token}}],
        "contexts": [
            {"name": "kueue-bridge-compose", "context": {"cluster": "kueue-bridge-compose", "user": "admin"}}
        ],
        "current-context": "kueue-bridge-compose",
    }
    return yaml.safe_dump(document, sort_keys=False).encode()


def _chown_tree(root: Path) -> None:
    for directory, _, files in os.walk(root):
        os.chown(directory, OWNER, OWNER)
        for name in files:
            os.chown(os.path.join(directory, name), OWNER, OWNER)


def pki(*, api_port: int) -> int:
    _certs_generate(
        PKI / "apiserver",
        service="kubernetes",
        namespace="default",
        dns=["kube-apiserver", "localhost"],
        ips=["127.0.0.1"],
    )
    _certs_generate(
        PKI / "webhook", service="webhook", namespace="kueue-bridge-system", dns=["webhook"], ips=[]
    )
    _certs_generate(KUEUE_CERTS, service="kueue", namespace="kueue-system", dns=["kueue"], ips=[])
    _service_account_keys(PKI)
    token = _token(PKI / "tokens.csv")
    ca_pem = (PKI / "apiserver" / "ca.crt").read_bytes()
    _write(PKI / "admin.kubeconfig", _kubeconfig(server=API_URL, ca_pem=ca_pem, token=token), mode=0o600)
    host_server = f"https://127.0.0.1:{api_port}"
    _write(PKI / "host.kubeconfig", _kubeconfig(server=host_server, ca_pem=ca_pem, token=token), mode=0o600)
    for root in (PKI, KUEUE_CERTS):
        _chown_tree(root)
    print(f"wrote admin.kubeconfig ({API_URL}) and host.kubeconfig ({host_server})")
    return 0


def _poll_ready(url: str, *, ca_file: Path, token: str | None, deadline_seconds: float) -> bool:
    """Poll ``url`` until it answers 200 ``ok``; ``False`` once ``deadline_seconds`` have passed."""
    context = ssl.create_default_context(cafile=str(ca_file))
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    deadline = time.monotonic() + deadline_seconds
    last = "no answer yet"
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(
                urllib.request.Request(url, headers=headers), context=context, timeout=5
            ) as r:
                body = r.read().decode(errors="replace").strip()
                if r.status == 200:
                    print(f"{url}: {body}")
                    return True
                last = f"HTTP {r.status}: {body[:200]}"
        except urllib.error.HTTPError as exc:
            last = f"HTTP {exc.code}: {exc.read().decode(errors='replace')[:200]}"
        except (OSError, ssl.SSLError) as exc:
            last = str(exc)
        time.sleep(POLL_SECONDS)
    print(f"{url} not ready after {deadline_seconds:.0f}s; last: {last}", file=sys.stderr)
    return False


def wait_apiserver(*, deadline_seconds: float) -> int:
    token = _token(PKI / "tokens.csv")
    ready = _poll_ready(
        f"{API_URL}/readyz",
        ca_file=PKI / "apiserver" / "ca.crt",
        token=token,
        deadline_seconds=deadline_seconds,
    )
    return 0 if ready else 1


def register_webhooks(*, deadline_seconds: float) -> int:
    ca_file = PKI / "webhook" / "ca.crt"
    if not _poll_ready(
        f"{WEBHOOK_URL}/readyz", ca_file=ca_file, token=None, deadline_seconds=deadline_seconds
    ):
        return 1
    argv = ["kueue-bridge", "webhook", "register", "--config", CONFIG, "--url", WEBHOOK_URL]
    argv += ["--ca-file", str(ca_file), "--kubeconfig", str(PKI / "admin.kubeconfig")]
    return subprocess.run(argv, check=False).returncode


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="steps.py", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    sub.add_parser("pki").add_argument(
        "--api-port", type=int, required=True, help="the host's published port"
    )
    for name in ("wait-apiserver", "register-webhooks"):
        sub.add_parser(name).add_argument("--deadline", type=float, default=DEFAULT_DEADLINE_SECONDS)
    args = parser.parse_args(argv)
    try:
        if args.step == "pki":
            return pki(api_port=args.api_port)
        if args.step == "wait-apiserver":
            return wait_apiserver(deadline_seconds=args.deadline)
        return register_webhooks(deadline_seconds=args.deadline)
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"steps.py {args.step}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
