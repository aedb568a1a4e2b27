"""The MultiKueue component's own metrics, by worker cluster: Workload copies dispatched and admitted,
how long a dispatch took, and whether the worker is connected.

* ``kueue_bridge_multikueue_workloads_dispatched_total{cluster}`` and ``..._admitted_total{cluster}``;
* ``kueue_bridge_multikueue_dispatch_duration_seconds{cluster}``: from the manager Workload's quota
  reservation (its ``QuotaReserved`` condition's time) to the pass that records the worker that
  admitted its copy -- what a user waits for between Kueue's quota and a running job;
* ``kueue_bridge_multikueue_cluster_active{cluster}``: 1 while the MultiKueueCluster's ``Active``
  condition written by this process is ``True``, else 0 (a deleted cluster's series is removed).

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

import contextlib
import weakref
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

__all__ = ["MultiKueueMetrics", "multikueue_metrics"]


@dataclass(frozen=True)
class MultiKueueMetrics:
    """The component's metrics, labelled by worker cluster; one instance per registry (see the module doc)."""

    #: ``kueue_bridge_multikueue_workloads_dispatched_total{cluster}``
    dispatched: Counter
    #: ``kueue_bridge_multikueue_workloads_admitted_total{cluster}``
    admitted: Counter
    #: ``kueue_bridge_multikueue_dispatch_duration_seconds{cluster}``
    dispatch_duration: Histogram
    #: ``kueue_bridge_multikueue_cluster_active{cluster}``
    cluster_active: Gauge

    def count_dispatched(self, cluster: str) -> None:
        self.dispatched.labels(cluster).inc()

    def count_admitted(self, cluster: str, *, waited: float | None = None) -> None:
        """One admission on ``cluster``; ``waited``: seconds since the quota reservation, when known."""
        self.admitted.labels(cluster).inc()
        if waited is not None and waited >= 0:
            self.dispatch_duration.labels(cluster).observe(waited)

    def set_cluster_active(self, cluster: str, active: bool | None) -> None:
        """``None``: the cluster is gone, its series too."""
        if active is None:
            with contextlib.suppress(KeyError):
                self.cluster_active.remove(cluster)
            return
        self.cluster_active.labels(cluster).set(1 if active else 0)


# bench/multikueue_dispatch.py: p50 0.1-0.2 s at 25 jobs/s, seconds in a burst; a worker's queue adds minutes
_DISPATCH_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0)

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
        dispatch_duration=Histogram(
            "kueue_bridge_multikueue_dispatch_duration_seconds",
            "Seconds from the manager Workload's quota reservation to its admission on a worker, by cluster.",
            ["cluster"],
            buckets=_DISPATCH_BUCKETS,
            registry=registry,
        ),
        cluster_active=Gauge(
            "kueue_bridge_multikueue_cluster_active",
            "1 while the worker's MultiKueueCluster is Active (connected), 0 while it is not.",
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
