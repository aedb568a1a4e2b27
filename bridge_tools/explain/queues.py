"""The queue half of ``explain``: LocalQueue -> ClusterQueue -> quota -> position -> admission checks.

Given a job's queue name (and, when known, its Workload and its request), this walks the queues the
way Kueue decides admissibility and stops at the first thing that keeps the Workload from getting
quota: the LocalQueue is missing or stopped; the ClusterQueue is missing, inactive (its ``Active``
condition, or -- where nothing writes ClusterQueue status, as on the devcluster -- the same reasons
derived from its spec: stopped, missing ResourceFlavors or AdmissionChecks) or does not select the
namespace; a requested resource has no quota; no flavor has room. Texts that Kueue itself writes
(``Can't admit new workloads: is stopped.``, ``LocalQueue q doesn't exist``) are reproduced exactly.

When nothing blocks, the Workload's position in its ClusterQueue and LocalQueue comes from Kueue's
visibility API when it is served, else it is estimated the way Kueue orders its queue
(:mod:`bridge_tools.explain.queue_position`) -- and the output says which.

Admission checks are listed with their state and message. ``check_details`` maps an AdmissionCheck
``controllerName`` to a ``CheckDetail`` adding controller-specific evidence and answering a
``CheckEvidence`` for the verdict: ``explain`` passes :mod:`bridge_tools.explain.multikueue`'s for
every MultiKueue controller name of the configuration (which worker clusters hold copies, where it
runs). A ClusterQueue inactive because of an inactive AdmissionCheck also shows that check's own
``Active`` reason and message (``NoUsableClusters: Inactive clusters: [w1 w2]``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final

from pydantic import ValidationError

from bridge_tools.cohort import CohortTree, FlavorResource, build_cohort_tree
from bridge_tools.explain.cluster_view import (
    ADMISSION_CHECK,
    CLUSTER_QUEUE,
    COHORT,
    LOCAL_QUEUE,
    RESOURCE_FLAVOR,
    WORKLOAD,
    ClusterView,
)
from bridge_tools.explain.queue_position import QueueOrdering, queue_position
from bridge_tools.explain.verdict import Explanation, Section
from bridge_tools.quota import QuotaReport, format_amount, quota_report, reserved_usage
from shared.constants import CheckState
from shared.kube.conditions import find_condition_view, is_false, object_condition
from shared.labelselector import LabelSelector, format_selector
from shared.models.base import WireDict
from shared.models.meta import LabelSelector as ModelSelector
from shared.models.queue import ClusterQueue, LocalQueue
from shared.models.workload import AdmissionCheckState, Workload

__all__ = [
    "CheckDetail",
    "CheckEvidence",
    "CheckFacts",
    "QueueFindings",
    "analyse_queues",
    "cluster_queue_inactive_message",
    "first_unready_check",
]


@dataclass(frozen=True)
class CheckEvidence:
    """What a controller-specific detail adds to the verdict.

    ``running_on``: the (worker) cluster the job runs on, when the check says so; ``pending``: why
    the check is still ``Pending``, said in the verdict in place of the check's message.
    """

    running_on: str | None = None
    pending: str = ""


@dataclass(frozen=True)
class CheckFacts:
    """One admission check of the Workload as found: its ``name``, the AdmissionCheck (``check``,
    ``None`` if it does not exist), the Workload's ``state`` for it and the ``workload`` (``None``
    before they exist)."""

    name: str
    check: WireDict | None
    state: AdmissionCheckState | None
    workload: Workload | None


#: adds evidence for one admission check of a controller (e.g. MultiKueue's worker clusters)
CheckDetail = Callable[[ClusterView, Explanation, CheckFacts], Awaitable[CheckEvidence]]


_STOPPED_POLICIES: Final = frozenset({"Hold", "HoldAndDrain"})
_ACTIVE: Final = "Active"


@dataclass
class QueueFindings:
    """What the queue chain says; ``blocker`` is the verdict reason when it keeps the Workload out."""

    blocker: str | None = None
    cluster_queue: str | None = None
    position: str | None = None
    #: the position is this tool's estimate of Kueue's order (Kueue's visibility API said nothing)
    position_estimated: bool = False
    strict_fifo: bool = False
    cohort: str | None = None
    ahead: int = 0
    quota: QuotaReport | None = None
    #: admission check name -> what its controller's detail says (checks with a detail only)
    checks: dict[str, CheckEvidence] = field(default_factory=dict)

    @property
    def running_on(self) -> str | None:
        """The cluster an admission check says the job runs on (MultiKueue's worker)."""
        return next((found.running_on for found in self.checks.values() if found.running_on), None)


def _namespace_selector(selector: ModelSelector | None, labels: Mapping[str, str]) -> tuple[bool, str]:
    """Whether a ClusterQueue's ``namespaceSelector`` selects ``labels``, and how to show it."""
    if selector is None:
        return False, "null (selects no namespace)"
    try:
        parsed = LabelSelector.model_validate(selector.to_wire())
    except ValidationError as exc:
        return False, f"invalid ({exc.errors()[0]['msg']})"
    return parsed.matches(labels), format_selector(parsed) or "{} (every namespace)"


def _stopped(policy: str | None) -> bool:
    return policy in _STOPPED_POLICIES


def _parse_queue(model: type[LocalQueue] | type[ClusterQueue], raw: WireDict | None) -> Any:
    if raw is None:
        return None
    try:
        return model.model_validate(raw)
    except ValidationError:
        return None


def cluster_queue_inactive_message(
    cluster_queue: ClusterQueue,
    *,
    flavors: set[str],
    checks: Mapping[str, WireDict],
    deleting: bool = False,
) -> str | None:
    """Kueue's ``inactiveReason`` message, derived from the spec (``None`` when it would be active)."""
    if deleting:
        return "Can't admit new workloads; clusterQueue is terminating"
    spec = cluster_queue.spec
    messages: list[str] = []
    if _stopped(spec.stop_policy):
        messages.append("is stopped")
    referenced = [flavor.name for group in spec.resource_groups or [] for flavor in group.flavors]
    missing_flavors = sorted({name for name in referenced if name not in flavors})
    if missing_flavors:
        messages.append(f"references missing ResourceFlavor(s): {','.join(missing_flavors)}")
    names = spec.admission_check_names()
    missing_checks = sorted(name for name in names if name not in checks)
    if missing_checks:
        messages.append(f"references missing AdmissionCheck(s): {','.join(missing_checks)}")
    inactive = sorted(
        name for name in names if name in checks and is_false(_raw_condition(checks[name], _ACTIVE))
    )
    if inactive:
        messages.append(f"references inactive AdmissionCheck(s): {','.join(inactive)}")
    if not messages:
        return None
    return f"Can't admit new workloads: {', '.join(messages)}."


def _raw_condition(raw: WireDict, condition_type: str) -> WireDict | None:
    return object_condition(raw, condition_type)


def _limit_text(resource: str, value: Decimal | None) -> str:
    return "-" if value is None else format_amount(resource, value)


def _quota_section(
    section: Section, report: QuotaReport, *, cohort: str | None, tree: CohortTree | str
) -> None:
    columns = ["FLAVOR", "RESOURCE", "USED", "NOMINAL", "BORROWING LIMIT", "THIS JOB"]
    computed = cohort is not None and isinstance(tree, CohortTree)
    if computed:
        columns[5:5] = ["LENDING LIMIT", "AVAILABLE"]
    section.columns = tuple(columns)
    for line in report.lines:
        cells = [
            line.flavor,
            line.resource,
            format_amount(line.resource, line.used),
            format_amount(line.resource, line.nominal),
            _limit_text(line.resource, line.borrowing_limit),
            format_amount(line.resource, line.requested) if line.requested else "-",
        ]
        if computed:
            cells[5:5] = [
                _limit_text(line.resource, line.lending_limit),
                _limit_text(line.resource, line.available),
            ]
        section.row(*cells)
    if report.usage_source:
        section.note(f"USED: {report.usage_source}")
    if cohort is None:
        return
    if isinstance(tree, CohortTree):
        size = f"{tree.cluster_queues} ClusterQueue(s), {tree.cohorts} Cohort(s)"
        section.note(
            f"AVAILABLE: what Kueue's flavor assigner sees: its unused quota plus what cohort {cohort} "
            f"(tree {tree.root}: {size}) can lend it within the borrowing and lending limits; "
            "preemption is not simulated"
        )
    else:
        section.note(f"cohort borrowing is not computed: {tree}")


def _quota_blocker(name: str, report: QuotaReport, *, cohort: str | None) -> str | None:
    if report.uncovered:
        return f"ClusterQueue {name} has no quota for {', '.join(report.uncovered)}"
    if not report.blocked:
        return None
    fit = report.blocked[0]
    line, resource = fit.line, fit.resource
    need = format_amount(resource, line.requested)
    borrowing = cohort is not None and line.potential is not None and line.available is not None
    if fit.never:
        most = (
            f"{format_amount(resource, line.potential or Decimal(0))} with what cohort {cohort} can lend it"
            if borrowing
            else f"{format_amount(resource, line.nominal)} nominal"
        )
        return (
            f"this job needs {need} {resource}, more than ClusterQueue {name} can ever give in flavor "
            f"{fit.flavor} ({most})"
        )
    in_use = (
        f"ClusterQueue {name} has {format_amount(resource, line.used)}/{format_amount(resource, line.nominal)} "
        f"{resource} in use in flavor {fit.flavor}"
    )
    if borrowing:
        in_use += (
            f" and {format_amount(resource, line.available or Decimal(0))} available with cohort {cohort}'s "
            "unused quota"
        )
    return f"{in_use}; this job needs {need} {resource}"


async def _check_rows(
    view: ClusterView,
    explanation: Explanation,
    *,
    cluster_queue: ClusterQueue,
    workload: Workload | None,
    check_details: Mapping[str, CheckDetail],
) -> dict[str, CheckEvidence]:
    names = cluster_queue.spec.admission_check_names()
    states = {
        state.name: state
        for state in (workload.status.admission_checks if workload and workload.status else None) or []
    }
    found: dict[str, CheckEvidence] = {}
    if not names and not states:
        return found
    section = explanation.section("Admission checks")
    section.columns = ("NAME", "CONTROLLER", "STATE", "MESSAGE")
    for name in dict.fromkeys([*names, *states]):
        check = await view.get(ADMISSION_CHECK, name)
        controller = str(((check or {}).get("spec") or {}).get("controllerName") or "-")
        state = states.get(name)
        section.row(name, controller, state.state if state else "-", (state.message if state else "") or "-")
        detail = check_details.get(controller)
        if detail is not None:
            found[name] = await detail(view, explanation, CheckFacts(name, check, state, workload))
    return found


async def _inactive_checks(view: ClusterView, cluster_queue: ClusterQueue, section: Section) -> str:
    """``mk: NoUsableClusters: Inactive clusters: [w1 w2]`` for each referenced check not active."""
    reasons = []
    for name in cluster_queue.spec.admission_check_names():
        check = await view.get(ADMISSION_CHECK, name)
        active = _raw_condition(check, _ACTIVE) if check is not None else None
        if active is None or not is_false(active):
            continue
        text = f"{active.get('reason') or '-'}: {active.get('message') or '-'}"
        section.add(f"AdmissionCheck {name}", f"False ({text})")
        reasons.append(f"{name}: {text}")
    return "; ".join(reasons)


async def _cohort_tree(
    view: ClusterView, name: str, raw: WireDict, workloads: list[WireDict]
) -> CohortTree | str:
    """The ClusterQueue's cohort tree (:mod:`bridge_tools.cohort`), or why it is not computed."""

    def usage_of(queue: WireDict) -> dict[FlavorResource, Decimal]:
        model = _parse_queue(ClusterQueue, queue)
        return {} if model is None else reserved_usage(model, workloads)[0]

    in_cohort = bool((raw.get("spec") or {}).get("cohortName"))
    return build_cohort_tree(
        cluster_queue=name,
        cluster_queues=await view.items(CLUSTER_QUEUE) if in_cohort else [raw],
        cohorts=await view.items(COHORT) if in_cohort else [],
        usage_of=usage_of,
    )


def first_unready_check(workload: Workload) -> AdmissionCheckState | None:
    for state in (workload.status.admission_checks if workload.status else None) or []:
        if state.state != CheckState.READY:
            return state
    return None


async def analyse_queues(
    view: ClusterView,
    explanation: Explanation,
    *,
    namespace: str,
    namespace_labels: Mapping[str, str],
    queue_name: str,
    requests: Mapping[str, Decimal] | None,
    workload: Workload | None,
    check_details: Mapping[str, CheckDetail] | None = None,
    ordering: QueueOrdering | None = None,
) -> QueueFindings:
    """Add the LocalQueue / ClusterQueue / admission-check evidence; return the first blocker found."""
    findings = QueueFindings()
    lq_section = explanation.section("LocalQueue")
    lq_section.add("name", f"{namespace}/{queue_name}")
    raw_lq = await view.get(LOCAL_QUEUE, queue_name, namespace=namespace)
    local_queue: LocalQueue | None = _parse_queue(LocalQueue, raw_lq)
    if local_queue is None:
        lq_section.add("exists", False)
        findings.blocker = f"LocalQueue {namespace}/{queue_name} doesn't exist"
        return findings
    cq_name = local_queue.spec.cluster_queue or ""
    findings.cluster_queue = cq_name
    lq_section.add("clusterQueue", cq_name or "-")
    lq_section.add("stopPolicy", local_queue.spec.stop_policy or "None")
    lq_active = find_condition_view(local_queue.status.conditions if local_queue.status else None, _ACTIVE)
    if lq_active is not None:
        lq_section.add("Active", f"{lq_active.status} ({lq_active.reason}: {lq_active.message})")
    if _stopped(local_queue.spec.stop_policy):
        findings.blocker = (
            f"LocalQueue {namespace}/{queue_name} is stopped (stopPolicy: {local_queue.spec.stop_policy})"
        )

    cq_section = explanation.section("ClusterQueue")
    cq_section.add("name", cq_name or "-")
    raw_cq = await view.get(CLUSTER_QUEUE, cq_name) if cq_name else None
    cluster_queue: ClusterQueue | None = _parse_queue(ClusterQueue, raw_cq)
    if cluster_queue is None:
        cq_section.add("exists", False)
        findings.blocker = findings.blocker or f"ClusterQueue {cq_name} doesn't exist"
        return findings
    spec = cluster_queue.spec
    active = find_condition_view(cluster_queue.status.conditions if cluster_queue.status else None, _ACTIVE)
    if active is not None:
        inactive = active.message if is_false(active) else None
        cq_section.add("Active", f"{active.status} ({active.reason}: {active.message})")
    else:
        flavors = {(f.get("metadata") or {}).get("name", "") for f in await view.items(RESOURCE_FLAVOR)}
        checks = {(c.get("metadata") or {}).get("name", ""): c for c in await view.items(ADMISSION_CHECK)}
        inactive = cluster_queue_inactive_message(
            cluster_queue,
            flavors=flavors,
            checks=checks,
            deleting=bool(cluster_queue.metadata.deletion_timestamp),
        )
        cq_section.add(
            "Active", f"False ({inactive})" if inactive else "True (no Active condition: derived from spec)"
        )
    cq_section.add("stopPolicy", spec.stop_policy or "None")
    cq_section.add("queueingStrategy", spec.queueing_strategy or "BestEffortFIFO")
    if spec.cohort_name:
        cq_section.add("cohort", spec.cohort_name)
    selects, shown = _namespace_selector(spec.namespace_selector, namespace_labels)
    cq_section.add(
        "namespaceSelector", f"{shown}; namespace {namespace}: {'selected' if selects else 'not selected'}"
    )
    if inactive:
        why = await _inactive_checks(view, cluster_queue, cq_section)
        findings.blocker = findings.blocker or (
            f"ClusterQueue {cq_name} is inactive: {inactive.rstrip('.')}{f' ({why})' if why else ''}"
        )
    elif not selects:
        findings.blocker = findings.blocker or (
            f"namespace {namespace} does not match ClusterQueue {cq_name}'s namespaceSelector"
        )
    findings.strict_fifo = spec.queueing_strategy == "StrictFIFO"
    findings.cohort = spec.cohort_name or None

    workloads = await view.items(WORKLOAD)
    usage, source = reserved_usage(cluster_queue, workloads)
    tree = await _cohort_tree(view, cq_name, raw_cq or {}, workloads)
    report = quota_report(
        cluster_queue,
        usage=usage,
        requests=requests or {},
        usage_source=source,
        tree=tree if isinstance(tree, CohortTree) else None,
    )
    findings.quota = report
    _quota_section(explanation.section("Quota"), report, cohort=spec.cohort_name or None, tree=tree)
    if requests is not None and findings.blocker is None:
        findings.blocker = _quota_blocker(cq_name, report, cohort=spec.cohort_name or None)
        if findings.blocker is None and report.may_borrow:
            cq_section.note(f"this job fits only by borrowing from cohort {spec.cohort_name}")

    if workload is not None:
        placed = await queue_position(
            view,
            cluster_queue=cq_name,
            namespace=workload.metadata.namespace or namespace,
            local_queue=queue_name,
            name=workload.metadata.name or "",
            ordering=ordering or QueueOrdering(),
        )
        if placed is not None:
            findings.position = (
                f"{placed.index + 1} of {placed.pending}" if placed.pending else str(placed.index + 1)
            )
            findings.position_estimated = placed.estimated
            findings.ahead = placed.index
            cq_section.add("position", placed.summary())
            cq_section.note(f"position: {placed.source}")
            cq_section.note(
                "StrictFIFO: the Workloads ahead block this one"
                if findings.strict_fifo
                else "BestEffortFIFO: a Workload ahead that does not fit does not block this one"
            )
    findings.checks = await _check_rows(
        view, explanation, cluster_queue=cluster_queue, workload=workload, check_details=check_details or {}
    )
    return findings
