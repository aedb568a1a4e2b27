"""AppWrapper's own condition rules, on top of ``shared.kube.conditions`` (``meta.SetStatusCondition``).

The AppWrapper is kept as the raw dict the API server returned, so its conditions are the wire
dicts ``shared.kube.conditions`` edits in place. What is AppWrapper's own:

* every deadline of the phase machine is measured from a condition's ``lastTransitionTime``, read
  back from the *serialised* value (``transition_time``), so a controller that restarts and reads
  the stored object computes exactly the deadline its predecessor did; AppWrapper deliberately
  keeps some messages constant so that re-asserting a condition does not restart its clock (the
  shared rule keeps the transition time while the status holds);
* AppWrapper never sets ``observedGeneration``;
* its ``clearCondition`` only touches a condition that is currently ``True``.
"""

from __future__ import annotations

from datetime import datetime

from shared.kube.conditions import Conditions, find_condition, is_condition_true, set_condition
from shared.kube.times import parse_time

__all__ = ["clear_condition", "transition_time"]


def clear_condition(
    conditions: Conditions, *, condition_type: str, reason: str, message: str = "", now: datetime
) -> None:
    """AppWrapper's ``clearCondition``: a ``True`` condition becomes ``False``; anything else stays."""
    if is_condition_true(conditions, condition_type):
        set_condition(
            conditions, condition_type=condition_type, status="False", reason=reason, message=message, now=now
        )


def transition_time(conditions: Conditions, condition_type: str, *, default: datetime) -> datetime:
    """The condition's ``lastTransitionTime``; ``default`` when it is missing or unreadable.

    The operator dereferences the condition unconditionally (it always exists where it is read);
    an object edited by hand may lack it, and ``default`` (the current time) then starts the clock
    afresh instead of crashing the reconcile.
    """
    condition = find_condition(conditions, condition_type)
    moment = parse_time(condition.get("lastTransitionTime")) if condition is not None else None
    return moment if moment is not None else default
