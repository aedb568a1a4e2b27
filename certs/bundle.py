"""Where certificates live: a certificate directory and the Secret that backs it.

Layout (cert-controller's, so a Secret written by Kueue's tooling and ours are interchangeable):

* Secret data keys ``ca.crt``, ``ca.key``, ``tls.crt``, ``tls.key`` (the CA key stays in the Secret so
  any replica can re-issue the serving certificate);
* a certificate directory (``webhook.certDir``, the Secret's volume mount in a cluster) holding
  ``tls.crt``, ``tls.key`` and ``ca.crt`` - never the CA key.

Invariants: every file is replaced atomically (write a temporary file in the same directory, then
``os.replace``) so a reader never sees a half-written PEM; the key file is written with mode 0600.
A reader may still observe a new ``tls.crt`` next to an old ``tls.key`` between two replaces, so readers
must check that the pair matches (``KeyPair.matches_key``) and retry later; the server's reloader does.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from certs.authority import CertificateAuthority, KeyPair

__all__ = [
    "CA_CERT_FILE",
    "CA_KEY_FILE",
    "TLS_CERT_FILE",
    "TLS_KEY_FILE",
    "CertBundle",
    "read_cert_dir",
    "write_cert_dir",
]

TLS_CERT_FILE = "tls.crt"
TLS_KEY_FILE = "tls.key"
CA_CERT_FILE = "ca.crt"
CA_KEY_FILE = "ca.key"


@dataclass(frozen=True)
class CertBundle:
    """A CA and the serving certificate it issued."""

    ca: CertificateAuthority
    serving: KeyPair

    def secret_data(self) -> dict[str, str]:
        """The Secret's ``data`` (base64 values), cert-controller's key names."""
        raw = {
            CA_CERT_FILE: self.ca.cert_pem,
            CA_KEY_FILE: self.ca.key_pem,
            TLS_CERT_FILE: self.serving.cert_pem,
            TLS_KEY_FILE: self.serving.key_pem,
        }
        return {key: base64.b64encode(value).decode("ascii") for key, value in raw.items()}

    @classmethod
    def from_secret_data(cls, data: Mapping[str, str] | None) -> CertBundle | None:
        """The bundle in a Secret's ``data``, or ``None`` when a key is missing or not base64."""
        if not data:
            return None
        try:
            raw = {key: base64.b64decode(data[key], validate=True) for key in _SECRET_KEYS}
        except (KeyError, ValueError, TypeError):
            return None
        return cls(
            ca=CertificateAuthority(cert_pem=raw[CA_CERT_FILE], key_pem=raw[CA_KEY_FILE]),
            serving=KeyPair(cert_pem=raw[TLS_CERT_FILE], key_pem=raw[TLS_KEY_FILE]),
        )


_SECRET_KEYS = (CA_CERT_FILE, CA_KEY_FILE, TLS_CERT_FILE, TLS_KEY_FILE)


def _replace_file(path: Path, content: bytes, *, mode: int) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
    try:
        os.write(fd, content)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def write_cert_dir(directory: Path, *, serving: KeyPair, ca_cert_pem: bytes) -> None:
    """Write ``ca.crt``, ``tls.key`` and ``tls.crt`` into ``directory`` (created if missing)."""
    directory.mkdir(parents=True, exist_ok=True)
    _replace_file(directory / CA_CERT_FILE, ca_cert_pem, mode=0o644)
    _replace_file(directory / TLS_KEY_FILE, serving.key_pem, mode=0o600)
    _replace_file(directory / TLS_CERT_FILE, serving.cert_pem, mode=0o644)


def read_cert_dir(directory: Path) -> tuple[KeyPair, bytes | None] | None:
    """The serving pair and CA certificate in ``directory``; ``None`` if tls.crt/tls.key are absent."""
    try:
        cert = (directory / TLS_CERT_FILE).read_bytes()
        key = (directory / TLS_KEY_FILE).read_bytes()
    except FileNotFoundError:
        return None
    try:
        ca = (directory / CA_CERT_FILE).read_bytes()
    except FileNotFoundError:
        ca = None
    return KeyPair(cert_pem=cert, key_pem=key), ca
