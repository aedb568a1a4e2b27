"""Wiring the MultiKueue reconcilers into a running controller: informers, work queues, triggers.

On the manager cluster one informer each caches Workloads, AdmissionChecks, MultiKueueConfigs,
MultiKueueClusters and the Secrets of the configuration namespace (the only Secrets this component
may read); ``multikueue.local_jobs`` caches the jobs of every synced kind (outside the sync gate: a
kind whose CRD is missing is read with GETs). Three controllers share them, each with Kueue's
triggers:

* ``multikueue_cluster`` (key: cluster name) -- a cluster's create, delete, spec change (its own
  status writes are filtered out like Kueue's generation predicate), a change of the Secret it
  names, and a lost worker watch;
* ``multikueue_admissioncheck`` (key: check name) -- the check itself, a change of the cluster list
  of the MultiKueueConfig it names, and a change of the ``Active`` condition of one of its clusters;
* ``multikueue_workload`` (key: ``namespace/name``) -- local Workload events, remote Workload and
  remote job events of the workers (mapped to the local Workload, after ``events_batch_period``),
  and a change of the clusters of a config or of the config a check names (all Workloads using it).
  Unlike Kueue, two kinds of Workload events are dropped because they provably lead to no action
  (fewer passes, each of which re-reads every worker's copy): the echo of one of our own writes
  (``multikueue.own_writes``; local and remote), and a local update that changes only what the
  reconciler never reads (``multikueue.workload_status.decision_view``). The informer's
  periodic resync is never dropped.

Invariants: controllers start only when every informer has synced; ``run`` owns every task it
starts (informers, controllers, the garbage collector, worker connections) and stops them all.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

from multikueue.adapters import MultiKueueAdapters
from multikueue.admissioncheck import (
    ADMISSION_CHECK_GVK,
    MULTIKUEUE_CONFIG_GVK,
    AdmissionCheckReconciler,
    ParametersError,
    config_clusters,
    parameters_config_name,
)
from multikueue.clusters import MULTIKUEUE_CLUSTER_GVK, ClusterReconciler
from multikueue.conditions import condition_of
from multikueue.dispatcher import IncrementalDispatcher
from multikueue.gc import GarbageCollector
from multikueue.local_jobs import LocalJobs
from multikueue.metrics import multikueue_metrics
from multikueue.own_writes import MANAGER, OwnWrites
from multikueue.remote import WORKLOAD_GVK, ClientFactory, RemoteCluster
from multikueue.workload import ReconcilerSettings, WorkloadReconciler
from multikueue.workload_status import decision_view
from shared.config import INCREMENTAL_DISPATCHER, Configuration
from shared.constants import MULTIKUEUE_CLUSTER_ACTIVE, MULTIKUEUE_EVENT_REASON
from shared.kube import (
    CONTROLLER_RESYNC_PERIOD,
    SECRET_GVK,
    ClientSettings,
    Conflict,
    Controller,
    EventHandler,
    EventRecorder,
    GroupVersionKind,
    Informer,
    KubeClient,
    Result,
    StoreView,
    WatchSettings,
)
from shared.kube.conditions import is_true, object_condition
from shared.kube.times import parse_time
from shared.kueue.multikueue_kubeconfig import (
    DEFAULT_KUBECONFIG_PATH_PREFIX,
    LoadedKubeConfig,
    connection_for,
)
from shared.models.condition import Condition
from shared.runtime.manager import ControllerSet

__all__ = [
    "DEFAULT_WORKLOAD_CONCURRENCY",
    "SECRET_GVK",
    "ManagerOptions",
    "MultiKueueManager",
    "remote_client_factory",
]

logger = logging.getLogger(__name__)

CONFIG_INDEX = "config"  # AdmissionChecks by the MultiKueueConfig they name
CLUSTER_INDEX = "cluster"  # MultiKueueConfigs by the clusters they list
SECRET_INDEX = "secret"  # MultiKueueClusters by the Secret holding their kubeconfig
CHECK_INDEX = "check"  # Workloads by the admission checks in their status


#: Workloads reconciled at once unless ``controller.groupKindConcurrency`` names
#: ``Workload.kueue.x-k8s.io`` (as for Kueue's own MultiKueue controller). bench/multikueue_dispatch.py, 500
#: Workloads at once: with 16, keys waited in the queue up to 1-4 s; with 64 they were taken sooner,
#: so fewer events coalesced into one pass -- 7,300-7,700 reconciles instead of 4,500-5,100 (each two
#: to five API calls) -- and on a shared, CPU-bound host the API servers, not the queue, became the
#: wait. 16 is kept; raise it where the API servers have room.
DEFAULT_WORKLOAD_CONCURRENCY: Final = 16


@dataclass(frozen=True)
class ManagerOptions:
    #: delay before a worker's watch event reconciles the local Workload (coalesces bursts; Kueue: 1 s)
    events_batch_period: float = 0.1
    #: concurrent Workload reconciles; ``None``: the configuration's (``DEFAULT_WORKLOAD_CONCURRENCY``)
    workers: int | None = None
    path_prefix: str = DEFAULT_KUBECONFIG_PATH_PREFIX
    watch_settings: WatchSettings = field(default_factory=WatchSettings)
    now: Callable[[], datetime] = lambda: datetime.now(UTC)


def remote_client_factory(settings: ClientSettings) -> ClientFactory:
    """Clients for workers: the kubeconfig's server, CA and token; fail fast (few retries)."""

    def build(raw: bytes, document: dict[str, Any]) -> KubeClient:
        connection = connection_for(LoadedKubeConfig(raw=raw, document=document))
        return KubeClient.from_connection(connection, settings=settings)

    return build


def _name(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _key(obj: dict[str, Any]) -> str:
    metadata = obj.get("metadata") or {}
    return f"{metadata.get('namespace')}/{metadata.get('name')}"


def _config_name(check: dict[str, Any]) -> str:
    try:
        return parameters_config_name(check)
    except ParametersError:
        return ""


def _index_workloads_by_check(workload: dict[str, Any]) -> list[str]:
    checks = (workload.get("status") or {}).get("admissionChecks") or []
    return [str(item["name"]) for item in checks if isinstance(item, dict) and item.get("name")]


def _index_checks_by_config(controller_name: str) -> Callable[[dict[str, Any]], list[str]]:
    def index(check: dict[str, Any]) -> list[str]:
        if (check.get("spec") or {}).get("controllerName") != controller_name:
            return []
        try:
            return [parameters_config_name(check)]
        except ParametersError:
            return []

    return index


def _index_clusters_by_secret(cluster: dict[str, Any]) -> list[str]:
    source = ((cluster.get("spec") or {}).get("clusterSource") or {}).get("kubeConfig") or {}
    if source.get("locationType", "Secret") != "Secret" or not source.get("location"):
        return []
    return [str(source["location"])]


class MultiKueueManager(ControllerSet):
    def __init__(
        self,
        *,
        client: KubeClient,
        config: Configuration,
        options: ManagerOptions = ManagerOptions(),
        client_factory: ClientFactory | None = None,
        recorder: EventRecorder | None = None,
    ) -> None:
        self._client = client
        self._recorder = recorder
        self._options = options
        self.controller_name = config.kueue_bridge.multi_kueue.controller_name
        self.origin = config.multi_kueue.origin
        self._client_factory = client_factory or remote_client_factory(
            ClientSettings(
                qps=config.client_connection.qps, burst=config.client_connection.burst, max_attempts=2
            )
        )
        self.workloads = Informer(
            client,
            WORKLOAD_GVK,
            indexers={CHECK_INDEX: _index_workloads_by_check},
            resync_period=CONTROLLER_RESYNC_PERIOD,
        )
        self.checks = Informer(
            client,
            ADMISSION_CHECK_GVK,
            indexers={CONFIG_INDEX: _index_checks_by_config(self.controller_name)},
        )
        self.configs = Informer(client, MULTIKUEUE_CONFIG_GVK, indexers={CLUSTER_INDEX: config_clusters})
        self.clusters = Informer(
            client, MULTIKUEUE_CLUSTER_GVK, indexers={SECRET_INDEX: _index_clusters_by_secret}
        )
        self.secrets = Informer(client, SECRET_GVK, namespace=config.namespace)
        self._informers = [self.workloads, self.checks, self.configs, self.clusters, self.secrets]
        self.adapters = MultiKueueAdapters.from_config(config)
        self.own_writes = OwnWrites(clock=client.clock)
        self.job_kinds: tuple[GroupVersionKind, ...] = self.adapters.gvks
        self.local_jobs = LocalJobs(client=client, gvks=self.job_kinds)
        # one set per registry: this manager may be the process's second (a Lease won back)
        self.metrics = multikueue_metrics(client.metrics.registry if client.metrics is not None else None)
        self.cluster_reconciler = ClusterReconciler(
            client=client,
            clusters=_getter(self.clusters.store),
            secrets=lambda name: self.secrets.store.get(f"{config.namespace}/{name}"),
            new_remote=self._new_remote,
            on_connected=self._cluster_connected,
            on_active=self.metrics.set_cluster_active,
            now=options.now,
            path_prefix=options.path_prefix,
            validate_path=config.feature_gate("MultiKueueKubeConfigPathValidation", default=True),
        )
        self.check_reconciler = AdmissionCheckReconciler(
            client=client,
            controller_name=self.controller_name,
            checks=_getter(self.checks.store),
            configs=_getter(self.configs.store),
            clusters=_getter(self.clusters.store),
            now=options.now,
        )
        # every controller of this process runs on the client's clock and reports to its metrics
        controller = functools.partial(Controller, clock=client.clock, metrics=client.metrics)
        self.cluster_controller = controller(
            name="multikueue_cluster", reconcile=self.cluster_reconciler.reconcile, workers=4
        )
        self.check_controller = controller(
            name="multikueue_admissioncheck", reconcile=self.check_reconciler.reconcile, workers=2
        )
        self.workload_reconciler = WorkloadReconciler(
            client=client,
            settings=ReconcilerSettings(
                controller_name=self.controller_name,
                origin=self.origin,
                worker_lost_timeout=config.multi_kueue.worker_lost_timeout.total_seconds(),
                dispatcher_name=config.multi_kueue.dispatcher_name,
                workload_identifier_annotations=config.feature_gate(
                    "WorkloadIdentifierAnnotations", default=True
                ),
            ),
            adapters=self.adapters,
            workloads=_getter(self.workloads.store),
            checks=_getter(self.checks.store),
            configs=_getter(self.configs.store),
            remotes=self.cluster_reconciler.remote,
            events=self._event,
            clock=client.clock,
            now=options.now,
            dispatched=lambda cluster: self.metrics.count_dispatched(cluster),
            admitted=self._count_admitted,
            local_jobs=self.local_jobs,
            own_writes=self.own_writes,
        )
        workers = options.workers or config.reconcile_concurrency(
            WORKLOAD_GVK, default=DEFAULT_WORKLOAD_CONCURRENCY
        )
        self._stale_reads: set[str] = set()
        self.workload_controller = controller(
            name="multikueue_workload", reconcile=self._reconcile_workload, workers=workers
        )
        self.controllers: list[Controller] = [
            self.cluster_controller,
            self.check_controller,
            self.workload_controller,
        ]
        self.dispatcher: IncrementalDispatcher | None = None
        if config.multi_kueue.dispatcher_name == INCREMENTAL_DISPATCHER:
            self.dispatcher = IncrementalDispatcher(
                client=client,
                workloads=_getter(self.workloads.store),
                checks=_getter(self.checks.store),
                configs=_getter(self.configs.store),
                multikueue_check=self.workload_reconciler.multikueue_check,
                step_size=config.multi_kueue.incremental_step_size,
                respect_config_order=config.feature_gate(
                    "MultiKueueIncrementalDispatcherRespectConfigOrder", default=True
                ),
                clock=client.clock,
                now=options.now,
            )
            dispatcher_controller = controller(
                name="multikueue_incremental_dispatcher", reconcile=self.dispatcher.reconcile, workers=workers
            )
            dispatcher_controller.watch(self.workloads)
            self.controllers.append(dispatcher_controller)
        self.gc = GarbageCollector(
            interval=config.multi_kueue.gc_interval.total_seconds(),
            origin=self.origin,
            adapters=self.adapters,
            remotes=lambda: list(self.cluster_reconciler.remotes.values()),
            local_workload=_getter(self.workloads.store),
            clock=client.clock,
        )
        self._wire_cluster_triggers()
        self._wire_check_triggers()
        self._wire_workload_triggers()
        super().__init__(
            informers=self._informers,
            controllers=self.controllers,
            tasks=[self.local_jobs.run],
            after_sync=self._background(),
            on_stop=self.cluster_reconciler.close,
        )

    async def _reconcile_workload(self, key: str) -> Result:
        """The Workload reconciler's pass; a ``Conflict`` (the pass acted on a cached version the API
        server has moved past) marks ``key`` so that the next version the informer delivers is
        reconciled whatever changed in it. Without the mark that version may not pass the
        ``decision_view`` filter (a finalizer, a condition we do not read, the echo of our own
        write), and the pass would wait for the conflict's exponential backoff alone: under load,
        seconds (the backoff's requeue stays as the safety net)."""
        try:
            return await self.workload_reconciler.reconcile(key)
        except Conflict:
            self._stale_reads.add(key)
            raise

    # --- worker connections --------------------------------------------------------------------------
    def _new_remote(self, name: str) -> RemoteCluster:
        return RemoteCluster(
            name=name,
            origin=self.origin,
            job_kinds=self.job_kinds,
            client_factory=self._client_factory,
            clock=self._client.clock,
            on_workload=self.remote_workload_event,
            on_lost=self.cluster_controller.queue.add,
            watch_settings=self._options.watch_settings,
            own_writes=self.own_writes,
        )

    def remote_workload_event(self, namespace: str, name: str) -> None:
        """A worker's watch saw something about the local Workload ``namespace/name``."""
        key = f"{namespace}/{name}"
        if self.workloads.store.get(key) is not None:
            self.workload_controller.queue.add_after(key, self._options.events_batch_period)

    def _count_admitted(self, cluster: str, workload: dict[str, Any]) -> None:
        """Count an admission on ``cluster``, with the time since the manager reserved quota."""
        reserved = object_condition(workload, "QuotaReserved")
        since = (
            parse_time(reserved.get("lastTransitionTime"))
            if reserved is not None and is_true(reserved)
            else None
        )
        waited = (self._options.now() - since).total_seconds() if since is not None else None
        self.metrics.count_admitted(cluster, waited=waited)

    def _cluster_connected(self, cluster: str) -> None:
        """Reconcile every Workload whose check's config lists ``cluster`` (it may dispatch there now)."""
        for config in self.configs.store.by_index(CLUSTER_INDEX, cluster):
            for key in self._workloads_using_config(_name(config)):
                self.workload_controller.queue.add(key)

    def _event(self, workload: dict[str, Any], event_type: str, message: str) -> None:
        if self._recorder is None:
            logger.info("workload event", extra={"type": event_type, "note": message})
            return
        self._recorder.event(
            workload,
            type=event_type,
            reason=MULTIKUEUE_EVENT_REASON,
            note=message,
            action=MULTIKUEUE_EVENT_REASON,
        )

    # --- triggers ------------------------------------------------------------------------------------
    def _wire_cluster_triggers(self) -> None:
        queue = self.cluster_controller.queue

        def cluster_updated(old: dict[str, Any], new: dict[str, Any]) -> None:
            old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
            if new_meta.get("deletionTimestamp") or old_meta.get("generation") != new_meta.get("generation"):
                queue.add(_name(new))

        self.clusters.add_handler(
            EventHandler(
                on_add=lambda obj: queue.add(_name(obj)),
                on_update=cluster_updated,
                on_delete=lambda obj: queue.add(_name(obj)),
            )
        )

        def secret_changed(secret: dict[str, Any]) -> None:
            for cluster in self.clusters.store.by_index(SECRET_INDEX, _name(secret)):
                queue.add(_name(cluster))

        self.secrets.add_handler(
            EventHandler(
                on_add=secret_changed,
                on_update=lambda old, new: secret_changed(new),
                on_delete=secret_changed,
            )
        )

    def _checks_using_config(self, config_name: str) -> list[str]:
        return [_name(check) for check in self.checks.store.by_index(CONFIG_INDEX, config_name)]

    def _wire_check_triggers(self) -> None:
        queue = self.check_controller.queue

        def enqueue_check(check: dict[str, Any]) -> None:
            queue.add(_name(check))

        self.checks.add_handler(
            EventHandler(
                on_add=enqueue_check, on_update=lambda old, new: enqueue_check(new), on_delete=enqueue_check
            )
        )

        def config_event(config: dict[str, Any]) -> None:
            for name in self._checks_using_config(_name(config)):
                queue.add(name)

        def config_updated(old: dict[str, Any], new: dict[str, Any]) -> None:
            if config_clusters(old) != config_clusters(new):
                config_event(new)

        self.configs.add_handler(
            EventHandler(on_add=config_event, on_update=config_updated, on_delete=config_event)
        )

        def cluster_event(cluster: dict[str, Any]) -> None:
            for config in self.configs.store.by_index(CLUSTER_INDEX, _name(cluster)):
                config_event(config)

        def cluster_updated(old: dict[str, Any], new: dict[str, Any]) -> None:
            before, after = (
                condition_of(old, MULTIKUEUE_CLUSTER_ACTIVE),
                condition_of(new, MULTIKUEUE_CLUSTER_ACTIVE),
            )
            if _active_state(before) != _active_state(after):
                cluster_event(new)

        self.clusters.add_handler(
            EventHandler(on_add=cluster_event, on_update=cluster_updated, on_delete=cluster_event)
        )

    def _workloads_using_config(self, config_name: str) -> list[str]:
        keys: list[str] = []
        for check in self._checks_using_config(config_name):
            keys.extend(_key(w) for w in self.workloads.store.by_index(CHECK_INDEX, check))
        return keys

    def _wire_workload_triggers(self) -> None:
        queue = self.workload_controller.queue
        reconciler = self.workload_reconciler

        def deleted(workload: dict[str, Any]) -> None:
            self._stale_reads.discard(_key(workload))
            reconciler.workload_deleted(workload)
            queue.add(_key(workload))

        workload_kind = str(WORKLOAD_GVK)

        def updated(old: dict[str, Any], new: dict[str, Any]) -> None:
            if old is new:  # the informer's resync: the safety net is never filtered
                queue.add(_key(new))
                return
            echo = self.own_writes.is_echo(MANAGER, workload_kind, "MODIFIED", new)
            key = _key(new)
            if key in self._stale_reads:  # a pass conflicted on an older version: retry on this one
                self._stale_reads.discard(key)
                queue.add(key)
                return
            if echo:
                return
            if decision_view(old) != decision_view(new):
                queue.add(_key(new))

        self.workloads.add_handler(
            EventHandler(
                on_add=lambda obj: queue.add(_key(obj)),
                on_update=updated,
                on_delete=deleted,
            )
        )
        period = self._options.events_batch_period

        def config_changed(config: dict[str, Any]) -> None:
            for key in self._workloads_using_config(_name(config)):
                queue.add_after(key, period)

        def config_updated(old: dict[str, Any], new: dict[str, Any]) -> None:
            if config_clusters(old) != config_clusters(new):
                config_changed(new)

        self.configs.add_handler(EventHandler(on_update=config_updated, on_delete=config_changed))

        def check_event(check: dict[str, Any]) -> None:
            if (check.get("spec") or {}).get("controllerName") != self.controller_name:
                return
            for workload in self.workloads.store.by_index(CHECK_INDEX, _name(check)):
                queue.add_after(_key(workload), period)

        def check_updated(old: dict[str, Any], new: dict[str, Any]) -> None:
            if _config_name(old) != _config_name(new):
                check_event(new)

        self.checks.add_handler(EventHandler(on_add=check_event, on_update=check_updated))

    # --- running -------------------------------------------------------------------------------------
    def _background(self) -> list[Callable[[], Coroutine[Any, Any, None]]]:
        """Loops running beside the controllers once the caches synced: the garbage collector."""
        return [self.gc.run]


def _active_state(condition: Condition | None) -> tuple[str, str, str] | None:
    return None if condition is None else (condition.status, condition.reason, condition.message)


def _getter(store: StoreView) -> Callable[[str], dict[str, Any] | None]:
    return lambda key: store.get(key)
