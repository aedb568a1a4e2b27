"""Kueue's semantic validation rules (``pkg/config/validation.go``) over a decoded ``Configuration``.

Every rule yields ``ConfigIssue(path, message)`` with Kueue's messages; the rules of a section run
even when another section was structurally broken (``_Sections`` holds what could be recovered).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from typing import NamedTuple

from shared.config.model import (
    _NEGATIVE,
    _NOT_POSITIVE,
    INCREMENTAL_DISPATCHER,
    KUEUE_ONLY_FRAMEWORKS,
    ClientConnection,
    Configuration,
    Health,
    Integrations,
    InternalCertManagement,
    KueueBridgeSettings,
    LeaderElection,
    Metrics,
    MultiKueue,
    ObjectRetentionPolicies,
    WaitForPodsReady,
    Webhook,
    _not_supported,
    parse_kind_arg,
)
from shared.durations import format_go_duration
from shared.frameworks.builtin_kinds import BUILTIN_KIND_BY_GVK, BUILTIN_KINDS
from shared.kube import GroupVersionKind
from shared.labelselector import KUBE_SYSTEM, NAMESPACE_NAME_LABEL, LabelSelector, format_selector
from shared.validation_k8s import is_dns1123_label, is_dns1123_subdomain, is_label_key, is_label_value

__all__ = [
    "ConfigIssue",
    "validate_configuration",
]


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
    object_retention_policies: ObjectRetentionPolicies | None = None
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
        _retention_rules,
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
        elif name not in BUILTIN_KINDS:
            yield ConfigIssue(path, _not_supported(name, BUILTIN_KINDS))
        elif BUILTIN_KINDS[name].gvk in managed:
            yield ConfigIssue(path, f'Duplicate value: "{name}"')
        else:
            managed.add(BUILTIN_KINDS[name].gvk)
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
        if entry.adapter is None and gvk not in BUILTIN_KIND_BY_GVK:
            known = ", ".join(kind.kind_arg for kind in BUILTIN_KIND_BY_GVK)
            yield ConfigIssue(
                path + ("" if name_path == path else ".adapter"),
                f'Required value: "{entry.name}" has no built-in adapter; describe it with '
                f"{{name, adapter}} (plain names are only valid for {known})",
            )
        if entry.resource is not None:
            yield from _name_issues(f"{path}.resource", entry.resource, is_dns1123_subdomain(entry.resource))
    for index, key in enumerate(integrations.label_keys_to_copy):
        yield from _name_issues(f"integrations.labelKeysToCopy[{index}]", key, is_label_key(key))


def _multikueue_rules(s: _Sections) -> Iterator[ConfigIssue]:
    mk = s.multi_kueue
    if mk is None:
        return
    for field, value in (("gcInterval", mk.gc_interval), ("workerLostTimeout", mk.worker_lost_timeout)):
        if value < timedelta(0):
            yield ConfigIssue(
                f"multiKueue.{field}", f"Invalid value: {format_go_duration(value)}: {_NEGATIVE}"
            )
    yield from _name_issues("multiKueue.origin", mk.origin, is_label_value(mk.origin))
    builtin_adapters: set[GroupVersionKind] = set()
    if s.integrations is not None:
        builtin_adapters = {BUILTIN_KINDS[n].gvk for n in s.integrations.frameworks if n in BUILTIN_KINDS}
        builtin_adapters |= {
            gvk
            for e in s.integrations.external_frameworks
            if e.adapter is None and (gvk := e.gvk) is not None
        } & set(BUILTIN_KIND_BY_GVK)
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
    idc = mk.incremental_dispatcher_config
    if idc is not None:
        path = "multiKueue.incrementalDispatcherConfig"
        if mk.dispatcher_name != INCREMENTAL_DISPATCHER:
            shown = "{}" if idc.step_size is None else f"{{stepSize: {idc.step_size}}}"
            yield ConfigIssue(
                path,
                f"Invalid value: {shown}: incrementalDispatcherConfig is only valid when dispatcherName "
                "is set to the incremental dispatcher",
            )
        if idc.step_size is not None and idc.step_size < 1:
            yield ConfigIssue(
                f"{path}.stepSize", f"Invalid value: {idc.step_size}: must be greater than or equal to 1"
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
    yield from _name_issues("internalCertManagement.webhookSecretName", secret, is_dns1123_subdomain(secret))


def _namespace_rules(s: _Sections) -> Iterator[ConfigIssue]:
    if s.namespace is not None:
        yield from _name_issues("namespace", s.namespace, is_dns1123_label(s.namespace))
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


def _retention_rules(s: _Sections) -> Iterator[ConfigIssue]:
    """Kueue's ``validateObjectRetentionPolicies``: neither duration may be negative.

    The two messages differ as Kueue's do: ``afterFinished`` is reported as a duration (``-5m0s``),
    ``afterDeactivatedByKueue`` as its string, which field errors quote (``"-5m0s"``).
    """
    workloads = s.object_retention_policies.workloads if s.object_retention_policies else None
    if workloads is None:
        return
    path = "objectRetentionPolicies.workloads"
    finished, deactivated = workloads.after_finished, workloads.after_deactivated_by_kueue
    if finished is not None and finished < timedelta(0):
        yield ConfigIssue(
            f"{path}.afterFinished", f"Invalid value: {format_go_duration(finished)}: {_NEGATIVE}"
        )
    if deactivated is not None and deactivated < timedelta(0):
        yield ConfigIssue(
            f"{path}.afterDeactivatedByKueue",
            f'Invalid value: "{format_go_duration(deactivated)}": {_NEGATIVE}',
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
        "leaderElection.resourceName", le.resource_name, is_dns1123_subdomain(le.resource_name)
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
        yield from _name_issues(path, name, is_label_key(name))
    controller = bridge.multi_kueue.controller_name
    yield from _name_issues("kueueBridge.multiKueue.controllerName", controller, is_label_key(controller))
    if not bridge.field_manager or len(bridge.field_manager) > 128:
        yield ConfigIssue(
            "kueueBridge.fieldManager",
            f'Invalid value: "{bridge.field_manager}": must be 1 to 128 characters',
        )
