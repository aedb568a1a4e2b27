"""What several benchmarks build the same way: the queued batch Job they submit and their client.

Imported after the benchmark put the repository on ``sys.path`` (every ``bench/<name>.py`` does).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from devcluster.standin import RUN_SECONDS_ANNOTATION
from shared.constants import QUEUE_LABEL
from shared.kube import AlreadyExists, ClientSettings, KubeClient, load_kubeconfig
from shared.kube.kinds import CRD_GVK

__all__ = ["bench_client", "create_kueue_crds", "queued_job", "run_concurrently", "wait_until"]


def queued_job(
    name: str,
    *,
    queue: str,
    cpu: str,
    container: str = "main",
    namespace: str | None = None,
    run_seconds: float | None = None,
    spec: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A one-pod batch Job queued to ``queue`` as a user writes it; ``spec`` adds fields (``suspend``,
    ``managedBy``)."""
    metadata: dict[str, Any] = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    metadata["labels"] = {QUEUE_LABEL: queue}
    if run_seconds is not None:
        metadata["annotations"] = {RUN_SECONDS_ANNOTATION: str(run_seconds)}
    container_spec = {"name": container, "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            **(spec or {}),
            "parallelism": 1,
            "completions": 1,
            "template": {"spec": {"restartPolicy": "Never", "containers": [container_spec]}},
        },
    }


def bench_client(kubeconfig: Path, *, qps: int) -> KubeClient:
    """A client whose rate limit (``qps`` = burst) is not what the benchmark measures."""
    return KubeClient.from_connection(
        load_kubeconfig(kubeconfig), settings=ClientSettings(qps=qps, burst=qps)
    )


async def wait_until(
    reached: Callable[[], bool], changed: asyncio.Event, *, within: float, failure: Callable[[], str]
) -> None:
    """Return once ``reached()`` holds, checking again whenever ``changed`` is set (and every 5 s);
    ``RuntimeError(failure())`` when ``within`` seconds pass first."""
    deadline = time.monotonic() + within
    while not reached():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise RuntimeError(failure())
        changed.clear()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(changed.wait(), min(remaining, 5.0))


async def create_kueue_crds(client: KubeClient, shared: Path, names: Iterable[str]) -> None:
    """Create Kueue's CRDs ``kueue.x-k8s.io_<name>.yaml`` from the reference folder ``shared``
    (one that exists is left alone)."""
    for name in names:
        for document in yaml.safe_load_all(
            (shared / "crds" / "kueue" / f"kueue.x-k8s.io_{name}.yaml").read_text()
        ):
            if document and document.get("kind") == "CustomResourceDefinition":
                with contextlib.suppress(AlreadyExists):
                    await client.create(CRD_GVK, document)


async def run_concurrently(count: int, concurrency: int, one: Callable[[int], Awaitable[None]]) -> float:
    """Requests per second of ``one(i)`` for i in range(count), ``concurrency`` at a time."""
    indexes = iter(range(count))

    async def worker() -> None:
        for i in indexes:
            await one(i)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return count / (time.perf_counter() - started)
