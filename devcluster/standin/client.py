"""A minimal Kubernetes REST client for the devcluster add-ons (LOCAL RUNS ONLY).

The Kueue stand-in and the job runner talk to the devcluster through HTTP requests like any other
client (bearer token; over HTTPS with the cluster CA, or in-process through the ``transport`` seam,
which :mod:`devcluster.server` points at the API server's ASGI app), so they exercise the same request
handling -- authentication, admission, validation, conflicts -- as the components under test.
Bodies are encoded and decoded with orjson: a stand-in pass lists every Workload, and stdlib
``json`` was the largest part of its cost. They deliberately do not use kueue-bridge's production client runtime: the add-ons must keep
working while that runtime is being changed, and a bug there must not be hidden by the stand-in.

Only what the add-ons need: list (optionally across namespaces), replace the ``/status``
subresource with optimistic concurrency (409 means "someone else wrote first; retry next pass"),
a merge-patch of ``/status``, a forced server-side apply of ``/status`` under a named field manager
(Kueue's ``kueue-admission`` writes), and create/merge-patch of whole objects (the Events they record).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Final, NamedTuple

import httpx
import orjson

__all__ = ["ApiClient", "ApiError", "Objects", "Resource", "run_passes"]

_JSON: Final = "application/json"
_JSON_BODY: Final = {"Content-Type": _JSON}
_MERGE_PATCH: Final = {"Content-Type": "application/merge-patch+json"}
_APPLY_PATCH: Final = {"Content-Type": "application/apply-patch+yaml"}  # JSON is YAML


Objects = list[dict[str, Any]]
"""Decoded API objects (a module-level name: ``list`` is a method of :class:`ApiClient`)."""


class Resource(NamedTuple):
    """A group/version/plural triple; ``group`` is "" for the core API."""

    group: str
    version: str
    plural: str

    def path(self, *, namespace: str | None = None, name: str | None = None, subresource: str = "") -> str:
        base = f"/api/{self.version}" if not self.group else f"/apis/{self.group}/{self.version}"
        if namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
            if subresource:
                base += f"/{subresource}"
        return base


class ApiError(Exception):
    """A non-2xx answer other than the ones callers handle (404, 409)."""

    def __init__(self, status_code: int, body: str) -> None:
        super().__init__(f"{status_code}: {body[:300]}")
        self.status_code = status_code


class _TakingTurns(httpx.AsyncBaseTransport):
    """A transport that lets the event loop run other tasks after each request.

    An in-process transport (httpx's ASGI one) runs the API server's handler inside the caller's
    task, and a handler that never waits never suspends it: a stand-in pass of hundreds of writes
    would hold the event loop, and with it every other client of that API server, for its whole
    length (measured: MultiKueue's requests to the manager waited seconds in a 500-job burst).
    """

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self._inner = inner

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        response = await self._inner.handle_async_request(request)
        await asyncio.sleep(0)
        return response

    async def aclose(self) -> None:
        await self._inner.aclose()


class ApiClient:
    """Async JSON client bound to one API server."""

    def __init__(
        self,
        *,
        url: str,
        token: str,
        ca_file: str | None,
        transport: httpx.AsyncBaseTransport | None = None,
        watch_transport: httpx.AsyncBaseTransport | None = None,
        timeout_seconds: float = 10.0,
    ) -> None:
        verify: ssl.SSLContext | bool = ssl.create_default_context(cafile=ca_file) if ca_file else True
        headers = {"Authorization": f"Bearer {token}", "Accept": _JSON}
        self._http = httpx.AsyncClient(
            base_url=url,
            headers=headers,
            verify=verify,
            transport=_TakingTurns(transport) if transport is not None else None,
            timeout=timeout_seconds,
        )
        # watches: over the network unless told otherwise (an ASGI transport cannot stream), and
        # without a read timeout (a quiet watch is not a dead one; the server ends it in time)
        self._watch_http = httpx.AsyncClient(
            base_url=url,
            headers=headers,
            verify=verify,
            transport=watch_transport,
            timeout=httpx.Timeout(timeout_seconds, read=None),
        )
        self._write_observers: list[Callable[[Resource, dict[str, Any]], None]] = []

    def add_write_observer(self, observer: Callable[[Resource, dict[str, Any]], None]) -> None:
        """Call ``observer(resource, stored)`` with every object this client wrote successfully."""
        self._write_observers.append(observer)

    def _written(self, resource: Resource, stored: dict[str, Any]) -> dict[str, Any]:
        for observer in self._write_observers:
            observer(resource, stored)
        return stored

    def _written_unless_gone_or_stale(
        self, resource: Resource, response: httpx.Response
    ) -> dict[str, Any] | None:
        """A write's stored object; None when the object is gone (404) or was changed meanwhile (409)."""
        if response.status_code in (404, 409):
            return None
        _raise_for(response)
        return self._written(resource, _decode(response))

    async def aclose(self) -> None:
        await self._http.aclose()
        await self._watch_http.aclose()

    async def list(self, resource: Resource, *, namespace: str | None = None) -> list[dict[str, Any]]:
        response = await self._http.get(resource.path(namespace=namespace))
        if response.status_code == 404:
            return []  # the CRD is not installed (yet)
        _raise_for(response)
        items = _decode(response).get("items") or []
        return [item for item in items if isinstance(item, dict)]

    async def list_with_version(self, resource: Resource) -> tuple[Objects, str]:
        """Every object and the list's resourceVersion (to watch from); a missing CRD is an error."""
        response = await self._http.get(resource.path())
        _raise_for(response)
        body = _decode(response)
        items = [item for item in body.get("items") or [] if isinstance(item, dict)]
        return items, str((body.get("metadata") or {}).get("resourceVersion") or "")

    async def watch(
        self,
        resource: Resource,
        *,
        resource_version: str,
        timeout_seconds: int,
        opened: Callable[[], None] = lambda: None,
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """The watch events (type, object) from ``resource_version``, bookmarks included, until the
        server ends the stream; ``opened()`` is called once the answer's headers are in."""
        params = {
            "watch": "true",
            "resourceVersion": resource_version,
            "allowWatchBookmarks": "true",
            "timeoutSeconds": str(timeout_seconds),
        }
        async with self._watch_http.stream("GET", resource.path(), params=params) as response:
            opened()
            if response.status_code // 100 != 2:
                await response.aread()
                _raise_for(response)
            pending = b""
            async for chunk in response.aiter_bytes():
                # one JSON document per line; split the bytes here (httpx's line decoder is text,
                # in Python, and was most of the cost of following a busy watch)
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    if line.strip():
                        yield _watch_event(line)
            if pending.strip():
                yield _watch_event(pending)

    async def get(self, resource: Resource, *, namespace: str | None, name: str) -> dict[str, Any] | None:
        response = await self._http.get(resource.path(namespace=namespace, name=name))
        if response.status_code == 404:
            return None
        _raise_for(response)
        body: dict[str, Any] = _decode(response)
        return body

    async def replace(self, resource: Resource, obj: dict[str, Any]) -> dict[str, Any] | None:
        """PUT the object (spec and metadata) with its resourceVersion; None when it changed or vanished."""
        metadata = obj.get("metadata") or {}
        response = await self._http.put(
            resource.path(namespace=metadata.get("namespace"), name=metadata.get("name")),
            content=orjson.dumps(obj),
            headers=_JSON_BODY,
        )
        return self._written_unless_gone_or_stale(resource, response)

    async def replace_status(self, resource: Resource, obj: dict[str, Any]) -> dict[str, Any] | None:
        """PUT ``/status`` with the object's resourceVersion; None when it changed or vanished meanwhile."""
        metadata = obj.get("metadata") or {}
        path = resource.path(
            namespace=metadata.get("namespace"), name=metadata.get("name"), subresource="status"
        )
        response = await self._http.put(path, content=orjson.dumps(obj), headers=_JSON_BODY)
        return self._written_unless_gone_or_stale(resource, response)

    async def patch_status(
        self, resource: Resource, *, namespace: str | None, name: str, patch: dict[str, Any]
    ) -> dict[str, Any] | None:
        """JSON merge-patch of ``/status``; None when the object is gone or the patch conflicted."""
        path = resource.path(namespace=namespace, name=name, subresource="status")
        response = await self._http.patch(path, content=orjson.dumps(patch), headers=_MERGE_PATCH)
        return self._written_unless_gone_or_stale(resource, response)

    async def apply_status(
        self, resource: Resource, body: dict[str, Any], *, field_manager: str
    ) -> dict[str, Any] | None:
        """Forced server-side apply of ``/status`` as ``field_manager``; None when the object is gone
        or the body's resourceVersion is stale (409)."""
        metadata = body.get("metadata") or {}
        path = resource.path(
            namespace=metadata.get("namespace"), name=metadata.get("name"), subresource="status"
        )
        response = await self._http.patch(
            path,
            content=orjson.dumps(body),
            headers=_APPLY_PATCH,
            params={"fieldManager": field_manager, "force": "true"},
        )
        return self._written_unless_gone_or_stale(resource, response)

    async def create(
        self, resource: Resource, *, namespace: str | None, body: dict[str, Any]
    ) -> dict[str, Any]:
        """POST a new object; raises ApiError on any refusal (409 AlreadyExists included)."""
        response = await self._http.post(
            resource.path(namespace=namespace), content=orjson.dumps(body), headers=_JSON_BODY
        )
        _raise_for(response)
        return self._written(resource, _decode(response))

    async def merge_patch(
        self, resource: Resource, *, namespace: str | None, name: str, patch: dict[str, Any]
    ) -> dict[str, Any] | None:
        """JSON merge-patch of the object itself; None when it does not exist (any more)."""
        response = await self._http.patch(
            resource.path(namespace=namespace, name=name),
            content=orjson.dumps(patch),
            headers=_MERGE_PATCH,
        )
        if response.status_code == 404:
            return None
        _raise_for(response)
        return self._written(resource, _decode(response))


def _watch_event(line: bytes) -> tuple[str, dict[str, Any]]:
    event = orjson.loads(line)
    obj = event.get("object") if isinstance(event, dict) else None
    if not isinstance(obj, dict):
        raise ValueError(f"not a watch event: {line[:200]!r}")
    return str(event.get("type") or ""), obj


def _decode(response: httpx.Response) -> dict[str, Any]:
    """The JSON body (orjson: a pass lists every Workload, and stdlib json was its largest cost)."""
    body = orjson.loads(response.content)
    if not isinstance(body, dict):
        raise ApiError(response.status_code, response.text)
    return body


def _raise_for(response: httpx.Response) -> None:
    if response.status_code // 100 != 2:
        raise ApiError(response.status_code, response.text)


async def run_passes(
    one_pass: Callable[[], Awaitable[None]],
    *,
    interval: float,
    what: str,
    log: logging.Logger,
    wake: asyncio.Event | None = None,
    settle: float = 0.05,
    paced: bool = True,
) -> None:
    """Run ``one_pass`` until cancelled: every ``interval`` seconds, and soon after ``wake`` is set
    (a watched change) when that comes sooner: ``settle`` seconds, or as long as the last pass took
    if that was longer. Settling lets a burst of changes be handled by one pass; the second bound
    keeps a controller whose passes grow long (hundreds of live objects in a burst) from running
    them back to back, at most half of its process's time. ``paced=False`` drops the second bound,
    for passes whose time is spent waiting on the API server rather than on the process's CPU (a
    benchmark's job finisher: a long pass of status writes must not be followed by as long a
    pause). A failed pass is logged, not fatal."""
    loop = asyncio.get_running_loop()
    while True:
        started = loop.time()
        if wake is not None:
            wake.clear()  # a change made during the pass wakes the next one
        try:
            await one_pass()
        except (httpx.HTTPError, ApiError) as exc:
            log.warning("%s pass failed: %s", what, exc)
        except Exception:
            log.exception("%s pass crashed", what)
        if wake is None:
            await asyncio.sleep(interval)
            continue
        await asyncio.sleep(max(settle, loop.time() - started) if paced else settle)
        remaining = started + interval - loop.time()
        if remaining > 0 and not wake.is_set():
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await wake.wait()
