"""After the first admission is undone, the Workload is dispatched again: Kueue's eviction can clear
what MultiKueue wrote, and what Kueue's MultiKueue gets stuck on does not stop ours.

The in-memory manager keeps field ownership (``tests.unit.kube.fake_ssa``): Kueue's eviction is
played here as Kueue writes it, a forced apply as ``kueue-admission`` without ``clusterName`` and
``nominatedClusterNames`` -- which removes them only if ``kueue-admission`` is their only owner.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import orjson
import pytest

from shared.jsontree import json_tree_copy
from shared.kube import Result
from shared.kueue.admission_apply import apply_admission_status
from tests.unit.kube.fakeapi import RecordedRequest, status_body
from tests.unit.multikueue.fakes import JOB, WORKLOAD
from tests.unit.multikueue.harness import ORIGIN_LABEL, Harness, condition


@pytest.fixture
async def mk() -> AsyncIterator[Harness]:
    harness = Harness()
    await harness.connect()
    yield harness
    await harness.close()


def _set(status: dict[str, Any], kind: str, value: str, reason: str, message: str = "") -> None:
    conditions = [c for c in status.get("conditions") or [] if c["type"] != kind]
    conditions.append(
        {
            "type": kind,
            "status": value,
            "reason": reason,
            "message": message,
            "lastTransitionTime": "2026-01-01T00:01:00Z",
        }
    )
    status["conditions"] = conditions


async def kueue_evicts(mk: Harness, reason: str = "AdmissionCheck") -> None:
    """Kueue's ``workloadevict.Evict``: ``Evicted``, nomination cleared, checks reset to Pending."""
    workload = json_tree_copy(mk.local())
    status = workload["status"]
    _set(status, "Evicted", "True", reason, "evicted")
    status.pop("clusterName", None)
    status.pop("nominatedClusterNames", None)
    for check in status["admissionChecks"]:
        if check["state"] != "Pending":
            check.update(
                state="Pending", message=f"Reset to Pending after eviction. Previously: {check['state']}"
            )
    await apply_admission_status(mk.manager.client, workload)


async def quota_released(mk: Harness) -> None:
    """The job reconciler, once the job is stopped: no admission, ``QuotaReserved=False``."""
    workload = json_tree_copy(mk.local())
    workload["status"].pop("admission", None)
    _set(workload["status"], "QuotaReserved", "False", "Pending")
    await mk.manager.client.update(WORKLOAD.gvk, workload, subresource="status", field_manager="kueue-bridge")


async def quota_reserved(mk: Harness) -> None:
    """Kueue's scheduler: ``QuotaReserved=True``, ``Evicted=False``."""
    workload = json_tree_copy(mk.local())
    _set(workload["status"], "QuotaReserved", "True", "QuotaReserved")
    _set(workload["status"], "Evicted", "False", "QuotaReserved")
    await apply_admission_status(mk.manager.client, workload)


async def admitted_on(mk: Harness, worker: str) -> None:
    mk.job()
    mk.workload()
    await mk.reconcile()
    mk.set_remote_condition(worker, "Admitted", reason="Admitted", at="2026-01-01T00:00:20Z")
    await mk.reconcile()
    assert (mk.check()["state"], mk.local()["status"]["clusterName"]) == ("Ready", worker)


def stale_admitted_copy(mk: Harness, worker: str) -> None:
    """A copy admitted before the current one (its worker was lost meanwhile), with its job."""
    mk.workers[worker].put(
        WORKLOAD,
        {
            "metadata": {"name": "wl", "namespace": "ns", "labels": {ORIGIN_LABEL: "multikueue"}},
            "spec": json_tree_copy(mk.local()["spec"]),
        },
    )
    mk.set_remote_condition(worker, "Admitted", reason="Admitted", at="2026-01-01T00:00:05Z")
    mk.workers[worker].put(
        JOB,
        {
            "metadata": {"name": "job", "namespace": "ns", "labels": {ORIGIN_LABEL: "multikueue"}},
            "spec": {"suspend": False},
        },
    )


async def test_kueues_eviction_clears_the_cluster_we_recorded_and_the_job_is_dispatched_again(
    mk: Harness,
) -> None:
    await admitted_on(mk, "w1")
    mk.set_remote_condition("w1", "Evicted", reason="Preempted")
    await mk.reconcile()
    assert mk.check()["state"] == "Retry"
    await kueue_evicts(mk)
    status = mk.local()["status"]
    assert "clusterName" not in status and "nominatedClusterNames" not in status
    await quota_released(mk)
    await mk.reconcile()
    assert mk.remote("w1") is None and mk.remote_job("w1") is None
    await quota_reserved(mk)
    await mk.reconcile()
    assert mk.local()["status"]["nominatedClusterNames"] == ["w1", "w2"]
    assert mk.remote("w1") is not None and mk.remote("w2") is not None


async def test_an_out_of_sync_copy_left_by_a_quick_re_reservation_is_replaced(mk: Harness) -> None:
    await admitted_on(mk, "w1")
    mk.set_remote_condition("w1", "Finished", reason="OutOfSync")
    await mk.reconcile()
    assert mk.check()["state"] == "Retry"
    await kueue_evicts(mk)
    await quota_reserved(mk)  # before MultiKueue saw the Workload without quota: no pass removed the copies
    await mk.reconcile()
    fresh = mk.remote("w1")
    assert fresh is not None and condition(fresh, "Finished") is None, "a new copy, not the finished one"
    assert mk.remote_job("w1") is None and mk.remote("w2") is not None
    assert condition(mk.local(), "Finished") is None


async def test_a_stale_admitted_copy_of_a_worker_that_came_back_is_removed_not_chosen(mk: Harness) -> None:
    await admitted_on(mk, "w2")
    running = mk.remote_job("w2")
    stale_admitted_copy(mk, "w1")  # admitted earlier than the recorded one: Kueue would choose it
    assert await mk.reconcile() == Result.after(900.0)
    assert mk.remote("w1") is None and mk.remote_job("w1") is None
    assert mk.remote_job("w2") == running
    assert (mk.check()["state"], mk.local()["status"]["clusterName"]) == ("Ready", "w2")


async def test_a_pass_killed_after_creating_the_job_is_resumed_on_that_worker_not_an_earlier_admission(
    mk: Harness,
) -> None:
    """A pass chose w2 (its copy admitted; w1's not yet), created the job there and died before it
    removed w1's copy and recorded w2. Meanwhile w1's Kueue admitted its copy, stamped earlier (its
    pass began earlier): the earliest admission would now be w1, and the job would run twice."""
    mk.job()
    mk.workload()
    await mk.reconcile()
    mk.set_remote_condition("w2", "Admitted", reason="Admitted", at="2026-01-01T00:00:20Z")
    mk.workers["w2"].put(
        JOB,
        {
            "metadata": {"name": "job", "namespace": "ns", "labels": {ORIGIN_LABEL: "multikueue"}},
            "spec": {"suspend": False},
        },
    )
    running = mk.remote_job("w2")
    mk.set_remote_condition("w1", "Admitted", reason="Admitted", at="2026-01-01T00:00:19Z")
    await mk.reconcile()
    assert (mk.check()["state"], mk.local()["status"]["clusterName"]) == ("Ready", "w2")
    assert mk.remote("w1") is None and mk.remote_job("w1") is None
    assert mk.remote_job("w2") == running


async def test_the_recorded_copy_gone_is_a_retry_even_with_a_stale_admitted_copy_elsewhere(
    mk: Harness,
) -> None:
    await admitted_on(mk, "w2")
    mk.workers["w2"].api.remove_object(WORKLOAD.resource_label, "ns", "wl")
    stale_admitted_copy(mk, "w1")
    await mk.reconcile()
    assert (mk.check()["state"], mk.check()["message"]) == (
        "Retry",
        'Admitting remote no longer exists, Previously: "Ready"',
    )
    assert mk.local()["status"]["clusterName"] == "w2"


async def test_nothing_is_dispatched_while_an_eviction_is_under_way_or_the_workload_is_inactive(
    mk: Harness,
) -> None:
    mk.job()
    workload = mk.workload()
    _set(workload["status"], "Evicted", "True", "Preempted")
    mk.manager.put(WORKLOAD, workload)
    await mk.reconcile()
    assert mk.remote("w1") is None and mk.remote("w2") is None
    workload = mk.local()
    _set(workload["status"], "Evicted", "False", "QuotaReserved")
    workload["spec"]["active"] = False
    mk.manager.put(WORKLOAD, workload)
    await mk.reconcile()
    assert mk.remote("w1") is None and mk.remote("w2") is None
    workload = mk.local()
    workload["spec"]["active"] = True
    mk.manager.put(WORKLOAD, workload)
    await mk.reconcile()
    assert mk.remote("w1") is not None and mk.remote("w2") is not None


async def test_a_deactivation_keeps_the_copy_until_the_worker_stopped_its_job(mk: Harness) -> None:
    await admitted_on(mk, "w1")
    workload = mk.local()
    workload["spec"]["active"] = False
    mk.manager.put(WORKLOAD, workload)
    await kueue_evicts(mk, reason="Deactivated")
    await mk.reconcile()
    remote = mk.remote("w1")
    assert remote is not None and mk.remote_job("w1") is not None, "not removed as out of sync (Kueue)"
    target = condition(remote, "DeactivationTarget")
    assert target is not None and target["reason"] == "EvictedOnManagerCluster"


def kueues_workload_webhook(mk: Harness) -> None:
    """Kueue's ``validateClusterNameUpdate``: a first ``clusterName`` must be nominated in the stored Workload."""

    def refused(request: RecordedRequest) -> bool:
        if request.method != "PATCH" or not request.path.endswith("/workloads/wl/status"):
            return False
        cluster = (orjson.loads(request.body).get("status") or {}).get("clusterName")
        stored = mk.manager.api.objects[(WORKLOAD.resource_label, "ns", "wl")].get("status") or {}
        return (
            bool(cluster)
            and not stored.get("clusterName")
            and cluster not in (stored.get("nominatedClusterNames") or [])
        )

    def answer(request: RecordedRequest) -> httpx.Response:
        message = "status.clusterName: Invalid value: when setting clusterName it must be one of the nominatedClusterNames"
        return httpx.Response(403, content=status_body(403, "Forbidden", message))

    mk.manager.api.fail_when(refused, answer)


async def test_an_admitted_copy_of_a_worker_no_longer_nominated_is_nominated_before_it_is_recorded(
    mk: Harness,
) -> None:
    kueues_workload_webhook(mk)
    await admitted_on(mk, "w1")
    mk.set_remote_condition("w1", "Evicted", reason="Preempted")
    await mk.reconcile()
    await kueue_evicts(mk)  # the nomination is gone with the eviction
    await quota_reserved(mk)  # at once: the copies were never removed, and w1 admits its copy again
    remote = mk.remote("w1")
    assert remote is not None
    remote["status"]["conditions"] = [c for c in remote["status"]["conditions"] if c["type"] != "Evicted"]
    mk.workers["w1"].put(WORKLOAD, remote)
    await mk.reconcile()
    assert (mk.check()["state"], mk.local()["status"]["clusterName"]) == ("Ready", "w1")
    assert "nominatedClusterNames" not in mk.local()["status"]
