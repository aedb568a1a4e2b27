"""HTTP transports behind the ``httpx.AsyncBaseTransport`` seam.

``KubeClient`` accepts any ``httpx.AsyncBaseTransport``: tests pass ``httpx.MockTransport``, a user
who wants HTTP/2 passes ``httpx.AsyncHTTPTransport(http2=True)``. The default is ``AiohttpTransport``
below, because measurements (``bench/client.py``) showed httpx's own stack is the bottleneck of a
busy controller: against a loopback HTTPS server, 16 concurrent GETs through
``httpx.AsyncClient`` ran at roughly a tenth of a bare aiohttp loop (httpcore's anyio TLS stream and
per-request URL/header/response object construction dominate), while aiohttp's connection pool uses
asyncio's native transport. aiohttp is already installed with ``kubernetes``.

``AiohttpTransport`` is a complete httpx transport (streamed bodies included, used for watches) and
additionally offers ``send_buffered()``: a request/response round trip with no httpx objects at all,
which ``KubeClient`` uses for non-streaming calls. That path does not go through aiohttp either but
through ``shared.kube.http1`` (request bytes on kept-alive connections, ``httptools`` parsing):
aiohttp's per-request machinery was most of a write's CPU (``bench/reconciler_cpu.py``). Both paths
share one ``SSLContext``; each keeps its own pool of connections.

Invariants:

* The session is created lazily inside the running loop and closed by ``aclose()``.
* Every aiohttp/OS failure becomes ``TransportError`` with ``request_sent=False`` only for failures
  to open a connection (the request cannot have reached the server).
* No redirects are followed, no cookies are kept (the API server uses neither).
* Headers go out as given. The session sets no ``skip_auto_headers``: aiohttp would copy and sort
  the headers of every request to honour it; ``KubeClient`` always sends its own ``User-Agent``, so
  aiohttp's default one is never added anyway.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import aiohttp
import httpx

from shared.kube.errors import TransportError
from shared.kube.http1 import Http1Pool, Http1Response

__all__ = ["AiohttpTransport", "BufferedResponse", "RawStream", "TransportSettings"]


@dataclass(frozen=True)
class TransportSettings:
    """Connection-pool and timeout settings of ``AiohttpTransport``."""

    max_connections: int = 64
    connect_timeout: float = 10.0
    request_timeout: float = 60.0
    keepalive_timeout: float = 60.0


@dataclass(frozen=True, slots=True)
class BufferedResponse:
    status_code: int
    headers: Mapping[str, str]
    body: bytes


# aiohttp already decompressed the body; httpx must not try again.
_DECODED_BY_AIOHTTP = frozenset({b"content-encoding", b"content-length", b"transfer-encoding"})


def _transport_error(exc: BaseException, *, path: str) -> TransportError:
    not_sent = isinstance(exc, aiohttp.ClientConnectorError | aiohttp.ClientSSLError)
    detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return TransportError(detail, request_sent=not not_sent, path=path)


class _AiohttpStream(httpx.AsyncByteStream):
    def __init__(self, response: aiohttp.ClientResponse, *, path: str) -> None:
        self._response = response
        self._path = path

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.content.iter_any():
                yield chunk
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise _transport_error(exc, path=self._path) from exc

    async def aclose(self) -> None:
        self._response.close()


class _LazyHeaders(Mapping[str, str]):
    """The headers of an ``Http1Response``, decoded on first use (only error answers read them)."""

    __slots__ = ("_response",)

    def __init__(self, response: Http1Response) -> None:
        self._response = response

    def __getitem__(self, key: str) -> str:
        return self._response.headers[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self._response.headers.get(key, default)

    def __iter__(self) -> Iterator[str]:
        return iter(self._response.headers)

    def __len__(self) -> int:
        return len(self._response.headers)


class RawStream:
    """An aiohttp streamed response as ``KubeClient.open_stream`` needs it: one async generator per
    chunk read, where going through httpx (``Response.aiter_raw`` over ``_AiohttpStream``) added
    two more per chunk of every watch."""

    def __init__(self, response: aiohttp.ClientResponse, *, path: str) -> None:
        self._response = response
        self._path = path
        self.status_code = response.status
        self.headers: Mapping[str, str] = response.headers

    async def chunks(self) -> AsyncIterator[bytes]:
        content = self._response.content
        try:
            while True:
                chunk = await content.readany()
                if not chunk:
                    return
                yield chunk
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise _transport_error(exc, path=self._path) from exc

    async def aread(self) -> bytes:
        try:
            return await self._response.read()
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise _transport_error(exc, path=self._path) from exc

    async def aclose(self) -> None:
        self._response.close()


#: seconds aiohttp needs after ``ClientSession.close()`` for TLS connections to close (aiohttp docs)
SSL_SHUTDOWN_GRACE = 0.25


class AiohttpTransport(httpx.AsyncBaseTransport):
    """An httpx transport on a pooled ``aiohttp.ClientSession`` (HTTP/1.1, keep-alive)."""

    def __init__(
        self,
        *,
        ssl_context: ssl.SSLContext | None = None,
        settings: TransportSettings = TransportSettings(),
        tls_server_name: str | None = None,
    ) -> None:
        self._ssl: ssl.SSLContext | bool = ssl_context if ssl_context is not None else True
        self._settings = settings
        self._server_hostname = tls_server_name
        self._session: aiohttp.ClientSession | None = None
        self._pool: Http1Pool | None = None
        self._streaming_timeout = aiohttp.ClientTimeout(total=None, connect=settings.connect_timeout)
        self._extra: dict[str, Any] = {"server_hostname": tls_server_name} if tls_server_name else {}

    def _get_session(self) -> aiohttp.ClientSession:
        session = self._session
        if session is None or session.closed:
            connector = aiohttp.TCPConnector(
                ssl=self._ssl,
                limit=self._settings.max_connections,
                keepalive_timeout=self._settings.keepalive_timeout,
            )
            session = aiohttp.ClientSession(
                connector=connector,
                cookie_jar=aiohttp.DummyCookieJar(),
                auto_decompress=True,
            )
            self._session = session
        return session

    def _get_pool(self) -> Http1Pool:
        pool = self._pool
        if pool is None:
            pool = self._pool = Http1Pool(
                ssl_context=self._ssl,
                max_connections=self._settings.max_connections,
                connect_timeout=self._settings.connect_timeout,
                keepalive_timeout=self._settings.keepalive_timeout,
                server_hostname=self._server_hostname,
            )
        return pool

    async def send_buffered(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        content: bytes | None,
        path: str,
        total_timeout: float | None = None,
    ) -> BufferedResponse:
        """One request, whole body read, on ``shared.kube.http1`` (the client's fast path: no aiohttp
        or httpx objects at all)."""
        pool = self._pool or self._get_pool()
        response = await pool.request(
            method,
            url,
            headers=headers,
            content=content,
            path=path,
            total_timeout=self._settings.request_timeout if total_timeout is None else total_timeout,
        )
        return BufferedResponse(response.status_code, _LazyHeaders(response), response.body)

    async def open_stream(self, url: str, *, headers: Mapping[str, str], path: str) -> RawStream:
        """A streamed GET (watch) without httpx objects: status, headers, then ``chunks()``."""
        session = self._get_session()
        try:
            response = await session.request(
                "GET",
                url,
                headers=headers,
                allow_redirects=False,
                timeout=self._streaming_timeout,
                **self._extra,
            )
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise _transport_error(exc, path=path) from exc
        return RawStream(response, path=path)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        session = self._get_session()
        path = request.url.path
        timeouts = request.extensions.get("timeout") or {}
        read_timeout = timeouts.get("read", self._settings.request_timeout)
        timeout = (
            self._streaming_timeout
            if read_timeout is None
            else aiohttp.ClientTimeout(
                total=None, connect=self._settings.connect_timeout, sock_read=read_timeout
            )
        )
        headers = [(key.decode("latin-1"), value.decode("latin-1")) for key, value in request.headers.raw]
        content = await request.aread()
        try:
            response = await session.request(
                request.method,
                str(request.url),
                headers=headers,
                data=content or None,
                allow_redirects=False,
                timeout=timeout,
                **self._extra,
            )
        except (TimeoutError, aiohttp.ClientError, OSError) as exc:
            raise _transport_error(exc, path=path) from exc
        return httpx.Response(
            response.status,
            headers=[
                (key.decode("latin-1"), value.decode("latin-1"))
                for key, value in response.raw_headers
                if key.lower() not in _DECODED_BY_AIOHTTP
            ],
            stream=_AiohttpStream(response, path=path),
            request=request,
        )

    async def aclose(self) -> None:
        """Close every pooled connection, waiting for TLS connections to finish closing.

        aiohttp closes TLS transports asynchronously after ``ClientSession.close()`` returns; its
        documented graceful shutdown is to give the loop a moment (SSL_SHUTDOWN_GRACE) so no socket
        outlives the client (otherwise: ResourceWarning "unclosed transport" at interpreter exit).
        """
        pool, self._pool = self._pool, None
        had_tls = False
        if pool is not None:
            had_tls = await pool.aclose()
        session = self._session
        self._session = None
        if session is not None and not session.closed:
            had_tls = had_tls or (
                self._ssl is not False and isinstance(session.connector, aiohttp.TCPConnector)
            )
            await session.close()
        if had_tls:
            await asyncio.sleep(SSL_SHUTDOWN_GRACE)
