"""How a long-running kueue-bridge process runs its event loop: uvloop, and a collector for caches.

``run_process_loop(main)`` is ``asyncio.run(main)`` with two changes that every component process
(webhook, reconciler) wants and no library call makes for it:

* **uvloop when installed** (``uvicorn[standard]`` ships it on Linux): a faster loop and a faster
  TLS transport, which is where a controller spends much of its time (a write costs ~0.2 ms of CPU
  in aiohttp and ``ssl``). uvicorn picks uvloop only when *it* creates the loop; our processes run
  servers and clients inside their own loop, so the entry point has to choose.
* **A stop event for SIGTERM and SIGINT** (``run_until_signalled``): the controllers drain on it
  (no new key, in-flight reconciles finish, the Lease is released), so a rolling update or Ctrl-C
  never cuts a write in half.
* **A garbage collector tuned for caches.** A controller keeps every watched object in informer
  caches: hundreds of thousands of long-lived dicts and lists that the cyclic collector re-scans
  over and over without finding garbage (in ``bench/reconciler_throughput.py`` a 1,000-job burst spent about
  a third of a second in the collector, a third of the reconciler's CPU). ``gc.freeze()`` at
  start-up moves everything imported so far out of the collector's reach for good, and a first
  generation of ``GC_GENERATION0_THRESHOLD`` allocations instead of CPython's 700 makes
  collections rare. Reference counting still frees acyclic garbage at once; only reference cycles
  wait a little longer, so memory stays bounded.

Invariant: nothing here changes behaviour, only speed; without uvloop the stdlib loop runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import signal
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, Final, TypeVar

__all__ = [
    "GC_GENERATION0_THRESHOLD",
    "run_process_loop",
    "run_until_signalled",
    "tune_garbage_collector",
    "until_first",
]

T = TypeVar("T")

#: allocations between two young-generation collections (CPython's default is 700)
GC_GENERATION0_THRESHOLD: Final = 10_000


def tune_garbage_collector() -> None:
    """Freeze the objects created so far (imports, configuration) and make collections rarer."""
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(GC_GENERATION0_THRESHOLD, older, oldest)


def run_process_loop(main: Coroutine[Any, Any, T], *, tune_gc: bool = True) -> T:
    """``asyncio.run(main)`` on uvloop when installed, after ``tune_garbage_collector()``.

    For process entry points only (it changes process-wide collector settings); embedded servers
    and tests run in their caller's loop.
    """
    if tune_gc:
        tune_garbage_collector()
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvicorn[standard] is a dependency
        return asyncio.run(main)
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        return runner.run(main)


def run_until_signalled(start: Callable[[asyncio.Event], Awaitable[None]], *, tune_gc: bool = True) -> None:
    """``run_process_loop`` of ``start(stop)``, where SIGTERM and SIGINT set ``stop``.

    ``start`` returns once it has drained after ``stop``; a second signal only sets it again.
    """

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        await start(stop)

    run_process_loop(main(), tune_gc=tune_gc)


async def until_first(*awaitables: Awaitable[Any]) -> None:
    """Wait until the first of ``awaitables`` ends, then cancel the others and wait for them.

    For "work until stopped" races (a sleep against a stop event, a consumer against a lost
    connection): none is left running when this returns or is cancelled. A cancellation is not an
    error here; any other exception of an awaitable propagates.
    """
    tasks = [asyncio.ensure_future(awaitable) for awaitable in awaitables]
    try:
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
