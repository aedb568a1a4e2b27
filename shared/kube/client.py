"""The async Kubernetes API client: raw dicts in and out, typed errors, safe retries, a QPS limit.

Design:

* **Raw dicts.** Objects are never round-tripped through models here, so no field is ever lost;
  JSON is encoded and decoded with orjson.
* **Transport seam.** The client takes any ``KubeTransport`` (``shared.kube.transport``): the
  default ``AiohttpTransport``, or ``HttpxTransport`` around an httpx transport (tests:
  ``httpx.MockTransport``; ``bench/client.py``). Every request takes the same path through the client whatever
  the transport, so tests on a fake transport run production's request path.
* **Fresh credentials.** ``BearerTokenAuth`` is asked for the token on every request.
* **Retries only where safe.** A request is retried (tenacity, jittered exponential backoff) when
  the server certainly did not act on it or acting twice is harmless:

  - 429 ``TooManyRequests`` for every verb (the API server rejects before doing anything), waiting
    at least the server's ``Retry-After``;
  - 5xx answers for reads (GET) only -- a POST that got a 500 may have been applied;
  - transport errors for reads, and for writes only when the connection could not be opened.

  Everything else (``Conflict``, ``Invalid``, a 500 on a write) surfaces at once.
* **Client-side rate limit.** Every attempt takes a token from a ``TokenBucket`` (``qps``/``burst``
  of the component's ``clientConnection``), so retries are limited too.
* **Metrics.** Every attempt is counted by verb, resource and code, with its latency.

The typed verbs (get, list, create, update, patch, apply, delete, status) live in ``verbs``; this
module is the request core they all go through.
"""

from __future__ import annotations

import functools
import random
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import orjson
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception, stop_after_attempt

from shared.kube.auth import BearerTokenAuth
from shared.kube.clock import Clock, SystemClock
from shared.kube.connection import ConnectionConfig
from shared.kube.discovery import RESTMapper
from shared.kube.errors import (
    ApiError,
    KubeError,
    TooManyRequests,
    TransportError,
    UnexpectedResponse,
    api_error_from_response,
)
from shared.kube.observability import KubeMetrics
from shared.kube.ratelimit import TokenBucket
from shared.kube.transport import (
    AiohttpTransport,
    BufferedRequest,
    KubeTransport,
    StreamedResponse,
    TransportSettings,
)
from shared.kube.verbs import ResourceVerbs

__all__ = ["ClientSettings", "KubeClient", "StreamResponse"]

JSON_CONTENT = "application/json"
#: what a write whose answer is dropped asks for: the object's metadata only (kube-apiserver encodes,
#: sends and we receive a few hundred bytes instead of the whole object), plain JSON otherwise
METADATA_ONLY = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1, application/json"


@dataclass(frozen=True)
class ClientSettings:
    """Client behaviour; ``qps``/``burst`` come from the component's ``clientConnection``."""

    qps: float = 50.0
    burst: int = 100
    max_attempts: int = 6
    retry_backoff_initial: float = 0.1
    retry_backoff_max: float = 10.0
    request_timeout: float = 60.0
    user_agent: str = "kueue-bridge"
    transport: TransportSettings = field(default_factory=TransportSettings)


class StreamResponse:
    """A streamed 2xx answer (watch): iterate ``chunks()``; always closed by ``aclose``."""

    def __init__(self, response: StreamedResponse, *, path: str) -> None:
        self._response = response
        self.path = path
        self.status_code = response.status_code

    def chunks(self) -> AsyncIterator[bytes]:
        return self._response.chunks()

    async def aclose(self) -> None:
        await self._response.aclose()


def _is_read(method: str) -> bool:
    return method == "GET"


def _retryable(exc: BaseException, *, method: str) -> bool:
    if isinstance(exc, TooManyRequests):
        return True
    if isinstance(exc, ApiError):
        return exc.code >= 500 and _is_read(method)
    if isinstance(exc, TransportError):
        return _is_read(method) or not exc.request_sent
    return False


class KubeClient(ResourceVerbs):
    """One API server. Create with ``from_connection`` (or directly with a transport in tests)."""

    def __init__(
        self,
        *,
        server: str,
        transport: KubeTransport,
        auth: BearerTokenAuth | None = None,
        settings: ClientSettings = ClientSettings(),
        metrics: KubeMetrics | None = None,
        clock: Clock | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.server = server.rstrip("/")
        self.settings = settings
        self.metrics = metrics
        self.clock: Clock = clock or SystemClock()
        self._transport = transport
        self._auth = auth
        self._rng = rng or random.Random()
        self._limiter = TokenBucket(qps=settings.qps, burst=settings.burst, clock=self.clock)
        self._base_headers = {"Accept": JSON_CONTENT, "User-Agent": settings.user_agent}
        self._queries: dict[tuple[tuple[str, str], ...], str] = {}
        self.mapper = RESTMapper(fetch=self._discovery_get, clock=self.clock)

    @classmethod
    def from_connection(
        cls,
        connection: ConnectionConfig,
        *,
        settings: ClientSettings = ClientSettings(),
        metrics: KubeMetrics | None = None,
        clock: Clock | None = None,
        transport: KubeTransport | None = None,
    ) -> KubeClient:
        """A client for a loaded kubeconfig / in-cluster config; default transport: aiohttp."""
        chosen: KubeTransport
        if transport is not None:
            chosen = transport
        else:
            chosen = AiohttpTransport(
                ssl_context=connection.ssl_context,
                settings=settings.transport,
                tls_server_name=connection.tls_server_name,
            )
        return cls(
            server=connection.server,
            transport=chosen,
            auth=BearerTokenAuth(connection.token_source),
            settings=settings,
            metrics=metrics,
            clock=clock,
        )

    async def aclose(self) -> None:
        await self._transport.aclose()

    async def __aenter__(self) -> KubeClient:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    # --- the request core ------------------------------------------------------------------------

    def _query(self, params: Mapping[str, str]) -> str:
        """``urlencode(params)``, remembered for the few parameter sets a controller repeats on every
        write (``fieldManager=...``); urlencode was a fiftieth of the reconciler's CPU."""
        key = tuple(params.items())
        try:
            query = self._queries.get(key)
        except TypeError:  # an unhashable value: not one of those
            return urlencode(params)
        if query is None:
            query = urlencode(params)
            if len(self._queries) < 256:
                self._queries[key] = query
        return query

    def _url(self, path: str, query: str) -> str:
        return f"{self.server}{path}?{query}" if query else f"{self.server}{path}"

    def _headers(
        self, content_type: str | None, *, metadata_only: bool = False, accept: str | None = None
    ) -> dict[str, str]:
        headers = dict(self._base_headers)
        if metadata_only:
            headers["Accept"] = METADATA_ONLY
        if accept is not None:
            headers["Accept"] = accept
        if content_type is not None:
            headers["Content-Type"] = content_type
        if self._auth is not None:
            authorization = self._auth.authorization()
            if authorization is not None:
                headers["Authorization"] = authorization
        return headers

    async def _attempt(
        self,
        method: str,
        path: str,
        query: str,
        content: bytes | None,
        content_type: str | None,
        *,
        verb: str,
        resource: str,
        decode: bool = True,
        accept: str | None = None,
    ) -> Any:
        if not self._limiter.unlimited:
            await self._wait_for_token()
        url = self._url(path, query)
        # a write whose answer is dropped asks for metadata only (a list cannot be one: never a GET)
        headers = self._headers(content_type, metadata_only=not decode and method != "GET", accept=accept)
        started = self.clock.now()
        code = "error"
        try:
            buffered = await self._transport.send_buffered(
                BufferedRequest(method, url, headers, content, path, self.settings.request_timeout)
            )
            status, response_headers, body = buffered.status_code, buffered.headers, buffered.body
            code = str(status)
        finally:
            if self.metrics is not None:
                self.metrics.observe_request(
                    verb=verb, resource=resource, code=code, seconds=self.clock.now() - started
                )
        if status >= 300:
            raise api_error_from_response(status_code=status, body=body, headers=response_headers, path=path)
        if not body or not decode:
            return {}
        if self.metrics is not None:
            self.metrics.child(self.metrics.decoded_bytes, resource, "response").inc(len(body))
        try:
            return orjson.loads(body)
        except orjson.JSONDecodeError as exc:
            raise UnexpectedResponse(
                path=path, status_code=status, body=body, problem=f"is not JSON ({exc})"
            ) from exc

    async def _wait_for_token(self) -> None:
        waited = await self._limiter.acquire()
        if waited and self.metrics is not None:
            self.metrics.rate_limiter_wait.inc(waited)

    def _retry_wait(self, retry_state: RetryCallState) -> float:
        # attempt_number counts attempts of the retry loop, which starts after the first failure.
        attempt = retry_state.attempt_number + 1
        exc = retry_state.outcome.exception() if retry_state.outcome is not None else None
        return self._delay_after(exc, attempt=attempt)

    def _delay_after(self, exc: BaseException | None, *, attempt: int) -> float:
        cap = self.settings.retry_backoff_max
        backoff = min(cap, self.settings.retry_backoff_initial * float(2 ** (attempt - 1)))
        delay = backoff / 2 + self._rng.uniform(0, backoff / 2)  # "equal jitter"
        if isinstance(exc, ApiError) and exc.retry_after is not None:
            delay = max(delay, exc.retry_after)
        return delay

    async def request(
        self,
        method: str,
        path: str,
        *,
        verb: str,
        resource: str,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str | None = None,
        decode: bool = True,
        accept: str | None = None,
    ) -> Any:
        """One API call with the retry policy; returns the decoded JSON (``{}`` for an empty body, and
        with ``decode=False``: a caller that drops the answer need not pay for parsing it, and a
        write then asks for the object's metadata only, ``PartialObjectMetadata``, so the server
        need not encode nor send the rest). ``accept``: the ``Accept`` header instead of JSON's."""
        query = self._query(params) if params else ""
        content = orjson.dumps(body) if body is not None else None
        if content is not None and content_type is None:
            content_type = JSON_CONTENT
        attempt = functools.partial(
            self._attempt,
            method,
            path,
            query,
            content,
            content_type,
            verb=verb,
            resource=resource,
            decode=decode,
            accept=accept,
        )
        try:
            return await attempt()
        except KubeError as exc:
            if not _retryable(exc, method=method) or self.settings.max_attempts <= 1:
                raise
            first_failure = exc

        def count_retry(retry_state: RetryCallState | None = None) -> None:
            if self.metrics is not None:
                self.metrics.api_retries.labels(verb, resource).inc()

        count_retry()
        await self.clock.sleep(self._delay_after(first_failure, attempt=1))
        retrying = AsyncRetrying(
            stop=stop_after_attempt(self.settings.max_attempts - 1),
            wait=self._retry_wait,
            retry=retry_if_exception(lambda e: _retryable(e, method=method)),
            sleep=self.clock.sleep,
            before_sleep=count_retry,
            reraise=True,
        )
        return await retrying(attempt)

    async def _discovery_get(self, path: str) -> dict[str, Any]:
        result = await self.request("GET", path, verb="get", resource="discovery")
        if not isinstance(result, dict):
            raise UnexpectedResponse(path=path, status_code=200, body=b"", problem="is not a JSON object")
        return result

    async def open_stream(
        self, path: str, *, params: Mapping[str, str], resource: str, metadata_only: bool = False
    ) -> StreamResponse:
        """Start a streamed GET (watch). No retry here: the watch loop owns reconnect policy.
        ``metadata_only``: events carry ``PartialObjectMetadata`` objects (whole objects from a server
        that cannot)."""
        if not self._limiter.unlimited:
            await self._wait_for_token()
        query = urlencode(params)
        started = self.clock.now()
        code = "error"
        try:
            raw = await self._transport.open_stream(
                self._url(path, query), headers=self._headers(None, metadata_only=metadata_only), path=path
            )
            code = str(raw.status_code)
        finally:
            if self.metrics is not None:
                self.metrics.observe_request(
                    verb="watch", resource=resource, code=code, seconds=self.clock.now() - started
                )
        if raw.status_code >= 300:
            try:
                body = await raw.aread()
            except TransportError:
                body = b""
            finally:
                await raw.aclose()
            raise api_error_from_response(
                status_code=raw.status_code, body=body, headers=raw.headers, path=path
            )
        return StreamResponse(raw, path=path)
