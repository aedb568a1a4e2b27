"""``explain``: from a job to one verdict saying why it is (not) running, with the evidence.

The chain follows the decisions kueue-bridge's reconciler and Kueue take, in their order, and the
first one that stops the job is the verdict:

1. the job: can its adapter read it (suspend field, pod sets), is it finished;
2. would kueue-bridge manage it at all: ``managedJobsNamespaceSelector``, a managed ancestor that
   holds the Workload instead, the ``kueue.x-k8s.io/queue-name`` label (or
   ``manageJobsWithoutQueueName``);
3. without a Workload: Kueue's CRDs served, a missing (Workload)PriorityClass (the reconciler then
   does not create one), a job running unsuspended (is any mutating webhook registered for the
   kind?), and whether a reconciler holds its Lease;
4. with a Workload: finished, deactivated, evicted (and requeue backoff), admitted and running or
   waiting to be started, quota reserved but admission checks pending, or pending -- then the
   queue chain of :mod:`bridge_tools.explain.queues` says why (LocalQueue, ClusterQueue, quota and
   cohort borrowing, position). A MultiKueue check (:mod:`bridge_tools.explain.multikueue`) turns
   "admitted" into "running on worker cluster 'w1'" and says which workers hold copies while none
   has admitted it.

Evidence sections are filled as the chain goes (Job, Workload, LocalQueue, ClusterQueue, Quota,
Admission checks, MultiKueue, Eviction and requeue, Events), so the text reads top-down in the same order.

Invariants: read-only (through a ``ClusterView``); never raises for an odd object -- an object the
adapter cannot read is itself a verdict ("kueue-bridge cannot build its Workload: <path>: ...");
the only exception is ``ObjectNotFound`` for a job that does not exist.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, Final

from pydantic import ValidationError

from bridge_tools.explain.cluster_view import (
    NAMESPACE,
    WORKLOAD,
    ClusterView,
)
from bridge_tools.explain.evidence import (
    add_events,
    add_eviction_evidence,
    add_workload_evidence,
    mutating_webhooks_for,
    priority_problem,
    reconciler_lease_problem,
)
from bridge_tools.explain.multikueue import multikueue_check_details
from bridge_tools.explain.queue_position import QueueOrdering
from bridge_tools.explain.queues import CheckDetail, QueueFindings, analyse_queues, first_unready_check
from bridge_tools.explain.verdict import Explanation, State
from bridge_tools.quota import workload_requests
from shared.config import Configuration
from shared.constants import MANAGED_OWNERS_CHAIN_LIMIT, QUEUE_LABEL, Condition
from shared.frameworks.base import AdapterError, GenericJob
from shared.frameworks.capabilities import has_managed_by
from shared.frameworks.registry import Framework, FrameworkRegistry, UnmanagedKindError, gvk_of
from shared.jobmeta import controller_owner_ref, job_uid, queue_name, workload_priority_class_name
from shared.jsontree import copy_json
from shared.kube import GroupVersionKind
from shared.kube.conditions import find_condition_view, is_false, is_object_condition_true, is_true
from shared.kube.times import age_since, parse_time
from shared.labelselector import format_selector
from shared.models.base import WireDict
from shared.models.workload import PodSet, Workload
from shared.naming import workload_name_for_owner
from shared.workload_builder import priority_class_names

__all__ = ["ExplainSettings", "ObjectNotFound", "explain", "explain_job", "reason_for"]

SECTIONS: Final = (
    "Job",
    "Workload",
    "LocalQueue",
    "ClusterQueue",
    "Quota",
    "Admission checks",
    "MultiKueue",
    "Eviction and requeue",
    "Events",
)


class ObjectNotFound(LookupError):
    """The job to explain does not exist (the CLI exits 1 with this message)."""


@dataclass(frozen=True)
class ExplainSettings:
    """The configuration the components run with, and its adapters."""

    config: Configuration
    registry: FrameworkRegistry
    #: AdmissionCheck ``controllerName`` -> its evidence (MultiKueue's controller names)
    check_details: dict[str, CheckDetail]
    #: how Kueue orders its queues (for the estimated position)
    ordering: QueueOrdering = field(default_factory=QueueOrdering)

    @classmethod
    def from_config(cls, config: Configuration) -> ExplainSettings:
        return cls(
            config=config,
            registry=FrameworkRegistry.from_managed_kinds(config.managed_kinds()),
            check_details=multikueue_check_details(config.kueue_bridge.all_multikueue_controller_names),
            ordering=QueueOrdering.from_config(config),
        )


Verdict = tuple[State, str]


def _resource_name(framework: Framework) -> str:
    group = framework.gvk.group
    return f"{framework.plural}.{group}" if group else framework.plural


async def explain(
    view: ClusterView,
    *,
    settings: ExplainSettings,
    framework: Framework,
    namespace: str,
    name: str,
    now: datetime,
) -> Explanation:
    """The explanation for ``framework``'s object ``namespace/name``; ``ObjectNotFound`` if absent."""
    job = await view.get(framework.gvk, name, namespace=namespace)
    if job is None:
        raise ObjectNotFound(f'{_resource_name(framework)} "{name}" not found in namespace "{namespace}"')
    return await explain_job(view, settings=settings, framework=framework, job=job, now=now)


async def explain_job(
    view: ClusterView, *, settings: ExplainSettings, framework: Framework, job: WireDict, now: datetime
) -> Explanation:
    """The explanation for a job already read (the ``make dev`` table reads all jobs at once)."""
    return await _Chain(view, settings=settings, framework=framework, job=job, now=now).run()


async def reason_for(view: ClusterView, *, settings: ExplainSettings, job: WireDict, now: datetime) -> str:
    """The verdict's reason for ``job`` of any managed kind (``""`` for a kind not managed here)."""
    try:
        framework = settings.registry.framework_for(gvk_of(job))
    except (UnmanagedKindError, AdapterError):
        return ""
    return (await explain_job(view, settings=settings, framework=framework, job=job, now=now)).reason


class _Chain:
    def __init__(
        self,
        view: ClusterView,
        *,
        settings: ExplainSettings,
        framework: Framework,
        job: WireDict,
        now: datetime,
    ) -> None:
        self.view = view
        self.config = settings.config
        self.registry = settings.registry
        self.check_details = settings.check_details
        self.ordering = settings.ordering
        self.framework = framework
        self.job = job
        self.now = now
        metadata = job.get("metadata") or {}
        self.namespace = str(metadata.get("namespace") or "")
        self.name = str(metadata.get("name") or "")
        self.explanation = Explanation(State.WAITING, "")
        for title in SECTIONS:
            self.explanation.section(title)
        self.adapter: GenericJob = framework.factory(copy_json(job))
        self.adapter_error: AdapterError | None = None
        self.suspended: bool | None = None
        self.pod_sets: list[PodSet] | None = None

    # --- the chain --------------------------------------------------------------------------------

    async def run(self) -> Explanation:
        verdict = self._job_facts() or await self._management_gates()
        workload: Workload | None = None
        if verdict is None:
            workload, verdict = await self._find_workload()
        if verdict is None:
            queue = (workload.spec.queue_name if workload is not None else None) or queue_name(self.job)
            findings = await self._queues(queue, workload) if queue else QueueFindings()
            verdict = (
                await self._without_workload(findings)
                if workload is None
                else await self._with_workload(workload, findings)
            )
        if workload is not None:
            add_eviction_evidence(self.explanation.section("Eviction and requeue"), workload, now=self.now)
        subjects = [(f"{self.framework.gvk.kind}/{self.name}", job_uid(self.job))]
        if workload is not None and workload.metadata.uid:
            subjects.append((f"Workload/{workload.metadata.name}", workload.metadata.uid))
        await add_events(
            self.view,
            self.explanation.section("Events"),
            subjects=subjects,
            namespace=self.namespace,
            now=self.now,
        )
        self.explanation.state, self.explanation.reason = verdict
        return self.explanation

    def _guard(self, call: Any, default: Any) -> Any:
        try:
            return call()
        except AdapterError as exc:
            self.adapter_error = self.adapter_error or exc
            return default

    def _job_facts(self) -> Verdict | None:
        section = self.explanation.section("Job")
        section.add("name", f"{self.namespace}/{self.name}")
        how = f"built-in {self.framework.name}" if self.framework.builtin else "declarative adapter"
        section.add("kind", f"{self.framework.gvk.kind_arg} ({how})")
        section.add(
            "created",
            f"{age_since((self.job.get('metadata') or {}).get('creationTimestamp'), now=self.now, unknown='-')} ago",
        )
        self.suspended = self._guard(self.adapter.is_suspended, None)
        section.add("suspended", self.suspended)
        section.add("queue name", queue_name(self.job) or f"- (no {QUEUE_LABEL} label)")
        if priority_class := workload_priority_class_name(self.job):
            section.add("priority class", priority_class)
        if has_managed_by(self.adapter):
            section.add("managedBy", self._guard(self.adapter.managed_by, None))
        finished = self._guard(self.adapter.finished, None)
        if finished is not None:
            outcome = ("succeeded" if finished.success else "failed") if finished.finished else ""
            detail = f" ({outcome}{': ' + finished.message if finished.message else ''})" if outcome else ""
            section.add("finished", f"{str(finished.finished).lower()}{detail}")
        self.pod_sets = self._guard(self.adapter.pod_sets, None)
        if self.adapter_error is not None:
            section.add("adapter error", str(self.adapter_error))
        return None

    def _expected_workload_name(self) -> str:
        return workload_name_for_owner(
            owner_name=self.name, owner_uid=job_uid(self.job), owner_gvk=self.framework.gvk
        )

    async def _management_gates(self) -> Verdict | None:
        namespace = await self.view.get(NAMESPACE, self.namespace)
        labels = ((namespace or {}).get("metadata") or {}).get("labels") or {}
        selector = self.config.managed_jobs_namespace_selector
        if not selector.matches(labels):
            self.explanation.section("Job").add("managedJobsNamespaceSelector", format_selector(selector))
            return State.NOT_QUEUED, f"namespace {self.namespace} does not match managedJobsNamespaceSelector"
        manage_all = self.config.manage_jobs_without_queue_name
        ancestor = await self._managed_ancestor(manage_all=manage_all)
        if not queue_name(self.job) and not manage_all and (ancestor is None or not queue_name(ancestor[1])):
            return (
                State.NOT_QUEUED,
                f"no {QUEUE_LABEL} label and manageJobsWithoutQueueName is off",
            )
        if ancestor is not None:
            owner_framework, owner = ancestor
            meta = owner.get("metadata") or {}
            self.explanation.section("Job").add(
                "managed ancestor", f"{owner_framework.gvk.kind} {meta.get('namespace')}/{meta.get('name')}"
            )
            return (
                State.CHILD,
                f"{owner_framework.gvk.kind} {meta.get('namespace')}/{meta.get('name')} owns it and holds the "
                f"Workload; run: kueue-bridge explain {owner_framework.gvk.kind.lower()}/{meta.get('name')} "
                f"-n {meta.get('namespace')}",
            )
        return None

    def _framework_of(self, gvk: GroupVersionKind) -> Framework | None:
        for framework in self.registry:
            if (framework.gvk.group, framework.gvk.kind) == (gvk.group, gvk.kind):
                return framework
        return None

    async def _managed_ancestor(self, *, manage_all: bool) -> tuple[Framework, WireDict] | None:
        """The top-most controller owner of a kind managed here that would be queued itself."""
        current, found = self.job, None
        for _ in range(MANAGED_OWNERS_CHAIN_LIMIT):
            reference = controller_owner_ref(current)
            if reference is None:
                break
            framework = self._framework_of(GroupVersionKind.of(reference))
            if framework is None:
                break
            owner = await self.view.get(
                framework.gvk, str(reference.get("name") or ""), namespace=self.namespace
            )
            if owner is None or (owner.get("metadata") or {}).get("uid") != reference.get("uid"):
                break
            if manage_all or queue_name(owner):
                found = (framework, owner)
            current = owner
        return found

    async def _find_workload(self) -> tuple[Workload | None, Verdict | None]:
        if not await self.view.served(WORKLOAD):
            return None, (
                State.NOT_QUEUED,
                "Kueue's CRDs are not installed (workloads.kueue.x-k8s.io is not served)",
            )
        uid = job_uid(self.job)
        owned = [
            item
            for item in await self.view.items(WORKLOAD, namespace=self.namespace)
            if any(
                owner.get("uid") == uid for owner in (item.get("metadata") or {}).get("ownerReferences") or []
            )
        ]
        if not owned:
            return None, None
        expected = self._expected_workload_name()

        def rank(item: WireDict) -> tuple[bool, bool, str]:
            finished = is_object_condition_true(item, Condition.FINISHED)
            meta = item.get("metadata") or {}
            return (not finished, meta.get("name") == expected, str(meta.get("creationTimestamp") or ""))

        raw = max(owned, key=rank)
        section = self.explanation.section("Workload")
        name = (raw.get("metadata") or {}).get("name")
        section.add("name", f"{self.namespace}/{name}")
        if len(owned) > 1:
            others = sorted(str((w.get("metadata") or {}).get("name")) for w in owned if w is not raw)
            section.note(f"the job owns {len(owned)} Workloads; also: {', '.join(others)}")
        try:
            workload = Workload.model_validate(raw)
        except ValidationError as exc:
            return None, (State.PENDING, f"Workload {name} cannot be read: {exc.errors()[0]['msg']}")
        add_workload_evidence(
            self.explanation.section("Workload"), workload, requests=self._requests(workload), now=self.now
        )
        return workload, None

    def _requests(self, workload: Workload | None) -> dict[str, Decimal] | None:
        pod_sets = workload.spec.pod_sets if workload is not None else self.pod_sets
        if pod_sets is None:
            return None
        try:
            return workload_requests(pod_sets)
        except ValueError:
            return None

    async def _queues(self, queue: str, workload: Workload | None) -> QueueFindings:
        namespace = await self.view.get(NAMESPACE, self.namespace)
        return await analyse_queues(
            self.view,
            self.explanation,
            namespace=self.namespace,
            namespace_labels=((namespace or {}).get("metadata") or {}).get("labels") or {},
            queue_name=queue,
            requests=self._requests(workload),
            workload=workload,
            check_details=self.check_details,
            ordering=self.ordering,
        )

    # --- no Workload ------------------------------------------------------------------------------

    async def _priority_problem(self) -> str | None:
        workload_class, pod_class = priority_class_names(self.adapter, pod_sets=self.pod_sets or [])
        return await priority_problem(self.view, workload_class=workload_class, pod_class=pod_class)

    async def _lease_problem(self) -> str | None:
        return await reconciler_lease_problem(self.view, self.config, now=self.now)

    async def _without_workload(self, findings: QueueFindings) -> Verdict:
        self.explanation.section("Job").add("expected Workload", self._expected_workload_name())
        if self.adapter_error is not None:
            return State.NOT_QUEUED, f"kueue-bridge cannot build its Workload: {self.adapter_error}"
        finished = self._guard(self.adapter.finished, None)
        if finished is not None and finished.finished:
            return State.FINISHED, "the job finished; it has no Workload"
        if problem := await self._priority_problem():
            return State.NOT_QUEUED, problem
        lease = await self._lease_problem()
        if self.suspended is False:
            hooks = await mutating_webhooks_for(
                self.view, group=self.framework.gvk.group, plural=self.framework.plural
            )
            self.explanation.section("Job").add("mutating webhooks", ", ".join(hooks) or "none")
            if not hooks:
                return (
                    State.NOT_QUEUED,
                    f"it runs without a Workload: no mutating webhook is registered for "
                    f"{_resource_name(self.framework)}, so nothing suspended it when it was created",
                )
            return State.WAITING, (
                f"it runs without a Workload; {lease}"
                if lease
                else "it runs without a Workload; kueue-bridge's reconciler creates one and suspends the job"
            )
        if lease:
            return State.WAITING, f"no Workload yet: {lease}"
        expected = self._expected_workload_name()
        return State.WAITING, f"kueue-bridge's reconciler has not created Workload {expected} yet"

    # --- with a Workload --------------------------------------------------------------------------

    async def _with_workload(self, workload: Workload, findings: QueueFindings) -> Verdict:
        name = workload.metadata.name
        conditions = workload.status.conditions if workload.status else None
        finished = find_condition_view(conditions, Condition.FINISHED)
        if finished is not None and is_true(finished):
            message = f": {finished.message}" if finished.message else ""
            return State.FINISHED, f"Workload {name} finished ({finished.reason}){message}"
        evicted = find_condition_view(conditions, Condition.EVICTED)
        evicted = evicted if is_true(evicted) else None
        if workload.spec.active is False:
            return State.DEACTIVATED, f"Workload {name} is deactivated (spec.active: false)"
        admission = workload.status.admission if workload.status else None
        cluster_queue = admission.cluster_queue if admission else findings.cluster_queue
        reserved = find_condition_view(conditions, Condition.QUOTA_RESERVED)
        admitted = find_condition_view(conditions, Condition.ADMITTED)
        if evicted is not None and is_true(reserved):
            return State.EVICTED, (
                f"{evicted.reason}: {evicted.message}; waiting for the job to stop and release the quota"
            )
        running_on = findings.running_on
        if is_true(admitted):
            if running_on:
                return (
                    State.RUNNING,
                    f"on worker cluster '{running_on}' (admitted by ClusterQueue {cluster_queue})",
                )
            if self.suspended is False:
                pods = find_condition_view(conditions, Condition.PODS_READY)
                waiting = (
                    f"; pods not ready yet ({pods.reason})" if pods is not None and is_false(pods) else ""
                )
                return State.RUNNING, f"admitted by ClusterQueue {cluster_queue}{waiting}"
            lease = await self._lease_problem()
            return State.ADMITTED, (
                f"admitted by ClusterQueue {cluster_queue}; {lease}"
                if lease
                else f"admitted by ClusterQueue {cluster_queue}; waiting for kueue-bridge's reconciler to start it"
            )
        if is_true(reserved):
            check = first_unready_check(workload)
            if check is not None and running_on:
                return State.RUNNING, (
                    f"on worker cluster '{running_on}' (quota reserved in ClusterQueue {cluster_queue}; "
                    f"admission check '{check.name}' stays {check.state} while it runs there, "
                    "so the job here stays suspended)"
                )
            if check is not None:
                evidence = findings.checks.get(check.name)
                said = (evidence.pending if evidence is not None else "") or check.message or "no message"
                return State.QUOTA_RESERVED, (
                    f"in ClusterQueue {cluster_queue}, waiting for admission check '{check.name}' "
                    f"({check.state}: {said})"
                )
            return State.QUOTA_RESERVED, f"in ClusterQueue {cluster_queue}; waiting for Kueue to admit it"
        if evicted is not None:
            return State.EVICTED, self._requeue_reason(workload, evicted.reason, evicted.message)
        if self.suspended is False:
            return (
                State.PENDING,
                f"the job runs but Workload {name} is not admitted; kueue-bridge's reconciler stops it",
            )
        if findings.blocker:
            return State.PENDING, findings.blocker
        return State.PENDING, self._pending_reason(workload, findings)

    def _requeue_reason(self, workload: Workload, reason: str, message: str) -> str:
        requeue = workload.status.requeue_state if workload.status else None
        at = parse_time(requeue.requeue_at) if requeue else None
        if at is not None and at > self.now:
            return f"{reason}: {message}; requeued after backoff at {requeue.requeue_at if requeue else ''}"
        return f"{reason}: {message}; not requeued yet"

    def _pending_reason(self, workload: Workload, findings: QueueFindings) -> str:
        cluster_queue = findings.cluster_queue or "-"
        estimated = ", estimated" if findings.position_estimated else ""
        where = (
            f" (position {findings.position} in ClusterQueue {cluster_queue}{estimated})"
            if findings.position
            else ""
        )
        if findings.strict_fifo and findings.ahead:
            return f"StrictFIFO: {findings.ahead} Workload(s) ahead of it in ClusterQueue {cluster_queue}"
        reserved = find_condition_view(
            workload.status.conditions if workload.status else None, Condition.QUOTA_RESERVED
        )
        if reserved is not None and reserved.message:
            return f"{reserved.message}{where}"
        if findings.quota is not None and findings.quota.may_borrow and findings.cohort:
            return f"fits by borrowing from cohort {findings.cohort}; waiting for Kueue's scheduler{where}"
        return f"fits in ClusterQueue {cluster_queue}'s free quota; waiting for Kueue's scheduler{where}"
