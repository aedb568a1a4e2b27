"""``python -m bench.webhook_latency --kueue``: closed-loop admission throughput, ours against real Kueue's Go webhook.

Both webhooks serve the same cluster (the kit's kube-apiserver, ``bench.harness.real_cluster``, Kueue in its
normal mode so that its batch/job webhook is up) and answer the same request: the AdmissionReview
of a batch Job created with kubectl that ``../shared/fixtures`` captured from a real API server,
queued (``kueue.x-k8s.io/queue-name``) to a LocalQueue that exists, in a namespace both caches know.
Our webhook is ``kueue-bridge webhook`` as deployed (informer lookups against the cluster); it is
not registered with the API server (one set of Job webhooks per API server), only called directly.
Kueue's ``mjob.kb.io`` registration is taken out of its MutatingWebhookConfiguration first (Kueue's
server keeps serving the path, which is called directly too): our start-up preflight refuses to run
next to a Kueue that registers a batch/job webhook, rightly for a real deployment, and nothing here
creates a Job through the API server.

The load is ``wrk -t1 -c16`` (one thread, 16 kept-alive HTTPS connections, closed loop: each
connection sends its next request when the answer to the last one has arrived) for ``--seconds``.
Each server is pinned to one core with ``taskset`` (all its threads: Kueue's Go runtime would
otherwise spread over both), wrk to the other; rounds are interleaved (ours, Kueue's, ours, ...) so
that both see the same machine. wrk comes from Debian's packages (``apt-get install wrk``); :mod:`bench.harness.wrk` runs it.
Prints requests/s and p50/p99 latency per round, their medians and ranges, and the ratio.

Each round also reads the server process's CPU seconds (``/proc``, all threads) around the wrk run,
so it prints CPU microseconds per request and the ratio of those: what a request costs each server,
which a busy machine moves far less than the requests/s a server gets out of its share of a core
(on a loaded host the throughput ratio measures the scheduler as much as the servers; Kueue's
manager also runs its controllers, idle here).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import os
import shutil
import statistics
import tempfile
from pathlib import Path

import httpx

from bench.harness.clusters import BENCH_NAMESPACE, client_for, setup_queues
from bench.harness.components import write_config
from bench.harness.load import queued_review
from bench.harness.processes import load_average, process_cpu_seconds
from bench.harness.real_cluster import bench_cluster, cluster_pids, fresh
from bench.harness.wrk import SERVER_CORE, WrkResult, pin, run_wrk
from devrun import ComponentProcess, free_port, generate_certs
from shared.kube import GroupVersionKind, KubeClient

__all__ = ["main_vs_kueue"]

KUEUE_PATHS = {"mutate": "/mutate-batch-v1-job", "validate": "/validate-batch-v1-job"}
MUTATING_CONFIGURATION = GroupVersionKind(
    "admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration"
)
KUEUE_JOB_WEBHOOK = "mjob.kb.io"


async def unregister_kueue_job_webhook(client: KubeClient) -> None:
    """Take ``mjob.kb.io`` out of Kueue's registered mutating webhooks (its server still serves it)."""
    listed = await client.list(MUTATING_CONFIGURATION)
    for configuration in listed.get("items") or []:
        hooks = configuration.get("webhooks") or []
        kept = [hook for hook in hooks if hook.get("name") != KUEUE_JOB_WEBHOOK]
        if len(kept) != len(hooks):
            await client.update(MUTATING_CONFIGURATION, {**configuration, "webhooks": kept})


async def _check_answer(url: str, body: bytes) -> None:
    async with httpx.AsyncClient(verify=False, timeout=10.0) as http:
        response = await http.post(url, content=body, headers={"Content-Type": "application/json"})
    answer = response.json().get("response") or {}
    if response.status_code != 200 or answer.get("allowed") is not True:
        raise RuntimeError(f"{url} did not admit the review: {response.status_code} {response.text[:300]}")


async def _measure(args: argparse.Namespace, tmp: Path) -> dict[str, list[WrkResult]]:
    cluster = bench_cluster(args.state)
    await asyncio.to_thread(fresh, cluster, kueue_mode="normal")
    try:
        async with contextlib.AsyncExitStack() as stack:
            client = await stack.enter_async_context(client_for(cluster.kubeconfig))
            await setup_queues(client, jobs=10, install=False)
            await unregister_kueue_job_webhook(client)
            cert_dir = tmp / "certs"
            generate_certs(cert_dir)
            port = free_port()
            config = write_config(
                tmp / "config.yaml", webhook_port=port, cert_dir=cert_dir, probe_port=free_port(), qps=None
            )
            ours = ComponentProcess(
                name="webhook",
                args=("webhook", "--config", str(config), "--kubeconfig", str(cluster.kubeconfig)),
                log_path=tmp / "webhook.log",
                health_url=f"https://127.0.0.1:{port}/readyz",
                env={**os.environ, "KUBECONFIG": str(cluster.kubeconfig)},
            )
            stack.push_async_callback(ours.stop)
            await ours.start()
            assert ours.pid is not None
            kueue_port = cluster.ports.kueue_webhook
            urls = {
                "kueue-bridge": f"https://127.0.0.1:{port}/{args.operation}",
                "kueue": f"https://127.0.0.1:{kueue_port}{KUEUE_PATHS[args.operation]}",
            }
            body_file = tmp / "review.json"
            body_file.write_bytes(queued_review(namespace=BENCH_NAMESPACE, queue="bench"))
            for url in urls.values():
                await _check_answer(url, body_file.read_bytes())
            pids = {"kueue-bridge": ours.pid, "kueue": cluster_pids(cluster)["kueue-manager"]}
            for pid in pids.values():
                pin(pid)
            results: dict[str, list[WrkResult]] = {name: [] for name in urls}
            for url in urls.values():  # warm-up: connections, caches, Go's and our allocators
                await asyncio.to_thread(
                    run_wrk, url, body_file, seconds=2, connections=args.connections, script_dir=tmp
                )
            for number in range(1, args.rounds + 1):
                for name, url in urls.items():
                    load = load_average()
                    cpu_before = process_cpu_seconds(pids[name])
                    result = await asyncio.to_thread(
                        run_wrk,
                        url,
                        body_file,
                        seconds=args.seconds,
                        connections=args.connections,
                        script_dir=tmp,
                    )
                    cpu = process_cpu_seconds(pids[name]) - cpu_before
                    result = dataclasses.replace(
                        result, cpu_us_per_request=cpu / max(result.requests, 1) * 1e6
                    )
                    results[name].append(result)
                    print(
                        f"round {number} {name:<13} {result.requests_per_second:8.0f} req/s   "
                        f"p50 {result.p50_ms:6.2f} ms   p99 {result.p99_ms:6.2f} ms   "
                        f"{result.cpu_us_per_request:6.1f} us CPU per request   (load {load})",
                        flush=True,
                    )
            return results
    finally:
        cluster.stop()


def _spread(values: list[float], digits: int = 0) -> str:
    return f"{statistics.median(values):.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def main_vs_kueue(args: argparse.Namespace) -> int:
    if shutil.which("wrk") is None or shutil.which("taskset") is None:
        print("wrk and taskset are needed (apt-get install wrk util-linux)")
        return 2
    with tempfile.TemporaryDirectory(prefix="bench-webhook-kueue-") as tmp:
        if args.state is None:
            args.state = Path(tmp) / "cluster"
        results = asyncio.run(_measure(args, Path(tmp)))
    ours, kueue = results["kueue-bridge"], results["kueue"]
    print(
        f"\n{args.operation} of a queued batch Job, wrk -t1 -c{args.connections}, {args.seconds:g}s x "
        f"{args.rounds} interleaved rounds, each server on core {SERVER_CORE}, median (range):"
    )
    for name, values in (("kueue-bridge", ours), ("Kueue (Go)", kueue)):
        print(
            f"  {name:<13} {_spread([r.requests_per_second for r in values])} req/s, "
            f"p50 {_spread([r.p50_ms for r in values], 2)} ms, p99 {_spread([r.p99_ms for r in values], 2)} ms, "
            f"{_spread([r.cpu_us_per_request for r in values], 1)} us CPU per request"
        )
    ratio = statistics.median(r.requests_per_second for r in ours) / statistics.median(
        r.requests_per_second for r in kueue
    )
    print(f"  throughput ratio kueue-bridge / Kueue: {ratio:.2f}x (target >= 3x)")
    cpu_ratio = statistics.median(r.cpu_us_per_request for r in kueue) / max(
        statistics.median(r.cpu_us_per_request for r in ours), 1e-9
    )
    print(
        f"  CPU per request, Kueue / kueue-bridge: {cpu_ratio:.2f}x "
        "(the throughput ratio each would reach on a core of its own)"
    )
    return 0
