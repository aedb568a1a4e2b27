"""The MultiKueue component's own metrics: Workload copies dispatched and admitted, by worker cluster.

Invariant: **registered once per registry, for the life of the process.** The process builds a new
``MultiKueueManager`` every time it wins the Lease -- also when it wins it back after losing it (a
renewal that missed ``renewDeadline`` on a busy node). ``prometheus_client`` refuses to register a
metric name twice in one registry (``Duplicated timeseries in CollectorRegistry``), so a manager
that registered its counters itself could be built only once: after the first lost Lease every
new leadership failed in the constructor, gave the Lease back and campaigned again, and the process
held no manager while looking alive -- no Workload was dispatched, finished or cleaned up again.
``multikueue_metrics(registry)`` therefore registers on first use and hands the same counters to
every later manager of that registry, so the counts also carry over a lost Lease, as the client's
own metrics (``shared.kube.KubeMetrics``, built once per process) do. Without a registry the
counters are unregistered (nothing exposes them), built anew each time.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter

__all__ = ["MultiKueueMetrics", "multikueue_metrics"]


@dataclass(frozen=True)
class MultiKueueMetrics:
    #: ``kueue_bridge_multikueue_workloads_dispatched_total{cluster}``
    dispatched: Counter
    #: ``kueue_bridge_multikueue_workloads_admitted_total{cluster}``
    admitted: Counter

    def count_dispatched(self, cluster: str) -> None:
        self.dispatched.labels(cluster).inc()

    def count_admitted(self, cluster: str) -> None:
        self.admitted.labels(cluster).inc()


_REGISTERED: weakref.WeakKeyDictionary[CollectorRegistry, MultiKueueMetrics] = weakref.WeakKeyDictionary()


def _build(registry: CollectorRegistry | None) -> MultiKueueMetrics:
    return MultiKueueMetrics(
        dispatched=Counter(
            "kueue_bridge_multikueue_workloads_dispatched_total",
            "Workload copies created on worker clusters, by cluster.",
            ["cluster"],
            registry=registry,
        ),
        admitted=Counter(
            "kueue_bridge_multikueue_workloads_admitted_total",
            "Workloads whose MultiKueue check became Ready (admitted on a worker), by cluster.",
            ["cluster"],
            registry=registry,
        ),
    )


def multikueue_metrics(registry: CollectorRegistry | None) -> MultiKueueMetrics:
    """The component's counters on ``registry``: registered the first time, the same ones after."""
    if registry is None:
        return _build(None)
    found = _REGISTERED.get(registry)
    if found is None:
        found = _REGISTERED[registry] = _build(registry)
    return found
