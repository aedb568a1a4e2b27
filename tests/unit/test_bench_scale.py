from __future__ import annotations

import math

from bench.harness.metrics import buckets, histogram_quantile
from bench.scale import checkpoints_for, quantile


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
