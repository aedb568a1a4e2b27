from __future__ import annotations

import argparse
import asyncio
import math
from typing import Any

import pytest

from bench import scale
from bench.harness.metrics import buckets, histogram_quantile
from bench.harness.real_cluster import JobsWhere, Timeline
from bench.scale import Progress, SetupResult, checkpoints_for, deadline_for, quantile
from devcluster.standin import JOBS


def test_checkpoints_are_the_issues_for_ten_thousand_and_the_same_fractions_below() -> None:
    assert checkpoints_for(10_000) == [1_000, 2_500, 5_000, 10_000]
    assert checkpoints_for(500) == [50, 125, 250, 500]


def test_quantile_is_the_nearest_rank_and_nan_when_empty() -> None:
    values = [float(n) for n in range(1, 101)]
    assert quantile(values, 0.5) == 50.0
    assert quantile(values, 0.99) == 99.0
    assert quantile([3.0], 0.99) == 3.0
    assert math.isnan(quantile([], 0.5))


def test_histogram_quantile_counts_only_the_calls_between_two_readings() -> None:
    before = {0.1: 10.0, 0.5: 10.0, 1.0: 10.0, math.inf: 10.0}
    after = {0.1: 10.0, 0.5: 110.0, 1.0: 110.0, math.inf: 110.0}  # 100 new calls, all in (0.1, 0.5]
    assert math.isclose(histogram_quantile(after, before, 0.5), 0.3)
    assert math.isclose(histogram_quantile(after, before, 0.99), 0.496)
    assert math.isnan(histogram_quantile(before, before, 0.99))


def test_histogram_quantile_in_the_open_bucket_is_the_highest_finite_bound() -> None:
    after = {0.1: 0.0, 1.0: 1.0, math.inf: 10.0}
    assert histogram_quantile(after, {}, 0.99) == 1.0


def test_buckets_of_scraped_samples_sum_over_matching_label_sets() -> None:
    name = "kueue_bridge_webhook_request_duration_seconds"
    samples = {
        (f"{name}_bucket", (("le", "0.1"), ("webhook", "mutate"))): 3.0,
        (f"{name}_bucket", (("le", "0.1"), ("webhook", "validate"))): 2.0,
        (f"{name}_bucket", (("le", "+Inf"), ("webhook", "mutate"))): 4.0,
        (f"{name}_count", (("webhook", "mutate"),)): 4.0,
    }
    assert buckets(samples, name) == {0.1: 5.0, math.inf: 4.0}
    assert buckets(samples, name, webhook="mutate") == {0.1: 3.0, math.inf: 4.0}


def test_the_default_deadline_is_the_creates_every_life_at_the_floor_rate_idle_and_ten_minutes() -> None:
    assert deadline_for(jobs=10_000, rate=50.0, idle_seconds=60.0) == 200.0 + 2_000.0 + 60.0 + 600.0
    assert deadline_for(jobs=2_000, rate=50.0, idle_seconds=10.0) == 40.0 + 400.0 + 10.0 + 600.0


def test_progress_names_the_stage_and_every_count_reached() -> None:
    progress = Progress(2_000, stage="creating Jobs")
    progress.created[0] = 1_234
    timeline = progress.timeline
    timeline.workload_seen.update({"a": 1.0, "b": 1.0, "c": 1.0})
    timeline.admitted.update({"a": 2.0, "b": 2.0})
    timeline.unsuspended["a"] = 3.0
    line = progress.line()
    assert line.endswith(
        "creating Jobs: 1,234/2,000 created, 3 with a Workload, 2 admitted, 1 unsuspended, 0 finished and released"
    )


async def test_a_setup_past_its_deadline_fails_naming_what_it_reached(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async def stuck(args: argparse.Namespace, *, setup: str, progress: Progress) -> SetupResult:
        progress.stage = "finishing Jobs"
        progress.created[0] = 7
        await asyncio.Event().wait()
        raise AssertionError("never reached")

    monkeypatch.setattr(scale, "_run_setup", stuck)
    args = argparse.Namespace(jobs=7, rate=50.0, idle_seconds=0.0, deadline=0.05, progress_seconds=60.0)
    with pytest.raises(RuntimeError) as failed:
        await scale.run_setup(args, setup="kueue-bridge")
    text = str(failed.value)
    assert text.startswith("kueue-bridge: not done within the deadline of 0 s (--deadline): ")
    assert "finishing Jobs: 7/7 created, 0 with a Workload" in text


async def test_the_finishers_two_runners_see_the_running_and_the_queued_jobs_in_watched_order() -> None:
    class Listed:
        async def list(self, resource: Any, *, keep: Any = None) -> list[dict[str, Any]]:
            objects: list[dict[str, Any]] = [
                {"metadata": {"name": "queued-1"}, "spec": {"suspend": True}},
                {"metadata": {"name": "running-1"}, "spec": {"suspend": False}},
                {"metadata": {"name": "queued-2"}, "spec": {"suspend": True}},
                {"metadata": {"name": "running-2"}, "spec": {}},
                {"metadata": {"name": "finished"}, "spec": {}, "status": {"done": True}},
            ]
            return [obj for obj in objects if keep is None or keep(obj)]  # as WatchedObjects: before copying

    def unfinished(job: dict[str, Any]) -> bool:
        return "status" not in job

    running = await JobsWhere(Listed(), running=True).list(JOBS, keep=unfinished)  # type: ignore[arg-type]
    queued = await JobsWhere(Listed(), running=False).list(JOBS)  # type: ignore[arg-type]
    assert [job["metadata"]["name"] for job in running] == ["running-1", "running-2"]
    assert [job["metadata"]["name"] for job in queued] == ["queued-1", "queued-2"]


def _workload(owner: str, *conditions: tuple[str, str]) -> dict[str, Any]:
    return {
        "metadata": {"name": f"job-{owner}", "ownerReferences": [{"kind": "Job", "name": owner}]},
        "status": {"conditions": [{"type": kind, "status": status} for kind, status in conditions]},
    }


def test_the_timeline_tells_the_jobs_admitted_before_their_wait_for_start() -> None:
    timeline = Timeline(None)
    timeline.saw_workload(_workload("early"))
    timeline.saw_workload(_workload("early", ("PodsReady", "False")))
    timeline.saw_workload(_workload("early", ("PodsReady", "False"), ("Admitted", "True")))
    timeline.saw_workload(_workload("late"))
    timeline.saw_workload(_workload("late", ("Admitted", "True")))
    timeline.saw_workload(_workload("late", ("Admitted", "True"), ("PodsReady", "False")))
    assert set(timeline.admitted) == {"early", "late"}
    assert timeline.admitted_before_pods_ready == {"late"}


def test_our_writes_are_the_calls_mean_and_p99_between_two_scrapes() -> None:
    def scraped(
        count: float, seconds: float, fast: float
    ) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
        labels = (("resource", "jobs.batch"), ("verb", "patch"))
        return {
            (f"{scale.CLIENT_DURATION}_count", labels): count,
            (f"{scale.CLIENT_DURATION}_sum", labels): seconds,
            (f"{scale.CLIENT_DURATION}_bucket", (("le", "0.25"), *labels)): fast,
            (f"{scale.CLIENT_DURATION}_bucket", (("le", "1.0"), *labels)): count,
            (f"{scale.CLIENT_DURATION}_bucket", (("le", "+Inf"), *labels)): count,
        }

    writes = scale._our_writes(scraped(110, 32.0, 10), scraped(10, 2.0, 10))
    assert list(writes) == ["jobs.batch patch"]
    calls, mean_ms, p99_ms = writes["jobs.batch patch"]
    assert calls == 100
    assert mean_ms == pytest.approx(300.0)
    assert 250.0 < p99_ms <= 1000.0
