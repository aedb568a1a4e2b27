"""The webhook's metrics expose exactly what prometheus_client's Counter and Histogram would."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.openmetrics.exposition import generate_latest as generate_openmetrics

from webhook.serving.metrics import _BUCKETS, WebhookMetrics

LABELS = ("webhook", "framework", "operation", "result")
SERIES = [
    ("mutate", "batch/job", "CREATE", "patched"),
    ("validate", "batch/job", "UPDATE", "allowed"),
    ("validate", "none", "", "bad_request"),
]
# every bucket bound itself (le is inclusive), values between, above the last bound, zero
DURATIONS = st.one_of(st.sampled_from([0.0, *_BUCKETS, 11.0]), st.floats(min_value=0, max_value=20))


def reference(
    observations: list[tuple[tuple[str, str, str, str], float]], connections: list[str]
) -> CollectorRegistry:
    """The same observations through prometheus_client's own metric classes."""
    registry = CollectorRegistry(auto_describe=True)
    requests = Counter(
        "kueue_bridge_webhook_requests",
        "Admission requests by webhook, framework, operation and result.",
        LABELS,
        registry=registry,
    )
    latency = Histogram(
        "kueue_bridge_webhook_request_duration_seconds",
        "Time to answer an admission request, by webhook, framework, operation and result.",
        LABELS,
        buckets=_BUCKETS,
        registry=registry,
    )
    opened = Counter(
        "kueue_bridge_webhook_connections",
        "TLS connections accepted, by the protocol their handshake chose.",
        ("protocol",),
        registry=registry,
    )
    for key, seconds in observations:
        requests.labels(*key).inc()
        latency.labels(*key).observe(seconds)
    for protocol in connections:
        opened.labels(protocol).inc()
    return registry


def without_timestamps(text: bytes) -> str:
    return re.sub(r"(_created\{[^}]*\}) \S+", r"\1 T", text.decode())


@given(
    st.lists(st.tuples(st.sampled_from(SERIES), DURATIONS), max_size=30),
    st.lists(st.sampled_from(["h2", "http/1.1"]), max_size=5),
)
def test_exposition_equals_prometheus_clients_counter_and_histogram(
    observations: list[tuple[tuple[str, str, str, str], float]], connections: list[str]
) -> None:
    metrics = WebhookMetrics()
    for (webhook, framework, operation, result), seconds in observations:
        metrics.observe(
            webhook=webhook, framework=framework, operation=operation, result=result, seconds=seconds
        )
    for protocol in connections:
        metrics.connection_opened(protocol)
    expected = reference(observations, connections)
    assert without_timestamps(generate_latest(metrics.registry)) == without_timestamps(
        generate_latest(expected)
    )
    openmetrics = generate_openmetrics(metrics.registry)  # type: ignore[no-untyped-call]
    expected_openmetrics = generate_openmetrics(expected)  # type: ignore[no-untyped-call]
    assert without_timestamps(openmetrics) == without_timestamps(expected_openmetrics)


def test_count_reads_the_counter() -> None:
    metrics = WebhookMetrics()
    assert metrics.count(webhook="mutate", framework="batch/job", operation="CREATE", result="patched") == 0.0
    for _ in range(3):
        metrics.observe(
            webhook="mutate", framework="batch/job", operation="CREATE", result="patched", seconds=0.001
        )
    assert metrics.count(webhook="mutate", framework="batch/job", operation="CREATE", result="patched") == 3.0
