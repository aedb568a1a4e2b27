"""The Events Kueue records on Workloads, recorded by the Kueue stand-in (LOCAL RUNS ONLY).

``kubectl describe workload`` on a real cluster ends with the scheduler's and the Workload
controller's events; these are the same reasons, actions, types, reporting controllers and
messages, taken from Kueue's source (v0.20):

==========================  =============================  ==========================================
reason (= action)           reporting controller           note
==========================  =============================  ==========================================
QuotaReserved               kueue-admission                Quota reserved in ClusterQueue <cq>, wait
                                                           time since queued was <s>s
Admitted                    kueue-admission                Admitted by ClusterQueue <cq>, wait time
                                                           since reservation was 0s
Admitted (admission checks) kueue-workload-controller      ... since reservation was <s>s
<pending reason> (Warning)  kueue-admission                the QuotaReserved=False message
EvictedDueToDeactivated     kueue-workload-controller      The workload is deactivated
EvictedDueToPreempted       kueue-admission                the preemption message
Preempted                   kueue-admission                the preemption message; preemptor effective
                                                           priority: <p> (base: <p>, boost: 0);
                                                           preemptee effective priority: ...
PreemptedWorkload           kueue-admission                on the preemptor: Preempted workload
                                                           <ns>/<name> (UID: <uid>) in ClusterQueue
                                                           <cq>; preemptor effective priority: ...
WorkloadSliceReplaced       kueue-admission                (action Replaced) the Finished message
==========================  =============================  ==========================================

Wait times are Kueue's ``%.0fs``: seconds since the ``Requeued`` condition's transition (else the
creation timestamp) for QuotaReserved (``workload.QueuedWaitTime``), since ``QuotaReserved``'s
transition for a check-gated Admitted. Kueue records no event when a Workload finishes (the job's
``FinishedWorkload`` is the job reconciler's), nor on reactivation.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Final

from devcluster.standin.client import ApiClient
from devcluster.standin.recorder import EventNames, EventRecorder
from shared.constants import Condition
from shared.kube.conditions import is_true, object_condition
from shared.kube.times import parse_time

__all__ = ["SCHEDULER", "WORKLOAD_CONTROLLER", "WorkloadEvents"]

SCHEDULER: Final = "kueue-admission"
WORKLOAD_CONTROLLER: Final = "kueue-workload-controller"
_NORMAL: Final = "Normal"
_WARNING: Final = "Warning"


def _seconds_since(moment: datetime | None, now: datetime) -> str:
    if moment is None:
        return "0"
    return f"{max((now - moment).total_seconds(), 0.0):.0f}"


def _priority(workload: Mapping[str, Any]) -> int:
    value = (workload.get("spec") or {}).get("priority")
    return value if isinstance(value, int) else 0


def _priorities(preemptor: Mapping[str, Any], target: Mapping[str, Any]) -> str:
    """Kueue's priority suffix (no priority boosts are modelled: boost 0)."""
    mine, theirs = _priority(preemptor), _priority(target)
    return (
        f"preemptor effective priority: {mine} (base: {mine}, boost: 0); "
        f"preemptee effective priority: {theirs} (base: {theirs}, boost: 0)"
    )


def _admitted(cluster_queue: str, *, since: str) -> str:
    return f"Admitted by ClusterQueue {cluster_queue}, wait time since reservation was {since}s"


async def _record(
    recorder: EventRecorder,
    obj: Mapping[str, Any],
    *,
    reason: str,
    note: str,
    type: str = _NORMAL,
    action: str | None = None,
) -> None:
    """One event; its action is its reason unless Kueue names another (the table above)."""
    await recorder.event(obj, type=type, reason=reason, action=action or reason, note=note)


class WorkloadEvents:
    """Records Kueue's Workload events through one recorder per Kueue controller."""

    def __init__(
        self,
        *,
        client: ApiClient,
        clock: Callable[[], datetime],
        hostname: str | None = None,
        deferred: bool = False,
    ) -> None:
        names = EventNames()  # one sequence: the two recorders never pick the same name
        recorder = functools.partial(
            EventRecorder, client=client, clock=clock, hostname=hostname, names=names, deferred=deferred
        )
        self.scheduler = recorder(reporting_controller=SCHEDULER)
        self.workload_controller = recorder(reporting_controller=WORKLOAD_CONTROLLER)

    async def flush(self) -> None:
        """Write what deferred recorders queued (the scheduler's first, as Kueue's cycle precedes
        the Workload controller's reaction to it)."""
        await self.scheduler.flush()
        await self.workload_controller.flush()

    async def admitted_by_scheduler(
        self, workload: Mapping[str, Any], *, cluster_queue: str, now: datetime
    ) -> None:
        """QuotaReserved, then Admitted when no admission check holds it back (``recordWorkloadAdmission*``)."""
        requeued = object_condition(workload, Condition.REQUEUED)
        queued = parse_time((requeued or {}).get("lastTransitionTime")) or parse_time(
            (workload.get("metadata") or {}).get("creationTimestamp")
        )
        waited = _seconds_since(queued, now)
        note = f"Quota reserved in ClusterQueue {cluster_queue}, wait time since queued was {waited}s"
        await _record(self.scheduler, workload, reason="QuotaReserved", note=note)
        admitted = object_condition(workload, Condition.ADMITTED)
        if is_true(admitted):
            await _record(
                self.scheduler, workload, reason="Admitted", note=_admitted(cluster_queue, since="0")
            )

    async def admitted_by_checks(
        self, workload: Mapping[str, Any], *, cluster_queue: str, now: datetime
    ) -> None:
        """The Workload controller's Admitted, once every admission check is Ready."""
        reserved = object_condition(workload, Condition.QUOTA_RESERVED) or {}
        since = _seconds_since(parse_time(reserved.get("lastTransitionTime")), now)
        await _record(
            self.workload_controller, workload, reason="Admitted", note=_admitted(cluster_queue, since=since)
        )

    async def pending(self, workload: Mapping[str, Any], *, reason: str, message: str) -> None:
        """The scheduler's Warning for a Workload it could not admit (``requeueAndUpdate``)."""
        await _record(self.scheduler, workload, type=_WARNING, reason=reason, note=message)

    async def deactivated(self, workload: Mapping[str, Any], *, message: str) -> None:
        await _record(self.workload_controller, workload, reason="EvictedDueToDeactivated", note=message)

    async def preempted(
        self,
        victim: Mapping[str, Any],
        *,
        preemptor: Mapping[str, Any],
        cluster_queue: str,
        message: str,
    ) -> None:
        """``workloadevict.Evict`` (EvictedDueToPreempted), then Preempted and PreemptedWorkload."""
        priorities = _priorities(preemptor, victim)
        await _record(self.scheduler, victim, reason="EvictedDueToPreempted", note=message)
        await _record(self.scheduler, victim, reason="Preempted", note=f"{message}; {priorities}")
        metadata = victim.get("metadata") or {}
        note = (
            f"Preempted workload {metadata.get('namespace', '')}/{metadata.get('name', '')} "
            f"(UID: {metadata.get('uid', '')}) in ClusterQueue {cluster_queue}; {priorities}"
        )
        await _record(self.scheduler, preemptor, reason="PreemptedWorkload", note=note)

    async def slice_replaced(self, old_slice: Mapping[str, Any], *, message: str) -> None:
        await _record(
            self.scheduler, old_slice, reason="WorkloadSliceReplaced", action="Replaced", note=message
        )
