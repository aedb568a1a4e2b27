"""The job controller's Workload status writes, as Kueue's ``pkg/workload/patching`` sends them.

With ``WorkloadRequestUseMergePatch`` off (Kueue's default) each is a forced server-side apply of
``workloads/status``, strict (the read ``resourceVersion`` in the body), under Kueue's own field
manager:

* ``SetConditionAndUpdate`` (PodsReady): one condition on an empty base, as
  ``kueue-job-controller-PodsReady``;
* ``workloadfinish.Finish`` and the eviction step (``PatchAdmissionStatus``): the whole admission
  state, as ``kueue-admission``;
* ``UpdateReclaimablePods``: ``reclaimablePods`` alone, as ``kueue-reclaimable-pods``.

With the gate on, each is a strict merge patch holding the changed field. These tests pin both
bodies, that nothing else of the stored Workload changes, and that a stale read fails with Conflict.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from reconciler.job_reconciler import JobReconciler
from reconciler.ports import ConflictError
from shared.kueue.admission_apply import ADMISSION_MANAGED_CONDITIONS
from shared.models.workload import Workload
from tests.unit.reconciler.conftest import FakeClock, admit, golden_job, job_key
from tests.unit.reconciler.fakes import FakeCluster, Write

WORKLOAD = "job-sample-43252"


async def converge(reconciler: JobReconciler, *, rounds: int = 6) -> None:
    for _ in range(rounds):
        await reconciler.reconcile(job_key())


def workload_of(cluster: FakeCluster) -> dict[str, Any]:
    workload = cluster.find("Workload", "golden", WORKLOAD)
    assert workload is not None
    return workload


def status_writes_since(cluster: FakeCluster, start: int) -> list[Write]:
    return [w for w in cluster.writes[start:] if w.kind == "Workload" and w.subresource == "status"]


def set_job_status(cluster: FakeCluster, status: dict[str, Any]) -> None:
    key = next(k for k in cluster.objects if k[1] == "Job")
    cluster.objects[key]["status"] = status


def complete_job(cluster: FakeCluster) -> None:
    """The batch Job's status once all its pods succeeded (the job controller of 1.36)."""
    set_job_status(
        cluster,
        {
            "succeeded": 4,
            "conditions": [
                {"type": "SuccessCriteriaMet", "status": "True"},
                {
                    "type": "Complete",
                    "status": "True",
                    "message": "Reached expected number of succeeded pods",
                },
            ],
        },
    )


async def admitted(cluster: FakeCluster, reconciler: JobReconciler) -> None:
    cluster.add(golden_job())
    await converge(reconciler)
    admit(cluster, WORKLOAD)
    await converge(reconciler)


@pytest.fixture
def merge_patching(make_reconciler: Callable[..., JobReconciler]) -> JobReconciler:
    """A reconciler whose Kueue runs with ``WorkloadRequestUseMergePatch`` on."""
    return make_reconciler(workload_request_use_merge_patch=True)


def identity(workload: dict[str, Any]) -> dict[str, Any]:
    """``baseSSAWorkload``'s metadata of a stored Workload, strict."""
    metadata = workload["metadata"]
    keys = ("name", "namespace", "uid", "generation", "labels", "annotations", "resourceVersion")
    return {key: metadata[key] for key in keys if metadata.get(key)}


async def test_pods_ready_is_applied_alone_as_the_job_controllers_condition_manager(
    cluster: FakeCluster, reconciler: JobReconciler, clock: FakeClock
) -> None:
    cluster.add(golden_job())
    await reconciler.reconcile(job_key())  # creates the Workload
    before = workload_of(cluster)
    clock.advance(7)
    start = len(cluster.writes)
    await reconciler.reconcile(job_key())
    writes = status_writes_since(cluster, start)
    assert [(w.verb, w.field_manager) for w in writes] == [("apply", "kueue-job-controller-PodsReady")]
    body = writes[0].body
    assert (body["apiVersion"], body["kind"]) == ("kueue.x-k8s.io/v1beta2", "Workload")
    assert body["metadata"] == identity(before)
    assert body["status"] == {
        "conditions": [
            {
                "type": "PodsReady",
                "status": "False",
                "observedGeneration": before["metadata"]["generation"],
                "lastTransitionTime": "2026-11-22T02:34:10Z",
                "reason": "WaitForStart",
                "message": "Not all pods are ready or succeeded",
            }
        ]
    }
    assert workload_of(cluster)["spec"] == before["spec"], "a status apply leaves the spec alone"


async def test_finished_applies_the_whole_admission_state_as_kueue_admission(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    await admitted(cluster, reconciler)
    before = workload_of(cluster)
    complete_job(cluster)
    start = len(cluster.writes)
    await reconciler.reconcile(job_key())
    writes = status_writes_since(cluster, start)
    assert [(w.verb, w.field_manager) for w in writes] == [("apply", "kueue-admission")]
    body = writes[0].body
    assert body["metadata"] == identity(before)
    assert set(body["status"]) == {"admission", "conditions"}, "what prepareWorkloadPatch carries here"
    assert body["status"]["admission"] == before["status"]["admission"]
    before_types = [c["type"] for c in before["status"]["conditions"]]
    applied = [c["type"] for c in body["status"]["conditions"]]
    assert applied == [t for t in ADMISSION_MANAGED_CONDITIONS if t in {*before_types, "Finished"}], (
        "every condition Kueue's admission manages, in admissionManagedConditions' order"
    )
    finished = next(c for c in body["status"]["conditions"] if c["type"] == "Finished")
    assert (finished["status"], finished["reason"]) == ("True", "Succeeded")
    after = workload_of(cluster)
    assert after["status"]["admission"] == before["status"]["admission"]
    assert [c["type"] for c in after["status"]["conditions"]] == [*before_types, "Finished"]


async def test_reclaimable_pods_are_applied_and_removed_by_leaving_them_out(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    await admitted(cluster, reconciler)
    set_job_status(cluster, {"succeeded": 3, "active": 1})  # completions 4, parallelism 2: 1 reclaimable
    start = len(cluster.writes)
    await reconciler.reconcile(job_key())
    writes = status_writes_since(cluster, start)
    assert [(w.verb, w.field_manager, w.body["status"]) for w in writes] == [
        ("apply", "kueue-reclaimable-pods", {"reclaimablePods": [{"name": "main", "count": 1}]})
    ]
    assert workload_of(cluster)["status"]["reclaimablePods"] == [{"name": "main", "count": 1}]

    set_job_status(cluster, {"active": 2})
    start = len(cluster.writes)
    await reconciler.reconcile(job_key())
    writes = status_writes_since(cluster, start)
    assert [(w.verb, w.field_manager, w.body["status"]) for w in writes] == [
        ("apply", "kueue-reclaimable-pods", {})
    ]
    assert "reclaimablePods" not in workload_of(cluster)["status"]


async def test_a_status_apply_from_a_stale_read_conflicts(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    await admitted(cluster, reconciler)
    stale = Workload.from_wire(workload_of(cluster))
    key = next(k for k in cluster.objects if k[1] == "Workload")
    cluster.objects[key]["metadata"]["resourceVersion"] = "999999"  # someone else wrote meanwhile
    with pytest.raises(ConflictError):
        await reconciler._workloads.finish(stale, reason="Succeeded", message="done")
    assert "Finished" not in [c["type"] for c in workload_of(cluster)["status"]["conditions"]]


@pytest.mark.parametrize(
    ("merge_patch", "expected"),
    [
        (
            False,
            [
                ("apply", "status", "kueue-job-controller-PodsReady"),
                ("apply", "status", "kueue-admission"),
                ("patch", None, None),
            ],
        ),
        (True, [("patch", "status", None), ("patch", "status", None), ("patch", None, None)]),
    ],
    ids=["applies", "merge-patch-gate"],
)
async def test_passes_that_only_read_or_set_one_condition_never_parse_the_workload(
    cluster: FakeCluster,
    make_reconciler: Callable[..., JobReconciler],
    monkeypatch: pytest.MonkeyPatch,
    merge_patch: bool,
    expected: list[tuple[str, str | None, str | None]],
) -> None:
    """Decisions read the Workload as the cache holds it; PodsReady, Finished and the finalizer are
    written from it too, with the gate on or off. A model is parsed only to change more than one
    condition or to compute a verdict again (``reconciler.workload_sync.ReadWorkload``)."""
    reconciler = make_reconciler(workload_request_use_merge_patch=merge_patch)
    await admitted(cluster, reconciler)  # started, every verdict of this Workload remembered
    parse = Workload.from_wire
    parsed: list[str] = []

    def counting(wire: dict[str, Any]) -> Workload:
        parsed.append(str(wire["metadata"]["name"]))
        return parse(wire)

    monkeypatch.setattr(Workload, "from_wire", counting)
    start = len(cluster.writes)
    await converge(reconciler, rounds=2)
    assert cluster.writes[start:] == [], "converged: nothing to write"
    set_job_status(cluster, {"ready": 2, "active": 2})
    await converge(reconciler, rounds=2)  # PodsReady=True, then its echo
    set_job_status(
        cluster, {"succeeded": 4, "conditions": [{"type": "Complete", "status": "True", "message": "done"}]}
    )
    await converge(reconciler, rounds=3)  # Finished, finalizer released, finished
    writes = [
        (w.verb, w.subresource, w.field_manager) for w in cluster.writes[start:] if w.kind == "Workload"
    ]
    assert writes == expected
    conditions = {c["type"]: c["status"] for c in workload_of(cluster)["status"]["conditions"]}
    assert (conditions["PodsReady"], conditions["Finished"]) == ("True", "True")
    assert not workload_of(cluster)["metadata"].get("finalizers"), "kueue.x-k8s.io/resource-in-use released"
    assert parsed == []


async def test_with_the_merge_patch_gate_pods_ready_is_a_conditions_patch_with_the_read_resource_version(
    cluster: FakeCluster, merge_patching: JobReconciler
) -> None:
    cluster.add(golden_job())
    await merge_patching.reconcile(job_key())  # creates the Workload
    before = workload_of(cluster)
    start = len(cluster.writes)
    await merge_patching.reconcile(job_key())
    writes = status_writes_since(cluster, start)
    assert [(w.verb, set(w.body)) for w in writes] == [("patch", {"metadata", "status"})]
    body = writes[0].body
    assert body["metadata"] == {"resourceVersion": before["metadata"]["resourceVersion"]}
    assert list(body["status"]) == ["conditions"]
    assert [c["type"] for c in body["status"]["conditions"]] == ["PodsReady"]
    after = workload_of(cluster)
    assert after["spec"] == before["spec"], "a status patch leaves the spec alone"


async def test_with_the_merge_patch_gate_finished_is_a_conditions_patch_keeping_every_other_condition(
    cluster: FakeCluster, merge_patching: JobReconciler
) -> None:
    await admitted(cluster, merge_patching)
    before = workload_of(cluster)
    complete_job(cluster)
    start = len(cluster.writes)
    await merge_patching.reconcile(job_key())
    writes = status_writes_since(cluster, start)
    assert [w.verb for w in writes] == ["patch"]
    body = writes[0].body
    assert body["metadata"] == {"resourceVersion": before["metadata"]["resourceVersion"]}
    assert list(body["status"]) == ["conditions"], "a merge patch replaces the list: all conditions go"
    before_types = [c["type"] for c in before["status"]["conditions"]]
    assert [c["type"] for c in body["status"]["conditions"]] == [*before_types, "Finished"]
    after = workload_of(cluster)
    assert after["status"]["admission"] == before["status"]["admission"]
    assert [c["type"] for c in after["status"]["conditions"]] == [*before_types, "Finished"]


async def test_with_the_merge_patch_gate_reclaimable_pods_are_patched_and_removed_with_null(
    cluster: FakeCluster, merge_patching: JobReconciler
) -> None:
    await admitted(cluster, merge_patching)
    set_job_status(cluster, {"succeeded": 3, "active": 1})  # completions 4, parallelism 2: 1 reclaimable
    start = len(cluster.writes)
    await merge_patching.reconcile(job_key())
    writes = status_writes_since(cluster, start)
    assert [(w.verb, w.body["status"]) for w in writes] == [
        ("patch", {"reclaimablePods": [{"name": "main", "count": 1}]})
    ]
    assert workload_of(cluster)["status"]["reclaimablePods"] == [{"name": "main", "count": 1}]

    set_job_status(cluster, {"active": 2})
    start = len(cluster.writes)
    await merge_patching.reconcile(job_key())
    writes = status_writes_since(cluster, start)
    assert [(w.verb, w.body["status"]) for w in writes] == [("patch", {"reclaimablePods": None})]
    assert "reclaimablePods" not in workload_of(cluster)["status"]


async def test_with_the_merge_patch_gate_a_status_patch_from_a_stale_read_conflicts(
    cluster: FakeCluster, merge_patching: JobReconciler
) -> None:
    await admitted(cluster, merge_patching)
    stale = Workload.from_wire(workload_of(cluster))
    key = next(k for k in cluster.objects if k[1] == "Workload")
    cluster.objects[key]["metadata"]["resourceVersion"] = "999999"  # someone else wrote meanwhile
    with pytest.raises(ConflictError):
        await merge_patching._workloads.patch_status(stale, fields=("conditions",))
