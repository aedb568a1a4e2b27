"""Labelled counters and histograms for the event loop's hot paths, exposed as prometheus_client's.

A controller updates a few metrics for every API request, watch event and queued key (about a
hundred updates per job). prometheus_client's ``Counter.inc`` and ``Histogram.observe`` are made
for threads: each update takes a mutex per value and runs several checks in Python, which put them
at ~3 % of the reconciler's CPU on a real cluster. Every update here happens on one event loop, and
so does the exposition (``generate_latest`` runs in the same loop, or in another thread reading
plain floats, which the GIL keeps whole): a child is a few floats updated in place.

Invariants:

* **The same exposition.** A ``LoopCounter``/``LoopHistogram`` registered on a ``CollectorRegistry``
  exposes exactly the families, sample names, labels and values a prometheus_client ``Counter`` /
  ``Histogram`` of the same name, documentation, labels, namespace and buckets would (``_total``,
  ``_bucket`` with ``le``, ``_count``, ``_sum``, and ``_created`` unless
  ``PROMETHEUS_DISABLE_CREATED_SERIES`` is set, as prometheus_client reads it at import);
  tests/unit/kube/test_metric_types.py compares the two expositions.
* A child exists from its first ``labels()`` call (it is exposed with zeros until updated), as in
  prometheus_client. Label values are bounded sets (``shared.kube.observability``'s invariant).
* ``inc`` with a negative amount raises ``ValueError``, as ``Counter.inc`` does.
"""

from __future__ import annotations

import os
import time
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from typing import ClassVar, Generic, TypeVar

from prometheus_client import CollectorRegistry
from prometheus_client.metrics_core import CounterMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.samples import Sample
from prometheus_client.utils import INF, floatToGoString

__all__ = ["LoopCounter", "LoopHistogram"]

#: prometheus_client's own switch for the ``_created`` samples (its ``_get_use_created``)
USE_CREATED = os.environ.get("PROMETHEUS_DISABLE_CREATED_SERIES", "False").lower() not in ("true", "1", "t")


def _full_name(name: str, namespace: str) -> str:
    return f"{namespace}_{name}" if namespace else name


ChildT = TypeVar("ChildT")


class _LoopFamily(Generic[ChildT]):
    """A metric family's label sets -> children; a subclass makes a child and collects them.

    ``labels()`` is the hot path: a known label set is one dict lookup (values are looked up as
    given first, converted to strings only when that misses, as prometheus_client accepts any value).
    """

    #: the prometheus_client family this metric is exposed as
    FAMILY: ClassVar[type[CounterMetricFamily] | type[HistogramMetricFamily]]

    def __init__(
        self, *, name: str, documentation: str, labelnames: Sequence[str], registry: CollectorRegistry
    ) -> None:
        self._name = name
        self._documentation = documentation
        self._labelnames = tuple(labelnames)
        self._children: dict[tuple[str, ...], ChildT] = {}
        registry.register(self)

    def _new_child(self) -> ChildT:
        raise NotImplementedError

    def labels(self, *labelvalues: str) -> ChildT:
        child = self._children.get(labelvalues)
        if child is None:  # a new label set, or values that are not strings yet
            key = tuple(str(value) for value in labelvalues)
            child = self._children.get(key)
            if child is None:
                if len(key) != len(self._labelnames):
                    raise ValueError(f"{self._name}: expected labels {self._labelnames}, got {key}")
                child = self._children[key] = self._new_child()
        return child

    def describe(self) -> Iterable[Metric]:
        return [self.FAMILY(self._name, self._documentation, labels=self._labelnames)]

    def collect(self) -> Iterable[Metric]:
        raise NotImplementedError


class CounterChild:
    """One label set's value."""

    __slots__ = ("created", "value")

    def __init__(self) -> None:
        self.value = 0.0
        self.created = time.time()

    def inc(self, amount: float = 1.0) -> None:
        if amount < 0:
            raise ValueError("Counters can only be incremented by non-negative amounts.")
        self.value += amount


class LoopCounter(_LoopFamily[CounterChild]):
    """A labelled counter (``labels(*values).inc()``) exposed as ``prometheus_client.Counter``."""

    FAMILY = CounterMetricFamily

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str],
        *,
        namespace: str = "",
        registry: CollectorRegistry,
    ) -> None:
        name = _full_name(name, namespace)
        super().__init__(
            name=name[: -len("_total")] if name.endswith("_total") else name,
            documentation=documentation,
            labelnames=labelnames,
            registry=registry,
        )

    def _new_child(self) -> CounterChild:
        return CounterChild()

    def collect(self) -> Iterable[Metric]:
        family = CounterMetricFamily(self._name, self._documentation, labels=self._labelnames)
        for labelvalues, child in list(self._children.items()):
            family.add_metric(labelvalues, child.value, created=child.created if USE_CREATED else None)
        return [family]


class HistogramChild:
    """One label set's buckets (not cumulative: ``counts[i]`` is the observations that fell in
    bucket ``i`` alone) and sum."""

    __slots__ = ("_bounds", "counts", "created", "sum")

    def __init__(self, bounds: Sequence[float]) -> None:
        self._bounds = bounds
        self.counts = [0.0] * len(bounds)
        self.sum = 0.0
        self.created = time.time()

    def observe(self, amount: float) -> None:
        self.sum += amount
        # the first bucket whose upper bound is >= amount, as Histogram.observe's "amount <= bound"
        self.counts[bisect_left(self._bounds, amount)] += 1.0


class LoopHistogram(_LoopFamily[HistogramChild]):
    """A labelled histogram (``labels(*values).observe(x)``) exposed as ``prometheus_client.Histogram``."""

    FAMILY = HistogramMetricFamily

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str],
        *,
        buckets: Sequence[float],
        namespace: str = "",
        registry: CollectorRegistry,
    ) -> None:
        bounds = sorted(float(bound) for bound in buckets)
        if not bounds or bounds[-1] != INF:
            bounds.append(INF)
        self._bounds = tuple(bounds)
        self._names = tuple(floatToGoString(bound) for bound in self._bounds)  # type: ignore[no-untyped-call]
        super().__init__(
            name=_full_name(name, namespace),
            documentation=documentation,
            labelnames=labelnames,
            registry=registry,
        )

    def _new_child(self) -> HistogramChild:
        return HistogramChild(self._bounds)

    def collect(self) -> Iterable[Metric]:
        family = HistogramMetricFamily(self._name, self._documentation, labels=self._labelnames)
        for labelvalues, child in list(self._children.items()):
            cumulative = 0.0
            buckets = []
            for name, count in zip(self._names, child.counts, strict=True):
                cumulative += count
                buckets.append((name, cumulative))
            family.add_metric(labelvalues, buckets, child.sum)
            if USE_CREATED:
                labels = dict(zip(self._labelnames, labelvalues, strict=True))
                family.samples.append(Sample(self._name + "_created", labels, child.created, None, None))
        return [family]
