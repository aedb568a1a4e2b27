"""Admission throughput and latency over TLS on loopback, against a bare-uvicorn ceiling.

Starts, in this process, (1) the real webhook (``/mutate`` + ``/validate``) and (2) a bare uvicorn
TLS endpoint that parses the AdmissionReview and echoes an allowed response (the ceiling: same TLS,
same HTTP server, no rules). A client drives each with N concurrent keep-alive connections for a
fixed duration; then the webhook again at half its maximum rate (open loop) for the p99 target,
and the echo at that same rate (the machine's own latency floor).
Prints admissions/s, p50/p99 latency and the ratio to the ceiling.

Both servers run on uvloop in their own process (as ``kueue-bridge webhook`` does); the client is
aiohttp on uvloop (httpx's own client costs more CPU per request than the server under test, which
on a 2-core machine both caps the ceiling and inflates the latencies measured).

    .venv/bin/python -m bench.webhook [--seconds 5] [--concurrency 8]
    (or .venv/bin/python bench/webhook.py: the script directory is swapped for the repository root,
    because this file's name would otherwise shadow the ``webhook`` package)
"""

from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path[0] = str(Path(__file__).resolve().parent.parent)

import argparse
import asyncio
import multiprocessing
import ssl
import statistics
import tempfile
import time
from typing import Any

import aiohttp
import orjson

from certs import generate_ca, issue_serving_cert, write_cert_dir
from shared.eventloop import run_process_loop
from shared.frameworks.batch_job import BATCH_JOB_GVK, BatchJobAdapter
from webhook.admission import AdmissionHandler
from webhook.app import create_app
from webhook.lookups import InMemoryLookups
from webhook.metrics import WebhookMetrics
from webhook.server import WebhookServer
from webhook.settings import Framework, WebhookSettings


def _review(operation: str) -> bytes:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "j",
            "namespace": "ns",
            "labels": {"kueue.x-k8s.io/queue-name": "q", "app": "x"},
        },
        "spec": {
            "parallelism": 2,
            "completions": 4,
            "template": {
                "spec": {
                    "containers": [
                        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
                    ],
                    "restartPolicy": "Never",
                }
            },
        },
    }
    request = {
        "uid": "u",
        "kind": {"group": "batch", "version": "v1", "kind": "Job"},
        "operation": operation,
        "object": job,
    }
    if operation == "UPDATE":
        request["oldObject"] = job
    return orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})


async def _ceiling_app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    body = b""
    more = True
    while more:
        message = await receive()
        body += message.get("body", b"")
        more = message.get("more_body", False)
    review = orjson.loads(body)
    payload = orjson.dumps(
        {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "response": {"uid": review["request"]["uid"], "allowed": True},
        }
    )
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]}
    )
    await send({"type": "http.response.body", "body": payload})


async def _drive(
    url: str,
    ctx: ssl.SSLContext,
    bodies: list[tuple[str, bytes]],
    *,
    seconds: float,
    concurrency: int,
    rate: float | None = None,
) -> list[float]:
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds
    interval = concurrency / rate if rate else 0.0

    async def worker(client: aiohttp.ClientSession, offset: float) -> None:
        i = 0
        next_at = time.perf_counter() + offset
        while time.perf_counter() < deadline:
            if interval:
                delay = next_at - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                next_at += interval
            path, body = bodies[i % len(bodies)]
            started = time.perf_counter()
            async with client.post(url + path, data=body, headers=_HEADERS) as r:
                payload = await r.read()
            latencies.append(time.perf_counter() - started)
            assert r.status == 200, payload[:200]
            i += 1

    connector = aiohttp.TCPConnector(limit=concurrency, ssl=ctx)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=10)) as client:
        await asyncio.gather(*(worker(client, interval * k / concurrency) for k in range(concurrency)))
    return latencies


_HEADERS = {"Content-Type": "application/json"}


def _summary(name: str, latencies: list[float], seconds: float) -> float:
    rate = len(latencies) / seconds
    q = statistics.quantiles(latencies, n=100)
    print(f"{name:<28} {rate:8.0f} admissions/s   p50 {q[49] * 1000:6.2f} ms   p99 {q[98] * 1000:6.2f} ms")
    return rate


async def _serve_both(cert_dir: Path, ports: Any, stop: Any) -> None:
    framework = Framework(
        name="batch/job",
        gvk=BATCH_JOB_GVK,
        plural="jobs",
        adapter=BatchJobAdapter,
        revalidate_create_on_update=True,
    )
    handler = AdmissionHandler(
        settings=WebhookSettings(frameworks=(framework,)),
        lookups=InMemoryLookups(local_queues={("ns", "q"): "cq"}, namespaces={"ns": {}}),
        metrics=WebhookMetrics(),
    )
    webhook = WebhookServer(
        app=create_app(handler=handler, readiness_checks={}), cert_dir=cert_dir, host="127.0.0.1", port=0
    )
    ceiling = WebhookServer(app=_ceiling_app, cert_dir=cert_dir, host="127.0.0.1", port=0)  # type: ignore[arg-type]
    await webhook.start()
    await ceiling.start()
    ports.put((webhook.port, ceiling.port))
    await asyncio.to_thread(stop.wait)
    await webhook.stop()
    await ceiling.stop()


def _server_process(cert_dir: str, ports: Any, stop: Any) -> None:
    """The servers run in their own process (own core), as in a cluster; the client loop in this one."""
    run_process_loop(_serve_both(Path(cert_dir), ports, stop))


async def main(seconds: float, concurrency: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cert_dir = Path(tmp)
        ca = generate_ca()
        pair = issue_serving_cert(ca=ca, dns_names=["localhost"], ip_addresses=["127.0.0.1"])
        write_cert_dir(cert_dir, serving=pair, ca_cert_pem=ca.cert_pem)
        ctx = ssl.create_default_context(cadata=ca.cert_pem.decode())
        mp = multiprocessing.get_context("spawn")
        ports, stop = mp.Queue(), mp.Event()
        process = mp.Process(target=_server_process, args=(str(cert_dir), ports, stop))
        process.start()
        try:
            webhook_port, ceiling_port = await asyncio.to_thread(ports.get, True, 60)
            mixed = [
                ("/mutate", _review("CREATE")),
                ("/validate", _review("CREATE")),
                ("/validate", _review("UPDATE")),
            ]
            echo = [("/", _review("CREATE"))]
            ceiling_url, webhook_url = (
                f"https://127.0.0.1:{ceiling_port}",
                f"https://127.0.0.1:{webhook_port}",
            )
            await _drive(ceiling_url, ctx, echo, seconds=1, concurrency=concurrency)  # warm-up
            top = _summary(
                "ceiling (bare uvicorn echo)",
                await _drive(ceiling_url, ctx, echo, seconds=seconds, concurrency=concurrency),
                seconds,
            )
            await _drive(webhook_url, ctx, mixed, seconds=1, concurrency=concurrency)
            ours = _summary(
                "webhook mutate+validate",
                await _drive(webhook_url, ctx, mixed, seconds=seconds, concurrency=concurrency),
                seconds,
            )
            print(f"ratio to ceiling: {ours / top:.2f}x (target >= 0.8x)")
            half = ours / 2
            lat = await _drive(webhook_url, ctx, mixed, seconds=seconds, concurrency=concurrency, rate=half)
            _summary(f"webhook at {half:.0f}/s (half max)", lat, seconds)
            # the same open-loop rate against the echo: the latency floor of TLS + HTTP + scheduling
            # on this machine, to tell our tail from the machine's
            lat = await _drive(ceiling_url, ctx, echo, seconds=seconds, concurrency=concurrency, rate=half)
            _summary(f"ceiling at {half:.0f}/s", lat, seconds)
        finally:
            stop.set()
            await asyncio.to_thread(process.join, 30)
            ports.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args()
    run_process_loop(main(args.seconds, args.concurrency))
