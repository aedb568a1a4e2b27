"""``reconcileGroup``: Kueue's MultiKueue decisions for one Workload and its copies, in Kueue's order.

1. (Elastic workloads: not supported by kueue-bridge; Kueue skips replaced slices here.)
2. Local Workload finished, or without quota -> remove every copy (job first) from the usable
   workers; with some workers unavailable, look again after ``workerLostTimeout``.
3. A copy finished (the earliest ``Finished=True``): reason ``OutOfSync`` (or ``OwnerNotFound``,
   Kueue #14997) is a sync failure, never a completion -> while the check is ``Ready`` (and the copy
   is on the recorded cluster), ``Retry`` "Remote workload on worker cluster "<c>" is out of sync
   with its user job, resetting for re-dispatch" and a Warning event; otherwise (kueue-bridge) the
   copy is removed, so that it cannot block the re-dispatch. Any other reason -> the remote job must
   be ours, its status is copied a last time, and the local Workload gets ``Finished`` with the
   remote reason and message.
4. A copy evicted (the earliest ``Evicted=True``): if the local Workload is evicted too, its job
   status is synced; else, while the check is ``Ready`` (and, kueue-bridge, the copy is on the
   recorded cluster), ``Retry`` "Workload evicted on worker cluster: "<c>", resetting for
   re-admission. Previously: "Ready"" and a Normal event.
5. Copies whose spec differs from the local one (preemption gates aside, and -- kueue-bridge --
   ``active`` while the local Workload is inactive or a worker carries out our
   ``DeactivationTarget``): a priority change is written to the copy, any other difference removes
   it (it is re-created).
6. The admitting worker: the recorded ``clusterName`` if its copy is admitted, else, with none
   recorded, the copy admitted first (kueue-bridge: an admitted copy elsewhere than the recorded
   cluster is stale and never chosen; with none recorded, a worker already holding our job is
   chosen over an earlier admission elsewhere, see ``_admitting_cluster``).
   a. None, while the check is ``Ready``: its worker unreachable -> stay ``Ready`` until
      ``workerLostTimeout`` has passed since the connection was first lost, then ``Retry``
      "Admitting remote lost"; ``status.clusterName`` empty -> ``Retry`` (Kueue's "please report it");
      reachable but its copy gone -> ``Retry`` "Admitting remote no longer exists".
   b. One -> every other copy is removed in this same pass (kueue-bridge: at the same time as the
      rest of this step, not before it); a Workload evicted on the manager sets
      ``DeactivationTarget`` ``EvictedOnManagerCluster`` "Evicted on manager: <message>" on the copy;
      else the job is created on that worker (only there, only now) or its status mirrored, and the
      check becomes ``Ready`` "The workload was admitted on "<c>"" with ``status.clusterName`` set
      (never changed once set) and ``nominatedClusterNames`` cleared, with a Normal event
      (kueue-bridge: a worker not nominated is nominated first, as Kueue's Workload webhook
      requires); a pod set whose topology request the manager delayed becomes ``Ready`` once the
      copy has a topology assignment for it. Requeue after ``workerLostTimeout`` (2 s while the job
      status is deferred).
Kinds kept pending (no manager field, kueue-bridge's extension for CRDs that know nothing about
MultiKueue, Kueue's former ``KeepAdmissionCheckPending``): in 6b the check stays ``Pending`` (with
the same message and ``status.clusterName``), so the manager's Workload holds its quota without being
admitted and its job stays suspended while the copy runs and its status is mirrored; a ``Pending``
check with a recorded cluster then counts as ``Ready`` does in 3, 4 and 6a.

8. Dispatch, only while the check is ``Pending``, no cluster is recorded and every other check is
   ``Ready`` (and, kueue-bridge, no eviction under way and the Workload active): AllAtOnce
   nominates every usable worker (``nominatedClusterNames``, sorted, written only when the set
   changes, while the copies are created rather than before them); Incremental and External use
   ``nominatedClusterNames`` as written by their dispatcher. A copy is created on each nominated
   worker without one and removed from each worker no longer nominated; a nominated worker without
   a connection is an error (retry).

Every write to the manager's Workload is one of Kueue's server-side applies (``shared.kueue.admission_apply``,
see ``multikueue.workload``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from datetime import datetime
from typing import Any, Final, Protocol

from multikueue.remote import WORKLOAD_GVK, RemoteCluster
from multikueue.remote_copy import remote_workload_copy
from multikueue.workload_group import WorkloadGroup
from multikueue.workload_status import check_state, earliest_true, set_check_state
from shared.constants import (
    EVICTED_ON_MANAGER_CLUSTER,
    MULTIKUEUE_DISPATCHER_ALL_AT_ONCE,
    CheckState,
    Condition,
    Reason,
)
from shared.jsontree import json_tree_copy
from shared.kube import NORMAL, WARNING, Clock, KubeClient, Result
from shared.kube.conditions import (
    is_object_condition_true,
    is_true,
    object_condition,
    read_status,
    set_object_condition,
    writable_status,
)
from shared.kueue.admission_apply import apply_admission_status, apply_finish
from shared.kueue.workload_state import (
    has_quota_reservation,
    is_evicted,
    is_finished,
    truncate_condition_message,
)

__all__ = ["SYNC_DEFERRED_REQUEUE_SECONDS", "DecisionSettings", "WorkloadActions", "reconcile_group"]

SYNC_DEFERRED_REQUEUE_SECONDS: Final = 2.0
#: remote Finished reasons that are sync failures, not completions (Kueue #13047, #14997)
SYNC_FAILURE_REASONS: Final = frozenset({Reason.OUT_OF_SYNC, Reason.OWNER_NOT_FOUND})


class DecisionSettings(Protocol):
    @property
    def worker_lost_timeout(self) -> float: ...

    @property
    def dispatcher_name(self) -> str: ...


class WorkloadActions(Protocol):
    """What the decisions read and do through the Workload reconciler, and nothing more.

    ``multikueue.workload.WorkloadReconciler`` is the one implementation; the decisions are typed
    against this port so that they never import the reconciler (no import circle).
    """

    @property
    def settings(self) -> DecisionSettings: ...

    @property
    def client(self) -> KubeClient: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def now(self) -> Callable[[], datetime]: ...

    @property
    def dispatched(self) -> Callable[[str], None]: ...

    @property
    def admitted(self) -> Callable[[str, dict[str, Any]], None]: ...

    def remote(self, cluster: str) -> RemoteCluster | None: ...

    async def update_check(
        self, workload: dict[str, Any], check: dict[str, Any], state: str, message: str
    ) -> dict[str, Any]: ...

    async def write_check(
        self, workload: dict[str, Any], name: str, state: str, message: str
    ) -> dict[str, Any]: ...

    def wrote_local(self, written: dict[str, Any]) -> None: ...

    def event(self, workload: dict[str, Any], event_type: str, message: str) -> None: ...


class NominationError(Exception):
    """``ErrNoRemoteClientForNominatedCluster`` (and friends): retried with backoff."""


def _dispatched(local: dict[str, Any], check: dict[str, Any], group: WorkloadGroup) -> bool:
    """The check vouches for a worker: ``Ready`` -- or, for a kind kept pending, ``Pending`` with the
    admitting cluster recorded (kueue-bridge's extension, module doc)."""
    state = check.get("state")
    if state == CheckState.READY:
        return True
    return (
        group.adapter.keep_pending
        and state == CheckState.PENDING
        and bool(read_status(local).get("clusterName"))
    )


async def reconcile_group(r: WorkloadActions, group: WorkloadGroup) -> Result:
    local = group.local
    check = check_state(local, group.check_name) or {"name": group.check_name, "state": CheckState.PENDING}
    dispatched = _dispatched(local, check, group)

    # 2. nothing to run: remove the copies
    if is_finished(local) or not has_quota_reservation(local):
        errors: list[BaseException] = []
        for cluster in list(group.remotes):
            try:
                await group.remove_remote_objects(cluster)
            except Exception as exc:
                errors.append(exc)
        if errors:
            raise errors[0]
        if group.unavailable:
            return Result.after(r.settings.worker_lost_timeout)
        return Result.done()

    recorded = str(read_status(local).get("clusterName") or "")

    # 3. a copy finished
    finished = earliest_true(group.remotes, Condition.FINISHED)
    while finished is not None and finished[1].get("reason") in SYNC_FAILURE_REASONS:
        cluster = finished[0]
        if dispatched and cluster == (recorded or cluster):
            message = (
                f'Remote workload on worker cluster "{cluster}" is out of sync with its user job, '
                "resetting for re-dispatch"
            )
            updated = await r.update_check(local, check, CheckState.RETRY, message)
            r.event(
                updated, WARNING, str((check_state(updated, group.check_name) or {}).get("message", message))
            )
            return Result.done()
        # kueue-bridge: a copy that failed to sync is never of use again. Kueue leaves it, and when
        # its core re-reserves quota before MultiKueue saw the Workload without it (the pass that
        # removes every copy), the copy blocks the re-dispatch for good.
        await group.remove_remote_objects(cluster)
        finished = earliest_true(group.remotes, Condition.FINISHED)
    if finished is not None:
        cluster, remote_finished = finished
        await group.sync_owned_job(cluster, now=r.now())
        await _finish(
            r, local, str(remote_finished.get("reason") or ""), str(remote_finished.get("message") or "")
        )
        return Result.done()

    # 4. a copy evicted
    evicted = earliest_true(group.remotes, Condition.EVICTED)
    if evicted is not None:
        cluster, _ = evicted
        if is_evicted(local):
            deferred = await group.sync_owned_job(cluster, now=r.now())
            return Result.after(SYNC_DEFERRED_REQUEUE_SECONDS) if deferred else Result.done()
        if dispatched and cluster == (recorded or cluster):
            message = (
                f'Workload evicted on worker cluster: "{recorded}", resetting for re-admission. '
                f'Previously: "{check.get("state")}"'
            )
            updated = await r.write_check(local, group.check_name, CheckState.RETRY, message)
            r.event(updated, NORMAL, message)
            return Result.done()

    # 5. copies out of sync with the local spec
    for cluster, remote in list(group.remotes.items()):
        if remote is None or not _spec_out_of_sync(local, remote):
            continue
        if _priority_changed(local, remote):
            updated_remote = json_tree_copy(remote)
            spec = updated_remote.setdefault("spec", {})
            for key in ("priorityClassRef", "priority"):
                if key in (local.get("spec") or {}):
                    spec[key] = json_tree_copy(local["spec"][key])
            group.wrote(
                cluster, WORKLOAD_GVK, await group.client(cluster).update(WORKLOAD_GVK, updated_remote)
            )
            continue
        await group.remove_remote_objects(cluster)

    # 6. the admitting worker
    admitting = await _admitting_cluster(group, recorded)
    if admitting is None and dispatched:
        return await _admitting_remote_gone(r, group, check)
    if admitting is not None:
        return await _converge_on(r, group, check, admitting)

    # 8. dispatch
    if check.get("state") != CheckState.PENDING or recorded:
        return Result.done()
    if is_evicted(local) or (local.get("spec") or {}).get("active") is False:
        # kueue-bridge: not while an eviction is under way (the quota is still held and Kueue
        # re-queues the Workload once it is released) nor while the Workload is inactive: copies
        # made now would only be deactivated or removed again (Kueue dispatches them).
        return Result.done()
    return await _nominate_and_synchronize(r, group)


async def _admitting_cluster(group: WorkloadGroup, recorded: str) -> str | None:
    """The worker whose copy is admitted: the recorded ``clusterName`` if its copy is admitted, else
    (none recorded) the copy admitted first, as Kueue's ``bestMatchByCondition``.

    kueue-bridge: with a cluster recorded, an admitted copy elsewhere is stale -- left on a worker
    that was lost while the Workload was dispatched again and has come back -- and is never chosen:
    Kueue chooses the earlier admission, i.e. the stale copy, deletes the running one and then
    fails on ``attempting to change immutable ClusterName``. The stale copy is removed with the
    other losers when the recorded one is converged on; with the recorded copy gone, the check
    goes to ``Retry`` (step 6a) and the eviction that follows removes every copy.

    kueue-bridge: with none recorded and several copies admitted, a worker that already holds our
    job is the one chosen. The job is created on the chosen worker while the other copies are
    removed and before the choice is recorded (step 6b), so a pass killed in between (``kill -9``,
    a lost Lease) leaves our job there and other copies admitted; and the earliest admission can be
    another copy's, read only now (the workers' Kueues stamp admissions to the second, from their
    own passes). Choosing it would run the job on a second worker."""
    if recorded:
        copy = group.remotes.get(recorded)
        return recorded if copy is not None and is_object_condition_true(copy, Condition.ADMITTED) else None
    admitted = earliest_true(group.remotes, Condition.ADMITTED)
    if admitted is None:
        return None
    others = [
        cluster
        for cluster, copy in group.remotes.items()
        if cluster != admitted[0] and is_object_condition_true(copy, Condition.ADMITTED)
    ]
    if others:
        holding = await asyncio.gather(*(group.holds_owned_job(cluster) for cluster in others))
        chosen = [cluster for cluster, holds in zip(others, holding, strict=True) if holds]
        if chosen and not await group.holds_owned_job(admitted[0]):
            return chosen[0]
    return admitted[0]


async def _finish(r: WorkloadActions, local: dict[str, Any], reason: str, message: str) -> None:
    await apply_finish(
        r.client, local, reason=reason, message=truncate_condition_message(message), now=r.now()
    )


def _comparable_spec(workload: dict[str, Any]) -> dict[str, Any]:
    spec = dict(workload.get("spec") or {})
    spec.pop("preemptionGates", None)
    return spec


def _deactivated_on_our_request(remote: dict[str, Any]) -> bool:
    """The copy is being deactivated because we set ``DeactivationTarget`` on it (a manager eviction)."""
    target = object_condition(remote, Condition.DEACTIVATION_TARGET)
    if target is not None and target.get("reason") == EVICTED_ON_MANAGER_CLUSTER:
        return True
    evicted = object_condition(remote, Condition.EVICTED)
    return evicted is not None and str(evicted.get("reason") or "").endswith(EVICTED_ON_MANAGER_CLUSTER)


def _spec_out_of_sync(local: dict[str, Any], remote: dict[str, Any]) -> bool:
    """Kueue's ``isRemoteSpecOutOfSync`` (preemption gates aside). kueue-bridge also ignores ``active``
    while the manager's Workload is inactive (a deactivation is an eviction on the manager and is
    carried out through ``DeactivationTarget`` like any other) and the copy's ``spec.active: false``
    while the worker carries out our ``DeactivationTarget``: Kueue removes such a copy at once, its
    job goes with it before the worker stopped it, and the manager job, stopped while its copy
    ran, keeps the copy's last ``active`` count and never releases its quota."""
    local_spec, remote_spec = _comparable_spec(local), _comparable_spec(remote)
    if local_spec.get("active") is False or _deactivated_on_our_request(remote):
        local_spec.pop("active", None)
        remote_spec.pop("active", None)
    return local_spec != remote_spec


def _priority_changed(local: dict[str, Any], remote: dict[str, Any]) -> bool:
    """Kueue's ``PriorityChanged`` for WorkloadPriorityClass-based priorities (pod priority is fixed)."""
    new_ref = (local.get("spec") or {}).get("priorityClassRef") or {}
    old_ref = (remote.get("spec") or {}).get("priorityClassRef") or {}
    if old_ref.get("kind") == "PriorityClass" or new_ref.get("kind") != "WorkloadPriorityClass":
        return False
    if new_ref.get("name") and new_ref.get("name") != old_ref.get("name"):
        return True
    return (local.get("spec") or {}).get("priority") != (remote.get("spec") or {}).get("priority")


async def _admitting_remote_gone(r: WorkloadActions, group: WorkloadGroup, check: dict[str, Any]) -> Result:
    local = group.local
    admitting = str(read_status(local).get("clusterName") or "")
    if admitting and admitting in group.unavailable:
        remote = r.remote(admitting)
        lost_since = (
            remote.lost_since if remote is not None and remote.lost_since is not None else r.clock.now()
        )
        remaining = r.settings.worker_lost_timeout - (r.clock.now() - lost_since)
        if remaining > 0:
            return Result.after(remaining)
        await r.update_check(local, check, CheckState.RETRY, "Admitting remote lost")
        return Result.done()
    if not admitting:
        await r.update_check(
            local,
            check,
            CheckState.RETRY,
            "Admission check is Ready but no admitting cluster is recorded; this is unexpected, please report it",
        )
        return Result.done()
    await r.update_check(local, check, CheckState.RETRY, "Admitting remote no longer exists")
    return Result.done()


async def _converge_on(
    r: WorkloadActions, group: WorkloadGroup, check: dict[str, Any], cluster: str
) -> Result:
    """The other copies are removed while the winner is handled, not before it: each removal is two
    or three requests to another worker, and the job's creation on the winner waited for them
    (Kueue removes them first; the outcome is the same, and a failed removal still fails the pass,
    which is retried)."""
    others = [other for other, remote in group.remotes.items() if remote is not None and other != cluster]
    removing = asyncio.ensure_future(
        asyncio.gather(*(group.remove_remote_objects(other) for other in others), return_exceptions=True)
    )
    try:
        winner = await _converge_winner(r, group, check, cluster)
    finally:
        removed = await removing  # a failure of the winner's part is raised once these are done
    for outcome in removed:
        if isinstance(outcome, BaseException):
            raise outcome
    return winner


async def _converge_winner(
    r: WorkloadActions, group: WorkloadGroup, check: dict[str, Any], cluster: str
) -> Result:
    local = group.local
    evicted = object_condition(local, Condition.EVICTED)
    if has_quota_reservation(local) and is_true(evicted):
        remote = json_tree_copy(group.remotes[cluster] or {})
        if set_object_condition(
            remote,
            condition_type=Condition.DEACTIVATION_TARGET,
            status="True",
            reason=EVICTED_ON_MANAGER_CLUSTER,
            message=truncate_condition_message(f"Evicted on manager: {evicted.get('message', '')}"),
            now=r.now(),
        ):
            # as Kueue: the worker's ``kueue-admission`` state, so that the worker's Kueue, which
            # removes the condition when it deactivates the copy, can remove it
            group.wrote(cluster, WORKLOAD_GVK, await apply_admission_status(group.client(cluster), remote))
        return Result.done()
    recorded = read_status(local).get("clusterName")
    needs_check_update = check.get("state") not in (CheckState.RETRY, CheckState.REJECTED)
    nominated = [str(name) for name in read_status(local).get("nominatedClusterNames") or []]
    if needs_check_update and not recorded and cluster not in nominated:
        local = group.local = await _nominate_admitting(r, local, [*nominated, cluster])
    # kueue-bridge: the job's name on the worker is checked first, the cluster recorded next and the
    # job created last (Kueue creates the job before it records the cluster). A pass that dies in
    # between leaves a recorded cluster without its job, which the next pass creates -- never a
    # job on a worker that no record names, which a restarted process that cannot reach that worker
    # would dispatch a second time.
    remote_job = await group.owned_remote_job(cluster)
    updated = json_tree_copy(local)
    changed = _release_delayed_topology(updated, group.remotes.get(cluster))
    message = f'The workload was admitted on "{cluster}"'
    if needs_check_update:
        if recorded and recorded != cluster:
            raise RuntimeError(f'attempting to change immutable ClusterName from "{recorded}" to "{cluster}"')
        wanted = CheckState.PENDING if group.adapter.keep_pending else CheckState.READY
        changed |= set_check_state(updated, group.check_name, state=wanted, message=message, now=r.now())
        status = writable_status(updated)
        if not recorded:
            status["clusterName"] = cluster
            changed = True
        if status.pop("nominatedClusterNames", None) is not None:
            changed = True
    if changed:
        # the pass is complete once this is written: its echo is not reconciled (multikueue.own_writes)
        r.wrote_local(await apply_admission_status(r.client, updated))
        if needs_check_update and not recorded:
            r.event(updated, NORMAL, message)
            r.admitted(cluster, updated)
    deferred = await group.sync_owned_job(cluster, now=r.now(), checked=(remote_job,))
    return Result.after(SYNC_DEFERRED_REQUEUE_SECONDS if deferred else r.settings.worker_lost_timeout)


async def _nominate_admitting(
    r: WorkloadActions, local: dict[str, Any], nominated: list[str]
) -> dict[str, Any]:
    """kueue-bridge: nominate the admitting worker before ``clusterName`` is set to it.

    Kueue's Workload webhook refuses a first ``clusterName`` that the *stored* Workload does not
    nominate (``when setting clusterName it must be one of the nominatedClusterNames``), and the
    CRD refuses both fields in one Workload. A copy can be admitted while its worker is not
    nominated: Kueue's eviction cleared the nomination and its scheduler reserved the quota again
    before a pass removed the copies, or the nomination write failed after the copies were created.
    Kueue's MultiKueue is refused for good then; written first, the nomination lets ``Ready`` pass."""
    updated = json_tree_copy(local)
    writable_status(updated)["nominatedClusterNames"] = nominated
    return await apply_admission_status(r.client, updated)


def _release_delayed_topology(local: dict[str, Any], remote: dict[str, Any] | None) -> bool:
    """Kueue's ``updateDelayedTopologyRequest``: a pod set whose topology the manager delayed is
    ``Ready`` once the admitting copy has a topology assignment for it."""
    remote_admission = ((remote or {}).get("status") or {}).get("admission") or {}
    local_admission = read_status(local).get("admission") or {}
    local_sets = {item.get("name"): item for item in local_admission.get("podSetAssignments") or []}
    changed = False
    for assignment in remote_admission.get("podSetAssignments") or []:
        if not assignment.get("topologyAssignment"):
            continue
        mine = local_sets.get(assignment.get("name"))
        if mine is not None and mine.get("delayedTopologyRequest") == "Pending":
            mine["delayedTopologyRequest"] = "Ready"
            changed = True
    return changed


def _other_checks_ready(local: dict[str, Any], check_name: str) -> bool:
    return all(
        item.get("state") == CheckState.READY
        for item in read_status(local).get("admissionChecks") or []
        if isinstance(item, dict) and item.get("name") != check_name
    )


async def _nominate_and_synchronize(r: WorkloadActions, group: WorkloadGroup) -> Result:
    local = group.local
    if not _other_checks_ready(local, group.check_name):
        return Result.done()
    work: list[Coroutine[Any, Any, None]] = []
    if r.settings.dispatcher_name == MULTIKUEUE_DISPATCHER_ALL_AT_ONCE:
        nominated = sorted(group.remotes)
        current = read_status(local).get("nominatedClusterNames") or []
        if set(current) != set(nominated):
            updated = json_tree_copy(local)
            if nominated:
                writable_status(updated)["nominatedClusterNames"] = nominated
            else:
                writable_status(updated).pop("nominatedClusterNames", None)

            async def nominate() -> None:
                # the copies are created in this same pass: the echo needs no reconcile
                r.wrote_local(await apply_admission_status(r.client, updated))

            # kueue-bridge: written at the same time as the copies are created, not before (the
            # copies do not depend on it; a failed write fails the pass, which is retried)
            work.append(nominate())
    else:
        nominated = [str(name) for name in read_status(local).get("nominatedClusterNames") or []]
    errors: list[Exception] = [
        NominationError(f"cluster {name}: no remote client for nominated cluster")
        for name in nominated
        if name not in group.remotes
    ]

    async def create(cluster: str) -> None:
        await group.create(cluster, WORKLOAD_GVK, remote_workload_copy(local, origin=group.origin))
        r.dispatched(cluster)

    work.extend(
        create(cluster) if cluster in nominated else group.remove_remote_objects(cluster)
        for cluster, remote in list(group.remotes.items())
        if (cluster in nominated) == (remote is None)
    )
    results = await asyncio.gather(*work, return_exceptions=True)
    errors.extend(result for result in results if isinstance(result, Exception))
    if errors:
        raise errors[0]
    return Result.done()
