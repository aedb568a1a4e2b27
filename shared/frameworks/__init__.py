"""Framework adapters: the built-in kinds and the declarative adapter for any CRD."""

from shared.frameworks.base import (
    AdapterError,
    FieldError,
    FinishedState,
    GenericJob,
    GroupVersionKind,
    JobWithCustomStop,
    JobWithManagedBy,
    JobWithPodLabelSelector,
    JobWithPriorityClass,
    JobWithReclaimablePods,
    JobWithValidation,
    ReclaimablePodCount,
    StopStep,
)
from shared.frameworks.spec import DeclarativeAdapterSpec

__all__ = [
    "AdapterError",
    "DeclarativeAdapterSpec",
    "FieldError",
    "FinishedState",
    "GenericJob",
    "GroupVersionKind",
    "JobWithCustomStop",
    "JobWithManagedBy",
    "JobWithPodLabelSelector",
    "JobWithPriorityClass",
    "JobWithReclaimablePods",
    "JobWithValidation",
    "ReclaimablePodCount",
    "StopStep",
]
