"""Is Kueue installed, which version and APIs, and which kinds does Kueue itself manage?

**Kueue's Configuration** is read from its ConfigMap (``<kueue namespace>/kueue-manager-config``,
key ``controller_manager_config.yaml``, what Kueue's kustomize and Helm manifests create), with
Kueue's defaulting (an empty ``integrations.frameworks`` is ``[batch/job]``; the ``MultiKueue``
gate is on unless switched off). When the ConfigMap cannot be read, the evidence is **Kueue's
registered job webhooks**: ``m<kind>.kb.io`` covering a kind means Kueue's integration for it is
served. How sure that is depends on why the ConfigMap could not be read:

* **not found** (Kueue configured from a file, as the real-cluster kit does): installs that do not
  use Kueue's manifests register the webhooks of the enabled integrations, so a registered webhook
  is a ``fail``;
* **forbidden**: the ConfigMap exists but this identity may not read it; Kueue's own manifests
  register every integration's webhook whether or not it is enabled (Kueue answers a disabled one
  with a no-op webhook), so a registered webhook is only a ``warn``, and so is the
  ``externalFrameworks`` list that cannot be seen.

The two-controllers findings (a kind kueue-bridge manages that is also Kueue's enabled built-in
integration; our MultiKueue controller name equal to one of Kueue's own AdmissionCheck controllers
while Kueue runs it) are ``conflict`` findings: the components refuse to start on them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import yaml

from shared.component_access import KUEUE_CONFIG_KEY, KUEUE_CONFIG_MAP
from shared.config import Configuration, ManagedKind
from shared.constants import API_GROUP, MULTIKUEUE_CONTROLLER_NAME
from shared.kube import (
    ApiError,
    Forbidden,
    GroupVersionKind,
    KubeClient,
    KubeError,
    NotFound,
    UnknownKindError,
)
from shared.kube.kinds import CONFIG_MAP_GVK, DEPLOYMENT_GVK, MUTATING_WEBHOOK_CONFIGURATION_GVK
from shared.kueue_integrations import KueueIntegration, kueue_integration_for
from shared.preflight.findings import Finding, Verdict

__all__ = [
    "CONFIG_MAP_GVK",
    "DEPLOYMENT_GVK",
    "KUEUE_DEPLOYMENT",
    "KUEUE_OWN_CHECK_CONTROLLERS",
    "MUTATING_WEBHOOK_CONFIGURATION_GVK",
    "KueueSetup",
    "RegisteredWebhook",
    "check_integrations",
    "check_kueue_installed",
    "check_multikueue_controller",
    "read_kueue_setup",
]

KUEUE_DEPLOYMENT: Final = "kueue-controller-manager"
#: AdmissionCheck controllers Kueue runs itself -> the feature gate that turns it off (None: always on)
KUEUE_OWN_CHECK_CONTROLLERS: Final[dict[str, str | None]] = {
    MULTIKUEUE_CONTROLLER_NAME: "MultiKueue",
    "kueue.x-k8s.io/provisioning-request": None,
}
_DEFAULT_FRAMEWORKS: Final = ("batch/job",)
_KUEUE_KINDS: Final = ("Workload", "ClusterQueue", "LocalQueue", "ResourceFlavor", "AdmissionCheck")
Source = Literal["configmap", "webhooks"]


@dataclass(frozen=True)
class RegisteredWebhook:
    """A registered mutating webhook: its configuration, name and the (group, resource) it covers."""

    configuration: str
    name: str
    resources: frozenset[tuple[str, str]]

    def covers(self, group: str, resource: str) -> bool:
        return bool({(group, resource), (group, "*"), ("*", resource), ("*", "*")} & self.resources)


@dataclass(frozen=True)
class KueueSetup:
    """What is known of Kueue's own configuration (see the module docstring)."""

    source: Source
    #: where it was read, or why the ConfigMap could not be
    detail: str
    frameworks: frozenset[str] | None = None
    external_frameworks: frozenset[str] | None = None
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    webhooks: tuple[RegisteredWebhook, ...] = ()
    #: the ConfigMap exists but could not be read (webhook evidence is then only a warning)
    forbidden: bool = False
    #: the webhooks could not be listed either
    webhooks_unknown: str = ""

    def feature_gate(self, name: str, *, default: bool) -> bool:
        return self.feature_gates.get(name, default)

    def kueue_webhooks_for(self, integration: KueueIntegration) -> list[RegisteredWebhook]:
        names = set(integration.webhook_names)
        return [
            hook
            for hook in self.webhooks
            if hook.name in names and hook.covers(integration.group, integration.plural)
        ]


def _rules(hook: Mapping[str, Any]) -> frozenset[tuple[str, str]]:
    covered: set[tuple[str, str]] = set()
    for rule in hook.get("rules") or []:
        if not isinstance(rule, dict):
            continue
        for group in rule.get("apiGroups") or []:
            for resource in rule.get("resources") or []:
                covered.add((str(group), str(resource)))
    return frozenset(covered)


async def _webhooks(client: KubeClient) -> tuple[tuple[RegisteredWebhook, ...], str]:
    try:
        configurations = (await client.list_all(MUTATING_WEBHOOK_CONFIGURATION_GVK)).items
    except KubeError as exc:
        return (), f"cannot list MutatingWebhookConfigurations ({_short(exc)})"
    found = [
        RegisteredWebhook(
            configuration=str((configuration.get("metadata") or {}).get("name")),
            name=str(hook.get("name")),
            resources=_rules(hook),
        )
        for configuration in configurations
        for hook in configuration.get("webhooks") or []
        if isinstance(hook, dict)
    ]
    return tuple(found), ""


def _short(exc: BaseException) -> str:
    if isinstance(exc, ApiError):
        return f"{exc.reason or exc.code}: {exc.message}" if exc.message else f"{exc.reason or exc.code}"
    return str(exc)


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _strings(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    names = []
    for item in value:
        if isinstance(item, str):
            names.append(item)
        elif isinstance(item, dict) and isinstance(item.get("name"), str):
            names.append(item["name"])
    return names


async def read_kueue_setup(client: KubeClient, *, kueue_namespace: str) -> KueueSetup:
    """Kueue's Configuration from its ConfigMap, else the evidence of its registered webhooks."""
    where = f"ConfigMap {kueue_namespace}/{KUEUE_CONFIG_MAP}"
    webhooks, webhooks_unknown = await _webhooks(client)
    try:
        config_map = await client.get(CONFIG_MAP_GVK, KUEUE_CONFIG_MAP, namespace=kueue_namespace)
    except NotFound:
        return KueueSetup(
            "webhooks", f"{where} not found", webhooks=webhooks, webhooks_unknown=webhooks_unknown
        )
    except Forbidden as exc:
        return KueueSetup(
            "webhooks",
            f"{where} is not readable ({_short(exc)})",
            webhooks=webhooks,
            forbidden=True,
            webhooks_unknown=webhooks_unknown,
        )
    text = (config_map.get("data") or {}).get(KUEUE_CONFIG_KEY)
    try:
        document = yaml.safe_load(text) if isinstance(text, str) else None
    except yaml.YAMLError as exc:
        document = None
        text = f"not YAML ({str(exc).splitlines()[0]})"
    if not isinstance(document, dict):
        return KueueSetup(
            "webhooks",
            f"{where} has no readable key {KUEUE_CONFIG_KEY}",
            webhooks=webhooks,
            forbidden=True,
            webhooks_unknown=webhooks_unknown,
        )
    integrations: dict[str, Any] = _mapping(document.get("integrations"))
    frameworks = _strings(integrations.get("frameworks")) or list(_DEFAULT_FRAMEWORKS)
    gates: dict[str, Any] = _mapping(document.get("featureGates"))
    return KueueSetup(
        "configmap",
        where,
        frameworks=frozenset(frameworks),
        external_frameworks=frozenset(_strings(integrations.get("externalFrameworks"))),
        feature_gates={str(k): v for k, v in gates.items() if isinstance(v, bool)},
        webhooks=webhooks,
        webhooks_unknown=webhooks_unknown,
    )


# --- Kueue installed ---------------------------------------------------------------------------------
async def _served_versions(client: KubeClient) -> list[str] | None:
    groups = await client.mapper.server_groups()
    return groups.get(API_GROUP)


async def _version(client: KubeClient, *, kueue_namespace: str) -> str:
    try:
        deployment = await client.get(DEPLOYMENT_GVK, KUEUE_DEPLOYMENT, namespace=kueue_namespace)
    except (NotFound, UnknownKindError):
        return f"version unknown: no Deployment {kueue_namespace}/{KUEUE_DEPLOYMENT}"
    except KubeError as exc:
        return (
            f"version unknown: Deployment {kueue_namespace}/{KUEUE_DEPLOYMENT} not readable ({_short(exc)})"
        )
    containers = (((deployment.get("spec") or {}).get("template") or {}).get("spec") or {}).get("containers")
    images = [str(c.get("image")) for c in containers or [] if isinstance(c, dict) and c.get("image")]
    image = next((i for i in images if "kueue" in i.rsplit("/", 1)[-1]), images[0] if images else "")
    tag = image.rsplit(":", 1)[-1] if ":" in image.rsplit("/", 1)[-1] else "unknown"
    status = deployment.get("status") or {}
    ready = f"{status.get('readyReplicas') or 0}/{(deployment.get('spec') or {}).get('replicas', 1)} ready"
    return f"version {tag} (image {image} of Deployment {kueue_namespace}/{KUEUE_DEPLOYMENT}, {ready})"


async def check_kueue_installed(
    client: KubeClient, *, kueue_namespace: str, setup: KueueSetup
) -> list[Finding]:
    """Kueue's API group and the versions it serves, its resources in v1beta2, its version, its webhooks."""
    check = "kueue installed"
    versions = await _served_versions(client)
    if not versions:
        return [
            Finding(
                check,
                Verdict.FAIL,
                f"{API_GROUP} is not served: Kueue is not installed",
                "install Kueue (its CRDs and controller manager, v0.15 or later) before kueue-bridge",
                conflict=False,
            )
        ]
    if "v1beta2" not in versions:
        return [
            Finding(
                check,
                Verdict.FAIL,
                f"Kueue serves {API_GROUP} {', '.join(versions)} only; kueue-bridge writes v1beta2",
                "upgrade Kueue to v0.15 or later (the first release serving kueue.x-k8s.io/v1beta2)",
            )
        ]
    missing = []
    for kind in _KUEUE_KINDS:
        try:
            await client.mapper.resolve(GroupVersionKind(API_GROUP, "v1beta2", kind))
        except UnknownKindError:
            missing.append(kind)
    version = await _version(client, kueue_namespace=kueue_namespace)
    served = f"{API_GROUP} {', '.join(versions)}"
    findings = [
        Finding(check, Verdict.OK, f"Kueue serves {served}; {version}")
        if not missing
        else Finding(
            check,
            Verdict.FAIL,
            f"Kueue serves {served} but not {', '.join(missing)} in v1beta2; {version}",
            "install all of Kueue's CRDs of one release (kubectl apply --server-side -f the release's manifests)",
        )
    ]
    if not setup.webhooks_unknown and not any(hook.name == "mworkload.kb.io" for hook in setup.webhooks):
        findings.append(
            Finding(
                "kueue webhooks",
                Verdict.WARN,
                "Kueue's Workload webhook (mworkload.kb.io) is not registered: is Kueue's controller "
                "manager running?",
                f"start Kueue's controller manager (Deployment {kueue_namespace}/{KUEUE_DEPLOYMENT}); it "
                "registers its webhooks",
            )
        )
    return findings


# --- two controllers for one kind ------------------------------------------------------------------
def _integration_findings(kind: ManagedKind, setup: KueueSetup) -> list[Finding]:
    name = kind.gvk.kind_arg
    check = f"kueue integration {name}"
    integration = kueue_integration_for(kind.gvk.group, kind.gvk.kind)
    findings: list[Finding] = []
    remove_ours = f"or stop managing {name} in kueue-bridge's configuration"
    if (
        integration is not None
        and setup.source == "configmap"
        and integration.framework in (setup.frameworks or ())
    ):
        findings.append(
            Finding(
                check,
                Verdict.FAIL,
                f"Kueue's own {integration.framework} integration is enabled ({setup.detail}: "
                f"integrations.frameworks): Kueue's job reconciler and kueue-bridge's would both manage "
                f"{name}",
                f"remove {integration.framework} from Kueue's integrations.frameworks and restart Kueue, "
                f"{remove_ours}",
                kinds=(name,),
                conflict=True,
            )
        )
    elif integration is not None and setup.source == "webhooks" and setup.kueue_webhooks_for(integration):
        hooks = ", ".join(f"{h.name} in {h.configuration}" for h in setup.kueue_webhooks_for(integration))
        if setup.forbidden:
            findings.append(
                Finding(
                    check,
                    Verdict.WARN,
                    f"Kueue's {integration.framework} webhook is registered ({hooks}) and {setup.detail}: "
                    "Kueue's manifests register it even when the integration is off, so it may be a "
                    "no-op, or Kueue may manage this kind too",
                    f"make sure {integration.framework} is not in Kueue's integrations.frameworks (grant get "
                    f"on that ConfigMap to let preflight read it)",
                    kinds=(name,),
                )
            )
        else:
            findings.append(
                Finding(
                    check,
                    Verdict.FAIL,
                    f"Kueue's {integration.framework} integration is enabled (its webhook {hooks} is "
                    f"registered; {setup.detail}): Kueue's job reconciler and kueue-bridge's would both "
                    f"manage {name}",
                    f"remove {integration.framework} from Kueue's integrations.frameworks and restart Kueue, "
                    f"{remove_ours}",
                    kinds=(name,),
                    conflict=True,
                )
            )
    if findings:
        return findings
    if setup.source == "configmap":
        if name not in (setup.external_frameworks or ()):
            return [
                Finding(
                    check,
                    Verdict.FAIL,
                    f"Kueue does not list {name} under integrations.externalFrameworks ({setup.detail}): "
                    "Kueue does not know the kind as a job owner (a child job's parent, a Workload's owner)",
                    f"add {name} to Kueue's integrations.externalFrameworks (kueue-bridge manifests --part "
                    "kueue-config prints the fragment) and restart Kueue",
                    kinds=(name,),
                )
            ]
        disabled = f" and does not enable {integration.framework}" if integration is not None else ""
        return [
            Finding(check, Verdict.OK, f"Kueue lists it under externalFrameworks{disabled}", kinds=(name,))
        ]
    unknown = setup.webhooks_unknown or "no Kueue webhook for it is registered"
    return [
        Finding(
            check,
            Verdict.WARN,
            f"{setup.detail}, so whether Kueue lists {name} under externalFrameworks cannot be checked "
            f"({unknown})",
            f"make sure Kueue's Configuration lists {name} under integrations.externalFrameworks"
            + (f" and not {integration.framework} under frameworks" if integration is not None else ""),
            kinds=(name,),
        )
    ]


def check_integrations(kinds: Iterable[ManagedKind], setup: KueueSetup) -> list[Finding]:
    """For every managed kind: Kueue hands it to kueue-bridge and does not manage it itself."""
    return [finding for kind in kinds for finding in _integration_findings(kind, setup)]


def check_multikueue_controller(config: Configuration, setup: KueueSetup) -> list[Finding]:
    """Our MultiKueue controller name is not one of the AdmissionCheck controllers Kueue runs itself."""
    ours = config.kueue_bridge.multi_kueue.controller_name
    check = "multikueue controller"
    if ours not in KUEUE_OWN_CHECK_CONTROLLERS:
        return [Finding(check, Verdict.OK, f"kueue-bridge multikueue handles AdmissionChecks of {ours}")]
    gate = KUEUE_OWN_CHECK_CONTROLLERS[ours]
    if gate is not None and setup.source == "configmap" and not setup.feature_gate(gate, default=True):
        return [
            Finding(
                check,
                Verdict.OK,
                f"kueue-bridge multikueue handles {ours}; Kueue's own is off ({setup.detail}: {gate}=false)",
            )
        ]
    # a ConfigMap that does not exist means Kueue runs with a file (or its defaults): the gate is on
    known = setup.source == "configmap" or not setup.forbidden
    return [
        Finding(
            check,
            Verdict.FAIL if known or gate is None else Verdict.WARN,
            f"kueueBridge.multiKueue.controllerName is {ours}, which Kueue's own controller handles"
            + (f" (its {gate} feature gate is on: {setup.detail})" if gate is not None and known else "")
            + (
                f"; {setup.detail}; Kueue's {gate} gate is on by default"
                if gate is not None and not known
                else ""
            )
            + ": two controllers would answer the same AdmissionChecks",
            "keep kueueBridge.multiKueue.controllerName at kueue-bridge.dev/multikueue (the default)"
            + (
                f", or set featureGates: {{{gate}: false}} in Kueue's Configuration"
                if gate is not None
                else ""
            ),
            conflict=known or gate is None,
        )
    ]
