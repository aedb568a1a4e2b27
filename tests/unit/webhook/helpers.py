"""Builders shared by the webhook unit tests."""

from __future__ import annotations

import base64
import copy
from typing import Any

import jsonpatch
import orjson

from shared.frameworks import builtin_kinds
from shared.frameworks.batch_job import BatchJobAdapter
from webhook.rules.lookups import InMemoryLookups
from webhook.rules.settings import Framework, WebhookSettings
from webhook.serving.admission_review import AdmissionHandler
from webhook.serving.asgi_app import WebhookApp
from webhook.serving.metrics import WebhookMetrics

BATCH_JOB = Framework(
    name="batch/job",
    gvk=builtin_kinds.BATCH_JOB.gvk,
    plural="jobs",
    adapter=BatchJobAdapter,
    revalidate_create_on_update=True,
    elastic_gate_template_path="spec.template",
)


def settings(**overrides: Any) -> WebhookSettings:
    return WebhookSettings(frameworks=(BATCH_JOB,), **overrides)


def job(name: str = "j", *, namespace: str = "ns", labels: dict | None = None, **spec: Any) -> dict:
    obj: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "parallelism": 1,
            "completions": 1,
            "template": {"spec": {"containers": [{"name": "c", "image": "i"}]}},
        }
        | spec,
    }
    if labels is not None:
        obj["metadata"]["labels"] = labels
    return obj


def review(
    obj: dict | None,
    *,
    operation: Any = "CREATE",
    old: dict | None = None,
    kind=("batch", "v1", "Job"),
    uid: str = "u-1",
) -> bytes:
    request: dict[str, Any] = {
        "uid": uid,
        "kind": {"group": kind[0], "version": kind[1], "kind": kind[2]},
        "operation": operation,
        "object": obj,
        "oldObject": old,
    }
    return orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})


def handler(lookups: InMemoryLookups | None = None, **overrides: Any) -> AdmissionHandler:
    return AdmissionHandler(
        settings=settings(**overrides), lookups=lookups or InMemoryLookups(), metrics=WebhookMetrics()
    )


def response(payload: bytes) -> dict:
    answer: dict[str, Any] = orjson.loads(payload)["response"]
    return answer


def apply(obj: dict, resp: dict) -> dict:
    if "patch" not in resp:
        return copy.deepcopy(obj)
    ops = orjson.loads(base64.b64decode(resp["patch"]))
    patched: dict[str, Any] = jsonpatch.apply_patch(obj, ops)
    return patched


def ops_of(resp: dict) -> list[dict]:
    return orjson.loads(base64.b64decode(resp["patch"])) if "patch" in resp else []


async def call(
    target: WebhookApp,
    *,
    method: str,
    path: str,
    chunks: list[bytes],
    headers: list[tuple[bytes, bytes]] | None = None,
) -> tuple[int | None, bytes, list[dict[str, Any]]]:
    incoming: list[dict[str, Any]] = [
        {"type": "http.request", "body": chunk, "more_body": i < len(chunks) - 1}
        for i, chunk in enumerate(chunks)
    ] or [{"type": "http.disconnect"}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        sent.append(dict(message))

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "https",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": headers or [],
        "server": ("127.0.0.1", 9443),
        "client": ("127.0.0.1", 1234),
    }
    await target(scope, receive, send)
    status = next((m["status"] for m in sent if m["type"] == "http.response.start"), None)
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, body, sent
