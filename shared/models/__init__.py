"""Pydantic v2 models of the Kubernetes and Kueue objects kueue-bridge reads and writes."""

from shared.models.base import KubeModel, WireDict
from shared.models.condition import Condition, find_condition, is_condition_true, set_condition
from shared.models.meta import ObjectMeta, OwnerReference, controller_owner
from shared.models.workload import (
    Admission,
    AdmissionCheckState,
    PodSet,
    PodSetAssignment,
    PodSetUpdate,
    PodTemplate,
    PriorityClassRef,
    ReclaimablePod,
    RequeueState,
    Workload,
    WorkloadSpec,
    WorkloadStatus,
)

__all__ = [
    "Admission",
    "AdmissionCheckState",
    "Condition",
    "KubeModel",
    "ObjectMeta",
    "OwnerReference",
    "PodSet",
    "PodSetAssignment",
    "PodSetUpdate",
    "PodTemplate",
    "PriorityClassRef",
    "ReclaimablePod",
    "RequeueState",
    "WireDict",
    "Workload",
    "WorkloadSpec",
    "WorkloadStatus",
    "controller_owner",
    "find_condition",
    "is_condition_true",
    "set_condition",
]
