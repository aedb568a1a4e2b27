"""Benchmark of the Kubernetes client runtime (``shared.kube``).

Prints, for create / get / patch of ConfigMaps at a fixed concurrency:

* requests/s of ``KubeClient`` (default transport: ``AiohttpTransport``),
* requests/s of a bare aiohttp loop doing the same requests in the same run, and the ratio,
* for reference, ``KubeClient`` on httpx's own transports (HTTP/1.1 and HTTP/2),

and the informer's memory per cached object for 10,000 Job-like objects (tracemalloc).

Three servers to measure against:

* default: a minimal HTTPS API imitation (aiohttp.web + a trustme CA) on 127.0.0.1 in this process,
  so the script runs standalone; it shares the CPU (and the event loop) with the clients, which
  compresses differences between clients;
* ``--devcluster``: a devcluster (``devcluster.server.ThreadedDevCluster``, real validation, storage,
  watch cache) started in this process on its own thread and event loop, reached through the
  kubeconfig it writes; the informer figure then uses Job objects exactly as the devcluster serves
  them (uid, timestamps, managedFields...), created there and listed once before measuring;
* ``--kubeconfig PATH``: that API server (objects are created in ``--namespace`` and deleted
  afterwards).

    .venv/bin/python -m bench.client [--requests 2000] [--concurrency 16] [--devcluster | --kubeconfig PATH]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import gc
import itertools
import ssl
import sys
import time
import tracemalloc
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import aiohttp
import httpx
import orjson
from aiohttp import web
from prometheus_client import CollectorRegistry

from bench.harness.load import run_concurrently
from shared.kube import (
    ClientSettings,
    ConnectionConfig,
    HttpxTransport,
    Informer,
    KubeClient,
    KubeMetrics,
    load_kubeconfig,
    static_connection,
    strip_managed_fields,
)
from shared.kube.kinds import CONFIG_MAP_GVK, JOB_GVK, NAMESPACE_GVK

__all__ = ["main"]

OPS = ("create", "get", "patch")

# --- a minimal API imitation ------------------------------------------------------------------


def _json(status: int, body: Any) -> web.Response:
    return web.Response(status=status, body=orjson.dumps(body), content_type="application/json")


def _status(code: int, reason: str, message: str) -> web.Response:
    return _json(
        code,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "reason": reason,
            "message": message,
            "code": code,
        },
    )


def build_api_app() -> web.Application:
    objects: dict[tuple[str, str], dict[str, Any]] = {}
    versions = itertools.count(1000)

    async def discovery(request: web.Request) -> web.Response:
        return _json(
            200,
            {
                "kind": "APIResourceList",
                "groupVersion": "v1",
                "resources": [
                    {
                        "name": "configmaps",
                        "namespaced": True,
                        "kind": "ConfigMap",
                        "verbs": ["create", "get", "patch"],
                    }
                ],
            },
        )

    async def create(request: web.Request) -> web.Response:
        body = orjson.loads(await request.read())
        namespace = request.match_info["ns"]
        metadata = body.setdefault("metadata", {})
        key = (namespace, metadata.get("name", ""))
        if key in objects:
            return _status(409, "AlreadyExists", f'configmaps "{key[1]}" already exists')
        metadata.update(namespace=namespace, uid=str(uuid.uuid4()), resourceVersion=str(next(versions)))
        objects[key] = body
        return _json(201, body)

    async def get(request: web.Request) -> web.Response:
        obj = objects.get((request.match_info["ns"], request.match_info["name"]))
        if obj is None:
            return _status(404, "NotFound", "not found")
        return _json(200, obj)

    async def patch(request: web.Request) -> web.Response:
        obj = objects.get((request.match_info["ns"], request.match_info["name"]))
        if obj is None:
            return _status(404, "NotFound", "not found")
        merge = orjson.loads(await request.read())
        obj.setdefault("data", {}).update(merge.get("data") or {})
        obj["metadata"]["resourceVersion"] = str(next(versions))
        return _json(200, obj)

    app = web.Application()
    app.router.add_get("/api/v1", discovery)
    app.router.add_post("/api/v1/namespaces/{ns}/configmaps", create)
    app.router.add_get("/api/v1/namespaces/{ns}/configmaps/{name}", get)
    app.router.add_patch("/api/v1/namespaces/{ns}/configmaps/{name}", patch)
    return app


@contextlib.asynccontextmanager
async def loopback_api() -> AsyncIterator[ConnectionConfig]:
    import trustme

    ca = trustme.CA()
    server_ssl = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(server_ssl)
    runner = web.AppRunner(build_api_app(), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=server_ssl)
    await site.start()
    port = runner.addresses[0][1]
    client_ssl = ssl.create_default_context()
    ca.configure_trust(client_ssl)
    try:
        yield static_connection(f"https://127.0.0.1:{port}", token="bench-token", ssl_context=client_ssl)
    finally:
        await runner.cleanup()


# --- the measured loops -----------------------------------------------------------------------


async def measure_op(
    count: int, concurrency: int, one: Callable[[int], Awaitable[None]]
) -> tuple[float, float]:
    """(requests/s, process CPU microseconds per request) of one run.

    CPU per request counts this whole process (clients, and the in-process server when there is
    one); it is far less sensitive than requests/s to other load on the machine, so the difference
    between two clients in the same run is their difference in CPU cost.
    """
    cpu_started = time.process_time()
    rate = await run_concurrently(count, concurrency, one)
    return rate, (time.process_time() - cpu_started) / count * 1e6


def configmap(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"key": "value", "n": name},
    }


class RawAiohttp:
    """What a hand-written aiohttp loop does: the baseline."""

    def __init__(self, connection: ConnectionConfig, namespace: str, concurrency: int) -> None:
        self.base = f"{connection.server}/api/v1/namespaces/{namespace}/configmaps"
        self.connection = connection
        self.token = connection.token_source()  # read once, as a hand-written loop would
        self.session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(ssl=connection.ssl_context or True, limit=concurrency)
        )

    def headers(self, content_type: str | None = None) -> dict[str, str]:
        headers = {"Accept": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        if content_type:
            headers["Content-Type"] = content_type
        return headers

    async def create(self, name: str) -> None:
        async with self.session.post(
            self.base, data=orjson.dumps(configmap(name)), headers=self.headers("application/json")
        ) as r:
            body = orjson.loads(await r.read())
            assert r.status == 201, body

    async def get(self, name: str) -> None:
        async with self.session.get(f"{self.base}/{name}", headers=self.headers()) as r:
            body = orjson.loads(await r.read())
            assert r.status == 200, body

    async def patch(self, name: str) -> None:
        patch = orjson.dumps({"data": {"patched": "yes"}})
        async with self.session.patch(
            f"{self.base}/{name}", data=patch, headers=self.headers("application/merge-patch+json")
        ) as r:
            body = orjson.loads(await r.read())
            assert r.status == 200, body

    async def aclose(self) -> None:
        await self.session.close()


def raw_call(raw: RawAiohttp, op: str, names: list[str]) -> Callable[[int], Awaitable[None]]:
    method: Callable[[str], Awaitable[None]] = getattr(raw, op)

    async def one(i: int) -> None:
        await method(names[i])

    return one


def kube_call(
    client: KubeClient, op: str, names: list[str], namespace: str
) -> Callable[[int], Awaitable[None]]:
    async def create(i: int) -> None:
        await client.create(CONFIG_MAP_GVK, configmap(names[i]), namespace=namespace)

    async def get(i: int) -> None:
        await client.get(CONFIG_MAP_GVK, names[i], namespace=namespace)

    async def patch(i: int) -> None:
        await client.patch(CONFIG_MAP_GVK, names[i], {"data": {"patched": "yes"}}, namespace=namespace)

    calls: dict[str, Callable[[int], Awaitable[None]]] = {"create": create, "get": get, "patch": patch}
    return calls[op]


async def measure_throughput(
    connection: ConnectionConfig, *, namespace: str, count: int, concurrency: int, rounds: int, cleanup: bool
) -> list[str]:
    """Best of ``rounds`` alternating runs per client and operation (alternation spreads noise)."""
    run_id = uuid.uuid4().hex[:6]
    raw = RawAiohttp(connection, namespace, concurrency)
    # Our client runs as in production: with metrics (on a private registry).
    settings = ClientSettings(qps=0, burst=1)
    metrics = KubeMetrics(CollectorRegistry())

    def client_for(transport: httpx.AsyncBaseTransport | None) -> KubeClient:
        wrapped = HttpxTransport(transport) if transport is not None else None
        return KubeClient.from_connection(connection, settings=settings, transport=wrapped, metrics=metrics)

    ours = client_for(None)
    contenders: dict[str, KubeClient | None] = {
        "raw aiohttp loop": None,
        "KubeClient (aiohttp transport)": ours,
    }
    for label, http2 in (("KubeClient (httpx HTTP/1.1)", False), ("KubeClient (httpx HTTP/2)", True)):
        transport = httpx.AsyncHTTPTransport(
            verify=connection.ssl_context or True,
            http2=http2,
            limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency),
        )
        contenders[label] = client_for(transport)
    created: list[str] = []
    best: dict[str, dict[str, float]] = {label: {} for label in contenders}
    least_cpu: dict[str, dict[str, float]] = {label: {} for label in contenders}
    try:
        for client in contenders.values():  # warm up: discovery, connections
            if client is not None:
                await client.resource(CONFIG_MAP_GVK)
        for round_index in range(rounds):
            names = {
                label: [f"bench-{run_id}-{round_index}-{n}-{i}" for i in range(count)]
                for n, label in enumerate(contenders)
            }
            for own in names.values():
                created.extend(own)
            order = list(contenders.items())
            shift = round_index % len(order)  # rotate who goes first, so no client always runs on a cold loop
            order = order[shift:] + order[:shift]
            for op in OPS:
                for label, client in order:
                    one = (
                        raw_call(raw, op, names[label])
                        if client is None
                        else kube_call(client, op, names[label], namespace)
                    )
                    rate, cpu = await measure_op(count, concurrency, one)
                    best[label][op] = max(best[label].get(op, 0.0), rate)
                    least_cpu[label][op] = min(least_cpu[label].get(op, float("inf")), cpu)
        baseline = best["raw aiohttp loop"]
        cpu_baseline = least_cpu["raw aiohttp loop"]
        lines = [
            f"{'client':34} {'create/s':>10} {'get/s':>10} {'patch/s':>10}   ratio vs raw aiohttp (create/get/patch)"
        ]
        for label, by_op in best.items():
            ratios = "/".join(f"{by_op[op] / baseline[op]:.2f}" for op in OPS)
            lines.append(
                f"{label:34} {by_op['create']:10.0f} {by_op['get']:10.0f} {by_op['patch']:10.0f}   {ratios}"
            )
        lines.append(
            f"{'process CPU us/request (least)':34} {'create':>10} {'get':>10} {'patch':>10}   "
            "ratio raw/ours (1.00 = no extra CPU)"
        )
        for label, by_op in least_cpu.items():
            ratios = "/".join(f"{cpu_baseline[op] / by_op[op]:.2f}" for op in OPS)
            lines.append(
                f"{label:34} {by_op['create']:10.0f} {by_op['get']:10.0f} {by_op['patch']:10.0f}   {ratios}"
            )
    finally:
        await raw.aclose()
        if cleanup:
            for name in created:
                with contextlib.suppress(Exception):
                    await ours.delete(CONFIG_MAP_GVK, name, namespace=namespace)
        for client in contenders.values():
            if client is not None:
                await client.aclose()
    return lines


# --- informer memory --------------------------------------------------------------------------


def job(i: int) -> dict[str, Any]:
    """A batch/v1 Job roughly as the API server returns it (labels, managed fields trimmed)."""
    return {
        "metadata": {
            "name": f"job-{i}",
            "namespace": f"ns-{i % 50}",
            "uid": str(uuid.UUID(int=i)),
            "resourceVersion": str(10_000 + i),
            "generation": 1,
            "creationTimestamp": "2025-01-01T00:00:00Z",
            "labels": {"kueue.x-k8s.io/queue-name": "user-queue", "app": f"app-{i % 100}"},
            "annotations": {"kueue.x-k8s.io/job-min-parallelism": "1"},
        },
        "spec": {
            "parallelism": 3,
            "completions": 3,
            "suspend": True,
            "template": {
                "metadata": {"labels": {"app": f"app-{i % 100}"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {
                            "name": "main",
                            "image": "registry.k8s.io/e2e-test-images/agnhost:2.53",
                            "args": ["entrypoint-tester", "hello", "world"],
                            "resources": {"requests": {"cpu": "1", "memory": "200Mi"}},
                        }
                    ],
                },
            },
        },
        "status": {},
    }


async def served_job_list(connection: ConnectionConfig, count: int, concurrency: int) -> bytes:
    """Create ``count`` Jobs on the server and return its JobList as served (one unpaginated list)."""
    namespace = NAMESPACE_GVK
    async with KubeClient.from_connection(connection, settings=ClientSettings(qps=0, burst=1)) as client:
        for n in range(50):
            await client.create(namespace, {"metadata": {"name": f"ns-{n}"}})

        async def create(i: int) -> None:
            body = job(i)
            for key in ("uid", "resourceVersion", "generation", "creationTimestamp"):
                del body["metadata"][key]
            await client.create(JOB_GVK, {"apiVersion": "batch/v1", "kind": "Job", **body})

        await run_concurrently(count, concurrency, create)
        info = await client.resource(JOB_GVK)
        raw = await client.request("GET", info.path(), verb="list", resource=info.resource_label)
    return orjson.dumps(raw)


async def measure_informer_memory(
    count: int,
    *,
    served: bytes | None = None,
    transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
) -> list[str]:
    """Bytes an informer keeps per cached Job; ``transform`` as the informer's (the reconciler's
    informers drop managedFields: ``shared.kube.strip_managed_fields``)."""
    body = served or orjson.dumps(
        {
            "kind": "JobList",
            "apiVersion": "batch/v1",
            "metadata": {"resourceVersion": "99999"},
            "items": [job(i) for i in range(count)],
        }
    )
    source = "as served by the devcluster" if served else "synthetic"
    json_bytes_per_object = len(body) / count

    payload = {"body": body}

    class IdleStream(httpx.AsyncByteStream):
        async def __aiter__(self) -> AsyncIterator[bytes]:
            await asyncio.Event().wait()
            yield b""

    async def handler(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/apis/batch/v1":
            return httpx.Response(
                200,
                json={
                    "resources": [
                        {"name": "jobs", "namespaced": True, "kind": "Job", "verbs": ["list", "watch"]}
                    ]
                },
            )
        if request.url.params.get("watch") == "true":
            return httpx.Response(200, stream=IdleStream())
        return httpx.Response(200, content=payload.pop("body", b"{}"))

    client = KubeClient(
        server="https://memory.invalid",
        transport=HttpxTransport(httpx.MockTransport(handler)),
        settings=ClientSettings(qps=0, burst=1),
    )
    await client.resource(JOB_GVK)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.take_snapshot()
    informer = Informer(client, JOB_GVK, resync_period=None, transform=transform)
    task = asyncio.create_task(informer.run())
    await informer.wait_synced()
    del body  # the list response is transient: only what the informer keeps is counted
    gc.collect()
    after = tracemalloc.take_snapshot()
    retained = sum(stat.size_diff for stat in after.compare_to(before, "filename"))
    tracemalloc.stop()
    assert len(informer.store) == count
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    await client.aclose()
    kept = "managedFields dropped, as the reconciler's informers" if transform else "as listed"
    return [
        f"informer memory: {retained / count:,.0f} bytes per cached object for {count:,} Job objects ({source}, "
        f"{kept}) (JSON size {json_bytes_per_object:,.0f} bytes/object; total {retained / 2**20:,.1f} MiB)"
    ]


async def main_async(args: argparse.Namespace) -> None:
    print(f"python {sys.version.split()[0]}, httpx {httpx.__version__}, aiohttp {aiohttp.__version__}")
    served: bytes | None = None
    throughput = functools.partial(
        measure_throughput,
        namespace=args.namespace,
        count=args.requests,
        concurrency=args.concurrency,
        rounds=args.rounds,
    )
    if args.devcluster:
        from devcluster.apiserver import ServerOptions
        from devcluster.server import ThreadedDevCluster

        cluster = await asyncio.to_thread(ThreadedDevCluster(options=ServerOptions()).start)
        try:
            connection = load_kubeconfig(cluster.kubeconfig_path)
            print(f"API server: in-process devcluster at {connection.server} (own thread and loop, same CPU)")
            lines = await throughput(connection, cleanup=False)
            served = await served_job_list(connection, args.objects, args.concurrency)
        finally:
            await asyncio.to_thread(cluster.stop)
    elif args.kubeconfig:
        connection = load_kubeconfig(args.kubeconfig, context=args.context)
        print(f"API server: {connection.server} (kubeconfig {args.kubeconfig})")
        lines = await throughput(connection, cleanup=True)
    else:
        async with loopback_api() as connection:
            print(f"API server: in-process HTTPS imitation at {connection.server} (shares this CPU and loop)")
            lines = await throughput(connection, cleanup=False)
    print(
        f"{args.requests} requests per operation and client, concurrency {args.concurrency}, best of {args.rounds} rounds"
    )
    for line in lines:
        print(line)
    for transform in (None, strip_managed_fields):
        for line in await measure_informer_memory(args.objects, served=served, transform=transform):
            print(line)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--kubeconfig", help="use this API server instead of the in-process imitation")
    where.add_argument(
        "--devcluster", action="store_true", help="start a devcluster in this process and use it"
    )
    parser.add_argument("--context", help="kubeconfig context")
    parser.add_argument("--namespace", default="default")
    parser.add_argument("--requests", type=int, default=2000, help="requests per operation and client")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds; the best round counts")
    parser.add_argument("--objects", type=int, default=10_000, help="objects cached for the memory figure")
    args = parser.parse_args(argv)
    asyncio.run(main_async(args))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
