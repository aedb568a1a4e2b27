"""The reconciler's side of elastic jobs: Kueue's ``EnsureWorkloadSlices`` and ``prepareWorkloadSlice``
with their writes.

The decisions are ``shared.kueue.workload_slicing``'s (pure); this module reads a job's slices through the
reconciler's ports and makes the writes Kueue makes, in Kueue's order:

1. finish every surplus slice (``Finished=True``, ``WorkloadSliceReplaced`` or ``OutOfSync``; no
   event, as ``workloadfinish.Finish`` records none);
2. write the new pod counts of the kept slice when it has no quota yet or the job scaled down
   (a spec update, resourceVersion-checked);
3. name the slices whose priority follows the job (the kept one and the quota-holding one it may be
   waiting behind), for ``syncWorkloadSlicePriority``.

Invariants: a slice is never deleted here (only finished: its quota is released by Kueue), and a
scale-up never touches the admitted slice, so the running job keeps its admission until Kueue's
scheduler admits the replacement and retires the old slice.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from reconciler.ports import WORKLOAD_GVK, ClusterReader, ClusterWriter
from shared.frameworks.base import GenericJob
from shared.kueue.workload_slicing import (
    decide_slices,
    latest_active_slice,
    slice_annotations,
    sorted_unfinished,
)
from shared.kueue.workload_state import finish_workload
from shared.models.workload import PodSet, Workload

__all__ = ["SliceOutcome", "SliceSync"]


@dataclass(frozen=True)
class SliceOutcome:
    """``compatible`` False: fall back to ordinary matching. Else ``workload`` is the job's Workload
    (``None``: create a new slice) and ``live`` the slices whose priority follows the job."""

    compatible: bool
    workload: Workload | None
    live: tuple[Workload, ...] = ()


class SliceSync:
    def __init__(
        self, *, reader: ClusterReader, writer: ClusterWriter, clock: Callable[[], datetime]
    ) -> None:
        self._reader = reader
        self._writer = writer
        self._clock = clock

    async def unfinished(self, job: GenericJob) -> list[Workload]:
        """``FindNotFinishedWorkloads``: the job's unfinished Workloads, oldest first."""
        metadata = job.obj.get("metadata") or {}
        wires = await self._reader.workloads_owned_by(
            namespace=str(metadata.get("namespace")), owner_gvk=job.gvk, owner_name=str(metadata.get("name"))
        )
        return sorted_unfinished(Workload.from_wire(wire) for wire in wires)

    async def ensure(self, job: GenericJob, pod_sets: list[PodSet]) -> SliceOutcome:
        """``EnsureWorkloadSlices`` plus the slice lookup of ``syncWorkloadSlicePriority``."""
        unfinished = await self.unfinished(job)
        decision = decide_slices(job_pod_sets=pod_sets, unfinished=unfinished)
        finished: set[str] = set()
        for item in decision.finish:
            finish_workload(item.workload, reason=item.reason, message=item.message, now=self._clock())
            await self._writer.update(
                WORKLOAD_GVK, item.workload.metadata.namespace, item.workload.to_wire(), subresource="status"
            )
            finished.add(item.workload.metadata.name or "")
        if not decision.compatible:
            return SliceOutcome(compatible=False, workload=None)
        workload = decision.workload
        if workload is not None and decision.update_counts:
            stored = await self._writer.update(WORKLOAD_GVK, workload.metadata.namespace, workload.to_wire())
            workload = Workload.from_wire(stored)
        retained = latest_active_slice([wl for wl in unfinished if wl.metadata.name not in finished])
        live = [workload] if workload is not None else []
        if retained is not None and (workload is None or retained.metadata.name != workload.metadata.name):
            live.append(retained)
        return SliceOutcome(compatible=True, workload=workload, live=tuple(live))

    async def annotate_new(self, job: GenericJob, workload: Workload) -> None:
        """``prepareWorkloadSlice``: the slice annotations on a Workload about to be created.

        Raises ``SliceCountError`` (retried) while more than one slice is unfinished.
        """
        annotations = slice_annotations(
            new_name=workload.metadata.name or "", unfinished=await self.unfinished(job)
        )
        workload.metadata.annotations = {**(workload.metadata.annotations or {}), **annotations}
