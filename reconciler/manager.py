"""Wiring the job reconciler into a running controller: informers, work queues, workers.

For every managed kind there is one informer on the jobs and one ``Controller`` (key
``namespace/name``). One shared Workload informer, indexed by owner (group, kind, name) like
Kueue's owner-reference field index, enqueues the *owner job* of every Workload event, so a change
Kueue makes to a Workload (admission, eviction) wakes exactly the job it belongs to. ResourceFlavors,
(Workload)PriorityClasses and Namespaces are cached too: a steady-state reconcile reads nothing
from the API server.

Invariants:

* Workers start only after every informer has synced (``Controller.run``), so a reconcile never
  mistakes "not listed yet" for "gone".
* Cached objects are shared with the informer and never changed: ``InformerReader`` hands out deep
  copies, except of the kinds the reconciler only reads or parses (Namespaces, ResourceFlavors,
  Workloads) and of the managed jobs, whose adapters it wraps copy-on-write
  (``shared.frameworks.copy_on_write``).
* Reconciles that unblock Kueue are queued ahead of bookkeeping (work-queue priorities): first a
  job whose Workload was just admitted while the job is still suspended (its reserved quota waits
  for the start), then a finished job whose Workload is not (its quota is released only once it
  says Finished: the next admission waits on that), then a queued job without a Workload (nothing
  can be admitted before it exists, but while others are pending a new one only joins the queue).
  PodsReady, finalizers and echoes of our own writes keep FIFO order behind them, so in a burst
  Kueue's scheduler does not wait on us; out of a burst every lane is short and nothing waits.
  Releasing before creating matters when creates outrun the reconciler: with both in one FIFO lane
  a finished job waited behind every job created before it, the quota stayed full and admission
  stopped while the Workloads it could have admitted were already pending.
* A write conflict (409 Conflict or AlreadyExists: the reconcile read a stale cached copy) requeues
  the job with the queue's backoff; it is logged at DEBUG and counted, never reported as a failure.
* Everything ``ReconcilerControllers`` starts it stops: it is the process's
  ``shared.runtime.manager.ControllerSet`` for one leadership term, whose ``run`` owns the informer tasks and
  cancels them when the controllers end (shutdown, or loss of leadership).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from reconciler.cluster import CachedReader, KubeWriter, owner_index_key, workload_owner_keys
from reconciler.job_reconciler import NAMESPACE_GVK, JobReconciler, ReconcilerSettings
from reconciler.ports import WORKLOAD_GVK, ConflictError, EventSink, JobKey, JobStillActiveError
from reconciler.priority import PRIORITY_CLASS_GVK, WORKLOAD_PRIORITY_CLASS_GVK
from reconciler.workload_sync import RESOURCE_FLAVOR_GVK
from shared.config import DEFAULT_RECONCILE_CONCURRENCY, Configuration
from shared.frameworks.registry import FrameworkRegistry
from shared.jsontree import json_tree_copy
from shared.kube import (
    CONTROLLER_RESYNC_PERIOD,
    Conflict,
    Controller,
    GroupVersionKind,
    Informer,
    KubeClient,
    PriorityRule,
    Result,
    SharedParts,
    StoreView,
    index_by_controller_uid,
)
from shared.kube.conditions import is_object_condition_true
from shared.kueue.admission_apply import MERGE_PATCH_FEATURE_GATE
from shared.kueue.ancestry import OwnerKinds, kueue_owner_kinds
from shared.kueue.jobmeta import queue_name
from shared.kueue.workload_slicing import FEATURE_GATE as SLICING_FEATURE_GATE
from shared.kueue.workload_slicing import FEATURE_GATE_DEFAULT as SLICING_FEATURE_GATE_DEFAULT
from shared.labelselector import selector_from_label_selector
from shared.models.base import WireDict
from shared.runtime.manager import ControllerSet

__all__ = [
    "CONTROLLER_UID_INDEX",
    "WORKLOAD_OWNER_INDEX",
    "ControllerOptions",
    "InformerReader",
    "ReconcilerControllers",
    "owner_kinds_for",
    "settings_from_config",
]

logger = logging.getLogger(__name__)
WORKLOAD_OWNER_INDEX = "owner"
CONTROLLER_UID_INDEX = "controller-uid"
#: work-queue priorities (0: bookkeeping). Highest: a job whose Workload is admitted and still
#: suspended (its reserved quota is unused until we start it); then finishing the Workload of a
#: finished job (its quota is released by it); then creating a new job's Workload.
START_PRIORITY = 3
RELEASE_PRIORITY = 2
CREATE_PRIORITY = 1


def owner_kinds_for(managed: Iterable[GroupVersionKind]) -> OwnerKinds:
    """The ancestor walk's kinds: ``managed`` by us, every kind Kueue registers known (a child of a
    JobSet that real Kueue manages is still a child)."""
    return kueue_owner_kinds((gvk.api_version, gvk.kind) for gvk in managed)


class _StoreAdapter:
    """``reconciler.cluster.ObjectStore`` over an informer's read-only view."""

    def __init__(self, view: StoreView) -> None:
        self._view = view
        self._lookup = view.lookup

    def get(self, namespace: str | None, name: str) -> WireDict | None:
        # the store key (``namespace/name``) and the store's lookup without StoreView.get/Store.get around it:
        # a reconcile pass reads three objects this way
        return self._lookup(f"{namespace}/{name}" if namespace else name)

    def by_index(self, index: str, key: str) -> list[WireDict]:
        return self._view.by_index(index, key)

    def list(self) -> list[WireDict]:
        return self._view.list()


class InformerReader(CachedReader):
    """``CachedReader`` that hands out copies of the informer's shared objects, except for the kinds
    in ``shared_kinds``, handed out as cached:

    * objects only read (Namespaces, ResourceFlavors);
    * the managed jobs, which the job reconciler wraps in a copy-on-write adapter
      (``shared.frameworks.copy_on_write``) and never changes in place;
    * Workloads, which the reconciler only parses (``Workload.from_wire``: the model's own fields
      are new objects; its raw JSON parts, pod templates above all, are shared with the cache and
      are only read or replaced, never changed in place -- ``tests/unit/reconciler/
      test_cached_objects.py`` holds every reconcile of a life to that).

    Copying the job and its Workloads on every pass was a sixth of the reconciler's CPU."""

    def __init__(self, *, shared_kinds: Iterable[tuple[str, str]] = (), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._shared_kinds = frozenset(shared_kinds)

    async def get(self, gvk: GroupVersionKind, namespace: str | None, name: str) -> WireDict | None:
        obj = await super().get(gvk, namespace, name)
        if obj is None or (gvk.group, gvk.kind) in self._shared_kinds:
            return obj
        return json_tree_copy(obj)

    async def workloads_owned_by(
        self, *, namespace: str, owner_gvk: GroupVersionKind, owner_name: str
    ) -> list[WireDict]:
        owned = await super().workloads_owned_by(
            namespace=namespace, owner_gvk=owner_gvk, owner_name=owner_name
        )
        if (WORKLOAD_GVK.group, WORKLOAD_GVK.kind) in self._shared_kinds:
            return owned
        return [json_tree_copy(obj) for obj in owned]


@dataclass(frozen=True)
class ControllerOptions:
    """How ``ReconcilerControllers`` runs its controllers: the field manager of its writes, workers
    per kind, the Workload informer's resync period."""

    field_manager: str = "kueue-bridge"
    #: concurrent reconciles per job kind (``Configuration.reconcile_concurrency``)
    workers: Callable[[GroupVersionKind], int] = lambda gvk: DEFAULT_RECONCILE_CONCURRENCY
    #: every cached Job and Workload handed to the controllers again this often
    resync_period: float | None = CONTROLLER_RESYNC_PERIOD


class ReconcilerControllers(ControllerSet):
    """The reconciler's controllers for one leadership term: one job controller per managed kind, the
    informers that feed them (the jobs, the shared Workload informer, the cached kinds) and the
    ``JobReconciler`` they all call. The process's ``shared.runtime.manager.ControllerManager`` runs it."""

    def __init__(
        self,
        *,
        client: KubeClient,
        registry: FrameworkRegistry,
        settings: ReconcilerSettings,
        events: EventSink,
        options: ControllerOptions = ControllerOptions(),
        now: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._client = client
        self._registry = registry
        self._informers: dict[tuple[str, str], Informer] = {}
        # No reconcile reads managedFields, and an update without them keeps the server's: stripped,
        # every cached object is a third smaller and every copy, parse and write of one cheaper. The
        # parts cached objects repeat (pod templates, a job's template in its Workload, strings) are
        # held once: cached objects are never changed in place, so equal parts can be one object.
        strip = SharedParts()
        for gvk in (NAMESPACE_GVK, RESOURCE_FLAVOR_GVK, WORKLOAD_PRIORITY_CLASS_GVK, PRIORITY_CLASS_GVK):
            self._informers[(gvk.group, gvk.kind)] = Informer(client, gvk, transform=strip)
        self._workload_informer = Informer(
            client,
            WORKLOAD_GVK,
            indexers={WORKLOAD_OWNER_INDEX: workload_owner_keys},
            resync_period=options.resync_period,
            transform=strip,
        )
        self._informers[(WORKLOAD_GVK.group, WORKLOAD_GVK.kind)] = self._workload_informer
        stores = {key: _StoreAdapter(informer.store) for key, informer in self._informers.items()}
        job_informers: dict[GroupVersionKind, Informer] = {}
        for gvk in registry.gvks:
            informer = Informer(
                client,
                gvk,
                indexers={CONTROLLER_UID_INDEX: index_by_controller_uid},
                resync_period=options.resync_period,
                transform=strip,
            )
            job_informers[gvk] = informer
            self._informers[(gvk.group, gvk.kind)] = informer
            stores[(gvk.group, gvk.kind)] = _StoreAdapter(informer.store)
        reader = InformerReader(
            client=client,
            stores=stores,
            workload_owner_index=WORKLOAD_OWNER_INDEX,
            shared_kinds={
                (gvk.group, gvk.kind)
                for gvk in (NAMESPACE_GVK, RESOURCE_FLAVOR_GVK, WORKLOAD_GVK, *registry.gvks)
            },
        )
        writer = KubeWriter(client=client, field_manager=options.field_manager)
        self.reconciler = JobReconciler(
            adapters=registry, reader=reader, writer=writer, events=events, settings=settings, clock=now
        )
        self.controllers: list[Controller] = []
        for gvk, informer in job_informers.items():
            controller = Controller(
                name=gvk.kind.lower(),
                reconcile=self._reconcile_function(gvk),
                clock=client.clock,
                workers=options.workers(gvk),
                metrics=client.metrics,
                # KubeWriter turns 409s into the port's ConflictError: a requeue, not a failure; a
                # stop waiting for a job's pods to go is retried the same way
                conflicts=(Conflict, ConflictError, JobStillActiveError),
            )
            controller.watch(
                informer,
                priority=self._job_change_unblocks(
                    registry,
                    gvk,
                    self._workload_informer.store,
                    queued_only=not settings.manage_jobs_without_queue_name,
                ),
            )
            controller.watch(
                self._workload_informer,
                keys=self._job_keys_for_workload(gvk, informer.store),
                priority=self._start_waits(registry, informer.store),
            )
            self.controllers.append(controller)
        # Controllers wait only for the informers they watch; reconciles also read Namespaces,
        # flavors and priority classes, and "not listed yet" must not read as "absent" (a job whose
        # Namespace is missing from the cache is dropped without a retry): ControllerSet starts the
        # controllers once every informer has synced.
        super().__init__(informers=list(self._informers.values()), controllers=self.controllers)

    @classmethod
    def from_config(
        cls, config: Configuration, *, client: KubeClient, events: EventSink, workers: int | None = None
    ) -> ReconcilerControllers:
        """The controllers for every kind ``config`` manages; ``workers`` overrides
        ``controller.groupKindConcurrency`` for all of them."""
        registry = FrameworkRegistry.from_managed_kinds(config.managed_kinds())
        return cls(
            client=client,
            registry=registry,
            settings=settings_from_config(config, registry=registry),
            events=events,
            options=ControllerOptions(
                field_manager=config.kueue_bridge.field_manager,
                workers=(lambda gvk: workers) if workers else config.reconcile_concurrency,
            ),
        )

    def _reconcile_function(self, gvk: GroupVersionKind) -> Callable[[str], Any]:
        async def reconcile(key: str) -> Result:
            namespace, _, name = key.partition("/")
            result = await self.reconciler.reconcile(JobKey(gvk, namespace, name))
            if result.requeue_after is not None:
                return Result.after(result.requeue_after)
            return Result.done()

        return reconcile

    @staticmethod
    def _job_keys_for_workload(gvk: GroupVersionKind, jobs: StoreView) -> Callable[[WireDict], list[str]]:
        """Keys of ``gvk`` jobs a Workload event concerns: its owners, and their child jobs.

        Children matter because their fate follows the ancestor's Workload (kept suspended until it
        is admitted, stopped when it is evicted); Kueue's batch Job controller watches the same way.
        """

        def keys(workload: WireDict) -> list[str]:
            metadata = workload.get("metadata") or {}
            namespace = metadata.get("namespace")
            found = []
            for reference in metadata.get("ownerReferences") or []:
                owner = GroupVersionKind.of(reference)
                if (owner.group, owner.kind) == (gvk.group, gvk.kind):
                    found.append(f"{namespace}/{reference.get('name')}")
                for child in jobs.by_index(CONTROLLER_UID_INDEX, str(reference.get("uid", ""))):
                    found.append(f"{namespace}/{(child.get('metadata') or {}).get('name')}")
            return found

        return keys

    @staticmethod
    def _start_waits(registry: FrameworkRegistry, jobs: StoreView) -> PriorityRule:
        """A Workload event after which the job must be started: the Workload is admitted (and not
        finished) and the job is still suspended. Its quota is reserved and unused until the start,
        so that reconcile jumps the queue instead of waiting behind Workload creations and status
        bookkeeping of other jobs (Kueue's scheduler would otherwise wait on us)."""

        def priority(workload: WireDict, key: str) -> int:
            if not is_object_condition_true(workload, "Admitted") or is_object_condition_true(
                workload, "Finished"
            ):
                return 0
            job = jobs.get(key)
            if job is None:
                return 0
            try:
                suspended = registry.adapter_for(job).is_suspended()
            except Exception:  # a job its adapter cannot read: ordinary, still reconciled (and reported)
                return 0
            return START_PRIORITY if suspended else 0

        return priority

    @staticmethod
    def _job_change_unblocks(
        registry: FrameworkRegistry, gvk: GroupVersionKind, workloads: StoreView, *, queued_only: bool = True
    ) -> PriorityRule:
        """A job event whose reconcile unblocks Kueue: it finished while its Workload has not (the
        Workload's quota is released only once it is marked Finished: ``RELEASE_PRIORITY``), or the
        job has no Workload yet (nothing can be admitted before it is created: ``CREATE_PRIORITY``). Everything else a job event leads to --
        PodsReady, echoes of our own writes -- is bookkeeping and keeps its place in the queue, and
        so does every event of a job without a queue name when ``queued_only`` (Kueue leaves those
        alone unless ``manageJobsWithoutQueueName``)."""

        def priority(job: WireDict, key: str) -> int:
            if queued_only and not queue_name(job):
                return 0
            namespace, _, name = key.partition("/")
            owned = workloads.by_index(
                WORKLOAD_OWNER_INDEX,
                owner_index_key(namespace=namespace, group=gvk.group, kind=gvk.kind, name=name),
            )
            try:
                finished = registry.adapter_for(job).finished().finished
            except Exception:  # a job its adapter cannot read: ordinary, still reconciled (and reported)
                return 0
            if not owned:
                return 0 if finished else CREATE_PRIORITY
            unfinished = not any(is_object_condition_true(workload, "Finished") for workload in owned)
            return RELEASE_PRIORITY if finished and unfinished else 0

        return priority


def settings_from_config(config: Configuration, *, registry: FrameworkRegistry) -> ReconcilerSettings:
    """``ReconcilerSettings`` from a loaded ``shared.config.Configuration``."""
    return ReconcilerSettings(
        owner_kinds=owner_kinds_for(registry.gvks),
        manage_jobs_without_queue_name=config.manage_jobs_without_queue_name,
        # compiled once here: matching a LabelSelector model rebuilds its requirements on every call
        namespace_selector=selector_from_label_selector(config.managed_jobs_namespace_selector),
        wait_for_pods_ready=config.feature_gate("DisableWaitForPodsReady", default=False) is False,
        label_keys_to_copy=tuple(config.integrations.label_keys_to_copy),
        deactivation_retention=config.deactivation_retention(),
        elastic_jobs_via_workload_slices=config.feature_gate(
            SLICING_FEATURE_GATE, default=SLICING_FEATURE_GATE_DEFAULT
        ),
        workload_request_use_merge_patch=config.feature_gate(MERGE_PATCH_FEATURE_GATE, default=False),
    )
