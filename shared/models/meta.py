"""ObjectMeta, OwnerReference, LabelSelector and the few metadata helpers every component needs.

Labels, annotations and finalizers are plain dicts/lists (not ``None``-able) so callers never test
for ``None`` before reading; ``to_wire()`` omits them when empty only if they were absent on input
(pydantic keeps whatever was set explicitly).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from shared.constants import API_VERSION
from shared.models.base import KubeModel

__all__ = [
    "KueueObject",
    "LabelSelector",
    "LabelSelectorRequirement",
    "ObjectMeta",
    "OwnerReference",
    "controller_owner",
]


class OwnerReference(KubeModel):
    api_version: str
    kind: str
    name: str
    uid: str
    controller: bool | None = None
    block_owner_deletion: bool | None = None


class ObjectMeta(KubeModel):
    name: str | None = None
    generate_name: str | None = None
    namespace: str | None = None
    uid: str | None = None
    resource_version: str | None = None
    generation: int | None = None
    creation_timestamp: str | None = None
    deletion_timestamp: str | None = None
    deletion_grace_period_seconds: int | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    owner_references: list[OwnerReference] | None = None
    finalizers: list[str] | None = None

    def label(self, key: str) -> str | None:
        return (self.labels or {}).get(key)

    def annotation(self, key: str) -> str | None:
        return (self.annotations or {}).get(key)


class KueueObject(KubeModel):
    """What every ``kueue.x-k8s.io/v1beta2`` object has: its apiVersion, kind and metadata. A kind's
    model narrows ``kind`` to its own name (so another kind fails to parse) and adds spec and status;
    the field order, and so the wire order, stays apiVersion, kind, metadata, spec, status."""

    api_version: Literal["kueue.x-k8s.io/v1beta2"] = API_VERSION
    kind: str
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)


class LabelSelectorRequirement(KubeModel):
    key: str
    operator: str  # In | NotIn | Exists | DoesNotExist
    values: list[str] | None = None


class LabelSelector(KubeModel):
    """``metav1.LabelSelector``. ``{}`` (both fields absent) selects everything; ``None`` nothing."""

    match_labels: dict[str, str] | None = None
    match_expressions: list[LabelSelectorRequirement] | None = None


def controller_owner(meta: ObjectMeta) -> OwnerReference | None:
    """The owner reference with ``controller: true``, if any (Kubernetes allows at most one)."""
    for ref in meta.owner_references or []:
        if ref.controller:
            return ref
    return None


# ``Field`` is re-exported for subclasses that need explicit aliases.
_ = Field
