"""Stopping a Job that has started, under kube-apiserver's rules (issue: preemption never completed).

kube-apiserver lets a Job's pod template change only while the stored Job is suspended, has no
active pod *and* has no ``status.startTime``, and removes ``startTime`` only from a suspended Job.
The fake cluster enforces both (``fakes.check_batch_job_write``), so every stop reason here must go
Kueue's way: suspend (with the ``kueue.x-k8s.io/stopping`` mark), clear ``startTime`` on ``/status``,
then, once the job controller reports no active pod, restore the template, then the ``Stopped``
event with the stop message (``pkg/controller/jobs/job``: ``Job.Stop``).
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from reconciler.job_control import JobControl
from reconciler.job_reconciler import JobReconciler
from reconciler.ports import ConflictError, InvalidError, JobStillActiveError
from reconciler.workload_sync import NoMatchingWorkloadsError
from shared.frameworks.tekton import PipelineRunAdapter
from tests.unit.reconciler.conftest import golden_job, job_key
from tests.unit.reconciler.fakes import FakeCluster, Write
from tests.unit.reconciler.test_job_lifecycle import (
    WORKLOAD,
    condition_of,
    converge,
    evict,
    run_admitted_golden_job,
)

STARTED = "2026-11-22T02:34:05Z"
STOPPING = "kueue.x-k8s.io/stopping"


def _job_key_tuple(cluster: FakeCluster) -> tuple[str, str, str, str]:
    return next(k for k in cluster.objects if k[1] == "Job")


def set_job_status(cluster: FakeCluster, status: dict[str, Any]) -> None:
    """The Job controller's status write (resourceVersion bumped, as a real write would)."""
    job = cluster.objects[_job_key_tuple(cluster)]
    job["status"] = copy.deepcopy(status)
    job["metadata"]["resourceVersion"] = str(int(job["metadata"]["resourceVersion"]) + 1000)


def job_writes(cluster: FakeCluster, since: int) -> list[tuple[str, str | None]]:
    return [(w.verb, w.subresource) for w in cluster.writes[since:] if w.kind == "Job"]


async def start_and_run(
    cluster: FakeCluster, reconciler: JobReconciler, *, active: int = 1
) -> dict[str, Any]:
    original = await run_admitted_golden_job(cluster, reconciler)
    set_job_status(cluster, {"startTime": STARTED, "active": active})
    return original


def pods_gone(cluster: FakeCluster) -> None:
    """The job controller deleted the suspended Job's pods and says so (``status.active`` 0)."""
    job = cluster.objects[_job_key_tuple(cluster)]
    set_job_status(cluster, {**job["status"], "active": 0})


def _admission_lost(cluster: FakeCluster) -> None:
    """The Workload lost its admission without an eviction: the running job no longer matches it."""
    workload = cluster.objects[next(k for k in cluster.objects if k[1] == "Workload")]
    workload["status"].pop("admission", None)
    workload["status"]["conditions"] = [
        c for c in workload["status"]["conditions"] if c["type"] not in ("QuotaReserved", "Admitted")
    ]


def _workload_deleted(cluster: FakeCluster) -> None:
    workload = cluster.objects[next(k for k in cluster.objects if k[1] == "Workload")]
    workload["metadata"]["deletionTimestamp"] = "2026-11-22T02:35:00Z"


STOP_REASONS: dict[str, tuple[Callable[[FakeCluster], None], str]] = {
    "preemption": (
        lambda c: evict(c, reason="Preempted", message="Preempted to accommodate a workload"),
        "Preempted to accommodate a workload",
    ),
    "eviction": (
        lambda c: evict(c, reason="PodsReadyTimeout", message="Exceeded the PodsReady timeout"),
        "Exceeded the PodsReady timeout",
    ),
    "deactivation": (
        lambda c: evict(c, reason="Deactivated", message="The workload is deactivated"),
        "The workload is deactivated",
    ),
    "no matching workload": (
        _admission_lost,
        "No matching Workload; restoring pod templates according to existent Workload",
    ),
    "workload deleted": (_workload_deleted, "Workload is deleted"),
}


@pytest.mark.parametrize("reason", list(STOP_REASONS))
async def test_every_stop_reason_stops_a_started_job_in_kueues_order(
    cluster: FakeCluster, reconciler: JobReconciler, reason: str
) -> None:
    original = await start_and_run(cluster, reconciler)
    trigger, message = STOP_REASONS[reason]
    trigger(cluster)
    before = len(cluster.writes)

    async def reconcile() -> None:
        try:
            await reconciler.reconcile(job_key())
        except NoMatchingWorkloadsError:
            assert reason == "no matching workload", "Kueue too deletes the Workload and returns an error"

    with pytest.raises(JobStillActiveError):  # where Kueue's refused restore returns its error
        await reconciler.reconcile(job_key())
    assert job_writes(cluster, before) == [("patch", None), ("patch", "status")]
    suspend, reset = (w for w in cluster.writes[before:] if w.kind == "Job")
    assert suspend.body["spec"] == {"suspend": True}
    assert suspend.body["metadata"]["annotations"] == {STOPPING: "true"}
    assert reset.body["status"] == {"startTime": None}
    held = cluster.find("Job", "golden", "sample")
    assert held is not None
    assert held["metadata"]["annotations"][STOPPING] == "true", "the restore waits for the pod"
    assert not [e for e in cluster.events if e.reason == "Stopped"], "no stop until the restore"

    pods_gone(cluster)
    before = len(cluster.writes)
    await reconcile()
    # Kueue "suspends again" while the mark is there: a write that would change nothing, not sent
    assert job_writes(cluster, before) == [("patch", None)]
    [restore] = (w for w in cluster.writes[before:] if w.kind == "Job")
    assert "template" in restore.body["spec"]
    job = cluster.find("Job", "golden", "sample")
    assert job is not None
    assert job["spec"]["suspend"] is True
    assert job["spec"]["template"] == original["spec"]["template"], "the user's template is back"
    assert "startTime" not in job["status"]
    assert STOPPING not in (job["metadata"].get("annotations") or {})
    assert [(e.event_type, e.reason, e.message) for e in cluster.events if e.reason == "Stopped"] == [
        ("Normal", "Stopped", message)
    ]


async def test_a_job_unsuspended_by_hand_without_admission_is_stopped_even_after_it_started(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    """``Not admitted by cluster queue``: the template was never changed, so the last write only
    drops the stopping mark; the status reset still comes first (kube-apiserver's order)."""
    cluster.add(golden_job())
    await converge(reconciler)
    job = cluster.objects[_job_key_tuple(cluster)]
    job["spec"]["suspend"] = False
    set_job_status(cluster, {"startTime": STARTED, "active": 0})
    before = len(cluster.writes)

    await reconciler.reconcile(job_key())

    assert job_writes(cluster, before) == [("patch", None), ("patch", "status"), ("patch", None)]
    stored = cluster.find("Job", "golden", "sample")
    assert stored is not None
    assert stored["spec"]["suspend"] is True
    assert "startTime" not in stored["status"]
    assert STOPPING not in (stored["metadata"].get("annotations") or {})
    assert [(e.reason, e.message) for e in cluster.events if e.reason == "Stopped"] == [
        ("Stopped", "Not admitted by cluster queue")
    ]


async def test_preempted_started_job_keeps_quota_while_pods_run_then_releases_it(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    await start_and_run(cluster, reconciler)
    evict(cluster, reason="Preempted", message="Preempted to accommodate a workload")
    await converge(reconciler)

    workload = cluster.find("Workload", "golden", WORKLOAD)
    assert workload is not None
    assert "admission" in workload["status"], "quota is kept while the Job has active pods"
    assert [e.reason for e in cluster.events].count("Stopped") == 0, "recorded once the template is back"

    pods_gone(cluster)
    await converge(reconciler)

    workload = cluster.find("Workload", "golden", WORKLOAD)
    assert workload is not None
    assert "admission" not in workload["status"], "quota released once no pod is active"
    assert condition_of(workload, "Requeued") == ("True", "Preempted", "Preempted to accommodate a workload")
    assert [e.reason for e in cluster.events].count("Stopped") == 1, "one Stopped event for one stop"


async def test_reset_is_decided_on_the_servers_answer_not_on_the_read(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    """The suspend write's response shows startTime (set by the Job controller concurrently): the
    next step must clear it, even though the copy the decision started from had none."""
    await run_admitted_golden_job(cluster, reconciler)
    evict(cluster, reason="Preempted", message="Preempted to accommodate a workload")
    original_patch = cluster.merge_patch

    async def job_controller_races(gvk, namespace, name, patch, *, subresource=None, read_back=True):
        result = await original_patch(gvk, namespace, name, patch, subresource=subresource)
        if gvk.kind == "Job" and patch.get("spec", {}).get("suspend") is True:
            key = _job_key_tuple(cluster)
            cluster.objects[key]["status"] = {"startTime": STARTED}
            result = copy.deepcopy(cluster.objects[key])
        return result if read_back else {}

    cluster.merge_patch = job_controller_races  # type: ignore[method-assign]
    await reconciler.reconcile(job_key())
    job = cluster.find("Job", "golden", "sample")
    assert job is not None
    assert "startTime" not in job["status"]
    assert STOPPING not in (job["metadata"].get("annotations") or {})


async def test_a_stop_interrupted_after_suspending_resumes_and_records_stopped_like_kueue(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    """Kueue records ``Stopped`` when it suspended the job in this call, also when the status reset
    then fails; the next call finds the ``stopping`` mark, suspends again (no change) and finishes."""
    original = await start_and_run(cluster, reconciler)
    evict(cluster, reason="Preempted", message="Preempted to accommodate a workload")
    original_patch = cluster.merge_patch
    failures = iter([True])

    async def status_write_conflicts_once(gvk, namespace, name, patch, *, subresource=None, read_back=True):
        if subresource == "status" and gvk.kind == "Job" and next(failures, False):
            raise ConflictError("Job sample was modified")
        return await original_patch(gvk, namespace, name, patch, subresource=subresource, read_back=read_back)

    cluster.merge_patch = status_write_conflicts_once  # type: ignore[method-assign]
    with pytest.raises(ConflictError):
        await reconciler.reconcile(job_key())
    job = cluster.find("Job", "golden", "sample")
    assert job is not None
    assert job["metadata"]["annotations"][STOPPING] == "true", "the mark makes the next pass resume"
    assert [e.reason for e in cluster.events].count("Stopped") == 1

    pods_gone(cluster)
    await reconciler.reconcile(job_key())
    job = cluster.find("Job", "golden", "sample")
    assert job is not None
    assert job["spec"]["template"] == original["spec"]["template"]
    assert STOPPING not in (job["metadata"].get("annotations") or {})
    assert "startTime" not in job["status"]
    assert [e.reason for e in cluster.events].count("Stopped") == 2, "Kueue's stoppedNow is true again"


async def test_a_rejected_restore_is_a_warning_naming_the_field_and_no_stopped_event(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    await start_and_run(cluster, reconciler, active=0)
    evict(cluster, reason="Preempted", message="Preempted to accommodate a workload")
    original_patch = cluster.merge_patch

    async def status_reset_ignored(gvk, namespace, name, patch, *, subresource=None, read_back=True):
        if subresource == "status" and gvk.kind == "Job":
            cluster.writes.append(Write("patch", "Job", name, subresource, copy.deepcopy(patch)))
            return cluster.find("Job", namespace, name)  # a server that ignored the reset
        return await original_patch(gvk, namespace, name, patch, subresource=subresource, read_back=read_back)

    cluster.merge_patch = status_reset_ignored  # type: ignore[method-assign]
    with pytest.raises(InvalidError):
        await reconciler.reconcile(job_key())
    warnings = [e for e in cluster.events if e.event_type == "Warning"]
    assert [(e.kind, e.reason) for e in warnings] == [("Job", "WriteRejected")]
    assert warnings[0].message.startswith("The API server rejected a write to spec.template: ")
    assert 'Job.batch "sample" is invalid: spec.template' in warnings[0].message
    assert "Stopped" not in [e.reason for e in cluster.events], "Kueue: a failed restore is no stop"


async def test_a_custom_stop_that_leaves_no_stopping_mark_is_done_at_once(cluster: FakeCluster) -> None:
    """Only a stop that keeps Kueue's stopping mark waits (a batch Job's restore); a PipelineRun's
    one-write stop (``spec.status: StoppedRunFinally``) is finished, and recorded, right away."""
    stored = cluster.add(
        {
            "apiVersion": "tekton.dev/v1",
            "kind": "PipelineRun",
            "metadata": {"name": "build", "namespace": "golden"},
            "spec": {"pipelineRef": {"name": "p"}},
            "status": {"startTime": STARTED},
        }
    )
    control = JobControl(writer=cluster, events=cluster)
    assert await control.stop(PipelineRunAdapter(stored), workload=None, message="Preempted") is True
    run = cluster.find("PipelineRun", "golden", "build")
    assert run is not None and run["spec"]["status"] == "StoppedRunFinally"
    assert [(e.reason, e.message) for e in cluster.events] == [("Stopped", "Preempted")]
