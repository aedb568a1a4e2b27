"""Admission requests over HTTP/2, multiplexed on one TLS connection.

kube-apiserver's webhook client offers HTTP/2 (ALPN ``h2``) and, when the server accepts it, sends
every call of a webhook configuration over one connection as concurrent streams. Over HTTP/1.1 it
keeps at most 25 idle connections per webhook client; whenever more calls are in flight than that,
it opens new connections and closes them after one answer. Under load (kube-apiserver waiting for a
core, so its calls stay in flight longer) that churn grows: each new connection is a TLS handshake
that costs this process more than several admissions (OpenSSL 3.0 and asyncio's TLS transport,
about 1 ms of CPU on the measuring machine, against 0.1-0.3 ms per admission). Kueue's own webhook
server (controller-runtime) accepts ``h2``; so does this one, on the admission protocol of
``webhook.serving.fastpath``, which hands a connection here when the handshake chose ``h2``.

The HTTP/2 framing, HPACK, flow control, SETTINGS and PING answers are the ``h2`` library's
(python-hyper's sans-IO implementation); this module only connects its events to the handler.

Invariants, and why:

* **Same answers as HTTP/1.1.** ``POST`` to an admission route calls the same synchronous handler
  method the HTTP/1.1 fast path calls, with the same body-limit rule (an oversized body is replaced
  by one the handler refuses with its uniform 400) and the same status codes and content types.
  An admission whose answer needs an await (``None`` from the synchronous method), and every other
  request (health, readiness, metrics, 404s), run as a task: the admission through the handler's
  asynchronous method, the rest through the ASGI application, as one buffered request.
* **One stream never holds up another.** Synchronous answers are written as soon as their stream
  ends; a task's answer is written when the task ends, on its own stream.
* **Flow control is honoured both ways.** Request bodies are acknowledged as they arrive (the
  client's window never closes while a body is buffered within the limit); an answer larger than the
  client's window waits for its ``WINDOW_UPDATE`` instead of failing.
* **Bounded.** At most ``MAX_CONCURRENT_STREAMS`` streams at once (kube-apiserver opens a second
  connection beyond it); each stream buffers at most the body limit; a reset stream is forgotten and
  its task cancelled, so resets cost nothing to keep (the "rapid reset" pattern).
* **Idle and shutdown as HTTP/1.1 does them.** A connection with no open stream is closed
  ``idle_timeout`` seconds after its last answer, with a ``GOAWAY`` that tells the client which
  streams were answered, so nothing is lost; a graceful shutdown sends ``GOAWAY`` and closes once the
  streams in flight are answered.
* **A protocol error ends the connection, not the process**: ``h2``'s ``GOAWAY`` is sent, the
  connection closed and the error logged at debug level.
"""

from __future__ import annotations

import asyncio
import logging
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.exceptions
import h2.settings

from webhook.serving.answers import PendingAnswer, SyncAnswer, received_body

__all__ = ["MAX_CONCURRENT_STREAMS", "RECEIVE_WINDOW", "AdmissionStreams"]

log = logging.getLogger(__name__)

ASGIApp = Callable[..., Awaitable[None]]

#: streams one connection may have open at once (Go's HTTP/2 server allows 250, ``h2`` 100)
MAX_CONCURRENT_STREAMS = 250
#: bytes of request bodies a client may send ahead, per stream and per connection, before this side
#: acknowledges them (Go's HTTP/2 server: 1 MiB each). With HTTP/2's default of 64 KiB, a dozen
#: concurrent AdmissionReviews fill the connection's window and kube-apiserver's calls wait for a
#: ``WINDOW_UPDATE`` round trip.
RECEIVE_WINDOW = 1 << 20
_DEFAULT_WINDOW = 65_535

#: the largest header block a request may send (``h2``'s own default)
_MAX_HEADER_LIST_SIZE = 64 * 1024

_JSON = b"application/json"
_TEXT = b"text/plain; charset=utf-8"


@dataclass
class _Stream:
    method: bytes = b""
    path: bytes = b""
    authority: bytes = b""
    headers: list[tuple[bytes, bytes]] = field(default_factory=list)
    chunks: list[bytes] = field(default_factory=list)
    size: int = 0
    task: asyncio.Task[None] | None = None
    #: set when the stream is reset or the connection lost (an ASGI ``http.disconnect``)
    gone: asyncio.Event | None = None


class AdmissionStreams:
    """One HTTP/2 connection's state: its ``h2`` connection, open streams and answers not yet sent.

    The owning ``asyncio.Protocol`` forwards ``data_received``, ``connection_lost`` and ``shutdown``;
    everything written goes through ``transport.write``.
    """

    def __init__(
        self,
        *,
        transport: asyncio.Transport,
        routes: Mapping[bytes, SyncAnswer],
        pending_routes: Mapping[bytes, PendingAnswer],
        app: ASGIApp,
        body_limit: int,
        idle_timeout: float,
        default_headers: Callable[[], list[tuple[bytes, bytes]]],
        scope_base: Mapping[str, Any],
        on_answer: Callable[[], None],
    ) -> None:
        self._transport = transport
        self._routes = routes
        self._pending_routes = pending_routes
        self._app = app
        self._body_limit = body_limit
        self._idle_timeout = idle_timeout
        self._default_headers = default_headers
        self._scope_base = scope_base
        self._on_answer = on_answer
        self._loop = asyncio.get_running_loop()
        self._conn = h2.connection.H2Connection(
            h2.config.H2Configuration(
                client_side=False,
                header_encoding=None,
                # the answers' headers are built here from known-good parts; requests are validated
                validate_outbound_headers=False,
                normalize_outbound_headers=False,
            )
        )
        self._streams: dict[int, _Stream] = {}
        #: answer bytes waiting for the client's flow-control window, by stream
        self._unsent: dict[int, bytes] = {}
        self._idle_timer: asyncio.TimerHandle | None = None
        #: when the last open stream ended (``None``: a stream is open)
        self._idle_since: float | None = None
        self._closing = False
        self._conn.local_settings = h2.settings.Settings(
            client=False,
            initial_values={
                h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS: MAX_CONCURRENT_STREAMS,
                h2.settings.SettingCodes.MAX_HEADER_LIST_SIZE: _MAX_HEADER_LIST_SIZE,
                h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: RECEIVE_WINDOW,
            },
        )
        self._conn.initiate_connection()
        self._conn.increment_flow_control_window(RECEIVE_WINDOW - _DEFAULT_WINDOW)  # the connection's
        self._flush()
        self._arm_idle_timer()

    # --- from the protocol --------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        try:
            events = self._conn.receive_data(data)
        except h2.exceptions.ProtocolError as error:
            log.debug("HTTP/2 protocol error from %s: %s", self._scope_base.get("client"), error)
            self._flush()
            self._transport.close()
            return
        for event in events:
            self._handle(event)
        self._flush()

    def connection_lost(self) -> None:
        self._cancel_idle_timer()
        for stream in self._streams.values():
            self._forget(stream)
        self._streams.clear()
        self._unsent.clear()

    def shutdown(self) -> None:
        """Graceful: ``GOAWAY`` now, close once the streams in flight are answered."""
        self._closing = True
        self._goaway()
        if not self._streams:
            self._transport.close()

    @property
    def busy(self) -> bool:
        return bool(self._streams)

    # --- events -------------------------------------------------------------------------------

    def _handle(self, event: h2.events.Event) -> None:
        if isinstance(event, h2.events.RequestReceived):
            self._idle_since = None
            stream = self._streams[event.stream_id] = _Stream()
            for name, value in event.headers or ():
                if name == b":method":
                    stream.method = value
                elif name == b":path":
                    stream.path = value
                elif name == b":authority":
                    stream.authority = value
                elif not name.startswith(b":"):
                    stream.headers.append((name, value))
        elif isinstance(event, h2.events.DataReceived):
            body_stream = self._streams.get(event.stream_id)
            if body_stream is not None:
                body_stream.size += len(event.data)
                if body_stream.size <= self._body_limit:
                    body_stream.chunks.append(event.data)
            self._conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
        elif isinstance(event, h2.events.StreamEnded):
            self._answer(event.stream_id)
        elif isinstance(event, h2.events.StreamReset):
            reset = self._streams.pop(event.stream_id, None)
            if reset is not None:
                self._forget(reset)
            self._unsent.pop(event.stream_id, None)
            self._after_stream()
        elif isinstance(event, h2.events.WindowUpdated):
            self._send_unsent()
        elif isinstance(event, h2.events.ConnectionTerminated):
            self._transport.close()

    def _answer(self, stream_id: int) -> None:
        """The request on ``stream_id`` is whole: answer it now, or start the task that will."""
        stream = self._streams.get(stream_id)
        if stream is None or stream.task is not None:
            return
        route = stream.path.partition(b"?")[0]
        answer = self._routes.get(route) if stream.method == b"POST" else None
        if answer is None:
            stream.gone = asyncio.Event()
            stream.task = self._loop.create_task(self._through_app(stream_id, stream))
            return
        body = self._body(stream)
        try:
            result = answer(body)
        except Exception:  # the handler fails closed itself; this is the net under it
            log.exception("admission over HTTP/2 failed")
            result = (500, b"Internal Server Error")
        if result is None:
            stream.task = self._loop.create_task(self._pending(stream_id, self._pending_routes[route], body))
            return
        self._respond(stream_id, *result)

    def _body(self, stream: _Stream) -> bytes:
        return received_body(stream.chunks, size=stream.size, limit=self._body_limit)

    async def _pending(self, stream_id: int, answer: PendingAnswer, body: bytes) -> None:
        try:
            status, payload = await answer(body)
        except Exception:
            log.exception("admission over HTTP/2 failed")
            status, payload = 500, b"Internal Server Error"
        self._respond(stream_id, status, payload)
        self._flush()

    async def _through_app(self, stream_id: int, stream: _Stream) -> None:
        """One buffered request through the ASGI application (health, readiness, metrics, 404s)."""
        if stream.size > self._body_limit:
            self._respond(stream_id, 413, b"Request Entity Too Large", [])
            self._flush()
            return
        raw_path, _, query = stream.path.partition(b"?")
        headers = stream.headers if not stream.authority else [(b"host", stream.authority), *stream.headers]
        scope: MutableMapping[str, Any] = {
            **self._scope_base,
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.4"},
            "http_version": "2",
            "method": stream.method.decode("ascii", "replace"),
            "root_path": "",
            "path": urllib.parse.unquote(raw_path.decode("ascii", "replace")),
            "raw_path": raw_path,
            "query_string": query,
            "headers": headers,
        }
        body = self._body(stream)
        delivered = False
        gone = stream.gone
        assert gone is not None

        async def receive() -> dict[str, Any]:
            nonlocal delivered
            if not delivered:
                delivered = True
                return {"type": "http.request", "body": body, "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        status = 500
        response_headers: list[tuple[bytes, bytes]] = []
        parts: list[bytes] = []
        started = False

        async def send(message: Mapping[str, Any]) -> None:
            nonlocal status, response_headers, started
            if message["type"] == "http.response.start":
                started = True
                status = int(message["status"])
                response_headers = [(bytes(k).lower(), bytes(v)) for k, v in message.get("headers", ())]
            elif message["type"] == "http.response.body":
                parts.append(bytes(message.get("body", b"")))

        try:
            await self._app(scope, receive, send)
        except Exception:
            log.exception("ASGI application failed on an HTTP/2 request")
            started = False
        if not started:
            status, response_headers, parts = 500, [(b"content-type", _TEXT)], [b"Internal Server Error"]
        self._respond(stream_id, status, b"".join(parts), response_headers)
        self._flush()

    # --- writing ------------------------------------------------------------------------------

    def _respond(
        self, stream_id: int, status: int, payload: bytes, headers: list[tuple[bytes, bytes]] | None = None
    ) -> None:
        stream = self._streams.get(stream_id)
        if stream is None or self._transport.is_closing():
            return  # reset by the client, or the connection is gone: nobody to answer
        if headers is None:
            headers = [(b"content-type", _JSON if status == 200 else _TEXT)]
        elif not any(name == b"content-type" for name, _ in headers):
            headers = [*headers, (b"content-type", _TEXT)]
        head = [(b":status", b"%d" % status), *self._default_headers()]
        head += [(k, v) for k, v in headers if k not in _NOT_IN_HTTP2]
        head.append((b"content-length", b"%d" % len(payload)))
        try:
            self._conn.send_headers(stream_id, head, end_stream=not payload)
        except h2.exceptions.StreamClosedError:
            self._streams.pop(stream_id, None)
            return
        if payload:
            self._unsent[stream_id] = payload
            self._send_unsent()
        else:
            self._done(stream_id)
        self._on_answer()

    def _send_unsent(self) -> None:
        for stream_id in list(self._unsent):
            data = self._unsent[stream_id]
            try:
                window = self._conn.local_flow_control_window(stream_id)
            except h2.exceptions.StreamClosedError:
                self._unsent.pop(stream_id, None)
                self._done(stream_id)
                continue
            frame = self._conn.max_outbound_frame_size
            sent = 0
            while sent < len(data) and sent < window:
                chunk = data[sent : sent + min(frame, window - sent)]
                sent += len(chunk)
                self._conn.send_data(stream_id, chunk, end_stream=sent == len(data))
            if sent == len(data):
                self._unsent.pop(stream_id)
                self._done(stream_id)
            else:
                self._unsent[stream_id] = data[sent:]

    def _done(self, stream_id: int) -> None:
        self._streams.pop(stream_id, None)
        self._after_stream()

    def _after_stream(self) -> None:
        if self._streams:
            return
        if self._closing:
            self._flush()
            self._transport.close()
        else:
            self._arm_idle_timer()

    def _flush(self) -> None:
        data = self._conn.data_to_send()
        if data and not self._transport.is_closing():
            self._transport.write(data)

    def _goaway(self) -> None:
        try:
            self._conn.close_connection(error_code=h2.errors.ErrorCodes.NO_ERROR)
        except h2.exceptions.ProtocolError:
            return
        self._flush()

    # --- idle: one timer per idle period, whose deadline moves (not one made per stream) --------

    def _arm_idle_timer(self) -> None:
        self._idle_since = self._loop.time()
        if self._idle_timer is None:
            self._idle_timer = self._loop.call_at(self._idle_since + self._idle_timeout, self._idle_expired)

    def _cancel_idle_timer(self) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None

    def _idle_expired(self) -> None:
        self._idle_timer = None
        since = self._idle_since
        if self._transport.is_closing() or since is None:
            return  # closed, or busy: the stream that ends last arms the timer again
        if self._loop.time() < since + self._idle_timeout:
            self._idle_timer = self._loop.call_at(since + self._idle_timeout, self._idle_expired)
            return
        self._goaway()
        self._transport.close()

    @staticmethod
    def _forget(stream: _Stream) -> None:
        if stream.gone is not None:
            stream.gone.set()
        if stream.task is not None and not stream.task.done():
            stream.task.cancel()


#: connection-specific headers HTTP/2 forbids (RFC 9113, 8.2.2); an ASGI app may still set them
_NOT_IN_HTTP2 = frozenset(
    {b"connection", b"keep-alive", b"proxy-connection", b"transfer-encoding", b"upgrade"}
)
