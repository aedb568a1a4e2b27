"""The compiled-in resource types the devcluster serves from the start.

Only kinds the project (or its tests) talk to are here; each entry mirrors kube-apiserver's
discovery for it (names, short names, scope, subresources, verbs) because clients such as kubectl
resolve ``kubectl get cm`` or ``kubectl wait`` through exactly these documents. All of them are
``v1`` and named the way kube-apiserver names its own kinds: singular = the kind lower-cased, plural =
apimachinery's guess from the kind (``PriorityClass`` -> ``priorityclasses``), so an entry states only
its group, kind, scope and what differs from the defaults.
"""

from __future__ import annotations

from typing import Any

from devcluster.apiserver.registry.resources import ResourceType
from shared.kube import guess_plural

__all__ = ["BUILTIN_TYPES", "CREATE_ONLY_VERBS"]

CREATE_ONLY_VERBS = ("create",)

_EVENT_FIELDS = (
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)


def _v1(group: str, kind: str, *, namespaced: bool, **options: Any) -> ResourceType:
    """The ``v1`` resource of ``group``/``kind``, named by kube-apiserver's convention."""
    return ResourceType(
        group=group,
        versions=("v1",),
        plural=guess_plural(kind),
        singular=kind.lower(),
        kind=kind,
        namespaced=namespaced,
        **options,
    )


BUILTIN_TYPES: tuple[ResourceType, ...] = (
    _v1(
        "",
        "Namespace",
        namespaced=False,
        short_names=("ns",),
        subresources=frozenset({"status", "finalize"}),
        verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
        name_rule="label",
        returns_deleted_object=True,
        selectable_fields=("status.phase",),
    ),
    _v1("", "ConfigMap", namespaced=True, short_names=("cm",)),
    _v1("", "Secret", namespaced=True, selectable_fields=("type",)),
    _v1("", "ServiceAccount", namespaced=True, short_names=("sa",)),
    _v1(
        "",
        "Pod",
        namespaced=True,
        short_names=("po",),
        categories=("all",),
        subresources=frozenset({"status"}),
        returns_deleted_object=True,
        selectable_fields=(
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.nominatedNodeName",
        ),
    ),
    _v1(
        "",
        "Event",
        namespaced=True,
        short_names=("ev",),
        selectable_fields=_EVENT_FIELDS,
        name_rule="path",  # core v1 Events: the generic path-segment rule only (event_validation.py)
    ),
    _v1(
        "events.k8s.io",
        "Event",
        namespaced=True,
        short_names=("ev",),
        served_from=("", "events"),
        selectable_fields=(
            "regarding.kind",
            "regarding.namespace",
            "regarding.name",
            "regarding.uid",
            "reason",
            "reportingController",
            "type",
        ),
    ),
    _v1(
        "batch",
        "Job",
        namespaced=True,
        categories=("all",),
        subresources=frozenset({"status"}),
        tracks_generation=True,
        selectable_fields=("status.successful",),
    ),
    _v1("coordination.k8s.io", "Lease", namespaced=True),
    _v1("scheduling.k8s.io", "PriorityClass", namespaced=False, short_names=("pc",)),
    _v1(
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
        namespaced=False,
        categories=("api-extensions",),
        tracks_generation=True,
    ),
    _v1(
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
        namespaced=False,
        categories=("api-extensions",),
        tracks_generation=True,
    ),
    _v1(
        "apiextensions.k8s.io",
        "CustomResourceDefinition",
        namespaced=False,
        short_names=("crd", "crds"),
        categories=("api-extensions",),
        subresources=frozenset({"status"}),
        tracks_generation=True,
    ),
    _v1("rbac.authorization.k8s.io", "Role", namespaced=True),
    _v1("rbac.authorization.k8s.io", "RoleBinding", namespaced=True),
    _v1("rbac.authorization.k8s.io", "ClusterRole", namespaced=False),
    _v1("rbac.authorization.k8s.io", "ClusterRoleBinding", namespaced=False),
    _v1("authorization.k8s.io", "SubjectAccessReview", namespaced=False, verbs=CREATE_ONLY_VERBS),
    _v1("authorization.k8s.io", "SelfSubjectAccessReview", namespaced=False, verbs=CREATE_ONLY_VERBS),
    _v1("authorization.k8s.io", "LocalSubjectAccessReview", namespaced=True, verbs=CREATE_ONLY_VERBS),
)
