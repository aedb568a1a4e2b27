"""Tekton PipelineRun (``tekton.dev/v1``), with tekton-kueue's semantics (ecosystem notes §2.1).

A PipelineRun does not declare its pods up front (tasks create them as the DAG unfolds), so the
Workload has **one synthetic pod set** (``pod-set-1``, one ``dummy`` container) whose requests come
from annotations ``kueue.konflux-ci.dev/requests-<resource>: <quantity>`` plus a synthetic
``tekton.dev/pipelineruns: 1`` so a ClusterQueue can cap how many runs execute at once.

Invariants:

* **Suspended means ``spec.status == "PipelineRunPending"``** (Tekton's own "do not start yet");
  starting clears ``spec.status``. Nothing is injected into pods: there are no templates to inject into.
* **Stopping is graceful**: ``spec.status = "StoppedRunFinally"`` lets running tasks finish and runs
  ``finally`` tasks, and is only written while the run is pending or running (a run already cancelled,
  stopped or finished is left alone).
* A malformed request annotation is an ``AdapterError`` naming the annotation (tekton-kueue returns
  an unretryable error for the same input, so the reconciler does not hot-loop).
* ``pods_ready`` is always true: tekton-kueue disables waitForPodsReady for PipelineRuns.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from shared.frameworks.base import AdapterError, FinishedState, StopStep
from shared.frameworks.builtin_base import SpecManagedBy
from shared.frameworks.builtin_kinds import PIPELINERUN
from shared.frameworks.conditions import find_condition
from shared.frameworks.paths import parse_path
from shared.kube.conditions import is_undecided
from shared.models.workload import PodSet
from shared.podset import PodSetInfo

__all__ = [
    "PIPELINERUN_COUNT_RESOURCE",
    "PIPELINERUN_PENDING",
    "REQUESTS_ANNOTATION_PREFIX",
    "PipelineRunAdapter",
]

PIPELINERUN_COUNT_RESOURCE: Final = "tekton.dev/pipelineruns"
REQUESTS_ANNOTATION_PREFIX: Final = "kueue.konflux-ci.dev/requests-"
#: Tekton's "do not start yet" (``v1.PipelineRunSpecStatusPending``)
PIPELINERUN_PENDING: Final = "PipelineRunPending"
STOPPED_RUN_FINALLY: Final = "StoppedRunFinally"
SUCCESS_REASONS: Final = frozenset({"Succeeded", "Completed"})
POD_SET_NAME: Final = "pod-set-1"

# resource.Quantity: sign, digits with optional decimal point, then a binary/decimal SI suffix or exponent
_QUANTITY = re.compile(
    r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?"
)

_STATUS = parse_path("spec.status")
_ANNOTATIONS = parse_path("metadata.annotations")
_START_TIME = parse_path("status.startTime")


class PipelineRunAdapter(SpecManagedBy):
    """``GenericJob`` + CustomStop, ManagedBy."""

    KIND = PIPELINERUN

    def _spec_status(self) -> str:
        return _STATUS.get_typed(self._obj, str, default="")

    def requests(self) -> dict[str, str]:
        """The synthetic container's requests (quantities validated, kept as written)."""
        requests = {PIPELINERUN_COUNT_RESOURCE: "1"}
        for key, value in sorted(_ANNOTATIONS.get_typed(self._obj, dict, default={}).items()):
            if not key.startswith(REQUESTS_ANNOTATION_PREFIX):
                continue
            where = f"metadata.annotations[{key}]"
            resource = key[len(REQUESTS_ANNOTATION_PREFIX) :]
            if not resource:
                raise AdapterError(where, f"empty resource name in annotation {key}")
            if not isinstance(value, str) or not _QUANTITY.fullmatch(value):
                raise AdapterError(where, f"invalid resource quantity in annotation {key}={value!r}")
            requests[resource] = value
        return requests

    # --- GenericJob -----------------------------------------------------------------------------

    def is_suspended(self) -> bool:
        return self._spec_status() == PIPELINERUN_PENDING

    def suspend(self) -> None:
        _STATUS.set(self._obj, PIPELINERUN_PENDING)

    def is_active(self) -> bool:
        """Started (``status.startTime``) and not yet done."""
        return _START_TIME.get(self._obj, default=None) is not None and not self.finished().finished

    def pod_sets(self) -> list[PodSet]:
        container = {"name": "dummy", "image": "dummy", "resources": {"requests": self.requests()}}
        return [
            PodSet(name=POD_SET_NAME, template={"metadata": {}, "spec": {"containers": [container]}}, count=1)
        ]

    def run_with_pod_sets_info(self, infos: Sequence[PodSetInfo]) -> None:
        _STATUS.delete(self._obj)

    def restore_pod_sets_info(self, infos: Sequence[PodSetInfo]) -> bool:
        return False

    def finished(self) -> FinishedState:
        """Done once ``Succeeded`` is True or False; success for reasons Succeeded/Completed."""
        condition = find_condition(self._obj, "Succeeded")
        if condition is None or is_undecided(condition):
            return FinishedState(finished=False)
        return FinishedState(
            finished=True,
            success=condition.get("reason") in SUCCESS_REASONS,
            message=str(condition.get("message") or ""),
        )

    def pods_ready(self) -> bool:
        return True

    # --- JobWithCustomStop ----------------------------------------------------------------------

    def stop_steps(self, infos: Sequence[PodSetInfo]) -> list[StopStep]:
        if self.finished().finished or self._spec_status() not in ("", PIPELINERUN_PENDING):
            return []
        return [StopStep({"spec": {"status": STOPPED_RUN_FINALLY}})]

    # --- JobWithManagedBy -----------------------------------------------------------------------
