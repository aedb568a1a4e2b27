"""``shared.kube.conditions``: ``meta.SetStatusCondition`` on wire dicts, the one implementation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from shared.kube.conditions import (
    conditions_of,
    find_condition,
    is_condition_true,
    remove_condition,
    set_condition,
    writable_conditions,
)

NOW = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
LATER = NOW + timedelta(minutes=5)


def test_a_new_condition_is_appended_with_now_and_without_a_zero_generation() -> None:
    conditions: list[dict[str, Any]] = [{"type": "Other", "status": "True"}]
    assert set_condition(conditions, condition_type="Ready", status="True", reason="Up", now=NOW)
    assert conditions[1] == {
        "type": "Ready",
        "status": "True",
        "lastTransitionTime": "2026-03-01T12:00:00Z",
        "reason": "Up",
        "message": "",
    }
    assert list(conditions[1]) == ["type", "status", "lastTransitionTime", "reason", "message"]


def test_an_explicit_transition_time_is_kept_on_add_and_on_flip() -> None:
    conditions: list[dict[str, Any]] = []
    stamp = "2020-01-01T00:00:00Z"
    set_condition(
        conditions, condition_type="A", status="True", reason="r", last_transition_time=stamp, now=NOW
    )
    assert conditions[0]["lastTransitionTime"] == stamp
    set_condition(
        conditions, condition_type="A", status="False", reason="r", last_transition_time=stamp, now=NOW
    )
    assert conditions[0]["lastTransitionTime"] == stamp


def test_the_transition_time_moves_only_when_the_status_changes() -> None:
    conditions: list[dict[str, Any]] = []
    set_condition(conditions, condition_type="A", status="True", reason="r", message="m", now=NOW)
    assert set_condition(conditions, condition_type="A", status="True", reason="s", message="n", now=LATER)
    assert conditions[0]["lastTransitionTime"] == "2026-03-01T12:00:00Z"
    assert (conditions[0]["reason"], conditions[0]["message"]) == ("s", "n")
    assert set_condition(conditions, condition_type="A", status="False", reason="s", message="n", now=LATER)
    assert conditions[0]["lastTransitionTime"] == "2026-03-01T12:05:00Z"
    assert len(conditions) == 1


def test_setting_the_same_condition_again_is_no_change() -> None:
    conditions: list[dict[str, Any]] = []
    set_condition(conditions, condition_type="A", status="True", reason="r", observed_generation=2, now=NOW)
    before = [dict(c) for c in conditions]
    assert not set_condition(
        conditions, condition_type="A", status="True", reason="r", observed_generation=2, now=LATER
    )
    assert conditions == before


def test_observed_generation_alone_is_a_change_and_zero_is_omitted() -> None:
    conditions: list[dict[str, Any]] = []
    set_condition(conditions, condition_type="A", status="True", reason="r", observed_generation=2, now=NOW)
    assert conditions[0]["observedGeneration"] == 2
    assert list(conditions[0])[:3] == ["type", "status", "observedGeneration"]
    assert set_condition(
        conditions, condition_type="A", status="True", reason="r", observed_generation=3, now=NOW
    )
    assert conditions[0]["observedGeneration"] == 3
    assert set_condition(conditions, condition_type="A", status="True", reason="r", now=NOW)
    assert "observedGeneration" not in conditions[0]  # Go's zero value, omitempty


def test_reading_is_lenient_and_writing_creates_the_list() -> None:
    odd: dict[str, Any] = {"status": {"conditions": "not a list"}}
    assert conditions_of(odd) == ()
    assert conditions_of(None) == ()
    assert find_condition([1, None, {"type": "A", "status": "True"}], "A") == {"type": "A", "status": "True"}
    assert not is_condition_true([{"type": "A", "status": "False"}], "A")
    obj: dict[str, Any] = {}
    conditions = writable_conditions(obj)
    set_condition(conditions, condition_type="A", status="True", reason="r", now=NOW)
    assert is_condition_true(conditions_of(obj), "A")
    assert remove_condition(conditions, "A")
    assert not remove_condition(conditions, "A")
    assert obj == {"status": {"conditions": []}}
