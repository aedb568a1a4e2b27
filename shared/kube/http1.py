"""A minimal HTTP/1.1 keep-alive client for the API server's request/response calls.

Every reconcile write, Event and read goes through ``AiohttpTransport.send_buffered``; aiohttp spent
about 60 µs of CPU on each of them (URL parsing, request and response objects, header multidicts,
timers, tracing hooks) against some 35 µs for the same request written as bytes on a kept-alive TLS
connection and parsed by ``httptools`` (the C parser uvicorn uses; measured against the devcluster,
``bench/reconciler_cpu.py``). A controller makes ~11 such calls per job, so this module does just
that: one request at a time per connection, pooled connections, nothing else. Streams (watches) stay
on aiohttp.

Invariants:

* **One request in flight per connection**, no pipelining; a connection goes back to the pool only
  after its response was read completely and the server allows keep-alive, so a response can never
  be read by the wrong request.
* **Failures say whether the request may have reached the server**: only a failure to open the
  connection (refused, TLS handshake, connect timeout) is ``request_sent=False``; anything after the
  first byte was written is ``request_sent=True`` (the caller retries only what is safe). A
  connection that broke or timed out is closed, never reused.
* A pooled connection the server closed while idle is dropped when it is taken (``connection_lost``
  marks it), and one idle for longer than ``keepalive_timeout`` (60 s, below the usual server idle
  timeouts) is closed instead of reused, so a request is not written into a connection the server
  is closing.
* At most ``max_connections`` connections are open; more concurrent requests wait for one.
* Responses are read whole (``Content-Length`` or chunked, both handled by the parser); no
  ``Accept-Encoding`` is sent, so bodies are never compressed; headers are kept with lower-case
  names (``ResponseHeaders.get`` accepts any case).
"""

from __future__ import annotations

import asyncio
import ssl
from collections import deque
from collections.abc import Mapping
from typing import Any, cast
from urllib.parse import urlsplit

import httptools

from shared.kube.errors import TransportError

__all__ = ["Http1Pool", "Http1Response", "ResponseHeaders"]

#: distinct header sets whose text ``Http1Pool`` keeps (a client uses a few; a rotating token adds one)
_HEADER_BLOCKS = 64


class ResponseHeaders(dict[str, str]):
    """Response headers by lower-case name; ``get``/``[]`` take any case."""

    def get(self, key: str, default: Any = None) -> Any:
        return super().get(key.lower(), default)

    def __getitem__(self, key: str) -> str:
        return super().__getitem__(key.lower())

    def __contains__(self, key: object) -> bool:
        return super().__contains__(key.lower() if isinstance(key, str) else key)


class Http1Response:
    """Status, body, and headers decoded only when asked for (callers of successful requests never
    look at them; building the mapping for every answer cost as much as parsing it)."""

    __slots__ = ("_headers", "_raw_headers", "body", "status_code")

    def __init__(self, status_code: int, raw_headers: list[tuple[bytes, bytes]], body: bytes) -> None:
        self.status_code = status_code
        self.body = body
        self._raw_headers = raw_headers
        self._headers: ResponseHeaders | None = None

    @property
    def headers(self) -> ResponseHeaders:
        if self._headers is None:
            self._headers = ResponseHeaders(
                (name.decode("latin-1").lower(), value.decode("latin-1")) for name, value in self._raw_headers
            )
        return self._headers


class _Connection(asyncio.Protocol):
    """One kept-alive connection; ``exchange()`` writes a request and waits for its whole response."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[Http1Response] | None = None
        self._raw_headers: list[tuple[bytes, bytes]] = []
        self._body: list[bytes] = []
        self.idle_since = 0.0

    # --- asyncio.Protocol ---------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's are not asyncio.Transport subclasses

    def data_received(self, data: bytes) -> None:
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(TransportError(f"malformed HTTP response: {exc}", request_sent=True))
            self.close()

    def eof_received(self) -> bool:
        return False  # close the transport; connection_lost follows

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        detail = f"{type(exc).__name__}: {exc}" if exc is not None else "the server closed the connection"
        self._fail(TransportError(detail, request_sent=True))

    # --- httptools callbacks --------------------------------------------------------------------
    def on_header(self, name: bytes, value: bytes) -> None:
        self._raw_headers.append((name, value))

    def on_body(self, body: bytes) -> None:
        self._body.append(body)

    def on_message_complete(self) -> None:
        waiter, self._waiter = self._waiter, None
        response = Http1Response(self._parser.get_status_code(), self._raw_headers, b"".join(self._body))
        self._raw_headers, self._body = [], []
        if not self._parser.should_keep_alive():
            self.close()
        if waiter is not None and not waiter.done():
            waiter.set_result(response)

    # --- use ------------------------------------------------------------------------------------
    def _fail(self, error: TransportError) -> None:
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    async def exchange(
        self, request: bytes, *, loop: asyncio.AbstractEventLoop, within: float
    ) -> Http1Response:
        """Write ``request``, wait for the whole response; ``TimeoutError`` after ``within`` seconds
        (a timer on the loop: ``asyncio.timeout`` costs a task lookup and a context per request)."""
        assert self.transport is not None and self._waiter is None
        waiter: asyncio.Future[Http1Response] = loop.create_future()
        self._waiter = waiter
        timer = loop.call_later(within, self._timed_out, waiter)
        try:
            self.transport.write(request)
            return await waiter
        finally:
            timer.cancel()

    def _timed_out(self, waiter: asyncio.Future[Http1Response]) -> None:
        if self._waiter is waiter and not waiter.done():
            self._waiter = None
            waiter.set_exception(TimeoutError())


class Http1Pool:
    """Pooled HTTP/1.1 connections to one API server (``scheme://host:port``)."""

    def __init__(
        self,
        *,
        ssl_context: ssl.SSLContext | bool,
        max_connections: int,
        connect_timeout: float,
        keepalive_timeout: float = 60.0,
        server_hostname: str | None = None,
    ) -> None:
        self._ssl = ssl_context
        self._server_hostname = server_hostname
        self._connect_timeout = connect_timeout
        self._keepalive_timeout = keepalive_timeout
        self._idle: dict[tuple[str, str, int], deque[_Connection]] = {}
        self._slots = asyncio.Semaphore(max_connections) if max_connections > 0 else None
        self._origins: dict[str, tuple[tuple[str, str, int], str]] = {}
        self._default_context: ssl.SSLContext | None = None
        self._closing = False
        #: header fields -> their lines, as sent (bounded: ``_HEADER_BLOCKS``)
        self._header_blocks: dict[tuple[tuple[str, str], ...], str] = {}

    def _origin(self, url: str) -> tuple[tuple[str, str, int], str, str]:
        """``(scheme, host, port)``, the ``Host`` header value and the request target of ``url``."""
        authority_at = url.index("://") + 3
        slash = url.find("/", authority_at)
        base, target = (url, "/") if slash < 0 else (url[:slash], url[slash:])
        known = self._origins.get(base)
        if known is None:
            parts = urlsplit(base)
            port = parts.port or (443 if parts.scheme == "https" else 80)
            known = self._origins[base] = ((parts.scheme, parts.hostname or "", port), parts.netloc)
        return known[0], known[1], target

    def _tls(self) -> ssl.SSLContext:
        if isinstance(self._ssl, ssl.SSLContext):
            return self._ssl
        if self._default_context is None:
            context = ssl.create_default_context()
            if self._ssl is False:  # aiohttp's ``ssl=False``: encrypted, not verified
                context.check_hostname = False
                context.verify_mode = ssl.CERT_NONE
            self._default_context = context
        return self._default_context

    async def _connect(
        self, key: tuple[str, str, int], path: str, loop: asyncio.AbstractEventLoop
    ) -> _Connection:
        scheme, host, port = key
        tls: dict[str, Any] = {}
        if scheme == "https":
            tls = {"ssl": self._tls(), "server_hostname": self._server_hostname or host}
        try:
            async with asyncio.timeout(self._connect_timeout):
                _, connection = await loop.create_connection(_Connection, host, port, **tls)
        except (OSError, TimeoutError, ssl.SSLError) as exc:
            raise TransportError(
                f"cannot connect to {host}:{port}: {type(exc).__name__}: {exc}", request_sent=False, path=path
            ) from exc
        return connection

    def _take_idle(self, key: tuple[str, str, int], now: float) -> _Connection | None:
        idle = self._idle.get(key)
        while idle:
            connection = idle.pop()
            if connection.closed:
                continue
            if now - connection.idle_since > self._keepalive_timeout:
                connection.close()  # the server may be about to close it: never race its idle timeout
                continue
            return connection
        return None

    async def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str],
        content: bytes | None,
        path: str,
        total_timeout: float,
    ) -> Http1Response:
        if self._closing:
            raise TransportError("the client is closed", request_sent=False, path=path)
        key, host, target = self._origin(url)
        # A client sends a handful of distinct header sets (its base headers with or without a
        # content type, a token that rotates rarely): their text is built once per set, not a line
        # per header per request.
        fields = tuple(headers.items())
        block = self._header_blocks.get(fields)
        if block is None:
            block = "".join(f"{name}: {value}\r\n" for name, value in fields)
            if len(self._header_blocks) >= _HEADER_BLOCKS:
                self._header_blocks.clear()
            self._header_blocks[fields] = block
        length = "\r\n" if content is None else f"Content-Length: {len(content)}\r\n\r\n"
        request = f"{method} {target} HTTP/1.1\r\nHost: {host}\r\n{block}{length}".encode("latin-1")
        if content:
            request += content
        loop = asyncio.get_running_loop()
        if self._slots is not None:
            await self._slots.acquire()
        try:
            connection = self._take_idle(key, loop.time()) or await self._connect(key, path, loop)
            try:
                response = await connection.exchange(request, loop=loop, within=total_timeout)
            except TimeoutError as exc:
                connection.close()
                raise TransportError(
                    f"no response within {total_timeout:g}s", request_sent=True, path=path
                ) from exc
            except TransportError as exc:
                connection.close()
                raise TransportError(str(exc), request_sent=True, path=path) from exc
            except BaseException:  # cancelled mid-exchange: the connection's state is unknown
                connection.close()
                raise
            if self._closing:
                connection.close()
            elif not connection.closed:
                connection.idle_since = loop.time()
                self._idle.setdefault(key, deque()).append(connection)
            return response
        finally:
            if self._slots is not None:
                self._slots.release()

    @property
    def idle_connections(self) -> int:
        """Pooled connections ready for a request (not closed by either side)."""
        return sum(not connection.closed for idle in self._idle.values() for connection in idle)

    async def aclose(self) -> bool:
        """Close every pooled connection; returns whether any of them was TLS (the caller gives
        those a moment to finish closing, as for aiohttp's)."""
        self._closing = True
        connections = [connection for idle in self._idle.values() for connection in idle]
        had_tls = any(key[0] == "https" for key, idle in self._idle.items() if idle)
        self._idle.clear()
        for connection in connections:
            connection.close()
        return had_tls
