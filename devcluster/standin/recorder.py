"""Events recorded by the devcluster add-ons the way Kueue's recorder writes them (LOCAL RUNS ONLY).

Kueue records through controller-runtime's ``GetEventRecorder``: client-go ``tools/events``, the
``events.k8s.io/v1`` API. :class:`EventRecorder` writes the same objects over the add-ons' HTTP
client, with the same aggregation (``eventBroadcasterImpl.recordToSink``):

* Events are *isomorphic* when type, action, reason, reporting controller and instance, the
  ``regarding`` reference (resourceVersion included) and ``related`` are equal; the note is not
  part of the key. The first is created (name ``<regarding name>.<hex nanoseconds>``, in the
  regarding object's namespace); the second turns it into a series (``series.count`` 2) at once;
  later ones only count in memory, and a series is written with its final count once it has been
  quiet for 6 minutes (client-go's ``finishSeries``; here checked whenever an event is recorded).
* ``reportingInstance`` is ``<reportingController>-<hostname>``, as client-go's ``NewRecorder``.
* Recording never fails the caller: an API error is logged and the event is dropped.
* A ``deferred`` recorder only queues the writes; :meth:`EventRecorder.flush` makes them, in order.
  client-go's broadcaster writes events from its own goroutine, after the status write that caused
  them; the Kueue stand-in flushes at the end of each pass, so a pass admitting hundreds of
  Workloads writes each admission without first waiting for two Event writes per Workload.
* Quiet series are looked for at most once a minute (client-go: every 6 minutes), not on every
  event: with thousands of cached series the scan per event was quadratic.
"""

from __future__ import annotations

import logging
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

import httpx

from devcluster.standin.client import ApiClient, ApiError, Resource
from shared.kube import object_reference
from shared.kube.times import format_micro_time
from shared.kueue.workload_state import truncate_event_message

__all__ = ["EVENTS", "EventNames", "EventRecorder"]

EVENTS: Final = Resource("events.k8s.io", "v1", "events")
_FINISH_AFTER: Final = timedelta(minutes=6)
_SCAN_EVERY: Final = timedelta(minutes=1)

_log = logging.getLogger(__name__)


class EventNames:
    """``<regarding name>.<hex nanoseconds>``, strictly increasing: recorders that share one never
    produce the same name, even within one clock tick (a second create would be AlreadyExists)."""

    def __init__(self) -> None:
        self._last = 0

    def next(self, base: str, now: datetime) -> str:
        self._last = max(int(now.timestamp() * 1e9), self._last + 1)
        return f"{base}.{self._last:x}"


@dataclass(slots=True)
class _Series:
    body: dict[str, Any]
    count: int
    last_observed: datetime
    written: int  # the count the API server has


@dataclass(frozen=True, slots=True)
class _Pending:
    """One recorded event, with the time it was recorded at."""

    now: datetime
    regarding: Mapping[str, Any]
    type: str
    reason: str
    action: str
    note: str
    related: Mapping[str, Any] | None


class EventRecorder:
    """One reporting controller's recorder; ``await recorder.event(obj, ...)``."""

    def __init__(
        self,
        *,
        client: ApiClient,
        reporting_controller: str,
        clock: Callable[[], datetime],
        hostname: str | None = None,
        names: EventNames | None = None,
        deferred: bool = False,
    ) -> None:
        self._client = client
        self._deferred = deferred
        self._pending: list[_Pending] = []
        self._last_scan: datetime | None = None
        self._names = names or EventNames()
        self.reporting_controller = reporting_controller
        self.reporting_instance = f"{reporting_controller}-{hostname or socket.gethostname()}"
        self._clock = clock
        self._cache: dict[tuple[Any, ...], _Series] = {}

    async def event(
        self,
        regarding: Mapping[str, Any],
        *,
        type: str,
        reason: str,
        action: str,
        note: str,
        related: Mapping[str, Any] | None = None,
    ) -> None:
        now = self._clock()
        pending = _Pending(now, regarding, type, reason, action, note, related)
        if self._deferred:
            self._pending.append(pending)
            return
        await self._record(pending)

    async def flush(self) -> None:
        """Write the events a deferred recorder queued, in the order they were recorded."""
        while self._pending:
            pending, self._pending = self._pending, []
            for one in pending:
                await self._record(one)

    async def _record(self, pending: _Pending) -> None:
        now, regarding, related = pending.now, pending.regarding, pending.related
        type, reason, action, note = pending.type, pending.reason, pending.action, pending.note
        await self._finish_series(now)
        reference = object_reference(regarding)
        related_ref = object_reference(related) if related is not None else None
        key = (
            type,
            action,
            reason,
            tuple(sorted(reference.items())),
            tuple(sorted(related_ref.items())) if related_ref else (),
        )
        cached = self._cache.get(key)
        try:
            if cached is not None:
                cached.count += 1
                cached.last_observed = now
                if cached.written == 1:  # the second occurrence makes it a series at once
                    await self._write_series(cached)
                return
            body = self._body(
                reference, related_ref, type=type, reason=reason, action=action, note=note, now=now
            )
            self._cache[key] = _Series(body=body, count=1, last_observed=now, written=1)
            await self._client.create(EVENTS, namespace=body["metadata"]["namespace"], body=body)
        except (httpx.HTTPError, ApiError) as exc:
            _log.warning("could not record %s event on %s: %s", reason, reference.get("name"), exc)

    async def _write_series(self, series: _Series) -> None:
        patch = {
            "series": {"count": series.count, "lastObservedTime": format_micro_time(series.last_observed)}
        }
        metadata = series.body["metadata"]
        stored = await self._client.merge_patch(
            EVENTS, namespace=metadata["namespace"], name=metadata["name"], patch=patch
        )
        if stored is None:  # deleted meanwhile: create it again, series included
            await self._client.create(EVENTS, namespace=metadata["namespace"], body={**series.body, **patch})
        series.written = series.count

    async def _finish_series(self, now: datetime) -> None:
        if self._last_scan is not None and now - self._last_scan < _SCAN_EVERY:
            return
        self._last_scan = now
        for key, series in list(self._cache.items()):
            # two calls may run at once (a caller recording concurrently): another call may have
            # finished this series while this one waited on the API server
            if now - series.last_observed < _FINISH_AFTER or self._cache.get(key) is not series:
                continue
            del self._cache[key]
            if series.count > series.written:
                try:
                    await self._write_series(series)
                except (httpx.HTTPError, ApiError) as exc:
                    _log.warning("could not finish an event series: %s", exc)

    def _body(
        self,
        reference: dict[str, str],
        related: dict[str, str] | None,
        *,
        type: str,
        reason: str,
        action: str,
        note: str,
        now: datetime,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {
                "name": self._names.next(reference.get("name") or "object", now),
                "namespace": reference.get("namespace") or "default",
            },
            "eventTime": format_micro_time(now),
            "reportingController": self.reporting_controller,
            "reportingInstance": self.reporting_instance,
            "action": action,
            "reason": reason,
            "regarding": reference,
            "note": truncate_event_message(note),  # as Kueue records its events
            "type": type,
        }
        if related is not None:
            body["related"] = related
        return body
