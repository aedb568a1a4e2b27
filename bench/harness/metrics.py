"""Prometheus scrapes of a component's ``/metrics``, summed by name and label, and their deltas."""

from __future__ import annotations

import ssl

import httpx
from prometheus_client.parser import text_string_to_metric_families

__all__ = ["Samples", "buckets", "by_label", "delta", "histogram_quantile", "scrape", "total"]

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


async def scrape(url: str, *, verify: ssl.SSLContext | bool = True) -> Samples:
    async with httpx.AsyncClient(verify=verify, timeout=10.0) as http:
        text = (await http.get(url)).text
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return samples


def total(samples: Samples, name: str, **labels: str) -> float:
    """Sum of ``name`` over every label set containing ``labels``."""
    return sum(
        value
        for (sample, sample_labels), value in samples.items()
        if sample == name and set(labels.items()) <= set(sample_labels)
    )


def by_label(samples: Samples, name: str, label: str) -> dict[str, float]:
    sums: dict[str, float] = {}
    for (sample, labels), value in samples.items():
        if sample == name:
            key = dict(labels).get(label, "")
            sums[key] = sums.get(key, 0.0) + value
    return sums


def delta(after: dict[str, float], before: dict[str, float]) -> dict[str, float]:
    return {key: value - before.get(key, 0.0) for key, value in after.items() if value - before.get(key, 0.0)}


def buckets(samples: Samples, name: str, **labels: str) -> dict[float, float]:
    """Upper bound (``le``) -> cumulative count of histogram ``name`` (its ``_bucket`` samples),
    summed over every label set containing ``labels``."""
    found: dict[float, float] = {}
    for (sample, sample_labels), value in samples.items():
        label = dict(sample_labels)
        if sample == f"{name}_bucket" and set(labels.items()) <= set(sample_labels) and "le" in label:
            bound = float(label["le"])
            found[bound] = found.get(bound, 0.0) + value
    return found


def histogram_quantile(after: dict[float, float], before: dict[float, float], q: float) -> float:
    """Prometheus's ``histogram_quantile`` over the calls between two readings of cumulative buckets
    (linear within a bucket; the highest finite bound when the quantile falls in ``+Inf``); NaN
    when there were no calls."""
    bounds = sorted(after)
    counts = [after[bound] - before.get(bound, 0.0) for bound in bounds]
    if not counts or counts[-1] <= 0:
        return float("nan")
    rank = q * counts[-1]
    lower, below = 0.0, 0.0
    for bound, count in zip(bounds, counts, strict=True):
        if count >= rank:
            if bound == float("inf"):
                return lower
            inside = count - below
            return lower + (bound - lower) * ((rank - below) / inside if inside else 0.0)
        lower, below = bound, count
    return lower
