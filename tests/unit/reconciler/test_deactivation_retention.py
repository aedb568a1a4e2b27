"""``objectRetentionPolicies.workloads.afterDeactivatedByKueue`` through the reconciler, on a fake clock.

Kueue's workload controller deactivates a Workload itself (maximum execution time, requeuing limit)
by setting ``spec.active: false`` and evicting it with ``DeactivatedDueTo<cause>``; the job
reconciler then stops the job and, once the retention period has passed since the eviction,
deletes it. A person's ``spec.active: false`` (plain ``Deactivated``) never deletes anything.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from reconciler.job_reconciler import JobReconciler, ReconcileResult
from reconciler.manager import settings_from_config
from reconciler.ports import JobStillActiveError, NotFoundError
from reconciler.retention import DeactivationRetention, is_evicted_due_to_deactivation_by_kueue
from shared.config import parse_config
from shared.frameworks.registry import FrameworkRegistry
from shared.kube.times import format_time
from shared.models.workload import Workload
from tests.unit.reconciler.conftest import FakeClock, job_key, set_condition
from tests.unit.reconciler.fakes import FakeCluster
from tests.unit.reconciler.test_job_lifecycle import WORKLOAD, condition_of, run_admitted_golden_job

MAX_EXEC_REASON = "DeactivatedDueToMaximumExecutionTimeExceeded"
MAX_EXEC_MESSAGE = "The workload is deactivated due to exceeding the maximum execution time"
DELETED = ("Normal", "Deleted", "Deleted job: deactivation retention period expired")


def deactivate(cluster: FakeCluster, clock: FakeClock, *, reason: str, message: str) -> None:
    """Kueue's workload controller: ``spec.active: false`` and ``Evicted=True`` now."""
    key = next(k for k in cluster.objects if k[1] == "Workload" and k[3] == WORKLOAD)
    cluster.objects[key]["spec"]["active"] = False
    set_condition(
        cluster,
        WORKLOAD,
        {
            "type": "Evicted",
            "status": "True",
            "reason": reason,
            "message": message,
            "lastTransitionTime": format_time(clock()),
        },
    )


def deleted_events(cluster: FakeCluster) -> list[tuple[str, str, str]]:
    return [(e.event_type, e.reason, e.message) for e in cluster.events if e.reason == "Deleted"]


def job_deletes(cluster: FakeCluster) -> list[str]:
    return [w.name for w in cluster.writes if (w.verb, w.kind) == ("delete", "Job")]


async def reconcile(reconciler: JobReconciler) -> ReconcileResult:
    return await reconciler.reconcile(job_key())


@pytest.fixture
def with_retention(make_reconciler: Callable[..., JobReconciler]) -> Callable[[float | None], JobReconciler]:
    def make(seconds: float | None) -> JobReconciler:
        after = None if seconds is None else timedelta(seconds=seconds)
        return make_reconciler(deactivation_retention=after)

    return make


async def test_kueue_deactivation_deletes_the_job_once_the_period_has_passed(
    cluster: FakeCluster, clock: FakeClock, with_retention: Callable[[float | None], JobReconciler]
) -> None:
    reconciler = with_retention(60)
    await run_admitted_golden_job(cluster, reconciler)
    deactivate(cluster, clock, reason=MAX_EXEC_REASON, message=MAX_EXEC_MESSAGE)
    clock.advance(5)

    first = await reconcile(reconciler)
    job = cluster.find("Job", "golden", "sample")
    assert job is not None and job["spec"]["suspend"] is True, "stopped, as for any eviction"
    workload = cluster.find("Workload", "golden", WORKLOAD)
    assert workload is not None and "admission" not in workload["status"], "quota released"
    assert condition_of(workload, "Requeued") == ("False", MAX_EXEC_REASON, MAX_EXEC_MESSAGE)
    assert first.requeue_after == 55.0, "requeued for what is left of the period"

    clock.advance(54.5)
    assert (await reconcile(reconciler)).requeue_after == 0.5
    assert cluster.find("Job", "golden", "sample") is not None
    assert job_deletes(cluster) == [] and deleted_events(cluster) == []

    clock.advance(0.5)
    assert (await reconcile(reconciler)).requeue_after is None
    assert cluster.find("Job", "golden", "sample") is None
    assert job_deletes(cluster) == ["sample"]
    assert deleted_events(cluster) == [DELETED]


async def test_zero_retention_deletes_in_the_pass_that_stops_the_job(
    cluster: FakeCluster, clock: FakeClock, with_retention: Callable[[float | None], JobReconciler]
) -> None:
    reconciler = with_retention(0)
    await run_admitted_golden_job(cluster, reconciler)
    deactivate(cluster, clock, reason="DeactivatedDueToRequeuingLimitExceeded", message="x")
    writes_before = len(cluster.writes)

    assert (await reconcile(reconciler)).requeue_after is None
    # Kueue's order within the evicted step: stop the job (the batch Job's stop takes several
    # patches), release the quota, then delete.
    writes = [(w.verb, w.kind, w.subresource) for w in cluster.writes[writes_before:]]
    assert writes[-2:] == [("apply", "Workload", "status"), ("delete", "Job", None)]
    assert writes[:-2] and set(writes[:-2]) == {("patch", "Job", None)}
    assert [e.reason for e in cluster.events[-2:]] == ["Stopped", "Deleted"]
    assert cluster.find("Job", "golden", "sample") is None

    await reconcile(reconciler)  # the job is gone: its Workload is finished and released
    workload = cluster.find("Workload", "golden", WORKLOAD)
    assert workload is not None and not workload["metadata"].get("finalizers")
    assert condition_of(workload, "Finished") == (
        "True",
        "OwnerNotFound",
        "The workload's owner no longer exists",
    )


async def test_unset_policy_never_deletes(
    cluster: FakeCluster, clock: FakeClock, with_retention: Callable[[float | None], JobReconciler]
) -> None:
    reconciler = with_retention(None)
    await run_admitted_golden_job(cluster, reconciler)
    deactivate(cluster, clock, reason=MAX_EXEC_REASON, message=MAX_EXEC_MESSAGE)
    await reconcile(reconciler)
    clock.advance(10 * 365 * 24 * 3600)
    assert (await reconcile(reconciler)).requeue_after is None
    assert cluster.find("Job", "golden", "sample") is not None
    assert job_deletes(cluster) == [] and deleted_events(cluster) == []


@pytest.mark.needs_shared
async def test_a_person_deactivating_the_workload_never_deletes_the_job(
    cluster: FakeCluster,
    clock: FakeClock,
    with_retention: Callable[[float | None], JobReconciler],
    golden_dir: Path,
) -> None:
    golden = yaml.safe_load((golden_dir / "workload-after-deactivation.yaml").read_text())
    [evicted] = [c for c in golden["status"]["conditions"] if c["type"] == "Evicted"]
    assert golden["spec"]["active"] is False
    reconciler = with_retention(0)
    await run_admitted_golden_job(cluster, reconciler)
    deactivate(cluster, clock, reason=evicted["reason"], message=evicted["message"])
    clock.advance(3600)
    for _ in range(3):
        assert (await reconcile(reconciler)).requeue_after is None
    job = cluster.find("Job", "golden", "sample")
    assert job is not None and job["spec"]["suspend"] is True
    assert job_deletes(cluster) == [] and deleted_events(cluster) == []


async def test_a_reactivated_workload_is_not_deleted(
    cluster: FakeCluster, clock: FakeClock, with_retention: Callable[[float | None], JobReconciler]
) -> None:
    reconciler = with_retention(0)
    await run_admitted_golden_job(cluster, reconciler)
    deactivate(cluster, clock, reason=MAX_EXEC_REASON, message=MAX_EXEC_MESSAGE)
    key = next(k for k in cluster.objects if k[1] == "Workload")
    cluster.objects[key]["spec"]["active"] = True  # a person reactivated it before the job was reconciled
    assert (await reconcile(reconciler)).requeue_after is None
    assert cluster.find("Job", "golden", "sample") is not None
    assert job_deletes(cluster) == []


async def test_the_job_is_deleted_once_its_pods_are_gone_when_they_outlive_the_retention(
    cluster: FakeCluster, clock: FakeClock, with_retention: Callable[[float | None], JobReconciler]
) -> None:
    """Kueue deletes in the evicted step, after the stop; on kube-apiserver 1.36 the stop's template
    restore waits for the pods (its write is refused while any is active), so the deletion does too."""
    reconciler = with_retention(30)
    await run_admitted_golden_job(cluster, reconciler)
    job_store_key = next(k for k in cluster.objects if k[1] == "Job")
    cluster.objects[job_store_key]["status"] = {"active": 2}
    deactivate(cluster, clock, reason=MAX_EXEC_REASON, message=MAX_EXEC_MESSAGE)
    with pytest.raises(JobStillActiveError):
        await reconcile(reconciler)
    workload = cluster.find("Workload", "golden", WORKLOAD)
    assert workload is not None and "admission" in workload["status"], "quota kept while pods run"
    clock.advance(30)
    with pytest.raises(JobStillActiveError):
        await reconcile(reconciler)
    assert cluster.find("Job", "golden", "sample") is not None, "not deleted while its pods run"
    cluster.objects[job_store_key]["status"] = {"active": 0}
    cluster.objects[job_store_key]["metadata"]["resourceVersion"] += "0"
    await reconcile(reconciler)
    assert cluster.find("Job", "golden", "sample") is None
    assert deleted_events(cluster) == [DELETED]


async def test_a_job_already_gone_is_not_reported_deleted(
    cluster: FakeCluster, clock: FakeClock, with_retention: Callable[[float | None], JobReconciler]
) -> None:
    reconciler = with_retention(0)
    await run_admitted_golden_job(cluster, reconciler)
    deactivate(cluster, clock, reason=MAX_EXEC_REASON, message=MAX_EXEC_MESSAGE)

    async def vanished(*args: Any, **kwargs: Any) -> None:
        raise NotFoundError("sample")

    cluster.delete = vanished  # type: ignore[method-assign]  # deleted by someone else meanwhile
    assert (await reconcile(reconciler)).requeue_after is None
    assert deleted_events(cluster) == []


async def test_the_policy_is_read_from_the_configuration() -> None:
    text = (
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
        "objectRetentionPolicies: {workloads: {afterFinished: 1h, afterDeactivatedByKueue: 90s}}\n"
    )
    config = parse_config(text, source="x")
    registry = FrameworkRegistry.from_managed_kinds(config.managed_kinds())
    assert settings_from_config(config, registry=registry).deactivation_retention == timedelta(seconds=90)
    default = parse_config("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n", source="x")
    assert settings_from_config(default, registry=registry).deactivation_retention is None


# --- the decision on its own -------------------------------------------------------------------------
def workload_with(*, active: bool, reason: str, since: str | None) -> Workload:
    condition: dict[str, Any] = {"type": "Evicted", "status": "True", "reason": reason, "message": ""}
    if since is not None:
        condition["lastTransitionTime"] = since
    return Workload.from_wire(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {"name": "w", "namespace": "n"},
            "spec": {"active": active, "podSets": [], "queueName": "q"},
            "status": {"conditions": [condition]},
        }
    )


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        (MAX_EXEC_REASON, True),
        ("DeactivatedDueToRequeuingLimitExceeded", True),
        ("Deactivated", False),
        ("PodsReadyTimeout", False),
        ("Preempted", False),
    ],
)
def test_only_deactivated_due_to_reasons_are_kueue_deactivations(reason: str, expected: bool) -> None:
    assert (
        is_evicted_due_to_deactivation_by_kueue(workload_with(active=False, reason=reason, since=None))
        is expected
    )


def test_remaining_counts_from_the_eviction(clock: FakeClock) -> None:
    retention = DeactivationRetention(after=timedelta(minutes=10))
    workload = workload_with(active=False, reason=MAX_EXEC_REASON, since="2026-11-22T02:30:03Z")
    assert retention.remaining(workload, now=clock()) == timedelta(minutes=6)


def test_a_missing_eviction_time_is_long_expired_and_a_garbled_one_keeps_the_job(clock: FakeClock) -> None:
    retention = DeactivationRetention(after=timedelta(hours=1))
    missing = retention.remaining(
        workload_with(active=False, reason=MAX_EXEC_REASON, since=None), now=clock()
    )
    assert missing is not None and missing < timedelta(0)
    garbled = workload_with(active=False, reason=MAX_EXEC_REASON, since="yesterday")
    assert retention.remaining(garbled, now=clock()) is None


def test_an_evicted_but_active_workload_or_an_unset_policy_keeps_the_job(clock: FakeClock) -> None:
    active = workload_with(active=True, reason=MAX_EXEC_REASON, since="2026-11-22T02:30:03Z")
    assert DeactivationRetention(after=timedelta(0)).remaining(active, now=clock()) is None
    inactive = workload_with(active=False, reason=MAX_EXEC_REASON, since="2026-11-22T02:30:03Z")
    assert DeactivationRetention(after=None).remaining(inactive, now=clock()) is None
