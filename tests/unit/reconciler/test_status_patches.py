"""Workload status writes that change one status field go out as Kueue's merge patches.

Kueue's ``workload.SetConditionAndUpdate`` (PodsReady), ``workloadfinish.Finish`` (Finished) and
``workload.UpdateReclaimablePods`` write through ``clientutil.PatchStatus`` with
``WorkloadRequestUseMergePatch`` on: a merge patch of ``workloads/status`` holding the changed field
and, strict by default, the read ``resourceVersion``. These tests pin that body, that nothing else of
the stored Workload changes, and that a stale read still fails with Conflict.
"""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.job_reconciler import JobReconciler
from reconciler.ports import ConflictError
from shared.models.workload import Workload
from tests.unit.reconciler.conftest import admit, golden_job, job_key
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


async def admitted(cluster: FakeCluster, reconciler: JobReconciler) -> None:
    cluster.add(golden_job())
    await converge(reconciler)
    admit(cluster, WORKLOAD)
    await converge(reconciler)


async def test_pods_ready_is_a_conditions_patch_with_the_read_resource_version(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    cluster.add(golden_job())
    await reconciler.reconcile(job_key())  # creates the Workload
    before = workload_of(cluster)
    start = len(cluster.writes)
    await reconciler.reconcile(job_key())
    writes = status_writes_since(cluster, start)
    assert [(w.verb, set(w.body)) for w in writes] == [("patch", {"metadata", "status"})]
    body = writes[0].body
    assert body["metadata"] == {"resourceVersion": before["metadata"]["resourceVersion"]}
    assert list(body["status"]) == ["conditions"]
    assert [c["type"] for c in body["status"]["conditions"]] == ["PodsReady"]
    after = workload_of(cluster)
    assert after["spec"] == before["spec"], "a status patch leaves the spec alone"


async def test_finished_is_a_conditions_patch_keeping_every_other_condition(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    await admitted(cluster, reconciler)
    before = workload_of(cluster)
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
    start = len(cluster.writes)
    await reconciler.reconcile(job_key())
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


async def test_reclaimable_pods_are_patched_and_removed_with_null(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    await admitted(cluster, reconciler)
    set_job_status(cluster, {"succeeded": 3, "active": 1})  # completions 4, parallelism 2: 1 reclaimable
    start = len(cluster.writes)
    await reconciler.reconcile(job_key())
    writes = status_writes_since(cluster, start)
    assert [(w.verb, w.body["status"]) for w in writes] == [
        ("patch", {"reclaimablePods": [{"name": "main", "count": 1}]})
    ]
    assert workload_of(cluster)["status"]["reclaimablePods"] == [{"name": "main", "count": 1}]

    set_job_status(cluster, {"active": 2})
    start = len(cluster.writes)
    await reconciler.reconcile(job_key())
    writes = status_writes_since(cluster, start)
    assert [(w.verb, w.body["status"]) for w in writes] == [("patch", {"reclaimablePods": None})]
    assert "reclaimablePods" not in workload_of(cluster)["status"]


async def test_a_status_patch_from_a_stale_read_conflicts(
    cluster: FakeCluster, reconciler: JobReconciler
) -> None:
    await admitted(cluster, reconciler)
    stale = Workload.from_wire(workload_of(cluster))
    key = next(k for k in cluster.objects if k[1] == "Workload")
    cluster.objects[key]["metadata"]["resourceVersion"] = "999999"  # someone else wrote meanwhile
    with pytest.raises(ConflictError):
        await reconciler._workloads.patch_status(stale, fields=("conditions",))


async def test_passes_that_only_read_or_set_one_condition_never_parse_the_workload(
    cluster: FakeCluster, reconciler: JobReconciler, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Decisions read the Workload as the cache holds it; PodsReady, Finished and the finalizer are
    written from it too. A model is parsed only to change more than one condition or to compute a
    verdict again (``reconciler.workload_sync.ReadWorkload``)."""
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
    writes = [(w.verb, w.subresource) for w in cluster.writes[start:] if w.kind == "Workload"]
    assert writes == [("patch", "status"), ("patch", "status"), ("patch", None)]
    conditions = {c["type"]: c["status"] for c in workload_of(cluster)["status"]["conditions"]}
    assert (conditions["PodsReady"], conditions["Finished"]) == ("True", "True")
    assert not workload_of(cluster)["metadata"].get("finalizers"), "kueue.x-k8s.io/resource-in-use released"
    assert parsed == []
