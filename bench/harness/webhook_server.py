"""kueue-bridge's webhook serving TLS on 127.0.0.1 in a child process, for a load generator to drive.

:func:`webhook_process` spawns a process (its own core, as in a cluster; uvloop, as ``kueue-bridge
webhook`` runs) serving the ASGI application of ``handler_factory()`` -- a module-level function,
so the child builds the handler by name -- and, with ``ceiling``, beside it a bare uvicorn echo that
parses the AdmissionReview and allows it (same TLS, same HTTP server, no rules: the ceiling).
:func:`bench_handler` is the default: batch Jobs and one LocalQueue. :func:`write_certificates`
writes a fresh CA and serving certificate and returns a client context trusting them.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

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

__all__ = ["HEADERS", "ServedWebhook", "bench_handler", "webhook_process", "write_certificates"]

#: the headers of every AdmissionReview POST
HEADERS: Final = {"Content-Type": "application/json"}


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
