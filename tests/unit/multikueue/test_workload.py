"""The Workload reconciler, Kueue's steps one by one, on an in-memory manager and two workers."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from multikueue.workload_group import RemoteObjectNotOwnedError
from shared.kube import KubeError, Result
from tests.unit.multikueue.fakes import JOB, TRAINING, WORKLOAD
from tests.unit.multikueue.harness import ORIGIN_LABEL, Harness, condition


@pytest.fixture
async def mk() -> AsyncIterator[Harness]:
    harness = Harness()
    await harness.connect()
    yield harness
    await harness.close()


async def dispatched(mk: Harness) -> None:
    mk.job()
    mk.workload()
    assert await mk.reconcile() == Result.done()


async def admitted_on(mk: Harness, worker: str) -> None:
    await dispatched(mk)
    mk.set_remote_condition(worker, "Admitted", reason="Admitted", message="The workload is admitted")
    await mk.reconcile()


async def test_dispatch_all_at_once_creates_sanitised_copies_and_no_job(mk: Harness) -> None:
    await dispatched(mk)
    assert mk.local()["status"]["nominatedClusterNames"] == ["w1", "w2"]
    for worker in ("w1", "w2"):
        copy = mk.remote(worker)
        assert copy is not None
        assert copy["metadata"]["labels"] == {"team": "a", ORIGIN_LABEL: "multikueue"}  # job-uid dropped
        assert copy["metadata"]["annotations"] == {"note": "kept"}
        assert "ownerReferences" not in copy["metadata"] and "finalizers" not in copy["metadata"]
        assert copy["spec"] == mk.local()["spec"] and "status" not in copy
        assert mk.remote_job(worker) is None  # the job waits for an admission
    writes = mk.writes(mk.manager)
    assert await mk.reconcile() == Result.done()
    assert mk.writes(mk.manager) == writes  # the nomination is written only when it changes


async def test_first_admitted_wins_and_the_job_is_created_only_there(mk: Harness) -> None:
    await dispatched(mk)
    mk.set_remote_condition("w1", "Admitted", at="2026-01-01T00:00:20Z")
    mk.set_remote_condition("w2", "Admitted", at="2026-01-01T00:00:10Z")
    assert await mk.reconcile() == Result.after(900.0)
    assert mk.remote("w1") is None and mk.remote_job("w1") is None
    job = mk.remote_job("w2")
    assert job is not None
    assert (
        "managedBy" not in job["spec"]
        and "selector" not in job["spec"]
        and "ttlSecondsAfterFinished" not in job["spec"]
    )
    assert job["metadata"]["labels"] == {"kueue.x-k8s.io/queue-name": "q", ORIGIN_LABEL: "multikueue"}
    assert job["metadata"]["annotations"] == {"kueue.x-k8s.io/prebuilt-workload-name": "wl"}
    assert "ownerReferences" not in job["metadata"] and "finalizers" not in job["metadata"]
    assert job["spec"]["template"]["metadata"]["labels"] == {
        "batch.kubernetes.io/job-name": "job",
        "app": "demo",
    }
    check = mk.check()
    assert (check["state"], check["message"]) == ("Ready", 'The workload was admitted on "w2"')
    assert mk.local()["status"]["clusterName"] == "w2"
    assert "nominatedClusterNames" not in mk.local()["status"]
    assert mk.events == [("wl", "Normal", 'The workload was admitted on "w2"')]


async def test_status_is_mirrored_deferred_while_suspended_and_never_rewritten_unchanged(mk: Harness) -> None:
    await admitted_on(mk, "w1")
    remote_job = mk.remote_job("w1")
    assert remote_job is not None
    remote_job["status"] = {"active": 1, "ready": 1, "startTime": "2026-01-01T00:01:00Z"}
    remote_job["spec"]["suspend"] = False
    mk.workers["w1"].put(JOB, remote_job)
    assert await mk.reconcile() == Result.after(2.0)  # local Job still suspended: deferred
    local_job = mk.manager.get(JOB, "job", "ns")
    assert local_job is not None and "active" not in local_job.get("status", {})
    assert condition(local_job, "Suspended") == {
        "type": "Suspended",
        "status": "True",
        "reason": "MultiKueueAdapter",
        "message": "Set by MultiKueue adapter",
        "lastTransitionTime": "2026-01-01T00:00:00Z",
        "lastProbeTime": "2026-01-01T00:00:00Z",
    }
    local_job["spec"]["suspend"] = False  # Kueue admitted the local Workload; the reconciler started it
    mk.manager.put(JOB, local_job)
    assert await mk.reconcile() == Result.after(900.0)
    assert mk.manager.get(JOB, "job", "ns")["status"] == remote_job["status"]  # type: ignore[index]
    patches = mk.writes(mk.manager, "PATCH")
    await mk.reconcile()
    assert mk.writes(mk.manager, "PATCH") == patches


async def test_remote_finished_finishes_the_local_workload_with_its_reason(mk: Harness) -> None:
    await admitted_on(mk, "w1")
    mk.set_remote_condition("w1", "Finished", reason="Succeeded", message="Job finished successfully")
    await mk.reconcile()
    finished = condition(mk.local(), "Finished")
    assert finished is not None
    assert (finished["status"], finished["reason"], finished["message"]) == (
        "True",
        "Succeeded",
        "Job finished successfully",
    )
    assert await mk.reconcile() == Result.done()  # finished: the copies are removed
    assert mk.remote("w1") is None and mk.remote_job("w1") is None


@pytest.mark.parametrize("reason", ["OutOfSync", "OwnerNotFound"])
async def test_remote_sync_failure_is_a_retry_never_a_finish(mk: Harness, reason: str) -> None:
    await admitted_on(mk, "w1")
    mk.set_remote_condition("w1", "Finished", reason=reason)
    await mk.reconcile()
    assert condition(mk.local(), "Finished") is None
    message = 'Remote workload on worker cluster "w1" is out of sync with its user job, resetting for re-dispatch, Previously: "Ready"'
    assert (mk.check()["state"], mk.check()["message"]) == ("Retry", message)
    assert mk.events[-1] == ("wl", "Warning", message)
    await mk.reconcile()  # not Ready any more: nothing else happens
    assert mk.check()["state"] == "Retry" and condition(mk.local(), "Finished") is None


async def test_remote_eviction_resets_for_re_admission(mk: Harness) -> None:
    await admitted_on(mk, "w1")
    mk.set_remote_condition("w1", "Evicted", reason="Preempted")
    await mk.reconcile()
    message = 'Workload evicted on worker cluster: "w1", resetting for re-admission. Previously: "Ready"'
    assert (mk.check()["state"], mk.check()["message"]) == ("Retry", message)
    assert mk.events[-1] == ("wl", "Normal", message)


async def test_manager_eviction_deactivates_the_remote(mk: Harness) -> None:
    await admitted_on(mk, "w1")
    local = mk.local()
    local["status"]["conditions"].append(
        {
            "type": "Evicted",
            "status": "True",
            "reason": "Preempted",
            "message": "Preempted to accommodate a workload",
            "lastTransitionTime": "2026-01-01T00:00:30Z",
        }
    )
    mk.manager.put(WORKLOAD, local)
    await mk.reconcile()
    target = condition(mk.remote("w1"), "DeactivationTarget")
    assert target is not None
    assert (target["status"], target["reason"], target["message"]) == (
        "True",
        "EvictedOnManagerCluster",
        "Evicted on manager: Preempted to accommodate a workload",
    )


async def test_admitting_worker_lost_stays_ready_until_the_timeout_then_retries(mk: Harness) -> None:
    await admitted_on(mk, "w1")
    await mk.clock.advance(60)
    mk.remotes["w1"].mark_disconnected()
    await mk.clock.advance(100)
    assert await mk.reconcile() == Result.after(800.0)
    assert mk.check()["state"] == "Ready"
    await mk.clock.advance(800)
    await mk.reconcile()
    assert (mk.check()["state"], mk.check()["message"]) == (
        "Retry",
        'Admitting remote lost, Previously: "Ready"',
    )


async def test_admitting_copy_gone_on_a_reachable_worker_retries_at_once(mk: Harness) -> None:
    await admitted_on(mk, "w1")
    mk.workers["w1"].api.remove_object(WORKLOAD.resource_label, "ns", "wl")
    await mk.reconcile()
    assert (mk.check()["state"], mk.check()["message"]) == (
        "Retry",
        'Admitting remote no longer exists, Previously: "Ready"',
    )


async def test_local_deletion_removes_job_then_workload_on_reachable_workers(mk: Harness) -> None:
    await admitted_on(mk, "w1")
    remote = mk.remote("w1")
    assert remote is not None
    remote["metadata"]["finalizers"] = ["kueue.x-k8s.io/resource-in-use"]
    mk.workers["w1"].put(WORKLOAD, remote)
    mk.reconciler.workload_deleted(mk.local())
    mk.manager.api.remove_object(WORKLOAD.resource_label, "ns", "wl")
    assert await mk.reconcile() == Result.done()
    assert mk.remote_job("w1") is None and mk.remote("w1") is None
    methods = [
        (r.method, r.path.rsplit("/", 2)[-2])
        for r in mk.workers["w1"].api.requests
        if r.method in ("PUT", "DELETE")
    ]
    assert methods[-3:] == [("DELETE", "jobs"), ("PUT", "workloads"), ("DELETE", "workloads")]
    assert "ns/wl" not in mk.reconciler.deleted


async def test_the_cluster_is_recorded_before_the_job_is_created_on_it(mk: Harness) -> None:
    """A pass that fails (or is killed) between the two writes leaves the winner recorded as the
    Workload's clusterName and no job yet, which the next pass creates: a job never stands on a
    worker that no record names (a restarted process that could not reach that worker would
    otherwise dispatch the Workload to another worker as well)."""
    await dispatched(mk)
    mk.set_remote_condition("w1", "Admitted")
    refused = mk.workers["w1"].api.fail_when(
        lambda request: request.method == "POST" and "/jobs" in request.path,
        lambda request: httpx.Response(503, content=b"unavailable"),
        times=1,
    )
    with pytest.raises(KubeError):
        await mk.reconcile()
    assert refused.times == 0, "the job create was attempted"
    assert mk.local()["status"]["clusterName"] == "w1" and mk.check()["state"] == "Ready"
    assert mk.remote_job("w1") is None
    await mk.reconcile()
    assert mk.remote_job("w1") is not None and mk.remote_job("w2") is None


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(httpx.ConnectError("connection refused"), id="no answer"),
        pytest.param(httpx.Response(503, content=b"apiserver is shutting down"), id="shutting down"),
    ],
)
async def test_a_worker_that_does_not_answer_is_left_out_and_marked_lost(
    mk: Harness, answer: httpx.Response | httpx.ConnectError
) -> None:
    """A worker whose API server stops (its watches still open while it drains them) does not fail
    the passes of the Workloads: they go on with the other workers, and the worker is reported lost
    so that it is reconnected."""

    def respond(request: object) -> httpx.Response:
        if isinstance(answer, Exception):
            raise answer
        return answer

    mk.workers["w1"].api.fail_when(lambda request: True, respond)
    mk.job()
    mk.workload()
    assert await mk.reconcile() == Result.done()
    assert mk.local()["status"]["nominatedClusterNames"] == ["w2"]
    assert mk.remote("w2") is not None
    assert mk.lost == ["w1"] and not mk.remotes["w1"].connected
    await mk.reconcile()
    assert mk.lost == ["w1"], "a worker already disconnected is not reported twice"


async def test_a_workers_own_job_of_the_same_name_is_never_touched(mk: Harness) -> None:
    await dispatched(mk)
    theirs = {
        "metadata": {"name": "job", "namespace": "ns", "labels": {"owner": "worker-team"}},
        "spec": {"suspend": False},
    }
    mk.workers["w1"].put(JOB, theirs)
    mk.set_remote_condition("w1", "Admitted")
    with pytest.raises(RemoteObjectNotOwnedError):
        await mk.reconcile()
    assert mk.remote_job("w1") == theirs and mk.check()["state"] == "Pending"
    local = mk.local()
    local["status"]["conditions"] = []  # quota released: the copies are removed, their Job is not
    mk.manager.put(WORKLOAD, local)
    await mk.reconcile()
    assert mk.remote("w1") is None and mk.remote_job("w1") == theirs


async def test_rejections_use_kueues_messages(mk: Harness) -> None:
    mk.job("unmanaged", managed_by=None)
    mk.workload("a", job="unmanaged")
    await mk.reconcile("a")
    assert (mk.check("a")["state"], mk.check("a")["message"]) == (
        "Rejected",
        'The owner is not managed by Kueue: Expecting spec.managedBy to be "kueue.x-k8s.io/multikueue" not "", Previously: "Pending"',
    )
    mk.workload("b", kind="Widget", api_version="example.com/v1")
    await mk.reconcile("b")
    assert (
        mk.check("b")["message"]
        == 'No multikueue adapter found for owner kind "example.com/v1, Kind=Widget", Previously: "Pending"'
    )
    assert mk.remote("w1", "b") is None


async def test_other_checks_must_be_ready_before_dispatch(mk: Harness) -> None:
    mk.job()
    local = mk.workload()
    local["status"]["admissionChecks"].append({"name": "prov", "state": "Pending", "message": ""})
    mk.manager.put(WORKLOAD, local)
    await mk.reconcile()
    assert mk.remote("w1") is None and "nominatedClusterNames" not in mk.local()["status"]


async def test_external_dispatcher_uses_the_nominated_clusters() -> None:
    mk = Harness(dispatcher="example.com/my-dispatcher")
    await mk.connect("w1")
    mk.job()
    mk.workload(nominatedClusterNames=["w2"])
    with pytest.raises(Exception, match="cluster w2: no remote client for nominated cluster"):
        await mk.reconcile()
    await mk.connect("w2")
    await mk.reconcile()
    assert mk.remote("w1") is None and mk.remote("w2") is not None
    await mk.close()


async def test_a_copy_deactivated_on_our_request_is_not_out_of_sync(mk: Harness) -> None:
    await admitted_on(mk, "w1")
    local = mk.local()
    local["status"]["conditions"].append(
        {
            "type": "Evicted",
            "status": "True",
            "reason": "Preempted",
            "message": "p",
            "lastTransitionTime": "2026-01-01T00:00:30Z",
        }
    )
    mk.manager.put(WORKLOAD, local)
    await mk.reconcile()
    remote = mk.remote("w1")
    assert remote is not None
    remote["spec"]["active"] = False  # the worker's Kueue carries out the DeactivationTarget
    mk.workers["w1"].put(WORKLOAD, remote)
    await mk.reconcile()
    assert mk.remote("w1") is not None and mk.remote_job("w1") is not None
    remote = mk.remote("w1")
    assert remote is not None
    remote["status"]["conditions"] = [
        c for c in remote["status"]["conditions"] if c["type"] != "DeactivationTarget"
    ]
    mk.workers["w1"].put(WORKLOAD, remote)
    await mk.reconcile()  # any other spec change of a copy is drift: the copy is removed (Kueue)
    assert mk.remote("w1") is None


async def test_a_workers_own_workload_of_the_same_name_is_never_used_nor_deleted(mk: Harness) -> None:
    theirs = {
        "metadata": {"name": "wl", "namespace": "ns", "labels": {"team": "worker"}},
        "spec": {"queueName": "q"},
    }
    mk.workers["w1"].put(WORKLOAD, theirs)
    mk.job()
    mk.workload()
    await mk.reconcile()
    assert mk.local()["status"]["nominatedClusterNames"] == ["w2"]
    mk.set_remote_condition("w2", "Admitted")
    await mk.reconcile()
    assert mk.check()["message"] == 'The workload was admitted on "w2"'
    mk.reconciler.workload_deleted(mk.local())
    mk.manager.api.remove_object(WORKLOAD.resource_label, "ns", "wl")
    await mk.reconcile()
    assert mk.remote("w1") == theirs and mk.remote("w2") is None


KEEP_PENDING = """
integrations:
  frameworks: [batch/job]
  externalFrameworks:
  - name: TrainingRun.v1alpha1.ml.example.com
    adapter:
      suspend: {path: spec.paused}
      podSets: [{template: spec.template}]
      finished: "has(object.status) && has(object.status.phase)"
"""


async def test_a_kind_without_managed_by_is_kept_pending_while_its_copy_runs() -> None:
    mk = Harness(config=KEEP_PENDING, external=("TrainingRun.v1alpha1.ml.example.com",))
    await mk.connect()
    mk.manager.put(
        TRAINING,
        {
            "metadata": {"name": "train", "namespace": "ns"},
            "spec": {"paused": True, "template": {}},
            "status": {"phase": ""},
        },
    )
    mk.workload(job="train", kind="TrainingRun", api_version="ml.example.com/v1alpha1")
    await mk.reconcile()
    assert mk.remote("w1") is not None
    mk.set_remote_condition("w1", "Admitted")
    assert await mk.reconcile() == Result.after(900.0)
    check = mk.check()
    assert (check["state"], check["message"]) == ("Pending", 'The workload was admitted on "w1"')
    assert mk.local()["status"]["clusterName"] == "w1" and mk.remote("w2") is None
    copy = mk.workers["w1"].get(TRAINING, "train", "ns")
    assert copy is not None and copy["spec"] == {"paused": True, "template": {}}
    copy["status"] = {"phase": "Running"}
    mk.workers["w1"].put(TRAINING, copy)
    await mk.reconcile()
    local_job = mk.manager.get(TRAINING, "train", "ns")
    assert (
        local_job is not None
        and local_job["status"] == {"phase": "Running"}
        and local_job["spec"]["paused"] is True
    )
    await mk.clock.advance(10)
    mk.remotes["w1"].mark_disconnected()
    await mk.clock.advance(900)
    await mk.reconcile()  # a kept-pending check is dispatched too: losing its worker is a Retry
    assert (mk.check()["state"], mk.check()["message"]) == (
        "Retry",
        'Admitting remote lost, Previously: "Pending"',
    )
    await mk.close()


async def test_a_delayed_topology_request_is_released_by_the_admitting_copy(mk: Harness) -> None:
    mk.job()
    assignment = {"name": "main", "count": 1, "delayedTopologyRequest": "Pending"}
    mk.workload(admission={"clusterQueue": "cq", "podSetAssignments": [assignment]})
    await mk.reconcile()
    remote = mk.remote("w1")
    assert remote is not None
    remote["status"] = {
        "admission": {
            "clusterQueue": "cq",
            "podSetAssignments": [
                {"name": "main", "count": 1, "topologyAssignment": {"levels": ["host"], "slices": []}}
            ],
        },
        "conditions": [
            {
                "type": "Admitted",
                "status": "True",
                "reason": "Admitted",
                "message": "",
                "lastTransitionTime": "2026-01-01T00:00:10Z",
            }
        ],
    }
    mk.workers["w1"].put(WORKLOAD, remote)
    await mk.reconcile()
    [local_assignment] = mk.local()["status"]["admission"]["podSetAssignments"]
    assert local_assignment["delayedTopologyRequest"] == "Ready"
    assert mk.check()["state"] == "Ready"
