"""The ``Configuration`` document's models: Kueue's v1beta2 sections, defaults and field names.

Decoding and defaulting only (see ``shared.config`` for the invariants); Kueue's semantic rules are
in ``shared.config.rules`` and reading a file in ``shared.config.loading``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any, Final

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from shared.constants import (
    MULTIKUEUE_CONTROLLER_NAME,
    MULTIKUEUE_DISPATCHER_ALL_AT_ONCE,
    MULTIKUEUE_DISPATCHER_INCREMENTAL,
)
from shared.durations import DurationError, format_go_duration, parse_go_duration
from shared.frameworks.builtin_kinds import BUILTIN_KIND_BY_GVK, BUILTIN_KINDS
from shared.frameworks.spec import DeclarativeAdapterSpec
from shared.kube import GroupVersionKind, guess_plural
from shared.kueue_integrations import KUEUE_INTEGRATIONS
from shared.labelselector import LabelSelector, system_namespaces_excluded

__all__ = [
    "CONFIG_API_VERSION",
    "CONFIG_KIND",
    "DEFAULT_BRIDGE_MULTIKUEUE_CONTROLLER",
    "DEFAULT_DISPATCHER",
    "DEFAULT_INCREMENTAL_STEP_SIZE",
    "DEFAULT_NAMESPACE",
    "DEFAULT_ORIGIN",
    "DEFAULT_RECONCILE_CONCURRENCY",
    "INCREMENTAL_DISPATCHER",
    "KUEUE_ONLY_FRAMEWORKS",
    "BridgeMultiKueue",
    "ClientConnection",
    "Configuration",
    "ControllerSettings",
    "ExternalFramework",
    "Health",
    "IncrementalDispatcherConfig",
    "Integrations",
    "InternalCertManagement",
    "KueueBridgeSettings",
    "LeaderElection",
    "ManagedKind",
    "Metrics",
    "MultiKueue",
    "MultiKueueExternalFramework",
    "ObjectRetentionPolicies",
    "RequeuingStrategy",
    "WaitForPodsReady",
    "Webhook",
    "WorkloadRetentionPolicy",
    "parse_kind_arg",
]


CONFIG_API_VERSION: Final = "config.kueue.x-k8s.io/v1beta2"
CONFIG_KIND: Final = "Configuration"
#: Kueue's fallback when no service-account namespace file exists; ``parse_config`` takes another.
DEFAULT_NAMESPACE: Final = "kueue-system"

#: Framework names Kueue knows and kueue-bridge has no adapter for (``BUILTIN_KINDS`` are those it has).
KUEUE_ONLY_FRAMEWORKS: Final = tuple(
    integration.framework for integration in KUEUE_INTEGRATIONS if integration.framework not in BUILTIN_KINDS
)
DEFAULT_DISPATCHER: Final = MULTIKUEUE_DISPATCHER_ALL_AT_ONCE
INCREMENTAL_DISPATCHER: Final = MULTIKUEUE_DISPATCHER_INCREMENTAL
DEFAULT_ORIGIN: Final = "multikueue"
DEFAULT_INCREMENTAL_STEP_SIZE: Final = 3
#: ``kueueBridge.multiKueue.controllerName`` by default: not Kueue's own name, so kueue-bridge's
#: MultiKueue can run beside Kueue's (each handles the AdmissionChecks naming its controller).
DEFAULT_BRIDGE_MULTIKUEUE_CONTROLLER: Final = "kueue-bridge.dev/multikueue"
_NEGATIVE: Final = "must be greater than or equal to 0"
_NOT_POSITIVE: Final = "must be greater than zero"


# --- building blocks ---------------------------------------------------------------------------------
def _duration(value: object) -> timedelta:
    if isinstance(value, timedelta):
        return value
    if not isinstance(value, str):
        raise PydanticCustomError("k8s_type", 'must be a duration string such as "90s" or "1h30m"')
    try:
        return parse_go_duration(value)
    except DurationError as exc:
        raise PydanticCustomError(
            "k8s_invalid", "Invalid value: {value}: {detail}", _bad(value, exc)
        ) from None


def _bad(value: str, exc: Exception) -> dict[str, str]:
    return {"value": f'"{value}"', "detail": str(exc)}


#: A ``metav1.Duration``: Go duration text on the wire, ``timedelta`` in Python.
GoDuration = Annotated[
    timedelta, BeforeValidator(_duration), PlainSerializer(format_go_duration, return_type=str)
]


def parse_kind_arg(name: str) -> GroupVersionKind | None:
    """apimachinery's ``schema.ParseKindArg`` for ``Kind.version.group``; ``None`` if it does not parse.

    Like Kueue, everything after the second dot is the group; unlike Kueue an empty kind or version
    is refused too (such a kind could never be served).
    """
    gvk = GroupVersionKind.from_kind_arg(name)
    return gvk if gvk is not None and gvk.kind and gvk.version else None


def _quoted(values: Iterable[str]) -> str:
    return ", ".join(f'"{value}"' for value in values)


def _not_supported(value: str, supported: Iterable[str], extra: str = "") -> str:
    return f'Unsupported value: "{value}": supported values: {_quoted(supported)}{extra}'


def _drop_nulls(value: object) -> object:
    """``null`` means unset in Kubernetes JSON, so a null field gets its default."""
    if isinstance(value, dict):
        return {key: item for key, item in value.items() if item is not None}
    return value


class _ConfigModel(BaseModel):
    _nulls_are_unset = model_validator(mode="before")(_drop_nulls)

    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="forbid",
        frozen=True,
        strict=True,
        # a field's docstring is its description: docs/configuration.md's table is generated from them
        use_attribute_docstrings=True,
    )


#: Fields typed ``Any = None`` below are Kueue-only: accepted and preserved verbatim, never acted on.


# --- integrations ------------------------------------------------------------------------------------
class ExternalFramework(_ConfigModel):
    """An ``integrations.externalFrameworks`` entry; a plain string is ``{name: <string>}``."""

    name: str
    """``Kind.version.group``."""
    resource: str | None = None
    """The plural resource name; Kubernetes' guess from the kind when unset."""
    adapter: DeclarativeAdapterSpec | None = None
    """The declarative adapter of a kind without a built-in one (docs/adapters.md)."""

    @model_validator(mode="before")
    @classmethod
    def _plain_string(cls, value: object) -> object:
        return {"name": value} if isinstance(value, str) else value

    @model_serializer(mode="wrap")
    def _as_plain_string(self, handler: SerializerFunctionWrapHandler) -> object:
        return self.name if self.adapter is None and self.resource is None else handler(self)

    @property
    def gvk(self) -> GroupVersionKind | None:
        return parse_kind_arg(self.name)


class Integrations(_ConfigModel):
    frameworks: tuple[str, ...] = Field(default=("batch/job",), strict=False)
    """Built-in adapters: ``batch/job``, ``jobset.x-k8s.io/jobset``, ``workload.codeflare.dev/appwrapper``,
    ``tekton.dev/pipelinerun``."""
    external_frameworks: tuple[ExternalFramework, ...] = Field(default=(), strict=False)
    """``Kind.version.group`` strings or ``{name, resource, adapter}`` objects (see Frameworks)."""
    label_keys_to_copy: tuple[str, ...] = Field(default=(), strict=False)
    """Job labels copied to the Workload when it is created."""
    pod_options: Any = None


class RequeuingStrategy(_ConfigModel):
    timestamp: str = "Eviction"
    """``Eviction`` or ``Creation``."""
    backoff_base_seconds: int = 60
    backoff_max_seconds: int = 3600
    backoff_limit_count: int | None = None
    """Unset: requeue forever."""


def _is_zero_or_unset(value: object) -> bool:
    if isinstance(value, str):
        try:
            return parse_go_duration(value) == timedelta(0)
        except DurationError:
            return False  # reported by the field's own validation
    return value is None or value == timedelta(0)


class WaitForPodsReady(_ConfigModel):
    """Always present in v1beta2 (no ``enable`` field): all-or-nothing admission is on by default."""

    timeout: GoDuration = timedelta(minutes=30)
    """Always enabled in v1beta2; ``0`` means the default."""
    recovery_timeout: GoDuration | None = None
    """Defaults to ``timeout``."""
    block_admission: bool = False
    requeuing_strategy: RequeuingStrategy = Field(default_factory=RequeuingStrategy)

    @model_validator(mode="before")
    @classmethod
    def _recovery_defaults_to_timeout(cls, value: object) -> object:
        if isinstance(value, dict):
            value = dict(value)
            if _is_zero_or_unset(value.get("timeout")):
                value["timeout"] = "30m"  # Kueue: an unset or zero timeout means the default
            recovery_key = _key(value, "recoveryTimeout", "recovery_timeout")
            if value.get(recovery_key) is None and isinstance(value["timeout"], str | timedelta):
                value[recovery_key] = value["timeout"]  # a broken timeout is reported once
        return value


class MultiKueueExternalFramework(_ConfigModel):
    name: str


class IncrementalDispatcherConfig(_ConfigModel):
    """``multiKueue.incrementalDispatcherConfig``: clusters nominated per 5-minute round."""

    step_size: int | None = None
    """Clusters added per 5-minute round, >= 1; ``3`` with the incremental dispatcher, and only valid
    with ``dispatcherName: kueue.x-k8s.io/multikueue-dispatcher-incremental``."""


def _multikueue_defaults(value: object) -> object:
    """Kueue's ``SetDefaults_Configuration`` for ``multiKueue`` (``apis/config/v1beta2/defaults.go``):
    an empty ``origin`` is the default one, and the incremental dispatcher gets ``stepSize: 3``."""
    if not isinstance(value, dict):
        return value
    value = dict(value)
    if value.get("origin") == "":
        value["origin"] = DEFAULT_ORIGIN
    dispatcher = value.get(_key(value, "dispatcherName", "dispatcher_name"))
    if dispatcher == INCREMENTAL_DISPATCHER:
        config_key = _key(value, "incrementalDispatcherConfig", "incremental_dispatcher_config")
        config = value.get(config_key)
        if config is None or isinstance(config, dict):
            config = dict(config or {})
            step_key = _key(config, "stepSize", "step_size")
            if config.get(step_key) is None:
                config[step_key] = DEFAULT_INCREMENTAL_STEP_SIZE
            value[config_key] = config
    return value


class MultiKueue(_ConfigModel):
    gc_interval: GoDuration = timedelta(minutes=1)
    """``0`` disables garbage collection."""
    origin: str = DEFAULT_ORIGIN
    """The value of the ``kueue.x-k8s.io/multikueue-origin`` label; a valid label value."""
    worker_lost_timeout: GoDuration = timedelta(minutes=15)
    dispatcher_name: str = DEFAULT_DISPATCHER
    external_frameworks: tuple[MultiKueueExternalFramework, ...] = Field(default=(), strict=False)
    """``[{name: Kind.version.group}]``, synced by the generic MultiKueue adapter."""
    cluster_profile: Any = None
    incremental_dispatcher_config: IncrementalDispatcherConfig | None = None

    _kueue_defaults = model_validator(mode="before")(_multikueue_defaults)

    @property
    def incremental_step_size(self) -> int:
        """Clusters added per round by the incremental dispatcher (Kueue's ``DefaultStepSize``: 3)."""
        config = self.incremental_dispatcher_config
        if config is None or not config.step_size:
            return DEFAULT_INCREMENTAL_STEP_SIZE
        return config.step_size


# --- object retention --------------------------------------------------------------------------------
class WorkloadRetentionPolicy(_ConfigModel):
    """``objectRetentionPolicies.workloads``: unset (null) disables a deletion, ``0s`` deletes at once.

    ``afterDeactivatedByKueue`` is honoured by kueue-bridge's job reconciler (it deletes the *job* of
    a Workload Kueue deactivated, as Kueue's ``jobframework`` reconciler does for its own kinds).
    ``afterFinished`` is accepted and kept but has no effect here: Kueue's *workload controller*
    deletes finished Workloads, for every kind, when Kueue's own file sets it.
    """

    after_finished: GoDuration | None = None
    """Accepted (not negative) but **no effect here**: Kueue's workload controller
    (``pkg/controller/core/workload_controller.go``) owns it and deletes finished *Workloads* of every
    kind (the job stays; Normal event ``Deleted`` on the Workload). Set it in Kueue's own
    Configuration."""
    after_deactivated_by_kueue: GoDuration | None = None
    """Unset: never delete. As Kueue's job reconciler: a job whose Workload **Kueue** deactivated
    (``spec.active: false``, ``Evicted`` reason ``DeactivatedDueTo<cause>``: maximum execution time,
    requeuing limit) is deleted (background propagation; Normal event ``Deleted`` "Deleted job:
    deactivation retention period expired") once this long has passed since the eviction; ``0s``
    deletes at once. A Workload deactivated by a person (reason ``Deactivated``) never deletes its
    job. Not negative. Applies to the kinds kueue-bridge reconciles; set it in Kueue's own file for
    Kueue's kinds."""


class ObjectRetentionPolicies(_ConfigModel):
    """Kueue's ``objectRetentionPolicies``; no defaults (Kueue prints none): unset never deletes."""

    workloads: WorkloadRetentionPolicy | None = None


# --- process settings --------------------------------------------------------------------------------
class Webhook(_ConfigModel):
    port: int = 9443
    host: str = ""
    """``""``: every interface."""
    cert_dir: str = "/tmp/k8s-webhook-server/serving-certs"


class InternalCertManagement(_ConfigModel):
    """Names differ from Kueue's on purpose: sharing Kueue's Secret would overwrite Kueue's cert."""

    enable: bool = True
    webhook_service_name: str = "kueue-bridge-webhook-service"
    """Differs from Kueue's on purpose: sharing Kueue's names would overwrite Kueue's certificate."""
    webhook_secret_name: str = "kueue-bridge-webhook-server-cert"


class LeaderElection(_ConfigModel):
    """component-base's ``LeaderElectionConfiguration``; ``resourceName`` is a per-component prefix."""

    leader_elect: bool = True
    resource_name: str = "kueue-bridge"
    """A prefix: each component holds the Lease ``<resourceName>-<component>``."""
    resource_lock: str = "leases"
    """The only supported lock."""
    resource_namespace: str = ""
    """Defaults to ``namespace``."""
    lease_duration: GoDuration = timedelta(seconds=15)
    """lease > renew > 1.2 x retry, all > 0."""
    renew_deadline: GoDuration = timedelta(seconds=10)
    retry_period: GoDuration = timedelta(seconds=2)

    def lease_name(self, component: str) -> str:
        """The Lease a component campaigns for: ``<resourceName>-<component>``."""
        return f"{self.resource_name}-{component}"


#: Reconciles of one job kind run at most this many at once unless ``controller.groupKindConcurrency``
#: says otherwise. Higher than controller-runtime's default of 1: a worker is a coroutine, and a
#: reconcile mostly waits on one API round trip (bench/reconciler_throughput.py, a flood of 500 admissions:
#: p99 admission -> start 360-520 ms with 4 workers, 60-220 ms with 16).
DEFAULT_RECONCILE_CONCURRENCY: Final = 16


class ControllerSettings(_ConfigModel):
    """controller-runtime's ``ControllerConfigurationSpec`` (Kueue's ``controller`` section).

    ``groupKindConcurrency`` is honoured for the job kinds kueue-bridge reconciles: the key is the
    kind's ``GroupKind.String()`` (``Job.batch``, ``JobSet.jobset.x-k8s.io``; a core kind is just
    ``Kind``), the value the number of its jobs reconciled at once. ``Workload.kueue.x-k8s.io`` sets
    the MultiKueue Workload reconciler's concurrency, as it does Kueue's (controller-runtime applies
    it to every controller ``For`` Workloads). Other keys for kinds reconciled by Kueue itself
    (``LocalQueue.kueue.x-k8s.io``...) are accepted and ignored, so Kueue's own file works.
    """

    group_kind_concurrency: dict[str, Annotated[int, Field(gt=0)]] = Field(default_factory=dict)
    """Jobs of one kind reconciled at once, keyed by ``Kind.group`` (``Job.batch``,
    ``JobSet.jobset.x-k8s.io``; a core kind is just ``Kind``), each > 0; a managed kind not listed
    gets 16 (a worker is a coroutine waiting on one API call; controller-runtime's default of 1
    would queue a flood of admissions). ``Workload.kueue.x-k8s.io`` sets how many Workloads
    ``kueue-bridge multikueue`` reconciles at once, as it does for Kueue's MultiKueue (default 16;
    more reconciles at once coalesce fewer watch events, so they mean more API calls). Other keys of
    kinds Kueue reconciles itself are ignored. ``kueue-bridge reconciler --workers N`` overrides it
    for every job kind."""
    cache_sync_timeout: Any = None


class ClientConnection(_ConfigModel):
    qps: float = 300.0
    """> 0."""
    burst: int = 500
    """> 0."""


class Metrics(_ConfigModel):
    bind_address: str = ":8443"
    """``host:port``, or ``"0"`` to disable."""
    enable_cluster_queue_resources: Any = None
    local_queue_metrics: Any = None
    custom_labels: Any = None


class Health(_ConfigModel):
    health_probe_bind_address: str = ":8081"
    """Probes and metrics of the controller processes (``--probe-address`` overrides it)."""
    readiness_endpoint_name: str = "readyz"
    liveness_endpoint_name: str = "healthz"


class BridgeMultiKueue(_ConfigModel):
    """``kueueBridge.multiKueue``: the ``kueue-bridge multikueue`` component's own settings."""

    controller_name: str = DEFAULT_BRIDGE_MULTIKUEUE_CONTROLLER
    """AdmissionChecks with this ``spec.controllerName`` are handled by ``kueue-bridge multikueue``
    (see the ``kueueBridge`` section)."""


class KueueBridgeSettings(_ConfigModel):
    """The extension section: what kueue-bridge needs and Kueue's format has no field for."""

    multi_kueue_controller_names: tuple[str, ...] = Field(default=(MULTIKUEUE_CONTROLLER_NAME,), strict=False)
    """AdmissionCheck controller names that mean "dispatched by MultiKueue" (see the ``kueueBridge``
    section)."""
    field_manager: str = "kueue-bridge"
    """The server-side-apply field manager of every write kueue-bridge makes (see the ``kueueBridge``
    section)."""
    multi_kueue: BridgeMultiKueue = Field(default_factory=BridgeMultiKueue)

    @property
    def all_multikueue_controller_names(self) -> frozenset[str]:
        """Every controller name that means "dispatched by MultiKueue": the listed ones and ours."""
        return frozenset(self.multi_kueue_controller_names) | {self.multi_kueue.controller_name}


# --- the document ------------------------------------------------------------------------------------
def _key(value: dict[str, Any], alias: str, name: str) -> str:
    """The key a field is given under (wire alias or Python name, for models built in code)."""
    return name if name in value and alias not in value else alias


def _fill_dependent_defaults(value: object) -> object:
    """Kueue's defaulting for fields whose default depends on another field (works on raw data)."""
    if not isinstance(value, dict):
        return value
    value = dict(value)
    namespace = value.get("namespace")
    if namespace is None:
        namespace = value["namespace"] = DEFAULT_NAMESPACE
    if not isinstance(namespace, str):
        return value
    selector_key = _key(value, "managedJobsNamespaceSelector", "managed_jobs_namespace_selector")
    if value.get(selector_key) is None:
        value[selector_key] = system_namespaces_excluded(namespace)
    election_key = _key(value, "leaderElection", "leader_election")
    election = value.get(election_key)
    if isinstance(election, LeaderElection) and not election.resource_namespace:
        value[election_key] = election.model_copy(update={"resource_namespace": namespace})
    elif election is None or isinstance(election, dict):
        election = dict(election or {})
        namespace_key = _key(election, "resourceNamespace", "resource_namespace")
        if not election.get(namespace_key):
            election[namespace_key] = namespace
        value[election_key] = election
    return value


class Configuration(_ConfigModel):
    api_version: str = Field(default=CONFIG_API_VERSION, alias="apiVersion")
    """Required: ``config.kueue.x-k8s.io/v1beta2``."""
    kind: str = CONFIG_KIND
    """Required: ``Configuration``."""
    namespace: str = DEFAULT_NAMESPACE
    """Where kueue-bridge runs (``config --namespace`` / the process may pass the service-account
    namespace instead); a DNS-1123 label."""
    manage_jobs_without_queue_name: bool = False
    """Manage jobs with no ``kueue.x-k8s.io/queue-name`` label."""
    managed_jobs_namespace_selector: LabelSelector = Field(
        default_factory=lambda: LabelSelector.model_validate(system_namespaces_excluded(DEFAULT_NAMESPACE))
    )
    """Defaults to ``kubernetes.io/metadata.name NotIn [kube-system, <namespace>]``; must not match
    ``kube-system`` nor ``namespace``."""
    integrations: Integrations = Field(default_factory=Integrations)
    wait_for_pods_ready: WaitForPodsReady = Field(default_factory=WaitForPodsReady)
    multi_kueue: MultiKueue = Field(default_factory=MultiKueue)
    webhook: Webhook = Field(default_factory=Webhook)
    internal_cert_management: InternalCertManagement = Field(default_factory=InternalCertManagement)
    leader_election: LeaderElection = Field(
        default_factory=lambda: LeaderElection(resource_namespace=DEFAULT_NAMESPACE)
    )
    client_connection: ClientConnection = Field(default_factory=ClientConnection)
    controller: ControllerSettings = Field(default_factory=ControllerSettings)
    metrics: Metrics = Field(default_factory=Metrics)
    health: Health = Field(default_factory=Health)
    feature_gates: dict[str, bool] = Field(default_factory=dict)
    """Kueue feature gates (``name: true/false``) whose behaviour kueue-bridge mirrors."""
    object_retention_policies: ObjectRetentionPolicies | None = None
    kueue_bridge: KueueBridgeSettings = Field(default_factory=KueueBridgeSettings)
    # Kueue-only sections: accepted so Kueue's own file is a valid start, never acted on.
    pprof_bind_address: Any = None
    fair_sharing: Any = None
    admission_fair_sharing: Any = None
    resources: Any = None
    visibility_server: Any = None
    tls: Any = None

    _dependent_defaults = model_validator(mode="before")(_fill_dependent_defaults)

    @field_validator("api_version")
    @classmethod
    def _supported_api_version(cls, value: str) -> str:
        if value != CONFIG_API_VERSION:
            hint = " (kueue-bridge reads only v1beta2; Kueue converts v1beta1 files for you)"
            raise PydanticCustomError("k8s_unsupported", _not_supported(value, [CONFIG_API_VERSION], hint))
        return value

    @field_validator("kind")
    @classmethod
    def _supported_kind(cls, value: str) -> str:
        if value != CONFIG_KIND:
            raise PydanticCustomError("k8s_unsupported", _not_supported(value, [CONFIG_KIND]))
        return value

    def feature_gate(self, name: str, *, default: bool) -> bool:
        """A Kueue feature gate as set in ``featureGates``; ``default`` is Kueue's default for it."""
        return self.feature_gates.get(name, default)

    def deactivation_retention(self) -> timedelta | None:
        """``objectRetentionPolicies.workloads.afterDeactivatedByKueue``; ``None``: never delete."""
        workloads = self.object_retention_policies.workloads if self.object_retention_policies else None
        return workloads.after_deactivated_by_kueue if workloads is not None else None

    def reconcile_concurrency(
        self, gvk: GroupVersionKind, *, default: int = DEFAULT_RECONCILE_CONCURRENCY
    ) -> int:
        """How many objects of ``gvk`` are reconciled at once (``controller.groupKindConcurrency``;
        ``default`` when the kind is not listed)."""
        key = f"{gvk.kind}.{gvk.group}" if gvk.group else gvk.kind
        return self.controller.group_kind_concurrency.get(key, default)

    def managed_kinds(self) -> list[ManagedKind]:
        """Every kind kueue-bridge manages: built-ins first (config order), then declarative ones."""
        kinds: dict[GroupVersionKind, ManagedKind] = {}
        for name in self.integrations.frameworks:
            builtin = BUILTIN_KINDS[name]
            kinds.setdefault(builtin.gvk, ManagedKind(builtin.gvk, builtin.plural, name, None))
        for entry in self.integrations.external_frameworks:
            external = entry.gvk
            if external is None:  # pragma: no cover - rejected by validation
                continue
            resource = entry.resource or guess_plural(external.kind)
            named = BUILTIN_KIND_BY_GVK.get(external)
            managed = ManagedKind(external, resource, named.name if named else None, entry.adapter)
            kinds.setdefault(external, managed)
        return list(kinds.values())

    def multikueue_kinds(self) -> list[ManagedKind]:
        """Every kind ``kueue-bridge multikueue`` syncs to workers, as Kueue's MultiKueue picks them.

        The enabled built-in frameworks, then each ``multiKueue.externalFrameworks`` entry (only with
        the ``MultiKueueAdaptersForCustomJobs`` gate, on by default): a managed declarative kind keeps
        its adapter, any other kind is synced generically (``adapter`` and ``builtin`` both ``None``).
        A managed declarative kind not listed there is not synced.
        """
        managed = self.managed_kinds()
        kinds: dict[GroupVersionKind, ManagedKind] = {
            kind.gvk: kind for kind in managed if kind.builtin is not None
        }
        if self.feature_gate("MultiKueueAdaptersForCustomJobs", default=True):
            declarative = {kind.gvk: kind for kind in managed if kind.builtin is None}
            for entry in self.multi_kueue.external_frameworks:
                gvk = parse_kind_arg(entry.name)
                if gvk is None or gvk in kinds:
                    continue
                kinds[gvk] = declarative.get(gvk) or ManagedKind(gvk, guess_plural(gvk.kind), None, None)
        return list(kinds.values())


@dataclass(frozen=True)
class ManagedKind:
    """One kind to reconcile: ``builtin`` names its adapter, else ``adapter`` describes it."""

    gvk: GroupVersionKind
    resource: str
    builtin: str | None
    adapter: DeclarativeAdapterSpec | None
