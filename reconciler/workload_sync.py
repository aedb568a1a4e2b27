"""Keeping exactly one Workload per job: find, adopt, update, delete, create, finalize.

This is Kueue's ``ensureOneWorkload`` / ``handleJobWithNoWorkload`` / ``UpdateWorkloadPriority`` /
``FinalizeOrphanedWorkload`` (reference notes §2.1-§2.2, §2.7) over the reconciler's ports.

Invariants:

* A Workload is *matching* when Kueue's equivalence check says so (``shared.kueue.equivalence``); the first
  matching one is kept, every other one is deleted — finalizer first, so deletion completes.
* A job never gets a second Workload while one exists: the deterministic name
  (``shared.kueue.naming``) makes a repeated create fail with AlreadyExists.
* Prebuilt Workloads are adopted (controller reference + ``kueue.x-k8s.io/job-uid``) or, when out of
  sync, finished ``OutOfSync``; they are never created by us.
* Priority follows the ``kueue.x-k8s.io/priority-class`` label, except for Workloads whose priority
  comes from a pod PriorityClass or that reserved quota without any priority reference (the API
  forbids adding one then); the ``kueue.x-k8s.io/admission-gated-by`` annotation follows the job's
  (``UpdateAdmissionGatedBy``, event ``UpdatedWorkload``), before the priority, as in Kueue.
* Elastic jobs (``shared.kueue.workload_slicing``, gate ``ElasticJobsViaWorkloadSlices``) take Kueue's
  slice path first (``reconciler.workload_slices``): their Workloads are *slices*, named with the
  job's generation, matched on pod set names and counts only, and never deleted; only a change of
  pod set names falls back to the matching above. A running elastic job may get a new slice.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from reconciler.job_control import JobControl
from reconciler.ports import (
    WORKLOAD_GVK,
    ClusterReader,
    ClusterWriter,
    EventSink,
    JobKey,
    NotFoundError,
)
from reconciler.priority import PriorityResolver
from reconciler.verdicts import EquivalenceVerdicts, decide, decide_on_wire, is_status_blind
from reconciler.workload_slices import SliceSync
from shared.constants import (
    ADMISSION_GATED_BY_ANNOTATION,
    JOB_UID_LABEL,
    RESOURCE_FLAVOR_GVK,
    RESOURCE_IN_USE_FINALIZER,
    Condition,
    EventReason,
    Reason,
)
from shared.frameworks.base import GenericJob
from shared.frameworks.strconv import quote
from shared.frameworks.workload_builder import construct_workload, propagate_admission_gated_by
from shared.kube import GroupVersionKind
from shared.kube.conditions import conditions_of
from shared.kube.conditions import set_condition as set_object_condition
from shared.kueue.admission_apply import (
    ADMISSION_FIELD_MANAGER,
    RECLAIMABLE_PODS_FIELD_MANAGER,
    admission_status_apply,
    condition_apply,
    condition_field_manager,
    finish_apply,
    status_apply,
)
from shared.kueue.jobmeta import (
    annotation_value,
    annotations_of,
    controller_owner_ref,
    is_valid_job_uid_label,
    prebuilt_workload_name,
    queue_name,
    workload_priority_class_name,
)
from shared.kueue.podset import PodSetGates, PodSetInfo, pod_set_infos_from_admission
from shared.kueue.workload_slicing import FEATURE_GATE_DEFAULT, name_extra, scaled_up, sorted_unfinished
from shared.kueue.workload_slicing import enabled as slicing_enabled
from shared.kueue.workload_state import (
    finish_workload,
    has_quota_reservation,
    is_finished,
    truncate_condition_message,
)
from shared.models.base import WireDict
from shared.models.meta import OwnerReference
from shared.models.workload import PodSet, Workload, WorkloadStatus

__all__ = [
    "RESOURCE_FLAVOR_GVK",
    "EnsuredWorkload",
    "ExtraWorkloadsError",
    "NoMatchingWorkloadsError",
    "PrebuiltWorkloadNotFoundError",
    "ReadWorkload",
    "WorkloadSync",
    "is_deleting",
]


class ReadWorkload:
    """A Workload as read: ``wire``, the dict the reader returned (the informer's cached object:
    never changed), and ``model``, parsed from it on first use.

    Most passes of a job's life only read a few fields of its Workload (conditions, finalizers, the
    queue name, the admission's flavors), which the wire answers; parsing the whole Workload into a
    model for each pass was the largest single cost of the reconcile logic on a real cluster. The
    model is for the passes that change the Workload and write it; after such a change ``wire`` no
    longer describes it (each pass writes at most once and returns, so nothing reads it again)."""

    __slots__ = ("_model", "wire")

    def __init__(self, wire: WireDict, *, model: Workload | None = None) -> None:
        self.wire = wire
        self._model = model

    @classmethod
    def of_model(cls, model: Workload) -> ReadWorkload:
        """For a Workload only held as a model (a write's answer, a slice, a prebuilt Workload)."""
        return cls(model.to_wire(), model=model)

    @property
    def model(self) -> Workload:
        if self._model is None:
            self._model = Workload.from_wire(self.wire)
        return self._model

    @property
    def metadata(self) -> Mapping[str, Any]:
        metadata = self.wire.get("metadata")
        return metadata if type(metadata) is dict or isinstance(metadata, Mapping) else {}

    @property
    def spec(self) -> Mapping[str, Any]:
        spec = self.wire.get("spec")
        return spec if type(spec) is dict or isinstance(spec, Mapping) else {}


@dataclass(frozen=True)
class EnsuredWorkload:
    """What ``ensure_one`` leaves: the job's Workload (``None``: it has none) and the job's pod sets as
    computed for the match, or ``None`` when the job was stopped meanwhile (its templates may have
    been restored, so they must be computed again)."""

    workload: ReadWorkload | None
    pod_sets: list[PodSet] | None


class NoMatchingWorkloadsError(Exception):
    """Deleted non-matching Workloads and none matched; retried to create a fresh one."""


class ExtraWorkloadsError(Exception):
    """Deleted Workloads beside the matching one; retried to continue with the match."""


class PrebuiltWorkloadNotFoundError(Exception):
    """The job names a prebuilt Workload that does not exist (yet); we never create it."""


def is_deleting(obj: WireDict) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def _admission_gated_by(obj: Mapping[str, Any]) -> str:
    return annotation_value(obj, ADMISSION_GATED_BY_ANNOTATION) or ""


def _priority_may_follow_label(job: GenericJob, *, ref: tuple[str, str] | None, reserved: bool) -> bool:
    """Whether the Workload's priority (``ref``: its ``priorityClassRef`` kind and name, ``None``
    when unset) is to follow the job's ``kueue.x-k8s.io/priority-class`` label and does not name it
    yet: never for a priority from a pod PriorityClass, nor once quota is reserved without any
    reference (the API forbids adding one then)."""
    if reserved and ref is None:
        return False
    if ref is not None and ref[0] != "WorkloadPriorityClass":
        return False
    return (ref[1] if ref is not None else "") != workload_priority_class_name(job.obj)


class WorkloadSync:
    def __init__(
        self,
        *,
        reader: ClusterReader,
        writer: ClusterWriter,
        events: EventSink,
        control: JobControl,
        label_keys_to_copy: tuple[str, ...],
        name_max_length: int,
        clock: Callable[[], datetime],
        elastic_jobs: bool = FEATURE_GATE_DEFAULT,
        merge_patch: bool = False,
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._events = events
        self._control = control
        self._label_keys_to_copy = label_keys_to_copy
        self._name_max_length = name_max_length
        self._clock = clock
        self._priority = PriorityResolver(reader=reader, events=events)
        self._elastic_jobs = elastic_jobs
        #: Kueue's ``WorkloadRequestUseMergePatch`` gate: status writes as strict merge patches
        self._merge_patch = merge_patch
        self._slices = SliceSync(reader=reader, writer=writer, clock=clock)
        self._verdicts = EquivalenceVerdicts()

    def slicing(self, job: GenericJob) -> bool:
        """``WorkloadSliceEnabled``: the gate is on and the job is annotated elastic."""
        return slicing_enabled(job.obj, feature_gate=self._elastic_jobs)

    # --- writes --------------------------------------------------------------------------------
    async def write_status(self, workload: Workload, *, read_back: bool = False) -> WireDict:
        """Write ``status`` (an update); the stored object comes back as JSON with ``read_back``
        (``{}`` otherwise: most callers return right after the write, and decoding and parsing the
        answer was a tenth of a status-writing pass).

        kueue-bridge: with ``WorkloadRequestUseMergePatch`` on, ``patch_admission_status`` writes this
        way where Kueue sends a strict merge patch of what changed: the same precondition (the read
        resourceVersion) and the same stored result, under the reconciler's own field manager."""
        return await self._writer.update(
            WORKLOAD_GVK,
            workload.metadata.namespace,
            workload.to_wire(),
            subresource="status",
            read_back=read_back,
        )

    async def patch_status(self, workload: Workload, *, fields: tuple[str, ...]) -> None:
        """Write only the status ``fields`` (snake_case model names), as a merge patch of the status
        subresource carrying the read ``resourceVersion``: a stale read fails with Conflict, as the
        full write would; a field now unset is sent as ``null`` (deleted).

        Only with ``WorkloadRequestUseMergePatch`` on (the applies above otherwise). This is the
        body Kueue then sends through ``clientutil.PatchStatus`` (strict, so the resourceVersion is
        in the patch) for
        ``workload.SetConditionAndUpdate`` (PodsReady), ``workloadfinish.Finish`` (Finished) and
        ``workload.UpdateReclaimablePods``; a merge patch replaces a list whole, so the patch holds
        every condition. Only for writes that change nothing else: sending the whole Workload also
        encoded, and made the server decode and answer, the pod sets each time."""
        status = workload.status
        changed: WireDict = {}
        for name in fields:
            value = getattr(status, name) if status is not None else None
            alias = WorkloadStatus.model_fields[name].alias or name
            changed[alias] = (
                None
                if value is None
                else [item.model_dump(by_alias=True, exclude_none=True, mode="json") for item in value]
            )
        patch = {"metadata": {"resourceVersion": workload.metadata.resource_version}, "status": changed}
        await self._writer.merge_patch(
            WORKLOAD_GVK,
            workload.metadata.namespace,
            str(workload.metadata.name),
            patch,
            subresource="status",
            read_back=False,
        )

    async def patch_condition(
        self,
        workload: ReadWorkload,
        *,
        condition_type: str,
        status: str,
        reason: str,
        message: str,
        now: datetime,
    ) -> bool:
        """Set one condition (``meta.SetStatusCondition``, observing the Workload's generation, the
        message truncated as Kueue's) on a copy of the read Workload's conditions, and write them
        as ``patch_status`` does (the same merge patch of the status subresource with the read
        resourceVersion); whether anything changed (nothing is written otherwise). Only with
        ``WorkloadRequestUseMergePatch`` on.

        For a step that changes one condition and nothing else (PodsReady, Finished): it never
        parses the Workload into a model, nor copies more of it than its conditions."""
        metadata = workload.metadata
        conditions = [
            dict(item) if isinstance(item, Mapping) else item for item in conditions_of(workload.wire)
        ]
        if not set_object_condition(
            conditions,
            condition_type=condition_type,
            status=status,
            reason=reason,
            message=truncate_condition_message(message),
            observed_generation=metadata.get("generation"),
            now=now,
        ):
            return False
        patch = {
            "metadata": {"resourceVersion": metadata.get("resourceVersion")},
            "status": {"conditions": conditions},
        }
        await self._writer.merge_patch(
            WORKLOAD_GVK,
            metadata.get("namespace"),
            str(metadata.get("name")),
            patch,
            subresource="status",
            read_back=False,
        )
        return True

    # --- Kueue's status writes (``pkg/workload/patching``) ---------------------------------------
    # With ``WorkloadRequestUseMergePatch`` off (Kueue's default) each is a forced server-side apply
    # of the status subresource under Kueue's own field manager, strict (the read resourceVersion is
    # in the body: a stale read is a Conflict, retried by the reconcile); with it on, a strict merge
    # patch. The manager matters: ``kueue-admission``'s applies remove what they leave out and it
    # alone owns, so a field another manager set by update outlives an eviction
    # (``shared.kueue.admission_apply``).
    async def set_condition_and_update(
        self,
        read: ReadWorkload,
        *,
        condition_type: str,
        status: str,
        reason: str,
        message: str,
        now: datetime,
    ) -> None:
        """Kueue's ``workload.SetConditionAndUpdate`` (step 5, PodsReady): one condition, applied as
        ``kueue-job-controller-<type>``. The caller compared it with the read one first."""
        message = truncate_condition_message(message)
        if self._merge_patch:
            await self.patch_condition(
                read, condition_type=condition_type, status=status, reason=reason, message=message, now=now
            )
            return
        body = condition_apply(
            read.wire, condition_type=condition_type, status=status, reason=reason, message=message, now=now
        )
        await self._apply(body, field_manager=condition_field_manager(condition_type))

    async def finish(
        self, workload: ReadWorkload | Workload, *, reason: str, message: str, read_back: bool = False
    ) -> WireDict:
        """Kueue's ``workloadfinish.Finish``: ``Finished=True`` with ``reason`` through
        ``PatchAdmissionStatus`` (Succeeded, Failed, FailedToStart, OutOfSync, OwnerNotFound); the
        stored Workload with ``read_back`` (``{}`` otherwise, and when it was finished already)."""
        read = workload if isinstance(workload, ReadWorkload) else ReadWorkload.of_model(workload)
        if is_finished(read.wire):
            return {}
        now = self._clock()
        if self._merge_patch:
            if not read_back:
                await self.patch_condition(
                    read,
                    condition_type=Condition.FINISHED,
                    status="True",
                    reason=reason,
                    message=message,
                    now=now,
                )
                return {}
            model = read.model
            finish_workload(model, reason=reason, message=message, now=now)
            return await self.patch_admission_status(model, read_back=True)
        body = finish_apply(read.wire, reason=reason, message=truncate_condition_message(message), now=now)
        assert body is not None  # not finished: see above
        return await self._apply(body, field_manager=ADMISSION_FIELD_MANAGER, read_back=read_back)

    async def patch_admission_status(
        self, workload: Workload | WireDict, *, read_back: bool = False
    ) -> WireDict:
        """Kueue's ``PatchAdmissionStatus``: the Workload's whole admission state as changed by the
        caller (``prepareWorkloadPatch``), applied as ``kueue-admission`` (the eviction step's
        Requeued condition and released quota, a finish)."""
        if self._merge_patch:
            model = workload if isinstance(workload, Workload) else Workload.from_wire(workload)
            return await self.write_status(model, read_back=read_back)
        wire = workload.to_wire() if isinstance(workload, Workload) else workload
        return await self._apply(
            admission_status_apply(wire), field_manager=ADMISSION_FIELD_MANAGER, read_back=read_back
        )

    async def update_reclaimable_pods(self, workload: Workload) -> None:
        """Kueue's ``workload.UpdateReclaimablePods`` (step 4): the model's ``reclaimablePods``
        applied as ``kueue-reclaimable-pods`` (left out when empty, which removes them)."""
        if self._merge_patch:
            await self.patch_status(workload, fields=("reclaimable_pods",))
            return
        pods = workload.status.reclaimable_pods if workload.status is not None else None
        applied = (
            {"reclaimablePods": [p.model_dump(by_alias=True, exclude_none=True, mode="json") for p in pods]}
            if pods
            else {}
        )
        await self._apply(
            status_apply(workload.to_wire(), applied), field_manager=RECLAIMABLE_PODS_FIELD_MANAGER
        )

    async def _apply(self, body: WireDict, *, field_manager: str, read_back: bool = False) -> WireDict:
        """Force-apply ``body`` (a ``shared.kueue.admission_apply`` body: it names the Workload and
        its namespace) to the Workload's status as ``field_manager``."""
        return await self._writer.apply_status(
            WORKLOAD_GVK,
            body["metadata"].get("namespace"),
            body,
            field_manager=field_manager,
            read_back=read_back,
        )

    async def write_spec(self, workload: Workload) -> Workload:
        stored = await self._writer.update(WORKLOAD_GVK, workload.metadata.namespace, workload.to_wire())
        return Workload.from_wire(stored)

    async def remove_finalizer(self, workload: Workload | ReadWorkload) -> None:
        """Drop ``kueue.x-k8s.io/resource-in-use`` (a merge patch of ``metadata.finalizers`` carrying
        the read resourceVersion); a ``ReadWorkload`` is read from its wire, unparsed."""
        if isinstance(workload, ReadWorkload):
            metadata = workload.metadata
            finalizers = list(metadata.get("finalizers") or [])
            namespace, name = metadata.get("namespace"), str(metadata.get("name"))
            resource_version = metadata.get("resourceVersion")
        else:
            finalizers = list(workload.metadata.finalizers or [])
            namespace, name = workload.metadata.namespace, str(workload.metadata.name)
            resource_version = workload.metadata.resource_version
        if RESOURCE_IN_USE_FINALIZER not in finalizers:
            return
        remaining = [f for f in finalizers if f != RESOURCE_IN_USE_FINALIZER]
        patch = {"metadata": {"finalizers": remaining, "resourceVersion": resource_version}}
        try:
            await self._writer.merge_patch(WORKLOAD_GVK, namespace, name, patch, read_back=False)
        except NotFoundError:
            return

    # --- reads ---------------------------------------------------------------------------------
    async def _owned_models(self, *, gvk: GroupVersionKind, namespace: str, name: str) -> list[Workload]:
        wires = await self._reader.workloads_owned_by(namespace=namespace, owner_gvk=gvk, owner_name=name)
        return [Workload.from_wire(wire) for wire in wires]

    async def latest_unfinished_for(self, owner: WireDict) -> Workload | None:
        metadata = owner.get("metadata") or {}
        gvk = GroupVersionKind.of(owner)
        workloads = sorted_unfinished(
            await self._owned_models(
                gvk=gvk, namespace=str(metadata.get("namespace")), name=str(metadata.get("name"))
            )
        )
        return workloads[-1] if workloads else None

    async def _flavors(self, workload: Workload | ReadWorkload) -> dict[str, Any]:
        """The node labels and tolerations of each flavor the admission names (a ``ReadWorkload``'s
        from its wire, unparsed)."""
        names: set[str] = set()
        if isinstance(workload, ReadWorkload):
            status = workload.wire.get("status") or {}
            wire_admission = status.get("admission") or {}
            for wire_assignment in wire_admission.get("podSetAssignments") or []:
                names.update((wire_assignment.get("flavors") or {}).values())
        else:
            admission = workload.status.admission if workload.status else None
            for assignment in admission.pod_set_assignments if admission else []:
                names.update((assignment.flavors or {}).values())
        flavors: dict[str, Any] = {}
        for name in sorted(names):
            flavor = await self._reader.get(RESOURCE_FLAVOR_GVK, None, name)
            if flavor is None:
                raise NotFoundError(f'resourceflavors.kueue.x-k8s.io "{name}" not found')
            spec = flavor.get("spec") or {}
            flavors[name] = (dict(spec.get("nodeLabels") or {}), list(spec.get("tolerations") or []))
        return flavors

    async def pod_set_infos_for_start(self, workload: ReadWorkload) -> list[PodSetInfo]:
        return pod_set_infos_from_admission(
            workload=workload.model,
            flavors=await self._flavors(workload),
            gates=PodSetGates(elastic_workload_slices=self._elastic_jobs),
        )

    async def _equivalent(self, job: GenericJob, pod_sets: list[PodSet], workload: Workload) -> bool:
        flavors = await self._flavors(workload) if has_quota_reservation(workload) else {}
        return decide(job, pod_sets, workload, flavors, elastic_jobs=self._elastic_jobs)

    # --- ensure exactly one --------------------------------------------------------------------
    async def ensure_one(self, job: GenericJob) -> EnsuredWorkload:
        """Kueue's ``ensureOneWorkload``: the job's one matching Workload (or none), deleting or
        updating the others; also hands back the job's pod sets when they were computed and the job
        was not changed here (``None`` otherwise: callers compute them again).

        The pod sets are computed before anything is written, as in Kueue, unless every verdict the
        pass needs is remembered (``reconciler.verdicts``) and none needs them."""
        metadata = job.obj.get("metadata") or {}
        namespace, name = str(metadata.get("namespace")), str(metadata.get("name"))
        pod_sets: list[PodSet] | None = None
        prebuilt = prebuilt_workload_name(job.obj)
        if prebuilt:
            pod_sets = job.pod_sets()
            prebuilt_workload = await self._ensure_prebuilt(job, pod_sets, name=prebuilt)
            return EnsuredWorkload(
                None if prebuilt_workload is None else ReadWorkload.of_model(prebuilt_workload), pod_sets
            )
        if self.slicing(job):
            pod_sets = job.pod_sets()
            outcome = await self._slices.ensure(job, pod_sets)
            if outcome.compatible:
                for live in outcome.live:  # ``syncWorkloadSlicePriority``
                    await self._update_priority(job, pod_sets, live)
                return EnsuredWorkload(
                    None if outcome.workload is None else ReadWorkload.of_model(outcome.workload), pod_sets
                )

        job_key = f"{job.gvk.group}/{job.gvk.kind}/{namespace}/{name}"
        status_blind = is_status_blind(job)
        match: ReadWorkload | None = None
        to_delete: list[ReadWorkload] = []
        owned = await self._reader.workloads_owned_by(namespace=namespace, owner_gvk=job.gvk, owner_name=name)
        for wire in owned:
            workload = ReadWorkload(wire)
            if match is not None:
                to_delete.append(workload)
                continue
            try:
                flavors = await self._flavors(workload) if has_quota_reservation(wire) else {}
            except NotFoundError:
                if pod_sets is None:
                    job.pod_sets()  # a malformed job is reported first, as when pod sets came first
                raise
            equivalent = self._verdicts.recall(
                job_key, job=job.obj, workload=wire, flavors=flavors, status_blind=status_blind
            )
            if equivalent is None:
                if pod_sets is None:
                    pod_sets = job.pod_sets()
                equivalent = decide_on_wire(
                    job,
                    pod_sets,
                    wire,
                    flavors,
                    model=lambda read=workload: read.model,  # type: ignore[misc]
                    elastic_jobs=self._elastic_jobs,
                )
                self._verdicts.remember(
                    job_key,
                    job=job.obj,
                    workload=wire,
                    flavors=flavors,
                    equivalent=equivalent,
                    status_blind=status_blind,
                )
            if equivalent:
                match = workload
            else:
                to_delete.append(workload)
        if match is None and pod_sets is None:
            pod_sets = job.pod_sets()  # every path below may need them: computed before any write

        to_update: ReadWorkload | None = None
        if (
            match is None
            and to_delete
            and job.is_suspended()
            and not has_quota_reservation(to_delete[0].wire)
        ):
            to_update = to_delete.pop(0)

        unchanged_pod_sets: list[PodSet] | None = pod_sets
        if match is None and not job.is_suspended() and not job.finished().finished:
            unchanged_pod_sets = None  # stopping may restore templates: the pod sets are stale
            restore_from = to_delete[0] if len(to_delete) == 1 else None
            message = (
                "Missing Workload; unable to restore pod templates"
                if restore_from is None
                else "No matching Workload; restoring pod templates according to existent Workload"
            )
            await self._control.stop(
                job, workload=None if restore_from is None else restore_from.model, message=message
            )

        deleted = 0
        for deleting in to_delete:
            if await self._delete(deleting.model):
                deleted += 1
                self._events.record(
                    regarding=job.obj,
                    event_type="Normal",
                    reason=EventReason.DELETED_WORKLOAD,
                    message=f"Deleted not matching Workload: {deleting.metadata.get('namespace')}/{deleting.metadata.get('name')}",
                )
        if deleted:
            if match is None:
                raise NoMatchingWorkloadsError(f"no matching workloads: deleted {deleted} workloads")
            raise ExtraWorkloadsError(f"extra workloads: deleted {deleted} workloads")

        if to_update is not None:
            assert pod_sets is not None
            updated = await self._update_to_match(job, pod_sets, to_update.model)
            return EnsuredWorkload(ReadWorkload.of_model(updated), unchanged_pod_sets)
        if match is not None:
            if _admission_gated_by(job.obj) != _admission_gated_by(match.wire):
                match = ReadWorkload.of_model(await self._update_admission_gated_by(job, match.model))
            ref = match.spec.get("priorityClassRef")
            if _priority_may_follow_label(
                job,
                ref=None if ref is None else (ref.get("kind") or "", ref.get("name") or ""),
                reserved=has_quota_reservation(match.wire),
            ):
                await self._update_priority(job, pod_sets, match.model)
        return EnsuredWorkload(match, unchanged_pod_sets)

    async def _delete(self, workload: Workload) -> bool:
        await self.remove_finalizer(workload)
        if workload.metadata.deletion_timestamp:  # is_deleting, without a dump
            return False
        try:
            await self._writer.delete(
                WORKLOAD_GVK,
                workload.metadata.namespace,
                str(workload.metadata.name),
                uid=workload.metadata.uid,
            )
        except NotFoundError:
            return False
        return True

    async def _ensure_prebuilt(
        self, job: GenericJob, pod_sets: list[PodSet], *, name: str
    ) -> Workload | None:
        metadata = job.obj.get("metadata") or {}
        wire = await self._reader.get(WORKLOAD_GVK, str(metadata.get("namespace")), name)
        if wire is None:
            return None
        controller = controller_owner_ref(wire)
        if controller is not None and controller.get("uid") != metadata.get("uid"):
            return None
        workload = Workload.from_wire(wire)
        if controller is None:
            references = [r for r in workload.metadata.owner_references or [] if r.uid != metadata.get("uid")]
            references.append(self._owner_reference(job))
            workload.metadata.owner_references = references
            uid = str(metadata.get("uid") or "")
            if is_valid_job_uid_label(uid):
                workload.metadata.labels = {**(workload.metadata.labels or {}), JOB_UID_LABEL: uid}
            workload = await self.write_spec(workload)
        if self.slicing(job) and scaled_up(workload):
            return workload  # a scale-up replacement is not checked against the job (not synced yet)
        if not await self._equivalent(job, pod_sets, workload):
            await self.finish(
                workload,
                reason=Reason.OUT_OF_SYNC,
                message="The prebuilt workload is out of sync with its user job",
            )
            return None
        return workload

    @staticmethod
    def _owner_reference(job: GenericJob) -> OwnerReference:
        metadata = job.obj.get("metadata") or {}
        return OwnerReference(
            api_version=job.gvk.api_version,
            kind=job.gvk.kind,
            name=str(metadata.get("name")),
            uid=str(metadata.get("uid")),
            controller=True,
            block_owner_deletion=True,
        )

    async def _construct(self, job: GenericJob, pod_sets: list[PodSet]) -> Workload:
        priority = await self._priority.resolve(job=job, pod_sets=pod_sets)
        return construct_workload(
            job=job.obj,
            gvk=job.gvk,
            pod_sets=pod_sets,
            priority=priority,
            label_keys_to_copy=self._label_keys_to_copy,
            name_extra=name_extra(job.obj, feature_gate=self._elastic_jobs),
            max_name_length=self._name_max_length,
        )

    async def _update_to_match(self, job: GenericJob, pod_sets: list[PodSet], workload: Workload) -> Workload:
        fresh = await self._construct(job, pod_sets)
        if self.slicing(job):
            # Kueue's prepareWorkload: the slice annotations (only their error matters, the spec is
            # what is copied) replace the step that keeps spec.active, so it is reset here too
            await self._slices.annotate_new(job, fresh)
        else:
            fresh.spec.active = workload.spec.active
        workload.spec = fresh.spec
        return await self._write_spec_and_record(
            job,
            workload,
            f"Updated not matching Workload for suspended job: {workload.metadata.namespace}/{workload.metadata.name}",
        )

    async def _update_admission_gated_by(self, job: GenericJob, workload: Workload) -> Workload:
        """Kueue's ``UpdateAdmissionGatedBy``: the job's admission gates onto its matching Workload."""
        if not propagate_admission_gated_by(job.obj, workload):
            return workload
        gates = annotations_of(job.obj).get(ADMISSION_GATED_BY_ANNOTATION, "")
        return await self._write_spec_and_record(
            job, workload, f"Updated workload AdmissionGatedBy to {quote(gates)}"
        )

    async def _write_spec_and_record(self, job: GenericJob, workload: Workload, message: str) -> Workload:
        """Write the Workload's spec, then record Kueue's ``UpdatedWorkload`` event on the job."""
        updated = await self.write_spec(workload)
        self._events.record(
            regarding=job.obj, event_type="Normal", reason=EventReason.UPDATED_WORKLOAD, message=message
        )
        return updated

    async def _update_priority(
        self, job: GenericJob, pod_sets: list[PodSet] | None, workload: Workload
    ) -> None:
        """``pod_sets``: the job's, or ``None`` when not computed yet (computed here if needed)."""
        ref = workload.spec.priority_class_ref
        if not _priority_may_follow_label(
            job, ref=None if ref is None else (ref.kind, ref.name), reserved=has_quota_reservation(workload)
        ):
            return
        priority = await self._priority.resolve(
            job=job, pod_sets=job.pod_sets() if pod_sets is None else pod_sets
        )
        if workload.spec.priority_class_ref == priority.ref and workload.spec.priority == priority.value:
            return
        workload.spec.priority_class_ref = priority.ref
        workload.spec.priority = priority.value
        await self._write_spec_and_record(
            job,
            workload,
            f"Updated workload priority class: {workload.metadata.namespace}/{workload.metadata.name}",
        )

    # --- no workload ---------------------------------------------------------------------------
    async def handle_no_workload(self, job: GenericJob, *, pod_sets: list[PodSet] | None = None) -> None:
        """Kueue's ``handleJobWithNoWorkload``; ``pod_sets``: the job's, when already computed in this
        pass (and the job not changed since), saving a second template walk."""
        prebuilt = prebuilt_workload_name(job.obj)
        if prebuilt:
            await self._control.stop(job, workload=None, message="missing workload")
        slicing = self.slicing(job)
        if job.is_active() and not slicing:  # a running elastic job may scale up: it gets a new slice
            return
        if prebuilt:
            raise PrebuiltWorkloadNotFoundError(f"prebuilt workload not found: {prebuilt}")
        workload = await self._construct(job, job.pod_sets() if pod_sets is None else pod_sets)
        if slicing:
            await self._slices.annotate_new(job, workload)
        await self._writer.create(
            WORKLOAD_GVK, workload.metadata.namespace, workload.to_wire(), read_back=False
        )
        self._events.record(  # the created object's namespace and name are those we sent
            regarding=job.obj,
            event_type="Normal",
            reason=EventReason.CREATED_WORKLOAD,
            message=f"Created Workload: {workload.metadata.namespace}/{workload.metadata.name}",
        )

    async def sync_queue_name(self, job: GenericJob, workload: ReadWorkload) -> None:
        wanted = queue_name(job.obj)
        if (workload.spec.get("queueName") or "") == wanted:
            return
        model = workload.model
        model.spec.queue_name = wanted or None
        await self.write_spec(model)

    # --- finalize ------------------------------------------------------------------------------
    async def finalize_orphans(self, *, key: JobKey, job: WireDict | None) -> None:
        """The job is gone or deleting: finish (OwnerNotFound) and release its Workloads."""
        self._verdicts.forget(f"{key.gvk.group}/{key.gvk.kind}/{key.namespace}/{key.name}")
        for workload in await self._owned_models(gvk=key.gvk, namespace=key.namespace, name=key.name):
            controller = controller_owner_ref(workload.to_wire())
            owned_by_job = controller is not None and controller.get("name") == key.name
            if job is not None and controller is not None:
                owned_by_job = owned_by_job and controller.get("uid") == (job.get("metadata") or {}).get(
                    "uid"
                )
            if owned_by_job and not is_deleting(workload.to_wire()) and not is_finished(workload):
                stored = await self.finish(
                    workload,
                    reason=Reason.OWNER_NOT_FOUND,
                    message="The workload's owner no longer exists",
                    read_back=True,
                )
                workload = Workload.from_wire(stored)
            await self.remove_finalizer(workload)
