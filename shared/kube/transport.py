"""The transport seam: how ``KubeClient``'s requests become bytes on a connection.

``KubeClient`` has one request path (rate limit, headers, credentials, metrics, typed errors,
retries, decoding) and hands every request to a ``KubeTransport``: ``send_buffered`` for a request
whose whole answer is read, ``open_stream`` for a watch. Whatever the transport, the client runs
the same code, so a test on a fake transport runs production's request path.

* ``AiohttpTransport`` is the default. Measurements (``bench/client.py``) showed httpx's own stack
  is the bottleneck of a busy controller: against a loopback HTTPS server, 16 concurrent GETs
  through ``httpx.AsyncClient`` ran at roughly a tenth of a bare aiohttp loop (httpcore's anyio TLS
  stream and per-request URL/header/response object construction dominate). Buffered requests go
  through ``shared.kube.http1`` (request bytes on kept-alive connections, ``httptools`` parsing):
  aiohttp's per-request machinery was most of a write's CPU (``bench/reconciler_cpu.py``); watches
  use aiohttp's streamed responses. Both share one ``SSLContext``; each keeps its own pool.
* ``HttpxTransport`` adapts any ``httpx.AsyncBaseTransport``: ``httpx.MockTransport`` in tests,
  httpx's own transports in ``bench/client.py``.

Invariants:

* Every transport failure becomes ``TransportError`` with ``request_sent=False`` only for failures
  to open a connection (the request cannot have reached the server).
* No redirects are followed, no cookies are kept (the API server uses neither).
* ``AiohttpTransport``'s session is created lazily inside the running loop; ``aclose()`` closes
  every pooled connection. Headers go out as given: the session sets no ``skip_auto_headers``
  (aiohttp would copy and sort the headers of every request to honour it); ``KubeClient`` always
  sends its own ``User-Agent``, so aiohttp's default one is never added anyway.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import aiohttp
import httpx

from shared.kube.errors import TransportError
from shared.kube.http1 import Http1Pool, Http1Response

__all__ = [
    "AiohttpTransport",
    "BufferedRequest",
    "BufferedResponse",
    "HttpxTransport",
    "KubeTransport",
    "RawStream",
    "StreamedResponse",
    "TransportSettings",
]


@dataclass(frozen=True)
class TransportSettings:
    """Connection-pool and timeout settings of a transport."""

    max_connections: int = 64
    connect_timeout: float = 10.0
    request_timeout: float = 60.0
    keepalive_timeout: float = 60.0


class BufferedRequest(NamedTuple):
    """One request whose whole answer is read: ``path`` (the URL's path) names it in errors;
    ``total_timeout`` bounds the exchange (``None``: the transport's ``request_timeout``). A tuple,
    not a dataclass: one is built per request on the client's hot path (a fifth of the cost)."""

    method: str
    url: str
    headers: Mapping[str, str]
    content: bytes | None
    path: str
    total_timeout: float | None = None


@dataclass(frozen=True, slots=True)
class BufferedResponse:
    status_code: int
    headers: Mapping[str, str]
    body: bytes


class StreamedResponse(Protocol):
    """A streamed answer (watch): status and headers at once, the body chunk by chunk."""

    status_code: int
    headers: Mapping[str, str]

    def chunks(self) -> AsyncIterator[bytes]: ...

    async def aread(self) -> bytes: ...

    async def aclose(self) -> None: ...


class KubeTransport(Protocol):
    """What ``KubeClient`` needs of a transport (module docstring)."""

    async def send_buffered(self, request: BufferedRequest) -> BufferedResponse:
        """One request with its whole answer read; ``TransportError`` when there is no answer."""

    async def open_stream(self, url: str, *, headers: Mapping[str, str], path: str) -> StreamedResponse:
        """A streamed GET; ``TransportError`` when there is no answer."""

    async def aclose(self) -> None: ...


def _transport_error(exc: BaseException, *, path: str) -> TransportError:
    not_sent = isinstance(exc, aiohttp.ClientConnectorError | aiohttp.ClientSSLError)
    detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    return TransportError(detail, request_sent=not not_sent, path=path)


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


class AiohttpTransport:
    """The default ``KubeTransport``: ``shared.kube.http1`` for buffered requests, a pooled
    ``aiohttp.ClientSession`` for watches (HTTP/1.1, keep-alive)."""

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

    async def send_buffered(self, request: BufferedRequest) -> BufferedResponse:
        """One request, whole body read, on ``shared.kube.http1`` (the client's fast path: no aiohttp
        or httpx objects at all)."""
        pool = self._pool or self._get_pool()
        timeout = request.total_timeout
        response = await pool.request(
            request.method,
            request.url,
            headers=request.headers,
            content=request.content,
            path=request.path,
            total_timeout=self._settings.request_timeout if timeout is None else timeout,
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


_HTTPX_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, httpx.UnsupportedProtocol)


def _from_httpx_error(exc: httpx.TransportError, *, path: str) -> TransportError:
    """An httpx transport failure as ``TransportError`` (not sent when the connection never opened)."""
    return TransportError(
        f"{type(exc).__name__}: {exc}", request_sent=not isinstance(exc, _HTTPX_NOT_SENT), path=path
    )


class _HttpxStream:
    """An httpx streamed response as a ``StreamedResponse``."""

    def __init__(self, response: httpx.Response, *, path: str) -> None:
        self._response = response
        self._path = path
        self.status_code = response.status_code
        self.headers: Mapping[str, str] = response.headers

    async def chunks(self) -> AsyncIterator[bytes]:
        response = self._response
        if response.is_stream_consumed:  # a body that was read eagerly (e.g. a mock's content=)
            yield response.content
            return
        try:
            async for chunk in response.aiter_raw():
                yield chunk
        except (httpx.TransportError, httpx.StreamError) as exc:
            raise TransportError(f"{type(exc).__name__}: {exc}", request_sent=True, path=self._path) from exc

    async def aread(self) -> bytes:
        try:
            return await self._response.aread()
        except httpx.HTTPError as exc:
            raise TransportError(f"{type(exc).__name__}: {exc}", request_sent=True, path=self._path) from exc

    async def aclose(self) -> None:
        await self._response.aclose()


class HttpxTransport:
    """A ``KubeTransport`` on any ``httpx.AsyncBaseTransport`` (tests' ``MockTransport``, ``bench/client.py``)."""

    def __init__(
        self, inner: httpx.AsyncBaseTransport, *, settings: TransportSettings = TransportSettings()
    ) -> None:
        self.inner = inner
        self._settings = settings

    async def send_buffered(self, request: BufferedRequest) -> BufferedResponse:
        timeout = self._settings.request_timeout if request.total_timeout is None else request.total_timeout
        sent = httpx.Request(
            request.method,
            request.url,
            headers=request.headers,
            content=request.content,
            extensions={"timeout": {"connect": timeout, "read": timeout, "write": timeout, "pool": timeout}},
        )
        try:
            response = await self.inner.handle_async_request(sent)
            try:
                body = await response.aread()
            finally:
                await response.aclose()
        except httpx.TransportError as exc:
            raise _from_httpx_error(exc, path=request.path) from exc
        return BufferedResponse(response.status_code, response.headers, body)

    async def open_stream(self, url: str, *, headers: Mapping[str, str], path: str) -> StreamedResponse:
        request = httpx.Request(
            "GET",
            url,
            headers=headers,
            extensions={
                "timeout": {
                    "connect": self._settings.connect_timeout,
                    "read": None,
                    "write": None,
                    "pool": None,
                }
            },
        )
        try:
            response = await self.inner.handle_async_request(request)
        except httpx.TransportError as exc:
            raise _from_httpx_error(exc, path=path) from exc
        return _HttpxStream(response, path=path)

    async def aclose(self) -> None:
        await self.inner.aclose()
