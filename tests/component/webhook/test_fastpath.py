"""Admissions answered in uvicorn's protocol callbacks (``webhook.serving.fastpath``), over real TLS sockets.

A raw client writes the HTTP/1.1 bytes itself, so keep-alive, pipelining, ``Connection: close`` and
``Expect: 100-continue`` are exactly what the test says; every answer is compared with what the
handler itself returns for the same body.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import httptools
import orjson
import pytest

from certs import generate_ca, issue_serving_cert, write_cert_dir
from shared.constants import QUEUE_LABEL
from tests.unit.webhook.helpers import job, review
from tests.unit.webhook.test_appwrapper_admission import FakeReviewer, appwrapper
from tests.unit.webhook.test_appwrapper_admission import handler as appwrapper_handler
from tests.unit.webhook.test_appwrapper_admission import job as wrapped_job
from tests.unit.webhook.test_appwrapper_admission import review as appwrapper_review
from webhook.serving.admission_review import AdmissionHandler
from webhook.serving.asgi_app import create_app
from webhook.serving.tls_server import Listener, WebhookServer

LIMIT = 64 * 1024


class Served:
    def __init__(self, server: WebhookServer, context: ssl.SSLContext, handler: AdmissionHandler) -> None:
        self.server = server
        self.context = context
        self.handler = handler
        #: the CA the server's certificate is issued by (PEM)
        self.ca_pem = b""
        #: admissions the ASGI app answered (the fast path calls the handler's synchronous methods)
        self.through_asgi = 0
        mutate_async, validate_async = handler.mutate_async, handler.validate_async

        async def counted_mutate(body: bytes) -> tuple[int, bytes]:
            self.through_asgi += 1
            return await mutate_async(body)

        async def counted_validate(body: bytes) -> tuple[int, bytes]:
            self.through_asgi += 1
            return await validate_async(body)

        handler.mutate_async = counted_mutate  # type: ignore[method-assign]
        handler.validate_async = counted_validate  # type: ignore[method-assign]

    async def connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection("127.0.0.1", self.server.port, ssl=self.context)


@contextlib.asynccontextmanager
async def serving(tmp_path: Path) -> AsyncIterator[Served]:
    """A webhook server on a free port with a fresh CA and the AppWrapper handler (its access
    reviews faked), the body limit ``LIMIT``."""
    ca = generate_ca()
    pair = issue_serving_cert(ca=ca, dns_names=["localhost"], ip_addresses=["127.0.0.1"])
    write_cert_dir(tmp_path, serving=pair, ca_cert_pem=ca.cert_pem)
    handler = appwrapper_handler(FakeReviewer())
    handler.max_body_bytes = LIMIT
    served = Served(None, ssl.create_default_context(cadata=ca.cert_pem.decode()), handler)  # type: ignore[arg-type]
    served.ca_pem = ca.cert_pem
    app = create_app(handler=handler, readiness_checks={})
    server = WebhookServer(
        app=app, listener=Listener(cert_dir=tmp_path, host="127.0.0.1", port=0, reload_interval=3600)
    )
    served.server = server
    await server.start()
    try:
        yield served
    finally:
        await server.stop()


@pytest.fixture
async def served(tmp_path: Path) -> AsyncIterator[Served]:
    async with serving(tmp_path) as served:
        yield served


def post(path: str, body: bytes, *, extra: str = "") -> bytes:
    head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    return f"{head}Content-Length: {len(body)}\r\n{extra}\r\n".encode() + body


class Response:
    def __init__(self, status: int) -> None:
        self.status = status
        self.headers: dict[str, str] = {}
        self.body = b""


class ResponseStream:
    """httptools callbacks collecting every response of one connection."""

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.done: list[Response] = []
        self.current: Response | None = None

    def on_message_begin(self) -> None:
        self.current = Response(0)

    def on_header(self, name: bytes, value: bytes) -> None:
        assert self.current is not None
        self.current.headers[name.decode().lower()] = value.decode()

    def on_headers_complete(self) -> None:
        assert self.current is not None
        self.current.status = self.parser.get_status_code()

    def on_body(self, body: bytes) -> None:
        assert self.current is not None
        self.current.body += body

    def on_message_complete(self) -> None:
        assert self.current is not None
        if self.current.status != 100:
            self.done.append(self.current)


async def read_responses(reader: asyncio.StreamReader, count: int) -> list[Response]:
    """``count`` whole responses, in the order they arrive."""
    stream = ResponseStream()
    while len(stream.done) < count:
        data = await asyncio.wait_for(reader.read(65536), 10)
        assert data, f"connection closed after {len(stream.done)} of {count} responses"
        stream.parser.feed_data(data)
    return stream.done


def queued_job(name: str) -> bytes:
    return review(job(name, labels={QUEUE_LABEL: "q"}), uid=f"uid-{name}")


async def test_admissions_on_one_kept_alive_connection_match_the_handler(served: Served) -> None:
    reader, writer = await served.connect()
    bodies = [("/mutate?timeout=10s", queued_job("a")), ("/validate?timeout=10s", queued_job("b"))]
    for path, body in bodies:
        writer.write(post(path, body))
        (answer,) = await read_responses(reader, 1)
        handler_answer = (
            served.handler.mutate(body) if path.startswith("/mutate") else served.handler.validate(body)
        )
        assert (answer.status, answer.body) == handler_answer
        assert answer.headers["content-type"] == "application/json"
        assert int(answer.headers["content-length"]) == len(answer.body)
        assert "connection" not in answer.headers
    assert served.through_asgi == 0  # both answered in the protocol callbacks
    writer.close()


async def test_pipelined_requests_are_answered_in_order(served: Served) -> None:
    reader, writer = await served.connect()
    names = [f"p{i}" for i in range(5)]
    writer.write(b"".join(post("/mutate", queued_job(name)) for name in names))
    answers = await read_responses(reader, len(names))
    uids = [orjson.loads(answer.body)["response"]["uid"] for answer in answers]
    assert uids == [f"uid-{name}" for name in names]
    writer.close()


async def test_other_paths_still_go_to_the_asgi_app_on_the_same_connection(served: Served) -> None:
    reader, writer = await served.connect()
    writer.write(post("/mutate", queued_job("x")))
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    writer.write(post("/nowhere", b"{}"))
    mutate, health, missing = await read_responses(reader, 3)
    assert mutate.status == 200
    assert (health.status, health.body) == (200, b"ok")
    assert missing.status == 404
    writer.close()


async def test_connection_close_is_honoured(served: Served) -> None:
    reader, writer = await served.connect()
    writer.write(post("/mutate", queued_job("c"), extra="Connection: close\r\n"))
    (answer,) = await read_responses(reader, 1)
    assert answer.status == 200 and answer.headers["connection"] == "close"
    assert await asyncio.wait_for(reader.read(), 10) == b""  # the server closed it
    writer.close()


async def test_an_oversized_body_gets_the_handlers_400(served: Served) -> None:
    reader, writer = await served.connect()
    writer.write(post("/validate", b"x" * (LIMIT + 10)))
    writer.write(post("/validate", queued_job("after")))
    too_big, after = await read_responses(reader, 2)
    expected = served.handler.validate(b" " * (LIMIT + 1))
    assert (too_big.status, too_big.body) == expected
    assert too_big.status == 400 and too_big.headers["content-type"].startswith("text/plain")
    assert after.status == 200
    writer.close()


async def test_expect_100_continue_takes_the_asgi_path(served: Served) -> None:
    reader, writer = await served.connect()
    body = queued_job("e")
    head = f"POST /mutate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\nExpect: 100-continue\r\n\r\n"
    writer.write(head.encode())
    interim = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    assert interim.startswith(b"HTTP/1.1 100")
    writer.write(body)
    (answer,) = await read_responses(reader, 1)
    assert (answer.status, answer.body) == served.handler.mutate(body)
    assert served.through_asgi == 1
    writer.close()


async def test_a_validation_that_waits_for_access_reviews_is_answered_after_the_api_calls(
    served: Served,
) -> None:
    reader, writer = await served.connect()
    wrapped = appwrapper_review(appwrapper({"template": wrapped_job()}))
    writer.write(post("/validate", wrapped) + post("/mutate", queued_job("next")))
    first, second = await read_responses(reader, 2)
    # the AppWrapper create went to the ASGI app, and the request pipelined behind it queued there
    assert served.through_asgi == 2
    writer.write(post("/mutate", queued_job("later")))
    (later,) = await read_responses(reader, 1)
    assert later.status == 200 and served.through_asgi == 2  # once answered, back on the fast path
    expected = await served.handler.validate_async(wrapped)
    assert (first.status, first.body) == expected
    assert orjson.loads(first.body)["response"]["allowed"] is True
    assert orjson.loads(second.body)["response"]["uid"] == "uid-next"
    reviewer = served.handler.access
    assert isinstance(reviewer, FakeReviewer) and reviewer.asked  # the reviews were asked for
    writer.close()


async def test_a_handler_failure_is_a_500_not_a_dead_connection(
    served: Served, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(body: bytes) -> tuple[int, bytes]:
        raise RuntimeError("bug")

    monkeypatch.setattr(served.handler, "mutate", broken)
    routes = served.server._server.config.http_protocol_class.routes  # type: ignore[attr-defined]
    monkeypatch.setitem(routes, b"/mutate", broken)
    reader, writer = await served.connect()
    writer.write(post("/mutate", queued_job("boom")) + post("/validate", queued_job("fine")))
    failed, fine = await read_responses(reader, 2)
    assert (failed.status, failed.body) == (500, b"Internal Server Error")
    assert fine.status == 200  # the connection lives on
    assert "admission fast path failed" in caplog.text
    writer.close()


async def test_an_idle_kept_alive_connection_is_closed_after_the_keep_alive_timeout(served: Served) -> None:
    # read by each new connection's protocol: a short timeout for this test's connection only
    served.server._server.config.timeout_keep_alive = 1
    reader, writer = await served.connect()
    for name in ("k1", "k2"):  # the timer armed after the first answer moves on with the second
        writer.write(post("/mutate", queued_job(name)))
        (answer,) = await read_responses(reader, 1)
        assert answer.status == 200
    # the server closes it once idle (no wall-clock bound: only that it happens)
    assert await asyncio.wait_for(reader.read(), 30) == b""
    writer.close()
