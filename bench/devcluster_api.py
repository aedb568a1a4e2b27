"""Benchmark of the devcluster API server: creates/s, gets/s and watch fan-out events/s.

The server runs in its own process (``kueue-bridge devcluster --port 0``), as it would for a local
run, so the figures are the server's throughput over HTTPS on loopback and not a measure of a
client sharing its event loop. The client is aiohttp with keep-alive connections and a fixed
number of requests in flight.

    .venv/bin/python -m bench.devcluster_api [--objects 3000] [--concurrency 32] [--watchers 20]

Prints one line per figure: ``creates/s``, ``gets/s`` and ``watch fan-out events/s`` (events
delivered to all watchers divided by the time from the first create to the last delivery).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import json
import ssl
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import aiohttp
import yaml

from bench.harness.clusters import devcluster_process
from bench.harness.load import run_concurrently

__all__ = ["main"]


def _server_access(kubeconfig: Path) -> tuple[str, str, ssl.SSLContext]:
    config = yaml.safe_load(kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    context = ssl.create_default_context(
        cadata=base64.b64decode(cluster["certificate-authority-data"]).decode()
    )
    return cluster["server"], config["users"][0]["user"]["token"], context


def _configmap(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": {"bench": "yes"}},
        "data": {"key": "value"},
    }


async def _bench(url: str, token: str, context: ssl.SSLContext, args: argparse.Namespace) -> dict[str, float]:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    connector = aiohttp.TCPConnector(ssl=context, limit=args.concurrency + args.watchers + 4)
    results: dict[str, float] = {}
    async with aiohttp.ClientSession(base_url=url, headers=headers, connector=connector) as session:
        for namespace in ("bench", "fanout"):
            async with session.post("/api/v1/namespaces", json={"metadata": {"name": namespace}}) as response:
                assert response.status == 201, await response.text()
        base = "/api/v1/namespaces/bench/configmaps"

        async def create(index: int) -> None:
            async with session.post(base, data=json.dumps(_configmap(f"cm-{index}"))) as response:
                assert response.status == 201, await response.text()
                await response.read()

        async def get(index: int) -> None:
            async with session.get(f"{base}/cm-{index % args.objects}") as response:
                assert response.status == 200
                await response.read()

        results["creates/s"] = await run_concurrently(args.objects, args.concurrency, create)
        gets = args.objects * 2
        results["gets/s"] = await run_concurrently(gets, args.concurrency, get)

        events = args.fanout_events
        received = [0] * args.watchers
        done = asyncio.Event()

        async def watcher(slot: int, started: asyncio.Event) -> None:
            params = {"watch": "true", "resourceVersion": resource_version, "timeoutSeconds": "600"}
            async with session.get("/api/v1/namespaces/fanout/configmaps", params=params) as response:
                started.set()
                async for line in response.content:
                    if line.strip():
                        received[slot] += 1
                        if all(count >= events for count in received):
                            done.set()
                        if received[slot] >= events:
                            return

        async with session.get("/api/v1/namespaces/fanout/configmaps") as response:
            resource_version = (await response.json())["metadata"]["resourceVersion"]
        starts = [asyncio.Event() for _ in range(args.watchers)]
        tasks = [asyncio.create_task(watcher(i, starts[i])) for i in range(args.watchers)]
        await asyncio.gather(*(s.wait() for s in starts))
        fanout = "/api/v1/namespaces/fanout/configmaps"

        async def create_fanout(index: int) -> None:
            async with session.post(fanout, data=json.dumps(_configmap(f"f-{index}"))) as response:
                await response.read()

        start = time.perf_counter()
        await run_concurrently(events, min(args.concurrency, 8), create_fanout)
        await asyncio.wait_for(done.wait(), timeout=300)
        results["watch fan-out events/s"] = events * args.watchers / (time.perf_counter() - start)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--watchers", type=int, default=20)
    parser.add_argument("--fanout-events", type=int, default=500)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp, devcluster_process(Path(tmp)) as (_, kubeconfig):
        results = asyncio.run(_bench(*_server_access(kubeconfig), args))
    for name, value in results.items():
        print(f"{name}: {value:,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
