"""The AppWrapper phase machine: AppWrapper's framework controller ``Reconcile``, step for step.

One call of :meth:`PhaseMachine.reconcile` looks at one AppWrapper and moves it at most one phase
on, writing status as the operator does and answering when to look again (seconds, or ``None``:
only when something changes). Two conditions carry the contract with Kueue (read by the
reconciler's adapter): ``QuotaReserved`` (the job is active) and ``ResourcesDeployed`` (objects may
exist; a ``Failed`` AppWrapper is finished only once it is ``False``, so quota is released only
after cleanup).

=============  =============================================================================  ==============
phase          what happens                                                                   next
=============  =============================================================================  ==============
Empty          resolve every component's pod sets into ``status.componentStatus``            Suspended
Suspended      wait while suspended; on unsuspend add the finalizer, then QuotaReserved,      Resuming
               ResourcesDeployed True, PodsReady, Unhealthy False ("Suspend is false")
Resuming       create the components; a transient failure is retried every second within      Running
               the admission grace period, then Unhealthy "CreateFailed" and reset-or-fail;
               a fatal one fails at once
Running        count components and pods: a missing component fails; a failed component      Succeeded, ...
               resets; all pods succeeded succeeds; failed pods reset after the failure grace
               period; too few ready pods reset after the admission/warmup grace period
Resetting      delete the components (quota kept), pause ``retryPausePeriod`` from            Resuming
               Unhealthy's transition, then ResourcesDeployed True "Reset complete; resuming"
Suspending     delete the components, QuotaReserved False                                     Suspended
Succeeded      QuotaReserved False at once; components deleted after the success TTL          --
Failed         after ``deletionOnFailureGracePeriodDuration`` (unless suspended) delete the    --
               components; QuotaReserved False
Terminating    the AppWrapper is being deleted: components deleted, then the finalizer removed  gone
=============  =============================================================================  ==============

A suspend (Kueue's preemption) wins over Resuming, Running and Resetting. reset-or-fail: a failure
that is not terminal and ``resettingCount < retryLimit`` increments the count and resets; anything
else fails. An AppWrapper whose ``spec.managedBy`` names another controller is left alone.

Deliberate differences: once a failed AppWrapper's deletion has begun (``DeletingResources`` True)
the ``deletionOnFailureGracePeriodDuration`` pause is not entered again (the operator flips the
condition back to "DeletionPaused" on its next look and so waits the whole period a second time).
A component that cannot be resolved (not an object, no kind, a pod set path
that leads nowhere) sends an ``Empty`` AppWrapper straight to ``Failed`` with Unhealthy
"CreateFailed" naming the component, where the operator would retry the reconcile forever.

Invariant: every deadline is ``condition.lastTransitionTime + period`` on the stored object, so a
restarted controller (or a new leader) resumes with exactly the deadlines its predecessor had.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from appwrapper.components import ComponentError, expected_pod_count, initial_component_status
from appwrapper.faulttolerance import FaultTolerance
from appwrapper.model import (
    DELETING_RESOURCES,
    DELETION_ON_FAILURE_GRACE_PERIOD_ANNOTATION,
    FINALIZER,
    PODS_READY,
    QUOTA_RESERVED,
    RESOURCES_DEPLOYED,
    UNHEALTHY,
    Phase,
)
from appwrapper.ports import ClusterPort, EventSink, PhaseObserver
from appwrapper.resources import create_components, delete_components
from appwrapper.state import Attempt
from appwrapper.summary import JOB_KIND, PodSummary, summarize_components, summarize_pods
from shared.durations import format_go_duration
from shared.frameworks.builtin_kinds import APPWRAPPER
from shared.kube import KubeError, NotFound
from shared.kube.times import utc_now

__all__ = ["PhaseMachine"]

log = logging.getLogger(__name__)

CREATE_RETRY_SECONDS = 1.0
DELETE_POLL_SECONDS = 5.0
NOT_READY_POLL_SECONDS = 5.0
READY_POLL_SECONDS = 60.0
SUSPEND_IS_FALSE = "Suspend is false"
DEFAULT_FAULT_TOLERANCE = FaultTolerance()


def _no_phase_observer(*, namespace: str, phase: str) -> None:
    return None


async def _undeployed(attempt: Attempt, *, reason: str, message: str) -> bool:
    """Delete ``attempt``'s components; once they are all gone, ``ResourcesDeployed=False`` with
    ``reason``/``message`` and ``True``. ``False`` (the status flushed) while deletions are pending."""
    if not await delete_components(attempt):
        await attempt.flush()
        return False
    attempt.set(RESOURCES_DEPLOYED, "False", reason, message)
    return True


@dataclass(frozen=True, kw_only=True, eq=False)
class PhaseMachine:
    """The AppWrapper phase controller's dependencies and its ``reconcile``; it holds no state of
    its own between calls (everything it knows is in the AppWrapper and the cluster)."""

    port: ClusterPort
    events: EventSink
    config: FaultTolerance = DEFAULT_FAULT_TOLERANCE
    clock: Callable[[], datetime] = utc_now
    on_phase: PhaseObserver = _no_phase_observer

    async def reconcile(self, aw: dict[str, Any]) -> float | None:
        """Move ``aw`` along; the seconds after which to look again, or ``None``."""
        managed_by = (aw.get("spec") or {}).get("managedBy")
        if managed_by is not None and managed_by != APPWRAPPER.own_controller:
            return None
        attempt = Attempt(
            aw,
            port=self.port,
            events=self.events,
            on_phase=self.on_phase,
            config=self.config,
            now=self.clock(),
        )
        if (aw.get("metadata") or {}).get("deletionTimestamp"):
            requeue = await self._finalize(attempt)
            attempt.emit_events()
            return requeue
        try:
            phase = Phase(attempt.phase)
        except ValueError:  # not a phase AppWrapper knows (its switch has no case for it either)
            return None
        handler = {
            Phase.EMPTY: self._empty,
            Phase.SUSPENDED: self._suspended,
            Phase.RESUMING: self._resuming,
            Phase.RUNNING: self._running,
            Phase.SUSPENDING: self._suspending,
            Phase.RESETTING: self._resetting,
            Phase.FAILED: self._failed,
            Phase.SUCCEEDED: self._succeeded,
        }.get(phase)
        if handler is None:
            return None
        requeue = await handler(attempt)
        attempt.emit_events()  # those of a pass that wrote nothing after them
        return requeue

    # --- deletion of the AppWrapper --------------------------------------------------------------

    async def _finalize(self, attempt: Attempt) -> float | None:
        finalizers = list((attempt.aw.get("metadata") or {}).get("finalizers") or [])
        if FINALIZER not in finalizers:
            return None
        if attempt.is_true(RESOURCES_DEPLOYED):
            if not await delete_components(attempt):
                if attempt.phase != Phase.TERMINATING:
                    attempt.status["phase"] = Phase.TERMINATING.value
                    try:  # for the user's benefit only; the requeue matters, not this write
                        await attempt.flush()
                    except KubeError as exc:
                        log.warning("could not record the Terminating phase", extra={"error": str(exc)})
                return DELETE_POLL_SECONDS
            attempt.set(
                RESOURCES_DEPLOYED, "False", Phase.TERMINATING.value, "Resources successfully deleted"
            )
        if attempt.is_true(QUOTA_RESERVED):
            attempt.set(QUOTA_RESERVED, "False", Phase.TERMINATING.value, "No resources deployed")
        try:
            await attempt.flush()
            await self.port.set_finalizers(attempt.aw, [f for f in finalizers if f != FINALIZER])
        except NotFound:  # already gone (another replica, or a racing delete): nothing left to finalize
            return None
        log.info("Finalizer Deleted", extra={"appwrapper": f"{attempt.namespace}/{attempt.name}"})
        return None

    # --- the phases ------------------------------------------------------------------------------

    async def _empty(self, attempt: Attempt) -> float | None:
        if len(attempt.component_status) != len(attempt.components):
            try:
                attempt.status["componentStatus"] = initial_component_status(attempt.aw)
            except ComponentError as exc:
                self._unhealthy(attempt, "CreateFailed", f"error creating components: {exc}")
                await attempt.transition(Phase.FAILED)
                return None
        await attempt.transition(Phase.SUSPENDED)
        return None

    async def _suspended(self, attempt: Attempt) -> float | None:
        if attempt.suspend:
            return None
        metadata = attempt.aw.get("metadata") or {}
        finalizers = list(metadata.get("finalizers") or [])
        if FINALIZER not in finalizers:
            updated = await self.port.set_finalizers(attempt.aw, [*finalizers, FINALIZER])
            attempt.aw["metadata"] = updated.get("metadata") or metadata
            log.info("Finalizer Added", extra={"appwrapper": f"{attempt.namespace}/{attempt.name}"})
        for condition_type, status in (
            (QUOTA_RESERVED, "True"),
            (RESOURCES_DEPLOYED, "True"),
            (PODS_READY, "False"),
            (UNHEALTHY, "False"),
        ):
            attempt.set(condition_type, status, Phase.RESUMING.value, SUSPEND_IS_FALSE)
        await attempt.transition(Phase.RESUMING)
        return None

    async def _resuming(self, attempt: Attempt) -> float | None:
        if await _externally_suspended(attempt, "Resuming"):
            return None
        failure = await create_components(attempt)
        if failure is None:
            await attempt.transition(Phase.RUNNING)
            return None
        if not failure.fatal:
            grace = attempt.knobs.admission_grace.total_seconds()
            if attempt.remaining(attempt.since(RESOURCES_DEPLOYED), grace) > 0:
                return CREATE_RETRY_SECONDS
        self._unhealthy(attempt, "CreateFailed", f"error creating components: {failure.message}")
        if failure.fatal:
            await attempt.transition(Phase.FAILED)
        else:
            await self._reset_or_fail(attempt, terminal=False, increment=1)
        return None

    async def _observe(self, attempt: Attempt) -> tuple[int, int, int, PodSummary]:
        """(expected components, deployed, failed, pod summary), components read live."""
        objects: list[dict[str, Any] | None] = []
        for entry in attempt.component_status:
            name = str(entry.get("name") or "")
            objects.append(
                await self.port.get(
                    api_version=str(entry.get("apiVersion", "")),
                    kind=str(entry.get("kind", "")),
                    namespace=attempt.namespace,
                    name=name,
                )
                if name
                else None
            )
        components = summarize_components(len(attempt.component_status), objects)
        jobs = [
            obj
            for obj in objects
            if obj is not None
            and (obj.get("apiVersion"), obj.get("kind")) == JOB_KIND
            and not (obj.get("metadata") or {}).get("deletionTimestamp")
        ]
        pods = summarize_pods(
            expected=expected_pod_count(attempt.component_status),
            pods=self.port.cached_pods(namespace=attempt.namespace, appwrapper=attempt.name),
            jobs=jobs,
            terminal_codes=attempt.knobs.terminal_exit_codes,
            retryable_codes=attempt.knobs.retryable_exit_codes,
        )
        return components.expected, components.deployed, components.failed, pods

    async def _running(self, attempt: Attempt) -> float | None:
        if await _externally_suspended(attempt, "Running"):
            return None
        expected, deployed, failed, pods = await self._observe(attempt)
        if deployed != expected:
            message = f"Only found {deployed} deployed components, but was expecting {expected}"
            self._unhealthy(attempt, "MissingComponent", message)
            await attempt.transition(Phase.FAILED)
            return None
        if failed > 0:
            self._unhealthy(attempt, "FailedComponent", f"Found {failed} failed components")
            await self._reset_or_fail(attempt, terminal=pods.terminal_failure, increment=1)
            return None
        if pods.succeeded >= pods.expected and pods.pending + pods.running + pods.failed == 0:
            message = f"{pods.succeeded} pods succeeded and no running, pending, or failed pods"
            attempt.set(QUOTA_RESERVED, "False", Phase.SUCCEEDED.value, message)
            attempt.set(RESOURCES_DEPLOYED, "True", Phase.SUCCEEDED.value, message)
            await attempt.transition(Phase.SUCCEEDED)
            return None
        if pods.failed > 0:
            # no count in the message: a changed message would not move the transition time, but
            # AppWrapper keeps it constant all the same
            attempt.set(UNHEALTHY, "True", "FoundFailedPods")
            left = attempt.remaining(attempt.since(UNHEALTHY), attempt.knobs.failure_grace.total_seconds())
            if left > 0:
                await attempt.flush()
                return left
            attempt.event(UNHEALTHY, f"FoundFailedPods: {pods.failed} failed pods")
            await self._reset_or_fail(attempt, terminal=pods.terminal_failure, increment=1)
            return None
        attempt.clear(UNHEALTHY, "FoundNoFailedPods")
        if pods.running + pods.succeeded >= pods.expected:
            attempt.set(
                PODS_READY,
                "True",
                "SufficientPodsReady",
                f"{pods.running} pods running; {pods.succeeded} pods succeeded",
            )
            await attempt.flush()
            return READY_POLL_SECONDS
        details = f"{pods.pending} pods pending; {pods.running} pods running; {pods.succeeded} pods succeeded"
        attempt.clear(PODS_READY, "InsufficientPodsReady", details)
        if pods.pending + pods.running + pods.succeeded >= pods.expected:
            grace = attempt.knobs.warmup_grace
        else:
            grace = attempt.knobs.admission_grace
        if attempt.remaining(attempt.since(RESOURCES_DEPLOYED), grace.total_seconds()) > 0:
            await attempt.flush()
            return NOT_READY_POLL_SECONDS
        self._unhealthy(attempt, "InsufficientPodsReady", details)
        await self._reset_or_fail(attempt, terminal=pods.terminal_failure, increment=1)
        return None

    async def _suspending(self, attempt: Attempt) -> float | None:
        if attempt.is_true(RESOURCES_DEPLOYED) and not await _undeployed(
            attempt, reason=Phase.SUSPENDED.value, message="Suspend is true"
        ):
            return DELETE_POLL_SECONDS
        attempt.set(QUOTA_RESERVED, "False", Phase.SUSPENDED.value, "Suspend is true")
        attempt.clear(PODS_READY, Phase.SUSPENDED.value)
        attempt.clear(UNHEALTHY, Phase.SUSPENDED.value)
        await attempt.transition(Phase.SUSPENDED)
        return None

    async def _resetting(self, attempt: Attempt) -> float | None:
        if await _externally_suspended(attempt, "Resetting"):
            return None
        attempt.clear(PODS_READY, Phase.RESETTING.value)
        if attempt.is_true(RESOURCES_DEPLOYED) and not await _undeployed(
            attempt, reason=Phase.RESETTING.value, message="Resources deleted for resetting AppWrapper"
        ):
            return DELETE_POLL_SECONDS
        left = attempt.remaining(attempt.since(UNHEALTHY), attempt.knobs.retry_pause.total_seconds())
        if left > 0:
            await attempt.flush()
            return left
        attempt.set(RESOURCES_DEPLOYED, "True", Phase.RESUMING.value, "Reset complete; resuming")
        await attempt.transition(Phase.RESUMING)
        return None

    async def _failed(self, attempt: Attempt) -> float | None:
        delay = attempt.knobs.deletion_on_failure_grace
        if delay > timedelta(0) and not attempt.suspend and not attempt.is_true(DELETING_RESOURCES):
            attempt.set(
                DELETING_RESOURCES,
                "False",
                "DeletionPaused",
                f"{DELETION_ON_FAILURE_GRACE_PERIOD_ANNOTATION} has value {format_go_duration(delay)}",
            )
            left = attempt.remaining(attempt.since(DELETING_RESOURCES), delay.total_seconds())
            if left > 0:
                await attempt.flush()
                return left
        if attempt.is_true(RESOURCES_DEPLOYED):
            message = "Resources deleted for failed AppWrapper"
            if delay > timedelta(0) and attempt.suspend:
                message = "Kueue forced resource deletion by suspending AppWrapper"
            if not await _undeployed(attempt, reason=Phase.FAILED.value, message=message):
                return DELETE_POLL_SECONDS
        attempt.set(QUOTA_RESERVED, "False", Phase.FAILED.value, "No resources deployed")
        await attempt.flush()
        return None

    async def _succeeded(self, attempt: Attempt) -> float | None:
        if not attempt.is_true(RESOURCES_DEPLOYED):
            return None
        ttl = attempt.knobs.success_ttl
        left = attempt.remaining(attempt.since(RESOURCES_DEPLOYED), ttl.total_seconds())
        if left > 0:
            return left
        message = f"Time to live after success of {format_go_duration(ttl)} expired"
        if not await _undeployed(attempt, reason=Phase.SUCCEEDED.value, message=message):
            return DELETE_POLL_SECONDS
        await attempt.flush()
        return None

    # --- helpers ---------------------------------------------------------------------------------

    @staticmethod
    def _unhealthy(attempt: Attempt, reason: str, message: str) -> None:
        attempt.set(UNHEALTHY, "True", reason, message)
        attempt.event(UNHEALTHY, f"{reason}: {message}")

    @staticmethod
    async def _reset_or_fail(attempt: Attempt, *, terminal: bool, increment: int) -> None:
        if not terminal and attempt.retries < attempt.knobs.retry_limit:
            attempt.status["resettingCount"] = attempt.retries + increment
            await attempt.transition(Phase.RESETTING)
        else:
            await attempt.transition(Phase.FAILED)


async def _externally_suspended(attempt: Attempt, phase: str) -> bool:
    """A ``spec.suspend`` set while the AppWrapper is in ``phase`` moves it to Suspending (an event
    says so); whether it did."""
    if not attempt.suspend:
        return False
    attempt.event(Phase.SUSPENDING.value, f"Externally suspended while in the {phase} phase")
    await attempt.transition(Phase.SUSPENDING)
    return True
