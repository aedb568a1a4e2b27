"""Evidence ``explain`` reads besides the queue chain, and the checks for a job without a Workload.

* Workload facts (priority, requests, admission, conditions), its eviction and requeue history
  (``schedulingStats.evictions``, ``requeueState`` and how long the backoff still runs) and the
  recent Events of the job and its Workload (core/v1, which every Events API writes);
* why a job has no Workload yet: a (Workload)PriorityClass it names is missing (the reconciler
  resolves priority with ``shared.workload_builder.resolve_priority`` before creating one), no
  mutating webhook covers its kind (so nothing suspended it on create), or no reconciler holds the
  ``<resourceName>-reconciler`` Lease.

Functions fill a ``Section`` or answer a problem sentence (``None``: no problem); none raises for
odd data, since every field is read defensively from what the API server returned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any, Final

from bridge_tools.explain.cluster_view import (
    LEASE,
    MUTATING_WEBHOOK_CONFIGURATION,
    PRIORITY_CLASS,
    WORKLOAD_PRIORITY_CLASS,
    ClusterView,
)
from bridge_tools.explain.verdict import Section
from bridge_tools.quota import format_amount
from shared.config import Configuration
from shared.kube.times import age_since, human_duration, parse_time
from shared.models.base import WireDict
from shared.models.workload import Workload
from shared.workload_builder import PriorityNotFound, priority_value, resolve_priority

__all__ = [
    "MAX_EVENTS",
    "RECONCILER_COMPONENT",
    "add_events",
    "add_eviction_evidence",
    "add_workload_evidence",
    "mutating_webhooks_for",
    "priority_problem",
    "reconciler_lease_problem",
]

MAX_EVENTS: Final = 10
RECONCILER_COMPONENT: Final = "reconciler"


# --- evidence ---------------------------------------------------------------------------------------


def add_workload_evidence(
    section: Section, workload: Workload, *, requests: Mapping[str, Decimal] | None, now: datetime
) -> None:
    spec = workload.spec
    section.add("queue name", spec.queue_name or "-")
    ref = spec.priority_class_ref
    value = spec.priority if spec.priority is not None else 0
    section.add("priority", f"{value} ({ref.kind} {ref.name})" if ref else value)
    section.add("active", spec.active is not False)
    if requests:
        section.add(
            "requests",
            ", ".join(
                f"{resource}={format_amount(resource, amount)}"
                for resource, amount in sorted(requests.items())
            ),
        )
    admission = workload.status.admission if workload.status else None
    if admission is not None:
        section.add("admitted to", admission.cluster_queue)
    section.columns = ("CONDITION", "STATUS", "REASON", "AGE", "MESSAGE")
    # by type: which controller wrote a condition first is a race (the job reconciler's PodsReady,
    # the scheduler's QuotaReserved), and the same Workload should read the same way every time
    conditions = (workload.status.conditions if workload.status else None) or []
    for condition in sorted(conditions, key=lambda condition: condition.type):
        section.row(
            condition.type,
            condition.status,
            condition.reason or "-",
            age_since(condition.last_transition_time, now=now, unknown="-"),
            condition.message or "-",
        )


def _eviction(entry: WireDict) -> str:
    cause = f"/{entry['underlyingCause']}" if entry.get("underlyingCause") else ""
    return f"{entry.get('reason')}{cause} x{entry.get('count', 0)}"


def add_eviction_evidence(section: Section, workload: Workload, *, now: datetime) -> None:
    status = workload.status
    if status is None:
        return
    evictions = [
        entry for entry in (status.scheduling_stats or {}).get("evictions") or [] if isinstance(entry, dict)
    ]
    if evictions:
        section.add("evictions", ", ".join(_eviction(entry) for entry in evictions))
    requeue = status.requeue_state
    if requeue is not None:
        section.add("requeue count", requeue.count if requeue.count is not None else 0)
        at = parse_time(requeue.requeue_at)
        if at is not None:
            when = "passed" if at <= now else f"in {human_duration((at - now).total_seconds())}"
            section.add("backoff until", f"{requeue.requeue_at} ({when})")


def _event_time(event: WireDict) -> str:
    for key in ("lastTimestamp", "eventTime", "firstTimestamp"):
        if event.get(key):
            return str(event[key])
    return str((event.get("metadata") or {}).get("creationTimestamp") or "")


_NEVER: Final = datetime.min.replace(tzinfo=UTC)


def _event_second(event: WireDict) -> datetime:
    """When the event last happened, to the second: ``lastTimestamp`` has no finer precision, and
    comparing it with another writer's ``eventTime`` in microseconds would put an event of the same
    second before one that caused it. Unreadable times sort first."""
    moment = parse_time(_event_time(event))
    return _NEVER if moment is None else moment.replace(microsecond=0)


async def add_events(
    view: ClusterView, section: Section, *, subjects: Sequence[tuple[str, str]], namespace: str, now: datetime
) -> None:
    """The last ``MAX_EVENTS`` Events about ``subjects`` (``(label, uid)`` pairs), oldest first;
    events of the same second in the order of ``subjects`` (the job's before its Workload's)."""
    rows: list[tuple[str, WireDict]] = []
    for label, uid in subjects:
        rows.extend((label, event) for event in await view.events_about(uid=uid, namespace=namespace))
    rows.sort(key=lambda item: _event_second(item[1]))  # stable: ties keep the order of subjects
    section.columns = ("AGE", "TYPE", "REASON", "OBJECT", "MESSAGE")
    for label, event in rows[-MAX_EVENTS:]:
        count = event.get("count")
        repeat = f" (x{count})" if isinstance(count, int) and count > 1 else ""
        section.row(
            age_since(_event_time(event), now=now, unknown="-"),
            event.get("type") or "-",
            event.get("reason") or "-",
            label,
            f"{event.get('message') or '-'}{repeat}",
        )


# --- why there is no Workload ---------------------------------------------------------------------


async def priority_problem(view: ClusterView, *, workload_class: str, pod_class: str) -> str | None:
    """Kueue's ``<Kind> "<name>" not found`` when the class the job names does not exist."""
    wpc = await view.get(WORKLOAD_PRIORITY_CLASS, workload_class) if workload_class else None
    pc = await view.get(PRIORITY_CLASS, pod_class) if pod_class and not workload_class else None
    resolved = resolve_priority(
        wpc_label=workload_class,
        pod_priority_class_name=pod_class,
        wpc_lookup=lambda _: priority_value(wpc),
        pc_lookup=lambda _: priority_value(pc),
        global_default=None,
    )
    return resolved.event_message if isinstance(resolved, PriorityNotFound) else None


def _covers(values: Any, wanted: str) -> bool:
    return isinstance(values, list) and ("*" in values or wanted in values)


async def mutating_webhooks_for(view: ClusterView, *, group: str, plural: str) -> list[str]:
    """``<configuration>/<webhook>`` of every mutating webhook whose rules cover creating ``plural``."""
    found = set()
    for configuration in await view.items(MUTATING_WEBHOOK_CONFIGURATION):
        name = (configuration.get("metadata") or {}).get("name")
        for webhook in configuration.get("webhooks") or []:
            for rule in webhook.get("rules") or []:
                if (
                    _covers(rule.get("apiGroups"), group)
                    and _covers(rule.get("resources"), plural)
                    and _covers(rule.get("operations"), "CREATE")
                ):
                    found.add(f"{name}/{webhook.get('name')}")
    return sorted(found)


async def reconciler_lease_problem(view: ClusterView, config: Configuration, *, now: datetime) -> str | None:
    """Why no kueue-bridge reconciler is leading (``None`` when one is, or leader election is off)."""
    election = config.leader_election
    if not election.leader_elect:
        return None
    name = election.lease_name(RECONCILER_COMPONENT)
    namespace = election.resource_namespace or config.namespace
    lease = await view.get(LEASE, name, namespace=namespace)
    spec = (lease or {}).get("spec") or {}
    if not spec.get("holderIdentity"):
        return f"no kueue-bridge reconciler holds the Lease {namespace}/{name}"
    renewed = parse_time(spec.get("renewTime"))
    duration = spec.get("leaseDurationSeconds")
    if renewed is not None and isinstance(duration, int) and renewed + timedelta(seconds=duration) < now:
        return (
            f"the Lease {namespace}/{name} of reconciler {spec['holderIdentity']} expired "
            f"{age_since(spec.get('renewTime'), now=now, unknown='-')} ago"
        )
    return None
