"""Build the Workload for a job, and resolve its priority, as Kueue does.

``construct_workload`` is Kueue's ``ConstructWorkload`` + ``NewWorkload`` + ``prepareWorkload``
(reference §2.10): the Workload is named by ``shared.naming``, lives in the job's namespace, carries
the ``kueue.x-k8s.io/job-uid`` label (only when the UID is a valid label value), the job labels
listed in ``labelKeysToCopy``, the job's ``provreq.kueue.x-k8s.io/*`` annotations, the
``kueue.x-k8s.io/resource-in-use`` finalizer and a controller owner reference with
``blockOwnerDeletion``. ``spec.queueName`` and ``spec.maximumExecutionTimeSeconds`` come from the job
labels, ``spec.priorityClassRef`` and ``spec.priority`` from the resolved priority (priority is always
set), and ``spec.active`` is left unset so the CRD default (``true``) applies.

``priority_class_names`` and ``resolve_priority`` are ``ExtractPriority`` (§2.7), the one
implementation the reconciler, ``explain`` and the adapter dry run all call: the first says which
class the job names, the caller fetches it (informer cache, API, test fake) and the second resolves
with lookups passed in as functions:

1. a ``kueue.x-k8s.io/priority-class`` label names a WorkloadPriorityClass, which must exist;
2. else a pod PriorityClass name, which must exist: the kind's own source when it has one
   (``JobWithPriorityClass``, Kueue's ``customPriorityFunc``; an empty answer means none, the pod
   templates are then not read), else the first pod template that has one;
3. else the cluster's global default PriorityClass (lowest value if several);
4. else no reference and priority 0.

A missing class is returned as ``PriorityNotFound`` (not raised): Kueue then records a Warning event
(WorkloadPriorityClass only) and retries later without creating the Workload.

For a Workload that already matches its job, ``classify_priority_update`` /
``priority_state_equal`` are the pure part of ``UpdateWorkloadPriority`` and
``propagate_admission_gated_by`` syncs the admission-gate annotation.

Invariant: pure functions; the job dict and the pod sets passed in are never modified (only
``propagate_admission_gated_by`` edits the Workload it is given, by design).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from shared.constants import (
    ADMISSION_GATED_BY_ANNOTATION,
    DEFAULT_PRIORITY,
    JOB_UID_LABEL,
    LONG_MAX_WORKLOAD_NAME_LENGTH,
    POD_PRIORITY_CLASS_GROUP,
    POD_PRIORITY_CLASS_KIND,
    RESOURCE_IN_USE_FINALIZER,
    WORKLOAD_PRIORITY_CLASS_GROUP,
    WORKLOAD_PRIORITY_CLASS_KIND,
    EventReason,
)
from shared.constants import Condition as ConditionType
from shared.equivalence import sanitize_pod_sets
from shared.frameworks.base import GenericJob
from shared.frameworks.capabilities import has_priority_class
from shared.jobmeta import (
    annotations_of,
    is_valid_job_uid_label,
    job_name,
    job_namespace,
    job_uid,
    labels_to_copy,
    max_exec_time_seconds,
    provreq_annotations,
    queue_name,
    workload_priority_class_name,
)
from shared.kube import GroupVersionKind
from shared.kube.conditions import find_condition_view, is_true
from shared.models.meta import ObjectMeta, OwnerReference
from shared.models.workload import PodSet, PriorityClassRef, Workload, WorkloadSpec
from shared.naming import workload_name_for_owner

__all__ = [
    "PriorityLookup",
    "PriorityNotFound",
    "PriorityUpdate",
    "ResolvedPriority",
    "WorkloadConstructionError",
    "classify_priority_update",
    "construct_workload",
    "global_default_priority_class",
    "pod_priority_class_name",
    "priority_class_names",
    "priority_state_equal",
    "priority_value",
    "propagate_admission_gated_by",
    "resolve_priority",
]

PriorityLookup = Callable[[str], int | None]
"""Returns the ``value`` of the named (Workload)PriorityClass, or ``None`` when it does not exist."""


@dataclass(frozen=True)
class ResolvedPriority:
    """What goes into ``spec.priorityClassRef`` and ``spec.priority``."""

    ref: PriorityClassRef | None
    value: int


@dataclass(frozen=True)
class PriorityNotFound:
    """The priority class the job names does not exist (retry later; do not create the Workload)."""

    kind: str  # WORKLOAD_PRIORITY_CLASS_KIND | POD_PRIORITY_CLASS_KIND
    name: str

    @property
    def error_message(self) -> str:
        """The API server's NotFound text for the ``Get`` Kueue makes."""
        resource = (
            "workloadpriorityclasses.kueue.x-k8s.io"
            if self.kind == WORKLOAD_PRIORITY_CLASS_KIND
            else "priorityclasses.scheduling.k8s.io"
        )
        return f'{resource} "{self.name}" not found'

    @property
    def event_reason(self) -> str | None:
        """Kueue records a Warning event only for a missing WorkloadPriorityClass."""
        return (
            EventReason.WORKLOAD_PRIORITY_CLASS_NOT_FOUND
            if self.kind == WORKLOAD_PRIORITY_CLASS_KIND
            else None
        )

    @property
    def event_message(self) -> str:
        return f'{self.kind} "{self.name}" not found'


class WorkloadConstructionError(ValueError):
    """The job lacks what a Workload needs; ``path`` names the missing field."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path


def _workload_priority_class_ref(name: str) -> PriorityClassRef:
    return PriorityClassRef(group=WORKLOAD_PRIORITY_CLASS_GROUP, kind=WORKLOAD_PRIORITY_CLASS_KIND, name=name)


def _pod_priority_class_ref(name: str) -> PriorityClassRef:
    return PriorityClassRef(group=POD_PRIORITY_CLASS_GROUP, kind=POD_PRIORITY_CLASS_KIND, name=name)


def global_default_priority_class(priority_classes: Iterable[Mapping[str, Any]]) -> tuple[str, int] | None:
    """``getDefaultPriorityClass``: the ``globalDefault`` PriorityClass with the lowest value.

    Takes raw ``scheduling.k8s.io/v1`` PriorityClass objects; malformed entries are skipped.
    """
    best: tuple[str, int] | None = None
    for priority_class in priority_classes:
        if priority_class.get("globalDefault") is not True:
            continue
        metadata = priority_class.get("metadata")
        name = metadata.get("name") if isinstance(metadata, Mapping) else None
        value = priority_class.get("value")
        if not isinstance(name, str) or not isinstance(value, int) or isinstance(value, bool):
            continue
        if best is None or value < best[1]:
            best = (name, value)
    return best


def pod_priority_class_name(pod_sets: Sequence[PodSet]) -> str:
    """``extractPriorityFromPodSets``: the first pod template's ``spec.priorityClassName``, or ``""``."""
    for pod_set in pod_sets:
        spec = pod_set.template.get("spec")
        name = spec.get("priorityClassName") if isinstance(spec, Mapping) else None
        if isinstance(name, str) and name:
            return name
    return ""


def priority_class_names(job: GenericJob, *, pod_sets: Sequence[PodSet]) -> tuple[str, str]:
    """``(WorkloadPriorityClass, pod PriorityClass)`` the job names for ``ExtractPriority``; the second
    is ``""`` when the first is set (it is then not read)."""
    label = workload_priority_class_name(job.obj)
    if label:
        return label, ""
    if has_priority_class(job):  # customPriorityFunc: its answer, empty or not
        return "", job.priority_class() or ""
    return "", pod_priority_class_name(pod_sets)


def priority_value(priority_class: Mapping[str, Any] | None) -> int | None:
    """A fetched (Workload)PriorityClass's ``value`` for a ``PriorityLookup`` (``None``: not found;
    a malformed value counts as 0)."""
    if priority_class is None:
        return None
    value = priority_class.get("value")
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def resolve_priority(
    *,
    wpc_label: str,
    pod_priority_class_name: str,
    wpc_lookup: PriorityLookup,
    pc_lookup: PriorityLookup,
    global_default: tuple[str, int] | None,
) -> ResolvedPriority | PriorityNotFound:
    """``ExtractPriority`` with the lookups injected (see the module docstring for the order)."""
    if wpc_label:
        value = wpc_lookup(wpc_label)
        if value is None:
            return PriorityNotFound(kind=WORKLOAD_PRIORITY_CLASS_KIND, name=wpc_label)
        return ResolvedPriority(ref=_workload_priority_class_ref(wpc_label), value=value)
    if pod_priority_class_name:
        value = pc_lookup(pod_priority_class_name)
        if value is None:
            return PriorityNotFound(kind=POD_PRIORITY_CLASS_KIND, name=pod_priority_class_name)
        return ResolvedPriority(ref=_pod_priority_class_ref(pod_priority_class_name), value=value)
    if global_default is not None:
        name, value = global_default
        return ResolvedPriority(ref=_pod_priority_class_ref(name), value=value)
    return ResolvedPriority(ref=None, value=DEFAULT_PRIORITY)


def construct_workload(
    *,
    job: Mapping[str, Any],
    gvk: GroupVersionKind,
    pod_sets: Sequence[PodSet],
    priority: ResolvedPriority,
    label_keys_to_copy: Iterable[str] = (),
    annotation_keys_to_copy: Iterable[str] = (),
    custom_metric_labels: bool = False,
    admission_gated_by: bool = True,
    partial_admission: bool = True,
    name_extra: str = "",
    max_name_length: int = LONG_MAX_WORKLOAD_NAME_LENGTH,
) -> Workload:
    """The Workload Kueue would create for ``job`` (see the module docstring).

    ``pod_sets`` are the adapter's ``pod_sets()``; they are copied and sanitised (duplicate env vars
    collapsed) and lose ``minCount`` when ``partial_admission`` is off. ``annotation_keys_to_copy``
    applies only with ``custom_metric_labels`` (Kueue's ``CustomMetricLabels`` gate);
    ``admission_gated_by`` copies the ``kueue.x-k8s.io/admission-gated-by`` annotation (gate
    ``AdmissionGatedBy``, on). ``name_extra`` is hashed into the name (elastic jobs).
    Raises ``WorkloadConstructionError`` when the job has no name.
    """
    name = job_name(job)
    if not name:
        raise WorkloadConstructionError("metadata.name", "a job needs a name to own a Workload")
    uid = job_uid(job)

    labels = labels_to_copy(job, label_keys_to_copy)
    if is_valid_job_uid_label(uid):
        labels[JOB_UID_LABEL] = uid
    annotations = provreq_annotations(job)
    job_annotations = annotations_of(job)
    if custom_metric_labels:
        annotations.update(
            {key: job_annotations[key] for key in annotation_keys_to_copy if key in job_annotations}
        )
    if admission_gated_by and job_annotations.get(ADMISSION_GATED_BY_ANNOTATION):
        annotations[ADMISSION_GATED_BY_ANNOTATION] = job_annotations[ADMISSION_GATED_BY_ANNOTATION]

    workload_pod_sets = sanitize_pod_sets(pod_sets)
    if not partial_admission:
        for pod_set in workload_pod_sets:
            pod_set.min_count = None

    metadata = ObjectMeta(
        name=workload_name_for_owner(
            owner_name=name, owner_uid=uid, owner_gvk=gvk, extra=name_extra, max_length=max_name_length
        ),
        namespace=job_namespace(job) or None,
        labels=labels or None,
        annotations=annotations or None,
        finalizers=[RESOURCE_IN_USE_FINALIZER],
        owner_references=[
            OwnerReference(
                api_version=gvk.api_version,
                kind=gvk.kind,
                name=name,
                uid=uid,
                controller=True,
                block_owner_deletion=True,
            )
        ],
    )
    spec = WorkloadSpec(
        pod_sets=workload_pod_sets,
        queue_name=queue_name(job) or None,
        priority_class_ref=priority.ref,
        priority=priority.value,
        maximum_execution_time_seconds=max_exec_time_seconds(job),
    )
    return Workload(metadata=metadata, spec=spec)


class PriorityUpdate(Enum):
    """How an existing Workload relates to its job's priority-class label (``classifyWorkloadsForPriorityUpdate``)."""

    SKIP = "skip"  # pod PriorityClass ref, or quota reserved with no ref (CEL forbids adding one)
    SAME_CLASS = "same-class"  # already names the label's class; its value may still be stale
    NEEDS_CLASS_CHANGE = "needs-class-change"  # re-resolve the label and update ref + priority


def classify_priority_update(*, wpc_label: str, workload: Workload) -> PriorityUpdate:
    """Whether a matching Workload follows the job's ``kueue.x-k8s.io/priority-class`` label.

    Kueue re-resolves the priority only when some Workload is ``NEEDS_CLASS_CHANGE``, then writes
    the result to every non-``SKIP`` Workload whose state differs (``priority_state_equal``).
    """
    ref = workload.spec.priority_class_ref
    conditions = workload.status.conditions if workload.status is not None else None
    if ref is None and is_true(find_condition_view(conditions, ConditionType.QUOTA_RESERVED)):
        return PriorityUpdate.SKIP
    if ref is not None and not (
        ref.kind == WORKLOAD_PRIORITY_CLASS_KIND and ref.group == WORKLOAD_PRIORITY_CLASS_GROUP
    ):
        return PriorityUpdate.SKIP
    current = ref.name if ref is not None else ""
    return PriorityUpdate.SAME_CLASS if current == wpc_label else PriorityUpdate.NEEDS_CLASS_CHANGE


def priority_state_equal(workload: Workload, priority: ResolvedPriority) -> bool:
    """``priorityStateEqual``: the Workload already has exactly this ref and value."""
    spec = workload.spec
    return spec.priority == priority.value and spec.priority_class_ref == priority.ref


def propagate_admission_gated_by(job: Mapping[str, Any], workload: Workload) -> bool:
    """``PropagateAdmissionGatedByAnnotation``: sync the job's admission gates onto the Workload.

    Sets, changes or removes ``kueue.x-k8s.io/admission-gated-by`` on ``workload`` in place;
    returns whether it changed (then the caller updates the Workload).
    """
    wanted = annotations_of(job).get(ADMISSION_GATED_BY_ANNOTATION, "")
    annotations = workload.metadata.annotations
    current = (annotations or {}).get(ADMISSION_GATED_BY_ANNOTATION, "")
    if wanted == current:
        return False
    if annotations is None:
        annotations = {}
        workload.metadata.annotations = annotations
    if wanted:
        annotations[ADMISSION_GATED_BY_ANNOTATION] = wanted
    else:
        annotations.pop(ADMISSION_GATED_BY_ANNOTATION, None)
    return True
