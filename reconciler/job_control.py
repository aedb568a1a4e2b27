"""Starting and stopping a job through its adapter, and writing the result back.

The adapter mutates the raw job in memory; this module turns the mutation into the smallest merge
patch, guarded by the job's ``resourceVersion``, and records Kueue's events (``Started`` "Admitted by
clusterQueue <cq>", ``Stopped`` with the stop message, ``Suspended`` for child jobs).

Invariants:

* **No blind writes.** Every job write is a merge patch carrying the resourceVersion the decision was
  based on; a concurrent change turns into ``ConflictError`` and a retry with fresh data.
* **Multi-step stops resume.** Adapters with ``JobWithCustomStop`` return the remaining steps for
  the object's *current* state and we apply them in order, each locked on the resourceVersion the
  previous write returned; a crash between steps (batch Job: suspend, clear startTime, restore
  templates) leaves the ``kueue.x-k8s.io/stopping`` mark, so the next reconcile plans the rest.
* **Restores use the Workload's spec pod sets**, never the admitted ones, so a stop gives back the
  user's exact template.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from reconciler.ports import ClusterWriter, EventSink
from shared.constants import STOPPING_ANNOTATION, EventReason
from shared.frameworks.base import GenericJob, JobWithCustomStop
from shared.frameworks.capabilities import has_custom_stop
from shared.jsontree import copy_json
from shared.merge_patch import create_merge_patch, with_optimistic_lock
from shared.models.workload import Workload
from shared.podset import PodSetInfo, pod_set_info_from_pod_set
from shared.workload_state import truncate_message

__all__ = [
    "MAX_EVENT_MESSAGE_LENGTH",
    "MAX_STOP_STEPS",
    "JobControl",
    "truncate_event_message",
]

WireDict = dict[str, Any]

MAX_EVENT_MESSAGE_LENGTH = 1024
MAX_STOP_STEPS = 8


def truncate_event_message(message: str) -> str:
    """Kueue's ``api.TruncateEventMessage``: events carry at most 1 KiB (bytes) of message."""
    return truncate_message(message, limit=MAX_EVENT_MESSAGE_LENGTH)


def restore_infos(workload: Workload | None) -> list[PodSetInfo]:
    """The pod-set infos a stop restores: the Workload's *spec* pod sets (Kueue ``FromPodSet``)."""
    if workload is None:
        return []
    return [pod_set_info_from_pod_set(pod_set) for pod_set in workload.spec.pod_sets]


class JobControl:
    """Writes a job's adapter-made changes back to the API server."""

    def __init__(self, *, writer: ClusterWriter, events: EventSink) -> None:
        self._writer = writer
        self._events = events

    async def patch_job(
        self, job: GenericJob, *, before: WireDict, subresource: str | None = None
    ) -> WireDict:
        """Send the difference between ``before`` and the adapter's current object, locked."""
        after = job.obj
        patch = create_merge_patch(before, after)
        if not patch:
            return after
        metadata = before.get("metadata") or {}
        locked = with_optimistic_lock(patch, resource_version=str(metadata.get("resourceVersion", "")))
        return await self._writer.merge_patch(
            job.gvk, metadata.get("namespace"), str(metadata.get("name")), locked, subresource=subresource
        )

    async def start(self, job: GenericJob, *, infos: Sequence[PodSetInfo], cluster_queue: str) -> None:
        """Unsuspend with admission data injected; raises ``PodSetInfoError`` (permanent) on conflicts."""
        before = copy_json(job.obj)
        job.run_with_pod_sets_info(infos)
        await self.patch_job(job, before=before)
        self._events.record(
            regarding=before,
            event_type="Normal",
            reason=EventReason.STARTED,
            message=f"Admitted by clusterQueue {cluster_queue}",
        )

    async def stop(self, job: GenericJob, *, workload: Workload | None, message: str) -> bool:
        """Suspend and restore templates; return whether the job was stopped by this call."""
        infos = restore_infos(workload)
        if has_custom_stop(job):
            stopped_now = await self._run_stop_steps(job, infos=infos)
        else:
            if job.is_suspended():
                return False
            before = copy_json(job.obj)
            job.suspend()
            if infos:
                job.restore_pod_sets_info(infos)
            await self.patch_job(job, before=before)
            stopped_now = True
        if stopped_now:
            self._events.record(
                regarding=job.obj,
                event_type="Normal",
                reason=EventReason.STOPPED,
                message=truncate_event_message(message),
            )
        return stopped_now

    async def suspend_child(self, job: GenericJob) -> None:
        before = copy_json(job.obj)
        job.suspend()
        await self.patch_job(job, before=before)
        self._events.record(
            regarding=before,
            event_type="Normal",
            reason=EventReason.SUSPENDED,
            message="Kueue managed child job suspended",
        )

    async def _run_stop_steps(self, job: JobWithCustomStop, *, infos: Sequence[PodSetInfo]) -> bool:
        generic = job if isinstance(job, GenericJob) else None
        assert generic is not None, "custom-stop adapters are GenericJobs"
        annotations = (generic.obj.get("metadata") or {}).get("annotations") or {}
        resuming = annotations.get(STOPPING_ANNOTATION) == "true"
        applied = 0
        for step in job.stop_steps(infos)[:MAX_STOP_STEPS]:
            metadata = generic.obj.get("metadata") or {}
            locked = with_optimistic_lock(
                step.merge_patch, resource_version=str(metadata.get("resourceVersion", ""))
            )
            updated = await self._writer.merge_patch(
                generic.gvk,
                metadata.get("namespace"),
                str(metadata.get("name")),
                locked,
                subresource=step.subresource,
            )
            generic.obj.clear()
            generic.obj.update(updated)
            applied += 1
        return applied > 0 and not resuming
