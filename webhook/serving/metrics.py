"""Prometheus metrics for the admission server (served on ``/metrics``).

* ``kueue_bridge_webhook_requests_total{webhook, framework, operation, result}``
* ``kueue_bridge_webhook_request_duration_seconds{webhook, framework, operation, result}``

``webhook`` is ``mutate``/``validate``; ``framework`` is the framework name (``batch/job``,
``TrainingRun.v1alpha1.ml.example.com``), ``unknown`` for a kind we are not configured for (allowed
unchanged, but visible here: it usually means a webhook rule matches more than the configuration),
or ``none`` when the request could not be read; ``result`` is one of ``allowed``, ``patched``,
``denied``, ``invalid`` (AdmissionReview denial for a malformed object), ``bad_request`` (HTTP 400)
or ``skipped`` (unknown kind).

Each server owns its own ``CollectorRegistry`` (no process globals), so tests and the benchmark can
run several servers in one process.
"""

from __future__ import annotations

from typing import Final

from prometheus_client import CollectorRegistry, Counter, Histogram

__all__ = ["RESULTS", "WebhookMetrics"]

RESULTS: Final = ("allowed", "patched", "denied", "invalid", "bad_request", "skipped")
_LABELS = ("webhook", "framework", "operation", "result")
# admission latency lives well under the API server's 10 s timeout; resolve the sub-millisecond range
_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class WebhookMetrics:
    def __init__(self, *, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry if registry is not None else CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "kueue_bridge_webhook_requests",
            "Admission requests by webhook, framework, operation and result.",
            _LABELS,
            registry=self.registry,
        )
        self.latency = Histogram(
            "kueue_bridge_webhook_request_duration_seconds",
            "Time to answer an admission request, by webhook, framework, operation and result.",
            _LABELS,
            buckets=_BUCKETS,
            registry=self.registry,
        )

        #: label values -> (counter child, histogram child); ``labels()`` validates and locks on every
        #: call (~5 % of an admission), and the label space is small and fixed by the configuration
        self._children: dict[tuple[str, str, str, str], tuple[Counter, Histogram]] = {}

    def observe(self, *, webhook: str, framework: str, operation: str, result: str, seconds: float) -> None:
        key = (webhook, framework, operation, result)
        children = self._children.get(key)
        if children is None:
            children = self._children[key] = (self.requests.labels(*key), self.latency.labels(*key))
        counter, histogram = children
        counter.inc()
        histogram.observe(seconds)

    def count(self, *, webhook: str, framework: str, operation: str, result: str) -> float:
        """The current counter value (tests)."""
        value = self.registry.get_sample_value(
            "kueue_bridge_webhook_requests_total",
            {"webhook": webhook, "framework": framework, "operation": operation, "result": result},
        )
        return value or 0.0
