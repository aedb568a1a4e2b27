"""Kueue's job reconciler (``jobframework.ReconcileGenericJob``) for any adapter-described kind.

One call to ``JobReconciler.reconcile(key)`` moves one job one step closer to agreement with its
Workload, exactly in Kueue's order (reference notes §2): finalize a deleted job's Workloads; respect
the namespace selector; find a managed ancestor (children are only kept suspended); gate on the
queue name; ensure exactly one matching Workload; then, first match wins: Workload finished ->
drop its finalizer; Workload deleting -> stop; job finished -> finish the Workload; no Workload ->
create it; reclaimable pods; PodsReady; evicted -> stop and release quota once the job is idle,
then delete the job once a Kueue deactivation's retention period has passed
(``reconciler.retention``); suspended -> start when admitted, else sync the queue name; running but
not admitted -> stop (except an elastic job: its pods wait behind the ``kueue.x-k8s.io/elastic-job``
scheduling gate while a new slice is admitted, and Kueue's ElasticJobUngater, not this reconciler,
releases them).

Invariants:

* **Each step writes at most one object and returns.** The next reconcile (triggered by the watch
  event of that very write) continues from fresh state; a crash between any two writes therefore
  converges on restart, and a second replica acting on stale data is stopped by resourceVersion
  preconditions.
* **Never more than one Workload per job.** Non-matching Workloads are updated in place only when
  the job is suspended and holds no quota; otherwise deleted (``DeletedWorkload``) before a new one
  is created with the deterministic name, so a retried create is ``AlreadyExists``, not a duplicate.
* **Bad jobs do not stop the controller.** An object its adapter cannot read yields one Warning
  event naming the path and no Workload (``UnretryableError``: no hot retry loop). A write the API
  server refuses as invalid (422) yields a Warning ``WriteRejected`` naming the refused fields and is
  re-raised, so the work queue retries it with exponential backoff, never in a hot loop.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Protocol

from reconciler.ancestry import (
    ChainLimitReachedError,
    OwnerKinds,
    find_managed_ancestor,
)
from reconciler.job_control import JobControl
from reconciler.ports import ClusterReader, ClusterWriter, EventSink, InvalidError, JobKey, NotFoundError
from reconciler.retention import DELETED_JOB_MESSAGE, DeactivationRetention
from reconciler.workload_sync import ReadWorkload, WorkloadSync, is_deleting
from shared.constants import DEFAULT_PODSET_NAME, Condition, EventReason, Reason
from shared.frameworks.base import AdapterError, GenericJob, JobWithReclaimablePods
from shared.frameworks.capabilities import has_reclaimable_pods
from shared.frameworks.copy_on_write import copy_on_write
from shared.kube import NAMESPACE_GVK
from shared.kueue.jobmeta import queue_name
from shared.kueue.podset import PodSetInfoError
from shared.kueue.workload_slicing import FEATURE_GATE_DEFAULT
from shared.kueue.workload_slicing import enabled as slicing_enabled
from shared.kueue.workload_state import (
    desired_pods_ready,
    ensure_status,
    eviction_condition,
    has_quota_reservation,
    is_admitted,
    is_evicted,
    is_finished,
    pods_ready_up_to_date,
    set_requeued_condition,
    truncate_event_message,
    unset_quota_reservation,
)
from shared.models.base import WireDict
from shared.models.workload import PodSet, ReclaimablePod, Workload

__all__ = [
    "NAMESPACE_GVK",
    "AdapterFactory",
    "JobReconciler",
    "NamespaceSelector",
    "ReconcileResult",
    "ReconcilerSettings",
    "UnretryableError",
]

logger = logging.getLogger(__name__)


class UnretryableError(Exception):
    """Retrying cannot help (the object itself is wrong); logged, not requeued."""


class NamespaceSelector(Protocol):
    def matches(self, labels: dict[str, str]) -> bool: ...


class AdapterFactory(Protocol):
    def adapter_for(self, obj: WireDict) -> GenericJob: ...


@dataclass(frozen=True)
class ReconcilerSettings:
    owner_kinds: OwnerKinds
    manage_jobs_without_queue_name: bool = False
    namespace_selector: NamespaceSelector | None = None
    wait_for_pods_ready: bool = True
    label_keys_to_copy: tuple[str, ...] = ()
    workload_name_max_length: int = 253
    #: ``objectRetentionPolicies.workloads.afterDeactivatedByKueue``; ``None``: never delete
    deactivation_retention: timedelta | None = None
    #: Kueue's ``ElasticJobsViaWorkloadSlices`` feature gate
    elastic_jobs_via_workload_slices: bool = FEATURE_GATE_DEFAULT
    #: Kueue's ``WorkloadRequestUseMergePatch`` feature gate (Alpha, off): Workload status writes as
    #: strict merge patches instead of Kueue's server-side applies
    workload_request_use_merge_patch: bool = False


@dataclass(frozen=True)
class ReconcileResult:
    requeue_after: float | None = None


DONE = ReconcileResult()


def _labels(obj: WireDict | None) -> dict[str, str]:
    return dict(((obj or {}).get("metadata") or {}).get("labels") or {})


class JobReconciler:
    def __init__(
        self,
        *,
        adapters: AdapterFactory,
        reader: ClusterReader,
        writer: ClusterWriter,
        events: EventSink,
        settings: ReconcilerSettings,
        clock: Callable[[], datetime],
    ) -> None:
        self._adapters = adapters
        self._reader = reader
        self._writer = writer
        self._events = events
        self._settings = settings
        self._clock = clock
        self._control = JobControl(writer=writer, events=events)
        self._retention = DeactivationRetention(after=settings.deactivation_retention)
        self._workloads = WorkloadSync(
            reader=reader,
            writer=writer,
            events=events,
            control=self._control,
            label_keys_to_copy=settings.label_keys_to_copy,
            name_max_length=settings.workload_name_max_length,
            clock=clock,
            elastic_jobs=settings.elastic_jobs_via_workload_slices,
            merge_patch=settings.workload_request_use_merge_patch,
        )

    async def reconcile(self, key: JobKey) -> ReconcileResult:
        try:
            return await self._reconcile(key)
        except UnretryableError as exc:
            logger.info("unretryable error reconciling %s: %s", key, exc)
            return DONE

    async def _reconcile(self, key: JobKey) -> ReconcileResult:
        obj = await self._reader.get(key.gvk, key.namespace, key.name)
        if obj is None or is_deleting(obj):
            await self._workloads.finalize_orphans(key=key, job=obj)
            return DONE
        job = self._adapter(obj)

        namespace = await self._reader.get(NAMESPACE_GVK, None, key.namespace)
        if namespace is None:
            return DONE
        selector = self._settings.namespace_selector
        if selector is not None and not selector.matches(_labels(namespace)):
            logger.debug("namespace %s not opted in for Kueue management", key.namespace)
            return DONE

        try:
            ancestor = await find_managed_ancestor(
                job=obj,
                reader=self._reader,
                owner_kinds=self._settings.owner_kinds,
                manage_jobs_without_queue_name=self._settings.manage_jobs_without_queue_name,
            )
        except ChainLimitReachedError:
            self._events.record(
                regarding=obj,
                event_type="Warning",
                reason=EventReason.JOB_NESTING_TOO_DEEP,
                message="Terminated search for Kueue-managed Job because ancestor depth exceeded limit of 10",
            )
            raise

        gated_out = ancestor is None or not queue_name(ancestor)
        if not queue_name(obj) and not self._settings.manage_jobs_without_queue_name and gated_out:
            return DONE
        if ancestor is not None:
            await self._handle_child(job, ancestor=ancestor)
            return DONE

        try:
            ensured = await self._workloads.ensure_one(job)
            return await self._sync(job, ensured.workload, pod_sets=ensured.pod_sets)
        except AdapterError as exc:
            self._warn_malformed(job.obj, exc)
            raise UnretryableError(str(exc)) from exc
        except InvalidError as exc:
            fields = ", ".join(exc.fields) or "the object"
            self._events.record(
                regarding=job.obj,
                event_type="Warning",
                reason=EventReason.WRITE_REJECTED,
                message=truncate_event_message(f"The API server rejected a write to {fields}: {exc.message}"),
            )
            raise

    def _adapter(self, obj: WireDict) -> GenericJob:
        """The job's adapter; ``obj`` may be the informer's cached object (``shared.frameworks.copy_on_write``
        copies it before the first change)."""
        try:
            return copy_on_write(self._adapters.adapter_for(obj), self._adapters.adapter_for)
        except AdapterError as exc:
            self._warn_malformed(obj, exc)
            raise UnretryableError(str(exc)) from exc

    def _warn_malformed(self, obj: WireDict, exc: AdapterError) -> None:
        self._events.record(
            regarding=obj,
            event_type="Warning",
            reason=EventReason.ERR_WORKLOAD_COMPOSE,
            message=truncate_event_message(f"Cannot build the Workload for this job: {exc}"),
        )

    async def _handle_child(self, job: GenericJob, *, ancestor: WireDict) -> None:
        if job.finished().finished or job.is_suspended():
            return
        ancestor_workload = await self._workloads.latest_unfinished_for(ancestor)
        if ancestor_workload is None:
            await self._control.suspend_child(job)
            return
        gate = self._settings.elastic_jobs_via_workload_slices
        if self._workloads.slicing(job) or slicing_enabled(ancestor, feature_gate=gate):
            # during a scale-up the newest slice is not admitted yet: only eviction suspends
            if is_evicted(ancestor_workload):
                await self._control.suspend_child(job)
        elif not is_admitted(ancestor_workload):
            await self._control.suspend_child(job)

    async def _sync(
        self, job: GenericJob, read: ReadWorkload | None, *, pod_sets: list[PodSet] | None
    ) -> ReconcileResult:
        """The steps after ``ensure_one``. Decisions read the Workload's wire (``read.wire``); its
        model is parsed only by a step that changes the Workload or needs its typed parts."""
        now = self._clock()
        wire = read.wire if read is not None else None
        if read is not None and is_finished(read.wire):
            self._record_finished(job, read)
            await self._workloads.remove_finalizer(read)
            return DONE
        if read is not None and read.metadata.get("deletionTimestamp"):
            await self._control.stop(job, workload=read.model, message="Workload is deleted")
            await self._workloads.remove_finalizer(read)
            return DONE

        finished = job.finished()
        if finished.finished:
            if read is not None:  # not finished: see above (``finish_workload``, on the wire)
                await self._workloads.finish(
                    read,
                    reason=Reason.SUCCEEDED if finished.success else Reason.FAILED,
                    message=finished.message,
                )
                self._record_finished(job, read)
            return DONE

        if read is None or wire is None:
            await self._workloads.handle_no_workload(job, pod_sets=pod_sets)
            return DONE

        if has_reclaimable_pods(job) and await self._sync_reclaimable(job, read):
            return DONE

        if self._settings.wait_for_pods_ready:
            pods_ready = job.pods_ready()
            if not pods_ready_up_to_date(wire, pods_ready=pods_ready):
                status, reason, message = desired_pods_ready(wire, pods_ready=pods_ready)
                await self._workloads.set_condition_and_update(
                    read,
                    condition_type=Condition.PODS_READY,
                    status=status,
                    reason=reason,
                    message=message,
                    now=now,
                )
                return DONE

        if is_evicted(wire):
            workload = read.model
            evicted = eviction_condition(workload)
            assert evicted is not None
            await self._control.stop(job, workload=workload, message=evicted.message)
            if has_quota_reservation(workload) and not job.is_active():
                requeue = evicted.reason in (Reason.PREEMPTED, Reason.NODE_FAILURES)
                set_requeued_condition(
                    workload, reason=evicted.reason, message=evicted.message, requeued=requeue, now=now
                )
                unset_quota_reservation(
                    workload, reason=Reason.PENDING_EVALUATION, message=evicted.message, now=now
                )
                await self._workloads.patch_admission_status(workload)
            return await self._delete_after_deactivation_retention(job, workload)

        if job.is_suspended():
            if is_admitted(wire):
                await self._start(job, read)
                return DONE
            if has_quota_reservation(wire):
                self._record_pending_checks(job, read.model)
            await self._workloads.sync_queue_name(job, read)
            return DONE

        if not is_admitted(wire) and not self._workloads.slicing(job):
            await self._control.stop(job, workload=read.model, message="Not admitted by cluster queue")
        return DONE

    async def _delete_after_deactivation_retention(
        self, job: GenericJob, workload: Workload
    ) -> ReconcileResult:
        """Kueue's ``handleWorkloadAfterDeactivatedPolicy``, the last act of the evicted step: delete
        the job (background propagation) once Kueue's deactivation has outlived the retention period,
        else come back when it will have. Nothing to do for other evictions or an unset policy."""
        remaining = self._retention.remaining(workload, now=self._clock())
        if remaining is None:
            return DONE
        if remaining > timedelta(0):
            return ReconcileResult(requeue_after=remaining.total_seconds())
        metadata = job.obj.get("metadata") or {}
        logger.info(
            "deleting %s %s/%s: deactivation retention period expired (retention %s)",
            job.gvk.kind,
            metadata.get("namespace"),
            metadata.get("name"),
            self._settings.deactivation_retention,
        )
        try:
            # The UID precondition (Kueue sends none) only spares a same-named job created since.
            await self._writer.delete(
                job.gvk, metadata.get("namespace"), str(metadata.get("name")), uid=metadata.get("uid")
            )
        except NotFoundError:
            return DONE
        self._events.record(
            regarding=job.obj, event_type="Normal", reason=EventReason.DELETED, message=DELETED_JOB_MESSAGE
        )
        return DONE

    async def _start(self, job: GenericJob, read: ReadWorkload) -> None:
        workload = read.model
        assert workload.status is not None and workload.status.admission is not None
        infos = await self._workloads.pod_set_infos_for_start(read)
        try:
            await self._control.start(job, infos=infos, cluster_queue=workload.status.admission.cluster_queue)
        except PodSetInfoError as exc:
            await self._workloads.finish(read, reason=Reason.FAILED_TO_START, message=str(exc))

    async def _sync_reclaimable(self, job: JobWithReclaimablePods, read: ReadWorkload) -> bool:
        """Kueue's ``UpdateReclaimablePods``, compared on the wire (pod set names and counts are
        defaulted as the CRD defaults them) and written from the model."""
        counts = {
            str(pod_set.get("name", DEFAULT_PODSET_NAME)): int(pod_set.get("count", 1))
            for pod_set in read.spec.get("podSets") or []
        }
        desired = [
            (item.name, min(item.count, counts.get(item.name, 0)))
            for item in job.reclaimable_pods()
            if item.name in counts
        ]
        status = read.wire.get("status") or {}
        current = status.get("reclaimablePods") or []
        if set(desired) == {(str(p.get("name")), int(p.get("count", 0))) for p in current}:
            return False
        workload = read.model
        ensure_status(workload).reclaimable_pods = [
            ReclaimablePod(name=name, count=count) for name, count in desired
        ] or None
        await self._workloads.update_reclaimable_pods(workload)
        return True

    def _record_finished(self, job: GenericJob, read: ReadWorkload) -> None:
        metadata = read.metadata
        self._events.record(
            regarding=job.obj,
            event_type="Normal",
            reason=EventReason.FINISHED_WORKLOAD,
            message=f"Workload '{metadata.get('namespace')}/{metadata.get('name')}' is declared finished",
        )

    def _record_pending_checks(self, job: GenericJob, workload: Workload) -> None:
        checks = (workload.status.admission_checks if workload.status else None) or []
        message = "; ".join(f"{c.name}: {c.message}" for c in checks if c.state == "Pending" and c.message)
        if message:
            self._events.record(
                regarding=job.obj,
                event_type="Normal",
                reason=EventReason.UPDATED_ADMISSION_CHECK,
                message=truncate_event_message(message),
            )
