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
    .venv/bin/python -m bench.webhook --kueue [--seconds 10] [--rounds 3]   # against real Kueue's webhook
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
import contextlib
import multiprocessing
import ssl
import statistics
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import aiohttp
import orjson

from certs import generate_ca, issue_serving_cert, write_cert_dir
from shared.eventloop import run_process_loop
from shared.frameworks.batch_job import BatchJobAdapter
from shared.frameworks.builtin_kinds import BATCH_JOB
from webhook.rules.lookups import InMemoryLookups
from webhook.rules.settings import Framework, WebhookSettings
from webhook.serving.admission_review import AdmissionHandler
from webhook.serving.asgi_app import create_app
from webhook.serving.metrics import WebhookMetrics
from webhook.serving.tls_server import Listener, WebhookServer


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
            async with client.post(url + path, data=body, headers=HEADERS) as r:
                payload = await r.read()
            latencies.append(time.perf_counter() - started)
            assert r.status == 200, payload[:200]
            i += 1

    connector = aiohttp.TCPConnector(limit=concurrency, ssl=ctx)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=10)) as client:
        await asyncio.gather(*(worker(client, interval * k / concurrency) for k in range(concurrency)))
    return latencies


HEADERS = {"Content-Type": "application/json"}


def _summary(name: str, latencies: list[float], seconds: float) -> float:
    rate = len(latencies) / seconds
    q = statistics.quantiles(latencies, n=100)
    print(f"{name:<28} {rate:8.0f} admissions/s   p50 {q[49] * 1000:6.2f} ms   p99 {q[98] * 1000:6.2f} ms")
    return rate


def bench_handler() -> AdmissionHandler:
    """The webhook this benchmark measures: batch Jobs, one LocalQueue."""
    framework = Framework(
        name="batch/job",
        gvk=BATCH_JOB.gvk,
        plural="jobs",
        adapter=BatchJobAdapter,
        revalidate_create_on_update=True,
    )
    return AdmissionHandler(
        settings=WebhookSettings(frameworks=(framework,)),
        lookups=InMemoryLookups(local_queues={("ns", "q"): "cq"}, namespaces={"ns": {}}),
        metrics=WebhookMetrics(),
    )


def write_certificates(cert_dir: Path) -> ssl.SSLContext:
    """A fresh CA and a serving certificate for 127.0.0.1 in ``cert_dir``; a client context trusting it."""
    ca = generate_ca()
    pair = issue_serving_cert(ca=ca, dns_names=["localhost"], ip_addresses=["127.0.0.1"])
    write_cert_dir(cert_dir, serving=pair, ca_cert_pem=ca.cert_pem)
    return ssl.create_default_context(cadata=ca.cert_pem.decode())


async def _serve(
    cert_dir: Path, ports: Any, stop: Any, handler_factory: Callable[[], AdmissionHandler], ceiling: bool
) -> None:
    listener = Listener(cert_dir=cert_dir, host="127.0.0.1", port=0)
    webhook = WebhookServer(app=create_app(handler=handler_factory(), readiness_checks={}), listener=listener)
    echo = WebhookServer(app=_ceiling_app, listener=listener) if ceiling else None  # type: ignore[arg-type]
    await webhook.start()
    if echo is not None:
        await echo.start()
    ports.put((webhook.port, echo.port if echo is not None else None))
    await asyncio.to_thread(stop.wait)
    await webhook.stop()
    if echo is not None:
        await echo.stop()


def _server_process(
    cert_dir: str, ports: Any, stop: Any, handler_factory: Callable[[], AdmissionHandler], ceiling: bool
) -> None:
    """The servers run in their own process (own core), as in a cluster; the client loop in this one."""
    run_process_loop(_serve(Path(cert_dir), ports, stop, handler_factory, ceiling))


@dataclass(frozen=True)
class ServedWebhook:
    """A webhook (and optionally the echo ceiling) serving TLS on 127.0.0.1 in a child process."""

    process: multiprocessing.process.BaseProcess
    webhook_url: str
    ceiling_url: str | None


@contextlib.asynccontextmanager
async def webhook_process(
    cert_dir: Path,
    *,
    handler_factory: Callable[[], AdmissionHandler] = bench_handler,
    ceiling: bool = False,
) -> AsyncIterator[ServedWebhook]:
    """Run ``handler_factory()``'s webhook (a module-level function: the child builds it) in a spawned
    process with the certificates in ``cert_dir``; stop it on exit."""
    mp = multiprocessing.get_context("spawn")
    ports, stop = mp.Queue(), mp.Event()
    process = mp.Process(target=_server_process, args=(str(cert_dir), ports, stop, handler_factory, ceiling))
    process.start()
    try:
        webhook_port, ceiling_port = await asyncio.to_thread(ports.get, True, 60)
        yield ServedWebhook(
            process=process,
            webhook_url=f"https://127.0.0.1:{webhook_port}",
            ceiling_url=f"https://127.0.0.1:{ceiling_port}" if ceiling_port else None,
        )
    finally:
        stop.set()
        await asyncio.to_thread(process.join, 30)
        ports.close()


async def main(seconds: float, concurrency: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        cert_dir = Path(tmp)
        ctx = write_certificates(cert_dir)
        async with webhook_process(cert_dir, ceiling=True) as served:
            assert served.ceiling_url is not None
            mixed = [
                ("/mutate", _review("CREATE")),
                ("/validate", _review("CREATE")),
                ("/validate", _review("UPDATE")),
            ]
            echo = [("/", _review("CREATE"))]
            ceiling_url, webhook_url = served.ceiling_url, served.webhook_url
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


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument(
        "--kueue",
        action="store_true",
        help="instead: wrk against ours and real Kueue's webhook on the kit's cluster (bench/webhook_vs_kueue.py)",
    )
    parser.add_argument("--rounds", type=int, default=3, help="--kueue: interleaved rounds")
    parser.add_argument("--connections", type=int, default=16, help="--kueue: wrk -c")
    parser.add_argument(
        "--operation", choices=["mutate", "validate"], default="mutate", help="--kueue: which hook"
    )
    parser.add_argument(
        "--state", type=Path, help="--kueue: the cluster's state folder (default: a new temp dir)"
    )
    args = parser.parse_args()
    if args.kueue:
        from bench.webhook_vs_kueue import main_vs_kueue

        sys.exit(main_vs_kueue(args))
    run_process_loop(main(args.seconds, args.concurrency))
