"""``tests.polling.while_progressing``: a wait that fails when stuck, not when slow."""

from __future__ import annotations

import itertools

import pytest

from tests.polling import while_progressing


async def test_returns_the_value_done_accepts_once_it_gets_there() -> None:
    counter = itertools.count()

    async def measure() -> int:
        return next(counter)

    reached = await while_progressing(
        measure, done=lambda n: n >= 5, what="five", stalled_seconds=60, interval=0
    )
    assert reached == 5


async def test_a_value_that_stops_changing_fails_naming_it_and_the_wait() -> None:
    async def measure() -> int:
        return 3

    with pytest.raises(AssertionError, match=r"stuck at 3 for 0\.05s waiting for all 10 finished"):
        await while_progressing(
            measure, done=lambda n: n >= 10, what="all 10 finished", stalled_seconds=0.05, interval=0.01
        )
