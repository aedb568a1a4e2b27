"""``reconciler.verdicts``: a remembered equivalence verdict is reused only while its inputs are equal.

Two kinds of proof: every input the verdict reads invalidates it when changed (and what it does not
read does not), and whole lives through the reconciler make exactly the same writes and events
with the memory as without it, while it is actually used.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from reconciler import verdicts as verdicts_module
from reconciler.job_reconciler import JobReconciler
from reconciler.verdicts import STATUS_BLIND_ADAPTERS, EquivalenceVerdicts, is_status_blind
from shared.frameworks.batch_job import BatchJobAdapter
from shared.frameworks.copy_on_write import copy_on_write
from shared.kueue.jobmeta import max_exec_time_seconds
from tests.unit.reconciler.conftest import admit, golden_job, job_key, set_condition
from tests.unit.reconciler.fakes import FakeCluster
from tests.unit.reconciler.test_job_lifecycle import WORKLOAD, evict
from tests.unit.reconciler.test_stop_started_job import STARTED, set_job_status

WireDict = dict[str, Any]
KEY = "batch/Job/golden/sample"


def workload() -> WireDict:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": WORKLOAD,
            "namespace": "golden",
            "uid": "w1",
            "resourceVersion": "7",
            "generation": 1,
            "labels": {"kueue.x-k8s.io/job-uid": "u"},
            "annotations": {"a": "b"},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "sample", "uid": "u"}],
            "finalizers": ["kueue.x-k8s.io/resource-in-use"],
        },
        "spec": {"queueName": "q", "podSets": [{"name": "main", "count": 2, "template": {"spec": {}}}]},
        "status": {
            "admission": {"clusterQueue": "cq", "podSetAssignments": [{"name": "main", "count": 2}]},
            "admissionChecks": [],
            "conditions": [
                {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
                {"type": "Admitted", "status": "True", "reason": "Admitted"},
                {"type": "PodsReady", "status": "False", "reason": "WaitForStart"},
            ],
        },
    }


def remembered() -> EquivalenceVerdicts:
    verdicts = EquivalenceVerdicts()
    verdicts.remember(KEY, job=golden_job(), workload=workload(), flavors={"f": ({}, [])}, equivalent=True)
    return verdicts


def recall(verdicts: EquivalenceVerdicts, job: WireDict, wl: WireDict, flavors: Any = None) -> bool | None:
    return verdicts.recall(KEY, job=job, workload=wl, flavors={"f": ({}, [])} if flavors is None else flavors)


def _set(path: str, value: Any) -> Callable[[WireDict], None]:
    def change(obj: WireDict) -> None:
        *parents, last = path.split(".")
        target = obj
        for key in parents:
            target = target.setdefault(key, {}) if isinstance(target, dict) else target[int(key)]
        if isinstance(target, list):
            target[int(last)] = value
        else:
            target[last] = value

    return change


UNREAD_JOB_CHANGES = {
    "resourceVersion": _set("metadata.resourceVersion", "99"),
    "generation": _set("metadata.generation", 5),
    "managedFields": _set("metadata.managedFields", [{"manager": "m"}]),
}
READ_JOB_CHANGES = {
    "spec": _set("spec.parallelism", 3),
    "status": _set("status.active", 1),
    "labels": _set("metadata.labels.kueue.x-k8s.io/max-exec-time-seconds", "60"),
    "annotations": _set("metadata.annotations", {"x": "y"}),
    "uid": _set("metadata.uid", "other"),
}
UNREAD_WORKLOAD_CHANGES = {
    "resourceVersion": _set("metadata.resourceVersion", "99"),
    "finalizers": _set("metadata.finalizers", []),
    "PodsReady": _set("status.conditions.2", {"type": "PodsReady", "status": "True", "reason": "PodsReady"}),
    "Finished": lambda w: w["status"]["conditions"].append({"type": "Finished", "status": "True"}),
    "requeueState": _set("status.requeueState", {"count": 1}),
}
READ_WORKLOAD_CHANGES = {
    "spec": _set("spec.podSets.0.count", 3),
    "queueName": _set("spec.queueName", "other"),
    "admission": _set("status.admission.clusterQueue", "other"),
    "admissionChecks": _set("status.admissionChecks", [{"name": "check", "state": "Ready"}]),
    "QuotaReserved": _set("status.conditions.0.status", "False"),
    "Admitted": _set("status.conditions.1.status", "False"),
    "labels": _set("metadata.labels.kueue.x-k8s.io/multikueue-origin", "x"),
    "annotations": _set("metadata.annotations.kueue.x-k8s.io/elastic-job", "true"),
    "ownerReferences": _set("metadata.ownerReferences", []),
    "name": _set("metadata.name", "renamed"),
}


def test_equal_inputs_recall_the_verdict_and_others_do_not() -> None:
    verdicts = remembered()
    assert recall(verdicts, golden_job(), workload()) is True
    assert recall(verdicts, golden_job(), workload(), flavors={"f": ({"zone": "a"}, [])}) is None
    other_uid = workload()
    other_uid["metadata"]["uid"] = "w2"
    assert recall(verdicts, golden_job(), other_uid) is None
    assert EquivalenceVerdicts().recall(KEY, job=golden_job(), workload=workload(), flavors={}) is None
    verdicts.forget(KEY)
    assert recall(verdicts, golden_job(), workload()) is None


def test_a_recall_stands_for_the_objects_it_was_asked_about_and_changes_still_count() -> None:
    """A hit re-points the verdict at the objects of the call (the next pass over them compares by
    identity); unread changes one after the other keep it, a read change after them forgets it."""
    verdicts = remembered()
    job, wl = golden_job(), workload()
    UNREAD_JOB_CHANGES["resourceVersion"](job)
    assert recall(verdicts, job, wl) is True
    identical: list[bool] = []
    original_same_job = verdicts_module.same_job

    def watching_same_job(first: Any, second: Any, **kwargs: Any) -> bool:
        identical.append(first is second)
        return original_same_job(first, second, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(verdicts_module, "same_job", watching_same_job)
        assert recall(verdicts, job, wl) is True
    assert identical == [True], "the second recall compares the job by identity"
    # informer objects are never changed in place: every change is a new object
    later, later_wl = copy.deepcopy(job), copy.deepcopy(wl)
    UNREAD_JOB_CHANGES["generation"](later)
    UNREAD_WORKLOAD_CHANGES["finalizers"](later_wl)
    assert recall(verdicts, later, later_wl) is True
    changed = copy.deepcopy(later)
    READ_JOB_CHANGES["spec"](changed)
    assert recall(verdicts, changed, later_wl) is None


@pytest.mark.parametrize("change", list(UNREAD_JOB_CHANGES))
def test_job_changes_the_verdict_does_not_read_keep_it(change: str) -> None:
    job = golden_job()
    UNREAD_JOB_CHANGES[change](job)
    assert recall(remembered(), job, workload()) is True


@pytest.mark.parametrize("change", list(READ_JOB_CHANGES))
def test_any_other_job_change_forgets_it(change: str) -> None:
    job = golden_job()
    READ_JOB_CHANGES[change](job)
    assert recall(remembered(), job, workload()) is None


@pytest.mark.parametrize("change", list(UNREAD_WORKLOAD_CHANGES))
def test_workload_changes_the_verdict_does_not_read_keep_it(change: str) -> None:
    wl = workload()
    UNREAD_WORKLOAD_CHANGES[change](wl)
    assert recall(remembered(), golden_job(), wl) is True


@pytest.mark.parametrize("change", list(READ_WORKLOAD_CHANGES))
def test_workload_changes_the_verdict_reads_forget_it(change: str) -> None:
    wl = workload()
    READ_WORKLOAD_CHANGES[change](wl)
    assert recall(remembered(), golden_job(), wl) is None


def test_a_status_blind_verdict_ignores_the_job_status_and_only_then() -> None:
    verdicts = EquivalenceVerdicts()
    verdicts.remember(
        KEY, job=golden_job(), workload=workload(), flavors={}, equivalent=True, status_blind=True
    )
    running = golden_job()
    running["status"] = {"active": 2, "startTime": "2026-11-22T02:34:05Z"}
    assert verdicts.recall(KEY, job=running, workload=workload(), flavors={}, status_blind=True) is True
    assert verdicts.recall(KEY, job=running, workload=workload(), flavors={}) is None
    respecified = golden_job()
    respecified["spec"]["parallelism"] = 3
    assert verdicts.recall(KEY, job=respecified, workload=workload(), flavors={}, status_blind=True) is None


STATUSES: list[dict[str, Any]] = [
    {},
    {"active": 2, "ready": 2, "startTime": "2026-11-22T02:34:05Z"},
    {"succeeded": 4, "conditions": [{"type": "Complete", "status": "True"}]},
    {"failed": 1, "conditions": [{"type": "Failed", "status": "True"}], "uncountedTerminatedPods": {}},
    {"conditions": [{"type": "Suspended", "status": "True", "reason": "JobSuspended"}]},
]


@pytest.mark.parametrize("suspend", [True, False])
def test_what_a_status_blind_adapter_answers_does_not_depend_on_the_status(suspend: bool) -> None:
    """What the verdict reads from a job: pod sets, suspension, name, uid, labels (max exec time)."""
    assert BatchJobAdapter in STATUS_BLIND_ADAPTERS
    bare = golden_job(suspend=suspend)
    expected = BatchJobAdapter(copy.deepcopy(bare))
    for status in STATUSES:
        job = copy.deepcopy(bare)
        job["status"] = copy.deepcopy(status)
        adapter = BatchJobAdapter(job)
        assert [p.model_dump() for p in adapter.pod_sets()] == [p.model_dump() for p in expected.pod_sets()]
        assert adapter.is_suspended() == expected.is_suspended()
        assert max_exec_time_seconds(job) == max_exec_time_seconds(bare)
    assert is_status_blind(copy_on_write(expected, BatchJobAdapter))


def test_memory_is_bounded() -> None:
    verdicts = EquivalenceVerdicts(capacity=3)
    for index in range(5):
        verdicts.remember(
            f"k{index}", job={}, workload={"metadata": {"uid": "w"}}, flavors={}, equivalent=True
        )
    assert len(verdicts) <= 3


class Forgetful(EquivalenceVerdicts):
    """Never recalls anything: the reconciler computes every verdict, as before the memory."""

    def recall(self, job_key: str, **_: Any) -> bool | None:
        return None


class Counting(EquivalenceVerdicts):
    def __init__(self) -> None:
        super().__init__()
        self.hits = 0

    def recall(self, job_key: str, **inputs: Any) -> bool | None:
        found = super().recall(job_key, **inputs)
        self.hits += found is not None
        return found


def _pods_ready(cluster: FakeCluster) -> None:
    set_job_status(cluster, {"startTime": STARTED, "active": 2, "ready": 2})


def _finish(cluster: FakeCluster) -> None:
    set_job_status(
        cluster,
        {"succeeded": 4, "conditions": [{"type": "Complete", "status": "True", "message": "done"}]},
    )


LIVES: dict[str, list[Callable[[FakeCluster], None]]] = {
    "runs to completion": [lambda c: admit(c, WORKLOAD), _pods_ready, _finish],
    "preempted, requeued, admitted again": [
        lambda c: admit(c, WORKLOAD),
        _pods_ready,
        lambda c: evict(c, reason="Preempted", message="Preempted to accommodate a workload"),
        lambda c: set_job_status(c, {}),
        lambda c: set_condition(c, WORKLOAD, {"type": "Evicted", "status": "False", "reason": "Reset"}),
        lambda c: admit(c, WORKLOAD),
        _finish,
    ],
    "the job's template changes while suspended": [
        lambda c: c.objects[next(k for k in c.objects if k[1] == "Job")]["spec"]["template"]["spec"].update(
            {"hostname": "changed"}
        ),
        lambda c: admit(c, WORKLOAD),
    ],
}


@pytest.mark.parametrize("life", list(LIVES))
async def test_a_whole_life_makes_the_same_writes_and_events_with_the_memory(
    cluster: FakeCluster, make_reconciler: Callable[..., JobReconciler], life: str
) -> None:
    seeded = copy.deepcopy(cluster.objects)
    outcomes = []
    counting = Counting()
    for verdicts in (Forgetful(), counting):
        fake = FakeCluster()
        fake.objects = copy.deepcopy(seeded)
        subject = make_reconciler()
        for part in (subject, subject._workloads, subject._workloads._priority):
            part._reader = fake
        subject._writer = subject._workloads._writer = subject._control._writer = fake
        subject._events = subject._workloads._events = subject._control._events = fake
        subject._workloads._verdicts = verdicts
        fake.add(golden_job())
        for step in [lambda c: None, *LIVES[life]]:
            step(fake)
            for _ in range(6):
                try:
                    await subject.reconcile(job_key())
                except Exception as exc:  # a retried error is part of the outcome
                    fake.events.append(type(exc).__name__)  # type: ignore[arg-type]
        for write in fake.writes:  # the fake gives created objects random UIDs
            (write.body.get("metadata") or {}).pop("uid", None)
        outcomes.append(([(w.verb, w.kind, w.subresource, w.body) for w in fake.writes], fake.events))
    assert outcomes[0] == outcomes[1]
    assert counting.hits > 0, "the memory was used"
