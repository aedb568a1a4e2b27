"""The FastAPI application: admission routes, health, readiness and metrics.

``/mutate`` and ``/validate`` are mounted as plain Starlette routes taking the raw request: no
FastAPI body model, no dependency resolution, no OpenAPI schema per request - the body is read once
(with a size cap enforced while streaming, so an oversized body is refused without buffering it all)
and handed to ``AdmissionHandler`` as bytes. The application itself is FastAPI so the operational
endpoints read like any other FastAPI service.

* ``/healthz`` - the process is serving (liveness);
* ``/readyz`` - 200 only when every readiness check passes (certificates loaded, informer caches
  synced); 503 listing the failing checks otherwise, so a new replica gets no traffic before it can
  answer correctly;
* ``/metrics`` - Prometheus text format from the server's own registry.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping

from fastapi import FastAPI
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.requests import ClientDisconnect, Request
from starlette.responses import PlainTextResponse, Response

from webhook.admission import AdmissionHandler

__all__ = ["create_app"]

_JSON = "application/json"


async def _read_limited(request: Request, limit: int) -> bytes | None:
    """The body, or ``None`` once it exceeds ``limit`` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def create_app(*, handler: AdmissionHandler, readiness_checks: Mapping[str, Callable[[], bool]]) -> FastAPI:
    app = FastAPI(title="kueue-bridge webhook", openapi_url=None, docs_url=None, redoc_url=None)
    limit = handler.max_body_bytes

    def admission_route(
        answer: Callable[[bytes], tuple[int, bytes]],
    ) -> Callable[[Request], Awaitable[Response]]:
        async def endpoint(request: Request) -> Response:
            try:
                body = await _read_limited(request, limit)
            except ClientDisconnect:
                return Response(status_code=400)
            if body is None:
                # let the handler produce the uniform one-line reason and count it
                body = b" " * (limit + 1)
            status, payload = answer(body)
            return Response(payload, status_code=status, media_type=_JSON if status == 200 else "text/plain")

        return endpoint

    app.router.add_route("/mutate", admission_route(handler.mutate), methods=["POST"])
    app.router.add_route("/validate", admission_route(handler.validate), methods=["POST"])

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

    return app
