"""Serving certificate and kubeconfig for a devcluster.

The CA and the serving certificate (SANs ``localhost`` and ``127.0.0.1``) come from
:mod:`certs.authority`, the same code production uses, so the devcluster exercises it too. The
kubeconfig embeds the CA (``certificate-authority-data``) and the bearer token, which is the form
both the ``kubernetes`` Python client and kubectl accept without further flags.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from certs.authority import generate_ca, issue_serving_cert

__all__ = ["ServingFiles", "write_kubeconfig", "write_serving_files"]


@dataclass(frozen=True, slots=True)
class ServingFiles:
    ca_file: Path
    cert_file: Path
    key_file: Path


def write_serving_files(directory: Path) -> ServingFiles:
    """Create (or reuse, when all three exist) ca.crt, tls.crt and tls.key under ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    files = ServingFiles(directory / "ca.crt", directory / "tls.crt", directory / "tls.key")
    if files.ca_file.exists() and files.cert_file.exists() and files.key_file.exists():
        return files
    ca = generate_ca(common_name="devcluster-ca", organization="kueue-bridge devcluster")
    serving = issue_serving_cert(ca=ca, dns_names=["localhost"], ip_addresses=["127.0.0.1"])
    files.ca_file.write_bytes(ca.cert_pem)
    files.cert_file.write_bytes(serving.cert_pem)
    fd = os.open(files.key_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(serving.key_pem)
    return files


def write_kubeconfig(path: Path, *, url: str, token: str, ca_file: Path, namespace: str = "default") -> Path:
    ca_data = base64.b64encode(ca_file.read_bytes()).decode()
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "devcluster", "cluster": {"server": url, "certificate-authority-data": ca_data}}
        ],
        "users": [{"name": "devcluster-admin", "user": {"token": token}}],
        "contexts": [
            {
                "name": "devcluster",
                "context": {"cluster": "devcluster", "user": "devcluster-admin", "namespace": namespace},
            }
        ],
        "current-context": "devcluster",
        "preferences": {},
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        yaml.safe_dump(config, handle, sort_keys=False)
    os.replace(partial, path)  # readers polling for the file never see it half written
    return path
