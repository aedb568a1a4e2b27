"""Time as an injected dependency.

Every time-dependent part of the runtime (rate limiters, backoff, watch inactivity, work-queue
delays, leader election, event series windows) reads time and sleeps only through a ``Clock``. In
production that is ``SystemClock`` (``time.monotonic`` plus ``asyncio``); tests pass a ``FakeClock``
and move time forward explicitly, so nothing in a unit test waits for real time and nothing is
timing-dependent.

Invariants:

* A ``wait_for`` that is cancelled raises ``CancelledError``, even when its awaitable finished in
  the same loop iteration: shutdown relies on every cancelled task actually stopping.
* ``now()`` is monotonic seconds and is used for all durations; ``wall()`` is a timezone-aware UTC
  datetime and is used only for timestamps written to the API (Lease ``renewTime``, event times).
* ``FakeClock`` moves only in ``advance()``; every sleeper whose deadline is reached is woken in
  deadline order, and the event loop is given the chance to run the woken tasks (which may start new
  sleeps) before time moves on, so a chain of timers behaves as it would in real time.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import time
from collections.abc import Awaitable
from datetime import UTC, datetime, timedelta
from typing import Protocol, TypeVar

__all__ = ["Clock", "FakeClock", "SystemClock", "settle"]

T = TypeVar("T")


class Clock(Protocol):
    def now(self) -> float:
        """Monotonic seconds."""

    def wall(self) -> datetime:
        """Current UTC time (timezone-aware)."""

    async def sleep(self, seconds: float) -> None: ...

    async def wait_for(self, awaitable: Awaitable[T], seconds: float | None) -> T:
        """Await ``awaitable``; raise ``TimeoutError`` (and cancel it) after ``seconds``."""


class SystemClock:
    """The real clock. ``now`` is ``time.monotonic`` itself (bound as a class attribute, no method
    around it): the work queue, the controller and the client read it ~80 times per job."""

    now = staticmethod(time.monotonic)

    def wall(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    async def wait_for(self, awaitable: Awaitable[T], seconds: float | None) -> T:
        # ``asyncio.timeout``, not ``asyncio.wait_for``: on Python 3.11 the latter returns the result
        # instead of raising ``CancelledError`` when the awaitable completes in the same loop
        # iteration as a cancel (CPython gh-86296), so a watch on a busy stream could ignore the
        # cancel of a shutdown and run on forever.
        async with asyncio.timeout(seconds):
            return await awaitable


async def settle(rounds: int = 64) -> None:
    """Let every runnable task run until the loop is quiet (used by ``FakeClock`` and tests)."""
    for _ in range(rounds):
        await asyncio.sleep(0)


class FakeClock:
    """A clock that moves only when told to; for tests."""

    def __init__(self, *, start: float = 1000.0, wall_start: datetime | None = None) -> None:
        self._now = start
        self._start = start
        self._wall_start = wall_start or datetime(2025, 1, 1, tzinfo=UTC)
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._seq = itertools.count()

    def now(self) -> float:
        return self._now

    def wall(self) -> datetime:
        return self._wall_start + timedelta(seconds=self._now - self._start)

    @property
    def pending_sleepers(self) -> int:
        return sum(1 for _, _, fut in self._sleepers if not fut.done())

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._seq), future))
        await future

    async def wait_for(self, awaitable: Awaitable[T], seconds: float | None) -> T:
        task = asyncio.ensure_future(awaitable)
        if seconds is None:
            return await task
        timer = asyncio.ensure_future(self.sleep(seconds))
        try:
            await asyncio.wait({task, timer}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            task.cancel()
            timer.cancel()
            raise
        if task.done():
            timer.cancel()
            return task.result()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        raise TimeoutError(f"timed out after {seconds}s (fake clock)")

    async def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds``, waking sleepers in deadline order."""
        target = self._now + seconds
        await settle()
        while self._sleepers:
            deadline, _, future = self._sleepers[0]
            if future.done():
                heapq.heappop(self._sleepers)
                continue
            if deadline > target:
                break
            heapq.heappop(self._sleepers)
            self._now = max(self._now, deadline)
            future.set_result(None)
            await settle()
        self._now = target
        await settle()

    async def advance_in_steps(self, seconds: float, *, step: float) -> None:
        """Advance in increments of ``step`` (lets I/O-driven tasks interleave with timers)."""
        remaining = seconds
        while remaining > 1e-9:
            chunk = min(step, remaining)
            await self.advance(chunk)
            remaining -= chunk
