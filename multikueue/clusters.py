"""The MultiKueueCluster reconciler: one ``RemoteCluster`` per cluster, and its ``Active`` condition.

Kueue's ``clustersReconciler`` (``multikueuecluster.go``), reconcile by reconcile:

1. The MultiKueueCluster is gone or being deleted: stop its watches, close and forget its client.
2. Load its kubeconfig (``shared.kueue.multikueue_kubeconfig``). A failure disconnects the cluster and sets
   ``Active=False`` with the loader's reason (``BadKubeConfig``, ``InsecureKubeConfig``) and message
   ``load client config failed: ...``. A missing Secret is not retried: the Secret's creation
   triggers the next reconcile. Anything else is retried with the controller's backoff.
3. Connect (``RemoteCluster.refresh``). A failure disconnects the cluster, sets ``Active=False``
   ``ClientConnectionFailed`` with the error, suffixed ``; connection attempts: N, next connection
   attempt: <RFC 3339>``, and requeues after the connection backoff (5 s doubling, 7 steps).
   Within the backoff window the reconcile only requeues.
4. Connected: ``Active=True`` reason ``Active`` message ``Connected`` -- kueue-bridge appends
   ``; unavailable kinds: <Kind.version.group> (<error>), ...`` when some job kinds could not be
   watched on that worker (per-kind health, see ``multikueue.remote``). A cluster that just
   (re)connected is announced (``on_connected``): Workloads that could not use it meanwhile are
   reconciled again (Kueue relies on its ClusterQueue staying inactive until the check is Active).

Triggers (wired in ``multikueue.manager``): the cluster's create, delete and *spec* changes (its
own status writes are ignored, as Kueue's generation predicate does), changes of the Secret it
names, and a lost watch. A ``locationType: Path`` kubeconfig is read again every 10 s (Kueue
watches the file with fsnotify); an unchanged file costs no reconnect.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from multikueue.conditions import write_condition
from multikueue.remote import RemoteCluster
from shared.constants import MULTIKUEUE_CLUSTER_ACTIVE, MULTIKUEUE_CLUSTER_GVK
from shared.kube import GroupVersionKind, KubeClient, Result
from shared.kueue.multikueue_kubeconfig import (
    DEFAULT_KUBECONFIG_PATH_PREFIX,
    KubeConfigError,
    SecretLookup,
    load_cluster_kubeconfig,
)
from shared.models.condition import Condition
from shared.models.multikueue import KUBECONFIG_LOCATION_PATH, MultiKueueCluster

__all__ = ["MULTIKUEUE_CLUSTER_GVK", "ClusterReconciler"]

logger = logging.getLogger(__name__)

CLIENT_CONNECTION_FAILED = "ClientConnectionFailed"
#: how often a connected cluster's ``locationType: Path`` kubeconfig is read again for changes
PATH_RECHECK_SECONDS = 10.0


@dataclass(kw_only=True, eq=False)
class ClusterReconciler:
    """``reconcile(name)`` for MultiKueueClusters; ``remotes`` is read by the other reconcilers."""

    client: KubeClient
    clusters: Callable[[str], dict[str, Any] | None]
    secrets: SecretLookup
    new_remote: Callable[[str], RemoteCluster]
    on_connected: Callable[[str], None] = field(default=lambda name: None)
    on_active: Callable[[str, bool | None], None] = field(default=lambda name, active: None)
    now: Callable[[], datetime]
    path_prefix: str = DEFAULT_KUBECONFIG_PATH_PREFIX
    validate_path: bool = True
    remotes: dict[str, RemoteCluster] = field(default_factory=dict, init=False)

    def remote(self, name: str) -> RemoteCluster | None:
        return self.remotes.get(name)

    async def reconcile(self, name: str) -> Result:
        obj = self.clusters(name)
        if obj is None or (obj.get("metadata") or {}).get("deletionTimestamp"):
            remote = self.remotes.pop(name, None)
            if remote is not None:
                await remote.close()
            self.on_active(name, None)
            return Result.done()
        try:
            cluster = MultiKueueCluster.from_wire(obj)
        except ValidationError as exc:
            await self._disconnect(name)
            await self._set_active(
                obj,
                active=False,
                reason="BadKubeConfig",
                message=f"load client config failed: {exc.errors()[0]['msg']}",
            )
            return Result.done()
        try:
            loaded = load_cluster_kubeconfig(
                cluster,
                secrets=self.secrets,
                path_prefix=self.path_prefix,
                validate_path=self.validate_path,
            )
        except KubeConfigError as exc:
            logger.warning(
                "loading client config failed",
                extra={"cluster": name, "reason": exc.reason, "error": exc.message},
            )
            await self._disconnect(name)
            await self._set_active(obj, active=False, reason=exc.reason, message=exc.message)
            return Result.done() if exc.not_found else Result.again()
        remote = self.remotes.get(name)
        if remote is None:
            remote = self.remotes[name] = self.new_remote(name)
        was_connected = remote.connected
        retry, error = await remote.refresh(loaded.raw, loaded.document)
        if error is not None:
            logger.warning("connecting to worker cluster failed", extra={"cluster": name, "error": error})
            await remote.disconnect()
            await self._set_active(obj, active=False, reason=CLIENT_CONNECTION_FAILED, message=error)
            return Result.after(retry or 0.0) if retry else Result.again()
        if retry is not None:
            return Result.after(retry)
        await self._set_active(
            obj, active=True, reason="Active", message=_connected_message(remote.kind_errors.items())
        )
        if not was_connected and remote.connected:
            self.on_connected(name)
        source = cluster.spec.cluster_source.kube_config
        if source is not None and source.effective_location_type == KUBECONFIG_LOCATION_PATH:
            return Result.after(PATH_RECHECK_SECONDS)  # Kueue watches the file (fsnotify); we re-read it
        return Result.done()

    async def _disconnect(self, name: str) -> None:
        remote = self.remotes.get(name)
        if remote is not None:
            await remote.disconnect()

    async def _set_active(self, obj: dict[str, Any], *, active: bool, reason: str, message: str) -> None:
        name = str((obj.get("metadata") or {}).get("name") or "")
        remote = self.remotes.get(name)
        if not active and remote is not None and remote.failed_attempts > 0:
            message = (
                f"{message}; connection attempts: {remote.failed_attempts}, "
                f"next connection attempt: {remote.next_attempt_text()}"
            )
        wanted = Condition(
            type=MULTIKUEUE_CLUSTER_ACTIVE,
            status="True" if active else "False",
            reason=reason,
            message=message,
            observed_generation=(obj.get("metadata") or {}).get("generation"),
        )
        await write_condition(self.client, MULTIKUEUE_CLUSTER_GVK, obj, wanted, now=self.now())
        self.on_active(name, active)

    async def close(self) -> None:
        remotes, self.remotes = list(self.remotes.values()), {}
        for remote in remotes:
            await remote.close()


def _connected_message(kind_errors: Iterable[tuple[GroupVersionKind, str]]) -> str:
    unavailable = sorted(f"{gvk.kind_arg} ({error})" for gvk, error in kind_errors)
    if not unavailable:
        return "Connected"
    return f"Connected; unavailable kinds: {', '.join(unavailable)}"
