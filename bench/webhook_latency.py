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

The webhook process and the ceiling are :mod:`bench.harness.webhook_server`'s.

    .venv/bin/python -m bench.webhook_latency [--seconds 5] [--concurrency 8]
    .venv/bin/python -m bench.webhook_latency --kueue [--seconds 10] [--rounds 3]   # against real Kueue's webhook
"""

from __future__ import annotations

import argparse
import asyncio
import ssl
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import orjson

from bench.harness.webhook_server import HEADERS, webhook_process, write_certificates
from bench.webhook_vs_kueue import main_vs_kueue
from shared.eventloop import run_process_loop

__all__ = ["main"]


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


def _summary(name: str, latencies: list[float], seconds: float) -> float:
    rate = len(latencies) / seconds
    q = statistics.quantiles(latencies, n=100)
    print(f"{name:<28} {rate:8.0f} admissions/s   p50 {q[49] * 1000:6.2f} ms   p99 {q[98] * 1000:6.2f} ms")
    return rate


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
        help="instead: wrk against ours and real Kueue's webhook on the kit's cluster (bench.webhook_vs_kueue)",
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
        sys.exit(main_vs_kueue(args))
    run_process_loop(main(args.seconds, args.concurrency))
