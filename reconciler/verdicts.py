"""The last job <-> Workload equivalence verdict per pair, reused while its inputs are unchanged.

Every reconcile pass asks whether the job's Workload still describes it (``shared.kueue.equivalence``:
the job's pod sets, sanitised, against the Workload's expected running pod sets). That answer
depends on a few parts of the two objects only, and most passes of a job's life follow a change of
something else: the Workload's ``PodsReady`` or ``Finished`` condition, its finalizers, the job's
``status``. Computing the pod sets and the verdict was half of such a pass
(``bench/reconciler_cpu.py``), so the last verdict is kept with the objects it was reached on and
reused when the inputs compare equal.

What the verdict depends on (``shared.kueue.equivalence.equivalent_to_workload``, ``shared.kueue.podset.
pod_set_infos_from_admission``), hence what is compared:

* the **job**: all of it but ``metadata.resourceVersion``/``generation``/``managedFields``. Its pod
  sets come from the adapter, which may read any part of the object (an AppWrapper's come from its
  ``status``); only for the adapters in ``STATUS_BLIND_ADAPTERS`` (batch/v1 Job) is ``status`` left
  out;
* the **Workload**: ``metadata`` name, uid, labels, annotations and ownerReferences, the whole
  ``spec``, ``status.admission``, ``status.admissionChecks`` and the status of its
  ``QuotaReserved`` and ``Admitted`` conditions;
* the **flavors** the admission names (node labels and tolerations), as read for this pass.

Invariants:

* A recalled verdict is the one ``equivalent_to_workload`` returned for inputs equal to these
  (plain JSON equality; the settings it also takes are fixed for the process).
* Objects are only compared, never changed; references to the informer's cached objects are kept
  (at most one older version of a job and of its Workloads stays alive until the job's next pass).
  A recall that finds equal inputs re-points the verdict at the objects it was asked about: the
  next pass compares whichever of the two changed since, the other one by identity.
* Bounded: a job's entry goes when the job is gone (``forget``), and everything is dropped when
  more than ``capacity`` jobs are remembered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from shared.constants import Condition
from shared.frameworks.base import GenericJob
from shared.frameworks.batch_job import BatchJobAdapter
from shared.frameworks.copy_on_write import CopyOnWriteJob
from shared.kube.conditions import read_status
from shared.kueue.equivalence import equivalent_on_the_wire, equivalent_to_workload
from shared.kueue.jobmeta import max_exec_time_seconds
from shared.kueue.podset import PodSetGates
from shared.models.workload import PodSet, Workload

__all__ = [
    "STATUS_BLIND_ADAPTERS",
    "EquivalenceVerdicts",
    "decide",
    "decide_on_wire",
    "is_status_blind",
    "same_job",
    "same_workload_inputs",
]

_VOLATILE_METADATA: Final = frozenset({"resourceVersion", "generation", "managedFields"})
_WORKLOAD_METADATA: Final = ("name", "uid", "labels", "annotations", "ownerReferences")
_WORKLOAD_STATUS: Final = ("admission", "admissionChecks")
_VERDICT_CONDITIONS: Final = (Condition.QUOTA_RESERVED, Condition.ADMITTED)


def _metadata(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = obj.get("metadata")
    return metadata if type(metadata) is dict or isinstance(metadata, Mapping) else {}


def same_job(first: Mapping[str, Any], second: Mapping[str, Any], *, with_status: bool = True) -> bool:
    """Equal but for resourceVersion, generation and managedFields (and ``status`` unless
    ``with_status``)."""
    if first is second:
        return True
    if first.keys() - {"status"} != second.keys() - {"status"}:
        return False
    if with_status and first.get("status") != second.get("status"):
        return False  # status first: small, and what most job updates change
    for key, value in first.items():
        if key not in ("metadata", "status") and value != second[key]:
            return False
    one, other = _metadata(first), _metadata(second)
    compared = 0
    for key, value in one.items():  # no filtered copies of the two maps: this runs every pass
        if key in _VOLATILE_METADATA:
            continue
        if key not in other or other[key] != value:
            return False
        compared += 1
    return compared == sum(1 for key in other if key not in _VOLATILE_METADATA)


def _condition_statuses(status: Mapping[str, Any]) -> tuple[Any, ...]:
    conditions = status.get("conditions")
    found: dict[str, Any] = {}
    if isinstance(conditions, list):
        for condition in conditions:
            if (type(condition) is dict or isinstance(condition, Mapping)) and condition.get(
                "type"
            ) in _VERDICT_CONDITIONS:
                found.setdefault(str(condition["type"]), condition.get("status"))
    return (found.get(Condition.QUOTA_RESERVED), found.get(Condition.ADMITTED))  # _VERDICT_CONDITIONS


def same_workload_inputs(first: Mapping[str, Any], second: Mapping[str, Any]) -> bool:
    """Equal in every part the verdict reads (module docstring)."""
    if first is second:
        return True
    status_one, status_other = read_status(first), read_status(second)
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


#: adapters whose pod sets and suspension come from the job's metadata and spec only: their
#: verdicts ignore the job's ``status`` (the Job controller's updates, three per job life).
#: ``tests/unit/reconciler/test_verdicts.py`` checks that no status changes what they answer.
STATUS_BLIND_ADAPTERS: Final[tuple[type, ...]] = (BatchJobAdapter,)


def decide(
    job: GenericJob,
    pod_sets: list[PodSet],
    workload: Workload,
    flavors: dict[str, Any],
    *,
    elastic_jobs: bool,
) -> bool:
    """The verdict itself: ``equivalent_to_workload`` for the job (its ``pod_sets``) and ``workload``."""
    metadata = job.obj.get("metadata") or {}
    return equivalent_to_workload(
        job_pod_sets=pod_sets,
        job_name=str(metadata.get("name")),
        job_uid=str(metadata.get("uid")),
        max_exec_seconds=max_exec_time_seconds(job.obj),
        workload=workload,
        job_suspended=job.is_suspended(),
        flavors=flavors,
        gates=PodSetGates(elastic_workload_slices=elastic_jobs),
    )


def decide_on_wire(
    job: GenericJob,
    pod_sets: list[PodSet],
    workload: Mapping[str, Any],
    flavors: dict[str, Any],
    *,
    model: Callable[[], Workload],
    elastic_jobs: bool,
) -> bool:
    """``decide`` for a Workload read as JSON (``workload``): answered from the JSON when
    ``equivalent_on_the_wire`` can, else from ``model()``, the same Workload parsed. Most verdicts
    of a job's life (its Workload created, admitted, the job started) are answered without the
    parse and without building the expected running pod sets."""
    metadata = job.obj.get("metadata") or {}
    verdict = equivalent_on_the_wire(
        job_pod_sets=pod_sets,
        job_name=str(metadata.get("name")),
        job_uid=str(metadata.get("uid")),
        max_exec_seconds=max_exec_time_seconds(job.obj),
        workload=workload,
    )
    if verdict is not None:
        return verdict
    return decide(job, pod_sets, model(), flavors, elastic_jobs=elastic_jobs)


def is_status_blind(job: object) -> bool:
    """Whether ``job``'s adapter (behind a copy-on-write wrapper or not) is status-blind."""
    adapter_class = job.adapter_class if isinstance(job, CopyOnWriteJob) else type(job)
    return issubclass(adapter_class, STATUS_BLIND_ADAPTERS)


@dataclass(frozen=True, slots=True)
class _Verdict:
    job: Mapping[str, Any]
    workload: Mapping[str, Any]
    flavors: Mapping[str, Any]
    equivalent: bool
    status_blind: bool


class EquivalenceVerdicts:
    """``recall``/``remember`` verdicts per job (``job_key``) and Workload uid."""

    def __init__(self, *, capacity: int = 100_000) -> None:
        self._capacity = capacity
        self._by_job: dict[str, dict[str, _Verdict]] = {}

    def __len__(self) -> int:
        return len(self._by_job)

    def recall(
        self,
        job_key: str,
        *,
        job: Mapping[str, Any],
        workload: Mapping[str, Any],
        flavors: Mapping[str, Any],
        status_blind: bool = False,
    ) -> bool | None:
        """The verdict reached on equal inputs, or ``None``; ``status_blind``: the job's adapter is
        one of ``STATUS_BLIND_ADAPTERS``."""
        verdicts = self._by_job.get(job_key)
        if verdicts is None:
            return None
        uid = str(_metadata(workload).get("uid") or "")
        verdict = verdicts.get(uid)
        if verdict is None:
            return None
        if (
            verdict.status_blind == status_blind
            and verdict.flavors == flavors
            and same_workload_inputs(verdict.workload, workload)
            and same_job(verdict.job, job, with_status=not status_blind)
        ):
            if verdict.job is not job or verdict.workload is not workload:
                # equal inputs: the verdict now stands for these very objects, so the next pass
                # over them (the job's status moves on, the Workload's did not) compares by identity
                verdicts[uid] = _Verdict(
                    job=job,
                    workload=workload,
                    flavors=flavors,
                    equivalent=verdict.equivalent,
                    status_blind=status_blind,
                )
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
        status_blind: bool = False,
    ) -> None:
        verdicts = self._by_job.get(job_key)
        if verdicts is None:
            if len(self._by_job) >= self._capacity:
                self._by_job.clear()
            verdicts = self._by_job[job_key] = {}
        uid = str(_metadata(workload).get("uid") or "")
        if uid not in verdicts and len(verdicts) >= 8:  # a job with many Workloads: keep it small
            verdicts.clear()
        verdicts[uid] = _Verdict(
            job=job, workload=workload, flavors=flavors, equivalent=equivalent, status_blind=status_blind
        )

    def forget(self, job_key: str) -> None:
        self._by_job.pop(job_key, None)
