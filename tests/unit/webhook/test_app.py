"""The ASGI fast path for /mutate and /validate, driven with raw ASGI messages (no network)."""

from __future__ import annotations

import orjson

from shared.constants import QUEUE_LABEL
from tests.unit.webhook.helpers import call, job, review, settings
from webhook.rules.lookups import InMemoryLookups
from webhook.serving.admission_review import AdmissionHandler
from webhook.serving.asgi_app import WebhookApp, create_app
from webhook.serving.metrics import WebhookMetrics


def app() -> WebhookApp:
    handler = AdmissionHandler(
        settings=settings(), lookups=InMemoryLookups(), metrics=WebhookMetrics(), max_body_bytes=1000
    )
    return create_app(handler=handler, readiness_checks={"caches": lambda: False})


async def test_body_in_several_chunks_is_admitted() -> None:
    payload = review(job(labels={QUEUE_LABEL: "q"}))
    status, body, sent = await call(
        app(), method="POST", path="/mutate", chunks=[payload[:10], payload[10:50], payload[50:]]
    )
    assert status == 200
    assert orjson.loads(body)["response"]["patchType"] == "JSONPatch"
    assert dict(sent[0]["headers"])[b"content-type"] == b"application/json"


async def test_oversized_bodies_are_refused_by_header_or_while_streaming() -> None:
    status, body, _ = await call(
        app(), method="POST", path="/validate", chunks=[b"x"], headers=[(b"content-length", b"5000")]
    )
    assert status == 400 and b"limit" in body
    status, body, sent = await call(app(), method="POST", path="/validate", chunks=[b"x" * 600, b"x" * 600])
    assert status == 400 and b"limit" in body
    assert dict(sent[0]["headers"])[b"content-type"].startswith(b"text/plain")


async def test_client_disconnect_mid_body_sends_nothing() -> None:
    status, _, sent = await call(app(), method="POST", path="/mutate", chunks=[])
    assert status is None and sent == []


async def test_other_methods_and_paths_go_to_the_operational_app() -> None:
    status, _, _ = await call(app(), method="GET", path="/mutate", chunks=[b""])
    assert status in (404, 405)
    status, body, _ = await call(app(), method="GET", path="/readyz", chunks=[b""])
    assert (status, body) == (503, b"not ready: caches")
    status, body, _ = await call(app(), method="GET", path="/healthz", chunks=[b""])
    assert (status, body) == (200, b"ok")
