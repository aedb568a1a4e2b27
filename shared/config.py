"""kueue-bridge's configuration: Kueue's ``config.kueue.x-k8s.io/v1beta2`` ``Configuration`` format.

One file configures all three components. It uses Kueue's field names, defaults and validation
messages (``apis/config/v1beta2``, ``pkg/config/validation.go``) so an operator who knows Kueue knows
this file, plus exactly one extension section, ``kueueBridge``, for settings Kueue has no place for.

Invariants:

* **Nothing is ignored silently.** Every model forbids unknown fields and accepts only the camelCase
  wire names; types are strict (``"300"`` is not an integer). Kueue fields kueue-bridge has no use
  for (``fairSharing``, ``resources``, ...) are accepted and preserved as opaque values, so a copy of
  Kueue's own file is a valid starting point.
* **Decode, default, validate** -- Kueue's order. Defaults that depend on other fields
  (``managedJobsNamespaceSelector`` and ``leaderElection.resourceNamespace`` from ``namespace``,
  ``waitForPodsReady.recoveryTimeout`` from ``timeout``) are filled before validation, so the
  normalised file printed by ``kueue-bridge config validate`` is exactly what the components run with.
* **All errors at once**, each a ``(field path, message)`` pair: pydantic's structural errors
  (translated to camelCase paths) and Kueue's semantic rules are collected together; when one
  section is structurally broken, the rules of the other sections still run.
* **Frozen.** Components receive the configuration explicitly and cannot change it.

Framework names: ``integrations.frameworks`` lists built-in adapters by Kueue's framework name;
``integrations.externalFrameworks`` lists kinds as ``Kind.version.group``. A plain string there is
accepted only when it names the kind of a built-in adapter (``PipelineRun.v1.tekton.dev`` is how
Kueue users already configure Tekton) and enables that adapter; any other kind needs the object form
with a declarative ``adapter`` (``shared.frameworks.spec``), since kueue-bridge would otherwise have
nothing to run for it. An empty ``frameworks`` list is allowed only when ``externalFrameworks`` is
not empty: kueue-bridge must manage at least one kind, but need not manage a built-in one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Annotated, Any, Final, NamedTuple

import yaml
from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    SerializerFunctionWrapHandler,
    ValidationError,
    field_validator,
    model_serializer,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from shared.constants import MULTIKUEUE_CONTROLLER_NAME
from shared.durations import DurationError, format_go_duration, parse_go_duration
from shared.frameworks.base import GroupVersionKind, guess_plural
from shared.frameworks.spec import DeclarativeAdapterSpec
from shared.labelselector import (
    LabelSelector,
    dns1123_label_errors,
    dns1123_subdomain_errors,
    format_selector,
    label_key_errors,
    label_value_errors,
)

__all__ = [
    "BUILTIN_FRAMEWORKS",
    "CONFIG_API_VERSION",
    "CONFIG_KIND",
    "DEFAULT_NAMESPACE",
    "DEFAULT_RECONCILE_CONCURRENCY",
    "KUEUE_ONLY_FRAMEWORKS",
    "ClientConnection",
    "ConfigError",
    "ConfigIssue",
    "Configuration",
    "ControllerSettings",
    "ExternalFramework",
    "Health",
    "Integrations",
    "InternalCertManagement",
    "KueueBridgeSettings",
    "LeaderElection",
    "ManagedKind",
    "Metrics",
    "MultiKueue",
    "MultiKueueExternalFramework",
    "RequeuingStrategy",
    "WaitForPodsReady",
    "Webhook",
    "default_config",
    "dump_config",
    "load_config",
    "parse_config",
    "parse_kind_arg",
    "validate_configuration",
]

CONFIG_API_VERSION: Final = "config.kueue.x-k8s.io/v1beta2"
CONFIG_KIND: Final = "Configuration"
#: Kueue's fallback when no service-account namespace file exists; ``parse_config`` takes another.
DEFAULT_NAMESPACE: Final = "kueue-system"
KUBE_SYSTEM: Final = "kube-system"
NAMESPACE_NAME_LABEL: Final = "kubernetes.io/metadata.name"

#: Framework name -> kind, for the adapters kueue-bridge ships (storage versions of the real CRDs).
BUILTIN_FRAMEWORKS: Final[dict[str, GroupVersionKind]] = {
    "batch/job": GroupVersionKind("batch", "v1", "Job"),
    "jobset.x-k8s.io/jobset": GroupVersionKind("jobset.x-k8s.io", "v1alpha2", "JobSet"),
    "workload.codeflare.dev/appwrapper": GroupVersionKind("workload.codeflare.dev", "v1beta2", "AppWrapper"),
    "tekton.dev/pipelinerun": GroupVersionKind("tekton.dev", "v1", "PipelineRun"),
}
#: Framework names Kueue knows and kueue-bridge has no adapter for.
KUEUE_ONLY_FRAMEWORKS: Final = (
    "kubeflow.org/mpijob",
    "ray.io/rayjob",
    "ray.io/rayservice",
    "ray.io/raycluster",
    "kubeflow.org/paddlejob",
    "kubeflow.org/pytorchjob",
    "kubeflow.org/tfjob",
    "kubeflow.org/xgboostjob",
    "kubeflow.org/jaxjob",
    "trainer.kubeflow.org/trainjob",
    "sparkoperator.k8s.io/sparkapplication",
    "pod",
    "deployment",
    "statefulset",
    "leaderworkerset.x-k8s.io/leaderworkerset",
)
DEFAULT_DISPATCHER: Final = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once"
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
    if name.count(".") < 2:
        return None
    kind, version, group = name.split(".", 2)
    if not kind or not version:
        return None
    return GroupVersionKind(group=group, version=version, kind=kind)


def _kind_arg(gvk: GroupVersionKind) -> str:
    return f"{gvk.kind}.{gvk.version}.{gvk.group}"


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
    )


#: Fields typed ``Any = None`` below are Kueue-only: accepted and preserved verbatim, never acted on.


# --- integrations ------------------------------------------------------------------------------------
class ExternalFramework(_ConfigModel):
    """An ``integrations.externalFrameworks`` entry; a plain string is ``{name: <string>}``."""

    name: str
    resource: str | None = Field(default=None, description="Plural resource name; guessed from the kind")
    adapter: DeclarativeAdapterSpec | None = None

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
    external_frameworks: tuple[ExternalFramework, ...] = Field(default=(), strict=False)
    label_keys_to_copy: tuple[str, ...] = Field(default=(), strict=False)
    pod_options: Any = None


class RequeuingStrategy(_ConfigModel):
    timestamp: str = "Eviction"
    backoff_base_seconds: int = 60
    backoff_max_seconds: int = 3600
    backoff_limit_count: int | None = None


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
    recovery_timeout: GoDuration | None = None
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


class MultiKueue(_ConfigModel):
    gc_interval: GoDuration = timedelta(minutes=1)
    origin: str = "multikueue"
    worker_lost_timeout: GoDuration = timedelta(minutes=15)
    dispatcher_name: str = DEFAULT_DISPATCHER
    external_frameworks: tuple[MultiKueueExternalFramework, ...] = Field(default=(), strict=False)
    cluster_profile: Any = None
    incremental_dispatcher_config: Any = None


# --- process settings --------------------------------------------------------------------------------
class Webhook(_ConfigModel):
    port: int = 9443
    host: str = ""
    cert_dir: str = "/tmp/k8s-webhook-server/serving-certs"


class InternalCertManagement(_ConfigModel):
    """Names differ from Kueue's on purpose: sharing Kueue's Secret would overwrite Kueue's cert."""

    enable: bool = True
    webhook_service_name: str = "kueue-bridge-webhook-service"
    webhook_secret_name: str = "kueue-bridge-webhook-server-cert"


class LeaderElection(_ConfigModel):
    """component-base's ``LeaderElectionConfiguration``; ``resourceName`` is a per-component prefix."""

    leader_elect: bool = True
    resource_name: str = "kueue-bridge"
    resource_lock: str = "leases"
    resource_namespace: str = ""
    lease_duration: GoDuration = timedelta(seconds=15)
    renew_deadline: GoDuration = timedelta(seconds=10)
    retry_period: GoDuration = timedelta(seconds=2)

    def lease_name(self, component: str) -> str:
        """The Lease a component campaigns for: ``<resourceName>-<component>``."""
        return f"{self.resource_name}-{component}"


#: Reconciles of one job kind run at most this many at once unless ``controller.groupKindConcurrency``
#: says otherwise. Higher than controller-runtime's default of 1: a worker is a coroutine, and a
#: reconcile mostly waits on one API round trip (bench/reconciler.py, a flood of 500 admissions:
#: p99 admission -> start 360-520 ms with 4 workers, 60-220 ms with 16).
DEFAULT_RECONCILE_CONCURRENCY: Final = 16


class ControllerSettings(_ConfigModel):
    """controller-runtime's ``ControllerConfigurationSpec`` (Kueue's ``controller`` section).

    ``groupKindConcurrency`` is honoured for the job kinds kueue-bridge reconciles: the key is the
    kind's ``GroupKind.String()`` (``Job.batch``, ``JobSet.jobset.x-k8s.io``; a core kind is just
    ``Kind``), the value the number of its jobs reconciled at once. Keys for kinds reconciled by
    Kueue itself (``Workload.kueue.x-k8s.io``...) are accepted and ignored, so Kueue's own file works.
    """

    group_kind_concurrency: dict[str, Annotated[int, Field(gt=0)]] = Field(default_factory=dict)
    cache_sync_timeout: Any = None


class ClientConnection(_ConfigModel):
    qps: float = 300.0
    burst: int = 500


class Metrics(_ConfigModel):
    bind_address: str = ":8443"
    enable_cluster_queue_resources: Any = None
    local_queue_metrics: Any = None
    custom_labels: Any = None


class Health(_ConfigModel):
    health_probe_bind_address: str = ":8081"
    readiness_endpoint_name: str = "readyz"
    liveness_endpoint_name: str = "healthz"


class KueueBridgeSettings(_ConfigModel):
    """The extension section: what kueue-bridge needs and Kueue's format has no field for."""

    multi_kueue_controller_names: tuple[str, ...] = Field(default=(MULTIKUEUE_CONTROLLER_NAME,), strict=False)
    field_manager: str = "kueue-bridge"


# --- the document ------------------------------------------------------------------------------------
def _default_selector(namespace: str) -> dict[str, Any]:
    expression = {"key": NAMESPACE_NAME_LABEL, "operator": "NotIn", "values": [KUBE_SYSTEM, namespace]}
    return {"matchExpressions": [expression]}


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
        value[selector_key] = _default_selector(namespace)
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
    kind: str = CONFIG_KIND
    namespace: str = DEFAULT_NAMESPACE
    manage_jobs_without_queue_name: bool = False
    managed_jobs_namespace_selector: LabelSelector = Field(
        default_factory=lambda: LabelSelector.model_validate(_default_selector(DEFAULT_NAMESPACE))
    )
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
    kueue_bridge: KueueBridgeSettings = Field(default_factory=KueueBridgeSettings)
    # Kueue-only sections: accepted so Kueue's own file is a valid start, never acted on.
    pprof_bind_address: Any = None
    fair_sharing: Any = None
    admission_fair_sharing: Any = None
    resources: Any = None
    object_retention_policies: Any = None
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

    def reconcile_concurrency(self, gvk: GroupVersionKind) -> int:
        """How many jobs of ``gvk`` are reconciled at once (``controller.groupKindConcurrency``)."""
        key = f"{gvk.kind}.{gvk.group}" if gvk.group else gvk.kind
        return self.controller.group_kind_concurrency.get(key, DEFAULT_RECONCILE_CONCURRENCY)

    def managed_kinds(self) -> list[ManagedKind]:
        """Every kind kueue-bridge manages: built-ins first (config order), then declarative ones."""
        kinds: dict[GroupVersionKind, ManagedKind] = {}
        for name in self.integrations.frameworks:
            gvk = BUILTIN_FRAMEWORKS[name]
            kinds.setdefault(gvk, ManagedKind(gvk, guess_plural(gvk.kind), name, None))
        by_kind = {gvk: name for name, gvk in BUILTIN_FRAMEWORKS.items()}
        for entry in self.integrations.external_frameworks:
            external = entry.gvk
            if external is None:  # pragma: no cover - rejected by validation
                continue
            resource = entry.resource or guess_plural(external.kind)
            kinds.setdefault(external, ManagedKind(external, resource, by_kind.get(external), entry.adapter))
        return list(kinds.values())


@dataclass(frozen=True)
class ManagedKind:
    """One kind to reconcile: ``builtin`` names its adapter, else ``adapter`` describes it."""

    gvk: GroupVersionKind
    resource: str
    builtin: str | None
    adapter: DeclarativeAdapterSpec | None


# --- Kueue's validation rules ------------------------------------------------------------------------
class ConfigIssue(NamedTuple):
    """One problem: ``path`` is the field path (``a.b[0].c``; empty for the whole document)."""

    path: str
    message: str


@dataclass
class _Sections:
    """Parsed sections; ``None`` where the section itself failed structural validation."""

    namespace: str | None = None
    selector: LabelSelector | None = None
    integrations: Integrations | None = None
    wait_for_pods_ready: WaitForPodsReady | None = None
    multi_kueue: MultiKueue | None = None
    webhook: Webhook | None = None
    internal_cert_management: InternalCertManagement | None = None
    leader_election: LeaderElection | None = None
    client_connection: ClientConnection | None = None
    metrics: Metrics | None = None
    health: Health | None = None
    kueue_bridge: KueueBridgeSettings | None = None

    @classmethod
    def of(cls, config: Configuration) -> _Sections:
        fields = {name: getattr(config, name) for name in cls.__dataclass_fields__ if name != "selector"}
        return cls(selector=config.managed_jobs_namespace_selector, **fields)


def validate_configuration(config: Configuration) -> list[ConfigIssue]:
    """Kueue's semantic rules for an already-parsed configuration (empty list when valid)."""
    return _rule_issues(_Sections.of(config))


def _rule_issues(sections: _Sections) -> list[ConfigIssue]:
    issues: list[ConfigIssue] = []
    for rule in (
        _wait_for_pods_ready_rules,
        _integration_rules,
        _multikueue_rules,
        _cert_rules,
        _namespace_rules,
        _process_rules,
        _bridge_rules,
    ):
        issues.extend(rule(sections))
    return issues


def _name_issues(path: str, value: str, errors: list[str]) -> Iterator[ConfigIssue]:
    if errors:
        yield ConfigIssue(path, f'Invalid value: "{value}": {",".join(errors)}')


def _wait_for_pods_ready_rules(s: _Sections) -> Iterator[ConfigIssue]:
    wfpr = s.wait_for_pods_ready
    if wfpr is None:
        return
    for field, value in (("timeout", wfpr.timeout), ("recoveryTimeout", wfpr.recovery_timeout)):
        if value is not None and value < timedelta(0):
            yield ConfigIssue(
                f"waitForPodsReady.{field}", f"Invalid value: {format_go_duration(value)}: {_NEGATIVE}"
            )
    strategy, path = wfpr.requeuing_strategy, "waitForPodsReady.requeuingStrategy"
    if strategy.timestamp not in ("Creation", "Eviction"):
        yield ConfigIssue(f"{path}.timestamp", _not_supported(strategy.timestamp, ["Creation", "Eviction"]))
    for field, number in (
        ("backoffLimitCount", strategy.backoff_limit_count),
        ("backoffBaseSeconds", strategy.backoff_base_seconds),
        ("backoffMaxSeconds", strategy.backoff_max_seconds),
    ):
        if number is not None and number < 0:
            yield ConfigIssue(f"{path}.{field}", f"Invalid value: {number}: {_NEGATIVE}")


def _integration_rules(s: _Sections) -> Iterator[ConfigIssue]:
    integrations = s.integrations
    if integrations is None:
        return
    if not integrations.frameworks and not integrations.external_frameworks:
        yield ConfigIssue("integrations.frameworks", "Required value: cannot be empty")
    managed: set[GroupVersionKind] = set()
    for index, name in enumerate(integrations.frameworks):
        path = f"integrations.frameworks[{index}]"
        if name in KUEUE_ONLY_FRAMEWORKS:
            yield ConfigIssue(
                path, f'Unsupported value: "{name}": kueue-bridge has no adapter for this Kueue framework'
            )
        elif name not in BUILTIN_FRAMEWORKS:
            yield ConfigIssue(path, _not_supported(name, BUILTIN_FRAMEWORKS))
        elif BUILTIN_FRAMEWORKS[name] in managed:
            yield ConfigIssue(path, f'Duplicate value: "{name}"')
        else:
            managed.add(BUILTIN_FRAMEWORKS[name])
    builtin_kinds = {gvk: name for name, gvk in BUILTIN_FRAMEWORKS.items()}
    for index, entry in enumerate(integrations.external_frameworks):
        path, gvk = f"integrations.externalFrameworks[{index}]", entry.gvk
        name_path = path if entry.adapter is None and entry.resource is None else f"{path}.name"
        if gvk is None:
            yield ConfigIssue(
                name_path, f"Invalid value: \"{entry.name}\": must be format, 'Kind.version.group.com'"
            )
            continue
        if gvk in managed:
            yield ConfigIssue(name_path, f'Duplicate value: "{entry.name}"')
            continue
        managed.add(gvk)
        if entry.adapter is None and gvk not in builtin_kinds:
            known = ", ".join(_kind_arg(kind) for kind in builtin_kinds)
            yield ConfigIssue(
                path + ("" if name_path == path else ".adapter"),
                f'Required value: "{entry.name}" has no built-in adapter; describe it with '
                f"{{name, adapter}} (plain names are only valid for {known})",
            )
        if entry.resource is not None:
            yield from _name_issues(
                f"{path}.resource", entry.resource, dns1123_subdomain_errors(entry.resource)
            )
    for index, key in enumerate(integrations.label_keys_to_copy):
        yield from _name_issues(f"integrations.labelKeysToCopy[{index}]", key, label_key_errors(key))


def _multikueue_rules(s: _Sections) -> Iterator[ConfigIssue]:
    mk = s.multi_kueue
    if mk is None:
        return
    for field, value in (("gcInterval", mk.gc_interval), ("workerLostTimeout", mk.worker_lost_timeout)):
        if value < timedelta(0):
            yield ConfigIssue(
                f"multiKueue.{field}", f"Invalid value: {format_go_duration(value)}: {_NEGATIVE}"
            )
    yield from _name_issues("multiKueue.origin", mk.origin, label_value_errors(mk.origin))
    builtin_adapters: set[GroupVersionKind] = set()
    if s.integrations is not None:
        builtin_adapters = {
            BUILTIN_FRAMEWORKS[n] for n in s.integrations.frameworks if n in BUILTIN_FRAMEWORKS
        }
        builtin_adapters |= {
            gvk
            for e in s.integrations.external_frameworks
            if e.adapter is None and (gvk := e.gvk) is not None
        } & set(BUILTIN_FRAMEWORKS.values())
    seen: set[GroupVersionKind] = set()
    for index, entry in enumerate(mk.external_frameworks):
        path, gvk = f"multiKueue.externalFrameworks[{index}].name", parse_kind_arg(entry.name)
        if gvk is None:
            yield ConfigIssue(
                path, f"Invalid value: \"{entry.name}\": must be in 'kind.version.group' format"
            )
            continue
        if gvk in seen:
            yield ConfigIssue(path, f'Duplicate value: "{entry.name}"')
        seen.add(gvk)
        if gvk in builtin_adapters:
            yield ConfigIssue(
                path, f'Invalid value: "{entry.name}": conflicts with a built-in MultiKueue adapter'
            )


_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")


def _cert_rules(s: _Sections) -> Iterator[ConfigIssue]:
    icm = s.internal_cert_management
    if icm is None or not icm.enable:
        return
    service = icm.webhook_service_name
    if len(service) > 63 or not _DNS1035_LABEL.match(service):
        yield ConfigIssue(
            "internalCertManagement.webhookServiceName",
            f'Invalid value: "{service}": a DNS-1035 label must consist of lower case alphanumeric characters '
            "or '-', start with an alphabetic character, and end with an alphanumeric character",
        )
    secret = icm.webhook_secret_name
    yield from _name_issues(
        "internalCertManagement.webhookSecretName", secret, dns1123_subdomain_errors(secret)
    )


def _namespace_rules(s: _Sections) -> Iterator[ConfigIssue]:
    if s.namespace is not None:
        yield from _name_issues("namespace", s.namespace, dns1123_label_errors(s.namespace))
    if s.selector is None:
        return
    prohibited = [KUBE_SYSTEM] + ([s.namespace] if s.namespace else [])
    for namespace in prohibited:
        if s.selector.matches({NAMESPACE_NAME_LABEL: namespace}):
            shown = format_selector(s.selector)
            message = f'Invalid value: "{shown}": should not match the "{namespace}" namespace'
            yield ConfigIssue("managedJobsNamespaceSelector", message)


_BIND_ADDRESS = re.compile(r"^(?P<host>\[[0-9A-Fa-f:.]+\]|[^:\[\]]*):(?P<port>[0-9]{1,5})$")


def _bind_address_issues(path: str, address: str) -> Iterator[ConfigIssue]:
    match = _BIND_ADDRESS.match(address)
    if address != "0" and (match is None or int(match.group("port")) > 65535):
        yield ConfigIssue(
            path, f'Invalid value: "{address}": must be host:port with a port in 0-65535, or "0" to disable'
        )


def _process_rules(s: _Sections) -> Iterator[ConfigIssue]:
    if s.webhook is not None and not 1 <= s.webhook.port <= 65535:
        yield ConfigIssue(
            "webhook.port", f"Invalid value: {s.webhook.port}: must be between 1 and 65535, inclusive"
        )
    if s.metrics is not None:
        yield from _bind_address_issues("metrics.bindAddress", s.metrics.bind_address)
    if s.health is not None:
        yield from _bind_address_issues("health.healthProbeBindAddress", s.health.health_probe_bind_address)
    if s.client_connection is not None:
        if s.client_connection.qps <= 0:
            yield ConfigIssue(
                "clientConnection.qps", f"Invalid value: {s.client_connection.qps:g}: {_NOT_POSITIVE}"
            )
        if s.client_connection.burst <= 0:
            yield ConfigIssue(
                "clientConnection.burst", f"Invalid value: {s.client_connection.burst}: {_NOT_POSITIVE}"
            )
    le = s.leader_election
    if le is None or not le.leader_elect:
        return
    for field, value in (
        ("leaseDuration", le.lease_duration),
        ("renewDeadline", le.renew_deadline),
        ("retryPeriod", le.retry_period),
    ):
        if value <= timedelta(0):
            yield ConfigIssue(
                f"leaderElection.{field}", f"Invalid value: {format_go_duration(value)}: {_NOT_POSITIVE}"
            )
    if le.lease_duration <= le.renew_deadline:
        yield ConfigIssue(
            "leaderElection.leaseDuration",
            f"Invalid value: {format_go_duration(le.renew_deadline)}: LeaseDuration must be greater than RenewDeadline",
        )
    if le.renew_deadline <= le.retry_period * 1.2:
        yield ConfigIssue(
            "leaderElection.renewDeadline",
            f"Invalid value: {format_go_duration(le.renew_deadline)}: "
            "RenewDeadline must be greater than retryPeriod*JitterFactor (1.2)",
        )
    if le.resource_lock != "leases":
        yield ConfigIssue("leaderElection.resourceLock", _not_supported(le.resource_lock, ["leases"]))
    yield from _name_issues(
        "leaderElection.resourceName", le.resource_name, dns1123_subdomain_errors(le.resource_name)
    )


def _bridge_rules(s: _Sections) -> Iterator[ConfigIssue]:
    bridge = s.kueue_bridge
    if bridge is None:
        return
    names = bridge.multi_kueue_controller_names
    if not names:
        yield ConfigIssue("kueueBridge.multiKueueControllerNames", "Required value: cannot be empty")
    for index, name in enumerate(names):
        path = f"kueueBridge.multiKueueControllerNames[{index}]"
        if name in names[:index]:
            yield ConfigIssue(path, f'Duplicate value: "{name}"')
        yield from _name_issues(path, name, label_key_errors(name))
    if not bridge.field_manager or len(bridge.field_manager) > 128:
        yield ConfigIssue(
            "kueueBridge.fieldManager",
            f'Invalid value: "{bridge.field_manager}": must be 1 to 128 characters',
        )


# --- loading -----------------------------------------------------------------------------------------
class ConfigError(ValueError):
    """The configuration is invalid; ``errors`` lists every problem as ``(field path, message)``."""

    def __init__(self, source: str, errors: list[ConfigIssue]) -> None:
        self.source = source
        self.errors = errors
        super().__init__("\n".join(self.lines()))

    def lines(self) -> list[str]:
        """One ``<source>: <path>: <message>`` line per problem (no path for document-level ones)."""
        return [f"{self.source}: {f'{p}: ' if p else ''}{m}" for p, m in self.errors]


class _UniqueKeyLoader(yaml.SafeLoader):
    """PyYAML keeps the last of two equal keys; Kubernetes' strict decoding refuses them, so do we."""


def _construct_unique_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode) -> dict[Any, Any]:
    loader.flatten_mapping(node)
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node)
        if isinstance(key, str | int | float | bool) and key in seen:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping",
                node.start_mark,
                f"found duplicate key {key!r}",
                key_node.start_mark,
            )
        if isinstance(key, str | int | float | bool):
            seen.add(key)
    return loader.construct_mapping(node)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_unique_mapping)


def _load_yaml(text: str) -> Any:
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
        detail = "; ".join(part for part in (exc.context, exc.problem) if part)
        raise _DocumentError(f"invalid YAML at {where}{detail}") from None
    except yaml.YAMLError as exc:
        raise _DocumentError(f"invalid YAML: {exc}") from None


class _DocumentError(Exception):
    pass


_TYPE_NAMES: Final = {
    "string_type": "a string",
    "int_type": "an integer",
    "int_from_float": "an integer",
    "float_type": "a number",
    "bool_type": "a boolean",
    "dict_type": "an object",
    "model_type": "an object",
    "tuple_type": "a list",
    "list_type": "a list",
}


def _yaml_type(value: object) -> str:
    for kind, name in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string")):
        if isinstance(value, kind):
            return name
    return {list: "list", dict: "object", type(None): "null"}.get(type(value), type(value).__name__)


_FIELD_NAME = re.compile(r"^[a-z][A-Za-z0-9]*$")
_SCALAR_BRANCHES: Final = frozenset({"str", "int", "float", "bool"})


def _issue_from_pydantic(error: Any, document: object) -> ConfigIssue | None:
    """Translate one pydantic error; ``None`` for a union branch that does not fit the input.

    The path is rebuilt by walking the input along pydantic's ``loc``: list positions become
    ``[i]``, keys ``.key``; anything else is a union branch tag (``str``, ``NameSource``,
    ``function-after[...]``), dropped from the path -- and the whole error is dropped when the
    branch does not match the shape of the input (a "must be a string" for an object, or vice versa).
    """
    path, node = "", document
    loc = error["loc"]
    for part in loc:
        if isinstance(part, int) and isinstance(node, list):
            path, node = f"{path}[{part}]", node[part] if part < len(node) else None
        elif isinstance(node, dict) and part in node:
            path, node = f"{path}.{part}" if path else str(part), node[part]
        elif isinstance(part, str) and (part in _SCALAR_BRANCHES or not _FIELD_NAME.match(part)):
            if (part in _SCALAR_BRANCHES) == isinstance(node, dict):
                return None
        else:
            path, node = f"{path}.{part}" if path else str(part), None
    kind, message = error["type"], error["msg"]
    if kind == "extra_forbidden":
        message = f'unknown field "{loc[-1]}"'
    elif kind in _TYPE_NAMES:
        message = f"must be {_TYPE_NAMES[kind]}, not {_yaml_type(error['input'])}"
    elif kind == "value_error":
        message = message.removeprefix("Value error, ")
    elif kind == "greater_than" and (error.get("ctx") or {}).get("gt") == 0:
        message = f"Invalid value: {error['input']}: {_NOT_POSITIVE}"
    return ConfigIssue(path, message)


def _pydantic_issues(exc: ValidationError, document: object) -> list[ConfigIssue]:
    issues = [_issue_from_pydantic(error, document) for error in exc.errors()]
    return list(dict.fromkeys(issue for issue in issues if issue is not None))


def _recover_sections(document: dict[str, Any]) -> _Sections:
    """Parse each top-level section on its own, so the rules of the sound ones run despite errors elsewhere."""
    sections = _Sections()
    for name, field in Configuration.model_fields.items():
        target = "selector" if name == "managed_jobs_namespace_selector" else name
        alias = field.alias or name
        if target not in _Sections.__dataclass_fields__ or alias not in document:
            continue
        try:
            probe = Configuration.model_validate({alias: document[alias]}, by_name=False)
        except ValidationError:
            continue  # a broken section's rules would run on defaults, reporting phantom problems
        setattr(sections, target, getattr(probe, name))
    return sections


def parse_config(text: str, *, source: str, default_namespace: str = DEFAULT_NAMESPACE) -> Configuration:
    """Parse, default and validate a configuration document; raises ``ConfigError`` listing every problem.

    ``default_namespace`` is used when the file sets no ``namespace`` (Kueue reads the service-account
    namespace file here; pass its content from the process entry point).
    """
    try:
        document = _load_yaml(text)
    except _DocumentError as exc:
        raise ConfigError(source, [ConfigIssue("", str(exc))]) from None
    if document is None:
        raise ConfigError(source, [ConfigIssue("", "the configuration is empty")])
    if not isinstance(document, dict):
        message = f"the configuration must be a mapping (apiVersion, kind, ...), not a {_yaml_type(document)}"
        raise ConfigError(source, [ConfigIssue("", message)])
    if document.get("namespace") is None:
        document["namespace"] = default_namespace
    document = _fill_dependent_defaults(document)
    assert isinstance(document, dict)
    for required in ("apiVersion", "kind"):
        if required not in document:
            raise ConfigError(source, [ConfigIssue(required, "Field required")])
    try:
        config = Configuration.model_validate(document, by_name=False)
    except ValidationError as exc:
        issues = _pydantic_issues(exc, document) + _rule_issues(_recover_sections(document))
        raise ConfigError(source, issues) from None
    if issues := validate_configuration(config):
        raise ConfigError(source, issues)
    return config


def load_config(path: str | Path, *, default_namespace: str = DEFAULT_NAMESPACE) -> Configuration:
    """Read and parse a configuration file; an unreadable file is a ``ConfigError`` too."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(str(path), [ConfigIssue("", f"cannot read the configuration: {exc}")]) from None
    return parse_config(text, source=str(path), default_namespace=default_namespace)


def default_config(*, namespace: str = DEFAULT_NAMESPACE) -> Configuration:
    """The configuration an empty file (only apiVersion and kind) would give."""
    return parse_config(
        f"apiVersion: {CONFIG_API_VERSION}\nkind: {CONFIG_KIND}\n",
        source="<default>",
        default_namespace=namespace,
    )


def dump_config(config: Configuration) -> dict[str, Any]:
    """The configuration as wire data: camelCase, Go durations, every default present, no nulls."""
    return config.model_dump(mode="json", by_alias=True, exclude_none=True)
