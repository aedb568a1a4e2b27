"""Bearer-token authentication that never goes stale.

Bound service-account tokens are rotated by the kubelet (the projected token file is rewritten
about hourly and expires), exec plugins hand out short-lived tokens, OIDC tokens are refreshed by
the ``kubernetes`` config loader. A client that copies the token once at start-up works for an hour
and then fails with 401. So the token is asked for **per request**:

* ``FileTokenSource`` re-reads the token file on every call (a few microseconds for a tiny file;
  cheaper than being wrong about a rotation whose mtime did not move within the timestamp
  granularity). A read failure falls back to the last good token and is logged, so a rotation that
  briefly removes the file does not fail requests.
* ``ConfigurationTokenSource`` asks the loaded ``kubernetes.client.Configuration``, whose refresh
  hook re-runs exec plugins / re-reads in-cluster tokens when they expire.

``BearerTokenAuth`` is an ``httpx.Auth`` (so it also works with a plain ``httpx.AsyncClient``);
``KubeClient`` calls ``authorization()`` directly on its fast path.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Generator
from pathlib import Path
from typing import Any

import httpx

__all__ = [
    "BearerTokenAuth",
    "ConfigurationTokenSource",
    "FileTokenSource",
    "StaticTokenSource",
    "TokenSource",
]

logger = logging.getLogger(__name__)

TokenSource = Callable[[], str | None]
"""Returns the current bearer token (without the ``Bearer`` prefix), or ``None`` for no auth."""


class StaticTokenSource:
    def __init__(self, token: str | None) -> None:
        self._token = token

    def __call__(self) -> str | None:
        return self._token


def _read_small_file(path: Path) -> bytes:
    """The whole file with bare ``os`` calls: a third of ``Path.read_text``'s cost (it is per request)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        chunks = []
        while chunk := os.read(fd, 65536):
            chunks.append(chunk)
    finally:
        os.close(fd)
    return b"".join(chunks)


class FileTokenSource:
    """Reads the token file on every call; keeps the last good token if a read fails."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._last: str | None = None

    def __call__(self) -> str | None:
        try:
            token = _read_small_file(self.path).decode("utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            if self._last is None:
                raise
            logger.warning(
                "token file unreadable, using the previous token",
                extra={"path": str(self.path), "error": str(exc)},
            )
            return self._last
        if not token:
            logger.warning("token file is empty, using the previous token", extra={"path": str(self.path)})
            return self._last
        self._last = token
        return token


class ConfigurationTokenSource:
    """Asks a ``kubernetes.client.Configuration`` (its refresh hook renews expiring tokens)."""

    def __init__(self, configuration: Any) -> None:
        self._configuration = configuration

    def __call__(self) -> str | None:
        value = self._configuration.get_api_key_with_prefix(
            "BearerToken"
        ) or self._configuration.get_api_key_with_prefix("authorization")
        if not value:
            return None
        text = str(value)
        scheme, _, rest = text.partition(" ")
        return rest.strip() if rest and scheme.lower() == "bearer" else text


class BearerTokenAuth(httpx.Auth):
    """Sets ``Authorization: Bearer <token>`` from a ``TokenSource`` on every request."""

    def __init__(self, token_source: TokenSource) -> None:
        self.token_source = token_source
        self._token: str | None = None
        self._header: str | None = None

    def authorization(self) -> str | None:
        token = self.token_source()
        if token != self._token:  # the header string is rebuilt only when the token changes
            self._token, self._header = token, (f"Bearer {token}" if token else None)
        return self._header

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        value = self.authorization()
        if value is not None:
            request.headers["Authorization"] = value
        yield request
