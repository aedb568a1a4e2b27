"""Reading and changing Workload status the way Kueue's MultiKueue controller does, on raw objects.

The MultiKueue reconciler works on the raw Workload dicts it reads from the informer and from the
workers (never round-tripping them through a model, so nothing a newer Kueue adds is lost). These
helpers are its vocabulary, each with Kueue's semantics:

* ``set_check_state`` is ``SetAdmissionCheckState``: the message is always replaced (truncated like
  ``api.TruncateConditionMessage``), the transition time moves only when the state changes.
* ``earliest_true`` is ``bestMatchByCondition``: of several remote Workloads, the one whose condition
  turned True first (ties: the one met first, i.e. the config's cluster order).

Conditions themselves are ``shared.kube.conditions`` (``meta.SetStatusCondition``) and the Workload
predicates (finished, evicted, quota reserved) ``shared.workload_state``'s, as for every component.

All mutators work in place and return whether anything changed, so the caller writes only then.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Final

from shared.kube.conditions import is_true, object_condition, writable_status
from shared.kube.times import format_time
from shared.workload_state import truncate_condition_message

__all__ = [
    "IRRELEVANT_CONDITIONS",
    "check_state",
    "decision_view",
    "earliest_true",
    "set_check_state",
]


def check_state(workload: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    for item in (workload.get("status") or {}).get("admissionChecks") or []:
        if isinstance(item, dict) and item.get("name") == name:
            return item
    return None


def set_check_state(workload: dict[str, Any], name: str, *, state: str, message: str, now: datetime) -> bool:
    """``SetAdmissionCheckState``: a new state moves ``lastTransitionTime``; the message is replaced."""
    message = truncate_condition_message(message)
    checks = writable_status(workload).setdefault("admissionChecks", [])
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


def earliest_true(
    remotes: Mapping[str, Mapping[str, Any] | None], condition_type: str
) -> tuple[str, dict[str, Any]] | None:
    """The remote whose ``condition_type`` became True first: ``(cluster, condition)``."""
    best: tuple[str, dict[str, Any]] | None = None
    for cluster, workload in remotes.items():
        found = object_condition(workload, condition_type)
        if found is None or not is_true(found):
            continue
        if best is None or str(found.get("lastTransitionTime") or "") < str(
            best[1].get("lastTransitionTime") or ""
        ):
            best = (cluster, found)
    return best


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
