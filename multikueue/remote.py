"""One worker cluster as seen from the manager: its client, its watches, its connection state.

Kueue's ``remoteClient`` (``multikueuecluster.go``), with the same life cycle:

* **Connect** (``refresh``): with a new kubeconfig (or after a lost connection), stop the old
  watches, build a client (a new kubeconfig only: a reconnect reuses the client, which reconciles in
  flight may still hold -- a closed client would quietly open a new connection pool), ask for the
  server's API groups (``GET /api``, Kueue's first request, whose failure is worded as Kueue's,
  ``multikueue.connect_errors``), and *establish* every watch -- Workloads, then each synced job kind --
  all filtered by the ``kueue.x-k8s.io/multikueue-origin=<origin>`` label. Establishing is a list
  of that selection (it proves the kind is served and listable with our RBAC); only when the
  Workload watch is established is the cluster ``connected``, and only then do the watch loops
  start, so no event arrives while the cluster still looks disconnected. A failure counts an
  attempt: the next one waits ``retry_after(n)`` = 5 s * 2^(n-1), capped at 7 steps (5 s .. 320 s).
  A new kubeconfig resets the count. Reconnecting within the wait just answers "not yet".
* **Per-kind health** (kueue-bridge, not Kueue): a job kind whose list fails (CRD not installed
  on that worker, RBAC missing) does not fail the connection as it does in Kueue; the kind is
  recorded in ``kind_errors`` and this worker is unusable for jobs of that kind only.
* **Lost** (``on_lost``): a watch whose stream breaks (not a normal server timeout, nor a 410 that
  a relist repairs) marks the cluster disconnected and asks for a reconnect. ``lost_since`` is
  when the connection was *first* lost -- kept across failed reconnects, set at creation for a
  cluster never connected -- because the worker-lost timeout of an admitted Workload is measured
  from it (Kueue #12999).
* **Events**: every watch event is turned into the key of the *local* Workload it concerns (a
  remote Workload's own key; a job's prebuilt-workload name) and handed to ``on_workload`` --
  except the echo of a write of our own (``multikueue.own_writes``): the object exactly as the
  Workload reconciler left it, which cannot give that reconciler anything new to do; and a copy's
  update that leaves its ``decision_view`` as it was (a ``PodsReady`` change: no decision reads
  it). Each watch remembers a 16-byte digest of that view per copy it has seen, and forgets it
  with the copy.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

import orjson

from multikueue.connect_errors import DISCOVERY_PATH, connect_failure_message
from multikueue.own_writes import OwnWrites
from multikueue.workload_status import decision_view
from shared.constants import MULTIKUEUE_ORIGIN_LABEL, WORKLOAD_GVK
from shared.kube import (
    Clock,
    EventType,
    GroupVersionKind,
    KubeClient,
    KubeError,
    Watch,
    WatchSettings,
    object_key,
)
from shared.kube.times import format_time
from shared.kueue.jobmeta import prebuilt_workload_name
from shared.runtime.eventloop import until_first

__all__ = [
    "RETRY_INCREMENT_SECONDS",
    "RETRY_MAX_STEPS",
    "WORKLOAD_GVK",
    "ClientFactory",
    "RemoteCluster",
    "retry_after",
]

logger = logging.getLogger(__name__)

RETRY_INCREMENT_SECONDS: Final = 5.0
RETRY_MAX_STEPS: Final = 7
#: watch restarts that mean the worker is unreachable; server timeouts, 410s and inactivity resume
LOST_REASONS: Final = frozenset({"list_error", "error", "disconnect", "empty_stream", "unexpected"})

ClientFactory = Callable[[bytes, dict[str, Any]], KubeClient]
"""(raw kubeconfig, parsed kubeconfig) -> a client for the worker (tests inject fakes)."""


def retry_after(failed_attempts: int) -> float:
    """Kueue's ``retryAfter``: 0, then 5 s doubling per failed attempt, at most 2^6 * 5 s."""
    if failed_attempts <= 0:
        return 0.0
    return float(2 ** (min(failed_attempts, RETRY_MAX_STEPS) - 1)) * RETRY_INCREMENT_SECONDS


def _describe(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


@dataclass(frozen=True)
class _Kind:
    gvk: GroupVersionKind
    keys: Callable[[dict[str, Any]], list[tuple[str, str]]]


def _workload_keys(obj: dict[str, Any]) -> list[tuple[str, str]]:
    metadata = obj.get("metadata") or {}
    return [(str(metadata.get("namespace") or ""), str(metadata.get("name") or ""))]


def _job_keys(obj: dict[str, Any]) -> list[tuple[str, str]]:
    name = prebuilt_workload_name(obj)
    if not name:
        metadata = obj.get("metadata") or {}
        logger.info(
            "remote job without a prebuilt workload name ignored",
            extra={"job": f"{metadata.get('namespace')}/{metadata.get('name')}", "kind": obj.get("kind")},
        )
        return []
    return [(str((obj.get("metadata") or {}).get("namespace") or ""), name)]


def _same_view(views: dict[str, bytes], event_type: str, obj: dict[str, Any]) -> bool:
    """Record the copy's decision view; whether this is an update that left it as it was."""
    key = object_key(obj)
    if event_type == EventType.DELETED:
        views.pop(key, None)
        return False
    try:
        encoded = orjson.dumps(decision_view(obj), option=orjson.OPT_SORT_KEYS)
    except (TypeError, orjson.JSONEncodeError):
        views.pop(key, None)
        return False
    digest = hashlib.blake2b(encoded, digest_size=16).digest()
    previous = views.get(key)
    views[key] = digest
    return event_type == EventType.MODIFIED and previous == digest


class RemoteCluster:
    """A worker's client and watches; driven by the cluster reconciler (see module doc)."""

    def __init__(
        self,
        *,
        name: str,
        origin: str,
        job_kinds: tuple[GroupVersionKind, ...],
        client_factory: ClientFactory,
        clock: Clock,
        on_workload: Callable[[str, str], None],
        on_lost: Callable[[str], None],
        watch_settings: WatchSettings | None = None,
        own_writes: OwnWrites | None = None,
    ) -> None:
        self.name = name
        self._own_writes = own_writes
        self.origin = origin
        self._kinds = (_Kind(WORKLOAD_GVK, _workload_keys), *(_Kind(gvk, _job_keys) for gvk in job_kinds))
        self._factory = client_factory
        self._clock = clock
        self._on_workload = on_workload
        self._on_lost = on_lost
        self._watch_settings = watch_settings or WatchSettings()
        self.client: KubeClient | None = None
        self.connected = False
        self.lost_since: float | None = clock.now()
        self.failed_attempts = 0
        self._retry_at = 0.0
        self.next_attempt: datetime | None = None
        self.kind_errors: dict[GroupVersionKind, str] = {}
        self._raw: bytes | None = None
        self._watches: list[asyncio.Task[None]] = []
        self._lock = asyncio.Lock()

    @property
    def selector(self) -> str:
        return f"{MULTIKUEUE_ORIGIN_LABEL}={self.origin}"

    def usable_for(self, gvk: GroupVersionKind | None) -> bool:
        """Connected, and (per-kind health) the job kind's watch is established here."""
        return self.connected and (gvk is None or gvk not in self.kind_errors)

    def next_attempt_text(self) -> str:
        return format_time(self.next_attempt) if self.next_attempt is not None else ""

    # --- connection --------------------------------------------------------------------------------
    async def refresh(self, raw: bytes, document: dict[str, Any]) -> tuple[float | None, str | None]:
        """Kueue's ``updateConfigAndRefreshWatchers``: ``(retry after seconds, error)``, both ``None`` when
        connected with this kubeconfig."""
        async with self._lock:
            changed = raw != self._raw
            if not changed and self.connected:
                return None, None
            await self._stop_watches()
            if changed:
                self._raw = raw
                self._reset_attempts()
            if not self.connected:
                wait = self._retry_at - self._clock.now()
                if wait > 0:
                    return wait, None
            client = self.client
            if changed or client is None:
                # a reconnect with the same kubeconfig reuses the client: reconciles may hold it
                try:
                    client = self._factory(raw, document)
                except ValueError as exc:
                    return self._failed(), _describe(exc)
                await self._replace_client(client)
            try:
                # Kueue's first request (its client's discovery), and Kueue's words when it fails
                await client.request("GET", DISCOVERY_PATH, verb="get", resource="discovery", decode=False)
            except KubeError as exc:
                return self._failed(), connect_failure_message(exc, server=client.server)
            try:
                await client.list(WORKLOAD_GVK, label_selector=self.selector, limit=1)
            except (KubeError, ValueError) as exc:
                return self._failed(), _describe(exc)
            kind_errors: dict[GroupVersionKind, str] = {}
            for kind in self._kinds[1:]:
                try:
                    await client.list(kind.gvk, label_selector=self.selector, limit=1)
                except (KubeError, ValueError) as exc:
                    kind_errors[kind.gvk] = _describe(exc)
            self.kind_errors = kind_errors
            self.connected = True
            self.lost_since = None
            for kind in self._kinds:
                if kind.gvk not in kind_errors:
                    self._watches.append(
                        asyncio.create_task(self._watch(client, kind), name=f"mk-{self.name}-{kind.gvk.kind}")
                    )
            self._reset_attempts()
            return None, None

    def mark_disconnected(self) -> bool:
        """Disconnected from now on (the first loss time is kept); returns whether it was connected."""
        was_connected = self.connected
        self.connected = False
        if self.lost_since is None:
            self.lost_since = self._clock.now()
        return was_connected

    def unreachable(self, error: KubeError) -> None:
        """A request to the worker got no answer, or ``503`` (an API server shutting down): handled
        as a lost watch is -- disconnected, and a reconnect asked for.

        kueue-bridge: Kueue notices a worker going away only through its watches. A stopping API
        server refuses new connections while it drains the open watch streams, for seconds; each
        Workload pass that read from it meanwhile failed, and each failure took a token of the
        controller's shared rate limiter (10 per second), which delayed the dispatch of every other
        Workload to the workers that were still there by tens of seconds."""
        logger.warning("worker cluster unreachable", extra={"cluster": self.name, "error": str(error)})
        if self.mark_disconnected():
            self._on_lost(self.name)

    async def disconnect(self) -> None:
        """Kueue's ``disconnectCluster``: stop the watches and mark disconnected (client kept)."""
        async with self._lock:
            await self._stop_watches()
            self.mark_disconnected()

    async def close(self) -> None:
        """Stop everything and close the client (the MultiKueueCluster is gone)."""
        async with self._lock:
            await self._stop_watches()
            self.mark_disconnected()
            await self._replace_client(None)

    def _reset_attempts(self) -> None:
        self.failed_attempts = 0
        self._retry_at = 0.0
        self.next_attempt = None

    def _failed(self) -> float:
        self.mark_disconnected()
        self.failed_attempts += 1
        delay = retry_after(self.failed_attempts)
        self._retry_at = self._clock.now() + delay
        self.next_attempt = self._clock.wall() + timedelta(seconds=delay)
        return delay

    async def _replace_client(self, client: KubeClient | None) -> None:
        old, self.client = self.client, client
        if old is not None and old is not client:
            with contextlib.suppress(Exception):
                await old.aclose()

    async def _stop_watches(self) -> None:
        tasks, self._watches = self._watches, []
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    # --- watches -----------------------------------------------------------------------------------
    async def _watch(self, client: KubeClient, kind: _Kind) -> None:
        lost = asyncio.Event()

        def restarted(reason: str) -> None:
            if reason in LOST_REASONS:
                lost.set()

        watch = Watch(
            client,
            kind.gvk,
            label_selector=self.selector,
            settings=self._watch_settings,
            clock=self._clock,
            on_restart=restarted,
        )
        await until_first(self._consume(watch, kind), lost.wait())
        logger.warning("watch on worker cluster lost", extra={"cluster": self.name, "kind": kind.gvk.kind})
        if self.mark_disconnected():
            self._on_lost(self.name)

    async def _consume(self, watch: Watch, kind: _Kind) -> None:
        #: copies' decision views as last seen by this watch (Workloads only)
        views: dict[str, bytes] = {}
        async for event in watch.events():
            if event.type is EventType.SYNCED:
                continue
            unchanged = False
            if kind.gvk == WORKLOAD_GVK:
                unchanged = _same_view(views, event.type, event.object)
            own = self._own_writes
            if own is not None and own.is_echo(self.name, str(kind.gvk), event.type, event.object):
                continue
            if unchanged:
                continue
            try:
                for namespace, name in kind.keys(event.object):
                    self._on_workload(namespace, name)
            except Exception:  # a bad object must not end the watch
                logger.exception("remote watch event not handled", extra={"cluster": self.name})
