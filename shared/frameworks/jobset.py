"""JobSet (``jobset.x-k8s.io/v1alpha2``), with Kueue's ``pkg/controller/jobs/jobset`` semantics.

One Workload pod set per ``spec.replicatedJobs[i]``: named after the replicated job, with the pod
template ``replicatedJobs[i].template.spec.template`` and ``replicas * min(parallelism, completions)``
pods. Admission data is merged into, and restored from, each of those templates **by position**.

Invariants: the pod-set list order is the ``replicatedJobs`` order (admission infos are paired by
index); ``replicas`` defaults to 1 and ``parallelism`` to 1 as the CRD and the Job API default them;
nothing outside the templates, ``spec.suspend`` and ``spec.managedBy`` is ever written.
"""

from __future__ import annotations

from typing import Any, Final

from shared.constants import BATCH_JOB_COMPLETION_INDEX_ANNOTATION
from shared.frameworks.base import AdapterError, FinishedState, ReclaimablePodCount
from shared.frameworks.builtin_base import SpecSuspend
from shared.frameworks.builtin_kinds import JOBSET
from shared.frameworks.conditions import find_condition, iter_conditions
from shared.frameworks.paths import FieldPath, describe_type, parse_path
from shared.frameworks.templates import PodSetsAtTemplatePaths, template_copy
from shared.frameworks.topology import build_topology_request
from shared.kube.conditions import is_true
from shared.models.workload import PodSet

__all__ = [
    "JOBSET_JOB_INDEX_LABEL",
    "JOBSET_NAME_LABEL",
    "JobSetAdapter",
]

JOBSET_NAME_LABEL: Final = "jobset.sigs.k8s.io/jobset-name"
JOBSET_JOB_INDEX_LABEL: Final = "jobset.sigs.k8s.io/job-index"

_REPLICATED_JOBS = parse_path("spec.replicatedJobs")
_REPLICATED_JOBS_STATUS = parse_path("status.replicatedJobsStatus")
_POD_TEMPLATE = parse_path("template.spec.template")
_RJ_NAME = parse_path("name")
_RJ_REPLICAS = parse_path("replicas")
_RJ_PARALLELISM = parse_path("template.spec.parallelism")
_RJ_COMPLETIONS = parse_path("template.spec.completions")


class JobSetAdapter(SpecSuspend, PodSetsAtTemplatePaths):
    """``GenericJob`` + ReclaimablePods, ManagedBy, PodLabelSelector."""

    KIND = JOBSET

    # --- replicated jobs ------------------------------------------------------------------------

    def _objects_at(self, list_path: FieldPath) -> list[tuple[FieldPath, dict[str, Any]]]:
        """The items of the list at ``list_path`` with their paths; each must be an object."""
        out: list[tuple[FieldPath, dict[str, Any]]] = []
        for index, item in enumerate(list_path.get_typed(self._obj, list, default=[])):
            path = list_path.index(index)
            if not isinstance(item, dict):
                raise AdapterError(path.text, f"expected an object, got {describe_type(item)}")
            out.append((path, item))
        return out

    def _replicated_jobs(self) -> list[tuple[FieldPath, dict[str, Any]]]:
        return self._objects_at(_REPLICATED_JOBS)

    def _template_paths(self) -> list[FieldPath]:
        return [path.join(_POD_TEMPLATE) for path, _ in self._replicated_jobs()]

    def _pods_per_replica(self, path: FieldPath) -> int:
        parallelism = path.join(_RJ_PARALLELISM).get_typed(self._obj, int, default=1)
        completions = path.join(_RJ_COMPLETIONS).get_typed(self._obj, int, default=parallelism)
        return min(parallelism, completions)

    def _name(self, path: FieldPath) -> str:
        return path.join(_RJ_NAME).get_typed(self._obj, str)

    def _replicas(self, path: FieldPath) -> int:
        return path.join(_RJ_REPLICAS).get_typed(self._obj, int, default=1)

    # --- GenericJob -----------------------------------------------------------------------------

    def is_active(self) -> bool:
        return any(self._status_int(path, "active") > 0 for path, _ in self._statuses())

    def pod_sets(self) -> list[PodSet]:
        pod_sets: list[PodSet] = []
        for path, _ in self._replicated_jobs():
            name = self._name(path)
            replicas = self._replicas(path)
            template_path = path.join(_POD_TEMPLATE)
            template = template_copy(self._obj, template_path)
            pod_sets.append(
                PodSet(
                    name=name,
                    template=template,
                    count=replicas * self._pods_per_replica(path),
                    topology_request=build_topology_request(
                        template,
                        template_path=template_path.text,
                        pod_index_label=BATCH_JOB_COMPLETION_INDEX_ANNOTATION,
                        sub_group_index_label=JOBSET_JOB_INDEX_LABEL,
                        sub_group_count=replicas,
                    ),
                )
            )
        return pod_sets

    def template_paths(self) -> list[str]:
        return [path.text for path in self._template_paths()]

    def finished(self) -> FinishedState:
        iter_conditions(self._obj)  # shape check: a malformed list is an error, not "not finished"
        for kind, success in (("Completed", True), ("Failed", False)):
            condition = find_condition(self._obj, kind)
            if condition is not None and is_true(condition):
                return FinishedState(
                    finished=True, success=success, message=str(condition.get("message") or "")
                )
        return FinishedState(finished=False)

    def pods_ready(self) -> bool:
        """Kueue compares *replicas* (jobs), not pods: every replicated job's jobs ready or succeeded."""
        replicas = sum(self._replicas(path) for path, _ in self._replicated_jobs())
        ready = sum(
            self._status_int(path, "ready") + self._status_int(path, "succeeded")
            for path, _ in self._statuses()
        )
        return replicas == ready

    # --- JobWithReclaimablePods -----------------------------------------------------------------

    def reclaimable_pods(self) -> list[ReclaimablePodCount]:
        statuses = self._statuses()
        if not statuses:
            return []
        by_name = {status.get("name"): path for path, status in statuses}
        out: list[ReclaimablePodCount] = []
        for path, _ in self._replicated_jobs():
            name = self._name(path)
            replicas = self._replicas(path)
            status_path = by_name.get(name)
            if status_path is None:
                continue
            succeeded = self._status_int(status_path, "succeeded")
            if 0 < succeeded <= replicas:
                out.append(ReclaimablePodCount(name, succeeded * self._pods_per_replica(path)))
        return out

    # --- JobWithManagedBy / JobWithPodLabelSelector ---------------------------------------------

    def pod_label_selector(self) -> str:
        return f"{JOBSET_NAME_LABEL}={self._object_name()}"

    # --- status helpers -------------------------------------------------------------------------

    def _statuses(self) -> list[tuple[FieldPath, dict[str, Any]]]:
        return self._objects_at(_REPLICATED_JOBS_STATUS)

    def _status_int(self, path: FieldPath, key: str) -> int:
        return path.key(key).get_typed(self._obj, int, default=0)
