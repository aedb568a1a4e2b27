"""Cluster-scoped Kueue objects an administrator configures and ClusterQueues or Workloads refer
to: ``ResourceFlavor``, ``AdmissionCheck`` and ``WorkloadPriorityClass`` (``kueue.x-k8s.io/v1beta2``).

The bridge reads them only: a flavor's ``nodeLabels``/``nodeTaints``/``tolerations`` become the pod
template changes made when a job starts (``PodSetInfo``), an AdmissionCheck's ``controllerName``
tells the MultiKueue sync which checks are its own, and a WorkloadPriorityClass' ``value`` becomes
``Workload.spec.priority``.

The three have the same shape in v1beta1 and v1beta2 except ``AdmissionCheck.spec.retryDelayMinutes``
(v1beta1 only, deprecated and ignored by Kueue), so conversion is an ``apiVersion`` swap plus that
one field (``shared.models.conversion``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from shared.constants import API_VERSION
from shared.models.base import KubeModel
from shared.models.condition import Condition
from shared.models.core import Taint, Toleration
from shared.models.meta import ObjectMeta

__all__ = [
    "AdmissionCheck",
    "AdmissionCheckParametersReference",
    "AdmissionCheckSpec",
    "AdmissionCheckStatus",
    "ResourceFlavor",
    "ResourceFlavorSpec",
    "WorkloadPriorityClass",
]


class ResourceFlavorSpec(KubeModel):
    node_labels: dict[str, str] | None = None
    node_taints: list[Taint] | None = None
    tolerations: list[Toleration] | None = None
    topology_name: str | None = None


class ResourceFlavor(KubeModel):
    api_version: Literal["kueue.x-k8s.io/v1beta2"] = API_VERSION
    kind: Literal["ResourceFlavor"] = "ResourceFlavor"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: ResourceFlavorSpec = Field(default_factory=ResourceFlavorSpec)


class AdmissionCheckParametersReference(KubeModel):
    """``spec.parameters``: the object holding a check controller's configuration."""

    api_group: str
    kind: str
    name: str


class AdmissionCheckSpec(KubeModel):
    controller_name: str
    parameters: AdmissionCheckParametersReference | None = None


class AdmissionCheckStatus(KubeModel):
    conditions: list[Condition] | None = None


class AdmissionCheck(KubeModel):
    api_version: Literal["kueue.x-k8s.io/v1beta2"] = API_VERSION
    kind: Literal["AdmissionCheck"] = "AdmissionCheck"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    spec: AdmissionCheckSpec
    status: AdmissionCheckStatus | None = None


class WorkloadPriorityClass(KubeModel):
    """``value`` and ``description`` sit at the top level, like ``scheduling.k8s.io`` PriorityClass."""

    api_version: Literal["kueue.x-k8s.io/v1beta2"] = API_VERSION
    kind: Literal["WorkloadPriorityClass"] = "WorkloadPriorityClass"
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)
    value: int
    description: str | None = None
