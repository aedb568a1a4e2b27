"""Async Kubernetes client runtime: client, discovery, watch, informer, work queue, leader election.

Everything the webhook, the reconciler and the MultiKueue worker need to talk to an API server is
exported here (the built-in kinds' GroupVersionKinds included); import from ``shared.kube``, not
from its modules: an import contract holds every package, and shared's other modules, to it.
Typical wiring::

    connection = load_connection(kubeconfig=path)            # or load_in_cluster(), kubeconfig_from_dict()
    metrics = KubeMetrics(registry)                          # prometheus_client.CollectorRegistry
    client = KubeClient.from_connection(connection, settings=ClientSettings(qps=300, burst=500), metrics=metrics)
    jobs = Informer(client, JOB_GVK, indexers={"owner": index_by_controller_uid})
    controller = Controller(name="job", reconcile=reconcile_job, clock=client.clock, workers=4, metrics=metrics)
    controller.watch(jobs)
    elector = LeaderElector(client, LeaderElectionSettings(lease_name=..., lease_namespace=..., identity=pod))
    async def lead() -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(jobs.run())
            group.create_task(controller.run())
    await elector.run(on_started_leading=lead)               # returns when leadership is lost

Objects are raw dicts (never mutate informer-cached ones); failures are typed (``NotFound``,
``Conflict``, ``Invalid`` ...); time comes from an injected ``Clock`` (tests: ``FakeClock``).

Two modules are used by name rather than through this package, because their functions only make
sense with the module's name in front: ``shared.kube.conditions`` (``metav1.Condition`` lists on
wire dicts, ``meta.SetStatusCondition``) and ``shared.kube.times`` (``metav1.Time`` text, kubectl's
ages).

Modules:

* ``auth`` -- bearer-token authentication that never goes stale
* ``client`` -- the async Kubernetes API client: raw dicts in and out, typed errors, safe retries, a
  QPS limit
* ``clock`` -- time as an injected dependency
* ``compaction`` -- the informer transform that drops managedFields and shares repeated parts of
  cached objects (strings, equal dicts and lists)
* ``conditions`` -- ``metav1.Condition`` lists on wire dicts, with apimachinery's ``meta`` semantics
* ``connection`` -- where the API server is and how to talk to it securely: loaded by
  ``kubernetes.config``
* ``controller`` -- a small controller: informers -> handlers -> work queue -> an async reconcile
  function
* ``discovery`` -- discovery and REST mapping: from a GroupVersionKind to the URL of its resource
* ``errors`` -- typed errors of the Kubernetes client runtime
* ``events`` -- Kubernetes Events, recorded the way Kueue's controllers record them, without ever
  blocking
* ``gvk`` -- group, version and kind: how an object names its type, and the one parser of
  ``apiVersion``
* ``http1`` -- a minimal HTTP/1.1 keep-alive client for the API server's request/response calls
* ``informer`` -- informers: a watched, indexed, in-memory cache of one kind, with event handlers
* ``kinds`` -- the Kubernetes built-in kinds the components read and write, named once
* ``leaderelection`` -- leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's
  semantics
* ``metric_types`` -- labelled counters and histograms for the event loop's hot paths, exposed as
  prometheus_client's
* ``observability`` -- structured logging and Prometheus metrics for the client runtime
* ``ratelimit`` -- token buckets and per-key exponential backoff (client-go ``flowcontrol`` and
  ``workqueue``)
* ``times`` -- Kubernetes timestamps: ``metav1.Time`` and ``metav1.MicroTime`` on the wire, and
  kubectl's ages
* ``transport`` -- the transport seam: how ``KubeClient``'s requests become bytes on a connection
* ``verbs`` -- the Kubernetes verbs on raw dicts, built on ``KubeClient.request``
* ``watch`` -- a list-then-watch loop that never gives up and never silently loses an object
* ``workqueue`` -- a deduplicating, rate-limited work queue of object keys (client-go
  ``util/workqueue`` semantics)
"""

from shared.kube.auth import (
    BearerTokenAuth,
    ConfigurationTokenSource,
    FileTokenSource,
    StaticTokenSource,
    TokenSource,
)
from shared.kube.client import ClientSettings, KubeClient, StreamResponse
from shared.kube.clock import Clock, FakeClock, SystemClock
from shared.kube.compaction import SharedParts
from shared.kube.connection import (
    ConnectionConfig,
    ConnectionConfigError,
    kubeconfig_from_dict,
    load_connection,
    load_in_cluster,
    load_kubeconfig,
    static_connection,
)
from shared.kube.controller import Controller, PriorityRule, Reconciler, Result
from shared.kube.discovery import ResourceInfo, RESTMapper
from shared.kube.errors import (
    AlreadyExists,
    ApiError,
    BadRequest,
    Conflict,
    Forbidden,
    Gone,
    InternalError,
    Invalid,
    KubeError,
    MethodNotAllowed,
    NotFound,
    ServerTimeout,
    ServiceUnavailable,
    StatusCause,
    TooManyRequests,
    TransportError,
    Unauthorized,
    UnexpectedResponse,
    UnknownKindError,
    cache_miss_message,
)
from shared.kube.events import (
    CORE_EVENT,
    EVENTS_V1_EVENT,
    NORMAL,
    WARNING,
    EventRecorder,
    EventSettings,
    Reporter,
    object_reference,
)
from shared.kube.gvk import GroupVersionKind, guess_plural, parse_group_version
from shared.kube.informer import (
    CONTROLLER_RESYNC_PERIOD,
    EventHandler,
    Indexer,
    Informer,
    Store,
    StoreView,
    index_by_controller_uid,
    index_by_label,
    index_by_namespace,
    strip_managed_fields,
)
from shared.kube.kinds import (
    CONFIG_MAP_GVK,
    CRD_GVK,
    DEPLOYMENT_GVK,
    ENDPOINT_SLICE_GVK,
    JOB_GVK,
    MUTATING_WEBHOOK_CONFIGURATION_GVK,
    NAMESPACE_GVK,
    POD_GVK,
    PRIORITY_CLASS_GVK,
    SECRET_GVK,
    SELF_SUBJECT_ACCESS_REVIEW_GVK,
    SERVICE_ACCOUNT_GVK,
    SERVICE_GVK,
    SUBJECT_ACCESS_REVIEW_GVK,
    VALIDATING_WEBHOOK_CONFIGURATION_GVK,
)
from shared.kube.leaderelection import LEASE, LeaderElectionSettings, LeaderElector
from shared.kube.observability import (
    JsonFormatter,
    KubeMetrics,
    configure_logging,
    current_object_key,
    current_reconcile_id,
    reconcile_context,
)
from shared.kube.ratelimit import ItemExponentialBackoff, TokenBucket
from shared.kube.transport import AiohttpTransport, HttpxTransport, KubeTransport, TransportSettings
from shared.kube.verbs import ObjectList, PatchType, ResourceVerbs
from shared.kube.watch import EventType, Watch, WatchEvent, WatchSettings, object_key
from shared.kube.workqueue import QueueShutDown, WorkQueue

__all__ = [
    "CONFIG_MAP_GVK",
    "CONTROLLER_RESYNC_PERIOD",
    "CORE_EVENT",
    "CRD_GVK",
    "DEPLOYMENT_GVK",
    "ENDPOINT_SLICE_GVK",
    "EVENTS_V1_EVENT",
    "JOB_GVK",
    "LEASE",
    "MUTATING_WEBHOOK_CONFIGURATION_GVK",
    "NAMESPACE_GVK",
    "NORMAL",
    "POD_GVK",
    "PRIORITY_CLASS_GVK",
    "SECRET_GVK",
    "SELF_SUBJECT_ACCESS_REVIEW_GVK",
    "SERVICE_ACCOUNT_GVK",
    "SERVICE_GVK",
    "SUBJECT_ACCESS_REVIEW_GVK",
    "VALIDATING_WEBHOOK_CONFIGURATION_GVK",
    "WARNING",
    "AiohttpTransport",
    "AlreadyExists",
    "ApiError",
    "BadRequest",
    "BearerTokenAuth",
    "ClientSettings",
    "Clock",
    "ConfigurationTokenSource",
    "Conflict",
    "ConnectionConfig",
    "ConnectionConfigError",
    "Controller",
    "EventHandler",
    "EventRecorder",
    "EventSettings",
    "EventType",
    "FakeClock",
    "FileTokenSource",
    "Forbidden",
    "Gone",
    "GroupVersionKind",
    "HttpxTransport",
    "Indexer",
    "Informer",
    "InternalError",
    "Invalid",
    "ItemExponentialBackoff",
    "JsonFormatter",
    "KubeClient",
    "KubeError",
    "KubeMetrics",
    "KubeTransport",
    "LeaderElectionSettings",
    "LeaderElector",
    "MethodNotAllowed",
    "NotFound",
    "ObjectList",
    "PatchType",
    "PriorityRule",
    "QueueShutDown",
    "RESTMapper",
    "Reconciler",
    "Reporter",
    "ResourceInfo",
    "ResourceVerbs",
    "Result",
    "ServerTimeout",
    "ServiceUnavailable",
    "SharedParts",
    "StaticTokenSource",
    "StatusCause",
    "Store",
    "StoreView",
    "StreamResponse",
    "SystemClock",
    "TokenBucket",
    "TokenSource",
    "TooManyRequests",
    "TransportError",
    "TransportSettings",
    "Unauthorized",
    "UnexpectedResponse",
    "UnknownKindError",
    "Watch",
    "WatchEvent",
    "WatchSettings",
    "WorkQueue",
    "cache_miss_message",
    "configure_logging",
    "current_object_key",
    "current_reconcile_id",
    "guess_plural",
    "index_by_controller_uid",
    "index_by_label",
    "index_by_namespace",
    "kubeconfig_from_dict",
    "load_connection",
    "load_in_cluster",
    "load_kubeconfig",
    "object_key",
    "object_reference",
    "parse_group_version",
    "reconcile_context",
    "static_connection",
    "strip_managed_fields",
]
