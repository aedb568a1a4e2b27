"""``kueue-bridge manifests``: the objects that deploy kueue-bridge with one configuration.

For a configuration file this renders what ``deploy/base`` (and ``deploy/appwrapper``) ship for
theirs, derived from the configuration instead of edited by hand:

* the namespace, the configuration as the ConfigMap ``kueue-bridge-config`` (the file verbatim);
* per component a ServiceAccount, a ClusterRole, a Role in its own namespace and one in Kueue's
  namespace, with exactly the rules of :mod:`shared.component_access` (every managed kind's
  resource, a declarative kind's ``status`` subresource, the synced kinds of MultiKueue);
* the webhook's Service, certificate Secret and PodDisruptionBudget. Its Mutating/Validating
  WebhookConfigurations (rules for exactly the configured kinds, :mod:`shared.webhook_configurations`)
  are not among them: the webhook registers them itself once a replica serves with its certificate
  (``--register-configurations``), owned by its ClusterRole, so an install whose webhook never
  serves never blocks the cluster's writes;
* a Deployment per component (the AppWrapper controller only when AppWrappers are managed), with
  the resource requests and limits of :data:`RESOURCES`;
* for Kueue: read access for its manager's ServiceAccount to the kinds it knows only as
  ``externalFrameworks``, and ``<kind>-editor``/``<kind>-viewer`` ClusterRoles with Kueue's aggregation
  labels (``rbac.kueue.x-k8s.io/batch-admin``/``batch-user``, and Kubernetes' ``aggregate-to-*`` for
  the viewer) for every managed kind Kueue ships no such roles for;
* separately (:func:`render_worker`), what a MultiKueue worker needs for the manager to reach it, and
  (:func:`kueue_configuration_fragment`) the ``integrations`` fragment to merge into Kueue's own
  Configuration.

Invariants: the output is a pure function of the configuration and the options (no cluster is
read); every object carries ``app.kubernetes.io/part-of: kueue-bridge``; names are the ones
``deploy/`` uses, so a rendered set replaces a kustomize deployment object for object.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

from shared.component_access import (
    CLUSTER,
    KUEUE_NAMESPACE,
    OWN_NAMESPACE,
    AccessRule,
    Identity,
    Scope,
    access_rules,
    service_account_name,
)
from shared.config import DEFAULT_NAMESPACE, Configuration
from shared.frameworks.builtin_kinds import APPWRAPPER
from shared.kueue.kueue_integrations import (
    KUEUE_AGGREGATE_ADMIN_LABEL,
    KUEUE_AGGREGATE_USER_LABEL,
    kueue_integration_for,
)

__all__ = [
    "CONFIG_MAP_NAME",
    "PART_OF",
    "RESOURCES",
    "RenderOptions",
    "identity_rbac",
    "kueue_configuration_fragment",
    "kueue_frameworks_to_remove",
    "render_manifests",
    "render_worker",
]

WireDict = dict[str, Any]
PART_OF: Final = {"app.kubernetes.io/part-of": "kueue-bridge"}
CONFIG_MAP_NAME: Final = "kueue-bridge-config"
CONFIG_MOUNT: Final = "/etc/kueue-bridge"
_RUN_AS: Final = 65532

#: Requests and limits per component. Measured (docs/installing.md, bench/reconciler_cpu.py, 1,000 and
#: 4,000 whole job lives on the devcluster, shared 2-core host): the reconciler's peak RSS is about
#: 96 MiB + 24 KiB per job (the job and its Workload stay cached), 12 ms CPU per job; the webhook's
#: about 106 MiB + 14 KiB per job, 1.3 ms CPU per admission. Requests: the resident size at 4,000
#: jobs, the CPU of 20 jobs/s (reconciler) or 75 admissions/s (webhook). Limits: room for some
#: 35,000 (reconciler) and 28,000 (webhook) cached jobs; no CPU limit (throttling a controller
#: delays its Lease renewals and every reconcile). MultiKueue and the AppWrapper controller: not
#: measured yet, the reconciler's request and limit.
RESOURCES: Final[dict[str, WireDict]] = {
    "webhook": {"requests": {"cpu": "100m", "memory": "192Mi"}, "limits": {"memory": "512Mi"}},
    "reconciler": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
    "multikueue": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
    "appwrapper": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "1Gi"}},
}


@dataclass(frozen=True)
class RenderOptions:
    """What the configuration does not say: the image, Kueue's namespace and the config file's text."""

    config_text: str
    image: str
    kueue_namespace: str = DEFAULT_NAMESPACE
    replicas: int = 2


def _meta(name: str, namespace: str | None = None, **extra: Any) -> WireDict:
    metadata: WireDict = {"name": name}
    if namespace is not None:
        metadata["namespace"] = namespace
    metadata.update(extra)
    metadata["labels"] = {**PART_OF, **(metadata.get("labels") or {})}
    return metadata


def _rule(rule: AccessRule) -> WireDict:
    body: WireDict = {"apiGroups": [rule.group], "resources": list(rule.resources)}
    if rule.resource_names:
        body["resourceNames"] = list(rule.resource_names)
    body["verbs"] = list(rule.verbs)
    return body


def _subject(identity: Identity, namespace: str) -> WireDict:
    return {"kind": "ServiceAccount", "name": service_account_name(identity), "namespace": namespace}


def _role_objects(
    *, name: str, scope: Scope, rules: list[AccessRule], role_namespace: str | None, subject: WireDict
) -> list[WireDict]:
    cluster = scope == CLUSTER
    kind = "ClusterRole" if cluster else "Role"
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": _meta(name, None if cluster else role_namespace),
        "rules": [_rule(rule) for rule in rules],
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": f"{kind}Binding",
        "metadata": _meta(name, None if cluster else role_namespace),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name},
        "subjects": [subject],
    }
    return [role, binding]


_ROLE_SUFFIX: Final[dict[Scope, str]] = {CLUSTER: "", OWN_NAMESPACE: "", KUEUE_NAMESPACE: "-kueue-config"}


def identity_rbac(
    config: Configuration, identity: Identity, *, namespace: str, kueue_namespace: str
) -> list[WireDict]:
    """The ServiceAccount of ``identity`` (Kueue's own excepted) and its Roles and bindings: what
    :func:`access_rules` grants it with ``config``."""
    rules = access_rules(config, identity)
    if not rules:
        return []
    objects: list[WireDict] = []
    if identity != "kueue":
        objects.append(
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": _meta(service_account_name(identity), namespace),
            }
        )
    subject = _subject(identity, kueue_namespace if identity == "kueue" else namespace)
    base_name = (
        "kueue-bridge-kueue-external-frameworks" if identity == "kueue" else service_account_name(identity)
    )
    for scope in (CLUSTER, OWN_NAMESPACE, KUEUE_NAMESPACE):
        scoped = [rule for rule in rules if rule.scope == scope]
        if scoped:
            objects += _role_objects(
                name=base_name + _ROLE_SUFFIX[scope],
                scope=scope,
                rules=scoped,
                role_namespace=namespace if scope == OWN_NAMESPACE else kueue_namespace,
                subject=subject,
            )
    return objects


def _port(bind_address: str, default: int) -> int:
    _, _, port = bind_address.rpartition(":")
    return int(port) if port.isdigit() else default


def _pod_labels(component: str) -> dict[str, str]:
    return {"app.kubernetes.io/name": "kueue-bridge", "app.kubernetes.io/component": component}


def _deployment(
    component: Identity,
    *,
    namespace: str,
    options: RenderOptions,
    args: list[str],
    ports: list[WireDict],
    probes: WireDict,
    mounts: Iterable[tuple[WireDict, WireDict]] = (),
    strategy: WireDict | None = None,
) -> WireDict:
    extra_mounts = list(mounts)
    container: WireDict = {
        "name": component,
        "image": options.image,
        "imagePullPolicy": "IfNotPresent",
        "args": args,
        "ports": ports,
        **probes,
        "resources": RESOURCES[component],
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "volumeMounts": [
            {"name": "config", "mountPath": CONFIG_MOUNT, "readOnly": True},
            # the root filesystem is read-only; TLS material is staged in a private temporary directory
            {"name": "tmp", "mountPath": "/tmp"},
            *(mount for mount, _ in extra_mounts),
        ],
    }
    pod: WireDict = {
        "serviceAccountName": service_account_name(component),
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": _RUN_AS,
            "runAsGroup": _RUN_AS,
            # the group of mounted Secret files (the webhook's certificate with cert-manager, mode 0440)
            "fsGroup": _RUN_AS,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "terminationGracePeriodSeconds": 30,
        "containers": [container],
        "volumes": [
            {"name": "config", "configMap": {"name": CONFIG_MAP_NAME}},
            {"name": "tmp", "emptyDir": {"medium": "Memory", "sizeLimit": "16Mi"}},
            *(volume for _, volume in extra_mounts),
        ],
    }
    if component == "webhook":
        pod["automountServiceAccountToken"] = True
        pod["topologySpreadConstraints"] = [
            {
                "maxSkew": 1,
                "topologyKey": "kubernetes.io/hostname",
                "whenUnsatisfiable": "ScheduleAnyway",
                "labelSelector": {"matchLabels": _pod_labels(component)},
            }
        ]
    spec: WireDict = {
        "replicas": options.replicas,
        "selector": {"matchLabels": _pod_labels(component)},
        "template": {"metadata": {"labels": _pod_labels(component)}, "spec": pod},
    }
    if strategy is not None:
        spec["strategy"] = strategy
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _meta(f"kueue-bridge-{component}", namespace),
        "spec": spec,
    }


def _controller(component: Identity, config: Configuration, *, options: RenderOptions) -> WireDict:
    port = _port(config.health.health_probe_bind_address, 8081)
    health = config.health
    return _deployment(
        component,
        namespace=config.namespace,
        options=options,
        args=[component, "--config", f"{CONFIG_MOUNT}/config.yaml", "--log-format", "json"],
        ports=[{"name": "probes", "containerPort": port, "protocol": "TCP"}],
        probes={
            "livenessProbe": {
                "httpGet": {"path": f"/{health.liveness_endpoint_name}", "port": "probes"},
                "periodSeconds": 10,
            },
            "readinessProbe": {
                "httpGet": {"path": f"/{health.readiness_endpoint_name}", "port": "probes"},
                "periodSeconds": 5,
            },
        },
    )


def _webhook_objects(config: Configuration, *, options: RenderOptions) -> list[WireDict]:
    namespace = config.namespace
    certs = config.internal_cert_management
    service = certs.webhook_service_name
    secret = certs.webhook_secret_name
    objects: list[WireDict] = []
    if certs.enable:
        objects.append(
            {"apiVersion": "v1", "kind": "Secret", "metadata": _meta(secret, namespace), "type": "Opaque"}
        )
    objects.append(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": _meta(service, namespace),
            "spec": {
                "selector": _pod_labels("webhook"),
                "ports": [{"name": "https", "port": 443, "targetPort": "webhook"}],
            },
        }
    )

    def https(path: str, period: int, failures: int) -> WireDict:
        return {
            "httpGet": {"path": path, "port": "webhook", "scheme": "HTTPS"},
            "periodSeconds": period,
            "failureThreshold": failures,
        }

    objects.append(
        _deployment(
            "webhook",
            namespace=namespace,
            options=options,
            args=[
                "webhook",
                "--config",
                f"{CONFIG_MOUNT}/config.yaml",
                "--register-configurations",
                "--configurations-owner",
                service_account_name("webhook"),
            ],
            ports=[{"name": "webhook", "containerPort": config.webhook.port, "protocol": "TCP"}],
            probes={
                # with cert-manager the first certificate arrives through the Secret volume (kubelet
                # sync, about a minute)
                "startupProbe": https("/healthz", 5, 60),
                "livenessProbe": https("/healthz", 10, 3),
                "readinessProbe": https("/readyz", 5, 2),
            },
            # internalCertManagement: the certificate directory is the pod's own (in memory); the
            # webhook writes what it keeps in the Secret there at once, instead of waiting for the
            # kubelet to refresh a Secret volume (about a minute). Otherwise (cert-manager) it is
            # the Secret's volume.
            mounts=[
                (
                    {"name": "cert", "mountPath": config.webhook.cert_dir},
                    {"name": "cert", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}},
                )
                if certs.enable
                else (
                    {"name": "cert", "mountPath": config.webhook.cert_dir, "readOnly": True},
                    {"name": "cert", "secret": {"secretName": secret, "defaultMode": 0o440}},
                )
            ],
            strategy={"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 1}},
        )
    )
    objects.append(
        {
            "apiVersion": "policy/v1",
            "kind": "PodDisruptionBudget",
            "metadata": _meta("kueue-bridge-webhook", namespace),
            "spec": {"minAvailable": 1, "selector": {"matchLabels": _pod_labels("webhook")}},
        }
    )
    return objects


def _kueue_user_roles(config: Configuration) -> list[WireDict]:
    """``<kind>-editor`` / ``<kind>-viewer`` ClusterRoles for managed kinds Kueue ships none for."""
    objects: list[WireDict] = []
    for kind in config.managed_kinds():
        integration = kueue_integration_for(kind.gvk.group, kind.gvk.kind)
        if integration is not None and integration.ships_roles:
            continue
        resource = f"{kind.resource}.{kind.gvk.group}" if kind.gvk.group else kind.resource
        kueue_labels = {KUEUE_AGGREGATE_ADMIN_LABEL: "true", KUEUE_AGGREGATE_USER_LABEL: "true"}
        for role, verbs, labels in (
            (
                "editor",
                ["create", "delete", "get", "list", "patch", "update", "watch"],
                kueue_labels,
            ),
            (
                "viewer",
                ["get", "list", "watch"],
                {
                    **kueue_labels,
                    "rbac.authorization.k8s.io/aggregate-to-view": "true",
                    "rbac.authorization.k8s.io/aggregate-to-edit": "true",
                    "rbac.authorization.k8s.io/aggregate-to-admin": "true",
                },
            ),
        ):
            objects.append(
                {
                    "apiVersion": "rbac.authorization.k8s.io/v1",
                    "kind": "ClusterRole",
                    "metadata": _meta(f"kueue-bridge-{resource}-{role}", labels=labels),
                    "rules": [
                        {"apiGroups": [kind.gvk.group], "resources": [kind.resource], "verbs": verbs},
                        {
                            "apiGroups": [kind.gvk.group],
                            "resources": [f"{kind.resource}/status"],
                            "verbs": ["get"],
                        },
                    ],
                }
            )
    return objects


def render_manifests(config: Configuration, *, options: RenderOptions) -> list[WireDict]:
    """Every object of a deployment with ``config`` (see the module docstring), in apply order."""
    namespace = config.namespace
    objects: list[WireDict] = [
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": _meta(namespace, labels={"pod-security.kubernetes.io/enforce": "restricted"}),
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": _meta(CONFIG_MAP_NAME, namespace),
            "data": {"config.yaml": options.config_text},
        },
    ]
    appwrappers = any(kind.gvk == APPWRAPPER.gvk for kind in config.managed_kinds())
    components: list[Identity] = ["webhook", "reconciler", "multikueue"]
    if appwrappers:
        components.append("appwrapper")
    identities: list[Identity] = [*components, "kueue"]
    for identity in identities:
        objects += identity_rbac(
            config, identity, namespace=namespace, kueue_namespace=options.kueue_namespace
        )
    objects += _kueue_user_roles(config)
    objects += _webhook_objects(config, options=options)
    for component in components[1:]:
        objects.append(_controller(component, config, options=options))
    return objects


def render_worker(config: Configuration, *, namespace: str | None = None) -> list[WireDict]:
    """What a MultiKueue worker cluster needs for this manager: the identity and its token Secret."""
    namespace = namespace or config.namespace
    account = service_account_name("multikueue-worker")
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(namespace)},
        *identity_rbac(config, "multikueue-worker", namespace=namespace, kueue_namespace=namespace),
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": _meta(
                f"{account}-token",
                namespace,
                annotations={"kubernetes.io/service-account.name": account},
            ),
            "type": "kubernetes.io/service-account-token",
        },
    ]


def kueue_configuration_fragment(config: Configuration) -> WireDict:
    """The ``integrations`` part of Kueue's own Configuration that hands our kinds to kueue-bridge."""
    return {"integrations": {"externalFrameworks": [kind.gvk.kind_arg for kind in config.managed_kinds()]}}


def kueue_frameworks_to_remove(config: Configuration) -> list[str]:
    """Kueue's built-in framework names that must not be in Kueue's ``integrations.frameworks``."""
    names = []
    for kind in config.managed_kinds():
        integration = kueue_integration_for(kind.gvk.group, kind.gvk.kind)
        if integration is not None:
            names.append(integration.framework)
    return names
