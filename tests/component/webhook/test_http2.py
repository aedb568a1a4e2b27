"""Admissions over HTTP/2 (``webhook.serving.http2``), over real TLS sockets.

The client is ``h2`` driven by hand, so streams, windows, resets and ``GOAWAY`` are exactly what
the test says; every admission answer is compared with what the handler returns for the same body.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h2.config
import h2.connection
import h2.errors
import h2.events
import h2.settings
import orjson
import pytest

from tests.component.webhook.test_fastpath import LIMIT, Served, queued_job, serving
from tests.unit.webhook.test_appwrapper_admission import FakeReviewer, appwrapper
from tests.unit.webhook.test_appwrapper_admission import job as wrapped_job
from tests.unit.webhook.test_appwrapper_admission import review as appwrapper_review
from webhook.serving.http2 import MAX_CONCURRENT_STREAMS, RECEIVE_WINDOW


@dataclass
class Answer:
    status: int = 0
    headers: dict[bytes, bytes] = field(default_factory=dict)
    body: bytes = b""


class Client:
    """One HTTP/2 connection: send requests, read until the streams asked for have ended."""

    def __init__(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, window: int | None
    ) -> None:
        self.reader, self.writer = reader, writer
        self.conn = h2.connection.H2Connection(
            h2.config.H2Configuration(client_side=True, header_encoding=None)
        )
        if window is not None:
            self.conn.local_settings = h2.settings.Settings(
                client=True, initial_values={h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: window}
            )
        self.conn.initiate_connection()
        self.answers: dict[int, Answer] = {}
        self.ended: set[int] = set()
        self.goaway: h2.events.ConnectionTerminated | None = None
        self.server_settings: dict[int, int] = {}
        self.unsent: dict[int, tuple[bytes, bool]] = {}
        self.flush()

    def flush(self) -> None:
        self.writer.write(self.conn.data_to_send())

    def request(self, method: str, path: str, body: bytes = b"", *, end: bool = True) -> int:
        stream_id = self.conn.get_next_available_stream_id()
        headers = [
            (b":method", method.encode()),
            (b":scheme", b"https"),
            (b":authority", b"127.0.0.1"),
            (b":path", path.encode()),
        ]
        if body:
            headers += [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(body))]
        self.conn.send_headers(stream_id, headers, end_stream=not body and end)
        if body:
            self.unsent[stream_id] = (body, end)
        self.pump()
        return stream_id

    def pump(self) -> None:
        """Send what the server's flow-control windows allow of the bodies not yet sent."""
        for stream_id, (body, end) in list(self.unsent.items()):
            window = self.conn.local_flow_control_window(stream_id)
            size = min(window, len(body), self.conn.max_outbound_frame_size)
            while size > 0:
                chunk, body = body[:size], body[size:]
                self.conn.send_data(stream_id, chunk, end_stream=end and not body)
                window -= size
                size = min(window, len(body), self.conn.max_outbound_frame_size)
            if body:
                self.unsent[stream_id] = (body, end)
            else:
                del self.unsent[stream_id]
        self.flush()

    async def read_until(self, stream_ids: set[int], *, deadline: float = 10) -> dict[int, Answer]:
        async with asyncio.timeout(deadline):
            while not stream_ids <= self.ended:
                data = await self.reader.read(65536)
                assert data, f"connection closed with streams {sorted(stream_ids - self.ended)} open"
                self.receive(data)
        return {stream_id: self.answers[stream_id] for stream_id in stream_ids}

    async def read_to_close(self, *, deadline: float = 30) -> None:
        async with asyncio.timeout(deadline):
            while data := await self.reader.read(65536):
                self.receive(data)

    def receive(self, data: bytes) -> None:
        for event in self.conn.receive_data(data):
            if isinstance(event, h2.events.ResponseReceived):
                answer = self.answers.setdefault(event.stream_id, Answer())
                answer.headers = dict(event.headers or ())
                answer.status = int(answer.headers[b":status"])
            elif isinstance(event, h2.events.DataReceived):
                self.answers[event.stream_id].body += event.data
                self.conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
            elif isinstance(event, h2.events.StreamEnded):
                self.ended.add(event.stream_id)
            elif isinstance(event, h2.events.RemoteSettingsChanged):
                self.server_settings.update({int(k): v.new_value for k, v in event.changed_settings.items()})
            elif isinstance(event, h2.events.ConnectionTerminated):
                self.goaway = event
        self.pump()


@dataclass
class Server:
    served: Served
    ca_pem: bytes

    async def connect(self, *, alpn: list[str] | None = None, window: int | None = None) -> Client:
        context = ssl.create_default_context(cadata=self.ca_pem.decode())
        context.set_alpn_protocols(alpn or ["h2"])
        reader, writer = await asyncio.open_connection("127.0.0.1", self.served.server.port, ssl=context)
        ssl_object = writer.get_extra_info("ssl_object")
        assert ssl_object is not None
        self.selected = ssl_object.selected_alpn_protocol()
        return Client(reader, writer, window)


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[Server]:
    async with serving(tmp_path) as served:
        yield Server(served, served.ca_pem)


async def test_concurrent_admissions_share_one_connection_and_match_the_handler(server: Server) -> None:
    client = await server.connect()
    assert server.selected == "h2"
    bodies = {}
    for i in range(40):
        path = "/mutate?timeout=10s" if i % 2 else "/validate?timeout=10s"
        body = queued_job(f"j{i}")
        bodies[client.request("POST", path, body)] = (path, body)
    answers = await client.read_until(set(bodies))
    handler = server.served.handler
    for stream_id, (path, body) in bodies.items():
        answer = answers[stream_id]
        expected = handler.mutate(body) if path.startswith("/mutate") else handler.validate(body)
        assert (answer.status, answer.body) == expected
        assert answer.headers[b"content-type"] == b"application/json"
        assert int(answer.headers[b"content-length"]) == len(answer.body)
    assert server.served.through_asgi == 0  # every one answered in the protocol, none by the ASGI app
    assert client.server_settings[h2.settings.SettingCodes.MAX_CONCURRENT_STREAMS] == MAX_CONCURRENT_STREAMS
    assert client.server_settings[h2.settings.SettingCodes.INITIAL_WINDOW_SIZE] == RECEIVE_WINDOW
    # the connection's window was raised as well: all 40 bodies went out before any answer came back
    assert client.conn.outbound_flow_control_window >= RECEIVE_WINDOW - sum(
        len(b) for _, b in bodies.values()
    )
    assert handler.metrics.connections("h2") == 1  # all 40 on the one connection
    client.writer.close()


async def test_a_client_that_offers_http1_only_gets_http1(server: Server) -> None:
    context = ssl.create_default_context(cadata=server.ca_pem.decode())
    context.set_alpn_protocols(["http/1.1"])
    reader, writer = await asyncio.open_connection("127.0.0.1", server.served.server.port, ssl=context)
    assert writer.get_extra_info("ssl_object").selected_alpn_protocol() == "http/1.1"
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    assert head.startswith(b"HTTP/1.1 200")
    assert server.served.handler.metrics.connections("http/1.1") == 1
    assert server.served.handler.metrics.connections("h2") == 0
    writer.close()


async def test_health_metrics_and_unknown_paths_go_through_the_asgi_app(server: Server) -> None:
    client = await server.connect()
    health = client.request("GET", "/healthz")
    metrics = client.request("GET", "/metrics")
    missing = client.request("POST", "/nowhere", b"{}")
    answers = await client.read_until({health, metrics, missing})
    assert (answers[health].status, answers[health].body) == (200, b"ok")
    assert answers[metrics].status == 200 and answers[metrics].headers[b"content-type"].startswith(
        b"text/plain"
    )
    assert answers[missing].status == 404
    for answer in answers.values():  # nothing HTTP/2 forbids, and the length of what was sent
        assert b"connection" not in answer.headers and b"transfer-encoding" not in answer.headers
        assert int(answer.headers[b"content-length"]) == len(answer.body)
    client.writer.close()


async def test_an_oversized_body_gets_the_handlers_400_and_the_connection_goes_on(server: Server) -> None:
    client = await server.connect()
    too_big = client.request("POST", "/validate", b"x" * (LIMIT + 10))
    after = client.request("POST", "/validate", queued_job("after"))
    answers = await client.read_until({too_big, after})
    assert (answers[too_big].status, answers[too_big].body) == server.served.handler.validate(
        b" " * (LIMIT + 1)
    )
    assert answers[too_big].headers[b"content-type"].startswith(b"text/plain")
    assert answers[after].status == 200
    client.writer.close()


async def test_an_admission_that_waits_for_access_reviews_does_not_hold_up_other_streams(
    server: Server,
) -> None:
    reviewer = server.served.handler.access
    assert isinstance(reviewer, FakeReviewer)
    gate = asyncio.Event()
    may_create = reviewer.may_create

    async def held(**kwargs: Any) -> Any:
        await gate.wait()
        return await may_create(**kwargs)

    reviewer.may_create = held  # type: ignore[method-assign]
    client = await server.connect()
    wrapped = appwrapper_review(appwrapper({"template": wrapped_job()}))
    waiting = client.request("POST", "/validate", wrapped)
    quick = client.request("POST", "/mutate", queued_job("quick"))
    answered = await client.read_until({quick})
    assert answered[quick].status == 200 and waiting not in client.ended  # answered while the other waits
    gate.set()
    answers = await client.read_until({waiting})
    assert (answers[waiting].status, answers[waiting].body) == await server.served.handler.validate_async(
        wrapped
    )
    assert orjson.loads(answers[waiting].body)["response"]["allowed"] is True
    client.writer.close()


async def test_an_answer_larger_than_the_clients_window_arrives_whole(server: Server) -> None:
    client = await server.connect(window=64)  # the client grows the window as it reads (WINDOW_UPDATE)
    body = queued_job("windowed")
    stream_id = client.request("POST", "/mutate", body)
    answers = await client.read_until({stream_id})
    expected = server.served.handler.mutate(body)
    assert len(expected[1]) > 64
    assert (answers[stream_id].status, answers[stream_id].body) == expected
    client.writer.close()


async def test_a_reset_stream_is_forgotten_and_the_next_is_answered(server: Server) -> None:
    client = await server.connect()
    half = client.request("POST", "/mutate", queued_job("half"), end=False)
    client.conn.reset_stream(half, error_code=h2.errors.ErrorCodes.CANCEL)
    client.flush()
    nxt = client.request("POST", "/mutate", queued_job("next"))
    answers = await client.read_until({nxt})
    assert orjson.loads(answers[nxt].body)["response"]["uid"] == "uid-next"
    assert half not in client.answers
    client.writer.close()


async def test_a_handler_failure_is_a_500_on_its_stream_only(
    server: Server, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(body: bytes) -> tuple[int, bytes]:
        raise RuntimeError("bug")

    routes = server.served.server._server.config.http_protocol_class.routes  # type: ignore[attr-defined]
    monkeypatch.setitem(routes, b"/mutate", broken)
    client = await server.connect()
    failed = client.request("POST", "/mutate", queued_job("boom"))
    fine = client.request("POST", "/validate", queued_job("fine"))
    answers = await client.read_until({failed, fine})
    assert (answers[failed].status, answers[failed].body) == (500, b"Internal Server Error")
    assert answers[fine].status == 200
    assert "admission over HTTP/2 failed" in caplog.text
    client.writer.close()


async def test_a_protocol_error_closes_that_connection_only(server: Server) -> None:
    broken = await server.connect()
    broken.writer.write(b"\x00\x00\x01\x00\x00\x00\x00\x00\x00x")  # DATA on stream 0
    await broken.read_to_close()
    assert broken.goaway is not None and broken.goaway.error_code != h2.errors.ErrorCodes.NO_ERROR
    client = await server.connect()
    stream_id = client.request("POST", "/mutate", queued_job("still"))
    assert (await client.read_until({stream_id}))[stream_id].status == 200
    broken.writer.close()
    client.writer.close()


async def test_an_idle_connection_gets_goaway_after_the_keep_alive_timeout(server: Server) -> None:
    server.served.server._server.config.timeout_keep_alive = 1  # read by each new connection's protocol
    client = await server.connect()
    last = 0
    for name in ("k1", "k2"):  # the idle deadline armed after the first answer moves on with the second
        last = client.request("POST", "/mutate", queued_job(name))
        await client.read_until({last})
    await client.read_to_close()  # no wall-clock bound: only that it happens, with a GOAWAY
    assert client.goaway is not None
    assert client.goaway.error_code == h2.errors.ErrorCodes.NO_ERROR
    assert client.goaway.last_stream_id == last  # every stream it sent was answered
    client.writer.close()


async def test_stopping_the_server_ends_an_open_http2_connection(server: Server) -> None:
    client = await server.connect()
    stream_id = client.request("POST", "/mutate", queued_job("before-stop"))
    await client.read_until({stream_id})
    await server.served.server.stop()
    await client.read_to_close()
    client.writer.close()
