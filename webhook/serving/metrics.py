"""Prometheus metrics for the admission server (served on ``/metrics``).

* ``kueue_bridge_webhook_requests_total{webhook, framework, operation, result}``
* ``kueue_bridge_webhook_request_duration_seconds{webhook, framework, operation, result}``
* ``kueue_bridge_webhook_connections_total{protocol}`` -- TLS connections accepted, by the protocol
  their handshake chose (``h2``, ``http/1.1``): a client that multiplexes over HTTP/2 opens one; a
  rate that grows with the load is a client opening a connection per call beyond its idle pool

``webhook`` is ``mutate``/``validate``; ``framework`` is the framework name (``batch/job``,
``TrainingRun.v1alpha1.ml.example.com``), ``unknown`` for a kind we are not configured for (allowed
unchanged, but visible here: it usually means a webhook rule matches more than the configuration),
or ``none`` when the request could not be read; ``result`` is one of ``allowed``, ``patched``,
``denied``, ``invalid`` (AdmissionReview denial for a malformed object), ``bad_request`` (HTTP 400)
or ``skipped`` (unknown kind).

Each server owns its own ``CollectorRegistry`` (no process globals), so tests and the benchmark can
run several servers in one process.

Recording is plain integer and float arithmetic on a per-series record; a registered collector
(prometheus_client's custom-collector interface) turns the records into the counter and histogram
families at scrape time, with the same names, labels, buckets and ``_created`` samples that
``prometheus_client.Counter``/``Histogram`` expose. Those classes take a lock and go through a value
object per increment (three for a histogram observation): with the two metrics per admission that
was ~7 % of an admission's CPU in the closed-loop bench (``bench/webhook_latency.py --kueue``), more than
the rule that decides it. Invariant: ``observe`` and ``collect`` run on the event loop's thread
(``/metrics`` is an ``async`` endpoint), so a scrape never sees a half-recorded observation.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Iterator
from typing import Final

from prometheus_client import CollectorRegistry
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.registry import Collector
from prometheus_client.samples import Sample
from prometheus_client.utils import floatToGoString

__all__ = ["RESULTS", "WebhookMetrics"]

RESULTS: Final = ("allowed", "patched", "denied", "invalid", "bad_request", "skipped")
_LABELS = ("webhook", "framework", "operation", "result")
# admission latency lives well under the API server's 10 s timeout; resolve the sub-millisecond range
_BUCKETS: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
#: the ``le`` label values, formatted as prometheus_client formats them
_BOUNDS: Final = [floatToGoString(bound) for bound in _BUCKETS]  # type: ignore[no-untyped-call]
_REQUESTS: Final = "kueue_bridge_webhook_requests"
_REQUESTS_HELP: Final = "Admission requests by webhook, framework, operation and result."
_LATENCY: Final = "kueue_bridge_webhook_request_duration_seconds"
_LATENCY_HELP: Final = "Time to answer an admission request, by webhook, framework, operation and result."
_CONNECTIONS: Final = "kueue_bridge_webhook_connections"
_CONNECTIONS_HELP: Final = "TLS connections accepted, by the protocol their handshake chose."


class _Series:
    """One label set: its count, the sum of its durations, and per-bucket (not cumulative) counts."""

    __slots__ = ("buckets", "count", "created", "total")

    def __init__(self) -> None:
        self.count = 0
        self.total = 0.0
        #: observations per bucket (index ``len(_BUCKETS)``: above the last bound, only in +Inf)
        self.buckets = [0] * (len(_BUCKETS) + 1)
        self.created = time.time()


class _AdmissionCollector(Collector):
    def __init__(
        self, series: dict[tuple[str, str, str, str], _Series], connections: dict[str, tuple[int, float]]
    ) -> None:
        self._series = series
        self._connections = connections

    def collect(self) -> Iterator[Metric]:
        requests = CounterMetricFamily(_REQUESTS, _REQUESTS_HELP, labels=_LABELS)
        latency = HistogramMetricFamily(_LATENCY, _LATENCY_HELP, labels=_LABELS)
        for key, series in self._series.items():
            labels = list(key)
            requests.add_metric(labels, series.count, created=series.created)
            cumulative, buckets = 0, []
            for bound, observed in zip(_BOUNDS, series.buckets, strict=False):
                cumulative += observed
                buckets.append((bound, cumulative))
            buckets.append(("+Inf", series.count))
            latency.add_metric(labels, buckets, series.total)
            latency.samples.append(
                Sample(f"{_LATENCY}_created", dict(zip(_LABELS, key, strict=True)), series.created)
            )
        yield requests
        yield latency
        connections = CounterMetricFamily(_CONNECTIONS, _CONNECTIONS_HELP, labels=("protocol",))
        for protocol, (opened, created) in self._connections.items():
            connections.add_metric([protocol], opened, created=created)
        yield connections

    def describe(self) -> Iterator[Metric]:
        yield CounterMetricFamily(_REQUESTS, _REQUESTS_HELP, labels=_LABELS)
        yield HistogramMetricFamily(_LATENCY, _LATENCY_HELP, labels=_LABELS)
        yield CounterMetricFamily(_CONNECTIONS, _CONNECTIONS_HELP, labels=("protocol",))


class WebhookMetrics:
    def __init__(self, *, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        #: label values -> record; the label space is small and fixed by the configuration
        self._series: dict[tuple[str, str, str, str], _Series] = {}
        #: TLS connections accepted, by the protocol their handshake chose: (count, series created)
        self._connections: dict[str, tuple[int, float]] = {}
        self.registry.register(_AdmissionCollector(self._series, self._connections))

    def connection_opened(self, protocol: str) -> None:
        opened, created = self._connections.get(protocol, (0, time.time()))
        self._connections[protocol] = (opened + 1, created)

    def observe(self, *, webhook: str, framework: str, operation: str, result: str, seconds: float) -> None:
        key = (webhook, framework, operation, result)
        series = self._series.get(key)
        if series is None:
            series = self._series[key] = _Series()
        series.count += 1
        series.total += seconds
        # le semantics: an observation equal to a bound is in that bound's bucket
        series.buckets[bisect.bisect_left(_BUCKETS, seconds)] += 1

    def connections(self, protocol: str) -> float:
        """Connections accepted with ``protocol`` so far (tests)."""
        value = self.registry.get_sample_value(f"{_CONNECTIONS}_total", {"protocol": protocol})
        return float(value or 0.0)

    def count(self, *, webhook: str, framework: str, operation: str, result: str) -> float:
        """The current counter value (tests)."""
        value = self.registry.get_sample_value(
            "kueue_bridge_webhook_requests_total",
            {"webhook": webhook, "framework": framework, "operation": operation, "result": result},
        )
        return float(value or 0.0)
