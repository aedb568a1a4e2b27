"""``SystemClock.wait_for``: a timeout that never swallows a cancellation.

Python 3.11's ``asyncio.wait_for`` returns the result instead of raising ``CancelledError`` when the
awaited future completes in the same loop iteration as the cancel (CPython gh-86296, fixed in 3.12).
A watch loop waiting on a busy stream then ignores ``task.cancel()`` and keeps running, so a
shutdown that cancels its informers and gathers them never ends (seen as a hung benchmark).
"""

from __future__ import annotations

import asyncio

import pytest

from shared.kube.clock import Clock, FakeClock, SystemClock


@pytest.mark.parametrize("clock", [SystemClock(), FakeClock()], ids=["system", "fake"])
async def test_a_cancel_that_races_the_result_still_cancels(clock: Clock) -> None:
    loop = asyncio.get_running_loop()
    result: asyncio.Future[str] = loop.create_future()
    waiting = asyncio.create_task(clock.wait_for(result, 10.0))
    await asyncio.sleep(0)  # the task now waits on ``result``
    result.set_result("chunk")  # data arrives ...
    waiting.cancel()  # ... in the same iteration as the shutdown's cancel
    with pytest.raises(asyncio.CancelledError):
        await waiting


async def test_the_result_comes_back_before_the_deadline() -> None:
    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    assert await SystemClock().wait_for(answer(), 10.0) == 42
    assert await SystemClock().wait_for(answer(), None) == 42


async def test_the_deadline_raises_timeout_and_cancels_the_awaitable() -> None:
    cancelled = asyncio.Event()

    async def forever() -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise

    with pytest.raises(TimeoutError):
        await SystemClock().wait_for(forever(), 0.01)
    assert cancelled.is_set()
