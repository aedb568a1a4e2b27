"""MultiKueue's configuration objects, ``MultiKueueConfig`` and ``MultiKueueCluster``
(``kueue.x-k8s.io/v1beta2``).

A MultiKueue AdmissionCheck's ``parameters`` name a MultiKueueConfig, whose ``clusters`` name
MultiKueueClusters; each of those says where its kubeconfig comes from. In v1beta2 that is
``spec.clusterSource`` holding exactly one of ``kubeConfig{location, locationType}`` or
``clusterProfileRef{name}`` (a CEL rule on the CRD enforces "exactly one"); v1beta1 had
``spec.kubeConfig`` and ``spec.clusterProfileRef`` directly under ``spec``. ``locationType`` is
``Secret`` (default: a Secret named ``location`` in Kueue's namespace, key ``kubeconfig``) or
``Path`` (a file on the controller's disk).

The cluster's health is its ``Active`` condition; the config's ``quotaManagement`` (v1beta2 only)
is ``Manual`` or ``Automated``.
"""

from __future__ import annotations

from typing import Final, Literal

from pydantic import Field

from shared.models.base import KubeModel
from shared.models.condition import Condition
from shared.models.meta import KueueObject

__all__ = [
    "KUBECONFIG_LOCATION_PATH",
    "KUBECONFIG_LOCATION_SECRET",
    "ClusterProfileReference",
    "ClusterSource",
    "KubeConfigSource",
    "MultiKueueCluster",
    "MultiKueueClusterSpec",
    "MultiKueueClusterStatus",
    "MultiKueueConfig",
    "MultiKueueConfigSpec",
]

KUBECONFIG_LOCATION_SECRET: Final = "Secret"
KUBECONFIG_LOCATION_PATH: Final = "Path"


class MultiKueueConfigSpec(KubeModel):
    clusters: list[str] = Field(default_factory=list)
    quota_management: str | None = None  # Manual | Automated


class MultiKueueConfig(KueueObject):
    kind: Literal["MultiKueueConfig"] = "MultiKueueConfig"
    spec: MultiKueueConfigSpec = Field(default_factory=MultiKueueConfigSpec)


class KubeConfigSource(KubeModel):
    """Where a worker's kubeconfig is: a Secret name or an absolute file path."""

    location: str
    location_type: str | None = None  # Secret (CRD default) | Path

    @property
    def effective_location_type(self) -> str:
        """``locationType`` with the CRD default applied (objects built locally may omit it)."""
        return self.location_type or KUBECONFIG_LOCATION_SECRET


class ClusterProfileReference(KubeModel):
    name: str


class ClusterSource(KubeModel):
    kube_config: KubeConfigSource | None = None
    cluster_profile_ref: ClusterProfileReference | None = None


class MultiKueueClusterSpec(KubeModel):
    cluster_source: ClusterSource = Field(default_factory=ClusterSource)


class MultiKueueClusterStatus(KubeModel):
    conditions: list[Condition] | None = None


class MultiKueueCluster(KueueObject):
    kind: Literal["MultiKueueCluster"] = "MultiKueueCluster"
    spec: MultiKueueClusterSpec = Field(default_factory=MultiKueueClusterSpec)
    status: MultiKueueClusterStatus | None = None
