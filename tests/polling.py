"""Polling with a deadline: how tests wait for a cluster to converge (never a bare sleep)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

__all__ = ["eventually", "eventually_sync", "while_progressing"]

T = TypeVar("T")


async def eventually(
    check: Callable[[], Awaitable[Any]], *, what: str, within_seconds: float = 20.0, interval: float = 0.02
) -> Any:
    """Poll ``check`` until it returns something truthy; fail naming ``what`` after the deadline."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_seconds
    while True:
        result = await check()
        if result:
            return result
        assert loop.time() < deadline, f"timed out after {within_seconds}s waiting for {what}"
        await asyncio.sleep(interval)


def eventually_sync(
    check: Callable[[], Any], *, what: str, within_seconds: float = 20.0, interval: float = 0.05
) -> Any:
    """:func:`eventually` for synchronous checks (tests driving a server through ``httpx.Client``)."""
    deadline = time.monotonic() + within_seconds
    while True:
        result = check()
        if result:
            return result
        assert time.monotonic() < deadline, f"timed out after {within_seconds}s waiting for {what}"
        time.sleep(interval)


async def while_progressing(
    measure: Callable[[], Awaitable[T]],
    *,
    done: Callable[[T], bool],
    what: str,
    stalled_seconds: float,
    interval: float = 0.02,
) -> T:
    """Poll ``measure`` until ``done`` accepts its value; fail naming ``what`` once the value has not
    changed for ``stalled_seconds``.

    For a wait whose length grows with the work and with the machine's load (hundreds of jobs going
    through several Lease takeovers): the deadline moves on with every change, so only a wait that is
    stuck fails, never one that is merely slow."""
    loop = asyncio.get_running_loop()
    value = await measure()
    changed_at = loop.time()
    while not done(value):
        assert loop.time() - changed_at < stalled_seconds, (
            f"stuck at {value!r} for {stalled_seconds}s waiting for {what}"
        )
        await asyncio.sleep(interval)
        current = await measure()
        if current != value:
            value, changed_at = current, loop.time()
    return value
