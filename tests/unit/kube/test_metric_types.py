"""``LoopCounter``/``LoopHistogram`` expose exactly what prometheus_client's would."""

from __future__ import annotations

import re
from typing import Any

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from shared.kube.metric_types import LoopCounter, LoopHistogram

BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
CREATED = re.compile(rb"^(\S+_created\{?.*?\}?) [0-9.e+]+$", re.MULTILINE)


def exposition(registry: CollectorRegistry) -> bytes:
    """The text format with the ``_created`` timestamps (creation times) blanked."""
    return CREATED.sub(rb"\1 T", generate_latest(registry))


def test_the_exposition_is_prometheus_clients() -> None:
    theirs, ours = CollectorRegistry(), CollectorRegistry()
    counters: list[Any] = [
        Counter("requests_total", "Requests.", ["verb", "code"], namespace="ns", registry=theirs),
        LoopCounter("requests_total", "Requests.", ["verb", "code"], namespace="ns", registry=ours),
    ]
    histograms: list[Any] = [
        Histogram("latency_seconds", "Latency.", ["verb"], namespace="ns", registry=theirs, buckets=BUCKETS),
        LoopHistogram(
            "latency_seconds", "Latency.", ["verb"], namespace="ns", registry=ours, buckets=BUCKETS
        ),
    ]
    for counter in counters:
        counter.labels("get", "200").inc()
        counter.labels("get", "200").inc(2.5)
        counter.labels("patch", "409")  # exposed with 0 once created
    for histogram in histograms:
        for value in (0.0, 0.005, 0.0051, 0.3, 1.0, 59.9, 60.0, 61.0, 1e9, -1.0):
            histogram.labels("patch").observe(value)
        histogram.labels("get")
    assert exposition(ours) == exposition(theirs)
    assert b"ns_requests_total" in exposition(ours) and b'le="+Inf"' in exposition(ours)
    assert ours.get_sample_value("ns_latency_seconds_count", {"verb": "patch"}) == 10
    assert ours.get_sample_value("ns_latency_seconds_bucket", {"verb": "patch", "le": "0.005"}) == 3


def test_label_values_are_strings_and_counted_once() -> None:
    registry = CollectorRegistry()
    counter = LoopCounter("things_total", "Things.", ["code"], registry=registry)
    counter.labels(200).inc()  # type: ignore[arg-type]
    counter.labels("200").inc()
    counter.labels(200).inc()  # type: ignore[arg-type]
    assert registry.get_sample_value("things_total", {"code": "200"}) == 3


def test_misuse_raises_as_prometheus_client_does() -> None:
    registry = CollectorRegistry()
    counter = LoopCounter("things_total", "Things.", ["a"], registry=registry)
    with pytest.raises(ValueError, match="non-negative"):
        counter.labels("x").inc(-1)
    with pytest.raises(ValueError, match="expected labels"):
        counter.labels("x", "y")
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        LoopCounter("things_total", "Again.", ["a"], registry=registry)
