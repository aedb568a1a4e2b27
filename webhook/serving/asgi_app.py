"""The ASGI application: admission routes, health, readiness and metrics.

``POST /mutate`` and ``POST /validate`` are answered by a raw ASGI fast path in front of the FastAPI
application: the body is read straight from ``receive`` (with a size cap enforced while streaming, so
an oversized body is refused without buffering it all), handed to ``AdmissionHandler`` as bytes, and
the answer sent as two ASGI messages. Measured in-process, Starlette's routing, middleware stack and
Request/Response objects cost ~50 us per admission - more than the Kueue rules themselves (~40 us
for a CREATE validation) - so the hot path skips them. Everything else (the operational endpoints,
and any other method or path, answered 404/405 as usual) goes to FastAPI, so those read like any
other FastAPI service.

* ``/healthz`` - the process is serving (liveness);
* ``/readyz`` - 200 only when every readiness check passes (certificates loaded, informer caches
  synced); 503 listing the failing checks otherwise, so a new replica gets no traffic before it can
  answer correctly;
* ``/metrics`` - Prometheus text format from the server's own registry;
* ``/configuration`` - ``{"digest": ...}``, the digest of the webhook configurations this replica's
  configuration renders (``webhook.registration.configuration_digest``): a replica about to change
  the registered rules asks every endpoint of the Service for it (404 when not given).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from fastapi import FastAPI
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.responses import PlainTextResponse, Response

from shared.asgi_body import BodyTooLarge, ClientDisconnected, declared_length, read_limited_body
from webhook.serving.admission_review import AdmissionHandler
from webhook.serving.answers import SyncAnswer, oversized_body

__all__ = ["ASGIApp", "WebhookApp", "create_app"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

_JSON_HEADERS = [(b"content-type", b"application/json")]
_TEXT_HEADERS = [(b"content-type", b"text/plain; charset=utf-8")]


class WebhookApp:
    """ASGI: admission fast path, everything else to ``operations`` (FastAPI)."""

    def __init__(self, *, handler: AdmissionHandler, operations: FastAPI) -> None:
        self.handler = handler
        self.operations = operations
        self._routes: dict[str, Callable[[bytes], Awaitable[tuple[int, bytes]]]] = {
            "/mutate": handler.mutate_async,
            "/validate": handler.validate_async,
        }
        self._limit = handler.max_body_bytes

    @property
    def fast_routes(self) -> dict[bytes, SyncAnswer]:
        """The admission routes for ``webhook.serving.fastpath``: the same handler methods as the ASGI path,
        answered synchronously (``None``: the request needs the ASGI path's await)."""
        return {b"/mutate": self.handler.mutate_now, b"/validate": self.handler.validate_now}

    @property
    def pending_routes(self) -> dict[bytes, Callable[[bytes], Awaitable[tuple[int, bytes]]]]:
        """The same routes' awaitable answers (an HTTP/2 stream whose synchronous answer was ``None``)."""
        return {path.encode(): answer for path, answer in self._routes.items()}

    @property
    def body_limit(self) -> int:
        return self._limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        answer = self._routes.get(scope.get("path", "")) if scope["type"] == "http" else None
        if answer is None or scope["method"] != "POST":
            await self.operations(scope, receive, send)
            return
        try:
            body = await read_limited_body(
                receive, declared=declared_length(scope["headers"]), limit=self._limit
            )
        except ClientDisconnected:
            return  # nobody to answer
        except BodyTooLarge:
            body = oversized_body(self._limit)
        status, payload = await answer(body)
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": _JSON_HEADERS if status == 200 else _TEXT_HEADERS,
            }
        )
        await send({"type": "http.response.body", "body": payload})


def create_app(
    *,
    handler: AdmissionHandler,
    readiness_checks: Mapping[str, Callable[[], bool]],
    configuration_digest: str | None = None,
) -> WebhookApp:
    app = FastAPI(title="kueue-bridge webhook", openapi_url=None, docs_url=None, redoc_url=None)

    @app.get("/healthz", response_class=PlainTextResponse)
    async def healthz() -> str:
        return "ok"

    @app.get("/readyz")
    async def readyz() -> Response:
        failing = [name for name, check in readiness_checks.items() if not check()]
        if failing:
            return PlainTextResponse("not ready: " + ", ".join(failing), status_code=503)
        return PlainTextResponse("ok")

    @app.get("/metrics")
    async def metrics() -> Response:
        return Response(generate_latest(handler.metrics.registry), media_type=CONTENT_TYPE_LATEST)

    if configuration_digest is not None:
        digest = configuration_digest

        @app.get("/configuration")
        async def configuration() -> dict[str, str]:
            return {"digest": digest}

    return WebhookApp(handler=handler, operations=app)
