"""Kueue ``LocalQueue`` and ``ClusterQueue`` in their storage version, ``kueue.x-k8s.io/v1beta2``.

kueue-bridge reads queues (the webhook checks that a LocalQueue exists and is not stopped, the
reconciler reads a ClusterQueue's admission checks and stop policy, the MultiKueue sync mirrors
queues to workers) and never owns them, so:

* everything the bridge decides on is typed (``clusterQueue``, ``stopPolicy``, ``namespaceSelector``,
  ``resourceGroups``, ``admissionChecksStrategy``, ``preemption``, ``cohortName``);
* scheduler-internal structures (fair sharing status, concurrent admission policy) are raw dicts;
* nothing is dropped: ``extra="allow"`` keeps whatever a newer Kueue adds.

Names follow the v1beta2 CRD: the cohort is ``spec.cohortName`` (v1beta1 ``spec.cohort``), the
admission checks are ``spec.admissionChecksStrategy.admissionChecks[].name`` (v1beta1 also had a
plain ``spec.admissionChecks`` list), and a LocalQueue's usage is ``status.flavorsUsage`` (v1beta1
``status.flavorUsage``).

``nominalQuota``/``borrowingLimit``/``lendingLimit`` and usage totals are ``IntOrString``: the wire
form (``10`` vs ``"10"`` vs ``10Gi``) survives a round trip; parse them with a quantity parser when
arithmetic is needed.
"""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeVar

from pydantic import Field

from shared.models.base import IntOrString, KubeModel
from shared.models.condition import Condition
from shared.models.meta import KueueObject, LabelSelector

__all__ = [
    "AdmissionCheckStrategyRule",
    "AdmissionChecksStrategy",
    "AdmissionScope",
    "BorrowWithinCohort",
    "ClusterQueue",
    "ClusterQueuePreemption",
    "ClusterQueueSpec",
    "ClusterQueueStatus",
    "FairSharing",
    "FlavorFungibility",
    "FlavorQuotas",
    "FlavorUsage",
    "LocalQueue",
    "LocalQueueFlavorUsage",
    "LocalQueueResourceUsage",
    "LocalQueueSpec",
    "LocalQueueStatus",
    "QueueStatus",
    "ResourceGroup",
    "ResourceQuota",
    "ResourceUsage",
]


class FairSharing(KubeModel):
    """``spec.fairSharing`` of a ClusterQueue, Cohort or LocalQueue (``weight`` is a quantity)."""

    weight: IntOrString | None = None


# --- what both queues report ----------------------------------------------------------------------
_FlavorUsageT = TypeVar("_FlavorUsageT", bound=KubeModel)


class QueueStatus(KubeModel, Generic[_FlavorUsageT]):
    """The status fields a LocalQueue and a ClusterQueue share; only the shape of a flavor's usage
    differs between them."""

    conditions: list[Condition] | None = None
    pending_workloads: int | None = None
    reserving_workloads: int | None = None
    admitted_workloads: int | None = None
    flavors_reservation: list[_FlavorUsageT] | None = None
    flavors_usage: list[_FlavorUsageT] | None = None
    fair_sharing: dict[str, Any] | None = None


# --- LocalQueue ------------------------------------------------------------------------------------


class LocalQueueSpec(KubeModel):
    cluster_queue: str | None = None
    stop_policy: str | None = None  # None | Hold | HoldAndDrain
    fair_sharing: FairSharing | None = None


class LocalQueueResourceUsage(KubeModel):
    name: str
    total: IntOrString | None = None


class LocalQueueFlavorUsage(KubeModel):
    name: str
    resources: list[LocalQueueResourceUsage] = Field(default_factory=list)


class LocalQueueStatus(QueueStatus[LocalQueueFlavorUsage]):
    """A LocalQueue's status: its flavors' usage has no ``borrowed``."""


class LocalQueue(KueueObject):
    kind: Literal["LocalQueue"] = "LocalQueue"
    spec: LocalQueueSpec = Field(default_factory=LocalQueueSpec)
    status: LocalQueueStatus | None = None


# --- ClusterQueue ----------------------------------------------------------------------------------


class ResourceQuota(KubeModel):
    """One resource of one flavor: ``nominalQuota`` is required by the CRD."""

    name: str
    nominal_quota: IntOrString
    borrowing_limit: IntOrString | None = None
    lending_limit: IntOrString | None = None


class FlavorQuotas(KubeModel):
    name: str
    resources: list[ResourceQuota] = Field(default_factory=list)


class ResourceGroup(KubeModel):
    covered_resources: list[str] = Field(default_factory=list)
    flavors: list[FlavorQuotas] = Field(default_factory=list)


class AdmissionCheckStrategyRule(KubeModel):
    """An admission check and the flavors it applies to (all flavors when ``onFlavors`` is unset)."""

    name: str
    on_flavors: list[str] | None = None


class AdmissionChecksStrategy(KubeModel):
    admission_checks: list[AdmissionCheckStrategyRule] = Field(default_factory=list)


class BorrowWithinCohort(KubeModel):
    policy: str | None = None  # Never | LowerPriority
    max_priority_threshold: int | None = None


class ClusterQueuePreemption(KubeModel):
    reclaim_within_cohort: str | None = None  # Never | LowerPriority | Any
    borrow_within_cohort: BorrowWithinCohort | None = None
    within_cluster_queue: str | None = None  # Never | LowerPriority | LowerOrNewerEqualPriority


class FlavorFungibility(KubeModel):
    when_can_borrow: str | None = None  # MayStopSearch | TryNextFlavor
    when_can_preempt: str | None = None  # MayStopSearch | TryNextFlavor
    preference: str | None = None  # BorrowingOverPreemption | PreemptionOverBorrowing


class AdmissionScope(KubeModel):
    admission_mode: str  # UsageBasedAdmissionFairSharing | NoAdmissionFairSharing


class ClusterQueueSpec(KubeModel):
    resource_groups: list[ResourceGroup] | None = None
    cohort_name: str | None = None
    queueing_strategy: str | None = None  # StrictFIFO | BestEffortFIFO
    namespace_selector: LabelSelector | None = None
    flavor_fungibility: FlavorFungibility | None = None
    preemption: ClusterQueuePreemption | None = None
    admission_checks_strategy: AdmissionChecksStrategy | None = None
    stop_policy: str | None = None  # None | Hold | HoldAndDrain
    fair_sharing: FairSharing | None = None
    admission_scope: AdmissionScope | None = None
    concurrent_admission_policy: dict[str, Any] | None = None

    def admission_check_names(self) -> list[str]:
        """Names of every admission check the queue requires, in declaration order."""
        if self.admission_checks_strategy is None:
            return []
        return [rule.name for rule in self.admission_checks_strategy.admission_checks]


class ResourceUsage(KubeModel):
    name: str
    total: IntOrString | None = None
    borrowed: IntOrString | None = None


class FlavorUsage(KubeModel):
    name: str
    resources: list[ResourceUsage] = Field(default_factory=list)


class ClusterQueueStatus(QueueStatus[FlavorUsage]):
    """A ClusterQueue's status: its flavors' usage says what is borrowed."""


class ClusterQueue(KueueObject):
    kind: Literal["ClusterQueue"] = "ClusterQueue"
    spec: ClusterQueueSpec = Field(default_factory=ClusterQueueSpec)
    status: ClusterQueueStatus | None = None
