"""The dashboard's MultiKueue metrics: dispatch latency and whether each worker is connected."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from multikueue.metrics import multikueue_metrics
from tests.unit.multikueue.test_clusters import Harness


def test_an_admission_observes_the_wait_since_the_quota_reservation() -> None:
    registry = CollectorRegistry()
    metrics = multikueue_metrics(registry)
    metrics.count_admitted("w1", waited=1.5)
    metrics.count_admitted("w1", waited=None)  # no QuotaReserved time: counted, not timed
    assert (
        registry.get_sample_value("kueue_bridge_multikueue_workloads_admitted_total", {"cluster": "w1"}) == 2
    )
    assert (
        registry.get_sample_value(
            "kueue_bridge_multikueue_dispatch_duration_seconds_count", {"cluster": "w1"}
        )
        == 1
    )
    assert (
        registry.get_sample_value("kueue_bridge_multikueue_dispatch_duration_seconds_sum", {"cluster": "w1"})
        == 1.5
    )
    assert multikueue_metrics(registry) is metrics  # one set per registry (a Lease won back reuses it)


async def test_the_cluster_gauge_follows_the_active_condition_and_goes_with_the_cluster() -> None:
    registry = CollectorRegistry()
    metrics = multikueue_metrics(registry)
    harness = Harness(on_active=metrics.set_cluster_active)
    harness.add_cluster()
    await harness.reconciler.reconcile("w1")  # no Secret yet: BadKubeConfig
    assert registry.get_sample_value("kueue_bridge_multikueue_cluster_active", {"cluster": "w1"}) == 0
    harness.add_secret()
    await harness.reconciler.reconcile("w1")
    assert harness.active()["status"] == "True"
    assert registry.get_sample_value("kueue_bridge_multikueue_cluster_active", {"cluster": "w1"}) == 1
    harness.deleted.add("w1")
    await harness.reconciler.reconcile("w1")
    assert registry.get_sample_value("kueue_bridge_multikueue_cluster_active", {"cluster": "w1"}) is None
