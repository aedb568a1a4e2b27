"""Serve rotated certificates without restarting or dropping a connection.

uvicorn builds its ``SSLContext`` once at start-up and never re-reads the files. We instead hand
uvicorn **our** ``SSLContext`` (through ``Config.ssl_context_factory``) and, when the certificate files
change, call ``load_cert_chain()`` again on that **same object**:

* OpenSSL copies the certificate and key into each connection when it is created, so connections
  already established (and their in-flight requests) keep working with the old certificate;
* every handshake after the reload presents the new certificate.

Safety: a half-updated directory (new ``tls.crt`` next to the old ``tls.key``; the kubelet swaps a
Secret volume atomically, but ``certs generate`` or a person may not) must never reach the live
context, because a failed ``load_cert_chain`` can leave it with a certificate whose key it does not
hold. So the files are read once, the pair is checked (parses, key matches), loaded into a scratch
context first, and only then into the live one - from private copies of the exact bytes checked.
A bad pair is logged and retried at the next poll; the previous certificate stays in service.

Polling (content comparison every ``interval`` seconds, default 2 s) is used rather than inotify:
Secret volumes change through symlink swaps that inotify reports inconsistently, and reading two
small files every few seconds costs nothing. ``reload_if_changed()`` is public so tests rotate
deterministically.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import tempfile
from pathlib import Path

from certs.authority import CertificateError, KeyPair

__all__ = ["CertificateReloader", "new_server_context"]

log = logging.getLogger(__name__)


def new_server_context(*, http2: bool = False) -> ssl.SSLContext:
    """A server context: TLS 1.2 minimum; ALPN ``h2`` then ``http/1.1`` when ``http2`` (the server's
    protocol serves both: ``webhook.serving.fastpath``), else ``http/1.1`` only."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(["h2", "http/1.1"] if http2 else ["http/1.1"])
    return context


def _load(context: ssl.SSLContext, pair: KeyPair) -> None:
    with tempfile.TemporaryDirectory(prefix="kueue-bridge-tls-") as tmp:
        cert_file, key_file = Path(tmp, "tls.crt"), Path(tmp, "tls.key")
        cert_file.write_bytes(pair.cert_pem)
        key_file.touch(mode=0o600)
        key_file.write_bytes(pair.key_pem)
        context.load_cert_chain(cert_file, key_file)


class CertificateReloader:
    """Owns the server ``SSLContext`` and keeps it in step with ``cert_file``/``key_file``."""

    def __init__(self, *, cert_file: Path, key_file: Path, context: ssl.SSLContext | None = None) -> None:
        self.cert_file = cert_file
        self.key_file = key_file
        self.context = context if context is not None else new_server_context()
        self._current: KeyPair | None = None
        #: how many times a new certificate was put in service (metrics/tests)
        self.reloads = 0

    @property
    def loaded(self) -> bool:
        return self._current is not None

    @property
    def current(self) -> KeyPair | None:
        return self._current

    def reload_if_changed(self) -> bool:
        """Load the files if they changed and form a valid pair; return whether a reload happened."""
        try:
            pair = KeyPair(cert_pem=self.cert_file.read_bytes(), key_pem=self.key_file.read_bytes())
        except OSError as exc:
            if self._current is None:
                log.info("waiting for certificate files: %s", exc)
            else:
                log.warning("cannot read certificate files (keeping the current certificate): %s", exc)
            return False
        if pair == self._current:
            return False
        try:
            if not pair.matches_key():
                raise CertificateError("tls.key does not belong to tls.crt (files mid-update?)")
            _load(new_server_context(), pair)  # scratch: a bad pair never touches the live context
        except (CertificateError, ssl.SSLError, ValueError) as exc:
            log.warning("not reloading certificate: %s", exc)
            return False
        _load(self.context, pair)
        self._current = pair
        self.reloads += 1
        log.info("serving certificate loaded (expires %s)", pair.not_after.isoformat())
        return True

    async def watch(self, stop: asyncio.Event, *, interval: float = 2.0) -> None:
        """Poll until ``stop`` is set."""
        while not stop.is_set():
            self.reload_if_changed()
            # asyncio.timeout: Python 3.11's wait_for can swallow a cancel (see shared.kube.clock)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(interval):
                    await stop.wait()
