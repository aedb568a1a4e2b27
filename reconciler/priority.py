"""Resolving a job's Workload priority (Kueue's ``ExtractPriority``, reference notes §2.7).

Order: the ``kueue.x-k8s.io/priority-class`` label names a WorkloadPriorityClass; else the adapter's
own pod PriorityClass (``JobWithPriorityClass``); else the first pod template with
``priorityClassName``; else the cluster's ``globalDefault`` PriorityClass (the lowest value if a race
left several); else no reference and priority 0. ``spec.priority`` is always set.

A missing WorkloadPriorityClass is reported as Kueue does — a Warning event
``WorkloadPriorityClassNotFound`` with ``WorkloadPriorityClass "<name>" not found`` — and the error
is returned, so the Workload is not created until the class exists (retried with backoff).
"""

from __future__ import annotations

from reconciler.ports import ClusterReader, EventSink
from shared.constants import WORKLOAD_PRIORITY_CLASS_GVK, EventReason
from shared.frameworks.base import GenericJob
from shared.frameworks.capabilities import has_priority_class
from shared.jobmeta import workload_priority_class_name
from shared.kube.kinds import PRIORITY_CLASS_GVK
from shared.models.base import WireDict
from shared.models.workload import PodSet, PriorityClassRef
from shared.workload_builder import ResolvedPriority

__all__ = [
    "PRIORITY_CLASS_GVK",
    "WORKLOAD_PRIORITY_CLASS_GVK",
    "PriorityClassNotFoundError",
    "PriorityResolver",
]


class PriorityClassNotFoundError(Exception):
    """The (Workload)PriorityClass a job names does not exist."""


def _value(obj: WireDict) -> int:
    value = obj.get("value", 0)
    return int(value) if isinstance(value, int | float) else 0


def pod_priority_class_name(pod_sets: list[PodSet]) -> str:
    for pod_set in pod_sets:
        name = (pod_set.template.get("spec") or {}).get("priorityClassName")
        if isinstance(name, str) and name:
            return name
    return ""


class PriorityResolver:
    def __init__(self, *, reader: ClusterReader, events: EventSink) -> None:
        self._reader = reader
        self._events = events

    async def resolve(self, *, job: GenericJob, pod_sets: list[PodSet]) -> ResolvedPriority:
        label = workload_priority_class_name(job.obj)
        if label:
            wpc = await self._reader.get(WORKLOAD_PRIORITY_CLASS_GVK, None, label)
            if wpc is None:
                self._events.record(
                    regarding=job.obj,
                    event_type="Warning",
                    reason=EventReason.WORKLOAD_PRIORITY_CLASS_NOT_FOUND,
                    message=f'WorkloadPriorityClass "{label}" not found',
                )
                raise PriorityClassNotFoundError(
                    f'workloadpriorityclasses.kueue.x-k8s.io "{label}" not found'
                )
            ref = PriorityClassRef(group="kueue.x-k8s.io", kind="WorkloadPriorityClass", name=label)
            return ResolvedPriority(ref=ref, value=_value(wpc))
        name = (job.priority_class() or "") if has_priority_class(job) else pod_priority_class_name(pod_sets)
        if name:
            pc = await self._reader.get(PRIORITY_CLASS_GVK, None, name)
            if pc is None:
                raise PriorityClassNotFoundError(f'priorityclasses.scheduling.k8s.io "{name}" not found')
            ref = PriorityClassRef(group="scheduling.k8s.io", kind="PriorityClass", name=name)
            return ResolvedPriority(ref=ref, value=_value(pc))
        defaults = [
            pc for pc in await self._reader.list_priority_classes() if pc.get("globalDefault") is True
        ]
        if not defaults:
            return ResolvedPriority(ref=None, value=0)
        lowest = min(defaults, key=_value)
        name = str((lowest.get("metadata") or {}).get("name"))
        return ResolvedPriority(
            ref=PriorityClassRef(group="scheduling.k8s.io", kind="PriorityClass", name=name),
            value=_value(lowest),
        )
