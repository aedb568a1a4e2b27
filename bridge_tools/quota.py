"""A ClusterQueue's quota, what is in use, and whether one Workload's request fits.

``explain`` answers "why is my job pending?" with numbers: ``ClusterQueue team-cq has 8/8 cpu in
use in flavor default; this job needs 2 cpu``. This module computes those numbers the way Kueue's
flavor assigner sees them, without scheduling anything:

* **Request.** A Workload's request per resource is the sum over its pod sets of the per-pod
  requests (``shared.quantity.pod_requests``: Kueue's ``PodRequests``) times ``count``.
* **Usage.** Kueue's own figures when the ClusterQueue has ``status.flavorsReservation`` (real
  Kueue writes it); otherwise (the devcluster's stand-in does not) the sum of
  ``status.admission.podSetAssignments[].resourceUsage`` of the unfinished Workloads holding quota
  in that ClusterQueue -- the same numbers Kueue adds up.
* **Fit.** Flavors of a resource group are tried in order (Kueue's default flavor fungibility); a
  flavor fits when every requested resource of the group fits, as Kueue's flavor assigner decides
  it: never when the request exceeds what the ClusterQueue could *potentially* get, now when it is
  within what is *available* -- both from :mod:`bridge_tools.cohort` (for a ClusterQueue in a
  cohort: its unused quota plus what the cohort tree can lend it, within ``borrowingLimit`` and the
  others' ``lendingLimit``; without one: nominal minus usage, and nominal). Without a tree (it
  could not be computed: a ``parentName`` cycle) a ClusterQueue in a cohort falls back to its own
  limits and a request that borrowing might cover is reported as possible, never as blocked.
  Preemption is not simulated.

Pure functions over raw objects and typed models; no API calls.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from bridge_tools.cohort import CohortTree
from shared.constants import Condition
from shared.kube.conditions import is_object_condition_true
from shared.models.queue import ClusterQueue
from shared.models.workload import PodSet
from shared.quantity import format_usage, parse_quantity, pod_requests

__all__ = [
    "FlavorFit",
    "QuotaLine",
    "QuotaReport",
    "format_amount",
    "per_pod_requests",
    "quota_report",
    "reserved_usage",
    "workload_requests",
]

FlavorResource = tuple[str, str]


def format_amount(resource: str, value: Decimal) -> str:
    """``value`` of ``resource`` as Kueue prints it (``2``, ``500m``, ``1536Mi``)."""
    return format_usage(resource, value)


def per_pod_requests(pod_set: PodSet) -> dict[str, Decimal]:
    """One pod's effective requests (``ValueError`` for a malformed quantity)."""
    return pod_requests((pod_set.template or {}).get("spec") or {})


def workload_requests(pod_sets: Iterable[PodSet]) -> dict[str, Decimal]:
    """The whole Workload's request per resource: per-pod requests times ``count``, summed."""
    total: dict[str, Decimal] = {}
    for pod_set in pod_sets:
        for resource, amount in per_pod_requests(pod_set).items():
            total[resource] = total.get(resource, Decimal(0)) + amount * pod_set.count
    return total


def _quantity(value: Any) -> Decimal:
    try:
        return parse_quantity(value)
    except ValueError:
        return Decimal(0)


def _holds_quota(workload: Mapping[str, Any], cluster_queue: str) -> bool:
    status = workload.get("status") or {}
    admission = status.get("admission") or {}
    if admission.get("clusterQueue") != cluster_queue:
        return False
    return is_object_condition_true(workload, Condition.QUOTA_RESERVED) and not is_object_condition_true(
        workload, Condition.FINISHED
    )


def reserved_usage(
    cluster_queue: ClusterQueue, workloads: Iterable[Mapping[str, Any]]
) -> tuple[dict[FlavorResource, Decimal], str]:
    """Quota in use per (flavor, resource), and where the figures come from."""
    usage: dict[FlavorResource, Decimal] = {}
    reservation = cluster_queue.status.flavors_reservation if cluster_queue.status is not None else None
    if reservation:
        for flavor in reservation:
            for resource in flavor.resources:
                usage[(flavor.name, resource.name)] = _quantity(resource.total or 0)
        return usage, "ClusterQueue status.flavorsReservation"
    name = cluster_queue.metadata.name or ""
    for workload in workloads:
        if not _holds_quota(workload, name):
            continue
        for assignment in ((workload.get("status") or {}).get("admission") or {}).get(
            "podSetAssignments"
        ) or []:
            flavors = assignment.get("flavors") or {}
            for resource, amount in (assignment.get("resourceUsage") or {}).items():
                key = (str(flavors.get(resource, "")), str(resource))
                usage[key] = usage.get(key, Decimal(0)) + _quantity(amount)
    return usage, "sum of the admissions of the Workloads holding quota"


@dataclass(frozen=True)
class QuotaLine:
    """One (flavor, resource) of the ClusterQueue; ``borrowing_limit`` ``None`` means unlimited."""

    flavor: str
    resource: str
    nominal: Decimal
    borrowing_limit: Decimal | None
    used: Decimal
    requested: Decimal
    lending_limit: Decimal | None = None
    #: Kueue's available / potentially available quota (``None``: not computed, see the docstring)
    available: Decimal | None = None
    potential: Decimal | None = None

    @property
    def borrowed(self) -> Decimal:
        return max(self.used - self.nominal, Decimal(0))


@dataclass(frozen=True)
class FlavorFit:
    """Why one flavor cannot take the request for one resource."""

    flavor: str
    resource: str
    line: QuotaLine
    never: bool  # larger than the flavor could ever give (nominal, plus borrowing limit in a cohort)


@dataclass(frozen=True)
class QuotaReport:
    lines: list[QuotaLine]
    uncovered: list[str]  # requested resources no resource group covers
    blocked: list[FlavorFit]  # per blocked resource group: the first flavor's first shortfall
    may_borrow: bool  # a fitting flavor fits only by borrowing from the cohort
    usage_source: str


def _limit(line: QuotaLine, *, cohort: bool) -> Decimal | None:
    """The most this flavor can hold for the resource (``None``: unlimited, by borrowing)."""
    if not cohort:
        return line.nominal
    return None if line.borrowing_limit is None else line.nominal + line.borrowing_limit


def _shortfall(line: QuotaLine, *, cohort: bool) -> FlavorFit | None:
    if line.available is not None and line.potential is not None:
        if line.requested > line.potential:
            return FlavorFit(line.flavor, line.resource, line, never=True)
        if line.requested > line.available:
            return FlavorFit(line.flavor, line.resource, line, never=False)
        return None
    limit = _limit(line, cohort=cohort)
    if limit is not None and line.requested > limit:
        return FlavorFit(line.flavor, line.resource, line, never=True)
    if not cohort and line.used + line.requested > line.nominal:
        return FlavorFit(line.flavor, line.resource, line, never=False)
    if cohort and limit is not None and line.used + line.requested > limit:
        return FlavorFit(line.flavor, line.resource, line, never=False)
    return None


def quota_report(
    cluster_queue: ClusterQueue,
    *,
    usage: Mapping[FlavorResource, Decimal],
    requests: Mapping[str, Decimal],
    usage_source: str = "",
    tree: CohortTree | None = None,
) -> QuotaReport:
    """Every quota line of ``cluster_queue`` and whether ``requests`` fit (see the module docstring)."""
    cohort = bool(cluster_queue.spec.cohort_name)
    wanted = {resource: amount for resource, amount in requests.items() if amount > 0}
    lines: list[QuotaLine] = []
    covered: set[str] = set()
    blocked: list[FlavorFit] = []
    may_borrow = False
    for group in cluster_queue.spec.resource_groups or []:
        covered.update(group.covered_resources)
        group_wanted = [resource for resource in group.covered_resources if resource in wanted]
        first_shortfall: FlavorFit | None = None
        fitted = not group_wanted
        for flavor in group.flavors:
            quotas = {quota.name: quota for quota in flavor.resources}
            flavor_lines = []
            for resource in group.covered_resources:
                quota = quotas.get(resource)
                fr = (flavor.name, resource)
                line = QuotaLine(
                    flavor=flavor.name,
                    resource=resource,
                    nominal=_quantity(quota.nominal_quota) if quota else Decimal(0),
                    borrowing_limit=(
                        _quantity(quota.borrowing_limit)
                        if quota is not None and quota.borrowing_limit is not None
                        else None
                    ),
                    used=usage.get(fr, Decimal(0)),
                    requested=wanted.get(resource, Decimal(0)),
                    lending_limit=(
                        _quantity(quota.lending_limit)
                        if quota is not None and quota.lending_limit is not None
                        else None
                    ),
                    available=tree.available(fr) if tree is not None else None,
                    potential=tree.potential(fr) if tree is not None else None,
                )
                lines.append(line)
                flavor_lines.append(line)
            if fitted:
                continue
            shortfalls = [
                fit for line in flavor_lines if line.requested and (fit := _shortfall(line, cohort=cohort))
            ]
            if not shortfalls:
                fitted = True
                may_borrow = may_borrow or any(
                    line.used + line.requested > line.nominal for line in flavor_lines
                )
            elif first_shortfall is None:
                first_shortfall = shortfalls[0]
        if not fitted and first_shortfall is not None:
            blocked.append(first_shortfall)
    uncovered = sorted(resource for resource in wanted if resource not in covered)
    return QuotaReport(
        lines=lines, uncovered=uncovered, blocked=blocked, may_borrow=may_borrow, usage_source=usage_source
    )
