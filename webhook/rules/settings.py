"""Everything the admission rules depend on, passed in explicitly (never read from globals).

``WebhookSettings`` carries the Kueue configuration fields the rules read
(``manageJobsWithoutQueueName``, ``managedJobsNamespaceSelector``, the MultiKueue controller names)
and the table of served frameworks. ``Framework`` is the webhook's view of one job kind: its GVK, the
plural resource (for the webhook rules) and a factory wrapping a raw
object in its ``GenericJob`` adapter. It is built from ``shared.frameworks`` (built-in and
declarative adapters) by ``webhook.settings_from_config``; tests build it directly.

Feature gates are at Kueue's defaults for the commit we mirror (LocalQueueDefaulting,
WorkloadPriorityClassDefaulting, MultiKueue, SkipAncestorCheckForDeletedWorkloads and
WorkloadIdentifierAnnotations on; AdmissionGatedBy via the adapters). ElasticJobsViaWorkloadSlices
(on by default) is configurable: ``Framework.elastic_jobs``, set from ``featureGates``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from shared.ancestry import REPLICA_SET_OWNER, OwnerKinds, kueue_owner_kinds
from shared.constants import MULTIKUEUE_CONTROLLER_NAME
from shared.frameworks.base import GenericJob
from shared.kube import GroupVersionKind
from shared.workload_slicing import enabled as slicing_enabled

__all__ = [
    "ELASTIC_JOB_KINDS",
    "PREBUILT_WORKLOAD_KINDS",
    "REPLICASET_OWNER",
    "Framework",
    "NamespaceSelector",
    "WebhookSettings",
]

#: ReplicaSet is always a "known owner" in Kueue's ancestor walk (Pod -> ReplicaSet -> Deployment)
REPLICASET_OWNER = REPLICA_SET_OWNER


class NamespaceSelector(Protocol):
    def matches(self, labels: Mapping[str, str]) -> bool: ...


@dataclass(frozen=True)
class Framework:
    #: Kueue's framework name ("batch/job") or the external name ("Kind.version.group")
    name: str
    gvk: GroupVersionKind
    #: plural resource name, e.g. "jobs"
    plural: str
    adapter: Callable[[dict[str, Any]], GenericJob]
    #: batch/v1 Job's webhook re-runs the create checks on update (Kueue's ``JobWebhook``); the
    #: generic ``BaseWebhook`` used by every other kind does not
    revalidate_create_on_update: bool = False
    #: batch/v1 Job's defaulting gates the pod template of an elastic job
    #: (``kueue.x-k8s.io/elastic-job: "true"``) with the ``kueue.x-k8s.io/elastic-job`` scheduling gate
    #: at ``<template_path>.spec.schedulingGates``; ``None`` for kinds whose webhook does not
    elastic_gate_template_path: str | None = None
    #: Kueue's ``ElasticJobsViaWorkloadSlices`` feature gate: when off, ``kueue.x-k8s.io/elastic-job``
    #: means nothing (no scheduling gate, no elastic validation rule), as ``workloadslicing.Enabled``
    elastic_jobs: bool = True
    #: the AppWrapper operator's own admission rules (``webhook.rules.appwrapper``), including a
    #: SubjectAccessReview per wrapped component for the requesting user
    appwrapper_rules: bool = False
    #: a kind Kueue knows only as an external framework (a declarative kind, Tekton's PipelineRun):
    #: Kueue has no webhook rule for it, kueue-bridge's reconciler adopts prebuilt Workloads of
    #: every kind and its MultiKueue gives each worker copy one, so the name is accepted. Otherwise
    #: Kueue's ``supportedPrebuiltWlJobGVKs`` decides, as for Kueue's own integrations.
    external_prebuilt_workloads: bool = False

    @property
    def supports_prebuilt_workload(self) -> bool:
        return self.external_prebuilt_workloads or str(self.gvk) in PREBUILT_WORKLOAD_KINDS

    @property
    def supports_elastic_jobs(self) -> bool:
        return str(self.gvk) in ELASTIC_JOB_KINDS

    def is_elastic(self, obj: Mapping[str, Any]) -> bool:
        """``workloadslicing.Enabled`` for a job of this kind."""
        return slicing_enabled(obj, feature_gate=self.elastic_jobs)

    @property
    def owner_key(self) -> tuple[str, str]:
        return (self.gvk.api_version, self.gvk.kind)


#: GVKs for which Kueue accepts a prebuilt workload (``supportedPrebuiltWlJobGVKs``)
PREBUILT_WORKLOAD_KINDS = frozenset(
    {
        "batch/v1, Kind=Job",
        "jobset.x-k8s.io/v1alpha2, Kind=JobSet",
        "kubeflow.org/v1, Kind=TFJob",
        "kubeflow.org/v1, Kind=PaddleJob",
        "kubeflow.org/v1, Kind=PyTorchJob",
        "kubeflow.org/v1, Kind=XGBoostJob",
        "trainer.kubeflow.org/v1alpha1, Kind=TrainJob",
        "kubeflow.org/v2beta1, Kind=MPIJob",
        "ray.io/v1, Kind=RayJob",
        "/v1, Kind=Pod",
        "ray.io/v1, Kind=RayCluster",
        "ray.io/v1, Kind=RayService",
        "workload.codeflare.dev/v1beta2, Kind=AppWrapper",
    }
)
#: GVKs for which Kueue accepts the elastic-job annotation (``supportedElasticJobGVKs``)
ELASTIC_JOB_KINDS = frozenset(
    {
        "batch/v1, Kind=Job",
        "ray.io/v1, Kind=RayCluster",
        "ray.io/v1, Kind=RayJob",
        "ray.io/v1, Kind=RayService",
    }
)


@dataclass(frozen=True)
class WebhookSettings:
    frameworks: tuple[Framework, ...]
    manage_jobs_without_queue_name: bool = False
    #: ``None`` means "every namespace" (Kueue's nil selector)
    managed_jobs_namespace_selector: NamespaceSelector | None = None
    #: AdmissionCheck controller names that mean "dispatch with MultiKueue" (Kueue's and ours)
    multikueue_controller_names: frozenset[str] = frozenset({MULTIKUEUE_CONTROLLER_NAME})
    #: owner kinds that count as Kueue-managed beyond our frameworks (e.g. kinds real Kueue manages)
    extra_managed_owner_kinds: frozenset[tuple[str, str]] = frozenset()
    _by_gvk: dict[tuple[str, str, str], Framework] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        table = {(f.gvk.group, f.gvk.version, f.gvk.kind): f for f in self.frameworks}
        object.__setattr__(self, "_by_gvk", table)

    def framework_for(self, *, group: str, version: str, kind: str) -> Framework | None:
        return self._by_gvk.get((group, version, kind))

    @functools.cached_property
    def managed_owner_kinds(self) -> frozenset[tuple[str, str]]:
        """(apiVersion, kind) of owners whose jobs Kueue manages (``getJobTypeForOwner`` non-nil);
        computed once (read by every admission of a job with an owner)."""
        return frozenset(f.owner_key for f in self.frameworks) | self.extra_managed_owner_kinds

    @functools.cached_property
    def owner_kinds(self) -> OwnerKinds:
        """The ancestor walk's kind sets (``shared.ancestry``): managed kinds, and every kind Kueue
        registers as an integration known."""
        return kueue_owner_kinds(self.managed_owner_kinds)

    @functools.cached_property
    def known_owner_kinds(self) -> frozenset[tuple[str, str]]:
        """Owners the ancestor walk follows (``isKnownOwner``): Kueue's integrations, the managed
        kinds and ReplicaSet."""
        return frozenset(self.owner_kinds.known) | {REPLICASET_OWNER}

    def namespace_selected(self, labels: Mapping[str, str]) -> bool:
        selector = self.managed_jobs_namespace_selector
        return True if selector is None else selector.matches(labels)
