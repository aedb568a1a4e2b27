"""``metav1.Condition`` helpers with Kubernetes' SetStatusCondition semantics."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from shared.kube.times import format_time
from shared.models.condition import (
    Condition,
    find_condition,
    is_condition_false,
    is_condition_true,
    remove_condition,
    set_condition,
)

T0 = datetime(2026, 11, 22, 2, 34, 3, tzinfo=UTC)
T1 = T0 + timedelta(seconds=11)


def _quota_reserved(status: str, *, reason: str = "QuotaReserved", generation: int = 1) -> Condition:
    return Condition(
        type="QuotaReserved", status=status, reason=reason, message="m", observed_generation=generation
    )


def test_a_new_condition_gets_now_as_transition_time() -> None:
    conditions: list[Condition] = []
    assert set_condition(conditions, _quota_reserved("True"), now=T0) is True
    assert conditions == [
        Condition(
            type="QuotaReserved",
            status="True",
            reason="QuotaReserved",
            message="m",
            observed_generation=1,
            last_transition_time="2026-11-22T02:34:03Z",
        )
    ]


def test_a_new_condition_keeps_an_explicit_transition_time() -> None:
    conditions: list[Condition] = []
    explicit = _quota_reserved("True").model_copy(update={"last_transition_time": "2020-01-01T00:00:00Z"})
    set_condition(conditions, explicit, now=T0)
    assert conditions[0].last_transition_time == "2020-01-01T00:00:00Z"


def test_unchanged_status_keeps_the_transition_time_but_updates_the_rest() -> None:
    conditions: list[Condition] = []
    set_condition(conditions, _quota_reserved("True"), now=T0)
    changed = set_condition(
        conditions,
        _quota_reserved("True", reason="Other", generation=2).model_copy(update={"message": "n"}),
        now=T1,
    )
    assert changed is True
    [condition] = conditions
    assert condition.last_transition_time == format_time(T0)
    assert (condition.reason, condition.message, condition.observed_generation) == ("Other", "n", 2)


def test_observed_generation_alone_is_a_change() -> None:
    conditions: list[Condition] = []
    set_condition(conditions, _quota_reserved("True", generation=1), now=T0)
    assert set_condition(conditions, _quota_reserved("True", generation=2), now=T1) is True
    assert conditions[0].observed_generation == 2
    assert conditions[0].last_transition_time == format_time(T0)


def test_setting_the_same_condition_again_is_no_change() -> None:
    conditions: list[Condition] = []
    set_condition(conditions, _quota_reserved("True"), now=T0)
    before = [condition.model_copy() for condition in conditions]
    assert set_condition(conditions, _quota_reserved("True"), now=T1) is False
    assert conditions == before


def test_a_flipped_status_moves_the_transition_time() -> None:
    conditions: list[Condition] = []
    set_condition(conditions, _quota_reserved("True"), now=T0)
    assert set_condition(conditions, _quota_reserved("False", reason="Pending"), now=T1) is True
    assert conditions[0].last_transition_time == format_time(T1)
    assert conditions[0].status == "False"


def test_conditions_stay_a_map_by_type_in_insertion_order() -> None:
    conditions: list[Condition] = []
    set_condition(conditions, _quota_reserved("True"), now=T0)
    set_condition(conditions, Condition(type="Admitted", status="True", reason="Admitted"), now=T0)
    set_condition(conditions, _quota_reserved("False"), now=T1)
    assert [condition.type for condition in conditions] == ["QuotaReserved", "Admitted"]


def test_queries_and_removal() -> None:
    conditions: list[Condition] = []
    assert not is_condition_true(None, "Admitted")
    assert not is_condition_false(None, "Admitted")
    set_condition(conditions, Condition(type="Admitted", status="False", reason="NoReservation"), now=T0)
    assert is_condition_false(conditions, "Admitted")
    assert not is_condition_true(conditions, "Admitted")
    assert find_condition(conditions, "Finished") is None
    assert remove_condition(conditions, "Admitted") is True
    assert remove_condition(conditions, "Admitted") is False
    assert conditions == []


def test_format_time_is_rfc3339_utc_with_second_precision() -> None:
    plus_two = timezone(timedelta(hours=2))
    assert format_time(datetime(2026, 11, 22, 4, 34, 3, 999_999, tzinfo=plus_two)) == "2026-11-22T02:34:03Z"


def test_condition_wire_form_matches_kueue() -> None:
    wire = {
        "lastTransitionTime": "2026-11-22T02:34:03Z",
        "message": "The workload is admitted",
        "observedGeneration": 1,
        "reason": "Admitted",
        "status": "True",
        "type": "Admitted",
    }
    assert Condition.from_wire(wire).to_wire() == wire
