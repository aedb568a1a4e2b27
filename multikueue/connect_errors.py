"""Why a worker cannot be reached, in the words Kueue's MultiKueueCluster uses (``ClientConnectionFailed``).

Kueue's first request to a worker is its client's discovery of the API server's groups, ``GET /api``,
and its condition message is client-go's error for that request, for example (seen on kube-apiserver
1.36 with Kueue ff69552)::

    failed to get server groups: Get "https://127.0.0.1:6505/api": dial tcp 127.0.0.1:6505: connect: connection refused
    failed to get server groups: Get "https://127.0.0.1:6504/api": tls: failed to verify certificate: x509: certificate signed by unknown authority
    failed to get server groups: the server has asked for the client to provide credentials

``RemoteCluster.refresh`` makes the same request first, and :func:`connect_failure_message` words its
failure so: Go's texts for a refused or timed-out dial, an untrusted certificate and a 401; any
other failure keeps our client's (or the API server's) own description inside the same frame. The message names the
server and the failing step, never a credential.
"""

from __future__ import annotations

import ssl
from typing import Final
from urllib.parse import urlsplit

from shared.kube import ApiError, KubeError, Unauthorized

__all__ = ["DISCOVERY_PATH", "connect_failure_message"]

#: the request client-go's discovery makes first (``ServerGroups``)
DISCOVERY_PATH: Final = "/api"
_UNKNOWN_AUTHORITY: Final = frozenset({19, 20, 21})  # OpenSSL: self-signed in chain, no local issuer, leaf


def _host_port(server: str) -> str:
    parts = urlsplit(server)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.hostname}:{port}"


def _cause(exc: BaseException) -> BaseException | None:
    """The OS or TLS error under our client's ``TransportError`` (also under an HTTP library's
    connector error, which carries it as ``os_error`` or ``certificate_error``)."""
    seen: set[int] = set()
    current = exc.__cause__ or exc.__context__
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if not isinstance(current, KubeError):
            inner = getattr(current, "certificate_error", None) or getattr(current, "os_error", None)
            return inner if isinstance(inner, BaseException) else current
        current = current.__cause__ or current.__context__
    return None


def _transport_text(exc: KubeError, server: str) -> str:
    cause = _cause(exc)
    host_port = _host_port(server)
    if isinstance(cause, ConnectionRefusedError):
        return f"dial tcp {host_port}: connect: connection refused"
    if isinstance(cause, TimeoutError):
        return f"dial tcp {host_port}: i/o timeout"
    if isinstance(cause, ssl.SSLCertVerificationError) and cause.verify_code in _UNKNOWN_AUTHORITY:
        return "tls: failed to verify certificate: x509: certificate signed by unknown authority"
    return str(exc).removeprefix(f"{DISCOVERY_PATH}: ")


def connect_failure_message(exc: KubeError, *, server: str) -> str:
    """Kueue's ``ClientConnectionFailed`` message for ``exc``, the failure of ``GET /api`` on ``server``."""
    if isinstance(exc, Unauthorized):
        return "failed to get server groups: the server has asked for the client to provide credentials"
    if isinstance(exc, ApiError):
        return f"failed to get server groups: {exc.message or exc.reason or f'HTTP {exc.code}'}"
    url = f"{server.rstrip('/')}{DISCOVERY_PATH}"
    return f'failed to get server groups: Get "{url}": {_transport_text(exc, server)}'
