"""AdmissionChain over real HTTPS: a uvicorn webhook on 127.0.0.1 with a trustme certificate."""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import AsyncIterator, Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any

import pytest
import trustme
import uvicorn

from devcluster.apiserver.admission import AdmissionChain, AdmissionDenied

SERVICE_HOST = "kb-webhook.kb-system.svc"
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]


async def suspend_jobs(scope: Scope, receive: Receive, send: Send) -> None:
    """A mutating webhook that sets spec.suspend=true."""
    assert scope["type"] == "http"
    body = b""
    while True:
        message = await receive()
        body += message.get("body", b"")
        if not message.get("more_body"):
            break
    request = json.loads(body)["request"]
    patch = base64.b64encode(json.dumps([{"op": "add", "path": "/spec/suspend", "value": True}]).encode())
    answer = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {
            "uid": request["uid"],
            "allowed": True,
            "patchType": "JSONPatch",
            "patch": patch.decode(),
        },
    }
    payload = json.dumps(answer).encode()
    await send(
        {"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]}
    )
    await send({"type": "http.response.body", "body": payload})


async def _wait_started(server: uvicorn.Server, task: asyncio.Task[None]) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 10
    while not server.started:
        if task.done():
            task.result()
        if loop.time() > deadline:
            raise TimeoutError("uvicorn did not start")
        await asyncio.sleep(0.01)


@pytest.fixture
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
async def webhook_port(ca: trustme.CA, tmp_path: Path) -> AsyncIterator[int]:
    cert = ca.issue_cert(SERVICE_HOST)
    cert_file, key_file = tmp_path / "tls.crt", tmp_path / "tls.key"
    cert.cert_chain_pems[0].write_to_path(str(cert_file))
    cert.private_key_pem.write_to_path(str(key_file))
    config = uvicorn.Config(
        suspend_jobs,
        host="127.0.0.1",
        port=0,
        ssl_certfile=str(cert_file),
        ssl_keyfile=str(key_file),
        log_level="warning",
        lifespan="off",
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    await _wait_started(server, task)
    port = int(server.servers[0].sockets[0].getsockname()[1])
    yield port
    server.should_exit = True
    await task


def _chain(port: int, ca_pem: bytes) -> tuple[AdmissionChain, list[dict[str, Any]]]:
    hook = {
        "name": "mjob.kb.dev",
        "clientConfig": {
            "service": {"namespace": "kb-system", "name": "kb-webhook", "path": "/mutate"},
            "caBundle": base64.b64encode(ca_pem).decode(),
        },
        "rules": [
            {"operations": ["CREATE"], "apiGroups": ["batch"], "apiVersions": ["v1"], "resources": ["jobs"]}
        ],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    }
    configs = [{"metadata": {"name": "kb"}, "webhooks": [hook]}]
    chain = AdmissionChain(
        list_mutating=lambda: configs,
        list_validating=list,
        namespace_labels=lambda _: {},
        service_resolver={"kb-system/kb-webhook": f"127.0.0.1:{port}"},
    )
    return chain, configs


async def _admit(chain: AdmissionChain) -> dict[str, Any] | None:
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "ns"}, "spec": {}}
    return await chain.admit(
        operation="CREATE",
        gvk=("batch", "v1", "Job"),
        gvr=("batch", "v1", "jobs"),
        subresource="",
        namespace="ns",
        name="j",
        obj=job,
        old_obj=None,
        user_info={"username": "admin"},
        dry_run=False,
    )


async def test_service_webhook_over_https_verified_by_ca_bundle(webhook_port: int, ca: trustme.CA) -> None:
    chain, _ = _chain(webhook_port, ca.cert_pem.bytes())
    try:
        first = await _admit(chain)
        second = await _admit(chain)
    finally:
        await chain.aclose()
    assert first is not None
    assert second is not None
    assert first["spec"] == second["spec"] == {"suspend": True}


async def test_untrusted_certificate_fails_the_call(webhook_port: int) -> None:
    chain, _ = _chain(webhook_port, trustme.CA().cert_pem.bytes())
    try:
        with pytest.raises(AdmissionDenied) as caught:
            await _admit(chain)
    finally:
        await chain.aclose()
    assert caught.value.code == 500
    assert caught.value.message.endswith("x509: certificate signed by unknown authority")
