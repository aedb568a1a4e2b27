"""Prometheus scrapes of a component's ``/metrics``, summed by name and label, and their deltas."""

from __future__ import annotations

import ssl

import httpx
from prometheus_client.parser import text_string_to_metric_families

__all__ = ["Samples", "by_label", "delta", "scrape", "total"]

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
