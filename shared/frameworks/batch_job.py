"""batch/v1 Job, with Kueue's ``pkg/controller/jobs/job`` semantics (reference notes §7, §3.4).

Invariants and the reasons for them:

* **Stopping is three writes, resumable.** Kubernetes only lets a Job's template change while it is
  suspended, has no active pods (``status.active`` 0) *and* has no ``status.startTime`` (or a
  ``Suspended=True`` condition), and ``startTime`` lives on the status subresource. So a stop is
  (1) ``suspend=true`` + annotation ``kueue.x-k8s.io/stopping: "true"``, (2) ``startTime: null`` on
  ``/status``, (3) restore the template + drop the annotation. While the annotation is present the
  Job does **not** count as suspended, so after a crash between steps the reconciler calls
  ``stop_steps`` again and gets the remaining writes. Step (3) is planned only once the job
  controller reports no active pod: kube-apiserver 1.36 refuses it before (Kueue tries, fails and
  retries; planning it later reaches the same state without refused writes), and the Job's status
  update that reports the pods gone wakes the reconciler for it.
* **Pod sets never carry job-controller labels** except ``batch.kubernetes.io/job-name``: the others
  hold the Job's UID, which would make a re-created Job's Workload look different.
* **Partial admission** (``kueue.x-k8s.io/job-min-parallelism``) is the only way Kueue changes a Job's
  ``parallelism`` (and ``completions`` when ``kueue.x-k8s.io/job-completions-equal-parallelism``).
* Feature gates are at Kueue's defaults: TopologyAwareScheduling and MultiKueue are on;
  ElasticJobsViaWorkloadSlices (on by default) is the ``elastic_jobs`` argument, because the
  validation rules that mention elastic jobs must ignore the annotation when it is off.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final, TypeVar

from shared.constants import (
    BATCH_JOB_COMPLETION_INDEX_ANNOTATION,
    BATCH_JOB_MANAGED_LABELS,
    DEFAULT_PODSET_NAME,
    ELASTIC_JOB_ANNOTATION,
    JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION,
    JOB_MIN_PARALLELISM_ANNOTATION,
    PODSET_PREFERRED_TOPOLOGY_ANNOTATION,
    PODSET_REQUIRED_TOPOLOGY_ANNOTATION,
    STOPPING_ANNOTATION,
)
from shared.frameworks.base import (
    FORBIDDEN,
    INVALID,
    FieldError,
    FinishedState,
    ReclaimablePodCount,
    StopStep,
)
from shared.frameworks.builtin_base import SpecSuspend
from shared.frameworks.builtin_kinds import BATCH_JOB
from shared.frameworks.conditions import iter_conditions
from shared.frameworks.paths import parse_path
from shared.frameworks.strconv import GoParseError, atoi, parse_bool
from shared.frameworks.templates import restore_pod_template, template_at, template_copy
from shared.frameworks.topology import build_topology_request
from shared.jsontree import json_tree_copy
from shared.kube.conditions import is_true
from shared.merge_patch import apply_merge_patch, create_merge_patch
from shared.models.workload import PodSet
from shared.podset import PodSetInfo, bad_pod_sets_info_len_error, merge_into_template

__all__ = [
    "BatchJobAdapter",
    "parse_index_intervals",
]


_T = TypeVar("_T")

JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"
INDEXED_COMPLETION: Final = "Indexed"

_PARALLELISM = parse_path("spec.parallelism")
_COMPLETIONS = parse_path("spec.completions")
_COMPLETION_MODE = parse_path("spec.completionMode")
_TEMPLATE = parse_path("spec.template")
_ANNOTATIONS = parse_path("metadata.annotations")
_START_TIME = parse_path("status.startTime")
_ACTIVE = parse_path("status.active")
_READY = parse_path("status.ready")
_SUCCEEDED = parse_path("status.succeeded")
_UNCOUNTED_SUCCEEDED = parse_path("status.uncountedTerminatedPods.succeeded")
_COMPLETED_INDEXES = parse_path("status.completedIndexes")
_FAILED_INDEXES = parse_path("status.failedIndexes")
_MIN_PARALLELISM_PATH: Final = f"metadata.annotations[{JOB_MIN_PARALLELISM_ANNOTATION}]"
_SYNC_COMPLETIONS_PATH: Final = f"metadata.annotations[{JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION}]"
_TEMPLATE_ANNOTATIONS = parse_path("spec.template.metadata.annotations")
#: ``validateTopologyRequest``: the TAS modes an elastic Job may not ask for, in Kueue's order
_ELASTIC_FORBIDDEN_TOPOLOGY: Final = (
    (PODSET_REQUIRED_TOPOLOGY_ANNOTATION, "required topology is not supported with elastic jobs"),
    (PODSET_PREFERRED_TOPOLOGY_ANNOTATION, "preferred topology is not supported with elastic jobs"),
)


def parse_index_intervals(text: str, *, limit: int) -> list[tuple[int, int]]:
    """``"1,3-5"`` -> ``[(1, 1), (3, 5)]``, clipped to indexes ``< limit``; malformed parts are skipped.

    Kueue skips (and logs) malformed or descending intervals rather than failing: the Job controller
    always writes well-formed ones, and a bad status must not block quota reclamation.
    """
    intervals: list[tuple[int, int]] = []
    if not text:
        return intervals
    for part in text.split(","):
        first_text, dash, last_text = part.partition("-")
        try:
            first = atoi(first_text)
            last = atoi(last_text) if dash else first
        except GoParseError:
            continue
        if last < first:
            continue
        last = min(last, limit - 1)
        if first <= last:
            intervals.append((first, last))
    return intervals


def _count_union(intervals: list[tuple[int, int]]) -> int:
    count, last_counted = 0, -1
    for first, last in sorted(intervals):
        first_uncounted = max(first, last_counted + 1)
        if first_uncounted > last:
            continue
        count += last - first_uncounted + 1
        last_counted = last
    return count


class BatchJobAdapter(SpecSuspend):
    """``GenericJob`` + ReclaimablePods, CustomStop, ManagedBy, PodLabelSelector, Validation."""

    KIND = BATCH_JOB

    def __init__(self, obj: dict[str, Any], *, elastic_jobs: bool = True) -> None:
        super().__init__(obj)
        #: Kueue's ``ElasticJobsViaWorkloadSlices`` feature gate (read by the validation rules only)
        self._elastic_jobs = elastic_jobs

    def _elastic(self) -> bool:
        """``workloadslicing.Enabled``: the gate is on and the Job is annotated elastic."""
        return self._elastic_jobs and self._annotations().get(ELASTIC_JOB_ANNOTATION) == "true"

    # --- small readers ------------------------------------------------------------------------

    def _annotations(self) -> dict[str, Any]:
        return _ANNOTATIONS.get_typed(self._obj, dict, default={})

    def _annotation_text(self, annotation: str) -> str | None:
        """The annotation's value as text, ``None`` when the job does not carry it."""
        annotations = self._annotations()
        return str(annotations[annotation]) if annotation in annotations else None

    def _parallelism(self) -> int:
        return _PARALLELISM.get_typed(self._obj, int, default=1)

    def _completions(self) -> int | None:
        return _COMPLETIONS.get_typed(self._obj, int, default=None)

    def pods_count(self) -> int:
        """``min(parallelism, completions)``."""
        parallelism = self._parallelism()
        completions = self._completions()
        return completions if completions is not None and completions < parallelism else parallelism

    def _parsed_annotation(self, annotation: str, parse: Callable[[str], _T], default: _T) -> _T:
        """The annotation parsed as Go's ``strconv`` does; ``default`` when absent or unparsable
        (Kueue ignores a malformed value)."""
        value = self._annotation_text(annotation)
        if value is None:
            return default
        try:
            return parse(value)
        except GoParseError:
            return default

    def min_pods_count(self) -> int | None:
        """The partial-admission minimum, if the annotation parses as an int (else ignored, like Kueue)."""
        return self._parsed_annotation(JOB_MIN_PARALLELISM_ANNOTATION, atoi, None)

    def sync_completions_with_parallelism(self) -> bool:
        return self._parsed_annotation(JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION, parse_bool, False)

    # --- GenericJob ---------------------------------------------------------------------------

    def is_suspended(self) -> bool:
        return super().is_suspended() and self._annotations().get(STOPPING_ANNOTATION) != "true"

    def is_active(self) -> bool:
        return _ACTIVE.get_typed(self._obj, int, default=0) != 0

    def pod_sets(self) -> list[PodSet]:
        template = template_copy(self._obj, _TEMPLATE)
        labels = (template.get("metadata") or {}).get("labels")
        if isinstance(labels, dict):
            for label in BATCH_JOB_MANAGED_LABELS:
                if label != JOB_NAME_LABEL:
                    labels.pop(label, None)
            if not labels:
                del template["metadata"]["labels"]  # Go drops an empty map on the wire (omitempty)
        topology = build_topology_request(
            template, template_path=_TEMPLATE.text, pod_index_label=BATCH_JOB_COMPLETION_INDEX_ANNOTATION
        )
        return [
            PodSet(
                name=DEFAULT_PODSET_NAME,
                template=template,
                count=self.pods_count(),
                min_count=self.min_pods_count(),
                topology_request=topology,
            )
        ]

    def template_paths(self) -> list[str]:
        return [_TEMPLATE.text]

    def run_with_pod_sets_info(self, infos: Sequence[PodSetInfo]) -> None:
        self._unsuspend()  # Kueue unsuspends before checking the infos
        if len(infos) != 1:
            raise bad_pod_sets_info_len_error(want=1, got=len(infos))
        info = infos[0]
        template = template_at(self._obj, _TEMPLATE)
        if self.min_pods_count() is not None:
            _PARALLELISM.set(self._obj, info.count)
            if self.sync_completions_with_parallelism():
                _COMPLETIONS.set(self._obj, info.count)
        merge_into_template(template, info)

    def restore_pod_sets_info(self, infos: Sequence[PodSetInfo]) -> bool:
        if not infos:
            return False
        info = infos[0]
        template = template_at(self._obj, _TEMPLATE)
        changed = False
        if self.min_pods_count() is not None and _PARALLELISM.get(self._obj, default=0) != info.count:
            changed = True
            _PARALLELISM.set(self._obj, info.count)
            if self.sync_completions_with_parallelism():
                _COMPLETIONS.set(self._obj, info.count)
        # keep whatever job-controller labels the template has now (they carry the live Job's UID)
        return restore_pod_template(template, info, keep_labels=BATCH_JOB_MANAGED_LABELS) or changed

    def finished(self) -> FinishedState:
        for _, condition in iter_conditions(self._obj):
            kind = condition.get("type")
            if kind in ("Complete", "Failed") and is_true(condition):
                return FinishedState(
                    finished=True, success=kind != "Failed", message=str(condition.get("message") or "")
                )
        return FinishedState(finished=False)

    def pods_ready(self) -> bool:
        ready = _READY.get_typed(self._obj, int, default=0)
        succeeded = _SUCCEEDED.get_typed(self._obj, int, default=0)
        uncounted = len(_UNCOUNTED_SUCCEEDED.get_typed(self._obj, list, default=[]))
        return succeeded + ready + uncounted >= self.pods_count()

    # --- JobWithReclaimablePods ---------------------------------------------------------------

    def reclaimable_pods(self) -> list[ReclaimablePodCount]:
        parallelism = self._parallelism()
        completions = self._completions()
        if completions is None:
            completions = parallelism
        if _COMPLETION_MODE.get_typed(self._obj, str, default="NonIndexed") == INDEXED_COMPLETION:
            terminal = 0
            if completions > 0:
                intervals = parse_index_intervals(
                    _COMPLETED_INDEXES.get_typed(self._obj, str, default=""), limit=completions
                ) + parse_index_intervals(
                    _FAILED_INDEXES.get_typed(self._obj, str, default=""), limit=completions
                )
                terminal = _count_union(intervals)
        else:
            terminal = _SUCCEEDED.get_typed(self._obj, int, default=0)
        reclaimable = 0
        if parallelism > 1 and terminal > 0:
            remaining = max(completions - terminal, 0)
            if remaining < parallelism:
                reclaimable = parallelism - remaining
        return [ReclaimablePodCount(DEFAULT_PODSET_NAME, reclaimable)] if reclaimable else []

    # --- JobWithCustomStop --------------------------------------------------------------------

    def stop_steps(self, infos: Sequence[PodSetInfo]) -> list[StopStep]:
        """The remaining writes of Kueue's three-step stop, computed on a copy (``obj`` is untouched);
        without the restore while pods are active."""
        working: dict[str, Any] = json_tree_copy(self._obj)
        steps: list[StopStep] = []
        if not BatchJobAdapter(working).is_suspended():
            step = StopStep(
                {"metadata": {"annotations": {STOPPING_ANNOTATION: "true"}}, "spec": {"suspend": True}}
            )
            working = apply_merge_patch(working, step.merge_patch)
            steps.append(step)
        if _START_TIME.get(working, default=None) is not None:
            step = StopStep({"status": {"startTime": None}}, subresource="status", phase="reset-status")
            working = apply_merge_patch(working, step.merge_patch)
            steps.append(step)
        if _ACTIVE.get_typed(working, int, default=0) != 0:
            return steps  # the template may change only once no pod is active (module doc)
        restored = json_tree_copy(working)
        BatchJobAdapter(restored).restore_pod_sets_info(infos)
        annotations = _ANNOTATIONS.get_typed(restored, dict, default={})
        annotations.pop(STOPPING_ANNOTATION, None)
        if not annotations:
            _ANNOTATIONS.delete(restored)
        patch = create_merge_patch(working, restored)
        if patch:
            steps.append(StopStep(patch, phase="restore"))
        return steps

    # --- JobWithManagedBy ---------------------------------------------------------------------

    # --- JobWithPodLabelSelector --------------------------------------------------------------

    def pod_label_selector(self) -> str:
        return f"{JOB_NAME_LABEL}={self._object_name()}"

    # --- JobWithValidation (the batch-Job extras of §3.4; the generic rules are the webhook's) --

    def validate_on_create(self) -> list[FieldError]:
        return (
            self._validate_partial_admission()
            + self._validate_sync_completions()
            + self._validate_elastic_topology()
        )

    def validate_on_update(self, old: dict[str, Any]) -> list[FieldError]:
        return self.validate_create_rules_on_update(old) + self.validate_update_rules(old)

    def validate_create_rules_on_update(self, old: dict[str, Any]) -> list[FieldError]:
        """The create-time rules Kueue's ``JobWebhook.validateUpdate`` re-runs, *before* the generic
        update rules (partial admission only when its annotation changed)."""
        previous = BatchJobAdapter(old)
        errors: list[FieldError] = []
        if self._annotations().get(JOB_MIN_PARALLELISM_ANNOTATION) != previous._annotations().get(
            JOB_MIN_PARALLELISM_ANNOTATION
        ):
            errors += self._validate_partial_admission()
        return errors + self._validate_sync_completions()

    def validate_update_rules(self, old: dict[str, Any]) -> list[FieldError]:
        """``validatePartialAdmissionUpdate``, which Kueue runs *after* the generic update rules."""
        previous = BatchJobAdapter(old)
        errors: list[FieldError] = []
        if JOB_MIN_PARALLELISM_ANNOTATION in previous._annotations():
            old_suspended = self._spec_suspended(old)
            if not old_suspended and previous._parallelism() != self._parallelism():
                errors.append(
                    FieldError(
                        "spec.parallelism",
                        FORBIDDEN,
                        "cannot change when partial admission is enabled and the job is not suspended",
                    )
                )
        suspended = self.is_suspended()
        if (
            previous.is_suspended() == suspended
            and not suspended
            and previous.sync_completions_with_parallelism() != self.sync_completions_with_parallelism()
        ):
            errors.append(
                FieldError(
                    _SYNC_COMPLETIONS_PATH, FORBIDDEN, "field is immutable while the job is not suspended"
                )
            )
        return errors + self._validate_elastic_topology()

    def _validate_elastic_topology(self) -> list[FieldError]:
        """``validateTopologyRequest``'s elastic rule: only unconstrained TAS for an elastic Job (the
        first offending annotation only, as Kueue returns at once)."""
        if not self._elastic():
            return []
        annotations = _TEMPLATE_ANNOTATIONS.get_typed(self._obj, dict, default={})
        for key, message in _ELASTIC_FORBIDDEN_TOPOLOGY:
            if key in annotations:
                return [FieldError(f"{_TEMPLATE_ANNOTATIONS.text}[{key}]", FORBIDDEN, message)]
        return []

    def _validate_partial_admission(self) -> list[FieldError]:
        raw = self._annotation_text(JOB_MIN_PARALLELISM_ANNOTATION)
        if raw is None:
            return []
        errors: list[FieldError] = []
        try:
            value = atoi(raw)
        except GoParseError as exc:
            errors.append(FieldError(_MIN_PARALLELISM_PATH, INVALID, str(exc), raw))
        else:
            pods = self.pods_count()
            if value >= pods or value <= 0:
                errors.append(
                    FieldError(_MIN_PARALLELISM_PATH, INVALID, f"should be between 0 and {pods - 1}", value)
                )
        if self._elastic():
            errors.append(
                FieldError(
                    _MIN_PARALLELISM_PATH,
                    INVALID,
                    "partial admission and elastic job cannot be used together",
                    raw,
                )
            )
        return errors

    def _validate_sync_completions(self) -> list[FieldError]:
        raw = self._annotation_text(JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION)
        if raw is None:
            return []
        try:
            enabled = parse_bool(raw)
        except GoParseError as exc:
            return [FieldError(_SYNC_COMPLETIONS_PATH, INVALID, str(exc), raw)]
        if not enabled:
            return []
        errors: list[FieldError] = []
        if _COMPLETION_MODE.get_typed(self._obj, str, default="NonIndexed") != INDEXED_COMPLETION:
            errors.append(
                FieldError(_SYNC_COMPLETIONS_PATH, INVALID, "should not be enabled for NonIndexed jobs", raw)
            )
        completions = self._completions()
        if self._parallelism() != (1 if completions is None else completions):
            errors.append(
                FieldError(
                    "spec.completions",
                    INVALID,
                    f"should be equal to parallelism when {JOB_COMPLETIONS_EQUAL_PARALLELISM_ANNOTATION} "
                    "annotation is true",
                    completions,
                )
            )
        return errors
