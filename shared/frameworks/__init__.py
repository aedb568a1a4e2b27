"""Framework adapters: the built-in kinds and the declarative adapter for any CRD.

``base`` holds the contracts (``GenericJob`` and the optional interfaces), ``registry`` maps kinds to
adapters; ``builtin_kinds`` is the one table of built-in kinds (name, GVK, plural, own controller,
Kueue's integration); ``batch_job``, ``jobset``, ``appwrapper`` and ``tekton`` are the built-in adapters and
``declarative`` (configured by ``spec``) serves every other kind. ``paths`` and ``cel`` are the two
ways a declarative spec reaches into an object. ``copy_on_write`` wraps any adapter over a shared
(cached) object so that the object is copied only when the adapter is about to change it.
``workload_builder`` builds the Workload for a job through these contracts (Kueue's
``ConstructWorkload``, in jobframework too).
"""

from shared.frameworks.base import (
    AdapterConfigError,
    AdapterError,
    FieldError,
    FinishedState,
    GenericJob,
    JobWithCustomStop,
    JobWithManagedBy,
    JobWithPodLabelSelector,
    JobWithPriorityClass,
    JobWithReclaimablePods,
    JobWithValidation,
    ReclaimablePodCount,
    StopStep,
)
from shared.frameworks.declarative import DeclarativeAdapter, DeclarativeFramework
from shared.frameworks.registry import (
    BUILTIN_FRAMEWORKS,
    DeclarativeKind,
    Framework,
    FrameworkRegistry,
    InvalidExternalNameError,
    UnknownFrameworkError,
    UnmanagedKindError,
    builtin_gvk,
    builtin_plural,
    parse_external_name,
)
from shared.frameworks.spec import DeclarativeAdapterSpec

__all__ = [
    "BUILTIN_FRAMEWORKS",
    "AdapterConfigError",
    "AdapterError",
    "DeclarativeAdapter",
    "DeclarativeAdapterSpec",
    "DeclarativeFramework",
    "DeclarativeKind",
    "FieldError",
    "FinishedState",
    "Framework",
    "FrameworkRegistry",
    "GenericJob",
    "InvalidExternalNameError",
    "JobWithCustomStop",
    "JobWithManagedBy",
    "JobWithPodLabelSelector",
    "JobWithPriorityClass",
    "JobWithReclaimablePods",
    "JobWithValidation",
    "ReclaimablePodCount",
    "StopStep",
    "UnknownFrameworkError",
    "UnmanagedKindError",
    "builtin_gvk",
    "builtin_plural",
    "parse_external_name",
]
