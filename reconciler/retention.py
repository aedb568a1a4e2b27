"""``objectRetentionPolicies.workloads.afterDeactivatedByKueue``: when a deactivated job is deleted.

Kueue's ``jobframework`` reconciler (``handleWorkloadAfterDeactivatedPolicy``) deletes a *job* whose
Workload Kueue itself deactivated, once the retention period has passed since the eviction; this
module is that decision, kept pure (the Workload and ``now`` in, a verdict out) so that it is tested
with a fake clock and the reconciler only carries out the delete.

Invariants:

* **Only Kueue's own deactivations count.** The Workload must be inactive (``spec.active: false``)
  and its ``Evicted=True`` reason must start with ``DeactivatedDueTo`` (Kueue's
  ``ReasonWithCause("Deactivated", cause)``: ``DeactivatedDueToMaximumExecutionTimeExceeded``,
  ``DeactivatedDueToRequeuingLimitExceeded``, ...). A person's ``spec.active: false`` is evicted
  with the plain reason ``Deactivated`` and its job is never deleted.
* **The clock starts at the eviction.** The deadline is the ``Evicted`` condition's
  ``lastTransitionTime`` plus the retention; before it the job is requeued for the remainder, at or
  after it the job is deleted. ``0s`` therefore deletes at once; an unset policy never deletes.
  The API server's schema requires a well-formed timestamp; should one be missing anyway it counts
  as Go's zero time (long expired), as in Kueue, and an unparsable one keeps the job (Kueue could
  not even decode such a Workload).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Final

from shared.constants import Reason
from shared.kube.times import parse_time
from shared.kueue.workload_state import eviction_condition, is_active
from shared.models.workload import Workload

__all__ = [
    "DEACTIVATED_BY_KUEUE_REASON_PREFIX",
    "DELETED_JOB_MESSAGE",
    "DeactivationRetention",
    "is_evicted_due_to_deactivation_by_kueue",
]

#: ``patching.ReasonWithCause(kueue.WorkloadDeactivated, "")``: every Kueue-driven deactivation.
DEACTIVATED_BY_KUEUE_REASON_PREFIX: Final = f"{Reason.DEACTIVATED}DueTo"
#: The ``Deleted`` event Kueue records on the job it deletes.
DELETED_JOB_MESSAGE: Final = "Deleted job: deactivation retention period expired"

_GO_ZERO_TIME: Final = datetime(1, 1, 1, tzinfo=UTC)


def is_evicted_due_to_deactivation_by_kueue(workload: Workload) -> bool:
    """Kueue's ``IsEvictedDueToDeactivationByKueue``: ``Evicted=True``, reason ``DeactivatedDueTo*``."""
    evicted = eviction_condition(workload)
    return evicted is not None and evicted.reason.startswith(DEACTIVATED_BY_KUEUE_REASON_PREFIX)


def _parse_time(value: str | None) -> datetime | None:
    """A ``metav1.Time``: Go's zero time when empty (an unset Time), ``None`` when unreadable."""
    return parse_time(value) if value else _GO_ZERO_TIME


@dataclass(frozen=True)
class DeactivationRetention:
    """The configured period; ``after=None`` (the policy unset) never deletes anything."""

    after: timedelta | None = None

    def applies_to(self, workload: Workload) -> bool:
        """Kueue's ``shouldHandleDeletionOfDeactivatedWorkload``."""
        return (
            self.after is not None
            and not is_active(workload)
            and is_evicted_due_to_deactivation_by_kueue(workload)
        )

    def remaining(self, workload: Workload, *, now: datetime) -> timedelta | None:
        """Time left before the job is to be deleted (``<= 0``: delete now); ``None``: keep it."""
        if self.after is None or not self.applies_to(workload):
            return None
        evicted = eviction_condition(workload)
        assert evicted is not None  # applies_to checked it
        since = _parse_time(evicted.last_transition_time)
        return since + self.after - now if since is not None else None
