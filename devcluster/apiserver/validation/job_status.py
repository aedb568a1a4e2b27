"""batch/v1 Job ``/status`` validation: kube-apiserver 1.36's ``ValidateJobUpdateStatus``.

Since JobManagedBy went GA every status write is checked as for an external controller
(``getStatusValidationOptions`` in ``pkg/registry/batch/job/strategy.go``). Most rules only fire
when the fields they guard *change*, so a write about something else never fails on a status that
was already bad, and a controller gets a sync to repair what a spec edit broke:

* counters ``active``, ``succeeded``, ``failed``, ``ready``, ``terminating`` are >= 0 (always);
  ``failed`` never decreases, nor does ``succeeded`` unless the Job is Indexed with
  ``completions == parallelism`` (it can be scaled down);
* ``startTime`` may change (or be removed) only while ``spec.suspend`` is true, or in the write
  that resumes the Job (``Suspended`` True -> False): ``status.startTime: Invalid value: null:
  field is immutable for unsuspended job once set``;
* a terminal condition (``Complete``, ``Failed``, ``FailureTarget``, and ``SuccessCriteriaMet``) is
  never turned off; ``completionTime`` is never changed once set;
* ``Complete=True`` needs ``completionTime`` and ``SuccessCriteriaMet=True``, and excludes
  ``Failed``/``FailureTarget``; ``completionTime`` needs ``Complete=True`` and is not before
  ``startTime``; ``Failed=True`` needs ``FailureTarget=True``;
* a finished Job has ``startTime`` (unless it is suspended with zero completions), no active or
  terminating pods and no uncounted terminated pods; ``ready <= active``; a non-Indexed Job has no
  ``completedIndexes``; uncounted pod UIDs are non-empty and unique.

Times are compared at second precision, as ``metav1.Time`` is stored. Not checked: the syntax of
``completedIndexes``/``failedIndexes`` and their overlap.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from devcluster.apiserver.errors import Cause
from devcluster.apiserver.validation.job import NON_NEGATIVE, semantic_equal
from devcluster.apiserver.validation.objectmeta import OMIT, field_duplicate, field_invalid, field_required
from shared.kube.conditions import find_condition, is_condition_true, is_false, is_true
from shared.kube.times import parse_time

__all__ = ["START_TIME_FIXED", "validate_job_status_update"]

START_TIME_FIXED: Final = "field is immutable for unsuspended job once set"
_TERMINAL = ("Failed", "Complete", "FailureTarget")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _count(status: Mapping[str, Any], name: str) -> int:
    value = status.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _seconds(value: Any) -> Any:
    """A ``metav1.Time`` as stored (whole seconds); unparsable strings compare as themselves."""
    moment = parse_time(value)
    return int(moment.timestamp()) if moment is not None else value


class _Job:
    """The facts about one side (old or new) of a status write that the rules read."""

    def __init__(self, job: Mapping[str, Any]) -> None:
        self.spec, self.status = _dict(job.get("spec")), _dict(job.get("status"))
        self.complete = is_condition_true(self.status.get("conditions"), "Complete")
        self.failed = is_condition_true(self.status.get("conditions"), "Failed")
        self.failure_target = is_condition_true(self.status.get("conditions"), "FailureTarget")
        self.success_criteria_met = is_condition_true(self.status.get("conditions"), "SuccessCriteriaMet")
        self.finished = self.complete or self.failed
        self.start = _seconds(self.status.get("startTime"))
        self.completion = _seconds(self.status.get("completionTime"))

    def condition(self, condition_type: str) -> dict[str, Any] | None:
        return find_condition(self.status.get("conditions"), condition_type)


def _counter_causes(status: Mapping[str, Any]) -> list[Cause]:
    causes = []
    for name in ("active", "succeeded", "failed", "ready", "terminating"):
        value = status.get(name)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            causes.append(field_invalid(f"status.{name}", value, "must be an integer"))
        elif isinstance(value, int) and value < 0:
            causes.append(field_invalid(f"status.{name}", value, NON_NEGATIVE))
    return causes


def _uncounted_causes(status: Mapping[str, Any]) -> list[Cause]:
    uncounted = _dict(status.get("uncountedTerminatedPods"))
    causes, seen = [], set()
    for name in ("succeeded", "failed"):
        uids = uncounted.get(name)
        for index, uid in enumerate(uids if isinstance(uids, list) else []):
            path = f"status.uncountedTerminatedPods.{name}[{index}]"
            if not isinstance(uid, str):
                causes.append(field_invalid(path, uid, "must be a string"))
            elif uid == "":
                causes.append(field_invalid(path, uid, "must not be empty"))
            elif uid in seen:
                causes.append(field_duplicate(path, uid))
            else:
                seen.add(uid)
    return causes


def _condition_causes(new: _Job, old: _Job) -> list[Cause]:
    """The terminal conditions and how they combine."""
    complete_changed = new.complete != old.complete
    failure_target_changed = new.failure_target != old.failure_target
    failed_indexes_changed = not semantic_equal(
        new.status.get("failedIndexes"), old.status.get("failedIndexes")
    )
    rules = (
        (
            (complete_changed or new.failed != old.failed) and new.complete and new.failed,
            "cannot set Complete=True and Failed=true conditions",
        ),
        (
            (complete_changed or failure_target_changed) and new.complete and new.failure_target,
            "cannot set Complete=True and FailureTarget=true conditions",
        ),
        (
            (new.failed != old.failed or failed_indexes_changed) and new.failed and not new.failure_target,
            "cannot set Failed=True condition without the FailureTarget=true condition",
        ),
        (
            (complete_changed or new.success_criteria_met != old.success_criteria_met)
            and new.complete
            and not new.success_criteria_met,
            "cannot set Complete=True condition without the SuccessCriteriaMet=true condition",
        ),
        (
            new.success_criteria_met and new.failed,
            "cannot set SuccessCriteriaMet=True and Failed=true conditions",
        ),
        (
            new.success_criteria_met and new.failure_target,
            "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions",
        ),
        (
            new.spec.get("successPolicy") is not None and new.complete and not new.success_criteria_met,
            "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True",
        ),
        (
            old.success_criteria_met and not new.success_criteria_met,
            "cannot disable the SuccessCriteriaMet=True condition",
        ),
        (
            old.complete and not old.success_criteria_met and new.success_criteria_met,
            "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions",
        ),
    )
    causes = [field_invalid("status.conditions", OMIT, detail) for broken, detail in rules if broken]
    for condition_type in _TERMINAL:
        if is_condition_true(old.status.get("conditions"), condition_type) and not is_condition_true(
            new.status.get("conditions"), condition_type
        ):
            detail = f"cannot disable the terminal {condition_type}=True condition"
            causes.append(field_invalid("status.conditions", OMIT, detail))
    return causes


def _time_causes(new: _Job, old: _Job) -> list[Cause]:
    """``startTime`` and ``completionTime``."""
    causes: list[Cause] = []
    completion_time = new.status.get("completionTime")
    completion_changed, start_changed = new.completion != old.completion, new.start != old.start
    if (
        (new.complete != old.complete or completion_changed)
        and new.completion is not None
        and not new.complete
    ):
        detail = "cannot set completionTime when there is no Complete=True condition"
        causes.append(field_invalid("status.completionTime", completion_time, detail))
    if (new.complete != old.complete or completion_changed) and new.completion is None and new.complete:
        causes.append(field_required("status.completionTime", "completionTime is required for Complete jobs"))
    ordered = isinstance(new.start, int) and isinstance(new.completion, int)
    if (start_changed or completion_changed) and ordered and new.completion < new.start:
        detail = "completionTime cannot be set before startTime"
        causes.append(field_invalid("status.completionTime", completion_time, detail))
    if None not in (new.completion, old.completion) and completion_changed:
        causes.append(field_invalid("status.completionTime", completion_time, "field is immutable"))
    zero_and_suspended = new.spec.get("suspend") is True and new.spec.get("completions") == 0
    finished_changed = new.finished != old.finished
    if (finished_changed or start_changed) and new.finished and new.start is None and not zero_and_suspended:
        causes.append(field_required("status.startTime", "startTime is required for finished job"))
    resuming = is_true(old.condition("Suspended")) and is_false(new.condition("Suspended"))
    unsuspended = new.spec.get("suspend") is not True
    if old.start is not None and start_changed and unsuspended and not resuming:
        causes.append(field_invalid("status.startTime", new.status.get("startTime"), START_TIME_FIXED))
    return causes


def _pod_causes(new: _Job, old: _Job) -> list[Cause]:
    """Counters, pods of finished Jobs and completed indexes."""
    status, finished_changed = new.status, new.finished != old.finished
    causes = _counter_causes(status) + _uncounted_causes(status)
    active = _count(status, "active")
    active_changed = active != _count(old.status, "active")
    if (finished_changed or active_changed) and active > 0 and new.finished:
        causes.append(field_invalid("status.active", active, "active>0 is invalid for finished job"))
    uncounted = _dict(status.get("uncountedTerminatedPods"))
    uncounted_changed = not semantic_equal(uncounted, old.status.get("uncountedTerminatedPods"))
    has_uncounted = bool(uncounted.get("succeeded") or uncounted.get("failed"))
    if (finished_changed or uncounted_changed) and new.finished and has_uncounted:
        detail = "uncountedTerminatedPods needs to be empty for finished job"
        causes.append(field_invalid("status.uncountedTerminatedPods", uncounted, detail))
    terminating = _count(status, "terminating")
    terminating_changed = terminating != _count(old.status, "terminating")
    if (finished_changed or terminating_changed) and terminating > 0 and new.finished:
        causes.append(
            field_invalid("status.terminating", terminating, "terminating>0 is invalid for finished job")
        )
    ready = status.get("ready")
    ready_changed = ready != old.status.get("ready") or active_changed
    if ready_changed and isinstance(ready, int) and not isinstance(ready, bool) and ready > active:
        causes.append(field_invalid("status.ready", ready, "cannot set more ready pods than active"))
    indexes = status.get("completedIndexes") or ""
    indexes_changed = indexes != (old.status.get("completedIndexes") or "")
    if indexes_changed and indexes and new.spec.get("completionMode") != "Indexed":
        detail = "cannot set non-empty completedIndexes when non-indexed completion mode"
        causes.append(field_invalid("status.completedIndexes", indexes, detail))
    if _count(status, "failed") < _count(old.status, "failed"):
        causes.append(
            field_invalid("status.failed", _count(status, "failed"), "cannot decrease the failed counter")
        )
    indexed = new.spec.get("completionMode") == "Indexed"
    scalable = indexed and new.spec.get("completions") == new.spec.get("parallelism")
    if not scalable and _count(status, "succeeded") < _count(old.status, "succeeded"):
        detail = "cannot decrease the succeeded counter"
        causes.append(field_invalid("status.succeeded", _count(status, "succeeded"), detail))
    return causes


def validate_job_status_update(job: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """``ValidateJobStatusUpdate`` (metadata excepted) for a write to ``/status``."""
    if job.get("status") is not None and not isinstance(job["status"], dict):
        return [field_invalid("status", job["status"], "must be an object")]
    new_job, old_job = _Job(job), _Job(old)
    return (
        _pod_causes(new_job, old_job) + _condition_causes(new_job, old_job) + _time_causes(new_job, old_job)
    )
