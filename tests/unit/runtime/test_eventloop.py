"""``shared.runtime.eventloop``: component processes run on uvloop with a collector tuned for caches."""

from __future__ import annotations

import asyncio
import gc
import os
import signal
from collections.abc import Iterator

import pytest
import uvloop

from shared.runtime.eventloop import (
    GC_GENERATION0_THRESHOLD,
    run_process_loop,
    run_until_signalled,
    until_first,
)


@pytest.fixture
def restore_gc() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


async def running_loop_type() -> type[asyncio.AbstractEventLoop]:
    return type(asyncio.get_running_loop())


@pytest.mark.usefixtures("restore_gc")
def test_runs_the_coroutine_on_uvloop_and_returns_its_result() -> None:
    assert run_process_loop(running_loop_type()) is uvloop.Loop


@pytest.mark.usefixtures("restore_gc")
def test_freezes_start_up_objects_and_raises_the_young_generation_threshold() -> None:
    gc.unfreeze()
    run_process_loop(running_loop_type())
    assert gc.get_freeze_count() > 0
    assert gc.get_threshold()[0] == GC_GENERATION0_THRESHOLD


@pytest.mark.usefixtures("restore_gc")
def test_leaves_the_collector_alone_when_asked() -> None:
    gc.unfreeze()
    before = gc.get_threshold()
    run_process_loop(running_loop_type(), tune_gc=False)
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == before


@pytest.mark.usefixtures("restore_gc")
def test_exceptions_propagate() -> None:
    async def fail() -> None:
        raise LookupError("boom")

    with pytest.raises(LookupError, match="boom"):
        run_process_loop(fail())


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_sets_the_stop_event_and_the_start_function_drains(signum: int) -> None:
    seen: list[str] = []

    async def start(stop: asyncio.Event) -> None:
        os.kill(os.getpid(), signum)  # as kubelet (SIGTERM) or a user's Ctrl-C (SIGINT) would
        await asyncio.wait_for(stop.wait(), timeout=10)
        seen.append("drained")

    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        run_until_signalled(start, tune_gc=False)
    finally:  # uvloop leaves its handlers in place when the loop closes (a process exits then)
        for number, handler in handlers.items():
            signal.signal(number, handler)
    assert seen == ["drained"]


async def test_until_first_returns_when_one_ends_and_leaves_none_running() -> None:
    stop = asyncio.Event()
    cancelled: list[str] = []

    async def forever(name: str) -> None:
        try:
            await asyncio.Event().wait()
        finally:
            cancelled.append(name)

    stop.set()
    await until_first(forever("work"), stop.wait())
    assert cancelled == ["work"]


async def test_until_first_propagates_a_failure() -> None:
    async def fails() -> None:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        await until_first(fails(), asyncio.Event().wait())
