"""The few built-in Kubernetes objects kueue-bridge reads: ``Namespace``, ``PriorityClass``, and
the core/v1 ``Toleration`` and ``Taint`` structures that Kueue objects embed.

These are *read* models (the default-LocalQueue webhook matches namespace labels, priority
resolution reads ``PriorityClass.value``), so they are minimal and rely on ``extra="allow"``:
whatever else the API server returns survives a round trip. Field names follow
``k8s.io/api/core/v1`` and ``k8s.io/api/scheduling/v1``; a test checks them against the official
Python client's attribute maps.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

from shared.models.base import KubeModel
from shared.models.meta import ObjectMeta

__all__ = [
    "CORE_API_VERSION",
    "SCHEDULING_API_VERSION",
    "Namespace",
    "NamespaceSpec",
    "NamespaceStatus",
    "PriorityClass",
    "Taint",
    "Toleration",
]

CORE_API_VERSION: Final = "v1"
SCHEDULING_API_VERSION: Final = "scheduling.k8s.io/v1"


class Toleration(KubeModel):
    key: str | None = None
    operator: str | None = None  # Exists | Equal
    value: str | None = None
    effect: str | None = None  # NoSchedule | PreferNoSchedule | NoExecute
    toleration_seconds: int | None = None


class Taint(KubeModel):
    key: str
    effect: str
    value: str | None = None
    time_added: str | None = None


class NamespaceSpec(KubeModel):
    finalizers: list[str] | None = None


class NamespaceStatus(KubeModel):
    phase: str | None = None  # Active | Terminating


class Namespace(KubeModel):
    """A core/v1 Namespace; only its labels matter to Kueue (``managedJobsNamespaceSelector``)."""

    api_version: Literal["v1"] = CORE_API_VERSION
    kind: Literal["Namespace"] = "Namespace"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: NamespaceSpec | None = None
    status: NamespaceStatus | None = None


class PriorityClass(KubeModel):
    """A scheduling.k8s.io/v1 PriorityClass (the ``scheduling.k8s.io/priorityclass`` source).

    ``value`` is required by the API; ``globalDefault`` marks the class used for pods without one.
    """

    api_version: Literal["scheduling.k8s.io/v1"] = SCHEDULING_API_VERSION
    kind: Literal["PriorityClass"] = "PriorityClass"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    value: int
    global_default: bool | None = None
    description: str | None = None
    preemption_policy: str | None = None  # PreemptLowerPriority | Never
