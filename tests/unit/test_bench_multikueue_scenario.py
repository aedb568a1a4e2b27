"""The pure parts of ``bench.multikueue_dispatch --real --scenario steady-burst``: its phases, the burst
throughput and the PASS/MISS of its targets."""

from __future__ import annotations

import argparse

import pytest

from bench.multikueue_measure import dispatch_rate
from bench.multikueue_real import Phase, phases, verdicts

GB = 2**30


def _args(**overrides: object) -> argparse.Namespace:
    values: dict[str, object] = {
        "scenario": "round",
        "jobs": 600,
        "rate": 0.5,
        "steady_jobs": 60,
        "steady_rate": 2.0,
    }
    values.update(overrides)
    return argparse.Namespace(**values)


def test_a_round_is_one_phase_with_the_chaos_options() -> None:
    assert phases(_args()) == [Phase("", "bench", 600, 0.5, chaos=True)]


def test_steady_burst_is_a_steady_phase_without_chaos_then_a_burst_with_it_each_in_its_namespace() -> None:
    steady, burst = phases(_args(scenario="steady-burst"))
    assert steady == Phase("steady", "bench-steady", 60, 2.0, chaos=False)
    assert burst == Phase("burst", "bench-burst", 600, 0.0, chaos=True)


def test_dispatch_rate_spans_the_first_creation_to_the_last_dispatch() -> None:
    assert dispatch_rate([10.5, 12.0, 20.0], since=10.0) == pytest.approx(0.3)
    assert dispatch_rate([], since=10.0) == 0.0
    assert dispatch_rate([9.0], since=10.0) == 0.0


def test_dispatch_rate_of_a_fraction_leaves_out_the_last_jobs() -> None:
    dispatched = [10.0 + n for n in range(1, 20)] + [100.0]  # 20 jobs, the last one very late
    assert dispatch_rate(dispatched, since=10.0, fraction=0.95) == pytest.approx(19 / 19)
    assert dispatch_rate(dispatched, since=10.0) == pytest.approx(20 / 90)


def _round(steady_ms: list[float], burst_rate: float) -> dict[str, dict[str, list[float]]]:
    return {"steady": {"dispatch": [ms / 1000 for ms in steady_ms]}, "burst": {"rate": [burst_rate]}}


def _verdicts(
    samples: dict[str, list[dict[str, dict[str, list[float]]]]],
    rss: dict[str, list[int]] | None = None,
    checks: dict[str, list[bool]] | None = None,
) -> list[str]:
    return verdicts(
        samples,
        rss or {anchor: [2 * GB] for anchor in samples},
        checks or {anchor: [True] for anchor in samples},
        p99_target=0.5,
        ratio_target=3.0,
        rss_limit=int(2.5 * GB),
    )


def test_every_target_met_is_a_pass_with_the_medians_shown() -> None:
    lines = _verdicts(
        {
            "bridge": [
                _round([100.0] * 49 + [400.0], 30.0),
                _round([100.0] * 49 + [600.0], 40.0),
                _round([100.0] * 49 + [450.0], 35.0),
            ],
            "kueue": [_round([800.0], 10.0), _round([900.0], 12.0), _round([700.0], 11.0)],
        },
        rss={"bridge": [2 * GB, 2 * GB], "kueue": [int(2.4 * GB)]},
        checks={"bridge": [True, True, True], "kueue": [True, True, True]},
    )
    steady, burst, memory, checks = lines[1:]
    assert "bridge 100 ms/450 ms, kueue 800 ms/800 ms" in steady and steady.endswith("PASS")
    assert "bridge 35.0 jobs/s, kueue 11.0 jobs/s" in burst and "3.2x" in burst and burst.endswith("PASS")
    assert "bridge 2048 MB, kueue 2458 MB" in memory and memory.endswith("PASS")
    assert "6 of 6 rounds passed" in checks and checks.endswith("PASS")


def test_a_missed_target_is_a_miss() -> None:
    lines = _verdicts(
        {"bridge": [_round([600.0], 20.0)], "kueue": [_round([100.0], 10.0)]},
        rss={"bridge": [3 * GB], "kueue": [GB]},
        checks={"bridge": [False], "kueue": [True]},
    )
    assert all(line.endswith("MISS") for line in lines[1:]), lines
    assert "2.0x" in lines[2]


def test_a_figure_no_round_produced_is_a_miss_not_a_pass() -> None:
    lines = _verdicts({"bridge": [_round([100.0], 30.0)], "kueue": [{}]})
    assert "kueue n/a/n/a" in lines[1]
    assert "kueue n/a" in lines[2] and "n/a, MISS" in lines[2]
    lines = _verdicts({"bridge": [{}]}, rss={"bridge": [0]}, checks={"bridge": []})
    assert all(line.endswith("MISS") for line in lines[1:]), lines
