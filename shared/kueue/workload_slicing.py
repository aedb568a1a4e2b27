"""Elastic jobs via Workload slices: the pure part of Kueue's ``pkg/workloadslicing``.

A job annotated ``kueue.x-k8s.io/elastic-job: "true"`` (feature gate ``ElasticJobsViaWorkloadSlices``,
Beta and on by default since Kueue 0.18) may change its pod counts while it runs. Kueue never
resizes an admitted Workload upwards; it creates a new *slice* (a second Workload of the same job)
and, once the scheduler admits it, retires the old one. Our reconciler and Kueue's scheduler must
therefore agree on four things, all decided here from Kueue's source:

* **Names.** A slice is named ``GenerateWorkloadNameWithExtra(name, uid, gvk, str(generation))``
  (``newWorkloadName``): the job's ``metadata.generation`` is hashed in, so a scale-up (which bumps
  the generation) gets a new, deterministic name, and a re-run of the same reconcile gets the same
  one (AlreadyExists, never a duplicate). ``slice_workload_name``.
* **Annotations** (``prepareWorkloadSlice``): every slice carries ``kueue.x-k8s.io/elastic-job:
  "true"`` and ``kueue.x-k8s.io/workload-slice-name`` (the first slice's name, shared by the whole
  chain; pods are found by it); a scale-up slice also carries
  ``kueue.x-k8s.io/workload-slice-replacement-for: <namespace>/<old slice>``, which is what Kueue's
  scheduler reads to admit it in place of the old slice. More than one unfinished slice at creation
  is an error (``unexpected workload-slices count: N``), as in Kueue.
* **Which slice is the job's Workload** (``EnsureWorkloadSlices`` / ``normalizeActiveSlices``): only
  pod *counts* may differ between the job and its slice. Same counts -> that slice; different counts
  on a slice without quota, or fewer pods (scale-down) -> the slice's counts are updated in place;
  more pods on an admitted slice -> no Workload (a new slice is created). With several unfinished
  slices the chain is normalised first: the admitted head and at most one pending replacement
  survive, every other slice is finished ``WorkloadSliceReplaced`` "Replaced to accommodate a new
  workload slice" (if some slice replaces it) or ``OutOfSync`` "The workload slice is out of sync
  with its parent job".
* **Retirement by the scheduler** (``Scheduler.replaceWorkloadSlice``, real Kueue only): admitting a
  replacement finishes the old slice ``WorkloadSliceReplaced`` with ``scheduler_replaced_message``.

Invariants: every function is pure (no I/O; callers persist what ``decide_slices`` asks for), and a
feature gate switched off makes ``enabled`` false everywhere, so the annotation is then ignored
exactly as Kueue ignores it. Order of slices is Kueue's: creationTimestamp, then UID.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from shared.constants import (
    ELASTIC_JOB_ANNOTATION,
    ELASTIC_JOB_ANNOTATION_VALUE,
    JOB_UID_LABEL,
    WORKLOAD_SLICE_NAME_ANNOTATION,
    WORKLOAD_SLICE_REPLACEMENT_FOR_ANNOTATION,
    Reason,
)
from shared.kube import GroupVersionKind
from shared.kueue.naming import workload_name_for_owner
from shared.kueue.workload_state import has_quota_reservation, is_evicted, is_finished
from shared.models.workload import PodSet, Workload

__all__ = [
    "FEATURE_GATE",
    "FEATURE_GATE_DEFAULT",
    "OUT_OF_SYNC_SLICE_MESSAGE",
    "REPLACED_SLICE_MESSAGE",
    "FinishSlice",
    "SliceCountError",
    "SliceDecision",
    "decide_slices",
    "enabled",
    "is_elastic_workload",
    "job_generation",
    "latest_active_slice",
    "name_extra",
    "normalize_active_slices",
    "pod_set_counts",
    "replacement_for",
    "scaled_down",
    "scaled_up",
    "scheduler_replaced_message",
    "scheduler_replaced_message_for",
    "slice_annotations",
    "slice_name",
    "slice_workload_name",
    "sorted_unfinished",
    "workload_key",
]

FEATURE_GATE: Final = "ElasticJobsViaWorkloadSlices"
FEATURE_GATE_DEFAULT: Final = True  # Beta, on since Kueue 0.18 (pkg/features/kube_features.go)

#: ``normalizeActiveSlices``: a slice some other slice replaces
REPLACED_SLICE_MESSAGE: Final = "Replaced to accommodate a new workload slice"
#: ``normalizeActiveSlices``: any other surplus slice
OUT_OF_SYNC_SLICE_MESSAGE: Final = "The workload slice is out of sync with its parent job"

PodSetCounts = dict[str, int]


class SliceCountError(Exception):
    """``prepareWorkloadSlice`` found more than one unfinished slice; retried (the chain converges)."""


def enabled(obj: Mapping[str, Any], *, feature_gate: bool) -> bool:
    """``workloadslicing.Enabled``: the gate is on and the object says ``elastic-job: "true"``."""
    if not feature_gate:
        return False
    annotations = (obj.get("metadata") or {}).get("annotations")
    if annotations is None:  # the common case, without an ABC isinstance (a Python-level call)
        return False
    return isinstance(annotations, Mapping) and annotations.get(ELASTIC_JOB_ANNOTATION) == (
        ELASTIC_JOB_ANNOTATION_VALUE
    )


def is_elastic_workload(workload: Workload, *, feature_gate: bool) -> bool:
    """``IsElasticWorkload``: the same test on the Workload's own annotations."""
    return (
        feature_gate and workload.metadata.annotation(ELASTIC_JOB_ANNOTATION) == ELASTIC_JOB_ANNOTATION_VALUE
    )


def job_generation(job: Mapping[str, Any]) -> int:
    """``GetGeneration()``: ``metadata.generation``, 0 when absent (or not an integer)."""
    generation = (job.get("metadata") or {}).get("generation")
    return generation if isinstance(generation, int) and not isinstance(generation, bool) else 0


def name_extra(job: Mapping[str, Any], *, feature_gate: bool) -> str:
    """What ``newWorkloadName`` hashes into the job's Workload name: the generation for a slicing
    job, nothing otherwise (kinds with an ``ElasticWorkloadNameProvider``, e.g. Kueue's RayJob, have
    no adapter here)."""
    return str(job_generation(job)) if enabled(job, feature_gate=feature_gate) else ""


def slice_workload_name(
    *, owner_name: str, owner_uid: str, owner_gvk: GroupVersionKind, generation: int, max_length: int
) -> str:
    """``newWorkloadName`` for a slicing job: the generation (base 10) is the hashed ``extra``."""
    return workload_name_for_owner(
        owner_name=owner_name,
        owner_uid=owner_uid,
        owner_gvk=owner_gvk,
        extra=str(generation),
        max_length=max_length,
    )


def workload_key(workload: Workload) -> str:
    """``workload.Key``: ``<namespace>/<name>``."""
    return f"{workload.metadata.namespace or ''}/{workload.metadata.name or ''}"


def slice_name(workload: Workload) -> str:
    """``SliceName``: the chain's origin name, else the Workload's own."""
    origin = workload.metadata.annotation(WORKLOAD_SLICE_NAME_ANNOTATION)
    return origin if origin is not None else workload.metadata.name or ""


def replacement_for(workload: Workload) -> str | None:
    """``ReplacementForKey``: the key of the slice this one replaces, if any."""
    return workload.metadata.annotation(WORKLOAD_SLICE_REPLACEMENT_FOR_ANNOTATION)


def scaled_up(workload: Workload) -> bool:
    """``ScaledUp``: the Workload is a scale-up replacement."""
    return replacement_for(workload) is not None


def scheduler_replaced_message(*, new_slice_uid: str, job_uid: str) -> str:
    """The ``Finished`` message Kueue's scheduler writes on the slice it replaces."""
    return (
        f"Replaced to accommodate a workload (UID: {new_slice_uid}, JobUID: {job_uid}) "
        "due to workload slice aggregation"
    )


def scheduler_replaced_message_for(new_slice: Workload) -> str:
    """``scheduler_replaced_message`` for the admitted replacement ``new_slice``."""
    return scheduler_replaced_message(
        new_slice_uid=new_slice.metadata.uid or "", job_uid=new_slice.metadata.label(JOB_UID_LABEL) or ""
    )


def pod_set_counts(pod_sets: Iterable[PodSet]) -> PodSetCounts:
    """``ExtractPodSetCounts``: pod set name -> count (the last one wins on a duplicate name)."""
    return {pod_set.name: pod_set.count for pod_set in pod_sets}


def _has_fewer_replicas_than(counts: PodSetCounts, other: PodSetCounts) -> bool:
    """``HasFewerReplicasThan``: some pod set of ``counts`` is smaller than the same one in ``other``."""
    return any(name in other and count < other[name] for name, count in counts.items())


def scaled_down(old: PodSetCounts, new: PodSetCounts) -> bool:
    """``ScaledDown``: some pod set shrank and none grew."""
    return _has_fewer_replicas_than(new, old) and not _has_fewer_replicas_than(old, new)


def sorted_unfinished(workloads: Iterable[Workload]) -> list[Workload]:
    """``FindNotFinishedWorkloads`` after the list: oldest first (creationTimestamp, then UID)."""
    ordered = sorted(workloads, key=lambda wl: (wl.metadata.creation_timestamp or "", wl.metadata.uid or ""))
    return [wl for wl in ordered if not is_finished(wl)]


def latest_active_slice(unfinished: Sequence[Workload]) -> Workload | None:
    """``FindLatestActiveWorkload``: the newest slice holding quota and not evicted."""
    for workload in reversed(unfinished):
        if has_quota_reservation(workload) and not is_evicted(workload):
            return workload
    return None


def slice_annotations(*, new_name: str, unfinished: Sequence[Workload]) -> dict[str, str]:
    """``prepareWorkloadSlice``: the annotations a new slice named ``new_name`` is created with.

    ``unfinished`` is the job's unfinished slices (``sorted_unfinished``). Raises
    ``SliceCountError`` with Kueue's message when there is more than one.
    """
    annotations = {ELASTIC_JOB_ANNOTATION: ELASTIC_JOB_ANNOTATION_VALUE}
    if not unfinished:
        annotations[WORKLOAD_SLICE_NAME_ANNOTATION] = new_name
        return annotations
    if len(unfinished) > 1:
        raise SliceCountError(f"unexpected workload-slices count: {len(unfinished)}")
    old = unfinished[0]
    annotations[WORKLOAD_SLICE_REPLACEMENT_FOR_ANNOTATION] = workload_key(old)
    annotations[WORKLOAD_SLICE_NAME_ANNOTATION] = (
        old.metadata.annotation(WORKLOAD_SLICE_NAME_ANNOTATION) or old.metadata.name or ""
    )
    return annotations


@dataclass(frozen=True)
class FinishSlice:
    """A surplus slice to finish, with Kueue's reason and message."""

    workload: Workload
    reason: str
    message: str


def normalize_active_slices(unfinished: Sequence[Workload]) -> tuple[Workload | None, list[FinishSlice]]:
    """``normalizeActiveSlices`` on ``sorted_unfinished`` slices: (selected slice, slices to finish).

    Kept: the admitted head of the replacement chain and, if it has one, its pending replacement
    (which is then the selected slice); with no admitted slice, the newest non-evicted one. Evicted
    slices are always finished (they hold quota that must be released).
    """
    replacements: dict[str, Workload] = {}
    for workload in unfinished:
        key = replacement_for(workload)
        if key is None or is_evicted(workload):
            continue
        existing = replacements.get(key)
        if existing is None or (not has_quota_reservation(existing) and has_quota_reservation(workload)):
            replacements[key] = workload

    latest_reserved: Workload | None = None
    latest_non_evicted: Workload | None = None
    for workload in unfinished:
        if is_evicted(workload):
            continue
        latest_non_evicted = workload
        if not has_quota_reservation(workload):
            continue
        replacement = replacements.get(workload_key(workload))
        if replacement is not None and has_quota_reservation(replacement):
            continue
        latest_reserved = workload

    pending_replacement: Workload | None = None
    if latest_reserved is not None:
        replacement = replacements.get(workload_key(latest_reserved))
        if replacement is not None and not has_quota_reservation(replacement):
            pending_replacement = replacement

    selected = pending_replacement or latest_reserved or latest_non_evicted
    to_finish: list[FinishSlice] = []
    for workload in unfinished:
        if workload is selected or workload is latest_reserved:
            continue
        if workload_key(workload) in replacements:
            to_finish.append(FinishSlice(workload, Reason.WORKLOAD_SLICE_REPLACED, REPLACED_SLICE_MESSAGE))
        else:
            to_finish.append(FinishSlice(workload, Reason.OUT_OF_SYNC, OUT_OF_SYNC_SLICE_MESSAGE))
    return selected, to_finish


@dataclass(frozen=True)
class SliceDecision:
    """What ``EnsureWorkloadSlices`` decided.

    ``compatible`` False: the pod set names differ, fall back to Kueue's ordinary matching.
    Otherwise ``workload`` is the job's Workload (``None``: a new slice is to be created) and, when
    ``update_counts`` is set, its ``spec.podSets[].count`` were changed in memory and must be
    written. ``finish`` lists surplus slices to finish first.
    """

    compatible: bool
    workload: Workload | None = None
    update_counts: bool = False
    finish: list[FinishSlice] = field(default_factory=list)


def _apply_counts(workload: Workload, counts: PodSetCounts) -> None:
    """``ApplyPodSetCounts``: only pod sets present in both are changed."""
    for pod_set in workload.spec.pod_sets:
        if pod_set.name in counts:
            pod_set.count = counts[pod_set.name]


def decide_slices(*, job_pod_sets: Sequence[PodSet], unfinished: Sequence[Workload]) -> SliceDecision:
    """``EnsureWorkloadSlices`` for the job's ``sorted_unfinished`` slices (see the module docstring)."""
    job_counts = pod_set_counts(job_pod_sets)
    finish: list[FinishSlice] = []
    if not unfinished:
        return SliceDecision(compatible=True)
    if len(unfinished) == 1:
        candidate: Workload | None = unfinished[0]
    else:
        candidate, finish = normalize_active_slices(unfinished)
        if candidate is None:
            return SliceDecision(compatible=True, finish=finish)
    assert candidate is not None
    slice_counts = pod_set_counts(candidate.spec.pod_sets)
    if job_counts.keys() != slice_counts.keys():
        return SliceDecision(compatible=False, finish=finish)
    if job_counts == slice_counts:
        return SliceDecision(compatible=True, workload=candidate, finish=finish)
    if not has_quota_reservation(candidate) or scaled_down(slice_counts, job_counts):
        _apply_counts(candidate, job_counts)
        return SliceDecision(compatible=True, workload=candidate, update_counts=True, finish=finish)
    return SliceDecision(compatible=True, finish=finish)
