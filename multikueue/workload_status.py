"""Reading and changing Workload status the way Kueue's MultiKueue controller does, on raw objects.

The MultiKueue reconciler works on the raw Workload dicts it reads from the informer and from the
workers (never round-tripping them through a model, so nothing a newer Kueue adds is lost). These
helpers are its vocabulary, each with Kueue's semantics:

* ``set_check_state`` is ``SetAdmissionCheckState``: the message is always replaced, the transition
  time moves only when the state changes.
* ``set_condition`` is ``meta.SetStatusCondition`` (a new or flipped condition gets ``now``).
* ``earliest_true`` is ``bestMatchByCondition``: of several remote Workloads, the one whose condition
  turned True first (ties: the one met first, i.e. the config's cluster order).
* Messages are truncated like ``api.TruncateConditionMessage`` / ``TruncateEventMessage``.

All mutators work in place and return whether anything changed, so the caller writes only then.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from shared.constants import Condition
from shared.kube.times import format_time
from shared.workload_state import truncate_condition_message

__all__ = [
    "EVENT_MESSAGE_LIMIT",
    "IRRELEVANT_CONDITIONS",
    "check_is",
    "check_state",
    "condition",
    "decision_view",
    "earliest_true",
    "has_quota_reservation",
    "is_evicted",
    "is_finished",
    "is_true",
    "set_check_state",
    "set_condition",
    "status_of",
    "truncate_event_message",
]

EVENT_MESSAGE_LIMIT: Final = 1024


def truncate_event_message(message: str) -> str:
    if len(message) <= EVENT_MESSAGE_LIMIT:
        return message
    return message[: EVENT_MESSAGE_LIMIT - 3] + "..."


def status_of(workload: dict[str, Any]) -> dict[str, Any]:
    status = workload.get("status")
    if not isinstance(status, dict):
        status = workload["status"] = {}
    return status


def condition(workload: Mapping[str, Any] | None, condition_type: str) -> dict[str, Any] | None:
    for item in ((workload or {}).get("status") or {}).get("conditions") or []:
        if isinstance(item, dict) and item.get("type") == condition_type:
            return item
    return None


def is_true(workload: Mapping[str, Any] | None, condition_type: str) -> bool:
    found = condition(workload, condition_type)
    return found is not None and found.get("status") == "True"


def is_finished(workload: Mapping[str, Any]) -> bool:
    return is_true(workload, Condition.FINISHED)


def is_evicted(workload: Mapping[str, Any]) -> bool:
    return is_true(workload, Condition.EVICTED)


def has_quota_reservation(workload: Mapping[str, Any]) -> bool:
    return is_true(workload, Condition.QUOTA_RESERVED)


def check_state(workload: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    for item in (workload.get("status") or {}).get("admissionChecks") or []:
        if isinstance(item, dict) and item.get("name") == name:
            return item
    return None


def set_check_state(workload: dict[str, Any], name: str, *, state: str, message: str, now: datetime) -> bool:
    """``SetAdmissionCheckState``: a new state moves ``lastTransitionTime``; the message is replaced."""
    message = truncate_condition_message(message)
    checks = status_of(workload).setdefault("admissionChecks", [])
    existing = check_state(workload, name)
    if existing is None:
        checks.append(
            {"name": name, "state": state, "message": message, "lastTransitionTime": format_time(now)}
        )
        return True
    changed = False
    if existing.get("state") != state:
        existing["state"] = state
        existing["lastTransitionTime"] = format_time(now)
        changed = True
    if existing.get("message", "") != message:
        existing["message"] = message
        changed = True
    return changed


def set_condition(
    workload: dict[str, Any], *, condition_type: str, status: str, reason: str, message: str, now: datetime
) -> bool:
    """``meta.SetStatusCondition`` with ``observedGeneration`` from the object."""
    conditions = status_of(workload).setdefault("conditions", [])
    wanted = {
        "type": condition_type,
        "status": status,
        "reason": reason,
        "message": truncate_condition_message(message),
    }
    generation = (workload.get("metadata") or {}).get("generation")
    if generation is not None:
        wanted["observedGeneration"] = generation
    existing = condition(workload, condition_type)
    if existing is None:
        conditions.append({**wanted, "lastTransitionTime": format_time(now)})
        return True
    changed = False
    if existing.get("status") != status:
        existing["lastTransitionTime"] = format_time(now)
        changed = True
    for key, value in wanted.items():
        if existing.get(key) != value:
            existing[key] = value
            changed = True
    return changed


def earliest_true(
    remotes: Mapping[str, Mapping[str, Any] | None], condition_type: str
) -> tuple[str, dict[str, Any]] | None:
    """The remote whose ``condition_type`` became True first: ``(cluster, condition)``."""
    best: tuple[str, dict[str, Any]] | None = None
    for cluster, workload in remotes.items():
        found = condition(workload, condition_type) if workload is not None else None
        if found is None or found.get("status") != "True":
            continue
        if best is None or str(found.get("lastTransitionTime") or "") < str(
            best[1].get("lastTransitionTime") or ""
        ):
            best = (cluster, found)
    return best


def check_is(workload: Mapping[str, Any], name: str, state: str) -> bool:
    found = check_state(workload, name)
    return found is not None and found.get("state") == state


#: Workload conditions no MultiKueue decision reads, on the manager's Workload or on a copy (Kueue
#: and the job reconcilers write them while the job runs)
IRRELEVANT_CONDITIONS: Final = frozenset({"PodsReady"})
_IRRELEVANT_METADATA: Final = ("resourceVersion", "managedFields", "finalizers")


def decision_view(workload: Mapping[str, Any]) -> tuple[Any, ...]:
    """What the Workload reconciler's decisions read of a Workload: everything but the conditions
    above, its finalizers (stripped from a copy as read by the pass itself) and bookkeeping. Two
    versions with the same view lead to the same actions."""
    metadata = {k: v for k, v in (workload.get("metadata") or {}).items() if k not in _IRRELEVANT_METADATA}
    status = dict(workload.get("status") or {})
    conditions = status.pop("conditions", None) or []
    kept = [c for c in conditions if not (isinstance(c, dict) and c.get("type") in IRRELEVANT_CONDITIONS)]
    return metadata, workload.get("spec"), status, kept
