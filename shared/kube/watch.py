"""A list-then-watch loop that never gives up and never silently loses an object.

The raw watch API is easy to use wrongly (reference notes, Part 3): a watch started without a list
misses objects, a 410 "too old resource version" answered by re-watching from the same version loops
forever or skips events, and a dead TCP connection can hang a watch for ever. This module is the one
place that gets it right; the informer consumes it.

Behaviour (modelled on client-go's Reflector and kopf's ``continuous_watch``):

1. **List** every matching object (paginated). The items are reported against what this watch knew
   before: ``ADDED`` for new keys, ``MODIFIED`` for keys whose resourceVersion changed, and a
   synthesised ``DELETED`` (carrying the last known object) for keys that vanished -- on the first
   list all are ``ADDED``; on a relist after 410 this is what recovers deletions that happened while
   we were not watching. Then one ``SYNCED`` marker.

   Objects whose resourceVersion did *not* change get no event on a relist. That is deliberate and
   matches client-go: its Reflector hands the relist to ``DeltaFIFO.Replace``, whose informer turns
   it into updates of the indexer and ``OnUpdate(old, new)`` calls in which an unchanged object's
   old and new resourceVersion are equal, which handlers commonly drop (the usual resourceVersion
   equality check in an ``UpdateFunc``, controller-runtime's ``ResourceVersionChangedPredicate``);
   the periodic *resync* is what re-delivers unchanged objects on purpose. Here the informer's ``resync_period`` plays that role, so a relist reports exactly
   what changed in the gap (verified against the devcluster in tests/component/kube/test_watch.py).
2. **Watch** from the list's resourceVersion with ``allowWatchBookmarks=true``. Every event and every
   ``BOOKMARK`` advances the resume version; bookmarks are not passed on.
3. **Resume** after a disconnect, a server-side timeout or an inactivity timeout from the last seen
   version (no relist, no duplicate events).
4. **Relist** on 410 Gone, whether it comes as the HTTP status of the watch request or as an
   ``ERROR`` event with code 410.
5. **Inactivity timeout**: no bytes for ``inactivity_timeout`` seconds (bookmarks arrive about every
   minute on a healthy watch) means a silently dead stream: close it and resume.
6. **Bad data** (a malformed line, truncated JSON, an HTML page with status 200, an ERROR event that
   is not 410): logged with the resource, the resume version and a snippet; the stream is dropped and
   the watch resumes after a jittered exponential backoff. Nothing raises out of ``events()`` except
   cancellation.

``metadata_only`` lists and watches ``PartialObjectMetadata`` (client-go's metadata informers): the
server sends, and we decode, each object's ``metadata`` alone, for callers that read nothing else.

``drop_managed_fields`` (set by an informer whose transform is ``strip_managed_fields``) cuts each
event's ``metadata.managedFields`` out of the line *before* it is parsed: on a real API server they
are a third to two thirds of a Workload's bytes (one entry per writer, Kueue's server-side applies
included), and parsing them only to drop them was most of a watch's decoding. The cut is checked,
never trusted: the parsed ``metadata`` must serialise back to exactly the bytes around the cut,
otherwise (an unusual layout, escapes the server writes differently, a "}]" inside a string) the
whole line is parsed as before. The object delivered is the same as parsing then stripping.

``transform`` (an informer's) is applied to every object decoded, the items of a list as each page
arrives (``list_all(transform=...)``), before the object is remembered or delivered.

Cancelling the consuming task (or closing the ``events()`` generator) closes the HTTP stream.
``on_restart(reason)`` is told about every restart (the ``watch_restarts_total`` reasons: a
MultiKueue worker's watch uses it to notice a lost connection); it must be quick and not raise.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import orjson

from shared.kube.client import KubeClient, StreamResponse
from shared.kube.clock import Clock
from shared.kube.errors import Gone, KubeError
from shared.kube.gvk import GroupVersionKind
from shared.kube.observability import KubeMetrics

__all__ = ["EventType", "Watch", "WatchEvent", "WatchSettings", "loads_without_managed_fields", "object_key"]

logger = logging.getLogger(__name__)

SNIPPET = 120


class EventType(StrEnum):
    ADDED = "ADDED"
    MODIFIED = "MODIFIED"
    DELETED = "DELETED"
    SYNCED = "SYNCED"  # the list (or relist) has been fully reported


#: wire type -> member, for the decode of every event (``EventType(kind)`` is two Python-level calls)
_EVENT_TYPES: dict[str, EventType] = {member.value: member for member in EventType}


@dataclass(frozen=True, slots=True)
class WatchEvent:
    type: EventType
    object: dict[str, Any]


@dataclass(frozen=True)
class WatchSettings:
    server_timeout_seconds: int = 300  # per watch request; jittered up to 2x like client-go
    inactivity_timeout: float = 70.0
    backoff_initial: float = 0.1
    backoff_max: float = 30.0
    page_size: int = 500


def object_key(obj: dict[str, Any]) -> str:
    """``namespace/name`` (or ``name`` for cluster-scoped objects), client-go's key format."""
    metadata = obj.get("metadata") or {}
    namespace = metadata.get("namespace")
    name = metadata.get("name", "")
    return f"{namespace}/{name}" if namespace else str(name)


def _resource_version(obj: dict[str, Any]) -> str:
    metadata = obj.get("metadata")
    return str(metadata.get("resourceVersion") or "") if isinstance(metadata, dict) else ""


_MANAGED_FIELDS = b',"managedFields":['
_METADATA = b'"metadata":'


def loads_without_managed_fields(line: bytes) -> Any:
    """``orjson.loads(line)`` of a watch event, without its object's ``metadata.managedFields``
    when they can be cut out of the bytes safely (module docstring); else the whole line parsed,
    managedFields included (the caller strips them). Raises ``orjson.JSONDecodeError`` as
    ``orjson.loads(line)`` would."""
    start = line.find(_MANAGED_FIELDS)
    # The array ends at its first "}]" outside a string (its entries hold no arrays). One inside a
    # string (a field key or a manager name) cuts too early; what is left then does not parse, or
    # its metadata does not serialise back to the bytes around the cut: the text after such a cut
    # turns the server's own strings ("operation", "fieldsType", "spec", ...) into bare words.
    end = line.find(b"]", start) if start >= 0 else -1
    while end > 0 and line[end - 1] != 0x7D:  # "}]" (bytes.find of two bytes is ten times slower)
        end = line.find(b"]", end + 1)
    if end <= 0:
        return orjson.loads(line)
    metadata_at = line.rfind(_METADATA, 0, start)
    if metadata_at < 0:
        return orjson.loads(line)
    try:
        raw = orjson.loads(line[:start] + line[end + 1 :])
    except orjson.JSONDecodeError:
        return orjson.loads(line)
    obj = raw.get("object") if isinstance(raw, dict) else None
    metadata = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(metadata, dict):
        return orjson.loads(line)
    # the cut is right only if it was inside this very metadata object, at the top level of it
    encoded = orjson.dumps(metadata)
    before = line[metadata_at + len(_METADATA) : start]
    after = line[end + 1 : end + 1 + len(encoded) - len(before)]
    if encoded != before + after:
        return orjson.loads(line)
    return raw


class _Inactivity:
    """The inactivity timeout of one stream: a single watchdog task per stream instead of a timer
    per chunk (``asyncio.timeout`` around each read was a tenth of a watch's CPU).

    The deadline runs only while the reader waits for the next chunk (``waiting()`` ..
    ``woken()``), as a timeout around that wait would: time the consumer spends between events does
    not count. When it passes, the watchdog cancels the reading task once; ``expired()`` tells that
    cancellation from any other and takes it back (``Task.uncancel``).
    """

    def __init__(self, clock: Clock, seconds: float) -> None:
        self._clock = clock
        self._seconds = seconds
        self._since: float | None = None
        self._fired = False
        self._task: asyncio.Task[None] | None = None
        self._reader: asyncio.Task[Any] | None = None

    def waiting(self) -> None:
        self._since = self._clock.now()
        if self._task is None:
            self._reader = asyncio.current_task()
            self._task = asyncio.ensure_future(self._watch())

    def woken(self) -> None:
        self._since = None

    async def _watch(self) -> None:
        while True:
            since = self._since
            remaining = self._seconds if since is None else since + self._seconds - self._clock.now()
            if remaining <= 0 and since is not None:
                self._fired = True
                if self._reader is not None:
                    self._reader.cancel()
                return
            await self._clock.sleep(max(remaining, 0.0))

    def expired(self, exc: asyncio.CancelledError) -> bool:
        """Whether ``exc`` is the watchdog's cancellation (then it no longer counts as one)."""
        if not self._fired or self._reader is None:
            return False
        self._fired = False
        return self._reader.uncancel() == 0

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None


class _Restart(Exception):
    """Internal: drop the stream; ``relist`` says whether the resume version is still usable."""

    def __init__(self, reason: str, *, relist: bool = False, backoff: bool = True) -> None:
        super().__init__(reason)
        self.reason = reason
        self.relist = relist
        self.backoff = backoff


class Watch:
    """``async for event in Watch(...).events()``: an endless, self-healing list+watch."""

    def __init__(
        self,
        client: KubeClient,
        gvk: GroupVersionKind,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        settings: WatchSettings = WatchSettings(),
        clock: Clock | None = None,
        metrics: KubeMetrics | None = None,
        rng: random.Random | None = None,
        on_restart: Callable[[str], None] | None = None,
        metadata_only: bool = False,
        drop_managed_fields: bool = False,
        transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> None:
        self.client = client
        self._transform = transform
        self.gvk = gvk
        self.metadata_only = metadata_only
        self._loads: Callable[[bytes], Any] = (
            loads_without_managed_fields if drop_managed_fields else orjson.loads
        )
        self._on_restart = on_restart
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.settings = settings
        self.clock: Clock = clock or client.clock
        self.metrics = metrics if metrics is not None else client.metrics
        self._rng = rng or random.Random()
        self.resource_version = ""
        self._known: dict[str, dict[str, Any]] = {}
        self._failures = 0
        self._resource_label = f"{gvk.kind.lower()}"

    def _restarted(self, reason: str) -> None:
        if self.metrics is not None:
            self.metrics.watch_restarts.labels(self._resource_label, reason).inc()
        if self._on_restart is not None:
            self._on_restart(reason)

    async def _backoff(self) -> None:
        self._failures += 1
        ceiling = min(
            self.settings.backoff_max, self.settings.backoff_initial * float(2 ** min(self._failures - 1, 30))
        )
        await self.clock.sleep(ceiling / 2 + self._rng.uniform(0, ceiling / 2))

    async def events(self) -> AsyncGenerator[WatchEvent, None]:
        relist = True
        while True:
            if relist:
                try:
                    listed = await self._list()
                except Exception as exc:  # typed API errors and anything unforeseen alike
                    logger.warning(
                        "list failed, retrying",
                        extra={"resource": str(self.gvk), "error": str(exc)},
                    )
                    self._restarted("list_error")
                    await self._backoff()
                    continue
                relist = False
                self._failures = 0
                for event in listed:
                    yield event
                yield WatchEvent(EventType.SYNCED, {})
            try:
                async for event in self._watch_once():
                    yield event
            except _Restart as restart:
                self._restarted(restart.reason)
                relist = restart.relist
                if restart.backoff:
                    await self._backoff()
            except Exception:  # a bug or an unforeseen failure must not end the watch
                logger.exception(
                    "unexpected watch failure, relisting",
                    extra=self._log_extra(),
                )
                self._restarted("unexpected")
                relist = True
                await self._backoff()
            else:
                self._restarted("server_timeout")

    async def _list(self) -> list[WatchEvent]:
        self._resource_label = (await self.client.resource(self.gvk)).resource_label
        result = await self.client.list_all(
            self.gvk,
            namespace=self.namespace,
            label_selector=self.label_selector,
            field_selector=self.field_selector,
            page_size=self.settings.page_size,
            metadata_only=self.metadata_only,
            transform=self._transform,
        )
        fresh = {object_key(obj): obj for obj in result.items}
        events = [WatchEvent(EventType.DELETED, old) for key, old in self._known.items() if key not in fresh]
        for key, obj in fresh.items():
            old = self._known.get(key)
            if old is None:
                events.append(WatchEvent(EventType.ADDED, obj))
            elif _resource_version(old) != _resource_version(obj):
                events.append(WatchEvent(EventType.MODIFIED, obj))
        self._known = fresh
        self.resource_version = result.resource_version
        return events

    async def _open(self) -> StreamResponse:
        info = await self.client.resource(self.gvk)
        self._resource_label = info.resource_label
        params = {
            "watch": "true",
            "allowWatchBookmarks": "true",
            "resourceVersion": self.resource_version,
            "timeoutSeconds": str(int(self.settings.server_timeout_seconds * (1 + self._rng.random()))),
        }
        if self.label_selector:
            params["labelSelector"] = self.label_selector
        if self.field_selector:
            params["fieldSelector"] = self.field_selector
        path = info.path(namespace=self.namespace if info.namespaced else None)
        try:
            return await self.client.open_stream(
                path, params=params, resource=info.resource_label, metadata_only=self.metadata_only
            )
        except Gone as exc:
            raise _Restart("gone", relist=True, backoff=False) from exc
        except KubeError as exc:
            logger.warning(
                "watch request failed",
                extra=self._log_extra(error=str(exc)),
            )
            raise _Restart("error") from exc

    async def _watch_once(self) -> AsyncIterator[WatchEvent]:
        stream = await self._open()
        watchdog = _Inactivity(self.clock, self.settings.inactivity_timeout)
        try:
            chunks = stream.chunks().__aiter__()
            metrics = self.metrics
            decoded = (
                metrics.child(metrics.decoded_bytes, self._resource_label, "watch")
                if metrics is not None
                else None
            )
            buffer = b""
            received = False
            while True:
                try:
                    watchdog.waiting()
                    chunk = await chunks.__anext__()
                    watchdog.woken()
                except StopAsyncIteration:
                    watchdog.woken()
                    if buffer.strip():
                        raise self._malformed(buffer, problem="stream ended inside a line") from None
                    if not received:
                        raise _Restart("empty_stream") from None  # back off: do not spin on instant closes
                    return
                except asyncio.CancelledError as exc:
                    if not watchdog.expired(exc):
                        raise
                    # A quiet resource is normal (nothing changed, and the server sent no
                    # bookmark); only a failed reconnect is worth a WARNING (see _open).
                    logger.debug(
                        "watch silent past the inactivity timeout, reconnecting",
                        extra=self._log_extra(),
                    )
                    raise _Restart("inactivity", backoff=False) from exc
                except KubeError as exc:
                    watchdog.woken()
                    logger.info(
                        "watch stream broke, resuming",
                        extra=self._log_extra(error=str(exc)),
                    )
                    raise _Restart("disconnect") from exc
                received = True
                if decoded is not None:
                    decoded.inc(len(chunk))
                buffer += chunk
                if b"\n" not in buffer:
                    continue
                # one split per chunk: re-partitioning the rest after every line copied it each time
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if not line.strip():
                        continue
                    event = self._decode(line)
                    if event is not None:
                        yield event
        finally:
            watchdog.stop()
            await stream.aclose()

    def _log_extra(self, **more: object) -> dict[str, object]:
        """What a watch's log lines say: the resource, where the watch stands, and ``more``."""
        return {"resource": str(self.gvk), "resource_version": self.resource_version, **more}

    def _malformed(self, line: bytes, *, problem: str) -> _Restart:
        logger.warning(
            "malformed watch data, restarting the watch",
            extra=self._log_extra(problem=problem, snippet=line[:SNIPPET].decode("utf-8", errors="replace")),
        )
        return _Restart("malformed")

    def _decode(self, line: bytes) -> WatchEvent | None:
        try:
            raw = self._loads(line)
        except orjson.JSONDecodeError as exc:
            raise self._malformed(line, problem=f"not JSON: {exc}") from exc
        if (
            not isinstance(raw, dict)
            or not isinstance(raw.get("object"), dict)
            or not isinstance(raw.get("type"), str)
        ):
            raise self._malformed(line, problem="not a watch event (type/object missing)")
        kind: str = raw["type"]
        obj: dict[str, Any] = raw["object"]
        if self.metrics is not None:
            self.metrics.child(self.metrics.watch_events, self._resource_label, kind).inc()
        if kind == "ERROR":
            code = obj.get("code")
            if code == 410:
                logger.info(
                    "watch resourceVersion expired, relisting",
                    extra=self._log_extra(),
                )
                raise _Restart("gone", relist=True, backoff=False)
            logger.warning(
                "watch ERROR event",
                extra={
                    "resource": str(self.gvk),
                    "code": code,
                    "status_message": obj.get("message"),
                    "reason": obj.get("reason"),
                },
            )
            raise _Restart("error")
        version = _resource_version(obj)
        if kind == "BOOKMARK":
            if version:
                self.resource_version = version
            return None
        if kind not in ("ADDED", "MODIFIED", "DELETED"):
            raise self._malformed(line, problem=f"unknown event type {kind!r}")
        metadata = obj.get("metadata")
        if not isinstance(metadata, dict) or not metadata.get("name"):
            raise self._malformed(line, problem="object without metadata.name")
        obj.setdefault("apiVersion", self.gvk.api_version)
        obj.setdefault("kind", self.gvk.kind)
        if self._transform is not None:
            obj = self._transform(obj)
        key = object_key(obj)
        if kind == "DELETED":
            self._known.pop(key, None)
        else:
            self._known[key] = obj
        if version:
            self.resource_version = version
        self._failures = 0
        return WatchEvent(_EVENT_TYPES[kind], obj)
