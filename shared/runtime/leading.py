"""One controller process's life: campaign for the Lease, run the manager while leading, drain on stop.

The reconciler, MultiKueue and AppWrapper processes differ only in the manager they run; this module is
the part they share (they may not import each other), so a fix to the lifecycle lands in all three.

Invariants:

* **Only the Lease holder runs a manager.** With ``leaderElection.leaderElect`` off the process leads
  at once. Losing the Lease stops the manager and campaigns again; nothing runs in between.
* **A stop drains before it lets go.** SIGTERM while leading lets the manager finish in-flight
  reconciles (``drain_seconds``) before the elector releases the Lease, so a standby never overlaps
  with a draining leader; a stop while only campaigning cancels the campaign at once.
* **Queued Events get a bounded flush.** ``stop_event_recorder`` writes what is queued for at most
  ``EVENT_FLUSH_SECONDS`` and counts the rest as dropped; a stopping process never hangs on them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Protocol

from shared.config import Configuration
from shared.kube import EventRecorder, KubeClient, KubeMetrics, LeaderElectionSettings, LeaderElector

__all__ = [
    "DRAIN_SECONDS",
    "EVENT_FLUSH_SECONDS",
    "Leadership",
    "Manager",
    "leader_elector_for",
    "serve_while_leading",
    "stop_event_recorder",
]

logger = logging.getLogger(__name__)

EVENT_FLUSH_SECONDS = 5.0
DRAIN_SECONDS = 10.0


class Manager(Protocol):
    async def run(self) -> None: ...

    async def shutdown(self, *, drain_seconds: float) -> None: ...


class Leadership:
    """Whether this process leads, and the manager it runs while it does (for readiness checks)."""

    def __init__(self) -> None:
        self.leading = False
        self.manager: Manager | None = None


def leader_elector_for(
    client: KubeClient, *, config: Configuration, component: str, identity: str, metrics: KubeMetrics
) -> LeaderElector:
    """The elector for Lease ``<leaderElection.resourceName>-<component>`` with the configured timings."""
    election = config.leader_election
    return LeaderElector(
        client,
        LeaderElectionSettings(
            lease_name=election.lease_name(component),
            lease_namespace=election.resource_namespace or config.namespace,
            identity=identity,
            lease_duration=election.lease_duration.total_seconds(),
            renew_deadline=election.renew_deadline.total_seconds(),
            retry_period=election.retry_period.total_seconds(),
        ),
        metrics=metrics,
    )


async def serve_while_leading(
    *,
    stop: asyncio.Event,
    leader_elect: bool,
    elector: LeaderElector,
    make_manager: Callable[[], Manager],
    name: str,
    leadership: Leadership | None = None,
    drain_seconds: float = DRAIN_SECONDS,
) -> None:
    """Run ``make_manager()`` whenever this process holds the Lease, until ``stop`` is set."""
    state = leadership or Leadership()

    async def lead() -> None:
        state.leading = True
        manager = state.manager = make_manager()
        run = asyncio.create_task(manager.run(), name=name)
        stopped = asyncio.create_task(stop.wait())
        try:
            await asyncio.wait({run, stopped}, return_when=asyncio.FIRST_COMPLETED)
            if stop.is_set():
                await manager.shutdown(drain_seconds=drain_seconds)
        finally:
            stopped.cancel()
            run.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await run
            state.manager = None
            state.leading = False

    while not stop.is_set():
        if not leader_elect:
            await lead()
            continue
        campaign = asyncio.create_task(elector.run(on_started_leading=lead))
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait({campaign, stopped}, return_when=asyncio.FIRST_COMPLETED)
        if not campaign.done():
            if state.leading:
                await campaign  # lead() sees the stop, drains, then the lease is released
            else:
                campaign.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await campaign
        stopped.cancel()
        if not stop.is_set():
            logger.warning("lost leadership; campaigning again")


async def stop_event_recorder(recorder: EventRecorder, task: asyncio.Task[None]) -> None:
    """Flush queued Events for at most ``EVENT_FLUSH_SECONDS``, drop the rest, stop the writer task."""
    try:
        async with asyncio.timeout(EVENT_FLUSH_SECONDS):
            await recorder.flush()
    except TimeoutError:
        logger.warning(
            "stopping with events still queued; they are dropped", extra={"events": recorder.drop_pending()}
        )
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
