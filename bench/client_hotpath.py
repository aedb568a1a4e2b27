"""CPU of the client runtime's per-request and per-event hot paths, one at a time, in microseconds.

``bench.reconciler_cpu`` measures whole job lives; this isolates the parts of ``shared.kube`` a
controller runs for every API request, watch event and queued key, so a change to one of them shows
without a cluster's noise:

* ``gvk``: ``GroupVersionKind.of`` of an object (every object and ownerReference a controller reads);
* ``workqueue``: one ``add`` + ``get`` + ``done`` of a key, with the queue's metrics;
* ``store``: ``Store.upsert`` of an updated object (every watch event of an informer);
* ``metrics``: ``KubeMetrics.observe_request`` (every API request);
* ``watch``: ``Watch._decode`` of one watch-event line (a Workload as the real API server sends it,
  with the ``managedFields`` of its three writers);
* ``http1``: a PATCH through ``shared.kube.http1.Http1Pool`` on kept-alive TLS connections to a
  minimal HTTP/1.1 server in a child process (uvloop on both sides): the client's CPU per request,
  the part of it spent inside ``transport.write`` (TLS encryption and the ``send`` system call), and
  how many connections the pool opened for the whole burst.

CPU is this process's (``time.process_time``; ``thread_time`` around the writes); each figure is
the median and range of ``--rounds`` rounds. Run it under the same load for a before/after.

    .venv/bin/python -m bench.client_hotpath [--rounds 5] [--only gvk,http1]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import itertools
import os
import socket
import ssl
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
import trustme
import uvloop
from prometheus_client import CollectorRegistry

from shared.kube import GroupVersionKind, KubeClient, KubeMetrics, http1
from shared.kube.client import ClientSettings
from shared.kube.clock import SystemClock
from shared.kube.transport import AiohttpTransport
from shared.kube.workqueue import WorkQueue

__all__ = ["main"]

WORKLOAD = {
    "apiVersion": "kueue.x-k8s.io/v1beta2",
    "kind": "Workload",
    "metadata": {
        "name": "job-job-123-4f2a1",
        "namespace": "bench",
        "uid": "0a6c7f3e-5d44-4c1e-9b8a-6f7d2c3e1a90",
        "resourceVersion": "123456",
        "generation": 1,
        "creationTimestamp": "2026-11-27T03:00:00Z",
        "labels": {"kueue.x-k8s.io/job-uid": "0a6c7f3e-5d44-4c1e-9b8a-6f7d2c3e1a91"},
        "ownerReferences": [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": "job-123",
                "uid": "0a6c7f3e-5d44-4c1e-9b8a-6f7d2c3e1a91",
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
        "finalizers": ["kueue.x-k8s.io/resource-in-use"],
        "managedFields": [
            {
                "manager": manager,
                "operation": operation,
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "time": "2026-11-27T03:00:01Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {
                    "f:status": {
                        "f:conditions": {
                            f'k:{{"type":"{kind}"}}': {
                                ".": {},
                                "f:lastTransitionTime": {},
                                "f:message": {},
                                "f:observedGeneration": {},
                                "f:reason": {},
                                "f:status": {},
                                "f:type": {},
                            }
                            for kind in ("QuotaReserved", "Admitted", "Finished", "PodsReady")
                        },
                        "f:admission": {"f:clusterQueue": {}, "f:podSetAssignments": {}},
                    },
                    "f:metadata": {"f:labels": {".": {}, "f:kueue.x-k8s.io/job-uid": {}}},
                },
                **({"subresource": "status"} if operation == "Apply" else {}),
            }
            for manager, operation in (
                ("kueue-bridge", "Update"),
                ("kueue-admission", "Apply"),
                ("kueue", "Apply"),
            )
        ],
    },
    "spec": {
        "active": True,
        "queueName": "user-queue",
        "priority": 0,
        "podSets": [
            {
                "name": "main",
                "count": 1,
                "template": {
                    "spec": {
                        "restartPolicy": "Never",
                        "containers": [
                            {
                                "name": "c",
                                "image": "busybox",
                                "resources": {"requests": {"cpu": "1", "memory": "200Mi"}},
                                "terminationMessagePath": "/dev/termination-log",
                                "terminationMessagePolicy": "File",
                                "imagePullPolicy": "Always",
                            }
                        ],
                        "dnsPolicy": "ClusterFirst",
                        "schedulerName": "default-scheduler",
                        "securityContext": {},
                        "terminationGracePeriodSeconds": 30,
                    }
                },
            }
        ],
    },
    "status": {
        "conditions": [
            {
                "type": kind,
                "status": "True",
                "reason": kind,
                "message": f"The workload is {kind}",
                "lastTransitionTime": "2026-11-27T03:00:01Z",
                "observedGeneration": 1,
            }
            for kind in ("QuotaReserved", "Admitted")
        ],
        "admission": {
            "clusterQueue": "cluster-queue",
            "podSetAssignments": [
                {"name": "main", "count": 1, "flavors": {"cpu": "default"}, "resourceUsage": {"cpu": "1"}}
            ],
        },
    },
}


def measure(label: str, rounds: int, one_round: Callable[[], tuple[float, str]]) -> None:
    """Print ``label``: median (range) of ``rounds`` results of ``one_round`` (value, detail)."""
    values, details = [], []
    for _ in range(rounds):
        value, detail = one_round()
        values.append(value)
        details.append(detail)
    print(
        f"{label:<58} {statistics.median(values):8.2f} us ({min(values):.2f}-{max(values):.2f})"
        + (f"  {details[-1]}" if details[-1] else ""),
        flush=True,
    )


def per_call(function: Callable[[], Any], count: int) -> float:
    started = time.process_time()
    for _ in range(count):
        function()
    return (time.process_time() - started) / count * 1e6


def bench_gvk(rounds: int) -> None:
    obj = {"apiVersion": "batch/v1", "kind": "Job"}
    measure("GroupVersionKind.of", rounds, lambda: (per_call(lambda: GroupVersionKind.of(obj), 200_000), ""))


def bench_store(rounds: int) -> None:
    from shared.kube.informer import Store, index_by_controller_uid

    store = Store({"owner": index_by_controller_uid})
    objects: list[dict[str, Any]] = [copy.deepcopy(WORKLOAD) for _ in range(200)]
    for number, obj in enumerate(objects):
        obj["metadata"]["name"] = f"w-{number}"
        store.upsert(obj)
    updates = itertools.cycle(objects)
    measure(
        "Store.upsert of an update (owner index unchanged)",
        rounds,
        lambda: (per_call(lambda: store.upsert(next(updates)), 100_000), ""),
    )


def bench_metrics(rounds: int) -> None:
    metrics = KubeMetrics(CollectorRegistry())

    def observe() -> None:
        metrics.observe_request(verb="patch", resource="workloads/status", code="200", seconds=0.012)

    measure("KubeMetrics.observe_request", rounds, lambda: (per_call(observe, 100_000), ""))


def bench_workqueue(rounds: int) -> None:
    async def cycle(count: int) -> float:
        queue: WorkQueue[str] = WorkQueue(
            name="bench", clock=SystemClock(), metrics=KubeMetrics(CollectorRegistry())
        )
        keys = [f"ns/job-{number}" for number in range(200)]
        started = time.process_time()
        for _ in range(count // len(keys)):
            for key in keys:
                queue.add(key)
            for _ in keys:
                queue.done(await queue.get())
        return (time.process_time() - started) / count * 1e6

    measure(
        "WorkQueue add + get + done (200 keys queued)",
        rounds,
        lambda: (uvloop.run(cycle(100_000)), ""),
    )


def bench_watch(rounds: int) -> None:
    from shared.kube.watch import Watch

    line = orjson.dumps({"type": "MODIFIED", "object": WORKLOAD})

    class NoClient:
        clock = SystemClock()
        metrics = KubeMetrics(CollectorRegistry())

    gvk = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "Workload")
    for drop in (False, True):
        watch = Watch(NoClient(), gvk, drop_managed_fields=drop)  # type: ignore[arg-type]
        measure(
            f"Watch._decode of a {len(line)}-byte Workload event" + (", drop managedFields" if drop else ""),
            rounds,
            lambda: (per_call(lambda: watch._decode(line), 20_000), ""),  # noqa: B023 - measured at once
        )


# --- http1 ------------------------------------------------------------------------------------------

RESPONSE = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 300\r\n\r\n" + b"x" * 300


class _Server(asyncio.Protocol):
    """Answers every request with ``RESPONSE`` (enough HTTP/1.1 for Content-Length bodies)."""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: Any = transport
        self.buffer = b""

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            length = 0
            for line in self.buffer[:end].split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.partition(b":")[2])
            if len(self.buffer) < end + 4 + length:
                return
            self.buffer = self.buffer[end + 4 + length :]
            self.transport.write(RESPONSE)


def _serve(port: int, cert: str) -> None:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert)
    loop = uvloop.new_event_loop()
    loop.run_until_complete(loop.create_server(_Server, "127.0.0.1", port, ssl=context))
    loop.run_forever()


def bench_http1(rounds: int, *, requests: int, concurrency: int) -> None:
    ca = trustme.CA()
    folder = tempfile.mkdtemp(prefix="client-hotpath-")
    ca.issue_cert("127.0.0.1").private_key_and_cert_chain_pem.write_to_path(f"{folder}/server.pem")
    ca.cert_pem.write_to_path(f"{folder}/ca.pem")
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    child = os.fork()
    if child == 0:  # pragma: no cover - the server process
        try:
            _serve(port, f"{folder}/server.pem")
        finally:
            os._exit(0)
    body = orjson.dumps({"status": {"conditions": WORKLOAD["status"]["conditions"]}})  # type: ignore[index]
    url = f"https://127.0.0.1:{port}/apis/kueue.x-k8s.io/v1beta2/namespaces/bench/workloads/w/status?fieldManager=x"
    headers = {
        "User-Agent": "kueue-bridge/bench",
        "Accept": "application/json",
        "Content-Type": "application/merge-patch+json",
        "Authorization": "Bearer " + "t" * 40,
    }
    written = [0.0, 0]
    real_made = http1._Connection.connection_made

    class TimedWrites:
        def __init__(self, transport: Any) -> None:
            self._transport = transport

        def write(self, data: bytes) -> None:
            started = time.thread_time()
            self._transport.write(data)
            written[0] += time.thread_time() - started
            written[1] += 1

        def __getattr__(self, name: str) -> Any:
            return getattr(self._transport, name)

    def connection_made(self: Any, transport: Any) -> None:
        real_made(self, transport)
        self.transport = TimedWrites(self.transport)

    async def cpu_per_request(worker: Callable[[int], Awaitable[None]]) -> tuple[float, float]:
        """(CPU µs per request, µs per socket write) of ``requests`` requests, ``concurrency`` workers
        at a time, after five each to open the connections."""
        await asyncio.gather(*(worker(5) for _ in range(concurrency)))
        written[:] = [0.0, 0]
        started = time.process_time()
        await asyncio.gather(*(worker(requests // concurrency) for _ in range(concurrency)))
        cpu = (time.process_time() - started) / requests * 1e6
        return cpu, written[0] / max(written[1], 1) * 1e6

    async def client_burst() -> tuple[float, str]:
        client = KubeClient(
            server=f"https://127.0.0.1:{port}",
            transport=AiohttpTransport(ssl_context=ssl.create_default_context(cafile=f"{folder}/ca.pem")),
            settings=ClientSettings(qps=0),
            metrics=KubeMetrics(CollectorRegistry()),
        )
        path = "/apis/kueue.x-k8s.io/v1beta2/namespaces/bench/workloads/w/status"
        patch = orjson.loads(body)

        async def worker(count: int) -> None:
            for _ in range(count):
                await client.request(
                    "PATCH",
                    path,
                    verb="patch",
                    resource="workloads/status",
                    params={"fieldManager": "kueue-bridge"},
                    body=patch,
                    content_type="application/merge-patch+json",
                    decode=False,
                )

        cpu, write = await cpu_per_request(worker)
        await client.aclose()
        return cpu, f"write {write:.1f} us"

    async def burst() -> tuple[float, str]:
        pool = http1.Http1Pool(
            ssl_context=ssl.create_default_context(cafile=f"{folder}/ca.pem"),
            max_connections=64,
            connect_timeout=5.0,
        )
        opened = 0
        real_connect = pool._connect

        async def counted(*args: Any, **kwargs: Any) -> Any:
            nonlocal opened
            opened += 1
            return await real_connect(*args, **kwargs)

        pool._connect = counted  # type: ignore[method-assign]

        async def worker(count: int) -> None:
            for _ in range(count):
                await pool.request("PATCH", url, headers=headers, content=body, path="/w", total_timeout=10.0)

        cpu, write = await cpu_per_request(worker)
        await pool.aclose()
        return cpu, f"write {write:.1f} us; {opened} connections for {requests + 5 * concurrency} requests"

    http1._Connection.connection_made = connection_made  # type: ignore[method-assign]
    try:
        time.sleep(0.3)
        measure(
            f"Http1Pool PATCH, {concurrency} concurrent, client CPU",
            rounds,
            lambda: uvloop.run(burst()),
        )
        measure(
            f"KubeClient.request PATCH, {concurrency} concurrent, client CPU",
            rounds,
            lambda: uvloop.run(client_burst()),
        )
    finally:
        http1._Connection.connection_made = real_made  # type: ignore[method-assign]
        os.kill(child, 9)
        os.waitpid(child, 0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--only", default="gvk,workqueue,store,metrics,watch,http1", help="comma-separated parts"
    )
    parser.add_argument("--requests", type=int, default=4000)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args(argv)
    parts = set(args.only.split(","))
    print(f"load average {os.getloadavg()[0]:.2f}; median (range) of {args.rounds} rounds, CPU per call")
    if "gvk" in parts:
        bench_gvk(args.rounds)
    if "workqueue" in parts:
        bench_workqueue(args.rounds)
    if "store" in parts:
        bench_store(args.rounds)
    if "metrics" in parts:
        bench_metrics(args.rounds)
    if "watch" in parts:
        bench_watch(args.rounds)
    if "http1" in parts:
        bench_http1(args.rounds, requests=args.requests, concurrency=args.concurrency)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
