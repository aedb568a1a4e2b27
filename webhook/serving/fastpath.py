"""Admission requests answered inside uvicorn's HTTP protocol, without an ASGI round per request.

uvicorn runs every request as an ASGI application call: a scope, an ``asyncio.Event``, a
``RequestResponseCycle``, a new Task, ``receive``/``send`` messages through its proxy-headers
middleware, and the response written in two pieces (status line and headers, then the body as a
chunk). For an admission that the rules answer from caches in some 40 us, that machinery cost more
than the answer (``bench/webhook_latency.py``), and the two writes are two TLS records and two ``send``
calls per request. :func:`admission_protocol` builds a subclass of uvicorn's own httptools protocol
(uvicorn's ``Config(http=...)`` seam) that, for ``POST /mutate`` and ``POST /validate``, collects
the body in the parser callbacks, calls the handler synchronously and writes the whole response
with one ``transport.write``. Everything else is uvicorn's: TLS, connection limits, keep-alive
timeouts, graceful shutdown, and every other request (health, readiness, metrics, 404s), which
still goes through the ASGI application.

Invariants, and why:

* **Same answers as the ASGI path.** The fast path calls the same ``AdmissionHandler`` methods
  ``webhook.serving.asgi_app.WebhookApp`` calls, with the same body limit rule (an oversized body is replaced by
  one the handler refuses with its uniform 400 reason), the same status codes and content types.
* **Never out of order.** A request whose predecessor on the same connection is still being
  answered by the ASGI path (HTTP pipelining), or that asks for ``Expect: 100-continue``, takes the
  ASGI path, where uvicorn queues it.
* **Anything that must wait goes through ASGI.** An admission whose rules call the API server
  (AppWrapper's SubjectAccessReviews) or wait for an owner cache to fill is handed, with its body, to uvicorn's normal request cycle
  at the end of the message, so it runs as a task like any other request.
* **Keep-alive as uvicorn does it**: after the response, ``on_response_complete`` (request count,
  keep-alive timer, pipelined requests); ``Connection: close`` when the client asked for it. The
  idle connection is closed ``timeout_keep_alive`` seconds after its last response, as uvicorn
  closes it, but by one timer per idle period that moves its own deadline instead of a timer made
  and cancelled per request (for both paths: uvicorn's cycle calls the same ``on_response_complete``).
* **Only what the answer needs, per request**: uvicorn builds an ASGI scope in
  ``on_message_begin``; here it is built when a request turns out to go to the ASGI app (the
  parser has by then read the URL and headers, which the scope takes over). The response head
  (status line, uvicorn's default headers, content type) is built once per ``date`` second.
* **Never a dead connection**: should the handler raise (it answers every bad input itself), the
  request gets uvicorn's plain 500 and the error is logged, as the ASGI path would do.
* **HTTP/2 when the client chose it.** The server's TLS context offers ``h2`` and ``http/1.1``
  (``webhook.serving.tlsreload.new_server_context``); a connection whose handshake chose ``h2``
  (kube-apiserver's webhook client does) is served by ``webhook.serving.http2.AdmissionStreams``
  with the same routes, body limit and idle timeout, and never reaches uvicorn's HTTP/1.1 parser.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from webhook.serving.answers import PendingAnswer, SyncAnswer, received_body
from webhook.serving.http2 import AdmissionStreams

__all__ = ["admission_protocol"]

log = logging.getLogger(__name__)

_JSON: bytes = b"content-type: application/json\r\n"
_TEXT: bytes = b"content-type: text/plain; charset=utf-8\r\n"


class _AdmissionProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with ``routes`` answered in the parser callbacks."""

    routes: ClassVar[Mapping[bytes, SyncAnswer]] = {}
    pending_routes: ClassVar[Mapping[bytes, PendingAnswer]] = {}
    body_limit: ClassVar[int] = 0
    #: told the protocol each accepted connection's handshake chose (``h2``, ``http/1.1``); a tuple
    #: of at most one callable, so that it is not bound as a method
    on_connection: ClassVar[tuple[Callable[[str], None], ...]] = ()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._answer: SyncAnswer | None = None
        self._chunks: list[bytes] = []
        self._size = 0
        #: when the kept-alive connection, idle since its last response, is to be closed (``None``:
        #: a request is arriving or being answered)
        self._idle_deadline: float | None = None
        #: ``server_state.default_headers`` (replaced every second for ``date``) and the response
        #: heads built from it, by (status, keep-alive)
        self._heads_for: object = None
        self._heads: dict[tuple[int, bool], bytes] = {}
        #: the connection's HTTP/2 streams when its handshake chose ``h2``
        self._h2: AdmissionStreams | None = None

    # --- HTTP/2: a connection whose handshake chose h2 is served by webhook.serving.http2 ----------

    def connection_made(self, transport: Any) -> None:
        super().connection_made(transport)
        ssl_object = transport.get_extra_info("ssl_object")
        chosen = (ssl_object.selected_alpn_protocol() if ssl_object is not None else None) or "http/1.1"
        for told in self.on_connection:
            told(chosen)
        if chosen == "h2":
            self._h2 = AdmissionStreams(
                transport=transport,
                routes=self.routes,
                pending_routes=self.pending_routes,
                app=self.app,
                body_limit=self.body_limit,
                idle_timeout=self.timeout_keep_alive,
                default_headers=lambda: self.server_state.default_headers,
                scope_base={"server": self.server, "client": self.client, "scheme": "https"},
                on_answer=self._count_request,
            )

    def _count_request(self) -> None:
        self.server_state.total_requests += 1

    def data_received(self, data: bytes) -> None:
        if self._h2 is not None:
            self._h2.data_received(data)
            return
        super().data_received(data)

    def shutdown(self) -> None:
        if self._h2 is not None:
            self._h2.shutdown()
            return
        super().shutdown()

    def idle(self) -> bool:
        """No request is being answered on this connection (it may be dropped at shutdown)."""
        if self._h2 is not None:
            return not self._h2.busy
        return self.cycle is None or self.cycle.response_complete

    # --- request: uvicorn's ASGI scope only for a request that goes to the ASGI app ---------------

    def on_message_begin(self) -> None:
        self.url = b""
        self.expect_100_continue = False
        self.headers = []
        self._answer = None

    def _begin_asgi_request(self) -> None:
        """uvicorn's ``on_message_begin`` (the scope), keeping what the parser has read since."""
        url, headers, expect = self.url, self.headers, self.expect_100_continue
        super().on_message_begin()
        self.url, self.headers, self.expect_100_continue = url, headers, expect
        self.scope["headers"] = headers

    def on_headers_complete(self) -> None:
        answer = self._fast_route()
        if answer is None:
            self._begin_asgi_request()
            super().on_headers_complete()
            return
        self._answer = answer
        self._chunks = []
        self._size = 0

    def _fast_route(self) -> SyncAnswer | None:
        if self.expect_100_continue or self.parser.get_method() != b"POST":
            return None
        if self.cycle is not None and not self.cycle.response_complete:
            return None  # an earlier request on this connection is still being answered
        return self.routes.get(self.url.partition(b"?")[0])

    def on_body(self, body: bytes) -> None:
        if self._answer is None:
            super().on_body(body)
            return
        self._size += len(body)
        if self._size <= self.body_limit:
            self._chunks.append(body)

    def on_message_complete(self) -> None:
        answer = self._answer
        if answer is None:
            super().on_message_complete()
            return
        self._answer = None
        body = received_body(self._chunks, size=self._size, limit=self.body_limit)
        self._chunks = []
        try:
            result = answer(body)
        except Exception:  # the handler fails closed itself; this is the net under it (never a dead socket)
            log.exception("admission fast path failed")
            result = (500, b"Internal Server Error")
        if result is None:
            self._hand_to_asgi(body)
            return
        status, payload = result
        keep_alive = self.parser.should_keep_alive()
        self.transport.write(self._head(status, keep_alive) + b"%d\r\n\r\n" % len(payload) + payload)
        if not keep_alive:
            self.transport.close()
        self.on_response_complete()

    def _head(self, status: int, keep_alive: bool) -> bytes:
        """Status line, uvicorn's default headers, content type and ``content-length: `` (built
        once per second per kind of answer: the default headers change only with ``date``)."""
        defaults = self.server_state.default_headers
        if defaults is not self._heads_for:
            self._heads_for, self._heads = defaults, {}
        head = self._heads.get((status, keep_alive))
        if head is None:
            parts = [STATUS_LINE[status]]
            for name, value in defaults:
                parts += [name, b": ", value, b"\r\n"]
            parts.append(_JSON if status == 200 else _TEXT)
            if not keep_alive:
                parts.append(b"connection: close\r\n")
            parts.append(b"content-length: ")
            head = self._heads[(status, keep_alive)] = b"".join(parts)
        return head

    def _hand_to_asgi(self, body: bytes) -> None:
        """Start uvicorn's request cycle now that the whole body is here (the ASGI app answers)."""
        self._begin_asgi_request()
        super().on_headers_complete()
        self.cycle.body += body
        self.cycle.more_body = False
        self.cycle.message_event.set()

    # --- keep-alive: one timer per idle period instead of one per request ------------------------

    def _unset_keepalive_if_required(self) -> None:
        # uvicorn cancels its timer whenever data arrives and arms a new one after each response
        # (a TimerHandle made and cancelled per request); here the timer stays and finds the
        # connection busy, or its idle deadline moved, when it fires
        self._idle_deadline = None

    def on_response_complete(self) -> None:
        self.server_state.total_requests += 1
        if self.transport.is_closing():
            return
        self.flow.resume_reading()
        if self.pipeline:
            cycle, app = self.pipeline.pop()
            self._start_asgi_task(cycle, app)
            return
        self._idle_deadline = deadline = self.loop.time() + self.timeout_keep_alive
        if self.timeout_keep_alive_task is None:
            self.timeout_keep_alive_task = self.loop.call_at(deadline, self._keep_alive_expired)

    def _keep_alive_expired(self) -> None:
        self.timeout_keep_alive_task = None
        deadline = self._idle_deadline
        if deadline is None or self.transport.is_closing():
            return  # busy: the response being made arms the timer again
        if self.loop.time() < deadline:
            self.timeout_keep_alive_task = self.loop.call_at(deadline, self._keep_alive_expired)
            return
        self.timeout_keep_alive_handler()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._h2 is not None:
            self._h2.connection_lost()
        if self.timeout_keep_alive_task is not None:
            self.timeout_keep_alive_task.cancel()
            self.timeout_keep_alive_task = None
        super().connection_lost(exc)


def admission_protocol(
    *,
    routes: Mapping[bytes, SyncAnswer],
    pending_routes: Mapping[bytes, PendingAnswer],
    body_limit: int,
    on_connection: Callable[[str], None] | None = None,
) -> type[HttpToolsProtocol]:
    """A protocol class for ``uvicorn.Config(http=...)`` answering ``routes`` (exact paths) in place.

    ``pending_routes`` are the same routes' awaitable answers, for an answer that needs an await on
    an HTTP/2 connection (over HTTP/1.1 such a request goes through the ASGI app, which calls them);
    ``on_connection`` is told the protocol each accepted connection's handshake chose.
    """
    return type(
        "AdmissionProtocol",
        (_AdmissionProtocol,),
        {
            "routes": dict(routes),
            "pending_routes": dict(pending_routes),
            "body_limit": body_limit,
            "on_connection": (on_connection,) if on_connection is not None else (),
        },
    )
