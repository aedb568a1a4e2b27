"""``python -m bench.reconciler_cpu --real`` reads our webhook's own answer time from two scrapes of its histogram."""

from __future__ import annotations

from bench.reconciler_cpu_real import webhook_answer_times

_NAME = "kueue_bridge_webhook_request_duration_seconds"


def _series(hook: str, result: str) -> tuple[tuple[str, str], ...]:
    return (("framework", "batch/job"), ("operation", "CREATE"), ("result", result), ("webhook", hook))


def test_mean_answer_time_per_webhook_is_the_difference_of_the_two_scrapes() -> None:
    before = {
        (f"{_NAME}_count", _series("mutate", "patched")): 10.0,
        (f"{_NAME}_sum", _series("mutate", "patched")): 0.010,
        (f"{_NAME}_count", _series("validate", "allowed")): 4.0,
        (f"{_NAME}_sum", _series("validate", "allowed")): 0.004,
    }
    after = {
        (f"{_NAME}_count", _series("mutate", "patched")): 40.0,
        (f"{_NAME}_sum", _series("mutate", "patched")): 0.040,
        (f"{_NAME}_count", _series("mutate", "denied")): 10.0,
        (f"{_NAME}_sum", _series("mutate", "denied")): 0.020,
        (f"{_NAME}_count", _series("validate", "allowed")): 4.0,
        (f"{_NAME}_sum", _series("validate", "allowed")): 0.004,
    }
    calls, millis = webhook_answer_times(after, before)["mutate"]
    assert calls == 40.0
    assert abs(millis - 1.25) < 1e-9  # (0.030 + 0.020) s over 40 calls
    assert "validate" not in webhook_answer_times(after, before)  # no call between the scrapes
