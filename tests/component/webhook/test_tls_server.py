"""The webhook over real TLS on 127.0.0.1: admission, health, metrics, rotation without failures."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import orjson
import pytest

from certs import generate_ca, issue_serving_cert, write_cert_dir
from shared.constants import QUEUE_LABEL
from tests.unit.webhook.helpers import handler, job, review
from webhook.serving.asgi_app import create_app
from webhook.serving.tls_server import Listener, WebhookServer


def issue(cert_dir: Path, ca=None):
    ca = ca or generate_ca()
    pair = issue_serving_cert(ca=ca, dns_names=["localhost"], ip_addresses=["127.0.0.1"])
    write_cert_dir(cert_dir, serving=pair, ca_cert_pem=ca.cert_pem)
    return ca, pair


@pytest.fixture
async def server(tmp_path: Path) -> AsyncIterator[tuple[WebhookServer, ssl.SSLContext]]:
    ca, _ = issue(tmp_path)
    synced = {"value": True}
    app = create_app(
        handler=handler(), readiness_checks={"certificates": lambda: True, "caches": lambda: synced["value"]}
    )
    srv = WebhookServer(
        app=app, listener=Listener(cert_dir=tmp_path, host="127.0.0.1", port=0, reload_interval=0.05)
    )
    await srv.start()
    client_ctx = ssl.create_default_context(cadata=ca.cert_pem.decode())
    srv.synced = synced  # type: ignore[attr-defined]
    try:
        yield srv, client_ctx
    finally:
        await srv.stop()


async def test_admission_health_and_metrics_over_tls(server) -> None:
    srv, ctx = server
    async with httpx.AsyncClient(base_url=f"https://127.0.0.1:{srv.port}", verify=ctx) as client:
        r = await client.post("/mutate", content=review(job(labels={QUEUE_LABEL: "q"})))
        assert r.status_code == 200
        assert orjson.loads(r.content)["response"]["patchType"] == "JSONPatch"
        r = await client.post("/validate", content=b"not json")
        assert r.status_code == 400 and r.text.startswith("request body is not valid JSON")
        r = await client.post("/mutate", content=b"x" * (8 * 1024 * 1024))
        assert r.status_code == 400 and "limit" in r.text
        assert (await client.get("/healthz")).text == "ok"
        assert (await client.get("/readyz")).status_code == 200
        srv.synced["value"] = False
        r = await client.get("/readyz")
        assert r.status_code == 503 and r.text == "not ready: caches"
        metrics = (await client.get("/metrics")).text
        assert (
            'kueue_bridge_webhook_requests_total{framework="batch/job",operation="CREATE",result="patched",webhook="mutate"} 1.0'
            in metrics
        )


async def test_server_requires_tls_1_2(server) -> None:
    srv, ctx = server
    assert srv.reloader.context.minimum_version is ssl.TLSVersion.TLSv1_2
    async with httpx.AsyncClient(base_url=f"https://127.0.0.1:{srv.port}", verify=ctx) as client:
        r = await client.get("/healthz", extensions={})
        assert r.status_code == 200


async def test_rotation_mid_run_causes_zero_failed_admissions(tmp_path: Path) -> None:
    ca, first = issue(tmp_path)
    app = create_app(handler=handler(), readiness_checks={})
    srv = WebhookServer(
        app=app, listener=Listener(cert_dir=tmp_path, host="127.0.0.1", port=0, reload_interval=0.05)
    )
    await srv.start()
    ctx = ssl.create_default_context(cadata=ca.cert_pem.decode())
    failures: list[str] = []
    done = 0
    stop = asyncio.Event()

    async def client_loop(new_connections: bool) -> None:
        nonlocal done
        limits = httpx.Limits(max_keepalive_connections=0) if new_connections else httpx.Limits()
        async with httpx.AsyncClient(
            base_url=f"https://127.0.0.1:{srv.port}", verify=ctx, limits=limits
        ) as client:
            while not stop.is_set():
                try:
                    r = await client.post("/mutate", content=review(job(labels={QUEUE_LABEL: "q"})))
                    if r.status_code != 200 or not orjson.loads(r.content)["response"]["allowed"]:
                        failures.append(f"{r.status_code} {r.text[:80]}")
                except httpx.HTTPError as exc:
                    failures.append(repr(exc))
                done += 1

    try:
        loops = [asyncio.create_task(client_loop(new)) for new in (True, False, True)]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 20
        for _ in range(3):  # rotate three times (twice the serving cert, once the whole CA chain kept)
            before = done
            _, pair = issue(tmp_path, ca)
            while srv.reloader.current != pair:
                assert loop.time() < deadline, "rotated certificate was not picked up"
                await asyncio.sleep(0.01)
            while done < before + 30:
                assert loop.time() < deadline
                await asyncio.sleep(0.01)
        stop.set()
        await asyncio.gather(*loops)
    finally:
        stop.set()
        await srv.stop()
    assert srv.reloader.reloads == 4
    assert srv.reloader.current != first
    assert failures == []
    assert done > 90


async def test_a_mismatched_pair_is_not_loaded(tmp_path: Path) -> None:
    ca, first = issue(tmp_path)
    app = create_app(handler=handler(), readiness_checks={})
    srv = WebhookServer(
        app=app, listener=Listener(cert_dir=tmp_path, host="127.0.0.1", port=0, reload_interval=3600)
    )
    await srv.start()
    try:
        other = issue_serving_cert(ca=ca, dns_names=["localhost"], ip_addresses=["127.0.0.1"])
        (tmp_path / "tls.crt").write_bytes(other.cert_pem)  # key not yet replaced
        assert not srv.reloader.reload_if_changed()
        assert srv.reloader.current == first
        ctx = ssl.create_default_context(cadata=ca.cert_pem.decode())
        async with httpx.AsyncClient(base_url=f"https://127.0.0.1:{srv.port}", verify=ctx) as client:
            assert (await client.get("/healthz")).status_code == 200
    finally:
        await srv.stop()
