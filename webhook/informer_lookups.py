"""``Lookups`` answered from ``shared.kube`` informer caches: no API round trip per admission.

One informer per kind the rules read:

* ``Namespace`` (labels, for ``managedJobsNamespaceSelector``);
* Kueue's ``LocalQueue`` (existence of ``default``; ``spec.clusterQueue``), ``ClusterQueue``
  (its AdmissionCheck names) and ``AdmissionCheck`` (``spec.controllerName``) - the managedBy
  defaulting behind MultiKueue - and ``WorkloadPriorityClass`` (existence of ``default``);
* every owner kind the ancestor walk follows (``WebhookSettings.known_owner_kinds``: every kind Kueue
  registers as an integration, the configured job kinds, ``extra_managed_owner_kinds`` and ``apps/v1``
  ReplicaSet), keyed ``namespace/name``.

What the rules read of Namespaces (labels), WorkloadPriorityClasses (existence) and owners (uid,
controller reference, queue-name label) is all metadata, so those informers are metadata-only
(``PartialObjectMetadata``, as controller-runtime's ``OnlyMetadata`` caches): the owner kinds include
every configured job kind, whose every status change would otherwise be decoded whole here. No
informer keeps ``metadata.managedFields`` (no rule reads them).

Every question is a dict read on the event loop's thread; the informers' tasks are the only writers,
so a rule sees a consistent store between awaits (and admission rules never await).

Readiness (``synced()``) is the Namespace and Kueue informers having synced. Kueue's CRDs missing
(Kueue not installed yet, or installed after us) is not an error: the informer's list fails with
``UnknownKindError``, ``shared.kube.Watch`` logs it and retries with jittered backoff (at most
``WatchSettings.backoff_max`` seconds apart), discovery refetches the group on a miss, and
``/readyz`` stays 503 until the CRDs are installed and listed. A webhook that answered without them
would silently skip the MultiKueue managedBy defaulting.

**Owner informers start on demand**, as controller-runtime's cache starts the informer of a kind on
the first ``Get`` of it and blocks that ``Get`` until the informer has synced. Only a job with a
controller owner of a known kind needs one (``find_managed_ancestor``); the first such admission
starts the kind's informer (``owner`` raises ``OwnerCacheNotReady``), the handler waits for it off
the synchronous path and asks again, and from then on the cache follows the kind for good. Why not
from start-up: the owner kinds include every configured job kind, so a webhook for batch Jobs
decoded every Job event of the cluster (each status write of each Job) only to answer a question
that no top-level Job asks - on the real cluster (``bench/reconciler_cpu.py --real``) about a fifth
of the webhook's CPU. A kind that is not served (a configured job kind whose operator is not
installed yet, or ``apps/v1`` on an API server without it, like the devcluster) has no objects, so
an empty cache is the correct answer for it: a presence probe asks discovery every
``absent_kind_probe_interval`` seconds and such a kind counts as synced while discovery says it is
absent. A kind whose presence is unknown (API server unreachable) is never counted as absent.

Owner lookups read only the caches. An owner created a few milliseconds before its child can be
missing from the cache (the same race Kueue's cached controller-runtime client has); the request is
then denied as Kueue denies it (404 ``Job.batch "name" not found``) and the creating controller
retries.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from shared.constants import (
    ADMISSION_CHECK_GVK,
    CLUSTER_QUEUE_GVK,
    LOCAL_QUEUE_GVK,
    WORKLOAD_PRIORITY_CLASS_GVK,
)
from shared.kube import (
    GroupVersionKind,
    Informer,
    KubeClient,
    UnknownKindError,
    WatchSettings,
    strip_managed_fields,
)
from shared.kube.kinds import NAMESPACE_GVK
from webhook.rules.lookups import ObjectKey, OwnerCacheNotReady
from webhook.rules.settings import WebhookSettings

__all__ = [
    "ADMISSION_CHECK_GVK",
    "CLUSTER_QUEUE_GVK",
    "LOCAL_QUEUE_GVK",
    "NAMESPACE_GVK",
    "WORKLOAD_PRIORITY_CLASS_GVK",
    "InformerLookups",
]

log = logging.getLogger(__name__)


def _spec(obj: Mapping[str, Any] | None) -> Mapping[str, Any]:
    spec = obj.get("spec") if obj is not None else None
    return spec if isinstance(spec, Mapping) else {}


def cluster_queue_check_names(cluster_queue: Mapping[str, Any]) -> list[str]:
    """AdmissionCheck names of a ClusterQueue: ``spec.admissionChecks`` (v1beta1) and the strategy's."""
    spec = _spec(cluster_queue)
    names = [name for name in spec.get("admissionChecks") or [] if isinstance(name, str)]
    strategy = spec.get("admissionChecksStrategy")
    if isinstance(strategy, Mapping):
        for rule in strategy.get("admissionChecks") or []:
            if isinstance(rule, Mapping) and isinstance(rule.get("name"), str):
                names.append(rule["name"])
    return list(dict.fromkeys(names))


class InformerLookups:
    """The webhook's ``Lookups`` on informers; ``await run()`` in a task, read from any callback."""

    def __init__(
        self,
        *,
        client: KubeClient,
        settings: WebhookSettings,
        watch_settings: WatchSettings | None = None,
        absent_kind_probe_interval: float = 5.0,
    ) -> None:
        self._client = client
        self._probe_interval = absent_kind_probe_interval

        def informer(gvk: GroupVersionKind, *, metadata_only: bool = False) -> Informer:
            return Informer(
                client,
                gvk,
                watch_settings=watch_settings,
                transform=strip_managed_fields,
                metadata_only=metadata_only,
            )

        self.namespaces = informer(NAMESPACE_GVK, metadata_only=True)
        self.local_queues = informer(LOCAL_QUEUE_GVK)
        self.cluster_queues = informer(CLUSTER_QUEUE_GVK)
        self.admission_checks = informer(ADMISSION_CHECK_GVK)
        self.priority_classes = informer(WORKLOAD_PRIORITY_CLASS_GVK, metadata_only=True)
        #: (apiVersion, kind) -> informer, for the ancestor walk
        self.owners: dict[tuple[str, str], Informer] = {
            key: informer(GroupVersionKind.from_api_version(*key), metadata_only=True)
            for key in sorted(settings.known_owner_kinds)
        }
        self._required = [
            self.namespaces,
            self.local_queues,
            self.cluster_queues,
            self.admission_checks,
            self.priority_classes,
        ]
        #: owner kinds discovery says are not served (unknown until the probe has asked)
        self._absent: set[tuple[str, str]] = set()
        #: owner kinds whose informer has been asked for (started, or to start once ``run`` runs)
        self._wanted: set[tuple[str, str]] = set()
        self._spawn: asyncio.TaskGroup | None = None

    @property
    def informers(self) -> list[Informer]:
        return [
            self.namespaces,
            self.local_queues,
            self.cluster_queues,
            self.admission_checks,
            self.priority_classes,
            *self.owners.values(),
        ]

    # --- Lookups ---------------------------------------------------------------------------------
    def synced(self) -> bool:
        return all(informer.has_synced for informer in self._required)

    def unsynced(self) -> list[str]:
        """The kinds readiness still waits for (logs, ``/readyz`` detail)."""
        return [str(i.gvk) for i in self._required if not i.has_synced]

    def owner_cache_synced(self, key: tuple[str, str]) -> bool:
        """The owner kind ``key``'s cache has listed, or discovery says the kind is not served."""
        return self.owners[key].has_synced or key in self._absent

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        obj = self.namespaces.store.get(namespace)
        if obj is None:
            return None
        labels = (obj.get("metadata") or {}).get("labels")
        return labels if isinstance(labels, dict) else {}

    def local_queue_exists(self, namespace: str, name: str) -> bool:
        return f"{namespace}/{name}" in self.local_queues.store

    def cluster_queue_for(self, namespace: str, local_queue: str) -> str | None:
        obj = self.local_queues.store.get(f"{namespace}/{local_queue}")
        if obj is None:
            return None
        name = _spec(obj).get("clusterQueue")
        return name if isinstance(name, str) and name else None

    def admission_check_controllers(self, cluster_queue: str) -> Sequence[str]:
        queue = self.cluster_queues.store.get(cluster_queue)
        if queue is None:
            return []
        controllers = []
        for name in cluster_queue_check_names(queue):
            controller = _spec(self.admission_checks.store.get(name)).get("controllerName")
            if isinstance(controller, str):
                controllers.append(controller)
        return controllers

    def workload_priority_class_exists(self, name: str) -> bool:
        return name in self.priority_classes.store

    def owner(self, key: ObjectKey) -> Mapping[str, Any] | None:
        kind = (key.api_version, key.kind)
        informer = self.owners.get(kind)
        if informer is None:
            return None
        if not self.owner_cache_synced(kind):
            self._start_owner_informer(kind)
            raise OwnerCacheNotReady(api_version=key.api_version, kind=key.kind)
        return informer.store.get(f"{key.namespace}/{key.name}" if key.namespace else key.name)

    async def wait_owner_cache(self, *, api_version: str, kind: str, timeout_seconds: float) -> bool:
        key = (api_version, kind)
        if key not in self.owners:
            return True
        self._start_owner_informer(key)
        clock = self._client.clock
        deadline = clock.now() + timeout_seconds
        while not self.owner_cache_synced(key):
            if clock.now() >= deadline:
                return False
            await clock.sleep(0.01)
        return True

    def _start_owner_informer(self, key: tuple[str, str]) -> None:
        """Start ``key``'s informer once (now if ``run`` runs, else when it starts)."""
        if key in self._wanted:
            return
        self._wanted.add(key)
        if self._spawn is not None:
            self._spawn.create_task(self._run_when_served(key), name=f"informer-{key[1]}")

    # --- running ---------------------------------------------------------------------------------
    async def _run_when_served(self, key: tuple[str, str]) -> None:
        """Start ``key``'s informer once discovery serves its kind; ``_absent`` holds it until then.

        Probing first (instead of letting the informer's list fail and retry) keeps the logs quiet
        for kinds that are simply not installed.
        """
        informer = self.owners[key]
        logged = False
        while True:
            try:
                await self._client.resource(informer.gvk)
            except UnknownKindError:
                self._absent.add(key)
                if not logged:
                    log.info("%s is not served (CRD not installed); waiting for it", informer.gvk)
                    logged = True
            except Exception as exc:  # API server unreachable: unknown, so not "absent"
                self._absent.discard(key)
                log.warning("cannot tell whether %s is served: %s", informer.gvk, exc)
            else:
                break
            await self._client.clock.sleep(self._probe_interval)
        self._absent.discard(key)
        await informer.run()

    async def run(self) -> None:
        """Run the required informers, and each owner informer from the first question about its
        kind (once the kind is served), until cancelled."""
        try:
            async with asyncio.TaskGroup() as group:
                self._spawn = group
                for informer in self._required:
                    group.create_task(informer.run(), name=f"informer-{informer.gvk.kind}")
                for key in sorted(self._wanted):
                    group.create_task(self._run_when_served(key), name=f"informer-{key[1]}")
        finally:
            self._spawn = None

    async def wait_synced(self, *, timeout_seconds: float, poll_seconds: float = 0.05) -> bool:
        """Wait until ``synced()``; ``False`` when ``timeout_seconds`` passed first."""
        clock = self._client.clock
        deadline = clock.now() + timeout_seconds
        while not self.synced():
            if clock.now() >= deadline:
                return False
            await clock.sleep(poll_seconds)
        return True
