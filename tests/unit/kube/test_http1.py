"""``shared.kube.http1``: the client's request/response path on kept-alive HTTP/1.1 connections."""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import AsyncIterator

import pytest
import trustme
from aiohttp import web

from shared.kube.errors import TransportError
from shared.kube.http1 import Http1Pool
from tests.polling import eventually

PATH = "/api/v1/namespaces/default/configmaps"


class Server:
    """A loopback aiohttp server that counts the connections it accepted."""

    def __init__(self) -> None:
        self.peers: set[object] = set()
        self.stall = asyncio.Event()
        self.app = web.Application()
        self.app.router.add_route("*", "/{tail:.*}", self.handle)
        self.runner = web.AppRunner(self.app, access_log=None)
        self.port = 0

    async def handle(self, request: web.Request) -> web.StreamResponse:
        self.peers.add(request.transport.get_extra_info("peername") if request.transport else None)
        if request.path == "/chunked":
            response = web.StreamResponse()
            response.enable_chunked_encoding()
            await response.prepare(request)
            for part in (b'{"items": [', b"1, 2", b", 3]}"):
                await response.write(part)
            await response.write_eof()
            return response
        if request.path == "/close":
            return web.json_response({"closing": True}, headers={"Connection": "close"})
        if request.path == "/slow":
            await self.stall.wait()
        if request.path == "/busy":
            return web.json_response({"reason": "TooManyRequests"}, status=429, headers={"Retry-After": "3"})
        body = await request.read()
        return web.json_response(
            {
                "method": request.method,
                "path": request.path_qs,
                "body": body.decode(),
                "ua": request.headers["User-Agent"],
            }
        )

    async def start(self, context: ssl.SSLContext | None = None) -> None:
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        self.port = self.runner.addresses[0][1]

    async def stop(self) -> None:
        self.stall.set()
        await self.runner.cleanup()


@pytest.fixture
async def server() -> AsyncIterator[Server]:
    running = Server()
    await running.start()
    yield running
    await running.stop()


def pool(**overrides: float) -> Http1Pool:
    return Http1Pool(ssl_context=True, max_connections=4, connect_timeout=overrides.get("connect", 5.0))


async def call(
    client: Http1Pool, url: str, *, method: str = "GET", body: bytes | None = None, within: float = 5.0
):
    return await client.request(
        method,
        url,
        headers={"Accept": "application/json", "User-Agent": "test"},
        content=body,
        path="/x",
        total_timeout=within,
    )


async def test_requests_reuse_one_kept_alive_connection(server: Server) -> None:
    client = pool()
    base = f"http://127.0.0.1:{server.port}"
    for index in range(5):
        response = await call(client, f"{base}{PATH}?limit={index}", method="PATCH", body=b'{"a": 1}')
        assert response.status_code == 200
        assert b'"path": "/api/v1/namespaces/default/configmaps?limit=' in response.body
        assert b'"body": "{\\"a\\": 1}"' in response.body
        assert response.headers["content-type"].startswith("application/json")
        assert response.headers.get("Content-Type") == response.headers["CONTENT-TYPE"]
    assert len(server.peers) == 1
    await client.aclose()


async def test_a_chunked_body_is_read_whole(server: Server) -> None:
    client = pool()
    response = await call(client, f"http://127.0.0.1:{server.port}/chunked")
    assert response.body == b'{"items": [1, 2, 3]}'
    await client.aclose()


async def test_connection_close_is_honoured_and_the_next_request_opens_a_new_one(server: Server) -> None:
    client = pool()
    base = f"http://127.0.0.1:{server.port}"
    assert (await call(client, f"{base}/close")).status_code == 200
    assert (await call(client, f"{base}/after")).status_code == 200
    assert len(server.peers) == 2
    await client.aclose()


async def test_an_idle_connection_the_server_closed_is_not_reused() -> None:
    """A server that answers (keep-alive allowed) and then closes the connection while it is idle."""
    accepted = 0

    async def answer_then_close(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal accepted
        accepted += 1
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}")
        await writer.drain()
        writer.close()

    listener = await asyncio.start_server(answer_then_close, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    client = pool()
    try:
        assert (await call(client, f"http://127.0.0.1:{port}/first")).body == b"{}"

        async def dropped() -> bool:
            return client.idle_connections == 0

        await eventually(dropped, what="the client to see the server close its idle connection")
        assert (await call(client, f"http://127.0.0.1:{port}/second")).body == b"{}"
        assert accepted == 2
    finally:
        await client.aclose()
        listener.close()
        await listener.wait_closed()


async def test_a_connection_idle_past_the_keepalive_timeout_is_replaced(server: Server) -> None:
    client = Http1Pool(ssl_context=True, max_connections=4, connect_timeout=5.0, keepalive_timeout=0.0)
    base = f"http://127.0.0.1:{server.port}"
    for index in range(3):
        assert (await call(client, f"{base}/n{index}")).status_code == 200
    assert len(server.peers) == 3
    await client.aclose()


async def test_error_status_and_headers_come_back_unparsed(server: Server) -> None:
    client = pool()
    response = await call(client, f"http://127.0.0.1:{server.port}/busy")
    assert response.status_code == 429
    assert response.headers.get("retry-after") == "3"
    await client.aclose()


async def test_a_refused_connection_was_not_sent() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    client = pool()
    with pytest.raises(TransportError) as raised:
        await call(client, f"http://127.0.0.1:{port}/x")
    assert raised.value.request_sent is False
    await client.aclose()


async def test_a_timeout_was_sent_and_the_connection_is_dropped(server: Server) -> None:
    client = pool()
    base = f"http://127.0.0.1:{server.port}"
    assert (await call(client, f"{base}/warm")).status_code == 200
    with pytest.raises(TransportError) as raised:
        await call(client, f"{base}/slow", within=0.2)
    assert raised.value.request_sent is True
    server.stall.set()
    assert (await call(client, f"{base}/after")).status_code == 200
    assert len(server.peers) == 2, "the timed-out connection was not reused"
    await client.aclose()


async def test_concurrent_requests_beyond_the_limit_wait_for_a_connection(server: Server) -> None:
    client = Http1Pool(ssl_context=True, max_connections=2, connect_timeout=5.0)
    base = f"http://127.0.0.1:{server.port}"
    responses = await asyncio.gather(*(call(client, f"{base}/n{index}") for index in range(10)))
    assert [r.status_code for r in responses] == [200] * 10
    assert len(server.peers) <= 2
    await client.aclose()


async def test_tls_with_the_cluster_ca() -> None:
    authority = trustme.CA()
    serving = authority.issue_cert("127.0.0.1")
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    serving.configure_cert(server_context)
    client_context = ssl.create_default_context()
    authority.configure_trust(client_context)
    running = Server()
    await running.start(server_context)
    try:
        client = Http1Pool(ssl_context=client_context, max_connections=4, connect_timeout=5.0)
        for _ in range(3):
            response = await call(client, f"https://127.0.0.1:{running.port}/tls")
            assert response.status_code == 200 and b'"ua": "test"' in response.body
        assert len(running.peers) == 1
        await client.aclose()
        untrusted = Http1Pool(ssl_context=True, max_connections=1, connect_timeout=5.0)
        with pytest.raises(TransportError) as raised:
            await call(untrusted, f"https://127.0.0.1:{running.port}/tls")
        assert raised.value.request_sent is False
        await untrusted.aclose()
    finally:
        await running.stop()
