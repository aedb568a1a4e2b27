"""Structured logging and Prometheus metrics for the client runtime.

Logging: every log record made while a reconcile runs carries the object key and a reconcile id
(from ``contextvars``, so concurrent reconciles on one event loop never mix them up). ``JsonFormatter``
renders records as one JSON object per line (stdlib logging, no extra dependency); the plain format
appends the same fields as ``key=value``.

Metrics: ``KubeMetrics`` owns every collector of the runtime and registers them on the
``CollectorRegistry`` it is given (a process uses the default registry, each test its own), so two
instances never collide. Names follow client-go / controller-runtime where those exist
(``workqueue_*``, ``controller_runtime_reconcile_*``, ``rest_client_*``) so existing dashboards work.

The labelled counters and histograms updated per request, watch event, queued key and reconcile
are ``shared.kube.metric_types``' ``LoopCounter``/``LoopHistogram`` (the same exposition as
prometheus_client's, without a mutex per update); the rest are prometheus_client's own.

Invariant: metric label values are bounded sets (verb, resource plural, HTTP code, controller and
queue names) -- never object names or keys.
"""

from __future__ import annotations

import contextvars
import functools
import logging
import os
import random
from datetime import UTC, datetime
from typing import Any

import orjson
from prometheus_client import CollectorRegistry, Counter, Gauge

from shared.kube.metric_types import LoopCounter, LoopHistogram

__all__ = [
    "ContextFilter",
    "JsonFormatter",
    "KubeMetrics",
    "configure_logging",
    "current_object_key",
    "current_reconcile_id",
    "reconcile_context",
]

_object_key: contextvars.ContextVar[str | None] = contextvars.ContextVar("object_key", default=None)
_reconcile_id: contextvars.ContextVar[str | None] = contextvars.ContextVar("reconcile_id", default=None)

_STANDARD_ATTRS = frozenset(
    vars(logging.LogRecord("", 0, "", 0, "", None, None)).keys() | {"message", "asctime", "taskName"}
)


def current_object_key() -> str | None:
    return _object_key.get()


def current_reconcile_id() -> str | None:
    return _reconcile_id.get()


#: reconcile ids only tell log lines of different passes apart: no syscall per id (``uuid4`` and
#: ``os.urandom`` make one), seeded once from the OS so processes do not repeat each other
_IDS = random.Random(int.from_bytes(os.urandom(8), "big"))


class reconcile_context:  # a function before, and still called like one
    """Tag every log record inside the block with ``key`` and a (new) 16-hex-digit reconcile id.

    A class, not ``@contextmanager``: it is entered once per reconcile pass, and the generator
    machinery cost more than the two context variables."""

    __slots__ = ("_key", "_key_token", "_rid", "_rid_token")

    def __init__(self, key: str, *, reconcile_id: str | None = None) -> None:
        self._key = key
        self._rid = reconcile_id or f"{_IDS.getrandbits(64):016x}"

    def __enter__(self) -> str:
        self._key_token = _object_key.set(self._key)
        self._rid_token = _reconcile_id.set(self._rid)
        return self._rid

    def __exit__(self, *exc_info: object) -> None:
        _reconcile_id.reset(self._rid_token)
        _object_key.reset(self._key_token)


class ContextFilter(logging.Filter):
    """Copies the object key and reconcile id from the context onto each record."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not hasattr(record, "object_key"):
            record.object_key = _object_key.get()
        if not hasattr(record, "reconcile_id"):
            record.reconcile_id = _reconcile_id.get()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: time, level, logger, message, context fields and ``extra=``."""

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for attr, value in vars(record).items():
            if attr in _STANDARD_ATTRS or value is None:
                continue
            payload[attr] = value
        if record.exc_info:
            payload["exception"] = self.formatException(record.exc_info)
        return orjson.dumps(payload, default=str).decode()


class _PlainFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        fields = [
            f"{attr}={value}"
            for attr, value in vars(record).items()
            if attr not in _STANDARD_ATTRS and value is not None
        ]
        return f"{text} {' '.join(fields)}" if fields else text


def configure_logging(*, json: bool, level: int | str = logging.INFO, stream: Any = None) -> logging.Handler:
    """Install one handler on the root logger (replacing handlers installed by earlier calls)."""
    handler = logging.StreamHandler(stream)
    handler.addFilter(ContextFilter())
    if json:
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(_PlainFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.set_name("kueue-bridge")
    root = logging.getLogger()
    for existing in list(root.handlers):
        if existing.get_name() == "kueue-bridge":
            root.removeHandler(existing)
    root.addHandler(handler)
    root.setLevel(level)
    return handler


_LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class KubeMetrics:
    """Every Prometheus collector of ``shared.kube``, registered on one registry."""

    def __init__(self, registry: CollectorRegistry, *, namespace: str = "kueue_bridge") -> None:
        self.registry = registry
        # every collector is registered on ``registry`` under ``namespace``; latencies share buckets
        counter = functools.partial(Counter, namespace=namespace, registry=registry)
        loop_counter = functools.partial(LoopCounter, namespace=namespace, registry=registry)
        gauge = functools.partial(Gauge, namespace=namespace, registry=registry)
        latency = functools.partial(
            LoopHistogram, namespace=namespace, registry=registry, buckets=_LATENCY_BUCKETS
        )
        self.api_requests = loop_counter(
            "rest_client_requests_total",
            "API requests by verb, resource and HTTP code ('error' for transport failures).",
            ["verb", "resource", "code"],
        )
        self.api_latency = latency(
            "rest_client_request_duration_seconds",
            "API request latency by verb and resource (including client-side rate limiting).",
            ["verb", "resource"],
        )
        self.api_retries = counter(
            "rest_client_retries_total", "Retried API requests by verb and resource.", ["verb", "resource"]
        )
        self.rate_limiter_wait = counter(
            "rest_client_rate_limiter_wait_seconds_total",
            "Seconds spent waiting for the client-side QPS limiter.",
        )
        self.watch_restarts = counter(
            "watch_restarts_total",
            "Watch restarts by resource and reason (disconnect, gone, inactivity, malformed, error).",
            ["resource", "reason"],
        )
        self.decoded_bytes = loop_counter(
            "decoded_bytes_total",
            "Bytes of JSON parsed, by resource and source (response: request answers; watch: watch streams).",
            ["resource", "source"],
        )
        self.watch_events = loop_counter(
            "watch_events_total", "Watch events received by resource and type.", ["resource", "type"]
        )
        self.queue_depth = gauge("workqueue_depth", "Current depth of the work queue.", ["name"])
        self.queue_adds = loop_counter("workqueue_adds_total", "Keys added to the work queue.", ["name"])
        self.queue_latency = latency(
            "workqueue_queue_duration_seconds",
            "Seconds a key waits in the queue before a worker takes it.",
            ["name"],
        )
        self.queue_work_duration = latency(
            "workqueue_work_duration_seconds", "Seconds a worker spends on one key.", ["name"]
        )
        self.queue_retries = counter(
            "workqueue_retries_total", "Rate-limited re-adds (retries) of keys.", ["name"]
        )
        self.reconcile_total = loop_counter(
            "controller_runtime_reconcile_total",
            "Reconciles by controller and result (success, requeue, requeue_after, error).",
            ["controller", "result"],
        )
        self.reconcile_errors = counter(
            "controller_runtime_reconcile_errors_total",
            "Reconciles that raised, by controller.",
            ["controller"],
        )
        self.reconcile_conflicts = counter(
            "controller_runtime_reconcile_conflicts_total",
            "Reconciles that hit a write conflict (stale read) and were requeued with backoff, by controller.",
            ["controller"],
        )
        self.reconcile_time = latency(
            "controller_runtime_reconcile_time_seconds", "Reconcile duration by controller.", ["controller"]
        )
        self.events_emitted = loop_counter(
            "events_emitted_total", "Kubernetes Events written, by action (create, series).", ["action"]
        )
        self.events_dropped = counter(
            "events_dropped_total",
            "Kubernetes Events dropped, by reason (queue_full, api_error, shutdown).",
            ["reason"],
        )
        self.leader = gauge(
            "leader_election_master_status", "1 while this process holds the named lease.", ["name"]
        )
        self._request_children: dict[tuple[str, str, str], tuple[Any, Any]] = {}
        self._children: dict[tuple[Any, tuple[str, ...]], Any] = {}

    def child(self, collector: Any, *labelvalues: str) -> Any:
        """``collector.labels(*labelvalues)``, cached: for per-key and per-event hot paths (label sets
        are bounded, see the module invariant; ``labels()`` costs about as much as the update)."""
        key = (collector, labelvalues)
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = collector.labels(*labelvalues)
        return child

    def observe_request(self, *, verb: str, resource: str, code: str, seconds: float) -> None:
        """Hot path of every API call: label children are cached (``labels()`` is slow), one lookup."""
        key = (verb, resource, code)
        children = self._request_children.get(key)
        if children is None:
            children = self._request_children[key] = (
                self.api_requests.labels(verb, resource, code),
                self.api_latency.labels(verb, resource),
            )
        children[0].inc()
        children[1].observe(seconds)
