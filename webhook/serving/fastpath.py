"""Admission requests answered inside uvicorn's HTTP protocol, without an ASGI round per request.

uvicorn runs every request as an ASGI application call: a scope, an ``asyncio.Event``, a
``RequestResponseCycle``, a new Task, ``receive``/``send`` messages through its proxy-headers
middleware, and the response written in two pieces (status line and headers, then the body as a
chunk). For an admission that the rules answer from caches in some 40 us, that machinery cost more
than the answer (``bench/webhook.py``), and the two writes are two TLS records and two ``send``
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
  keep-alive timer, pipelined requests); ``Connection: close`` when the client asked for it.
* **Never a dead connection**: should the handler raise (it answers every bad input itself), the
  request gets uvicorn's plain 500 and the error is logged, as the ASGI path would do.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

__all__ = ["FastAnswer", "admission_protocol"]

FastAnswer = Callable[[bytes], "tuple[int, bytes] | None"]
"""Body -> (HTTP status, response body), or ``None`` when the answer needs an await (ASGI path)."""

log = logging.getLogger(__name__)

_JSON: bytes = b"content-type: application/json\r\n"
_TEXT: bytes = b"content-type: text/plain; charset=utf-8\r\n"


class _AdmissionProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with ``routes`` answered in the parser callbacks."""

    routes: ClassVar[Mapping[bytes, FastAnswer]] = {}
    body_limit: ClassVar[int] = 0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._answer: FastAnswer | None = None
        self._chunks: list[bytes] = []
        self._size = 0

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._answer = None

    def on_headers_complete(self) -> None:
        answer = self._fast_route()
        if answer is None:
            super().on_headers_complete()
            return
        self._answer = answer
        self._chunks = []
        self._size = 0

    def _fast_route(self) -> FastAnswer | None:
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
        if self._size > self.body_limit:
            body = b" " * (self.body_limit + 1)  # the handler's own 400 for an oversized body
        else:
            body = self._chunks[0] if len(self._chunks) == 1 else b"".join(self._chunks)
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
        head = [STATUS_LINE[status]]
        for name, value in self.server_state.default_headers:
            head += [name, b": ", value, b"\r\n"]
        head += [_JSON if status == 200 else _TEXT, b"content-length: %d\r\n" % len(payload)]
        if not keep_alive:
            head.append(b"connection: close\r\n")
        head += [b"\r\n", payload]
        self.transport.write(b"".join(head))
        if not keep_alive:
            self.transport.close()
        self.on_response_complete()

    def _hand_to_asgi(self, body: bytes) -> None:
        """Start uvicorn's request cycle now that the whole body is here (the ASGI app answers)."""
        super().on_headers_complete()
        self.cycle.body += body
        self.cycle.more_body = False
        self.cycle.message_event.set()


def admission_protocol(*, routes: Mapping[bytes, FastAnswer], body_limit: int) -> type[HttpToolsProtocol]:
    """A protocol class for ``uvicorn.Config(http=...)`` answering ``routes`` (exact paths) in place."""
    return type(
        "AdmissionProtocol",
        (_AdmissionProtocol,),
        {"routes": dict(routes), "body_limit": body_limit},
    )
