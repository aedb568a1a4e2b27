"""Is Kueue installed, which version and APIs, and which kinds does Kueue itself manage?

**Kueue's Configuration is learned the way Kueue is installed.** Kueue's Helm chart and its
kustomize release manifests both run the manager as a Deployment labelled
``control-plane: controller-manager`` (with ``app.kubernetes.io/name: kueue``), whose manager
container runs with ``--config=<path>`` and mounts that path from a ConfigMap volume
(``<release>-kueue-manager-config``, key ``controller_manager_config.yaml``, in the release's
namespace). :func:`read_kueue_setup` lists the Deployments with that label in every namespace
(Kueue's namespace first: the configured one is a hint, not a requirement), follows the first
Kueue manager's ``--config`` to its ConfigMap and reads it, with Kueue's defaulting (an empty
``integrations.frameworks`` is ``[batch/job]``; the ``MultiKueue`` gate is on unless switched off).
When no Kueue Deployment is found (Kueue run from a file, as the real-cluster kit does) it reads
``<kueue namespace>/kueue-manager-config``, where Kueue's default install puts it.

**A registered ``m<kind>.kb.io`` webhook is never evidence that an integration is on**: Kueue's
chart and manifests register every integration's webhook, and the manager answers a disabled one
with a no-op (jobframework's ``WithNoopWebhook``). So when the Configuration cannot be read the
integration findings are ``warn`` findings naming everything that was tried, and the components
start. The two-controllers findings (a kind kueue-bridge manages that is also Kueue's enabled
built-in integration; our MultiKueue controller name equal to one of Kueue's own AdmissionCheck
controllers while Kueue runs it) are ``conflict`` findings, made only on positive evidence (the
Configuration read, or a controller Kueue always runs): the components refuse to start on them.
The registered webhooks still tell whether Kueue's manager has registered itself at all
(``mworkload.kb.io``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import yaml

from shared.component_access import (
    KUEUE_CONFIG_KEY,
    KUEUE_CONFIG_MAP,
    KUEUE_MANAGER_NAME_LABEL,
    KUEUE_MANAGER_SELECTOR,
)
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
from shared.kueue_integrations import kueue_integration_for
from shared.preflight.findings import Finding, Verdict

__all__ = [
    "CONFIG_MAP_GVK",
    "DEPLOYMENT_GVK",
    "KUEUE_OWN_CHECK_CONTROLLERS",
    "MUTATING_WEBHOOK_CONFIGURATION_GVK",
    "KueueManager",
    "KueueSetup",
    "RegisteredWebhook",
    "check_integrations",
    "check_kueue_installed",
    "check_multikueue_controller",
    "kueue_manager_of",
    "read_kueue_setup",
]

#: AdmissionCheck controllers Kueue runs itself -> the feature gate that turns it off (None: always on)
KUEUE_OWN_CHECK_CONTROLLERS: Final[dict[str, str | None]] = {
    MULTIKUEUE_CONTROLLER_NAME: "MultiKueue",
    "kueue.x-k8s.io/provisioning-request": None,
}
_DEFAULT_FRAMEWORKS: Final = ("batch/job",)
_KUEUE_KINDS: Final = ("Workload", "ClusterQueue", "LocalQueue", "ResourceFlavor", "AdmissionCheck")
Source = Literal["configmap", "unknown"]


@dataclass(frozen=True)
class RegisteredWebhook:
    """A registered mutating webhook: its configuration, name and the (group, resource) it covers."""

    configuration: str
    name: str
    resources: frozenset[tuple[str, str]]


@dataclass(frozen=True)
class KueueManager:
    """Kueue's controller manager Deployment and where its ``--config`` comes from.

    ``config_map``/``config_key`` are empty when the file is not mounted from a ConfigMap;
    ``config_path`` is empty when the manager runs without ``--config`` (Kueue's defaults)."""

    namespace: str
    name: str
    image: str
    ready: str
    config_path: str = ""
    config_map: str = ""
    config_key: str = ""
    #: why the ConfigMap could not be located (a non-ConfigMap volume, no volume for the path)
    config_problem: str = ""

    @property
    def where(self) -> str:
        return f"Deployment {self.namespace}/{self.name}"


@dataclass(frozen=True)
class KueueSetup:
    """What is known of Kueue's own configuration (see the module docstring)."""

    source: Source
    #: where it was read, or everything that was tried and why it failed
    detail: str
    frameworks: frozenset[str] | None = None
    external_frameworks: frozenset[str] | None = None
    feature_gates: Mapping[str, bool] = field(default_factory=dict)
    webhooks: tuple[RegisteredWebhook, ...] = ()
    #: the webhooks could not be listed
    webhooks_unknown: str = ""
    #: Kueue's manager Deployment, when one was found
    manager: KueueManager | None = None
    #: why no manager Deployment was found (when it was not)
    manager_unknown: str = ""

    def feature_gate(self, name: str, *, default: bool) -> bool:
        return self.feature_gates.get(name, default)


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


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _strings(value: Any) -> list[str]:
    names = []
    for item in _list(value):
        if isinstance(item, str):
            names.append(item)
        elif isinstance(item, dict) and isinstance(item.get("name"), str):
            names.append(item["name"])
    return names


# --- Kueue's manager Deployment ------------------------------------------------------------------
def _config_arg(container: Mapping[str, Any]) -> str:
    """The value of ``--config`` (``--config=PATH`` or ``--config PATH``) among the container's
    command and args; empty when absent."""
    words = [str(word) for word in [*_list(container.get("command")), *_list(container.get("args"))]]
    for index, word in enumerate(words):
        if word.startswith(("--config=", "-config=")):
            return word.split("=", 1)[1]
        if word in ("--config", "-config") and index + 1 < len(words):
            return words[index + 1]
    return ""


def _config_map_of(
    pod_spec: Mapping[str, Any], container: Mapping[str, Any], path: str
) -> tuple[str, str, str]:
    """``(ConfigMap, key, problem)``: the ConfigMap key the container sees at ``path``."""
    volumes = {str(v.get("name")): v for v in _list(pod_spec.get("volumes")) if isinstance(v, dict)}
    for mount in _list(container.get("volumeMounts")):
        if not isinstance(mount, dict):
            continue
        mount_path = str(mount.get("mountPath") or "").rstrip("/")
        sub_path = str(mount.get("subPath") or "")
        if sub_path and mount_path == path.rstrip("/"):
            file_name = sub_path
        elif not sub_path and path.startswith(mount_path + "/") and "/" not in path[len(mount_path) + 1 :]:
            file_name = path[len(mount_path) + 1 :]
        else:
            continue
        volume = volumes.get(str(mount.get("name")))
        if volume is None:
            return "", "", f"{path} is mounted from volume {mount.get('name')}, which the pod does not have"
        sources = [_mapping(volume.get("configMap"))] if volume.get("configMap") else []
        sources += [
            _mapping(_mapping(source).get("configMap"))
            for source in _list(_mapping(volume.get("projected")).get("sources"))
            if _mapping(source).get("configMap")
        ]
        for source in sources:
            items = [_mapping(item) for item in _list(source.get("items"))]
            if not items:
                return str(source.get("name") or ""), file_name, ""
            for item in items:
                if item.get("path") == file_name:
                    return str(source.get("name") or ""), str(item.get("key") or ""), ""
        return "", "", f"{path} is mounted from volume {mount.get('name')}, not from a ConfigMap"
    return "", "", f"no volume is mounted at {path}"


def _is_kueue(deployment: Mapping[str, Any]) -> bool:
    """Kueue's manager: its name label, or a container image of Kueue's (``.../kueue:<tag>``)."""
    labels = _mapping(_mapping(deployment.get("metadata")).get("labels"))
    if labels.get(KUEUE_MANAGER_NAME_LABEL[0]) == KUEUE_MANAGER_NAME_LABEL[1]:
        return True
    return any(_image_name(image) == "kueue" for image in _images(deployment))


def _pod_spec(deployment: Mapping[str, Any]) -> dict[str, Any]:
    return _mapping(_mapping(_mapping(deployment.get("spec")).get("template")).get("spec"))


def _images(deployment: Mapping[str, Any]) -> list[str]:
    return [
        str(c.get("image"))
        for c in _list(_pod_spec(deployment).get("containers"))
        if isinstance(c, dict) and c.get("image")
    ]


def _image_name(image: str) -> str:
    return image.rsplit("/", 1)[-1].split("@", 1)[0].split(":", 1)[0]


def kueue_manager_of(deployment: Mapping[str, Any]) -> KueueManager:
    """What a Kueue manager Deployment says about itself (see :class:`KueueManager`)."""
    metadata = _mapping(deployment.get("metadata"))
    pod_spec = _pod_spec(deployment)
    containers = [c for c in _list(pod_spec.get("containers")) if isinstance(c, dict)]
    images = _images(deployment)
    image = next((i for i in images if _image_name(i) == "kueue"), images[0] if images else "")
    replicas = _mapping(deployment.get("spec")).get("replicas", 1)
    ready = f"{_mapping(deployment.get('status')).get('readyReplicas') or 0}/{replicas} ready"
    manager = KueueManager(
        namespace=str(metadata.get("namespace") or ""),
        name=str(metadata.get("name") or ""),
        image=image,
        ready=ready,
    )
    for container in containers:
        path = _config_arg(container)
        if path:
            config_map, key, problem = _config_map_of(pod_spec, container, path)
            return KueueManager(
                namespace=manager.namespace,
                name=manager.name,
                image=image,
                ready=ready,
                config_path=path,
                config_map=config_map,
                config_key=key,
                config_problem=problem,
            )
    return manager


async def _kueue_managers(client: KubeClient, *, kueue_namespace: str) -> tuple[list[KueueManager], str]:
    """Kueue's manager Deployments, those in ``kueue_namespace`` first; else why none was found."""
    selector = KUEUE_MANAGER_SELECTOR
    try:
        deployments = (await client.list_all(DEPLOYMENT_GVK, label_selector=selector)).items
    except Forbidden as exc:
        # may not list cluster-wide: perhaps in the hinted namespace
        try:
            deployments = (
                await client.list_all(DEPLOYMENT_GVK, namespace=kueue_namespace, label_selector=selector)
            ).items
        except KubeError as inner:
            return [], (
                f"cannot list Deployments labelled {selector} in any namespace ({_short(exc)}) nor in "
                f"{kueue_namespace} ({_short(inner)})"
            )
    except UnknownKindError:
        return [], "no Kueue Deployment: the API server does not serve apps/v1 Deployments"
    except KubeError as exc:
        return [], f"cannot list Deployments labelled {selector} ({_short(exc)})"
    managers = [kueue_manager_of(d) for d in deployments if _is_kueue(d)]
    managers.sort(key=lambda m: (m.namespace != kueue_namespace, m.namespace, m.name))
    if not managers:
        return [], f"no Kueue Deployment labelled {selector} in any namespace"
    return managers, ""


# --- Kueue's Configuration ------------------------------------------------------------------------
def _parse_configuration(
    config_map: Mapping[str, Any], key: str, where: str
) -> tuple[dict[str, Any] | None, str]:
    text = _mapping(config_map.get("data")).get(key)
    if not isinstance(text, str):
        return None, f"{where} has no key {key}"
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        return None, f"{where} key {key} is not YAML ({str(exc).splitlines()[0]})"
    if not isinstance(document, dict):
        return None, f"{where} key {key} is not a Configuration"
    return document, ""


def _from_document(
    document: Mapping[str, Any],
    detail: str,
    *,
    webhooks: tuple[RegisteredWebhook, ...],
    webhooks_unknown: str,
) -> dict[str, Any]:
    integrations = _mapping(document.get("integrations"))
    frameworks = _strings(integrations.get("frameworks")) or list(_DEFAULT_FRAMEWORKS)
    gates = _mapping(document.get("featureGates"))
    return {
        "source": "configmap",
        "detail": detail,
        "frameworks": frozenset(frameworks),
        "external_frameworks": frozenset(_strings(integrations.get("externalFrameworks"))),
        "feature_gates": {str(k): v for k, v in gates.items() if isinstance(v, bool)},
        "webhooks": webhooks,
        "webhooks_unknown": webhooks_unknown,
    }


async def _read_config_map(
    client: KubeClient, *, namespace: str, name: str, key: str
) -> tuple[dict[str, Any] | None, str]:
    where = f"ConfigMap {namespace}/{name}"
    try:
        config_map = await client.get(CONFIG_MAP_GVK, name, namespace=namespace)
    except NotFound:
        return None, f"{where} not found"
    except Forbidden as exc:
        return None, f"{where} is not readable ({_short(exc)})"
    except KubeError as exc:
        return None, f"{where} could not be read ({_short(exc)})"
    return _parse_configuration(config_map, key, where)


async def read_kueue_setup(client: KubeClient, *, kueue_namespace: str) -> KueueSetup:
    """Kueue's Configuration, found through its manager Deployment (see the module docstring)."""
    webhooks, webhooks_unknown = await _webhooks(client)
    managers, manager_unknown = await _kueue_managers(client, kueue_namespace=kueue_namespace)
    common: dict[str, Any] = {
        "webhooks": webhooks,
        "webhooks_unknown": webhooks_unknown,
        "manager": managers[0] if managers else None,
        "manager_unknown": manager_unknown,
    }
    tried: list[str] = [manager_unknown] if manager_unknown else []
    for manager in managers:
        if not manager.config_path:
            # kueue-bridge: Kueue without --config runs with its defaults (batch/job on): that is
            # a Configuration read, not a guess
            detail = f"{manager.where} runs Kueue without --config, so with Kueue's defaults"
            found = _from_document({}, detail, webhooks=webhooks, webhooks_unknown=webhooks_unknown)
            return KueueSetup(**{**common, **found, "manager": manager})
        if not manager.config_map:
            tried.append(f"{manager.where}: --config={manager.config_path}, but {manager.config_problem}")
            continue
        document, problem = await _read_config_map(
            client, namespace=manager.namespace, name=manager.config_map, key=manager.config_key
        )
        if document is None:
            tried.append(f"{manager.where} mounts its --config from {problem}")
            continue
        detail = f"ConfigMap {manager.namespace}/{manager.config_map} of {manager.where}"
        found = _from_document(document, detail, webhooks=webhooks, webhooks_unknown=webhooks_unknown)
        return KueueSetup(**{**common, **found, "manager": manager})
    if not managers:
        document, problem = await _read_config_map(
            client, namespace=kueue_namespace, name=KUEUE_CONFIG_MAP, key=KUEUE_CONFIG_KEY
        )
        if document is not None:
            detail = f"ConfigMap {kueue_namespace}/{KUEUE_CONFIG_MAP}"
            found = _from_document(document, detail, webhooks=webhooks, webhooks_unknown=webhooks_unknown)
            return KueueSetup(**{**common, **found})
        tried.append(problem)
    return KueueSetup(
        source="unknown", detail=f"Kueue's Configuration could not be read: {'; '.join(tried)}", **common
    )


# --- Kueue installed ---------------------------------------------------------------------------------
async def _served_versions(client: KubeClient) -> list[str] | None:
    groups = await client.mapper.server_groups()
    return groups.get(API_GROUP)


def _version(setup: KueueSetup) -> str:
    manager = setup.manager
    if manager is None:
        return f"version unknown: {setup.manager_unknown}"
    image = manager.image
    tag = image.rsplit(":", 1)[-1] if ":" in image.rsplit("/", 1)[-1] else "unknown"
    return f"version {tag} (image {image} of {manager.where}, {manager.ready})"


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
    version = _version(setup)
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
        where = setup.manager.where if setup.manager else f"its Deployment, in {kueue_namespace} by default"
        findings.append(
            Finding(
                "kueue webhooks",
                Verdict.WARN,
                "Kueue's Workload webhook (mworkload.kb.io) is not registered: is Kueue's controller "
                "manager running?",
                f"start Kueue's controller manager ({where}); it registers its webhooks",
            )
        )
    return findings


# --- two controllers for one kind ------------------------------------------------------------------
def _integration_findings(kind: ManagedKind, setup: KueueSetup) -> list[Finding]:
    name = kind.gvk.kind_arg
    check = f"kueue integration {name}"
    integration = kueue_integration_for(kind.gvk.group, kind.gvk.kind)
    if setup.source != "configmap":
        return [
            Finding(
                check,
                Verdict.WARN,
                f"{setup.detail}; so whether Kueue lists {name} under externalFrameworks"
                + (f" and leaves {integration.framework} off" if integration is not None else "")
                + " cannot be checked (a registered Kueue webhook for it proves nothing: Kueue's "
                "manifests register every integration's webhook)",
                f"make sure Kueue's Configuration lists {name} under integrations.externalFrameworks"
                + (f" and not {integration.framework} under frameworks" if integration is not None else "")
                + "; to let preflight read it, grant list on deployments.apps and get on Kueue's ConfigMap "
                "(kueue-bridge manifests renders both)",
                kinds=(name,),
            )
        ]
    if integration is not None and integration.framework in (setup.frameworks or ()):
        return [
            Finding(
                check,
                Verdict.FAIL,
                f"Kueue's own {integration.framework} integration is enabled ({setup.detail}: "
                f"integrations.frameworks): Kueue's job reconciler and kueue-bridge's would both manage "
                f"{name}",
                f"remove {integration.framework} from Kueue's integrations.frameworks and restart Kueue, "
                f"or stop managing {name} in kueue-bridge's configuration",
                kinds=(name,),
                conflict=True,
            )
        ]
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
        Finding(
            check,
            Verdict.OK,
            f"Kueue lists it under externalFrameworks{disabled} ({setup.detail})",
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
    known = setup.source == "configmap"
    if gate is not None and known and not setup.feature_gate(gate, default=True):
        return [
            Finding(
                check,
                Verdict.OK,
                f"kueue-bridge multikueue handles {ours}; Kueue's own is off ({setup.detail}: {gate}=false)",
            )
        ]
    # positive evidence: the gate read on (or defaulted on) in Kueue's Configuration, or a controller
    # Kueue always runs; otherwise only a warning
    conflict = known or gate is None
    if gate is None:
        why = "which Kueue always runs"
    elif known:
        why = f"its {gate} feature gate is on: {setup.detail}"
    else:
        why = f"{setup.detail}; Kueue's {gate} gate is on by default"
    return [
        Finding(
            check,
            Verdict.FAIL if conflict else Verdict.WARN,
            f"kueueBridge.multiKueue.controllerName is {ours}, which Kueue's own controller handles "
            f"({why}): two controllers would answer the same AdmissionChecks",
            "keep kueueBridge.multiKueue.controllerName at kueue-bridge.dev/multikueue (the default)"
            + (
                f", or set featureGates: {{{gate}: false}} in Kueue's Configuration"
                if gate is not None
                else ""
            ),
            conflict=conflict,
        )
    ]
