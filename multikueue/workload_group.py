"""A local Workload with its copies on the usable workers, and the remote operations on them.

Kueue's ``wlGroup`` plus the jobframework helpers it calls (``ValidateRemoteObjectOwnership``,
``DeleteRemoteObjectIfOwned``, ``SyncJob``). The ownership rule (Kueue #11877) holds everywhere:
a remote job is synced, finished from or deleted only if it carries our
``kueue.x-k8s.io/multikueue-origin`` label -- a worker's own Job of the same name is never touched.

* ``remove_remote_objects(cluster)``: the remote job first (if it is ours; a job that is gone or not
  ours is skipped silently), then the remote Workload: its ``kueue.x-k8s.io/resource-in-use``
  finalizer is removed (an update, guarded by its resourceVersion) and it is deleted. The job goes
  first because the garbage collector finds a remote job only through its remote Workload.
* ``sync_owned_job(cluster)``: create the job on the worker if it is not there (sanitised by the adapter),
  else copy its status to the local job when it differs. A remote job that exists but is not ours
  is an error (``RemoteObjectNotOwnedError``): the reconcile fails and is retried, nothing is written.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from multikueue.adapters import MultiKueueJobAdapter
from multikueue.local_jobs import LocalJobs
from multikueue.own_writes import OwnWrites
from multikueue.remote import WORKLOAD_GVK, RemoteCluster
from shared.constants import MULTIKUEUE_ORIGIN_LABEL, RESOURCE_IN_USE_FINALIZER
from shared.kube import GroupVersionKind, KubeClient, NotFound

__all__ = ["RemoteObjectNotOwnedError", "WorkloadGroup"]

logger = logging.getLogger(__name__)


class RemoteObjectNotOwnedError(Exception):
    """Kueue's ``ErrRemoteObjectNotOwnedByMultiKueue``."""


@dataclass
class WorkloadGroup:
    local: dict[str, Any]
    local_client: KubeClient
    adapter: MultiKueueJobAdapter
    owner_name: str
    check_name: str
    origin: str
    #: usable workers -> their copy of the Workload (``None``: no copy there)
    remotes: dict[str, dict[str, Any] | None] = field(default_factory=dict)
    clients: dict[str, RemoteCluster] = field(default_factory=dict)
    #: workers of the config that are not usable now (disconnected, or not for this kind)
    unavailable: list[str] = field(default_factory=list)
    workload_identifier_annotations: bool = True
    #: the manager's job as read by this reconcile (``None``: read it when needed)
    local_job: dict[str, Any] | None = None
    #: where a status write of ours is remembered (read your own writes; ``None``: nowhere)
    local_jobs: LocalJobs | None = None
    #: where our writes to the workers are noted, so that their watch echoes are not reconciled
    own_writes: OwnWrites | None = None

    @property
    def namespace(self) -> str:
        return str((self.local.get("metadata") or {}).get("namespace") or "")

    @property
    def name(self) -> str:
        return str((self.local.get("metadata") or {}).get("name") or "")

    def client(self, cluster: str) -> KubeClient:
        client = self.clients[cluster].client
        if client is None:
            raise RuntimeError(f"worker cluster {cluster} has no client")
        return client

    def wrote(self, cluster: str, gvk: GroupVersionKind, written: Any) -> None:
        if self.own_writes is not None:
            self.own_writes.wrote(cluster, str(gvk), written)

    async def create(self, cluster: str, gvk: GroupVersionKind, obj: dict[str, Any]) -> None:
        """Create ``obj`` on ``cluster``, its ``ADDED`` event noted as our echo (before the request)."""
        own = self.own_writes
        if own is not None:
            own.creating(cluster, str(gvk), obj)
        try:
            await self.client(cluster).create(gvk, obj, namespace=self.namespace)
        except BaseException:
            if own is not None:
                own.not_created(cluster, str(gvk), obj)
            raise

    def _deleting(self, cluster: str, gvk: GroupVersionKind, obj: dict[str, Any]) -> None:
        if self.own_writes is not None:
            self.own_writes.deleting(cluster, str(gvk), obj)

    # --- remote job ------------------------------------------------------------------------------
    async def _remote_job(self, cluster: str) -> dict[str, Any] | None:
        try:
            return await self.client(cluster).get(self.adapter.gvk, self.owner_name, namespace=self.namespace)
        except NotFound:
            return None

    def _owned(self, job: dict[str, Any]) -> bool:
        labels = (job.get("metadata") or {}).get("labels") or {}
        return bool(labels.get(MULTIKUEUE_ORIGIN_LABEL) == self.origin)

    async def holds_owned_job(self, cluster: str) -> bool:
        """Our job (origin label) is on ``cluster``."""
        job = await self._remote_job(cluster)
        return job is not None and self._owned(job)

    async def delete_remote_job(self, cluster: str) -> None:
        """``DeleteRemoteObjectIfOwned``: delete the remote job only when it is ours."""
        job = await self._remote_job(cluster)
        if job is None or not self._owned(job):
            if job is not None:
                logger.info(
                    "remote job not deleted: not owned by this MultiKueue origin",
                    extra={"cluster": cluster, "job": f"{self.namespace}/{self.owner_name}"},
                )
            return
        self._deleting(cluster, self.adapter.gvk, job)
        try:
            await self.client(cluster).delete(
                self.adapter.gvk,
                self.owner_name,
                namespace=self.namespace,
                propagation_policy="Background",
                uid=str((job.get("metadata") or {}).get("uid") or "") or None,
            )
        except NotFound:
            return

    async def owned_remote_job(self, cluster: str) -> dict[str, Any] | None:
        """``ValidateRemoteObjectOwnership``: the worker's job of our job's name, ``None`` when there is
        none; ``RemoteObjectNotOwnedError`` when there is one and it is not ours."""
        remote_job = await self._remote_job(cluster)
        if remote_job is not None and not self._owned(remote_job):
            raise RemoteObjectNotOwnedError(
                f'remote object is not owned by MultiKueue: expected "{MULTIKUEUE_ORIGIN_LABEL}"="{self.origin}" '
                f'on {self.adapter.gvk.kind} "{self.namespace}/{self.owner_name}" in cluster {cluster}'
            )
        return remote_job

    async def sync_owned_job(
        self, cluster: str, *, now: datetime, checked: tuple[dict[str, Any] | None] | None = None
    ) -> bool:
        """``ValidateRemoteObjectOwnership`` then ``SyncJob`` (one read of the remote job): create the
        remote job, or mirror its status; returns ``deferred``. ``checked``: what
        ``owned_remote_job`` returned earlier in this pass (not read again)."""
        remote_job = checked[0] if checked is not None else await self.owned_remote_job(cluster)
        local_job = self.local_job
        if local_job is None:
            local_job = await self.local_client.get(
                self.adapter.gvk, self.owner_name, namespace=self.namespace
            )
        if remote_job is None:
            copy = self.adapter.remote_copy(
                local_job,
                workload_name=self.name,
                origin=self.origin,
                workload_identifier_annotations=self.workload_identifier_annotations,
            )
            await self.create(cluster, self.adapter.gvk, copy)
            return False
        sync = self.adapter.status_sync(local_job, remote_job, now=now)
        if sync.patch is not None:
            written = await self.local_client.patch_status(
                self.adapter.gvk, self.owner_name, sync.patch, namespace=self.namespace
            )
            if self.local_jobs is not None:
                self.local_jobs.remember(self.adapter.gvk, written)
        return sync.deferred

    # --- both ------------------------------------------------------------------------------------
    async def remove_remote_objects(self, cluster: str) -> None:
        await self.delete_remote_job(cluster)
        remote = self.remotes.get(cluster)
        if remote is None:
            return
        client = self.client(cluster)
        metadata = remote.get("metadata") or {}
        finalizers = list(metadata.get("finalizers") or [])
        try:
            if RESOURCE_IN_USE_FINALIZER in finalizers:
                remote = {
                    **remote,
                    "metadata": {
                        **metadata,
                        "finalizers": [f for f in finalizers if f != RESOURCE_IN_USE_FINALIZER],
                    },
                }
                self.wrote(cluster, WORKLOAD_GVK, await client.update(WORKLOAD_GVK, remote))
            self._deleting(cluster, WORKLOAD_GVK, remote)
            await client.delete(WORKLOAD_GVK, self.name, namespace=self.namespace)
        except NotFound:
            pass
        self.remotes[cluster] = None
