"""Framework adapters: the built-in kinds and the declarative adapter for any CRD.

``base`` holds the contracts (``GenericJob`` and the optional interfaces), ``registry`` maps kinds to
adapters; ``builtin_kinds`` is the one table of built-in kinds (name, GVK, plural, own controller,
Kueue's integration); ``batch_job``, ``jobset``, ``appwrapper`` and ``tekton`` are the built-in adapters and
``declarative`` (configured by ``spec``) serves every other kind. ``paths`` and ``cel`` are the two
ways a declarative spec reaches into an object. ``copy_on_write`` wraps any adapter over a shared
(cached) object so that the object is copied only when the adapter is about to change it.
``workload_builder`` builds the Workload for a job through these contracts (Kueue's
``ConstructWorkload``, in jobframework too).

Modules:

* ``appwrapper`` -- AppWrapper (``workload.codeflare.dev/v1beta2``), with Kueue's
  ``pkg/controller/jobs/appwrapper`` semantics
* ``base`` -- the ``GenericJob`` contract: what kueue-bridge needs to know about a job kind
* ``batch_job`` -- batch/v1 Job, with Kueue's ``pkg/controller/jobs/job`` semantics (reference notes
  §7, §3.4)
* ``builtin_base`` -- what the built-in adapters share: holding the raw object, ``spec.managedBy``
  and ``spec.suspend``
* ``builtin_kinds`` -- the kinds kueue-bridge ships an adapter for: the one table every other
  description derives from
* ``capabilities`` -- which optional adapter protocols a job implements, decided once per adapter
  class
* ``cel`` -- compile-once CEL expressions for the declarative adapter
* ``conditions`` -- the adapters' strict read of ``status.conditions`` on raw objects
  (``metav1.Condition`` and ``batch/v1`` shapes alike)
* ``copy_on_write`` -- a job adapter over the informer's cached object that copies it only when it
  is about to change
* ``declarative`` -- the declarative adapter: ``GenericJob`` for any CRD, from a
  ``DeclarativeAdapterSpec``
* ``jobset`` -- JobSet (``jobset.x-k8s.io/v1alpha2``), with Kueue's ``pkg/controller/jobs/jobset``
  semantics
* ``paths`` -- field paths into raw Kubernetes objects: ``spec.replicatedJobs[0].template``
* ``registry`` -- which adapter handles which kind: built-in frameworks by Kueue name, declarative
  ones by GVK
* ``spec`` -- the declarative adapter format: make any CRD queueable from configuration alone
* ``strconv`` -- Go ``strconv``, byte-for-byte: what Kueue accepts in annotations, and the text it
  prints
* ``tekton`` -- Tekton PipelineRun (``tekton.dev/v1``), with tekton-kueue's semantics (ecosystem
  notes §2.1)
* ``templates`` -- pod templates inside job objects: copying them into pod sets, and run/restore of
  admission data
* ``topology`` -- the Workload ``podSets[].topologyRequest`` Kueue derives from a pod template (TAS)
* ``workload_builder`` -- build the Workload for a job, and resolve its priority, as Kueue does
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
