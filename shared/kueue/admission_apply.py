"""Kueue's Workload status writes as server-side applies: ``PatchAdmissionStatus`` and ``PatchStatus``.

Kueue writes a Workload's admission state (``pkg/workload/patching``) as a *forced server-side
apply of the status subresource*, never as an update, and the field manager is part of the
contract:

* ``PatchAdmissionStatus`` applies as ``kueue-admission`` (``constants.AdmissionName``) the body
  that ``prepareWorkloadPatch`` builds -- :func:`admission_status_apply` -- whatever the caller
  changed: the scheduler, the workload controller's eviction (``pkg/workload/evict``), finishing
  (``pkg/workload/finish``), and MultiKueue's nominations, ``Ready``/``clusterName`` and the
  worker-eviction ``Retry``.
* ``PatchStatus`` applies as the caller's own manager a body with nothing but what the caller set
  on an empty base (:func:`status_apply`): for MultiKueue's ``updateACS`` one admission-check entry
  (:func:`check_state_apply`), for the job controller's ``SetConditionAndUpdate`` one condition as
  ``kueue-job-controller-<type>`` (:func:`condition_apply`, PodsReady), for
  ``UpdateReclaimablePods`` the ``reclaimablePods`` as ``kueue-reclaimable-pods``.

Kueue takes the other branch of ``pkg/workload/patching.patchStatus`` -- a strict merge patch --
only with its ``WorkloadRequestUseMergePatch`` feature gate on (Alpha, off by default since 0.14):
:data:`MERGE_PATCH_FEATURE_GATE`.

Why it matters: an apply removes a field its manager applied before and leaves out now *only if
no other manager owns it*. Eviction clears ``clusterName`` and ``nominatedClusterNames`` by
leaving them out of a ``kueue-admission`` apply, so whoever sets them must set them as
``kueue-admission`` through an apply too; a field set by an update (or an apply under another
name) survives every eviction and the Workload is never dispatched again.

And why the body holds *every* admission field and not only the changed one: the fields of the
previous ``kueue-admission`` apply that a new one leaves out are removed. ``prepareWorkloadPatch``
therefore carries the whole admission state as read: ``admission``, ``requeueState`` (when it says
something), ``resourceRequests`` (only without an admission), the conditions Kueue's admission
manages, ``accumulatedPastExecutionTimeSeconds``, ``schedulingStats.evictions``, ``clusterName``,
``nominatedClusterNames``, ``unhealthyNodes``, ``status.preemptionGates`` and every admission check.

Both bodies carry the object's identity as ``baseSSAWorkload`` does (uid, name, namespace,
generation, labels, annotations) and, strict by default, its ``resourceVersion``: a write based on
a stale read is a ``Conflict`` (retried by the caller's reconcile), as Kueue's strict apply is. An
empty value is left out, as Go's ``omitempty`` leaves it out of Kueue's JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from shared.constants import WORKLOAD_GVK, Condition
from shared.jsontree import json_tree_copy
from shared.kube.conditions import (
    conditions_of,
    is_object_condition_true,
    set_condition,
    set_object_condition,
)

if TYPE_CHECKING:  # the body builders serve the devcluster's Kueue stand-in too, which has its own client
    from shared.kube import KubeClient

__all__ = [
    "ADMISSION_FIELD_MANAGER",
    "ADMISSION_MANAGED_CONDITIONS",
    "JOB_CONTROLLER_NAME",
    "MERGE_PATCH_FEATURE_GATE",
    "RECLAIMABLE_PODS_FIELD_MANAGER",
    "admission_status_apply",
    "apply_admission_status",
    "apply_check_state",
    "apply_finish",
    "check_state_apply",
    "condition_apply",
    "condition_field_manager",
    "finish_apply",
    "status_apply",
]

#: ``constants.AdmissionName``: the field manager of every ``PatchAdmissionStatus``
ADMISSION_FIELD_MANAGER: Final = "kueue-admission"
#: ``constants.JobControllerName``: the job controller's name, the prefix of its condition managers
JOB_CONTROLLER_NAME: Final = "kueue-job-controller"
#: ``constants.ReclaimablePodsMgr``: the field manager of ``UpdateReclaimablePods``
RECLAIMABLE_PODS_FIELD_MANAGER: Final = "kueue-reclaimable-pods"
#: the feature gate that makes every one of these writes a strict merge patch instead
MERGE_PATCH_FEATURE_GATE: Final = "WorkloadRequestUseMergePatch"
#: ``admissionManagedConditions``: the conditions a ``kueue-admission`` apply carries
ADMISSION_MANAGED_CONDITIONS: Final = (
    Condition.QUOTA_RESERVED,
    "BlockedOnPreemptionGates",
    Condition.EVICTED,
    Condition.ADMITTED,
    Condition.PREEMPTED,
    Condition.REQUEUED,
    Condition.DEACTIVATION_TARGET,
    Condition.FINISHED,
    Condition.PODS_READY,
)
#: status fields copied as they are when set (``omitempty`` pointers and lists)
_COPIED_WHEN_SET: Final = (
    "accumulatedPastExecutionTimeSeconds",
    "clusterName",
    "nominatedClusterNames",
    "unhealthyNodes",
    "preemptionGates",
)


def _base(workload: Mapping[str, Any], *, strict: bool) -> dict[str, Any]:
    """``baseSSAWorkload``: the identity of the object, and its resourceVersion when strict."""
    metadata = workload.get("metadata") or {}
    base_meta: dict[str, Any] = {
        key: metadata[key]
        for key in ("name", "namespace", "uid", "generation", "labels", "annotations")
        if metadata.get(key)
    }
    if strict and metadata.get("resourceVersion"):
        base_meta["resourceVersion"] = metadata["resourceVersion"]
    return {"apiVersion": WORKLOAD_GVK.api_version, "kind": WORKLOAD_GVK.kind, "metadata": base_meta}


def admission_status_apply(workload: Mapping[str, Any], *, strict: bool = True) -> dict[str, Any]:
    """``prepareWorkloadPatch``: the ``kueue-admission`` apply body for ``workload`` as it should be."""
    status: Mapping[str, Any] = workload.get("status") or {}
    body = _base(workload, strict=strict)
    applied: dict[str, Any] = {}
    if status.get("admission"):
        applied["admission"] = status["admission"]
    elif status.get("resourceRequests"):
        # with an admission the pod set assignments' usage supersedes the requests (left out)
        applied["resourceRequests"] = status["resourceRequests"]
    requeue = status.get("requeueState") or {}
    if requeue.get("count") is not None or requeue.get("requeueAt") is not None:
        applied["requeueState"] = requeue
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    managed = [
        found for kind in ADMISSION_MANAGED_CONDITIONS for found in conditions if found.get("type") == kind
    ]
    if managed:
        applied["conditions"] = managed
    for key in _COPIED_WHEN_SET:
        value = status.get(key)
        if value is not None and value != [] and value != "":
            applied[key] = value
    stats = status.get("schedulingStats")
    if isinstance(stats, dict):
        evictions = stats.get("evictions") or []
        applied["schedulingStats"] = {"evictions": evictions} if evictions else {}
    checks = [c for c in status.get("admissionChecks") or [] if isinstance(c, dict)]
    if checks:
        applied["admissionChecks"] = checks
    body["status"] = applied
    return json_tree_copy(body)


def status_apply(
    workload: Mapping[str, Any], status: Mapping[str, Any], *, strict: bool = True
) -> dict[str, Any]:
    """``PatchStatus``: ``workload``'s identity (``baseSSAWorkload``) and only the ``status`` fields
    the caller set; a field left out is removed if this manager applied it before and no other
    manager owns it."""
    body = _base(workload, strict=strict)
    body["status"] = dict(status)
    return json_tree_copy(body)


def finish_apply(
    workload: Mapping[str, Any], *, reason: str, message: str, now: datetime, strict: bool = True
) -> dict[str, Any] | None:
    """``workloadfinish.Finish``: the ``kueue-admission`` apply body of ``workload`` with
    ``Finished=True`` (``reason``, ``message`` as given: the caller truncates it) set on its
    conditions; ``None`` when it is finished already (Kueue writes nothing then). Only the status and
    its conditions are copied: ``workload`` is a cached object and stays as it is."""
    if is_object_condition_true(workload, Condition.FINISHED):
        return None
    status = dict(workload.get("status") or {})
    status["conditions"] = [dict(item) for item in conditions_of(workload) if isinstance(item, Mapping)]
    finished = {**workload, "status": status}
    set_object_condition(
        finished, condition_type=Condition.FINISHED, status="True", reason=reason, message=message, now=now
    )
    return admission_status_apply(finished, strict=strict)


def check_state_apply(
    workload: Mapping[str, Any], check: Mapping[str, Any], *, strict: bool = True
) -> dict[str, Any]:
    """``PatchStatus`` + ``SetAdmissionCheckState`` on an empty base: one admission check entry."""
    return status_apply(workload, {"admissionChecks": [dict(check)]}, strict=strict)


def condition_field_manager(condition_type: str) -> str:
    """``SetConditionAndUpdate``'s field owner: ``<managerPrefix>-<conditionType>``, the prefix
    being the job controller's name (so ``kueue-job-controller-PodsReady``)."""
    return f"{JOB_CONTROLLER_NAME}-{condition_type}"


def condition_apply(
    workload: Mapping[str, Any],
    *,
    condition_type: str,
    status: str,
    reason: str,
    message: str,
    now: datetime,
    strict: bool = True,
) -> dict[str, Any]:
    """``SetConditionAndUpdate``: ``PatchStatus`` of one condition, set (``meta.SetStatusCondition``,
    observing the Workload's generation) on the empty conditions of ``baseSSAWorkload``.
    ``message`` is sent as given (the caller truncates it as Kueue does).

    Since the base has no conditions, the condition is always added with ``now`` as its transition
    time: the applied condition carries it even when only the reason changed, and the apply replaces
    the stored one (Kueue's behaviour, kept)."""
    conditions: list[dict[str, Any]] = []
    set_condition(
        conditions,
        condition_type=condition_type,
        status=status,
        reason=reason,
        message=message,
        observed_generation=(workload.get("metadata") or {}).get("generation"),
        now=now,
    )
    return status_apply(workload, {"conditions": conditions}, strict=strict)


async def apply_admission_status(
    client: KubeClient, workload: Mapping[str, Any], *, strict: bool = True
) -> dict[str, Any]:
    """``PatchAdmissionStatus``: force-apply ``workload``'s admission state as ``kueue-admission``;
    returns the stored Workload."""
    return await client.apply(
        WORKLOAD_GVK,
        admission_status_apply(workload, strict=strict),
        field_manager=ADMISSION_FIELD_MANAGER,
        force=True,
        subresource="status",
    )


async def apply_finish(
    client: KubeClient, workload: Mapping[str, Any], *, reason: str, message: str, now: datetime
) -> dict[str, Any] | None:
    """``workloadfinish.Finish`` through ``client``: :func:`finish_apply` force-applied as
    ``kueue-admission``; the stored Workload, ``None`` when it was finished already."""
    body = finish_apply(workload, reason=reason, message=message, now=now)
    if body is None:
        return None
    return await client.apply(
        WORKLOAD_GVK, body, field_manager=ADMISSION_FIELD_MANAGER, force=True, subresource="status"
    )


async def apply_check_state(
    client: KubeClient,
    workload: Mapping[str, Any],
    check: Mapping[str, Any],
    *,
    field_manager: str,
    strict: bool = True,
) -> dict[str, Any]:
    """``PatchStatus`` of one admission check as ``field_manager``; returns the stored Workload."""
    return await client.apply(
        WORKLOAD_GVK,
        check_state_apply(workload, check, strict=strict),
        field_manager=field_manager,
        force=True,
        subresource="status",
    )
