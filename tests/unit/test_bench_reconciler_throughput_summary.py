"""``python -m bench.reconciler_throughput --rounds N`` summarises each target figure as median (min-max)."""

from __future__ import annotations

from bench.reconciler_throughput import RoundFigures, summary


def test_summary_reports_median_and_range_of_each_figure() -> None:
    rounds = [
        RoundFigures(ratio=0.61, flood_p99_ms=160, paced_p99_ms=13),
        RoundFigures(ratio=0.84, flood_p99_ms=182, paced_p99_ms=17),
        RoundFigures(ratio=0.63, flood_p99_ms=168, paced_p99_ms=15),
    ]
    assert summary(rounds) == [
        "over 3 rounds: ratio median 0.63x (0.61-0.84x) (target >= 0.8x)",
        "over 3 rounds: flood p99 median 168 ms (160-182 ms) (target <= 200 ms)",
        "over 3 rounds: paced p99 median 15 ms (13-17 ms) (target <= 200 ms)",
    ]


def test_floor_rounds_have_no_latency_lines() -> None:
    assert summary([RoundFigures(ratio=0.7), RoundFigures(ratio=0.9)]) == [
        "over 2 rounds: ratio median 0.80x (0.70-0.90x) (target >= 0.8x)"
    ]
