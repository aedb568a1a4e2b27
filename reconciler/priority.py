"""Resolving a job's Workload priority: Kueue's ``ExtractPriority`` read through the reconciler's caches.

The rule is ``shared.workload_builder`` (``priority_class_names`` says which class the job names,
``resolve_priority`` resolves it; ``explain`` calls the same two). This module fetches what they ask
for and acts on the answer. ``spec.priority`` is always set.

A missing WorkloadPriorityClass is reported as Kueue does — a Warning event
``WorkloadPriorityClassNotFound`` with ``WorkloadPriorityClass "<name>" not found`` — and the error
is returned, so the Workload is not created until the class exists (retried with backoff).
"""

from __future__ import annotations

from reconciler.ports import ClusterReader, EventSink
from shared.constants import WORKLOAD_PRIORITY_CLASS_GVK
from shared.frameworks.base import GenericJob
from shared.kube.kinds import PRIORITY_CLASS_GVK
from shared.models.workload import PodSet
from shared.workload_builder import (
    PriorityNotFound,
    ResolvedPriority,
    global_default_priority_class,
    priority_class_names,
    priority_value,
    resolve_priority,
)

__all__ = [
    "PRIORITY_CLASS_GVK",
    "WORKLOAD_PRIORITY_CLASS_GVK",
    "PriorityClassNotFoundError",
    "PriorityResolver",
]


class PriorityClassNotFoundError(Exception):
    """The (Workload)PriorityClass a job names does not exist."""


class PriorityResolver:
    def __init__(self, *, reader: ClusterReader, events: EventSink) -> None:
        self._reader = reader
        self._events = events

    async def resolve(self, *, job: GenericJob, pod_sets: list[PodSet]) -> ResolvedPriority:
        workload_class, pod_class = priority_class_names(job, pod_sets=pod_sets)
        if workload_class:
            named = await self._reader.get(WORKLOAD_PRIORITY_CLASS_GVK, None, workload_class)
        elif pod_class:
            named = await self._reader.get(PRIORITY_CLASS_GVK, None, pod_class)
        else:
            named = None
        global_default = (
            None
            if workload_class or pod_class
            else global_default_priority_class(await self._reader.list_priority_classes())
        )
        resolved = resolve_priority(
            wpc_label=workload_class,
            pod_priority_class_name=pod_class,
            wpc_lookup=lambda _: priority_value(named),
            pc_lookup=lambda _: priority_value(named),
            global_default=global_default,
        )
        if isinstance(resolved, PriorityNotFound):
            if resolved.event_reason is not None:
                self._events.record(
                    regarding=job.obj,
                    event_type="Warning",
                    reason=resolved.event_reason,
                    message=resolved.event_message,
                )
            raise PriorityClassNotFoundError(resolved.error_message)
        return resolved
