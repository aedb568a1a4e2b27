"""Kueue ``Workload`` in its storage version, ``kueue.x-k8s.io/v1beta2``.

Pod templates are kept as raw dicts (``PodTemplate``): they are user data relayed between a job and
its Workload, and any typed model of ``PodSpec`` would drop fields from newer Kubernetes versions.
Sub-structures we do not interpret (topology requests/assignments, scheduling stats, resource
usage) are typed loosely on purpose and rely on ``extra="allow"`` to keep every field.

Every field name was checked against the v1beta2 schema of the real CRD
(``kueue.x-k8s.io_workloads.yaml``); ``tests/unit/models/test_crd_schema.py`` proves that a Workload
with every modelled field set serialises to an object that schema accepts. Defaults follow the CRD
(``podSets[].name`` and ``podSetAssignments[].name`` default to ``main``, ``count`` to 1).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from shared.constants import DEFAULT_PODSET_NAME
from shared.models.base import KubeModel
from shared.models.condition import Condition
from shared.models.meta import KueueObject

__all__ = [
    "Admission",
    "AdmissionCheckState",
    "PodSet",
    "PodSetAssignment",
    "PodSetUpdate",
    "PodTemplate",
    "PreemptionGateState",
    "PriorityClassRef",
    "ReclaimablePod",
    "RequeueState",
    "Workload",
    "WorkloadSpec",
    "WorkloadStatus",
]

PodTemplate = dict[str, Any]
"""A ``PodTemplateSpec`` as raw JSON (``metadata`` + ``spec``)."""


class PodSet(KubeModel):
    name: str = DEFAULT_PODSET_NAME
    template: PodTemplate = Field(default_factory=dict)
    count: int = 1
    min_count: int | None = None
    topology_request: dict[str, Any] | None = None


class PriorityClassRef(KubeModel):
    group: str  # "kueue.x-k8s.io" | "scheduling.k8s.io"
    kind: str  # "WorkloadPriorityClass" | "PriorityClass"
    name: str


class WorkloadSpec(KubeModel):
    pod_sets: list[PodSet] = Field(default_factory=list)
    queue_name: str | None = None
    priority_class_ref: PriorityClassRef | None = None
    priority: int | None = None
    active: bool | None = None
    maximum_execution_time_seconds: int | None = None
    preemption_gates: list[dict[str, Any]] | None = None


class PodSetAssignment(KubeModel):
    name: str = DEFAULT_PODSET_NAME
    flavors: dict[str, str] | None = None
    resource_usage: dict[str, Any] | None = None
    count: int | None = None
    topology_assignment: dict[str, Any] | None = None
    delayed_topology_request: str | None = None


class Admission(KubeModel):
    cluster_queue: str
    pod_set_assignments: list[PodSetAssignment] = Field(default_factory=list)


class PodSetUpdate(KubeModel):
    name: str
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    node_selector: dict[str, str] | None = None
    tolerations: list[dict[str, Any]] | None = None


class AdmissionCheckState(KubeModel):
    name: str
    state: str  # Pending | Ready | Retry | Rejected
    last_transition_time: str | None = None
    message: str = ""
    requeue_after_seconds: int | None = None
    retry_count: int | None = None
    pod_set_updates: list[PodSetUpdate] | None = None


class RequeueState(KubeModel):
    count: int | None = None
    requeue_at: str | None = None


class ReclaimablePod(KubeModel):
    name: str
    count: int


class PreemptionGateState(KubeModel):
    """``status.preemptionGates[]``: whether a gate named in ``spec.preemptionGates`` is open."""

    name: str
    position: str  # Open | Closed
    last_transition_time: str | None = None


class WorkloadStatus(KubeModel):
    conditions: list[Condition] | None = None
    admission: Admission | None = None
    requeue_state: RequeueState | None = None
    reclaimable_pods: list[ReclaimablePod] | None = None
    admission_checks: list[AdmissionCheckState] | None = None
    resource_requests: list[dict[str, Any]] | None = None
    accumulated_past_execution_time_seconds: int | None = None
    scheduling_stats: dict[str, Any] | None = None
    nominated_cluster_names: list[str] | None = None
    cluster_name: str | None = None
    unhealthy_nodes: list[dict[str, Any]] | None = None
    preemption_gates: list[PreemptionGateState] | None = None


class Workload(KueueObject):
    kind: Literal["Workload"] = "Workload"
    spec: WorkloadSpec = Field(default_factory=WorkloadSpec)
    status: WorkloadStatus | None = None
