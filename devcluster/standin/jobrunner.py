"""A pretend job controller for LOCAL RUNS ONLY: runs unsuspended jobs to completion on a timer.

The devcluster has no kubelet and no kube-controller-manager, so nothing would ever run a Job that
Kueue (or the stand-in) admitted. The job runner fills that gap for local runs and end-to-end
tests; production clusters have the real job controller. It talks to the devcluster through HTTP requests like
any client and only ever writes the ``/status`` subresource.

batch/v1 Jobs follow the real job controller's visible status, as in the golden Kueue flow, and
only ever make status writes kube-apiserver accepts (:mod:`devcluster.apiserver.validation.job_status`):

* a Job whose ``spec.managedBy`` names another controller is left alone, as kube-controller-manager
  leaves it (MultiKueue's manager copies run on a worker instead);
* created or stopped suspended -> ``Suspended=True`` "JobSuspended"/"Job suspended", ``active``
  and ``ready`` back to 0 and, in the same write, ``startTime`` removed (1.36's job controller with
  MutableSchedulingDirectivesForSuspendedJobs: the template becomes mutable again);
* unsuspended -> ``Suspended=False`` "JobResumed"/"Job resumed" if it had been suspended,
  ``startTime`` (reset on resume), ``active`` = ``ready`` = min(parallelism, completions);
* after the run time -> ``succeeded`` = completions (parallelism when unset), ``active``/``ready``
  0, ``completionTime``, and the conditions ``SuccessCriteriaMet`` then ``Complete``, both
  "CompletionsReached"/"Reached expected number of succeeded pods" (Indexed jobs also get
  ``completedIndexes``);
* annotated ``kueue-bridge.dev/outcome: Failed``, after the run time it fails instead, as when its
  pods exhausted the backoff limit: ``failed`` = ``backoffLimit`` + 1 (default 6 + 1),
  ``active``/``ready`` 0, no ``completionTime``, and the conditions ``FailureTarget`` then
  ``Failed``, both "BackoffLimitExceeded"/"Job has reached the specified backoff limit".

A pass looks at the Jobs one after the other by default (``concurrency=1``, what the devcluster
runs). With ``concurrency=n`` up to ``n`` Jobs are looked at (and their status written) at once, by
``n`` workers taking the pass's Jobs in order: a benchmark creating Jobs at tens per second needs
three status writes per Job, more than one write at a time can keep up with on a loaded API
server. Either way a failed write ends the pass once the writes in flight have answered (the next
pass starts over), and no Job is looked at twice in a pass. ``paced=False`` starts the next pass
soon after a long one instead of pausing as long (``run_passes``): a benchmark's passes wait on
status writes, not on the CPU.

The run time comes from the annotation ``kueue-bridge.dev/run-seconds`` (default
``default_run_seconds``). Declarative CRDs are listed as :class:`DeclarativeCompletion` entries
(one whose ``managed_by_field`` names anything but ``own_controller`` is left alone, as a Job of
another controller is):
an object is running while the field at ``suspend_field`` is not true, and after its run time the
``status_patch`` (a dict, or a function of the completion time returning one) is merge-patched
into ``status``, once.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Final

from devcluster.standin.client import ApiClient, Resource, run_passes
from devcluster.standin.objects import ListedObjects, ObjectSource
from shared.constants import KUBERNETES_JOB_CONTROLLER
from shared.kube.conditions import (
    is_object_condition_true,
    object_condition,
    set_condition,
    writable_conditions,
)
from shared.kube.times import format_time, parse_time, utc_now

__all__ = [
    "JOBS",
    "OUTCOME_ANNOTATION",
    "RUN_SECONDS_ANNOTATION",
    "DeclarativeCompletion",
    "JobRunner",
]

JOBS: Final = Resource("batch", "v1", "jobs")
RUN_SECONDS_ANNOTATION: Final = "kueue-bridge.dev/run-seconds"
#: "Failed" makes a batch Job fail after its run time (anything else: it succeeds)
OUTCOME_ANNOTATION: Final = "kueue-bridge.dev/outcome"
_COMPLETED_MESSAGE: Final = "Reached expected number of succeeded pods"
_BACKOFF_LIMIT_MESSAGE: Final = "Job has reached the specified backoff limit"
_DEFAULT_BACKOFF_LIMIT: Final = 6

_log = logging.getLogger(__name__)

StatusPatch = Mapping[str, Any] | Callable[[datetime], Mapping[str, Any]]


@dataclass(frozen=True)
class DeclarativeCompletion:
    """How to finish one declarative CRD: what to merge into ``status`` once it has run."""

    resource: Resource
    status_patch: StatusPatch
    suspend_field: tuple[str, ...] = ("spec", "suspend")
    #: an object whose field here names a controller other than ``own_controller`` is not run
    managed_by_field: tuple[str, ...] = ("spec", "managedBy")
    own_controller: str | None = None


def _field(obj: Mapping[str, Any], path: Sequence[str]) -> Any:
    current: Any = obj
    for key in path:
        if not isinstance(current, Mapping):
            return None
        current = current.get(key)
    return current


def _contains(actual: Any, expected: Any) -> bool:
    """Whether ``expected`` (a merge patch) is already reflected in ``actual``."""
    if isinstance(expected, Mapping):
        return isinstance(actual, Mapping) and all(_contains(actual.get(k), v) for k, v in expected.items())
    return bool(actual == expected)


def _uid(obj: Mapping[str, Any]) -> str:
    metadata = obj.get("metadata") or {}
    return str(metadata.get("uid") or f"{metadata.get('namespace', '')}/{metadata.get('name', '')}")


def _runnable(job: dict[str, Any]) -> bool:
    """Not finished, and ours to run (``_sync_job`` leaves the others alone): all a pass looks at."""
    managed_by = (job.get("spec") or {}).get("managedBy", KUBERNETES_JOB_CONTROLLER)
    return managed_by == KUBERNETES_JOB_CONTROLLER and not (
        is_object_condition_true(job, "Complete") or is_object_condition_true(job, "Failed")
    )


class JobRunner:
    """Looks at Jobs (and declarative CRDs) every pass and moves their status along (see module doc)."""

    def __init__(
        self,
        *,
        client: ApiClient,
        clock: Callable[[], datetime] = utc_now,
        poll_interval: float = 0.2,
        default_run_seconds: float = 2.0,
        declarative: Sequence[DeclarativeCompletion] = (),
        objects: ObjectSource | None = None,
        wake: asyncio.Event | None = None,
        concurrency: int = 1,
        paced: bool = True,
    ) -> None:
        if concurrency < 1:
            raise ValueError(f"job runner: concurrency must be >= 1, got {concurrency}")
        self._concurrency = concurrency
        self._paced = paced
        self._client = client
        self._objects: ObjectSource = objects or ListedObjects(client=client)
        self._wake = wake
        self._clock = clock
        self._poll_interval = poll_interval
        self._default_run_seconds = default_run_seconds
        self._declarative = tuple(declarative)
        self._started: dict[str, datetime] = {}

    async def run(self) -> None:
        await run_passes(
            self.reconcile_once,
            interval=self._poll_interval,
            what="job runner",
            log=_log,
            wake=self._wake,
            paced=self._paced,
        )

    async def reconcile_once(self) -> None:
        now = self._clock()
        jobs = await self._objects.list(JOBS, keep=_runnable)
        await self._each(jobs, functools.partial(self._sync_job, now=now))
        for completion in self._declarative:
            objects = await self._client.list(completion.resource)
            await self._each(objects, functools.partial(self._sync_declarative, completion, now=now))

    async def _each(
        self, objects: Sequence[dict[str, Any]], sync: Callable[[dict[str, Any]], Awaitable[None]]
    ) -> None:
        """``sync`` every object, ``concurrency`` at a time, in order; the first failure is raised once
        the calls in flight have returned, and no object is started after it (as a loop would)."""
        pending = iter(objects)
        failures: list[BaseException] = []

        async def worker() -> None:
            for obj in pending:  # shared: each object goes to one worker
                if failures:
                    return
                try:
                    await sync(obj)
                except Exception as exc:
                    failures.append(exc)
                    return

        if self._concurrency == 1:
            await worker()
        else:
            await asyncio.gather(*(worker() for _ in range(min(self._concurrency, len(objects)))))
        if failures:
            raise failures[0]

    def _run_time(self, obj: Mapping[str, Any]) -> timedelta:
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        try:
            seconds = float(annotations.get(RUN_SECONDS_ANNOTATION, self._default_run_seconds))
        except (TypeError, ValueError):
            seconds = self._default_run_seconds
        return timedelta(seconds=max(seconds, 0.0))

    async def _sync_job(self, job: dict[str, Any], now: datetime) -> None:
        if is_object_condition_true(job, "Complete") or is_object_condition_true(job, "Failed"):
            self._started.pop(_uid(job), None)
            return
        spec = job.get("spec") or {}
        if spec.get("managedBy", KUBERNETES_JOB_CONTROLLER) != KUBERNETES_JOB_CONTROLLER:
            return
        status: dict[str, Any] = job.setdefault("status", {})
        changed = False
        if spec.get("suspend") is True:
            self._started.pop(_uid(job), None)
            suspended_now = _set_suspended(job, True, now=now)
            if suspended_now:
                status.pop("startTime", None)
            changed |= suspended_now
            for counter in ("active", "ready"):
                if status.get(counter):
                    status[counter] = 0
                    changed = True
            if changed:
                await self._client.replace_status(JOBS, job)
            return
        parallelism = int(spec.get("parallelism", 1))
        completions = spec.get("completions")
        pods = min(parallelism, int(completions)) if completions is not None else parallelism
        if object_condition(job, "Suspended") is not None and is_object_condition_true(job, "Suspended"):
            _set_suspended(job, False, now=now)
            status["startTime"] = format_time(now)
            self._started[_uid(job)] = now
            changed = True
        if not status.get("startTime"):
            status["startTime"] = format_time(now)
            self._started[_uid(job)] = now
            changed = True
        started = self._started.setdefault(_uid(job), parse_time(status["startTime"]) or now)
        if now - started >= self._run_time(job):
            annotations = (job.get("metadata") or {}).get("annotations") or {}
            if annotations.get(OUTCOME_ANNOTATION) == "Failed":
                self._fail_job(job, now=now)
            else:
                self._complete_job(
                    job, succeeded=int(completions) if completions is not None else pods, now=now
                )
            self._started.pop(_uid(job), None)
            changed = True
        elif status.get("active") != pods or status.get("ready") != pods:
            status["active"] = pods
            status["ready"] = pods
            changed = True
        if changed:
            await self._client.replace_status(JOBS, job)

    @staticmethod
    def _complete_job(job: dict[str, Any], *, succeeded: int, now: datetime) -> None:
        status = job["status"]
        status.pop("active", None)
        status["ready"] = 0
        status["succeeded"] = succeeded
        status["completionTime"] = format_time(now)
        status["uncountedTerminatedPods"] = {}
        if (job.get("spec") or {}).get("completionMode") == "Indexed" and succeeded > 0:
            status["completedIndexes"] = "0" if succeeded == 1 else f"0-{succeeded - 1}"
        _set_true(job, ("SuccessCriteriaMet", "Complete"), "CompletionsReached", _COMPLETED_MESSAGE, now=now)

    @staticmethod
    def _fail_job(job: dict[str, Any], *, now: datetime) -> None:
        status = job["status"]
        backoff_limit = (job.get("spec") or {}).get("backoffLimit", _DEFAULT_BACKOFF_LIMIT)
        status.pop("active", None)
        status["ready"] = 0
        status["failed"] = max(int(status.get("failed") or 0), int(backoff_limit) + 1)
        status["uncountedTerminatedPods"] = {}
        _set_true(job, ("FailureTarget", "Failed"), "BackoffLimitExceeded", _BACKOFF_LIMIT_MESSAGE, now=now)

    async def _sync_declarative(
        self, completion: DeclarativeCompletion, obj: dict[str, Any], now: datetime
    ) -> None:
        uid = _uid(obj)
        manager = _field(obj, completion.managed_by_field)
        if isinstance(manager, str) and manager and manager != completion.own_controller:
            return
        if _field(obj, completion.suspend_field) is True:
            self._started.pop(uid, None)
            return
        started = self._started.setdefault(uid, now)
        if now - started < self._run_time(obj):
            return
        patch = completion.status_patch(now) if callable(completion.status_patch) else completion.status_patch
        if _contains(obj.get("status") or {}, patch):
            return
        metadata = obj.get("metadata") or {}
        await self._client.patch_status(
            completion.resource,
            namespace=metadata.get("namespace"),
            name=metadata.get("name", ""),
            patch={"status": dict(patch)},
        )


def _set_suspended(job: dict[str, Any], suspended: bool, *, now: datetime) -> bool:
    """The job controller's ``Suspended`` condition, set on suspend and cleared on resume; whether it changed."""
    return set_condition(
        writable_conditions(job),
        condition_type="Suspended",
        status="True" if suspended else "False",
        reason="JobSuspended" if suspended else "JobResumed",
        message="Job suspended" if suspended else "Job resumed",
        now=now,
    )


def _set_true(
    job: dict[str, Any], condition_types: tuple[str, ...], reason: str, message: str, *, now: datetime
) -> None:
    """The job controller's finishing conditions: each of ``condition_types`` True, in order."""
    for condition_type in condition_types:
        set_condition(
            writable_conditions(job),
            condition_type=condition_type,
            status="True",
            reason=reason,
            message=message,
            now=now,
        )
