"""Polling with a deadline: how tests wait for a cluster to converge (never a bare sleep)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["eventually", "eventually_sync"]


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
