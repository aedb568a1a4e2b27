"""One reconcile's working copy of an AppWrapper, and how its status reaches the API server.

The operator edits a copy of the AppWrapper and sends ``client.MergeFrom(orig)`` status patches at
fixed points of a reconcile (after each component is recorded, created or failed, and at every phase
transition). :class:`Attempt` does the same: the machine edits ``attempt.status`` in place and
:meth:`Attempt.flush` sends the JSON merge patch between what was last written and what is there now
(nothing at all when they are equal), so every write the operator makes is made here at the same
point, with the same content.

Invariants:

* ``attempt.aw`` is a private deep copy: informer-cached objects are never mutated;
* ``written`` is what the API server holds after the last successful flush, so a failed write is
  sent again (merged with later changes) by the next flush, never silently lost;
* ``now`` is read once per reconcile, as the operator reads ``time.Now()`` where it decides; every
  deadline is measured from a condition's *stored* ``lastTransitionTime`` (see ``conditions``).
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from appwrapper.conditions import clear_condition, transition_time
from appwrapper.faulttolerance import FaultTolerance, Knobs
from appwrapper.model import UNHEALTHY, Phase
from appwrapper.ports import ClusterPort, EventSink, PhaseObserver
from shared.jsontree import copy_json
from shared.kube import NORMAL
from shared.kube.conditions import find_condition, is_condition_true, set_condition
from shared.merge_patch import create_merge_patch

__all__ = ["Attempt"]

log = logging.getLogger(__name__)


class Attempt:
    """The AppWrapper being reconciled, its status writes, events and knobs."""

    def __init__(
        self,
        aw: dict[str, Any],
        *,
        port: ClusterPort,
        events: EventSink,
        on_phase: PhaseObserver,
        config: FaultTolerance,
        now: datetime,
    ) -> None:
        self.aw = copy_json(aw)
        status = self.aw.get("status")
        if not isinstance(status, dict):
            status = self.aw["status"] = {}
        if not isinstance(status.get("conditions"), list):
            status["conditions"] = []
        self._written = copy_json(status)
        self.port = port
        self._events = events
        self._pending_events: list[tuple[str, str, str]] = []
        self._on_phase = on_phase
        self.now = now
        metadata = self.aw.get("metadata") or {}
        self.namespace: str = str(metadata.get("namespace", ""))
        self.name: str = str(metadata.get("name", ""))
        annotations = metadata.get("annotations")
        self.knobs = Knobs(
            annotations if isinstance(annotations, dict) else {},
            config=config,
            key=f"{self.namespace}/{self.name}",
        )

    # --- reading ---------------------------------------------------------------------------------

    @property
    def status(self) -> dict[str, Any]:
        status: dict[str, Any] = self.aw["status"]
        return status

    @property
    def conditions(self) -> list[dict[str, Any]]:
        conditions: list[dict[str, Any]] = self.status["conditions"]
        return conditions

    @property
    def phase(self) -> str:
        return str(self.status.get("phase") or "")

    @property
    def suspend(self) -> bool:
        return (self.aw.get("spec") or {}).get("suspend") is True

    @property
    def components(self) -> list[Any]:
        components = (self.aw.get("spec") or {}).get("components")
        return components if isinstance(components, list) else []

    @property
    def component_status(self) -> list[dict[str, Any]]:
        statuses = self.status.get("componentStatus")
        return statuses if isinstance(statuses, list) else []

    @property
    def retries(self) -> int:
        value = self.status.get("resettingCount")
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    def is_true(self, condition_type: str) -> bool:
        return is_condition_true(self.conditions, condition_type)

    def since(self, condition_type: str) -> datetime:
        """When ``condition_type`` last changed status (stored, second precision)."""
        return transition_time(self.conditions, condition_type, default=self.now)

    def remaining(self, start: datetime, seconds: float) -> float:
        """Seconds until ``start + seconds``; ``<= 0`` once that moment has passed."""
        return (start - self.now).total_seconds() + seconds

    # --- writing ---------------------------------------------------------------------------------

    def set(self, condition_type: str, status: str, reason: str, message: str = "") -> None:
        set_condition(
            self.conditions,
            condition_type=condition_type,
            status=status,
            reason=reason,
            message=message,
            now=self.now,
        )

    def clear(self, condition_type: str, reason: str, message: str = "") -> None:
        clear_condition(
            self.conditions, condition_type=condition_type, reason=reason, message=message, now=self.now
        )

    def find(self, condition_type: str) -> dict[str, Any] | None:
        return find_condition(self.conditions, condition_type)

    async def flush(self) -> None:
        """Send the status changes made since the last flush (merge patch; nothing if none)."""
        patch = create_merge_patch({"status": self._written}, {"status": self.status})
        if patch:
            updated = await self.port.patch_status(self.aw, patch)
            self._written = copy_json(self.status)
            version = (updated.get("metadata") or {}).get("resourceVersion")
            if version:
                self.aw.setdefault("metadata", {})["resourceVersion"] = version
        self.emit_events()

    async def transition(self, phase: Phase) -> None:
        """``transitionToPhase``: write the phase (with every pending change), then count it."""
        self.status["phase"] = phase.value
        await self.flush()
        where = f"{self.namespace}/{self.name}"
        if phase is Phase.FAILED:
            # Once per failure (the phase is written once), with the reason, so the log alone says why.
            unhealthy = self.find(UNHEALTHY) or {}
            log.warning(
                "AppWrapper %s failed: %s: %s",
                where,
                unhealthy.get("reason", "Unknown"),
                unhealthy.get("message", ""),
                extra={"appwrapper": where},
            )
        else:
            log.info("%s", phase.value or "Empty", extra={"appwrapper": where})
        self._on_phase(namespace=self.namespace, phase=phase.value)

    def event(self, reason: str, message: str, *, event_type: str = NORMAL) -> None:
        """An event about what this pass decided, recorded once the status that goes with it is
        written (the next ``flush``) or the pass ends (``emit_events``). A pass whose write fails
        (a conflict) records nothing, so its retry does not record the same failure twice."""
        self._pending_events.append((event_type, reason, message))

    def emit_events(self) -> None:
        """Record the events noted so far (in order)."""
        pending, self._pending_events = self._pending_events, []
        for event_type, reason, message in pending:
            self._events.record(regarding=self.aw, event_type=event_type, reason=reason, message=message)
