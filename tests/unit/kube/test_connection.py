"""The real HTTP path: kubeconfig (CA bundle + token file) -> AiohttpTransport -> a loopback HTTPS server."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import orjson
import pytest
import trustme
import yaml
from aiohttp import web

from shared.kube import (
    ClientSettings,
    GroupVersionKind,
    KubeClient,
    NotFound,
    TransportError,
    Unauthorized,
    kubeconfig_from_dict,
    load_in_cluster,
    load_kubeconfig,
    static_connection,
)
from shared.kube.auth import ConfigurationTokenSource, FileTokenSource, StaticTokenSource
from shared.kube.watch import EventType, Watch

CM = GroupVersionKind("", "v1", "ConfigMap")


class LoopbackApi:
    def __init__(self) -> None:
        self.tokens_seen: list[str] = []
        self.valid_tokens = {"token-1", "token-2"}
        self.objects: dict[str, dict[str, object]] = {}
        self.watch_lines: asyncio.Queue[bytes] = asyncio.Queue()

    def app(self) -> web.Application:
        app = web.Application(middlewares=[self.auth])
        app.router.add_get("/api/v1", self.discovery)
        app.router.add_post("/api/v1/namespaces/{ns}/configmaps", self.create)
        app.router.add_get("/api/v1/namespaces/{ns}/configmaps", self.list_or_watch)
        app.router.add_get("/api/v1/namespaces/{ns}/configmaps/{name}", self.get)
        return app

    @web.middleware
    async def auth(self, request: web.Request, handler: object) -> web.StreamResponse:
        token = request.headers.get("Authorization", "").removeprefix("Bearer ")
        self.tokens_seen.append(token)
        if token not in self.valid_tokens:
            body = {
                "kind": "Status",
                "status": "Failure",
                "reason": "Unauthorized",
                "code": 401,
                "message": "Unauthorized",
            }
            return web.json_response(body, status=401)
        return await handler(request)  # type: ignore[operator,no-any-return]

    async def discovery(self, request: web.Request) -> web.Response:
        return web.json_response(
            {
                "kind": "APIResourceList",
                "resources": [
                    {"name": "configmaps", "namespaced": True, "kind": "ConfigMap", "verbs": ["get"]}
                ],
            }
        )

    async def create(self, request: web.Request) -> web.Response:
        body = await request.json()
        body["metadata"].update(namespace=request.match_info["ns"], resourceVersion="5", uid="u1")
        self.objects[body["metadata"]["name"]] = body
        return web.json_response(body, status=201)

    async def get(self, request: web.Request) -> web.Response:
        obj = self.objects.get(request.match_info["name"])
        if obj is None:
            return web.json_response(
                {"kind": "Status", "reason": "NotFound", "code": 404, "message": "nope"}, status=404
            )
        return web.json_response(obj)

    async def list_or_watch(self, request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") != "true":
            items = list(self.objects.values())
            return web.json_response(
                {"kind": "ConfigMapList", "metadata": {"resourceVersion": "5"}, "items": items}
            )
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        while True:
            line = await self.watch_lines.get()
            await response.write(line)


@contextlib.asynccontextmanager
async def serve(api: LoopbackApi, ca: trustme.CA) -> AsyncIterator[str]:
    server_ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1").configure_cert(server_ssl)
    runner = web.AppRunner(api.app(), access_log=None, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_ssl)
    await site.start()
    try:
        yield f"https://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


def write_kubeconfig(path: Path, *, server: str, ca: trustme.CA, token_file: Path) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "dev",
        "clusters": [
            {
                "name": "dev",
                "cluster": {
                    "server": server,
                    "certificate-authority-data": base64.b64encode(ca.cert_pem.bytes()).decode(),
                },
            }
        ],
        "users": [{"name": "dev", "user": {"tokenFile": token_file.name}}],
        "contexts": [{"name": "dev", "context": {"cluster": "dev", "user": "dev", "namespace": "team-a"}}],
    }
    path.write_text(yaml.safe_dump(config))
    return path


async def test_kubeconfig_with_ca_bundle_and_rotating_token_file(tmp_path: Path) -> None:
    ca = trustme.CA()
    api = LoopbackApi()
    token_file = tmp_path / "token"
    token_file.write_text("token-1\n")
    async with serve(api, ca) as server:
        connection = load_kubeconfig(
            write_kubeconfig(tmp_path / "kubeconfig", server=server, ca=ca, token_file=token_file)
        )
        assert connection.server == server
        assert connection.namespace == "team-a"
        assert isinstance(connection.token_source, FileTokenSource)
        async with KubeClient.from_connection(connection, settings=ClientSettings(qps=0, burst=1)) as client:
            created = await client.create(
                CM, {"metadata": {"name": "a"}, "data": {"k": "v"}}, namespace="team-a"
            )
            assert created["metadata"]["uid"] == "u1"
            assert (await client.get(CM, "a", namespace="team-a"))["data"] == {"k": "v"}
            with pytest.raises(NotFound):
                await client.get(CM, "b", namespace="team-a")
            token_file.write_text("token-2")
            await client.get(CM, "a", namespace="team-a")
            assert api.tokens_seen[-1] == "token-2"
            token_file.write_text("revoked")
            with pytest.raises(Unauthorized):
                await client.get(CM, "a", namespace="team-a")


async def test_watch_streams_over_the_aiohttp_transport(tmp_path: Path) -> None:
    ca = trustme.CA()
    api = LoopbackApi()
    api.objects["a"] = {"metadata": {"name": "a", "namespace": "ns", "resourceVersion": "5"}}
    client_ssl = ssl.create_default_context()
    ca.configure_trust(client_ssl)
    async with serve(api, ca) as server:
        connection = static_connection(server, token="token-1", ssl_context=client_ssl)
        async with KubeClient.from_connection(connection, settings=ClientSettings(qps=0, burst=1)) as client:
            watch = Watch(client, CM, namespace="ns")
            events = watch.events()
            first = await asyncio.wait_for(anext(events), 10)
            assert (first.type, first.object["metadata"]["name"]) == (EventType.ADDED, "a")
            assert (await asyncio.wait_for(anext(events), 10)).type is EventType.SYNCED
            event = {
                "type": "ADDED",
                "object": {"metadata": {"name": "b", "namespace": "ns", "resourceVersion": "6"}},
            }
            line = orjson.dumps(event) + b"\n"
            api.watch_lines.put_nowait(line[:10])  # split across chunks
            api.watch_lines.put_nowait(line[10:])
            second = await asyncio.wait_for(anext(events), 10)
            assert second.object["metadata"]["name"] == "b"
            assert watch.resource_version == "6"
            await events.aclose()


async def test_connection_refused_is_a_transport_error_not_sent() -> None:
    probe = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = probe.sockets[0].getsockname()[1]
    probe.close()
    await probe.wait_closed()
    connection = static_connection(f"https://127.0.0.1:{port}", token="t")
    async with KubeClient.from_connection(
        connection, settings=ClientSettings(qps=0, burst=1, max_attempts=1)
    ) as client:
        with pytest.raises(TransportError) as caught:
            await client.resource(CM)
    assert caught.value.request_sent is False


def test_in_cluster_config_reads_env_and_service_account_files(tmp_path: Path) -> None:
    ca = trustme.CA()
    (tmp_path / "token").write_text("sa-token")
    (tmp_path / "ca.crt").write_bytes(ca.cert_pem.bytes())
    (tmp_path / "namespace").write_text("kueue-system\n")
    connection = load_in_cluster(
        service_account_dir=tmp_path,
        environ={"KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"},
    )
    assert connection.server == "https://10.0.0.1:443"
    assert connection.namespace == "kueue-system"
    assert connection.token_source() == "sa-token"
    (tmp_path / "token").write_text("rotated")
    assert connection.token_source() == "rotated"
    assert connection.ssl_context is not None


async def test_kubeconfig_from_dict(tmp_path: Path) -> None:
    ca = trustme.CA()
    api = LoopbackApi()
    async with serve(api, ca) as server:
        document = {
            "apiVersion": "v1",
            "kind": "Config",
            "current-context": "worker",
            "clusters": [
                {
                    "name": "w",
                    "cluster": {
                        "server": server,
                        "certificate-authority-data": base64.b64encode(ca.cert_pem.bytes()).decode(),
                    },
                }
            ],
            "users": [{"name": "w", "user": {"token": "token-1"}}],
            "contexts": [{"name": "worker", "context": {"cluster": "w", "user": "w"}}],
        }
        connection = kubeconfig_from_dict(document)
        assert connection.token_source() == "token-1"
        async with KubeClient.from_connection(connection, settings=ClientSettings(qps=0, burst=1)) as client:
            assert (await client.resource(CM)).plural == "configmaps"
        assert api.tokens_seen == ["token-1"]


def test_unreadable_kubeconfig_names_the_file(tmp_path: Path) -> None:
    broken = tmp_path / "kubeconfig"
    broken.write_text("- just\n- a list\n")
    with pytest.raises(ValueError, match="kubeconfig must be a mapping"):
        load_kubeconfig(broken)


def _config_with_user(user: dict[str, object]) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "c",
        "clusters": [
            {"name": "k", "cluster": {"server": "https://127.0.0.1:1", "insecure-skip-tls-verify": True}}
        ],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "k", "user": "u"}}],
    }


def test_an_inline_token_is_used_as_is_and_other_credentials_go_through_the_loader() -> None:
    inline = kubeconfig_from_dict(_config_with_user({"token": "token-1"}))
    assert isinstance(inline.token_source, StaticTokenSource)  # no per-request reload of the config
    assert inline.token_source() == "token-1"
    basic = kubeconfig_from_dict(_config_with_user({"username": "u", "password": "p"}))
    assert isinstance(basic.token_source, ConfigurationTokenSource)
