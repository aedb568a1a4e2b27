"""Starting and stopping a job through its adapter, and writing the result back.

The adapter mutates the raw job in memory; this module turns the mutation into the smallest merge
patch, guarded by the job's ``resourceVersion``, and records Kueue's events (``Started`` "Admitted by
clusterQueue <cq>", ``Stopped`` with the stop message, ``Suspended`` for child jobs).

Invariants:

* **No blind writes.** Every job write is a merge patch carrying the resourceVersion the decision was
  based on; a concurrent change turns into ``ConflictError`` and a retry with fresh data.
* **Multi-step stops are planned on the server's answers.** Adapters with ``JobWithCustomStop``
  return the remaining steps for an object's state. We apply one step, then ask the adapter again
  with the object the server returned, and apply the next step not yet applied: so whether a batch
  Job still has ``status.startTime`` (kube-apiserver refuses template changes until it is cleared)
  is decided on the write's result, never on a possibly older read. Each write is locked on the
  resourceVersion the previous one returned; a crash between steps (batch Job: suspend, clear
  startTime, restore templates) leaves the ``kueue.x-k8s.io/stopping`` mark, so the next reconcile
  plans the rest.
* **``Stopped`` is recorded as Kueue records it**: when this call suspended the job, also if the
  status reset then failed, but not if the template restore failed or has to wait (a batch Job with
  active pods: ``JobStillActiveError``, where Kueue's restore write fails). A job with the stopping
  mark counts as not suspended, so the call that finally restores it suspends it "again" and
  records the one ``Stopped`` (``jobframework.stopJob``).
* **Restores use the Workload's spec pod sets**, never the admitted ones, so a stop gives back the
  user's exact template.
"""

from __future__ import annotations

from collections.abc import Sequence

from reconciler.ports import ClusterWriter, EventSink, JobStillActiveError
from shared.constants import STOPPING_ANNOTATION, EventReason
from shared.frameworks.base import STOP_PHASE_ORDER, GenericJob, JobWithCustomStop, StopStep
from shared.frameworks.capabilities import has_custom_stop
from shared.frameworks.copy_on_write import CopyOnWriteJob
from shared.jsontree import copy_json
from shared.kueue.podset import PodSetInfo, pod_set_info_from_pod_set
from shared.kueue.workload_state import truncate_event_message
from shared.merge_patch import apply_merge_patch, create_merge_patch, with_optimistic_lock
from shared.models.base import WireDict
from shared.models.workload import Workload

__all__ = [
    "MAX_STOP_STEPS",
    "JobControl",
]

MAX_STOP_STEPS = 8


def _snapshot(job: GenericJob) -> WireDict:
    """The job as it is now, to diff against once the adapter changed it: the cached object itself
    while a copy-on-write job is unchanged (its first change copies it), else a deep copy."""
    if isinstance(job, CopyOnWriteJob) and not job.owned:
        return job.obj
    return copy_json(job.obj)


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

    async def patch_job(self, job: GenericJob, *, before: WireDict, subresource: str | None = None) -> None:
        """Send the difference between ``before`` and the adapter's current object, locked."""
        after = job.obj
        patch = create_merge_patch(before, after)
        if not patch:
            return
        metadata = before.get("metadata") or {}
        locked = with_optimistic_lock(patch, resource_version=str(metadata.get("resourceVersion", "")))
        await self._writer.merge_patch(
            job.gvk,
            metadata.get("namespace"),
            str(metadata.get("name")),
            locked,
            subresource=subresource,
            read_back=False,
        )

    async def start(self, job: GenericJob, *, infos: Sequence[PodSetInfo], cluster_queue: str) -> None:
        """Unsuspend with admission data injected; raises ``PodSetInfoError`` (permanent) on conflicts."""
        before = _snapshot(job)
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
        custom: object = job
        if has_custom_stop(custom):
            return await self._stop_in_steps(job, infos=infos, message=message)
        if job.is_suspended():
            return False
        before = _snapshot(job)
        job.suspend()
        if infos:
            job.restore_pod_sets_info(infos)
        await self.patch_job(job, before=before)
        self._record_stopped(job, message)
        return True

    async def suspend_child(self, job: GenericJob) -> None:
        before = _snapshot(job)
        job.suspend()
        await self.patch_job(job, before=before)
        self._events.record(
            regarding=before,
            event_type="Normal",
            reason=EventReason.SUSPENDED,
            message="Kueue managed child job suspended",
        )

    def _record_stopped(self, job: GenericJob, message: str) -> None:
        self._events.record(
            regarding=job.obj,
            event_type="Normal",
            reason=EventReason.STOPPED,
            message=truncate_event_message(message),
        )

    async def _stop_in_steps(self, job: GenericJob, *, infos: Sequence[PodSetInfo], message: str) -> bool:
        assert isinstance(job, JobWithCustomStop), "custom-stop adapters implement stop_steps"
        applied: list[StopStep] = []
        stopped_now = False  # Kueue's stoppedNow: this call "suspended" the job
        suspend_written = False  # ... with a write that changed it
        for _ in range(MAX_STOP_STEPS):
            step = _next_step(job.stop_steps(infos), applied=applied)
            if step is None:
                break
            if apply_merge_patch(job.obj, step.merge_patch) == job.obj:
                # Kueue's "suspend again" of a job with the stopping mark changes nothing: not sent
                # (so it cannot fail on a stale read either), but it is the completing call's suspend
                applied.append(step)
                stopped_now = stopped_now or step.phase == "suspend"
                continue
            metadata = job.obj.get("metadata") or {}
            locked = with_optimistic_lock(
                step.merge_patch, resource_version=str(metadata.get("resourceVersion", ""))
            )
            try:
                updated = await self._writer.merge_patch(
                    job.gvk,
                    metadata.get("namespace"),
                    str(metadata.get("name")),
                    locked,
                    subresource=step.subresource,
                )
            except Exception:
                # Kueue records Stopped when its suspend went through and a later write failed; a
                # suspend we did not send (the job already was) is no stop of this call
                if suspend_written and step.phase != "restore":
                    self._record_stopped(job, message)
                raise
            if isinstance(job, CopyOnWriteJob):
                job.own()  # the object is replaced below: never in the informer's cache
            job.obj.clear()
            job.obj.update(updated)
            applied.append(step)
            suspend_written = suspend_written or step.phase == "suspend"
            stopped_now = stopped_now or suspend_written
        annotations = (job.obj.get("metadata") or {}).get("annotations") or {}
        if annotations.get(STOPPING_ANNOTATION) == "true":  # the restore waits for the pods
            raise JobStillActiveError(
                f"{job.gvk.kind} {(job.obj.get('metadata') or {}).get('name')}: "
                "the pod templates are restored once no pod is active"
            )
        if stopped_now:
            self._record_stopped(job, message)
        return stopped_now


def _next_step(plan: Sequence[StopStep], *, applied: Sequence[StopStep]) -> StopStep | None:
    """The first planned step not applied yet and not earlier in Kueue's order than the last one."""
    floor = STOP_PHASE_ORDER[applied[-1].phase] if applied else -1
    for step in plan:
        if STOP_PHASE_ORDER[step.phase] >= floor and step not in applied:
            return step
    return None
