"""The garbage collector: remote Workloads (and their jobs) whose local Workload is gone.

Kueue's ``runGC`` (``multikueuecluster.go``): every ``multiKueue.gcInterval`` (0 disables it), on
every *connected* worker, list the Workloads carrying our origin label -- that label is the only
thing that makes a remote object ours, so other managers' copies and the worker's own Workloads are
never touched. A copy whose local Workload does not exist or is being deleted is removed: first the
job that controls it (found through its controller owner reference; deleted only if it has an
adapter and carries our origin label too), then the copy itself.

This is how copies left on a worker that was unreachable when the local Workload went away (or
while this process was not running) are cleaned up eventually.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from multikueue.adapters import MultiKueueAdapters
from multikueue.remote import WORKLOAD_GVK, RemoteCluster
from shared.constants import MULTIKUEUE_ORIGIN_LABEL
from shared.kube import Clock, GroupVersionKind, KubeError, NotFound

__all__ = ["GarbageCollector"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True, eq=False)
class GarbageCollector:
    """Every ``interval`` seconds (0: never), delete the worker clusters' Workloads and jobs of
    ``origin`` whose Workload is gone from this cluster, as Kueue's MultiKueue GC does."""

    interval: float
    origin: str
    adapters: MultiKueueAdapters
    remotes: Callable[[], Iterable[RemoteCluster]]
    local_workload: Callable[[str], dict[str, Any] | None]
    clock: Clock

    async def run(self) -> None:
        if self.interval <= 0:
            logger.info("garbage collection is disabled (multiKueue.gcInterval: 0)")
            return
        while True:
            await self.clock.sleep(self.interval)
            for remote in list(self.remotes()):
                try:
                    await self.collect(remote)
                except Exception:  # one bad worker must not stop the collector
                    logger.exception("garbage collection failed", extra={"cluster": remote.name})

    async def collect(self, remote: RemoteCluster) -> int:
        """One pass over one worker; returns how many remote Workloads were deleted."""
        client = remote.client
        if not remote.connected or client is None:
            return 0
        listed = await client.list_all(
            WORKLOAD_GVK, label_selector=f"{MULTIKUEUE_ORIGIN_LABEL}={self.origin}"
        )
        deleted = 0
        for workload in listed.items:
            metadata = workload.get("metadata") or {}
            namespace, name = str(metadata.get("namespace") or ""), str(metadata.get("name") or "")
            local = self.local_workload(f"{namespace}/{name}")
            if local is not None and not (local.get("metadata") or {}).get("deletionTimestamp"):
                continue
            owner = next(
                (
                    ref
                    for ref in metadata.get("ownerReferences") or []
                    if isinstance(ref, dict) and ref.get("controller")
                ),
                None,
            )
            if owner is not None:
                await self._delete_owner(remote, namespace, owner)
            try:
                await client.delete(WORKLOAD_GVK, name, namespace=namespace)
                deleted += 1
            except NotFound:
                continue
            except KubeError:
                logger.exception(
                    "deleting remote workload failed",
                    extra={"cluster": remote.name, "workload": f"{namespace}/{name}"},
                )
        return deleted

    async def _delete_owner(self, remote: RemoteCluster, namespace: str, owner: dict[str, Any]) -> None:
        client = remote.client
        adapter = self.adapters.get(GroupVersionKind.of(owner))
        if adapter is None or client is None:
            logger.info("no adapter for the remote workload's owner", extra={"owner": owner.get("kind")})
            return
        name = str(owner.get("name") or "")
        try:
            job = await client.get(adapter.gvk, name, namespace=namespace)
        except NotFound:
            return
        except KubeError:
            logger.exception("reading remote workload's owner failed", extra={"cluster": remote.name})
            return
        if ((job.get("metadata") or {}).get("labels") or {}).get(MULTIKUEUE_ORIGIN_LABEL) != self.origin:
            return
        try:
            await client.delete(adapter.gvk, name, namespace=namespace, propagation_policy="Background")
        except NotFound:
            return
