"""The load a benchmark puts on a cluster or a webhook, and waiting for it to be served.

* :func:`queued_job` / :func:`job_body`: the queued batch Job a user writes (no ``suspend``: the
  webhook adds it); :func:`queued_review`: the captured AdmissionReview of such a Job's create.
* :func:`run_concurrently`: ``count`` calls, ``concurrency`` at a time, as a rate.
* :func:`probe_webhook`: a direct request to a webhook at a fixed interval, its round trips kept.
* :func:`wait_until`: wait for a condition that an :class:`asyncio.Event` says may have changed.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Final

import aiohttp

from devcluster.standin import RUN_SECONDS_ANNOTATION
from devrun import shared_dir
from shared.constants import QUEUE_LABEL
from shared.kube.kinds import JOB_GVK

__all__ = [
    "FIXTURE",
    "JOB",
    "job_body",
    "probe_webhook",
    "queued_job",
    "queued_review",
    "run_concurrently",
    "wait_until",
]

JOB: Final = JOB_GVK
#: a captured AdmissionReview of a batch Job create, in the reference folder ``../shared``
FIXTURE: Final = "fixtures/admissionreview-job-create.json"


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


async def run_concurrently(count: int, concurrency: int, one: Callable[[int], Awaitable[None]]) -> float:
    """Requests per second of ``one(i)`` for i in range(count), ``concurrency`` at a time."""
    indexes = iter(range(count))

    async def worker() -> None:
        for i in indexes:
            await one(i)

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return count / (time.perf_counter() - started)


def job_body(index: int, *, run_seconds: float) -> dict[str, Any]:
    """A queued Job as a user writes it: no ``suspend`` (the webhook adds it)."""
    return queued_job(f"job-{index}", queue="bench", cpu="10m", run_seconds=run_seconds)


def queued_review(*, namespace: str, queue: str) -> bytes:
    """The captured AdmissionReview of a Job create, queued to ``queue`` in ``namespace``."""
    review: dict[str, Any] = json.loads((shared_dir() / FIXTURE).read_text())
    request = review["request"]
    request["namespace"] = namespace
    metadata = request["object"]["metadata"]
    metadata["namespace"] = namespace
    metadata.setdefault("labels", {})[QUEUE_LABEL] = queue
    return json.dumps(review, separators=(",", ":")).encode()  # compact, as kube-apiserver sends it


async def probe_webhook(
    url: str, verify: ssl.SSLContext, body: bytes, interval: float, into: list[float]
) -> None:
    """POST ``body`` to ``url`` on one kept-alive connection every ``interval`` seconds until
    cancelled, appending each round trip (seconds) to ``into``."""
    connector = aiohttp.TCPConnector(limit=1, ssl=verify)
    headers = {"Content-Type": "application/json"}
    async with aiohttp.ClientSession(connector=connector) as http:
        while True:
            began = time.perf_counter()
            async with http.post(url, data=body, headers=headers) as response:
                await response.read()
            into.append(time.perf_counter() - began)
            await asyncio.sleep(interval)
