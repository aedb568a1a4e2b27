"""Elastic Workload slices in the Kueue stand-in (LOCAL RUNS ONLY): the scheduler's side.

Kueue's scheduler (``workloadslicing.ReplacedWorkloadSlice``, ``Scheduler.replaceWorkloadSlice``,
gate ``ElasticJobsViaWorkloadSlices`` on) admits a scale-up slice *in place of* the slice it
replaces: a Workload annotated ``kueue.x-k8s.io/workload-slice-replacement-for: <ns>/<name>``
whose named slice holds quota in the same ClusterQueue (same namespace) may use that slice's quota,
and once it is admitted the replaced slice is finished ``WorkloadSliceReplaced`` with Kueue's
message. If that write loses a race, kueue-bridge's reconciler finishes the old slice itself, as
Kueue's job reconciler does.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from shared.constants import JOB_UID_LABEL, WORKLOAD_SLICE_REPLACEMENT_FOR_ANNOTATION, Condition, Reason
from shared.kube.conditions import is_object_condition_true, set_object_condition
from shared.kueue.workload_slicing import scheduler_replaced_message

__all__ = ["replaced_slice", "retire_replaced_slice", "slice_key"]


def slice_key(workload: Mapping[str, Any]) -> str:
    """``workload.Key``: ``<namespace>/<name>``."""
    metadata = workload.get("metadata") or {}
    return f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"


def replaced_slice(
    workload: Mapping[str, Any], *, by_key: Mapping[str, dict[str, Any]], cluster_queue: str
) -> dict[str, Any] | None:
    """The slice ``workload`` replaces, if it holds quota in ``cluster_queue`` and is in its namespace."""
    annotations = (workload.get("metadata") or {}).get("annotations") or {}
    key = annotations.get(WORKLOAD_SLICE_REPLACEMENT_FOR_ANNOTATION)
    replaced = by_key.get(key) if isinstance(key, str) else None
    if replaced is None or replaced is workload:
        return None
    if (replaced.get("metadata") or {}).get("namespace") != (workload.get("metadata") or {}).get("namespace"):
        return None
    if not is_object_condition_true(replaced, Condition.QUOTA_RESERVED) or is_object_condition_true(
        replaced, Condition.FINISHED
    ):
        return None
    admission = (replaced.get("status") or {}).get("admission") or {}
    return replaced if admission.get("clusterQueue") == cluster_queue else None


def retire_replaced_slice(replaced: dict[str, Any], *, new_slice: Mapping[str, Any], now: datetime) -> bool:
    """``Finished=True`` ``WorkloadSliceReplaced`` on ``replaced`` for the admitted ``new_slice``."""
    metadata = new_slice.get("metadata") or {}
    message = scheduler_replaced_message(
        new_slice_uid=str(metadata.get("uid", "")),
        job_uid=str((metadata.get("labels") or {}).get(JOB_UID_LABEL, "")),
    )
    return set_object_condition(
        replaced,
        condition_type=Condition.FINISHED,
        status="True",
        reason=Reason.WORKLOAD_SLICE_REPLACED,
        message=message,
        now=now,
    )
