"""The last job <-> Workload equivalence verdict per pair, reused while its inputs are unchanged.

Every reconcile pass asks whether the job's Workload still describes it (``shared.equivalence``:
the job's pod sets, sanitised, against the Workload's expected running pod sets). That answer
depends on a few parts of the two objects only, and most passes of a job's life follow a change of
something else: the Workload's ``PodsReady`` or ``Finished`` condition, its finalizers, the job's
``status``. Computing the pod sets and the verdict was half of such a pass
(``bench/reconciler_cpu.py``), so the last verdict is kept with the objects it was reached on and
reused when the inputs compare equal.

What the verdict depends on (``shared.equivalence.equivalent_to_workload``, ``shared.podset.
pod_set_infos_from_admission``), hence what is compared:

* the **job**: all of it but ``metadata.resourceVersion``/``generation``/``managedFields``. Its pod
  sets come from the adapter, which may read any part of the object (an AppWrapper's come from its
  ``status``), so nothing else is assumed;
* the **Workload**: ``metadata`` name, uid, labels, annotations and ownerReferences, the whole
  ``spec``, ``status.admission``, ``status.admissionChecks`` and the status of its
  ``QuotaReserved`` and ``Admitted`` conditions;
* the **flavors** the admission names (node labels and tolerations), as read for this pass.

Invariants:

* A recalled verdict is the one ``equivalent_to_workload`` returned for inputs equal to these
  (plain JSON equality; the settings it also takes are fixed for the process).
* Objects are only compared, never changed; references to the informer's cached objects are kept
  (at most one older version of a job and of its Workloads stays alive until the job's next pass).
* Bounded: a job's entry goes when the job is gone (``forget``), and everything is dropped when
  more than ``capacity`` jobs are remembered.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from shared.constants import Condition

__all__ = ["EquivalenceVerdicts", "same_job", "same_workload_inputs"]

WireDict = dict[str, Any]

_VOLATILE_METADATA: Final = frozenset({"resourceVersion", "generation", "managedFields"})
_WORKLOAD_METADATA: Final = ("name", "uid", "labels", "annotations", "ownerReferences")
_WORKLOAD_STATUS: Final = ("admission", "admissionChecks")
_VERDICT_CONDITIONS: Final = (Condition.QUOTA_RESERVED, Condition.ADMITTED)


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = obj.get("metadata")
    return metadata if isinstance(metadata, Mapping) else {}


def same_job(first: Mapping[str, Any], second: Mapping[str, Any]) -> bool:
    """Equal but for resourceVersion, generation and managedFields."""
    if first is second:
        return True
    if first.keys() != second.keys() or first.get("status") != second.get("status"):
        return False  # status first: small, and what most job updates change
    for key, value in first.items():
        if key not in ("metadata", "status") and value != second[key]:
            return False
    one, other = _metadata(first), _metadata(second)
    return {k: v for k, v in one.items() if k not in _VOLATILE_METADATA} == {
        k: v for k, v in other.items() if k not in _VOLATILE_METADATA
    }


def _condition_statuses(status: Mapping[str, Any]) -> tuple[Any, ...]:
    conditions = status.get("conditions")
    found: dict[str, Any] = {}
    if isinstance(conditions, list):
        for condition in conditions:
            if isinstance(condition, Mapping) and condition.get("type") in _VERDICT_CONDITIONS:
                found.setdefault(str(condition["type"]), condition.get("status"))
    return tuple(found.get(kind) for kind in _VERDICT_CONDITIONS)


def same_workload_inputs(first: Mapping[str, Any], second: Mapping[str, Any]) -> bool:
    """Equal in every part the verdict reads (module docstring)."""
    if first is second:
        return True
    status_one = first.get("status") if isinstance(first.get("status"), Mapping) else {}
    status_other = second.get("status") if isinstance(second.get("status"), Mapping) else {}
    assert isinstance(status_one, Mapping) and isinstance(status_other, Mapping)
    # small parts first, the pod templates of the spec last
    for key in _WORKLOAD_STATUS:
        if status_one.get(key) != status_other.get(key):
            return False
    if _condition_statuses(status_one) != _condition_statuses(status_other):
        return False
    one, other = _metadata(first), _metadata(second)
    for key in _WORKLOAD_METADATA:
        if one.get(key) != other.get(key):
            return False
    return first.get("spec") == second.get("spec")


@dataclass(frozen=True, slots=True)
class _Verdict:
    job: Mapping[str, Any]
    workload: Mapping[str, Any]
    flavors: Mapping[str, Any]
    equivalent: bool


class EquivalenceVerdicts:
    """``recall``/``remember`` verdicts per job (``job_key``) and Workload uid."""

    def __init__(self, *, capacity: int = 100_000) -> None:
        self._capacity = capacity
        self._by_job: dict[str, dict[str, _Verdict]] = {}

    def __len__(self) -> int:
        return len(self._by_job)

    def recall(
        self, job_key: str, *, job: Mapping[str, Any], workload: Mapping[str, Any], flavors: Mapping[str, Any]
    ) -> bool | None:
        """The verdict reached on equal inputs, or ``None``."""
        verdicts = self._by_job.get(job_key)
        if verdicts is None:
            return None
        verdict = verdicts.get(str(_metadata(workload).get("uid") or ""))
        if verdict is None:
            return None
        if (
            verdict.flavors == flavors
            and same_workload_inputs(verdict.workload, workload)
            and same_job(verdict.job, job)
        ):
            return verdict.equivalent
        return None

    def remember(
        self,
        job_key: str,
        *,
        job: Mapping[str, Any],
        workload: Mapping[str, Any],
        flavors: Mapping[str, Any],
        equivalent: bool,
    ) -> None:
        verdicts = self._by_job.get(job_key)
        if verdicts is None:
            if len(self._by_job) >= self._capacity:
                self._by_job.clear()
            verdicts = self._by_job[job_key] = {}
        uid = str(_metadata(workload).get("uid") or "")
        if uid not in verdicts and len(verdicts) >= 8:  # a job with many Workloads: keep it small
            verdicts.clear()
        verdicts[uid] = _Verdict(job=job, workload=workload, flavors=flavors, equivalent=equivalent)

    def forget(self, job_key: str) -> None:
        self._by_job.pop(job_key, None)
