"""The transport seam: ``KubeClient`` runs one request path whatever the ``KubeTransport`` is.

A transport written from scratch (neither aiohttp nor httpx) sees every buffered request and every
watch, with the client's headers, credentials and timeout, and the client decodes its answers and
turns its failures into typed errors exactly as it does the default transport's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping

import orjson
import pytest

from shared.kube import (
    BearerTokenAuth,
    ClientSettings,
    GroupVersionKind,
    KubeClient,
    NotFound,
    StaticTokenSource,
    TransportError,
)
from shared.kube.discovery import ResourceInfo
from shared.kube.transport import BufferedRequest, BufferedResponse, StreamedResponse

CM = GroupVersionKind("", "v1", "ConfigMap")


class _Stream:
    def __init__(self, status: int, chunks: list[bytes]) -> None:
        self.status_code = status
        self.headers: Mapping[str, str] = {}
        self._chunks = chunks
        self.closed = False

    async def chunks(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk

    async def aread(self) -> bytes:
        return b"".join(self._chunks)

    async def aclose(self) -> None:
        self.closed = True


class RecordingTransport:
    """A ``KubeTransport`` answering from a dict of paths; records what it was asked."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, dict[str, str], float | None]] = []
        self.streams: list[_Stream] = []
        self.answers: dict[str, tuple[int, bytes]] = {}

    async def send_buffered(self, request: BufferedRequest) -> BufferedResponse:
        self.sent.append((request.method, request.url, dict(request.headers), request.total_timeout))
        if request.path == "/down":
            raise TransportError("no route", request_sent=False, path=request.path)
        status, body = self.answers.get(
            request.path, (404, orjson.dumps({"kind": "Status", "code": 404, "reason": "NotFound"}))
        )
        return BufferedResponse(status, {}, body)

    async def open_stream(self, url: str, *, headers: Mapping[str, str], path: str) -> StreamedResponse:
        self.sent.append(("WATCH", url, dict(headers), None))
        stream = _Stream(200, [b'{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n'])
        self.streams.append(stream)
        return stream

    async def aclose(self) -> None:
        pass


@pytest.fixture
def transport() -> RecordingTransport:
    return RecordingTransport()


@pytest.fixture
async def client(transport: RecordingTransport) -> AsyncIterator[KubeClient]:
    kube = KubeClient(
        server="https://seam.invalid",
        transport=transport,
        auth=BearerTokenAuth(StaticTokenSource("t0ken")),
        settings=ClientSettings(qps=0, burst=1, max_attempts=1, request_timeout=7.0),
    )
    kube.mapper.register([ResourceInfo(CM, "configmaps", namespaced=True)])
    yield kube
    await kube.aclose()


async def test_a_buffered_request_goes_through_the_client_s_one_path(
    client: KubeClient, transport: RecordingTransport
) -> None:
    transport.answers["/api/v1/namespaces/ns/configmaps/a"] = (200, b'{"metadata":{"name":"a"}}')
    assert await client.get(CM, "a", namespace="ns") == {"metadata": {"name": "a"}}
    method, url, headers, timeout = transport.sent[-1]
    assert (method, url, timeout) == ("GET", "https://seam.invalid/api/v1/namespaces/ns/configmaps/a", 7.0)
    assert headers["Authorization"] == "Bearer t0ken"
    assert headers["User-Agent"] == "kueue-bridge"
    with pytest.raises(NotFound):
        await client.get(CM, "b", namespace="ns")


async def test_transport_failures_are_the_client_s_typed_errors(client: KubeClient) -> None:
    with pytest.raises(TransportError, match="no route"):
        await client.request("GET", "/down", verb="get", resource="x")


async def test_a_watch_streams_through_the_same_transport(
    client: KubeClient, transport: RecordingTransport
) -> None:
    stream = await client.open_stream("/api/v1/configmaps", params={"watch": "true"}, resource="configmaps")
    chunks = [chunk async for chunk in stream.chunks()]
    await stream.aclose()
    assert chunks == [b'{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n']
    assert transport.sent[-1][:2] == ("WATCH", "https://seam.invalid/api/v1/configmaps?watch=true")
    assert transport.sent[-1][2]["Authorization"] == "Bearer t0ken"
    assert transport.streams[-1].closed
