"""Kueue's own job integrations: which kinds Kueue can manage itself, and how they show in a cluster.

Kueue registers one integration per framework name (``batch/job``, ``jobset.x-k8s.io/jobset``,
``workload.codeflare.dev/appwrapper``, ``kubeflow.org/pytorchjob`` ...). kueue-bridge needs to know
them for two reasons, and this table is the one place that says what they are:

* **Two controllers for one kind.** A kind that kueue-bridge manages must not also be one of Kueue's
  enabled built-in integrations (Kueue's reconciler and ours would fight over the same job and
  Workload). Preflight and the components' start-up checks look the kind up here to name the
  Kueue framework to disable.
  Only Kueue's Configuration says which are enabled: its chart and manifests register every
  integration's ``m<kind>.kb.io`` webhook, and the manager answers a disabled one with a no-op.
* **The ancestor walk** follows controller owners of every kind Kueue knows, managed here or not
  (a child of a JobSet that real Kueue manages is still a child).

``ships_roles``: Kueue's manifests ship ``<kind>-editor-role`` / ``<kind>-viewer-role`` ClusterRoles
(aggregated into ``batch-admin-role`` / ``batch-user-role``) for this kind; ``kueue-bridge manifests``
renders the equivalent for every managed kind without them.

Invariant: framework names, groups, kinds and plurals are Kueue's (``pkg/controller/jobs/*``,
``config/components/rbac``); a kind appears once.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

__all__ = [
    "KUEUE_AGGREGATE_ADMIN_LABEL",
    "KUEUE_AGGREGATE_USER_LABEL",
    "KUEUE_INTEGRATIONS",
    "KUEUE_INTEGRATION_BY_GROUP_KIND",
    "KueueIntegration",
    "kueue_integration_for",
]

#: The labels Kueue's ``batch-admin-role`` and ``batch-user-role`` aggregate by.
KUEUE_AGGREGATE_ADMIN_LABEL: Final = "rbac.kueue.x-k8s.io/batch-admin"
KUEUE_AGGREGATE_USER_LABEL: Final = "rbac.kueue.x-k8s.io/batch-user"


@dataclass(frozen=True)
class KueueIntegration:
    """One of Kueue's built-in job integrations."""

    framework: str
    group: str
    version: str
    kind: str
    plural: str
    ships_roles: bool

    @property
    def group_kind(self) -> tuple[str, str]:
        return (self.group, self.kind)

    @property
    def owner_key(self) -> tuple[str, str]:
        """``(apiVersion, kind)``, as an owner reference names this kind."""
        return (f"{self.group}/{self.version}" if self.group else self.version, self.kind)


def _integration(
    framework: str, group: str, version: str, kind: str, *, ships_roles: bool = True
) -> KueueIntegration:
    return KueueIntegration(framework, group, version, kind, kind.lower() + "s", ships_roles)


KUEUE_INTEGRATIONS: Final[tuple[KueueIntegration, ...]] = (
    _integration("batch/job", "batch", "v1", "Job"),
    _integration("jobset.x-k8s.io/jobset", "jobset.x-k8s.io", "v1alpha2", "JobSet"),
    _integration(
        "workload.codeflare.dev/appwrapper",
        "workload.codeflare.dev",
        "v1beta2",
        "AppWrapper",
        ships_roles=False,
    ),
    _integration("kubeflow.org/mpijob", "kubeflow.org", "v2beta1", "MPIJob"),
    _integration("kubeflow.org/pytorchjob", "kubeflow.org", "v1", "PyTorchJob"),
    _integration("kubeflow.org/tfjob", "kubeflow.org", "v1", "TFJob"),
    _integration("kubeflow.org/xgboostjob", "kubeflow.org", "v1", "XGBoostJob"),
    _integration("kubeflow.org/paddlejob", "kubeflow.org", "v1", "PaddleJob"),
    _integration("kubeflow.org/jaxjob", "kubeflow.org", "v1", "JAXJob"),
    _integration("trainer.kubeflow.org/trainjob", "trainer.kubeflow.org", "v1alpha1", "TrainJob"),
    _integration("ray.io/rayjob", "ray.io", "v1", "RayJob"),
    _integration("ray.io/raycluster", "ray.io", "v1", "RayCluster"),
    _integration("ray.io/rayservice", "ray.io", "v1", "RayService"),
    _integration(
        "sparkoperator.k8s.io/sparkapplication", "sparkoperator.k8s.io", "v1beta2", "SparkApplication"
    ),
    _integration("deployment", "apps", "v1", "Deployment", ships_roles=False),
    _integration("statefulset", "apps", "v1", "StatefulSet", ships_roles=False),
    _integration(
        "leaderworkerset.x-k8s.io/leaderworkerset", "leaderworkerset.x-k8s.io", "v1", "LeaderWorkerSet"
    ),
    _integration("pod", "", "v1", "Pod", ships_roles=False),
)

KUEUE_INTEGRATION_BY_GROUP_KIND: Final[Mapping[tuple[str, str], KueueIntegration]] = {
    integration.group_kind: integration for integration in KUEUE_INTEGRATIONS
}


def kueue_integration_for(group: str, kind: str) -> KueueIntegration | None:
    """Kueue's built-in integration for this kind (any version), ``None`` when Kueue has none."""
    return KUEUE_INTEGRATION_BY_GROUP_KIND.get((group, kind))
