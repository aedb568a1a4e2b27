"""The ``GenericJob`` contract: what kueue-bridge needs to know about a job kind.

It mirrors Kueue's ``jobframework.GenericJob`` and its optional interfaces (reference notes §1), with
two deliberate differences:

* Adapters wrap the **raw object dict** read from the API server and mutate it in place. They never
  round-trip a user's object through a typed model, so no field we do not know is ever lost.
* Adapters make **no API calls**. Anything Kueue does with a client inside an adapter (the batch Job
  three-step stop, reading pods) is expressed as data the caller acts on, so adapters are pure,
  trivially testable and usable from the webhook, the reconciler and the MultiKueue worker alike.

Errors: an object that does not have the shape its adapter expects raises ``AdapterError`` naming the
path (never ``KeyError``/``TypeError``). Start-time problems with admission data raise
``shared.kueue.podset.PodSetInfoError`` (permanent, Kueue's ``FailedToStart``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal, Protocol, runtime_checkable

from shared.kube import GroupVersionKind
from shared.kueue.podset import PodSetInfo
from shared.models.workload import PodSet

__all__ = [
    "FORBIDDEN",
    "INTERNAL",
    "INVALID",
    "REQUIRED",
    "STOP_PHASE_ORDER",
    "TOO_LONG",
    "TOO_SHORT",
    "AdapterConfigError",
    "AdapterError",
    "FieldError",
    "FinishedState",
    "GenericJob",
    "JobWithCustomStop",
    "JobWithManagedBy",
    "JobWithPodLabelSelector",
    "JobWithPriorityClass",
    "JobWithReclaimablePods",
    "JobWithTemplatePaths",
    "JobWithValidation",
    "RawObjectAdapter",
    "ReclaimablePodCount",
    "StopPhase",
    "StopStep",
]


class AdapterError(ValueError):
    """The object does not match what its adapter expects; ``path`` names the offending field.

    ``field``, when known, names the adapter *configuration* field being evaluated (a declarative
    adapter's ``...podSets[1].count``), so a tool can say both where in the object and why there;
    it is not part of the message.
    """

    def __init__(self, path: str, message: str, *, field: str | None = None) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message
        self.field = field


class AdapterConfigError(AdapterError):
    """An adapter *configuration* is invalid; ``path`` names the configuration field (start-up error)."""


@dataclass(frozen=True)
class FinishedState:
    finished: bool
    success: bool = False
    message: str = ""


@dataclass(frozen=True)
class ReclaimablePodCount:
    name: str
    count: int


StopPhase = Literal["suspend", "reset-status", "restore"]
"""Where a stop write stands in Kueue's order: suspend, then reset status, then restore templates."""

STOP_PHASE_ORDER: dict[StopPhase, int] = {"suspend": 0, "reset-status": 1, "restore": 2}


@dataclass(frozen=True)
class StopStep:
    """One API write of a multi-step stop.

    ``subresource`` is ``None`` for the main resource or ``"status"``; ``merge_patch`` is an RFC 7386
    merge patch. The caller applies the first step, then calls ``stop_steps`` again on the object the
    server returned and applies the next step it has not applied yet, so every decision (is
    ``status.startTime`` still set?) is taken on the server's answer to the previous write, and a
    crash between steps resumes where it left off (Kueue's ``kueue.x-k8s.io/stopping`` protocol).

    ``phase`` places the write in Kueue's order. A ``"suspend"`` write means the job was stopped by
    this call (Kueue's ``stoppedNow``: the ``Stopped`` event is recorded even if a later
    ``"reset-status"`` write fails, but not when the ``"restore"`` write fails).
    """

    merge_patch: dict[str, Any]
    subresource: str | None = None
    phase: StopPhase = "suspend"


@runtime_checkable
class GenericJob(Protocol):
    """Required interface (Kueue ``GenericJob``). ``obj`` is the raw object, mutated in place."""

    @property
    def obj(self) -> dict[str, Any]: ...

    @property
    def gvk(self) -> GroupVersionKind: ...

    def is_suspended(self) -> bool: ...

    def suspend(self) -> None: ...

    def run_with_pod_sets_info(self, infos: Sequence[PodSetInfo]) -> None:
        """Unsuspend and inject admission data into every pod template (raises ``PodSetInfoError``)."""

    def restore_pod_sets_info(self, infos: Sequence[PodSetInfo]) -> bool:
        """Put back the original template data; return whether anything changed."""

    def finished(self) -> FinishedState: ...

    def pod_sets(self) -> list[PodSet]:
        """The Workload pod sets for this job (raises ``AdapterError`` naming a bad path)."""

    def is_active(self) -> bool: ...

    def pods_ready(self) -> bool: ...


class RawObjectAdapter:
    """Holds ``GenericJob.obj``: the raw object read from the API server, never a copy or a model, so
    that what an adapter writes is what the reconciler sends back."""

    def __init__(self, obj: dict[str, Any]) -> None:
        self._obj = obj
        #: the same object as ``_obj``, an attribute rather than a property: the reconciler reads
        #: ``job.obj`` ~60 times per job; never rebound (an adapter changes the object in place)
        self.obj: Final[dict[str, Any]] = obj


@runtime_checkable
class JobWithReclaimablePods(Protocol):
    def reclaimable_pods(self) -> list[ReclaimablePodCount]: ...


@runtime_checkable
class JobWithCustomStop(Protocol):
    def stop_steps(self, infos: Sequence[PodSetInfo]) -> list[StopStep]:
        """The remaining writes to stop the job and restore its templates; empty when stopped."""


@runtime_checkable
class JobWithManagedBy(Protocol):
    def can_default_managed_by(self) -> bool: ...

    def managed_by(self) -> str | None: ...

    def set_managed_by(self, value: str | None) -> None: ...


@runtime_checkable
class JobWithPodLabelSelector(Protocol):
    def pod_label_selector(self) -> str: ...


@runtime_checkable
class JobWithPriorityClass(Protocol):
    def priority_class(self) -> str | None:
        """The pod PriorityClass name, when the kind keeps it somewhere other than the templates."""


@runtime_checkable
class JobWithTemplatePaths(Protocol):
    def template_paths(self) -> list[str]:
        """Where each pod set's ``PodTemplateSpec`` lives in the object, in ``pod_sets()`` order.

        Only for display (``kueue-bridge adapter test``); kinds whose pod sets are synthetic (Tekton's
        PipelineRun) do not implement it.
        """


# apimachinery's ``field.ErrorType`` texts (``validation/field/errors.go``), as a ``field.Error`` prints them
INVALID: Final = "Invalid value"
FORBIDDEN: Final = "Forbidden"
REQUIRED: Final = "Required value"
TOO_LONG: Final = "Too long"
TOO_SHORT: Final = "Too short"
INTERNAL: Final = "Internal error"


@dataclass(frozen=True)
class FieldError:
    """One validation failure, rendered like ``field.Error``: ``<path>: <type>: <detail>``."""

    path: str
    type: str  # one of the field.ErrorType texts above: INVALID, FORBIDDEN, REQUIRED, ...
    detail: str
    bad_value: Any = None


@runtime_checkable
class JobWithValidation(Protocol):
    def validate_on_create(self) -> list[FieldError]: ...

    def validate_on_update(self, old: dict[str, Any]) -> list[FieldError]: ...
