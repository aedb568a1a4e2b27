from __future__ import annotations

import asyncio

import pytest
from prometheus_client import CollectorRegistry

from shared.kube import FakeClock, KubeMetrics
from shared.kube.clock import settle
from shared.kube.ratelimit import ItemExponentialBackoff, TokenBucket
from shared.kube.workqueue import QueueShutDown, WorkQueue


def make_queue(clock: FakeClock, metrics: KubeMetrics | None = None) -> WorkQueue[str]:
    return WorkQueue(name="test", clock=clock, metrics=metrics)


async def test_adds_are_deduplicated_and_fifo(clock: FakeClock) -> None:
    queue = make_queue(clock)
    for key in ["a", "b", "a", "c", "b"]:
        queue.add(key)
    assert len(queue) == 3
    assert [await queue.get() for _ in range(3)] == ["a", "b", "c"]


async def test_key_added_while_processing_is_requeued_once_on_done(clock: FakeClock) -> None:
    queue = make_queue(clock)
    queue.add("a")
    key = await queue.get()
    for _ in range(100):
        queue.add("a")
    assert len(queue) == 0  # not handed to anyone else while processing
    queue.done(key)
    assert len(queue) == 1
    assert await queue.get() == "a"
    queue.done("a")
    assert len(queue) == 0


async def test_get_waits_for_an_add(clock: FakeClock) -> None:
    queue = make_queue(clock)
    getter = asyncio.create_task(queue.get())
    await settle()
    assert not getter.done()
    queue.add("x")
    assert await getter == "x"


async def test_add_after_uses_the_clock_and_keeps_the_earliest_time(clock: FakeClock) -> None:
    queue = make_queue(clock)
    queue.add_after("a", 10)
    queue.add_after("a", 5)
    queue.add_after("a", 20)
    await clock.advance(4.9)
    assert len(queue) == 0
    assert queue.waiting == 1
    await clock.advance(0.2)
    assert len(queue) == 1
    await clock.advance(20)
    assert len(queue) == 1  # the later entries were superseded


async def test_rate_limited_adds_back_off_exponentially_per_key(
    clock: FakeClock, registry: CollectorRegistry
) -> None:
    queue = WorkQueue[str](
        name="test",
        clock=clock,
        metrics=KubeMetrics(registry),
        backoff=ItemExponentialBackoff(base=1.0, cap=8.0),
        bucket=TokenBucket(qps=0, burst=1, clock=clock),
    )
    delays = []
    for _ in range(5):
        queue.add_rate_limited("a")
        start = clock.now()
        while len(queue) == 0:
            await clock.advance(0.25)
        delays.append(clock.now() - start)
        queue.done(await queue.get())
    assert delays == [pytest.approx(d, abs=0.3) for d in [1, 2, 4, 8, 8]]
    assert queue.num_requeues("a") == 5
    queue.forget("a")
    assert queue.num_requeues("a") == 0
    assert registry.get_sample_value("kueue_bridge_workqueue_retries_total", {"name": "test"}) == 5.0


async def test_overall_bucket_limits_rate_limited_adds(clock: FakeClock) -> None:
    queue = WorkQueue[str](
        name="test",
        clock=clock,
        backoff=ItemExponentialBackoff(base=0.0, cap=0.0),
        bucket=TokenBucket(qps=1, burst=2, clock=clock),
    )
    for key in "abcd":
        queue.add_rate_limited(key)
    await settle()
    assert len(queue) == 2
    await clock.advance(1.01)
    assert len(queue) == 3
    await clock.advance(1.0)
    assert len(queue) == 4


async def test_shutdown_wakes_getters_drops_queued_keys_and_waits_for_in_flight(clock: FakeClock) -> None:
    queue = make_queue(clock)
    queue.add("a")
    queue.add("b")
    in_flight = await queue.get()
    idle = asyncio.create_task(queue.wait_idle())
    queue.shut_down()
    with pytest.raises(QueueShutDown):
        await queue.get()
    queue.add("c")
    assert len(queue) == 0
    await settle()
    assert not idle.done()
    queue.done(in_flight)
    await idle


async def test_metrics_track_depth_and_latency(clock: FakeClock, registry: CollectorRegistry) -> None:
    queue = make_queue(clock, KubeMetrics(registry))
    queue.add("a")
    queue.add("b")
    assert registry.get_sample_value("kueue_bridge_workqueue_depth", {"name": "test"}) == 2.0
    await clock.advance(2.0)
    key = await queue.get()
    await clock.advance(1.0)
    queue.done(key)
    assert (
        registry.get_sample_value("kueue_bridge_workqueue_queue_duration_seconds_sum", {"name": "test"})
        == 2.0
    )
    assert (
        registry.get_sample_value("kueue_bridge_workqueue_work_duration_seconds_sum", {"name": "test"}) == 1.0
    )
    assert registry.get_sample_value("kueue_bridge_workqueue_adds_total", {"name": "test"}) == 2.0


async def test_higher_priorities_are_handed_out_first_fifo_within_each(clock: FakeClock) -> None:
    queue = make_queue(clock)
    for key in ["a", "b"]:
        queue.add(key)
    queue.add("u1", priority=1)
    queue.add("c")
    queue.add("top", priority=2)
    queue.add("u2", priority=1)
    assert len(queue) == 6
    assert [await queue.get() for _ in range(6)] == ["top", "u1", "u2", "a", "b", "c"]


async def test_a_queued_key_moves_up_never_down_and_is_still_deduplicated(clock: FakeClock) -> None:
    queue = make_queue(clock)
    for key in ["a", "b", "c"]:
        queue.add(key)
    queue.add("c", priority=1)
    queue.add("c", priority=1)
    queue.add("c")  # a later ordinary add does not move it down
    queue.add("b", priority=2)
    queue.add("b", priority=1)
    assert len(queue) == 3
    assert [await queue.get() for _ in range(3)] == ["b", "c", "a"]


async def test_a_priority_add_while_processing_requeues_the_key_in_that_lane(clock: FakeClock) -> None:
    queue = make_queue(clock)
    queue.add("a")
    key = await queue.get()
    queue.add("b")
    queue.add("a", priority=1)
    queue.done(key)
    assert [await queue.get(), await queue.get()] == ["a", "b"]
    queue.done("a")
    queue.done("b")
    queue.add("a")  # a priority does not stick to a key once it was handed out
    queue.add("c")
    queue.add("b", priority=1)
    assert [await queue.get() for _ in range(3)] == ["b", "a", "c"]


async def test_shut_down_drops_every_lane(clock: FakeClock) -> None:
    queue = make_queue(clock)
    queue.add("a", priority=1)
    queue.add("b")
    queue.shut_down()
    assert len(queue) == 0
    with pytest.raises(QueueShutDown):
        await queue.get()


async def test_a_retry_keeps_the_priority_the_key_was_handed_out_with(clock: FakeClock) -> None:
    queue = make_queue(clock)
    queue.add("start", priority=2)
    key = await queue.get()
    queue.add_rate_limited(key)  # the reconcile hit a conflict
    queue.done(key)
    for name in ["a", "b", "c"]:
        queue.add(name)
    await clock.advance(1)
    assert queue.waiting == 0
    assert [await queue.get() for _ in range(4)] == ["start", "a", "b", "c"]
    for name in ["start", "a", "b", "c"]:
        queue.done(name)
    queue.add_after("later", 5)  # not being processed: ordinary unless told
    queue.add_after("told", 5, priority=1)
    queue.add("x")
    await clock.advance(6)
    assert [await queue.get() for _ in range(3)] == ["told", "x", "later"]


async def test_the_length_follows_every_lane_change(clock: FakeClock, registry: CollectorRegistry) -> None:
    metrics = KubeMetrics(registry)
    queue = make_queue(clock, metrics)

    def depth() -> float | None:
        return registry.get_sample_value("kueue_bridge_workqueue_depth", {"name": "test"})

    queue.add("a")
    queue.add("b", priority=1)
    queue.add("a", priority=2)  # moved up: still one entry
    queue.add("c", priority=1)
    assert len(queue) == 3 and depth() == 3
    assert await queue.get() == "a"
    assert len(queue) == 2 and depth() == 2
    queue.add("a")  # being processed: only marked dirty
    assert len(queue) == 2
    queue.done("a")  # re-queued once
    assert len(queue) == 3 and depth() == 3
    assert [await queue.get() for _ in range(3)] == ["b", "c", "a"]
    assert len(queue) == 0 and depth() == 0
    queue.add("d")
    queue.shut_down()
    assert len(queue) == 0 and depth() == 0


async def test_a_moved_key_is_handed_out_once_and_its_later_add_keeps_its_new_place(clock: FakeClock) -> None:
    queue = make_queue(clock)
    for key in ("a", "b", "c"):
        queue.add(key)
    queue.add("b", priority=2)  # moved up: its lane-0 entry is superseded, not removed
    assert len(queue) == 3
    assert await queue.get() == "b"
    queue.done("b")
    queue.add("d")
    queue.add("b")  # queued again in lane 0, behind d: not at the superseded entry's place
    assert len(queue) == 4
    assert [await queue.get() for _ in range(4)] == ["a", "c", "d", "b"]
    assert len(queue) == 0
    for key in ("a", "c", "d", "b"):
        queue.done(key)
    queue.add("e")
    assert await queue.get() == "e"  # nothing superseded is ever handed out
