"""What each kueue-bridge identity may do on the API server, for one configuration.

The same list has three readers, so it is written once, here:

* ``kueue-bridge manifests`` renders it as Roles, ClusterRoles and bindings;
* ``kueue-bridge preflight`` asks the API server, with one SubjectAccessReview per verb and
  resource, whether the deployed ServiceAccounts really have it;
* the tests compare it with ``deploy/`` and with the requests the components make.

Identities (:data:`IDENTITIES`, named in ``shared.identities``): the four components (``webhook``, ``reconciler``, ``multikueue``,
``appwrapper``), the identity the MultiKueue controller uses on a worker cluster
(``multikueue-worker``), and Kueue's own manager (``kueue``), which needs to read the kinds it
knows only as ``integrations.externalFrameworks`` (it follows a job's owners through them: Kueue's
``GetEmptyOwnerObject``; kueue #2478).

Scopes: :data:`CLUSTER` rules go into a ClusterRole; :data:`OWN_NAMESPACE` into a Role in the
configuration's namespace (Leases, the webhook's certificate Secret, worker kubeconfig Secrets);
:data:`KUEUE_NAMESPACE` into a Role in Kueue's namespace (reading Kueue's own Configuration for the
start-up check that no kind has two controllers).

Invariants: no wildcards; verbs from :data:`VERBS`; every rule says why it exists (``why``, rendered
as the rule's comment); what depends on the configuration (the managed kinds, the kinds MultiKueue
syncs, AppWrapper support, internal certificate management) is derived from it, never listed by
hand.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Final, Literal

from shared.config import Configuration, ManagedKind
from shared.constants import API_GROUP
from shared.frameworks.builtin_kinds import APPWRAPPER, BATCH_JOB
from shared.identities import IDENTITIES, KUEUE_MANAGER_SERVICE_ACCOUNT, Identity, service_account_name
from shared.kube import GroupVersionKind
from shared.kueue.kueue_integrations import KUEUE_INTEGRATION_BY_GROUP_KIND, KUEUE_INTEGRATIONS
from shared.webhook_configurations import MUTATING_CONFIGURATION_NAME, VALIDATING_CONFIGURATION_NAME

__all__ = [
    "CLUSTER",
    "IDENTITIES",
    "KUEUE_CONFIG_KEY",
    "KUEUE_CONFIG_MAP",
    "KUEUE_MANAGER_NAME_LABEL",
    "KUEUE_MANAGER_SELECTOR",
    "KUEUE_MANAGER_SERVICE_ACCOUNT",
    "KUEUE_NAMESPACE",
    "OWN_NAMESPACE",
    "VERBS",
    "WRAPPABLE_KINDS",
    "AccessRule",
    "Identity",
    "Scope",
    "access_rules",
    "grants",
    "service_account_name",
]

Scope = Literal["cluster", "own-namespace", "kueue-namespace"]
CLUSTER: Final[Scope] = "cluster"
OWN_NAMESPACE: Final[Scope] = "own-namespace"
KUEUE_NAMESPACE: Final[Scope] = "kueue-namespace"
VERBS: Final = ("get", "list", "watch", "create", "update", "patch", "delete")
_READ: Final = ("get", "list", "watch")

#: Where Kueue's default install keeps its Configuration (release ``kueue``; the Helm chart names it
#: ``<release>-kueue-manager-config`` otherwise, so preflight follows the manager Deployment's volume).
KUEUE_CONFIG_MAP: Final = "kueue-manager-config"
KUEUE_CONFIG_KEY: Final = "controller_manager_config.yaml"
#: The label Kueue's Helm chart and kustomize manifests both put on the manager Deployment, whatever
#: the release name and namespace, and the name label that tells Kueue's from other kubebuilder managers.
KUEUE_MANAGER_SELECTOR: Final = "control-plane=controller-manager"
KUEUE_MANAGER_NAME_LABEL: Final = ("app.kubernetes.io/name", "kueue")

#: What an AppWrapper may wrap: the AppWrapper operator's list, plus ConfigMaps.
WRAPPABLE_KINDS: Final[tuple[tuple[str, tuple[str, ...]], ...]] = (
    ("", ("pods", "services", "configmaps")),
    ("apps", ("deployments", "statefulsets")),
    ("batch", ("jobs",)),
    ("jobset.x-k8s.io", ("jobsets",)),
    ("kubeflow.org", ("pytorchjobs",)),
    ("ray.io", ("rayclusters", "rayjobs")),
    ("scheduling.sigs.k8s.io", ("podgroups",)),
    ("scheduling.x-k8s.io", ("podgroups",)),
)


@dataclass(frozen=True)
class AccessRule:
    """One RBAC rule of one identity."""

    group: str
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    why: str
    scope: Scope = CLUSTER
    resource_names: tuple[str, ...] = ()
    #: missing it is only a warning (the start-up check's reads of Kueue's setup: without them the
    #: components start and say they could not check)
    optional: bool = False

    def grants(self) -> set[tuple[str, str, str]]:
        return {(self.group, resource, verb) for resource in self.resources for verb in self.verbs}


def grants(rules: Iterable[AccessRule], *, scope: Scope | None = None) -> set[tuple[str, str, str]]:
    """``(group, resource, verb)`` of every rule (of one scope when given)."""
    found: set[tuple[str, str, str]] = set()
    for rule in rules:
        if scope is None or rule.scope == scope:
            found |= rule.grants()
    return found


def _by_group(kinds: Iterable[ManagedKind]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for kind in kinds:
        resources = grouped.setdefault(kind.gvk.group, [])
        if kind.resource not in resources:
            resources.append(kind.resource)
    return grouped


def _per_group(
    kinds: Iterable[ManagedKind], verbs: tuple[str, ...], why: str, *, suffix: str = ""
) -> list[AccessRule]:
    return [
        AccessRule(group, tuple(resource + suffix for resource in resources), verbs, why)
        for group, resources in _by_group(kinds).items()
    ]


def _events(why: str) -> AccessRule:
    return AccessRule("", ("events",), ("create", "patch"), why)


def _events_v1(why: str) -> AccessRule:
    return AccessRule("events.k8s.io", ("events",), ("create", "patch"), why)


def _lease(why: str) -> AccessRule:
    return AccessRule(
        "coordination.k8s.io", ("leases",), ("get", "create", "update"), why, scope=OWN_NAMESPACE
    )


def _start_up_check() -> list[AccessRule]:
    """Reading Kueue's Configuration and its webhooks: the start-up check for two controllers per kind.

    Least privilege, and why each is what it is: Kueue's manager Deployment may be in any namespace
    under any release name, so it is found by label with ``list`` on deployments cluster-wide (no
    ``get``/``watch``; a Deployment holds no Secret values). Its Configuration ConfigMap is named by
    the Deployment's volume (``<release>-kueue-manager-config``), so ``get`` cannot be limited by
    name, but it is limited to Kueue's namespace and to ``get`` (no ``list``: nothing else there can
    be enumerated). Both are optional: without them the components start and warn."""
    why = "start-up check: is a managed kind also one of Kueue's own enabled integrations?"
    return [
        AccessRule("apps", ("deployments",), ("list",), f"{why} (finding Kueue's manager)", optional=True),
        AccessRule(
            "", ("configmaps",), ("get",), f"{why} (its Configuration)", scope=KUEUE_NAMESPACE, optional=True
        ),
        AccessRule("admissionregistration.k8s.io", ("mutatingwebhookconfigurations",), ("list",), why),
    ]


def _manages_appwrappers(config: Configuration) -> bool:
    return any(kind.gvk == APPWRAPPER.gvk for kind in config.managed_kinds())


def _unmanaged_kueue_kinds(config: Configuration) -> list[ManagedKind]:
    """Kueue's integration kinds not managed here: the ancestor walk follows them too."""
    managed = {(kind.gvk.group, kind.gvk.kind) for kind in config.managed_kinds()}
    return [
        ManagedKind(GroupVersionKind(i.group, i.version, i.kind), i.plural, None, None)
        for i in KUEUE_INTEGRATIONS
        if i.group_kind not in managed
    ]


def _webhook(config: Configuration) -> list[AccessRule]:
    kinds = config.managed_kinds()
    rules = [
        AccessRule("", ("namespaces",), _READ, "managedJobsNamespaceSelector"),
        AccessRule(
            API_GROUP,
            ("localqueues", "clusterqueues", "admissionchecks", "workloadpriorityclasses"),
            _READ,
            "Kueue's defaulting and validation rules (default queue and priority class, MultiKueue managedBy)",
        ),
        *_per_group(kinds, _READ, "owner lookups of the configured kinds (a child of a managed job)"),
        AccessRule("apps", ("replicasets",), _READ, "owner lookups (Pod -> ReplicaSet -> Deployment)"),
        *_per_group(
            _unmanaged_kueue_kinds(config),
            _READ,
            "owner lookups: the ancestor walk follows every kind Kueue knows",
        ),
        AccessRule(
            "admissionregistration.k8s.io",
            ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"),
            ("get", "update", "patch", "delete"),
            "its own webhook configurations: registered once it serves, their caBundle, unregister",
            resource_names=(MUTATING_CONFIGURATION_NAME, VALIDATING_CONFIGURATION_NAME),
        ),
        AccessRule(
            "admissionregistration.k8s.io",
            ("mutatingwebhookconfigurations", "validatingwebhookconfigurations"),
            ("create",),
            "registers its own webhook configurations once it serves (RBAC cannot name what is created)",
        ),
        AccessRule(
            "rbac.authorization.k8s.io",
            ("clusterroles",),
            ("get",),
            "the owner of the configurations it registers (garbage-collected with the install)",
            resource_names=(service_account_name("webhook"),),
        ),
        *_start_up_check(),
        AccessRule(
            "discovery.k8s.io",
            ("endpointslices",),
            ("list",),
            "before the registered rules change: does every serving endpoint of its Service run "
            "the same configuration? (webhook.registration)",
            scope=OWN_NAMESPACE,
        ),
    ]
    certs = config.internal_cert_management
    if certs.enable:
        rules.append(
            AccessRule(
                "",
                ("secrets",),
                ("get", "update"),
                "its own serving certificate (internalCertManagement)",
                scope=OWN_NAMESPACE,
                resource_names=(certs.webhook_secret_name,),
            )
        )
    if _manages_appwrappers(config):
        rules.append(
            AccessRule(
                "authorization.k8s.io",
                ("subjectaccessreviews",),
                ("create",),
                "may the creator of an AppWrapper create every object it wraps?",
            )
        )
    return rules


def _reconciler(config: Configuration) -> list[AccessRule]:
    kinds = config.managed_kinds()
    with_status = [kind for kind in kinds if kind.gvk == BATCH_JOB.gvk or kind.builtin is None]
    managed = {(kind.gvk.group, kind.gvk.kind) for kind in kinds}
    ancestors = [
        ManagedKind(GroupVersionKind(i.group, i.version, i.kind), i.plural, None, None)
        for i in KUEUE_INTEGRATIONS
        if i.group_kind not in managed and i.group
    ]
    return [
        *_per_group(
            kinds,
            ("get", "list", "watch", "update", "patch", "delete"),
            "start and stop the configured kinds; delete one whose Workload Kueue deactivated "
            "(objectRetentionPolicies)",
        ),
        *_per_group(
            with_status,
            ("get", "update", "patch"),
            "status of the kinds a stop resets (batch/v1 Job's startTime, a declarative resetOnStop)",
            suffix="/status",
        ),
        AccessRule(
            API_GROUP,
            ("workloads",),
            ("get", "list", "watch", "create", "update", "patch", "delete"),
            "one Workload per job",
        ),
        AccessRule(API_GROUP, ("workloads/status",), ("get", "update", "patch"), "Workload conditions"),
        AccessRule(API_GROUP, ("workloads/finalizers",), ("update",), "the Workload's finalizer"),
        AccessRule(
            API_GROUP, ("resourceflavors", "workloadpriorityclasses"), _READ, "admission data, priorities"
        ),
        AccessRule("scheduling.k8s.io", ("priorityclasses",), _READ, "pod priorities"),
        AccessRule("", ("namespaces",), _READ, "managedJobsNamespaceSelector"),
        _events("Kueue's job events (CreatedWorkload, Started, ...)"),
        _events_v1("Kueue's job events (CreatedWorkload, Started, ...)"),
        AccessRule(
            "", ("pods",), ("get",), "the ancestor walk reads controller owners of every kind Kueue knows"
        ),
        AccessRule("apps", ("replicasets",), ("get",), "the ancestor walk (Pod -> ReplicaSet -> Deployment)"),
        *_per_group(
            ancestors,
            ("get",),
            "the ancestor walk reads controller owners of every kind Kueue knows",
        ),
        _lease("leader election"),
        *_start_up_check(),
    ]


def _multikueue(config: Configuration) -> list[AccessRule]:
    synced = config.multikueue_kinds()
    return [
        AccessRule(
            API_GROUP,
            ("admissionchecks", "multikueueconfigs", "multikueueclusters", "workloads"),
            _READ,
            "the MultiKueue objects and the manager's Workloads",
        ),
        AccessRule(
            API_GROUP,
            ("admissionchecks/status", "multikueueclusters/status"),
            ("update",),
            "Active conditions",
        ),
        AccessRule(
            API_GROUP,
            ("workloads/status",),
            ("patch",),
            "nominations, clusterName, check states, Finished: forced applies (kueue-admission's, the check's)",
        ),
        *_per_group(synced, _READ, "the manager's jobs of the synced kinds (informers; get on a miss)"),
        *_per_group(synced, ("patch",), "status mirrored from the worker's copy", suffix="/status"),
        _events("MultiKueue events"),
        _events_v1("MultiKueue events"),
        _lease("leader election"),
        AccessRule(
            "",
            ("secrets",),
            _READ,
            "worker kubeconfigs (MultiKueueCluster locationType Secret), in its own namespace only",
            scope=OWN_NAMESPACE,
        ),
        *_start_up_check(),
    ]


def _multikueue_worker(config: Configuration) -> list[AccessRule]:
    return [
        AccessRule(
            API_GROUP,
            ("workloads",),
            ("get", "list", "watch", "create", "update", "delete"),
            "Workload copies: create, follow, remove (the finalizer first, by an update)",
        ),
        AccessRule(
            API_GROUP, ("workloads/status",), ("patch",), "DeactivationTarget on an evicted copy (an apply)"
        ),
        AccessRule(
            API_GROUP,
            ("localqueues",),
            ("get",),
            "kueue-bridge preflight: the manager's LocalQueues in use exist on the worker",
        ),
        *_per_group(
            config.multikueue_kinds(),
            ("get", "list", "watch", "create", "delete"),
            "the jobs of admitted copies",
        ),
    ]


def _appwrapper(config: Configuration) -> list[AccessRule]:
    if not _manages_appwrappers(config):
        return []
    group, plural = APPWRAPPER.gvk.group, APPWRAPPER.plural
    rules = [
        AccessRule(group, (plural,), ("get", "list", "watch", "patch"), "AppWrappers and their finalizer"),
        AccessRule(group, (f"{plural}/status",), ("get", "update", "patch"), "phases and conditions"),
        AccessRule(group, (f"{plural}/finalizers",), ("update",), "owner references with blockOwnerDeletion"),
        _events("AppWrapper events"),
        _events_v1("AppWrapper events"),
    ]
    for wrapped_group, resources in WRAPPABLE_KINDS:
        verbs: tuple[str, ...] = ("get", "create", "delete")
        if (wrapped_group, resources) == ("", ("pods", "services", "configmaps")):
            rules.append(
                AccessRule(
                    "", ("pods",), ("get", "list", "watch", "create", "delete"), "wrapped pods; informer"
                )
            )
            rules.append(AccessRule("", ("services", "configmaps"), verbs, "wrapped objects"))
            continue
        if wrapped_group == "batch":
            verbs = ("get", "list", "watch", "create", "delete")
        rules.append(AccessRule(wrapped_group, resources, verbs, "wrapped objects"))
    rules.append(_lease("leader election"))
    rules.extend(_start_up_check())
    return rules


def _kueue(config: Configuration) -> list[AccessRule]:
    external = [
        kind
        for kind in config.managed_kinds()
        if (kind.gvk.group, kind.gvk.kind) not in KUEUE_INTEGRATION_BY_GROUP_KIND
    ]
    return _per_group(
        external,
        _READ,
        "Kueue follows a job's owners through its externalFrameworks kinds (kueue #2478)",
    )


def access_rules(config: Configuration, identity: Identity) -> list[AccessRule]:
    """Every rule ``identity`` needs with ``config`` (empty for ``appwrapper`` without AppWrappers)."""
    build = {
        "webhook": _webhook,
        "reconciler": _reconciler,
        "multikueue": _multikueue,
        "appwrapper": _appwrapper,
        "multikueue-worker": _multikueue_worker,
        "kueue": _kueue,
    }[identity]
    return build(config)
