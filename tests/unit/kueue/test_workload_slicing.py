"""Kueue's workload slicing (``pkg/workloadslicing``): slice names, annotations and the slice decision."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from shared.kueue.workload_slicing import (
    OUT_OF_SYNC_SLICE_MESSAGE,
    REPLACED_SLICE_MESSAGE,
    SliceCountError,
    decide_slices,
    enabled,
    job_generation,
    latest_active_slice,
    name_extra,
    normalize_active_slices,
    scaled_down,
    scheduler_replaced_message_for,
    slice_annotations,
    slice_name,
    slice_workload_name,
    sorted_unfinished,
)
from shared.models.workload import PodSet, Workload
from tests.unit.kueue.helpers import BATCH_JOB_GVK

GOLDEN_UID = "6b817d4a-659b-494a-b90b-4869cc58f3b7"


def kueue_elastic_name(*, kind: str, group: str, name: str, uid: str, generation: int) -> str:
    """Kueue's ``GetWorkloadNameForOwnerWithGVKAndGeneration``, written out independently of ours.

    1. extra = ``strconv.FormatInt(generation, 10)`` (decimal, no padding);
    2. hash = SHA-1 over ``Kind "\\n" Group "\\n" name "\\n" UID "\\n" extra`` (the newline before
       extra only because extra is non-empty; the API version is not hashed), as lower-case hex;
    3. prefix = ``lower(Kind) + "-" + name``, cut to 253 - 1 - 5 = 247 characters;
    4. name = prefix + "-" + the first 5 hex digits.
    """
    payload = f"{kind}\n{group}\n{name}\n{uid}\n{generation}".encode()
    digest = hashlib.sha1(payload, usedforsecurity=False).hexdigest()
    return f"{kind.lower()}-{name}"[:247] + "-" + digest[:5]


@pytest.mark.parametrize(
    ("name", "uid", "generation", "expected"),
    [
        # Kueue's own vector (reconciler_test.go: job "test-job" with UID "test-job", generation 0
        # on its fake client, elastic annotation, gate on); the same job without elasticity is
        # "job-test-job-ce737" there.
        ("test-job", "test-job", 0, "job-test-job-3991b"),
        # The golden Job: SHA-1("Job\nbatch\nsample\n6b817d4a-...\n1") = 7cb26c6c...,
        # SHA-1(... "\n2") = a59e37ef..., SHA-1(... "\n3") = 2aa773c0... (computed by hand with
        # hashlib; tests/unit/reconciler/test_elastic_jobs.py uses the first and the last).
        ("sample", GOLDEN_UID, 1, "job-sample-7cb26"),
        ("sample", GOLDEN_UID, 2, "job-sample-a59e3"),
        ("sample", GOLDEN_UID, 3, "job-sample-2aa77"),
    ],
)
def test_slice_names_are_kueues(name: str, uid: str, generation: int, expected: str) -> None:
    independent = kueue_elastic_name(kind="Job", group="batch", name=name, uid=uid, generation=generation)
    ours = slice_workload_name(
        owner_name=name, owner_uid=uid, owner_gvk=BATCH_JOB_GVK, generation=generation, max_length=253
    )
    assert ours == independent == expected


def elastic_job(*, generation: Any = 3, annotation: str = "true") -> dict[str, Any]:
    return {
        "metadata": {
            "name": "sample",
            "generation": generation,
            "annotations": {"kueue.x-k8s.io/elastic-job": annotation},
        }
    }


def test_name_extra_is_the_generation_only_for_an_elastic_job_with_the_gate_on() -> None:
    assert name_extra(elastic_job(), feature_gate=True) == "3"
    assert name_extra(elastic_job(), feature_gate=False) == ""
    assert name_extra(elastic_job(annotation="True"), feature_gate=True) == ""  # exact value, as Kueue
    assert not enabled({"metadata": {"annotations": None}}, feature_gate=True)


@pytest.mark.parametrize("generation", [None, "2", True, 1.5])
def test_a_missing_or_malformed_generation_reads_as_zero(generation: Any) -> None:
    assert job_generation(elastic_job(generation=generation)) == 0


def workload(
    name: str,
    *,
    count: int = 2,
    created: str = "2026-11-22T00:00:00Z",
    uid: str | None = None,
    reserved: bool = False,
    evicted: bool = False,
    finished: bool = False,
    replaces: str | None = None,
    origin: str | None = None,
) -> Workload:
    conditions = []
    for kind, present in (("QuotaReserved", reserved), ("Evicted", evicted), ("Finished", finished)):
        if present:
            conditions.append(
                {"type": kind, "status": "True", "reason": kind, "message": "", "lastTransitionTime": created}
            )
    annotations = {"kueue.x-k8s.io/elastic-job": "true"}
    if replaces:
        annotations["kueue.x-k8s.io/workload-slice-replacement-for"] = f"golden/{replaces}"
    if origin:
        annotations["kueue.x-k8s.io/workload-slice-name"] = origin
    return Workload.from_wire(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {
                "name": name,
                "namespace": "golden",
                "uid": uid or f"uid-{name}",
                "creationTimestamp": created,
                "annotations": annotations,
                "labels": {"kueue.x-k8s.io/job-uid": GOLDEN_UID},
            },
            "spec": {"podSets": [{"name": "main", "count": count, "template": {}}]},
            "status": {"conditions": conditions},
        }
    )


def job_pod_sets(count: int, name: str = "main") -> list[PodSet]:
    return [PodSet(name=name, count=count, template={})]


def test_first_slice_names_itself_the_chain_origin() -> None:
    assert slice_annotations(new_name="job-sample-7cb26", unfinished=[]) == {
        "kueue.x-k8s.io/elastic-job": "true",
        "kueue.x-k8s.io/workload-slice-name": "job-sample-7cb26",
    }


def test_scale_up_slice_names_what_it_replaces_and_carries_the_origin() -> None:
    old = workload("job-sample-a59e3", reserved=True, origin="job-sample-7cb26")
    assert slice_annotations(new_name="job-sample-00000", unfinished=[old]) == {
        "kueue.x-k8s.io/elastic-job": "true",
        "kueue.x-k8s.io/workload-slice-replacement-for": "golden/job-sample-a59e3",
        "kueue.x-k8s.io/workload-slice-name": "job-sample-7cb26",
    }
    bare = workload("job-sample-7cb26", reserved=True)
    assert slice_annotations(new_name="x", unfinished=[bare])["kueue.x-k8s.io/workload-slice-name"] == (
        "job-sample-7cb26"
    )


def test_more_than_one_unfinished_slice_at_creation_is_kueues_error() -> None:
    with pytest.raises(SliceCountError, match=r"^unexpected workload-slices count: 2$"):
        slice_annotations(new_name="x", unfinished=[workload("a"), workload("b")])


def test_slices_are_ordered_by_creation_then_uid_and_finished_ones_dropped() -> None:
    late = workload("late", created="2026-11-22T00:00:05Z", uid="a")
    tie_b = workload("tie-b", created="2026-11-22T00:00:01Z", uid="b")
    tie_a = workload("tie-a", created="2026-11-22T00:00:01Z", uid="c")
    done = workload("done", created="2026-11-22T00:00:00Z", finished=True)
    assert [w.metadata.name for w in sorted_unfinished([late, tie_a, done, tie_b])] == [
        "tie-b",
        "tie-a",
        "late",
    ]


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [({"a": 3}, {"a": 2}, True), ({"a": 2}, {"a": 3}, False), ({"a": 3, "b": 1}, {"a": 2, "b": 2}, False)],
)
def test_scaled_down_means_some_pod_set_shrank_and_none_grew(
    old: dict[str, int], new: dict[str, int], expected: bool
) -> None:
    assert scaled_down(old, new) is expected


def test_same_counts_keep_the_slice() -> None:
    current = workload("s1", count=2, reserved=True)
    decision = decide_slices(job_pod_sets=job_pod_sets(2), unfinished=[current])
    assert (decision.compatible, decision.workload, decision.update_counts) == (True, current, False)


def test_scale_up_of_an_admitted_slice_asks_for_a_new_slice() -> None:
    current = workload("s1", count=2, reserved=True)
    decision = decide_slices(job_pod_sets=job_pod_sets(4), unfinished=[current])
    assert (decision.compatible, decision.workload, decision.finish) == (True, None, [])
    assert current.spec.pod_sets[0].count == 2, "the admitted slice is never resized upwards"


@pytest.mark.parametrize(("reserved", "new_count"), [(True, 1), (False, 5)])
def test_scale_down_or_a_slice_without_quota_is_updated_in_place(reserved: bool, new_count: int) -> None:
    current = workload("s1", count=2, reserved=reserved)
    decision = decide_slices(job_pod_sets=job_pod_sets(new_count), unfinished=[current])
    assert (decision.compatible, decision.workload, decision.update_counts) == (True, current, True)
    assert current.spec.pod_sets[0].count == new_count


def test_other_pod_set_names_fall_back_to_ordinary_matching() -> None:
    decision = decide_slices(job_pod_sets=job_pod_sets(2, name="other"), unfinished=[workload("s1")])
    assert not decision.compatible


def test_no_slice_means_create_one() -> None:
    decision = decide_slices(job_pod_sets=job_pod_sets(2), unfinished=[])
    assert (decision.compatible, decision.workload, decision.finish) == (True, None, [])


def test_pending_replacement_is_selected_and_its_admitted_predecessor_kept() -> None:
    old = workload("old", count=2, reserved=True, created="2026-11-22T00:00:00Z")
    new = workload("new", count=4, replaces="old", created="2026-11-22T00:00:01Z")
    selected, to_finish = normalize_active_slices([old, new])
    assert selected is new
    assert to_finish == []
    assert latest_active_slice([old, new]) is old
    decision = decide_slices(job_pod_sets=job_pod_sets(4), unfinished=[old, new])
    assert (decision.workload, decision.update_counts) == (new, False)


def test_admitted_replacement_retires_its_predecessor_as_replaced() -> None:
    old = workload("old", count=2, reserved=True, created="2026-11-22T00:00:00Z")
    new = workload("new", count=4, reserved=True, replaces="old", created="2026-11-22T00:00:01Z")
    selected, to_finish = normalize_active_slices([old, new])
    assert selected is new
    assert [(f.workload.metadata.name, f.reason, f.message) for f in to_finish] == [
        ("old", "WorkloadSliceReplaced", REPLACED_SLICE_MESSAGE)
    ]
    assert REPLACED_SLICE_MESSAGE == "Replaced to accommodate a new workload slice"


def test_stray_and_evicted_slices_are_finished_out_of_sync() -> None:
    evicted = workload("evicted", reserved=True, evicted=True, created="2026-11-22T00:00:00Z")
    head = workload("head", reserved=True, created="2026-11-22T00:00:01Z")
    stray = workload("stray", created="2026-11-22T00:00:02Z")
    selected, to_finish = normalize_active_slices([evicted, head, stray])
    assert selected is head
    assert [(f.workload.metadata.name, f.reason, f.message) for f in to_finish] == [
        ("evicted", "OutOfSync", OUT_OF_SYNC_SLICE_MESSAGE),
        ("stray", "OutOfSync", OUT_OF_SYNC_SLICE_MESSAGE),
    ]
    assert OUT_OF_SYNC_SLICE_MESSAGE == "The workload slice is out of sync with its parent job"


def test_without_an_admitted_slice_the_newest_non_evicted_one_is_kept() -> None:
    first = workload("first", created="2026-11-22T00:00:00Z")
    second = workload("second", created="2026-11-22T00:00:01Z")
    selected, to_finish = normalize_active_slices([first, second])
    assert selected is second
    assert [f.workload.metadata.name for f in to_finish] == ["first"]


def test_only_evicted_slices_select_nothing_and_finish_all() -> None:
    gone = workload("gone", reserved=True, evicted=True)
    decision = decide_slices(job_pod_sets=job_pod_sets(2), unfinished=[gone, workload("also", evicted=True)])
    assert decision.compatible and decision.workload is None
    assert [f.workload.metadata.name for f in decision.finish] == ["gone", "also"]


def test_duplicate_replacements_prefer_the_admitted_one() -> None:
    old = workload("old", reserved=True, created="2026-11-22T00:00:00Z")
    pending = workload("pending", replaces="old", created="2026-11-22T00:00:01Z")
    admitted = workload("admitted", reserved=True, replaces="old", created="2026-11-22T00:00:02Z")
    selected, to_finish = normalize_active_slices([old, pending, admitted])
    assert selected is admitted
    assert sorted((f.workload.metadata.name, f.reason) for f in to_finish) == [
        ("old", "WorkloadSliceReplaced"),
        ("pending", "OutOfSync"),
    ]


def test_scheduler_message_and_slice_name() -> None:
    new = workload("new", uid="new-uid", origin="origin")
    assert scheduler_replaced_message_for(new) == (
        f"Replaced to accommodate a workload (UID: new-uid, JobUID: {GOLDEN_UID}) due to workload slice aggregation"
    )
    assert slice_name(new) == "origin"
    assert slice_name(workload("plain")) == "plain"
