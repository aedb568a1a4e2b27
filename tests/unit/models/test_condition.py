"""The Workload model's typed ``metav1.Condition``: set with Kubernetes' SetStatusCondition semantics
(``shared.workload_state.set_workload_condition`` over ``shared.kube.conditions``) and read with
``shared.kube.conditions``' readers."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from shared.kube.conditions import find_condition_view, is_false, is_true
from shared.kube.times import format_time
from shared.models.condition import Condition
from shared.models.meta import ObjectMeta
from shared.models.workload import Workload, WorkloadSpec, WorkloadStatus
from shared.workload_state import set_workload_condition

T0 = datetime(2026, 11, 22, 2, 34, 3, tzinfo=UTC)
T1 = T0 + timedelta(seconds=11)


def _workload(conditions: list[Condition]) -> Workload:
    return Workload(
        metadata=ObjectMeta(name="w", namespace="ns"),
        spec=WorkloadSpec(queue_name="q", pod_sets=[]),
        status=WorkloadStatus(conditions=conditions),
    )


def set_condition(conditions: list[Condition], new: Condition, *, now: datetime) -> bool:
    """``set_workload_condition`` on a Workload holding ``conditions``; the list follows it."""
    workload = _workload(conditions)
    changed = set_workload_condition(workload, new, now=now)
    assert workload.status is not None and workload.status.conditions is not None
    conditions[:] = workload.status.conditions
    return changed


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


def test_a_condition_object_in_the_list_is_updated_in_place() -> None:
    conditions: list[Condition] = []
    set_condition(conditions, _quota_reserved("True"), now=T0)
    held = conditions[0]
    set_condition(conditions, _quota_reserved("False", reason="Pending"), now=T1)
    assert held is conditions[0] and held.status == "False"


def test_queries() -> None:
    conditions: list[Condition] = []
    assert not is_true(find_condition_view(None, "Admitted"))
    assert not is_false(find_condition_view(None, "Admitted"))
    set_condition(conditions, Condition(type="Admitted", status="False", reason="NoReservation"), now=T0)
    assert is_false(find_condition_view(conditions, "Admitted"))
    assert not is_true(find_condition_view(conditions, "Admitted"))
    assert find_condition_view(conditions, "Finished") is None


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
