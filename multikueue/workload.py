"""The MultiKueue Workload reconciler: Kueue's ``wlReconciler`` (``workload.go``), step by step.

``reconcile(namespace/name)`` on the manager's Workloads (reference notes §2.6):

1. The Workload (from the cache; a deleted one from ``deleted``, what the informer last saw).
2. Its MultiKueue check: the first ``status.admissionChecks`` entry whose AdmissionCheck has our
   controller name. None, or ``Rejected`` -> nothing to do.
3. Its adapter, by the ``kueue.x-k8s.io/job-owner-gvk`` annotation, else the controller owner, else the
   first owner. None -> ``Rejected`` ``No multikueue adapter found for owner kind "<gvk>"``. A job
   that is not managed by MultiKueue -> ``Rejected`` ``The owner is not managed by Kueue: <why>``.
4. The group: the check's MultiKueueConfig's clusters, split into usable workers (connected, and
   for kueue-bridge also able to watch this job kind) and unavailable ones; each usable worker's copy.
   kueue-bridge extends Kueue's ownership rule to the copy itself: a worker holding a Workload of
   that name *without* our origin label is not used for it (Kueue would sync, finish from and
   delete it as if it were its copy). A worker whose read gets no answer (or a 503) is unavailable
   for the pass and marked lost (``RemoteCluster.unreachable``), instead of failing the pass.
5. Deleted -> remote objects removed from every usable worker (the unavailable ones are left to GC).
6. Otherwise ``multikueue.workload_steps.reconcile_group``.

The manager's job is read from the informers of ``multikueue.local_jobs`` (as Kueue reads it from
its cache; a GET for a kind not cached yet or a job the cache does not hold), the copies on the
workers with a GET each, all at the same time, so a reconcile waits on one round trip at most before
it decides. A job the cache shows as not managed by MultiKueue is read again from the API server
before the check is ``Rejected``: a stale copy must not reject a Workload for good.

Writes to the manager's Workload status are Kueue's server-side applies (``shared.kueue.admission_apply``):
``update_check`` (Kueue's ``updateACS``: ``Rejected`` and the ``Retry`` of a lost or vanished
admitting worker or an out-of-sync copy) applies that one check entry as the check's controller
(``kueueBridge.multiKueue.controllerName``); everything else -- nominations, ``Ready`` with
``clusterName``, the worker-eviction ``Retry``, ``Finished`` -- is ``PatchAdmissionStatus``, a forced
apply of the whole admission state as ``kueue-admission``, so that Kueue's eviction, applying as
``kueue-admission`` without ``clusterName`` and ``nominatedClusterNames``, removes them. Every
check-state change appends Kueue's ``, Previously: "<old state>"`` to the message. All carry the
Workload's resourceVersion (a stale cache is a ``Conflict`` and a retry).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from multikueue.adapters import MultiKueueAdapters, MultiKueueJobAdapter
from multikueue.admissioncheck import ParametersError, config_clusters, parameters_config_name
from multikueue.local_jobs import LocalJobs
from multikueue.own_writes import MANAGER, OwnWrites
from multikueue.remote import WORKLOAD_GVK, RemoteCluster
from multikueue.workload_group import WorkloadGroup
from multikueue.workload_status import set_check_state
from multikueue.workload_steps import reconcile_group
from shared.constants import (
    ADMISSION_CHECK_GVK,
    JOB_OWNER_GVK_ANNOTATION,
    JOB_OWNER_NAME_ANNOTATION,
    MULTIKUEUE_CONFIG_GVK,
    MULTIKUEUE_ORIGIN_LABEL,
    CheckState,
)
from shared.jsontree import json_tree_copy
from shared.kube import (
    Clock,
    GroupVersionKind,
    KubeClient,
    KubeError,
    NotFound,
    Result,
    ServiceUnavailable,
    TransportError,
    cache_miss_message,
)
from shared.kube.times import format_time
from shared.kueue.admission_apply import apply_admission_status, apply_check_state
from shared.kueue.workload_state import truncate_condition_message, truncate_event_message

__all__ = ["EventSink", "ReconcilerSettings", "WorkloadReconciler"]

logger = logging.getLogger(__name__)

#: what a worker that is going away answers a read with: no answer at all, or an API server's 503
UNREACHABLE = (TransportError, ServiceUnavailable)

EventSink = Callable[[dict[str, Any], str, str], None]
"""(regarding object, event type, message): a ``MultiKueue`` event on the local Workload."""


@dataclass(frozen=True)
class ReconcilerSettings:
    controller_name: str
    origin: str
    worker_lost_timeout: float
    dispatcher_name: str
    workload_identifier_annotations: bool = True


@dataclass(kw_only=True, eq=False)
class WorkloadReconciler:
    """``reconcile(key)`` for the manager's Workloads that a MultiKueue check of ours guards: the
    dependencies it reads through and the one piece of state it keeps (``deleted``)."""

    client: KubeClient
    settings: ReconcilerSettings
    adapters: MultiKueueAdapters
    workloads: Callable[[str], dict[str, Any] | None]
    checks: Callable[[str], dict[str, Any] | None]
    configs: Callable[[str], dict[str, Any] | None]
    remotes: Callable[[str], RemoteCluster | None]
    events: EventSink
    clock: Clock
    now: Callable[[], datetime]
    #: the manager's jobs (read from its informers)
    local_jobs: LocalJobs
    dispatched: Callable[[str], None] = field(default=lambda cluster: None)
    admitted: Callable[[str, dict[str, Any]], None] = field(default=lambda cluster, workload: None)
    #: our writes whose watch echoes need no reconcile (``None``: every event is reconciled)
    own_writes: OwnWrites | None = None
    #: Kueue's ``deletedWlCache``: the last state of Workloads deleted from the manager
    deleted: dict[str, dict[str, Any]] = field(default_factory=dict, init=False)

    def workload_deleted(self, workload: dict[str, Any]) -> None:
        metadata = workload.get("metadata") or {}
        self.deleted[f"{metadata.get('namespace')}/{metadata.get('name')}"] = workload

    # --- lookups ---------------------------------------------------------------------------------
    def multikueue_check(self, workload: dict[str, Any]) -> dict[str, Any] | None:
        """``GetMultiKueueAdmissionCheck`` for our controller name."""
        for state in (workload.get("status") or {}).get("admissionChecks") or []:
            check = self.checks(str(state.get("name") or ""))
            if (
                check is not None
                and (check.get("spec") or {}).get("controllerName") == self.settings.controller_name
            ):
                return dict(state)
        return None

    def adapter_for(
        self, workload: dict[str, Any]
    ) -> tuple[MultiKueueJobAdapter | None, dict[str, Any] | None]:
        metadata = workload.get("metadata") or {}
        annotations = metadata.get("annotations") or {}
        owner_gvk = annotations.get(JOB_OWNER_GVK_ANNOTATION)
        if owner_gvk:
            for adapter in self.adapters.by_gvk.values():
                if str(adapter.gvk) == owner_gvk and annotations.get(JOB_OWNER_NAME_ANNOTATION):
                    reference = {
                        "apiVersion": adapter.gvk.api_version,
                        "kind": adapter.gvk.kind,
                        "name": annotations[JOB_OWNER_NAME_ANNOTATION],
                    }
                    return adapter, reference
        references = [r for r in metadata.get("ownerReferences") or [] if isinstance(r, dict)]
        owner = next(
            (r for r in references if r.get("controller") is True), references[0] if references else None
        )
        if owner is None:
            return None, None
        return self.adapters.get(GroupVersionKind.of(owner)), owner

    async def update_check(
        self, workload: dict[str, Any], check: dict[str, Any], state: str, message: str
    ) -> dict[str, Any]:
        """Kueue's ``updateACS``: the new state, ``<message>, Previously: "<old state>"``, applied as
        the check's controller (``PatchStatus``: that one check entry, nothing else)."""
        entry = {
            **json_tree_copy(check),
            "state": state,
            "message": truncate_condition_message(f'{message}, Previously: "{check.get("state", "")}"'),
            "lastTransitionTime": format_time(self.now()),
        }
        return await apply_check_state(
            self.client, workload, entry, field_manager=self.settings.controller_name
        )

    async def write_check(
        self, workload: dict[str, Any], name: str, state: str, message: str
    ) -> dict[str, Any]:
        """The check's new state as part of the admission status (``PatchAdmissionStatus``)."""
        updated = json_tree_copy(workload)
        if not set_check_state(updated, name, state=state, message=message, now=self.now()):
            return workload
        return await apply_admission_status(self.client, updated)

    def wrote_local(self, written: dict[str, Any]) -> None:
        """A status write to the manager's Workload after which this pass had nothing left to do."""
        if self.own_writes is not None:
            self.own_writes.wrote(MANAGER, str(WORKLOAD_GVK), written)

    def event(self, workload: dict[str, Any], event_type: str, message: str) -> None:
        self.events(workload, event_type, truncate_event_message(message))

    # --- reconcile -------------------------------------------------------------------------------
    async def reconcile(self, key: str) -> Result:
        cached = self.workloads(key)
        deleted = cached is None
        if cached is None:
            cached = self.deleted.get(key)
            if cached is None:
                return Result.done()
        workload = json_tree_copy(cached)
        deleted = deleted or bool((workload.get("metadata") or {}).get("deletionTimestamp"))
        check = self.multikueue_check(workload)
        if check is None or check.get("state") == CheckState.REJECTED:
            if deleted:
                self.deleted.pop(key, None)
            return Result.done()
        adapter, owner = self.adapter_for(workload)
        if adapter is None or owner is None:
            if deleted:
                self.deleted.pop(key, None)
                return Result.done()
            message = "No multikueue adapter found"
            if owner is not None:
                message = f'No multikueue adapter found for owner kind "{GroupVersionKind.of(owner)}"'
            await self.update_check(workload, check, CheckState.REJECTED, message)
            return Result.done()
        namespace = str((workload.get("metadata") or {}).get("namespace") or "")
        owner_name = str(owner.get("name") or "")
        local_job: dict[str, Any] | None = None
        if deleted:
            group = await self.read_group(workload, check, adapter, owner_name)
        else:
            # the manager's job and the copies are read at once: one round trip less per reconcile
            # (a job found unmanaged only wasted the reads of the copies)
            read_job, group = await asyncio.gather(
                self.local_jobs.get(adapter.gvk, owner_name, namespace=namespace),
                self.read_group(workload, check, adapter, owner_name),
            )
            managed, reason = adapter.is_managed(read_job)
            if not managed:  # final: decided on a fresh read only
                read_job = await self.local_jobs.fresh(adapter.gvk, owner_name, namespace=namespace)
                managed, reason = adapter.is_managed(read_job)
            local_job = read_job
            if not managed:
                await self.update_check(
                    workload, check, CheckState.REJECTED, f"The owner is not managed by Kueue: {reason}"
                )
                return Result.done()
        group.local_job = local_job
        if deleted:
            for cluster in list(group.remotes):
                await group.remove_remote_objects(cluster)
            self.deleted.pop(key, None)
            return Result.done()
        return await reconcile_group(self, group)

    async def read_group(
        self, workload: dict[str, Any], check: dict[str, Any], adapter: MultiKueueJobAdapter, owner_name: str
    ) -> WorkloadGroup:
        check_name = str(check["name"])
        admission_check = self.checks(check_name)
        try:
            if admission_check is None:
                raise ParametersError(cache_miss_message(ADMISSION_CHECK_GVK, check_name))
            config_name = parameters_config_name(admission_check)
            config = self.configs(config_name)
            if config is None:
                raise ParametersError(cache_miss_message(MULTIKUEUE_CONFIG_GVK, config_name))
        except ParametersError as exc:
            raise RuntimeError(f'admission check "{check_name}": {exc}') from None
        group = WorkloadGroup(
            local=workload,
            local_client=self.client,
            adapter=adapter,
            owner_name=owner_name,
            check_name=check_name,
            origin=self.settings.origin,
            workload_identifier_annotations=self.settings.workload_identifier_annotations,
            local_jobs=self.local_jobs,
            own_writes=self.own_writes,
        )
        metadata = workload.get("metadata") or {}
        usable: list[tuple[str, RemoteCluster, KubeClient]] = []
        for cluster in config_clusters(config):
            remote = self.remotes(cluster)
            if remote is None or remote.client is None or not remote.usable_for(adapter.gvk):
                group.unavailable.append(cluster)
            else:
                usable.append((cluster, remote, remote.client))
        name, namespace = str(metadata.get("name")), str(metadata.get("namespace"))

        async def read(client: KubeClient) -> dict[str, Any] | KubeError | None:
            try:
                return await client.get(WORKLOAD_GVK, name, namespace=namespace)
            except NotFound:
                return None
            except UNREACHABLE as exc:
                return exc

        copies = await asyncio.gather(*(read(client) for _, _, client in usable))
        for (cluster, remote, _), copy in zip(usable, copies, strict=True):
            if isinstance(copy, KubeError):
                # kueue-bridge: a worker that does not answer is left out of this pass, as a lost
                # one is, rather than failing it (``RemoteCluster.unreachable`` says why)
                remote.unreachable(copy)
                group.unavailable.append(cluster)
                continue
            labels = ((copy or {}).get("metadata") or {}).get("labels") or {}
            if copy is not None and labels.get(MULTIKUEUE_ORIGIN_LABEL) != self.settings.origin:
                # a Workload of that name that is not ours: never synced, finished from or deleted
                logger.warning(
                    "worker has a Workload of this name without our origin label; not using that worker",
                    extra={"cluster": cluster, "workload": f"{namespace}/{name}"},
                )
                group.unavailable.append(cluster)
                continue
            group.clients[cluster] = remote
            group.remotes[cluster] = copy
        return group

    def remote(self, cluster: str) -> RemoteCluster | None:
        return self.remotes(cluster)
