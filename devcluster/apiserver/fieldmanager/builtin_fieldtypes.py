"""Merge strategies of the built-in kinds the devcluster serves, as kube-apiserver 1.36's OpenAPI has them.

Only what differs from the defaults of :mod:`.fieldtypes` is written down: lists are atomic and
maps/structs granular unless a Go type says ``+listType=map|set`` or ``+mapType/+structType=atomic``.
Each entry was read from a real kube-apiserver 1.36.2's ``/openapi/v3`` (``x-kubernetes-list-type``,
``x-kubernetes-list-map-keys``, ``x-kubernetes-map-type`` and the map keys' defaults), not from the
strategic-merge-patch tags, which differ in places: JobStatus ``conditions`` is an *atomic* list for
server-side apply (the Pod's and Namespace's are maps by ``type``), LabelSelector, NodeSelector,
OwnerReference, ObjectReference, RoleRef, Subject and the env ``*KeyRef`` selectors are atomic, a
CRD's ``spec.versions`` is one atomic list, and ``nodeSelector`` an atomic map.

``present=True`` marks Go *value* structs (never nil: the zero object already has them), and
``null_fields`` their slices without ``omitempty``; both decide whether an Update records the
field itself (``"."``) when it first gets something.
"""

from __future__ import annotations

from typing import Final

from devcluster.apiserver.fieldmanager.fieldtypes import (
    BY_VALUE,
    OBJECT_META,
    SCALAR,
    FieldType,
    ListOf,
    Struct,
)

__all__ = ["builtin_field_type"]

ATOMIC: Final = SCALAR
SET: Final = ListOf()


def _struct(*, present: bool = False, null_fields: tuple[str, ...] = (), **fields: FieldType) -> Struct:
    return Struct(dict(fields), present=present, null_fields=frozenset(null_fields))


def _by(*keys: str, of: FieldType | None = None, **defaults: object) -> ListOf:
    key_defaults = {name: defaults.get(name, "") for name in keys}
    return ListOf(keys=keys, elem=of if of is not None else Struct({}), key_defaults=key_defaults)


_ENV_VAR: Final = _struct(
    valueFrom=_struct(
        configMapKeyRef=ATOMIC,
        fieldRef=ATOMIC,
        fileKeyRef=ATOMIC,
        resourceFieldRef=ATOMIC,
        secretKeyRef=ATOMIC,
    )
)
_RESOURCES: Final = _struct(present=True, claims=_by("name"))
_CONTAINER: Final = _struct(
    env=_by("name", of=_ENV_VAR),
    ports=_by("containerPort", "protocol", containerPort=0, protocol="TCP"),
    resources=_RESOURCES,
    volumeMounts=_by("mountPath"),
    volumeDevices=_by("devicePath"),
    restartPolicyRules=ATOMIC,
)
_AFFINITY_TERM: Final = _struct(labelSelector=ATOMIC, namespaceSelector=ATOMIC)
_POD_SPEC: Final = _struct(
    present=True,
    null_fields=("containers",),
    containers=_by("name", of=_CONTAINER),
    initContainers=_by("name", of=_CONTAINER),
    ephemeralContainers=_by("name", of=_CONTAINER),
    volumes=_by("name"),
    imagePullSecrets=_by("name", of=ATOMIC),
    hostAliases=_by("ip"),
    resourceClaims=_by("name"),
    schedulingGates=_by("name"),
    topologySpreadConstraints=_by("topologyKey", "whenUnsatisfiable", of=_struct(labelSelector=ATOMIC)),
    nodeSelector=ATOMIC,
    resources=_struct(claims=_by("name")),
    affinity=_struct(
        nodeAffinity=_struct(requiredDuringSchedulingIgnoredDuringExecution=ATOMIC),
    ),
)
_POD_TEMPLATE: Final = _struct(present=True, metadata=OBJECT_META, spec=_POD_SPEC)
_POD_STATUS: Final = _struct(
    present=True,
    conditions=_by("type"),
    podIPs=_by("ip"),
    resourceClaimStatuses=_by("name"),
    resources=_struct(claims=_by("name")),
)
_CONDITIONS_BY_TYPE: Final = _by("type")


def _kind(*plain: str, **fields: FieldType) -> Struct:
    """A top-level object: ObjectMeta, ``fields``, and the ``plain`` fields (default strategies).

    The top level is closed (its fields are the real type's): an apply with another is rejected.
    """
    declared: dict[str, FieldType] = {"apiVersion": SCALAR, "kind": SCALAR, "metadata": OBJECT_META}
    declared.update(dict.fromkeys(plain, BY_VALUE))
    declared.update(fields)
    return Struct(declared, closed=True)


_WEBHOOK: Final = _struct(namespaceSelector=ATOMIC, objectSelector=ATOMIC, matchConditions=_by("name"))

_TYPES: Final[dict[tuple[str, str], Struct]] = {
    ("", "namespaces"): _kind(
        spec=_struct(present=True), status=_struct(present=True, conditions=_CONDITIONS_BY_TYPE)
    ),
    ("", "configmaps"): _kind("data", "binaryData", "immutable"),
    ("", "secrets"): _kind("data", "stringData", "type", "immutable"),
    ("", "serviceaccounts"): _kind(
        "automountServiceAccountToken", "imagePullSecrets", secrets=_by("name", of=ATOMIC)
    ),
    ("", "pods"): _kind(spec=_POD_SPEC, status=_POD_STATUS),
    ("", "events"): _kind(
        "action",
        "count",
        "eventTime",
        "firstTimestamp",
        "lastTimestamp",
        "message",
        "reason",
        "reportingComponent",
        "reportingInstance",
        "series",
        "type",
        involvedObject=ATOMIC,
        related=ATOMIC,
        source=_struct(present=True),
    ),
    ("batch", "jobs"): _kind(
        spec=_struct(
            present=True,
            selector=ATOMIC,
            template=_POD_TEMPLATE,
            podFailurePolicy=_struct(rules=ATOMIC),
        ),
        status=_struct(
            present=True,
            conditions=ATOMIC,
            uncountedTerminatedPods=_struct(failed=SET, succeeded=SET),
        ),
    ),
    ("coordination.k8s.io", "leases"): _kind(spec=_struct(present=True)),
    ("scheduling.k8s.io", "priorityclasses"): _kind(
        "value", "globalDefault", "description", "preemptionPolicy"
    ),
    ("admissionregistration.k8s.io", "mutatingwebhookconfigurations"): _kind(
        webhooks=_by("name", of=_WEBHOOK)
    ),
    ("admissionregistration.k8s.io", "validatingwebhookconfigurations"): _kind(
        webhooks=_by("name", of=_WEBHOOK)
    ),
    ("apiextensions.k8s.io", "customresourcedefinitions"): _kind(
        spec=_struct(present=True, versions=ATOMIC),
        status=_struct(present=True, conditions=_CONDITIONS_BY_TYPE),
    ),
    ("rbac.authorization.k8s.io", "roles"): _kind("rules"),
    ("rbac.authorization.k8s.io", "rolebindings"): _kind("subjects", roleRef=ATOMIC),
    ("rbac.authorization.k8s.io", "clusterroles"): _kind("rules", "aggregationRule"),
    ("rbac.authorization.k8s.io", "clusterrolebindings"): _kind("subjects", roleRef=ATOMIC),
}
_DEFAULT: Final = Struct({"apiVersion": SCALAR, "kind": SCALAR, "metadata": OBJECT_META})


def builtin_field_type(key: tuple[str, str]) -> Struct:
    """The field types of the built-in resource ``(group, plural)`` (ObjectMeta only if unknown)."""
    return _TYPES.get(key, _DEFAULT)
