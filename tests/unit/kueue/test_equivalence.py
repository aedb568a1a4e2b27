"""Job <-> Workload equivalence with Kueue's rules (reference §2.3)."""

from __future__ import annotations

import copy
from decimal import Decimal
from typing import Any

import pytest

from shared.kueue.equivalence import (
    can_be_partially_admitted,
    compare_pod_set_slices,
    compare_pod_sets,
    equivalent_on_the_wire,
    equivalent_to_workload,
    expected_running_pod_sets,
    parse_quantity,
    sanitize_pod_sets,
    semantically_equal,
)
from shared.models.workload import PodSet, Workload
from tests.unit.kueue.helpers import batch_job_pod_sets

UID = "uid-1"
CONTAINER = {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1", "memory": "200Mi"}}}
SPOT = ({"instance-type": "spot"}, [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}])


def pod_set(*, count: int = 2, min_count: int | None = None, name: str = "main", **spec: Any) -> PodSet:
    template_spec = {"containers": [copy.deepcopy(CONTAINER)], **spec}
    return PodSet(name=name, count=count, min_count=min_count, template={"spec": template_spec})


def workload(
    pod_sets: list[PodSet],
    *,
    owner_name: str = "job",
    owner_uid: str = UID,
    conditions: tuple[str, ...] = (),
    assignments: list[dict[str, Any]] | None = None,
    max_exec: int | None = None,
    controller: bool = True,
) -> Workload:
    wire: dict[str, Any] = {
        "metadata": {
            "name": "wl",
            "ownerReferences": [
                {
                    "apiVersion": "batch/v1",
                    "kind": "Job",
                    "name": owner_name,
                    "uid": owner_uid,
                    "controller": controller,
                }
            ],
        },
        "spec": {"queueName": "lq", "podSets": [p.to_wire() for p in pod_sets]},
        "status": {"conditions": [{"type": c, "status": "True"} for c in conditions]},
    }
    if max_exec is not None:
        wire["spec"]["maximumExecutionTimeSeconds"] = max_exec
    if assignments is not None:
        wire["status"]["admission"] = {"clusterQueue": "cq", "podSetAssignments": assignments}
    return Workload.from_wire(wire)


def equivalent(job_pod_sets: list[PodSet], wl: Workload, **kwargs: Any) -> bool:
    """``equivalent_to_workload``, checked against ``equivalent_on_the_wire`` wherever that answers."""
    arguments: dict[str, Any] = {"job_name": "job", "job_uid": UID, "max_exec_seconds": None, **kwargs}
    answer = equivalent_to_workload(job_pod_sets=job_pod_sets, workload=wl, **arguments)
    wire_arguments = {
        key: value for key, value in arguments.items() if key not in ("flavors", "job_suspended")
    }
    on_the_wire = equivalent_on_the_wire(job_pod_sets=job_pod_sets, workload=wl.to_wire(), **wire_arguments)
    assert on_the_wire in (None, answer)
    return answer


# --- golden fixture ----------------------------------------------------------------------------------


@pytest.mark.needs_shared
def test_golden_running_job_is_equivalent_to_its_admitted_workload(
    golden: dict, golden_flavors: dict
) -> None:
    job = golden["job-admitted"]
    wl = Workload.from_wire(golden["workload-admitted"])
    assert equivalent_to_workload(
        job_pod_sets=batch_job_pod_sets(job),
        job_name=job["metadata"]["name"],
        job_uid=job["metadata"]["uid"],
        max_exec_seconds=None,
        workload=wl,
        flavors=golden_flavors,
    )
    running = expected_running_pod_sets(workload=wl, flavors=golden_flavors)
    assert running is not None
    assert running[0].template["spec"]["nodeSelector"] == job["spec"]["template"]["spec"]["nodeSelector"]


@pytest.mark.needs_shared
def test_golden_stopped_job_is_equivalent_to_its_deactivated_workload(golden: dict) -> None:
    job = golden["job-after-deactivation"]
    wl = Workload.from_wire(golden["workload-after-deactivation"])
    assert expected_running_pod_sets(workload=wl, flavors={}) is None
    assert equivalent_to_workload(
        job_pod_sets=batch_job_pod_sets(job),
        job_name="sample",
        job_uid=job["metadata"]["uid"],
        max_exec_seconds=None,
        workload=wl,
        job_suspended=True,
    )


@pytest.mark.needs_shared
def test_golden_job_with_changed_parallelism_is_not_equivalent(golden: dict, golden_flavors: dict) -> None:
    job = golden["job-admitted"]
    job["spec"]["parallelism"] = 3
    assert not equivalent_to_workload(
        job_pod_sets=batch_job_pod_sets(job),
        job_name="sample",
        job_uid=job["metadata"]["uid"],
        max_exec_seconds=None,
        workload=Workload.from_wire(golden["workload-admitted"]),
        flavors=golden_flavors,
    )


# --- owner and max-exec-time ----------------------------------------------------------------------------


def test_owner_name_and_uid_must_match() -> None:
    assert equivalent([pod_set()], workload([pod_set()]))
    assert not equivalent([pod_set()], workload([pod_set()], owner_name="other"))
    assert not equivalent([pod_set()], workload([pod_set()], owner_uid="uid-2"))
    assert equivalent([pod_set()], workload([pod_set()], owner_uid="uid-2"), finish_orphaned_workloads=False)


def test_workload_without_controller_owner_is_not_equivalent() -> None:
    assert not equivalent([pod_set()], workload([pod_set()], controller=False))


@pytest.mark.parametrize(
    ("workload_value", "job_value", "expected"),
    [(None, None, True), (60, 60, True), (60, None, False), (None, 60, False), (60, 61, False)],
)
def test_max_exec_time_must_match(workload_value: int | None, job_value: int | None, expected: bool) -> None:
    wl = workload([pod_set()], max_exec=workload_value)
    assert equivalent([pod_set()], wl, max_exec_seconds=job_value) is expected


# --- pod sets --------------------------------------------------------------------------------------------


def test_count_and_min_count_are_compared() -> None:
    assert not equivalent([pod_set(count=3)], workload([pod_set(count=2)]))
    assert not equivalent([pod_set(min_count=1)], workload([pod_set()]))
    assert compare_pod_sets(pod_set(min_count=None), pod_set(min_count=-1))


def test_min_count_is_cleared_without_partial_admission() -> None:
    assert equivalent([pod_set(min_count=1)], workload([pod_set()]), partial_admission=False)


def test_pod_sets_compare_by_position_and_length() -> None:
    driver = pod_set(name="driver", count=1)
    workers = pod_set(name="workers", count=4)
    assert equivalent([driver, workers], workload([driver, workers]))
    assert not equivalent([workers, driver], workload([driver, workers]))
    assert not equivalent([driver], workload([driver, workers]))


def test_names_labels_node_selectors_are_not_compared() -> None:
    job_side = pod_set(name="a", nodeSelector={"zone": "a"}, priorityClassName="high")
    job_side.template["metadata"] = {"labels": {"x": "y"}}
    assert equivalent([job_side], workload([pod_set(name="b")]))


def test_container_changes_are_detected() -> None:
    changed = pod_set()
    changed.template["spec"]["containers"][0]["image"] = "alpine"
    assert not equivalent([changed], workload([pod_set()]))
    init = pod_set(initContainers=[{"name": "init", "image": "busybox"}])
    assert not equivalent([init], workload([pod_set()]))


def test_resource_quantities_compare_by_value() -> None:
    millis = pod_set()
    millis.template["spec"]["containers"][0]["resources"]["requests"] = {
        "cpu": "1000m",
        "memory": "209715200",
    }
    assert equivalent([millis], workload([pod_set()]))
    more = pod_set()
    more.template["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1001m"
    assert not equivalent([more], workload([pod_set()]))


def test_tolerations_are_ignored_only_when_admitted() -> None:
    tolerating = pod_set(tolerations=[{"key": "a", "operator": "Exists"}])
    assert not equivalent([tolerating], workload([pod_set()]))
    assert equivalent([tolerating], workload([pod_set()], conditions=("Admitted",)))


def test_duplicate_env_vars_on_the_job_side_are_collapsed_keeping_the_last() -> None:
    job_side = pod_set()
    job_side.template["spec"]["containers"][0]["env"] = [
        {"name": "A", "value": "1"},
        {"name": "B", "value": "2"},
        {"name": "A", "value": "3"},
    ]
    wl_side = pod_set()
    wl_side.template["spec"]["containers"][0]["env"] = [
        {"name": "A", "value": "3"},
        {"name": "B", "value": "2"},
    ]
    assert equivalent([job_side], workload([wl_side]))
    assert job_side.template["spec"]["containers"][0]["env"][0] == {
        "name": "A",
        "value": "1",
    }  # input untouched


def test_sanitize_covers_init_containers_and_copies() -> None:
    original = pod_set(
        initContainers=[{"name": "i", "env": [{"name": "X", "value": "1"}, {"name": "X", "value": "2"}]}]
    )
    [sanitized] = sanitize_pod_sets([original])
    assert sanitized.template["spec"]["initContainers"][0]["env"] == [{"name": "X", "value": "2"}]
    assert len(original.template["spec"]["initContainers"][0]["env"]) == 2


# --- quota reserved: expected running pod sets --------------------------------------------------------------


def test_running_job_is_compared_with_admission_merged_in() -> None:
    wl = workload(
        [pod_set()],
        conditions=("QuotaReserved",),
        assignments=[{"name": "main", "flavors": {"cpu": "spot"}, "count": 2}],
    )
    running_job = pod_set(tolerations=SPOT[1])
    assert equivalent([running_job], wl, flavors={"spot": SPOT})
    # An unknown flavor makes Kueue fall back to the plain spec, which has no toleration.
    assert not equivalent([running_job], wl, flavors={})
    assert equivalent([pod_set()], wl, flavors={})


def test_partial_admission_uses_the_admitted_count_and_suspended_fallback() -> None:
    spec = pod_set(count=4, min_count=2)
    wl = workload(
        [spec],
        conditions=("QuotaReserved", "Admitted"),
        assignments=[{"name": "main", "flavors": {"cpu": "spot"}, "count": 3}],
    )
    assert can_be_partially_admitted(wl)
    running = expected_running_pod_sets(workload=wl, flavors={"spot": SPOT})
    assert running is not None
    assert running[0].count == 3
    assert equivalent([pod_set(count=3, min_count=2)], wl, flavors={"spot": SPOT})
    assert not equivalent([pod_set(count=4, min_count=2)], wl, flavors={"spot": SPOT})
    assert equivalent([pod_set(count=4, min_count=2)], wl, flavors={"spot": SPOT}, job_suspended=True)


def test_expected_running_pod_sets_none_without_reservation_or_matching_assignment() -> None:
    assert expected_running_pod_sets(workload=workload([pod_set()]), flavors={}) is None
    mismatched = workload(
        [pod_set()], conditions=("QuotaReserved",), assignments=[{"name": "other", "flavors": {}}]
    )
    assert expected_running_pod_sets(workload=mismatched, flavors={}) is None
    no_admission = workload([pod_set()], conditions=("QuotaReserved",))
    assert expected_running_pod_sets(workload=no_admission, flavors={}) is None


def test_expected_running_pod_sets_none_on_merge_conflict() -> None:
    wl = workload(
        [pod_set(nodeSelector={"instance-type": "on-demand"})],
        conditions=("QuotaReserved",),
        assignments=[{"name": "main", "flavors": {"cpu": "spot"}}],
    )
    assert expected_running_pod_sets(workload=wl, flavors={"spot": SPOT}) is None


def test_expected_running_pod_sets_does_not_modify_the_workload() -> None:
    wl = workload(
        [pod_set()], conditions=("QuotaReserved",), assignments=[{"name": "main", "flavors": {"cpu": "spot"}}]
    )
    before = wl.to_wire()
    assert expected_running_pod_sets(workload=wl, flavors={"spot": SPOT}) is not None
    assert wl.to_wire() == before


# --- semantic equality -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1", Decimal(1)),
        ("1000m", Decimal(1)),
        ("200Mi", Decimal(209715200)),
        ("1Ki", Decimal(1024)),
        ("1k", Decimal(1000)),
        ("1e3", Decimal(1000)),
        ("1E3", Decimal(1000)),
        ("1E", Decimal(10) ** 18),
        ("0.5Gi", Decimal(536870912)),
        (".5", Decimal("0.5")),
        ("-1", Decimal(-1)),
        ("100n", Decimal("0.0000001")),
        (2, Decimal(2)),
        ("abc", None),
        ("1 Gi", None),
        ("1Gb", None),
        (True, None),
        (None, None),
    ],
)
def test_parse_quantity(raw: object, expected: Decimal | None) -> None:
    assert parse_quantity(raw) == expected


def test_absent_null_and_empty_are_equal_but_false_is_not() -> None:
    assert semantically_equal({"a": 1}, {"a": 1, "b": None, "c": [], "d": {}, "e": ""})
    assert semantically_equal({"resources": {}}, {})
    assert semantically_equal({"resources": {"requests": {}}}, {"resources": {}})
    assert not semantically_equal({"stdin": False}, {})
    assert not semantically_equal([{}], [])


def test_quantities_only_compare_by_value_where_they_are_quantities() -> None:
    assert semantically_equal(
        {"resources": {"limits": {"cpu": "2"}}}, {"resources": {"limits": {"cpu": "2000m"}}}
    )
    assert semantically_equal(
        {"env": [{"valueFrom": {"resourceFieldRef": {"divisor": "1m"}}}]},
        {"env": [{"valueFrom": {"resourceFieldRef": {"divisor": "0.001"}}}]},
    )
    assert not semantically_equal({"args": ["1"]}, {"args": ["1000m"]})
    assert semantically_equal(
        {"resources": {"limits": {"x": "junk"}}}, {"resources": {"limits": {"x": "junk"}}}
    )
    assert not semantically_equal(
        {"resources": {"limits": {"x": "junk"}}}, {"resources": {"limits": {"x": "1"}}}
    )


def test_compare_pod_set_slices_empty() -> None:
    assert compare_pod_set_slices([], [])


# --- the same verdict read off the Workload's JSON ----------------------------------------------------


def on_the_wire(job_pod_sets: list[PodSet], wire: dict[str, Any]) -> bool | None:
    return equivalent_on_the_wire(
        job_pod_sets=job_pod_sets, job_name="job", job_uid=UID, max_exec_seconds=None, workload=wire
    )


def test_wire_answers_without_reservation_and_once_admitted() -> None:
    assert on_the_wire([pod_set()], workload([pod_set()]).to_wire()) is True
    assert on_the_wire([pod_set(count=3)], workload([pod_set()]).to_wire()) is False
    admitted = workload(
        [pod_set()],
        conditions=("QuotaReserved", "Admitted"),
        assignments=[{"name": "main", "flavors": {"cpu": "spot"}, "count": 2}],
    )
    # admitted: tolerations are not compared, so the running pod sets compare as the spec's
    assert on_the_wire([pod_set(tolerations=SPOT[1])], admitted.to_wire()) is True
    assert on_the_wire([pod_set(count=3)], admitted.to_wire()) is False


def test_wire_leaves_reserved_not_admitted_and_partial_admission_to_the_model() -> None:
    assignments = [{"name": "main", "flavors": {"cpu": "spot"}, "count": 2}]
    reserved = workload([pod_set()], conditions=("QuotaReserved",), assignments=assignments)
    assert on_the_wire([pod_set()], reserved.to_wire()) is None
    partial = workload(
        [pod_set(count=4, min_count=2)], conditions=("QuotaReserved", "Admitted"), assignments=assignments
    )
    assert on_the_wire([pod_set(count=4, min_count=2)], partial.to_wire()) is None
    # not reserved: no running pod sets, partial admission or not
    assert on_the_wire([pod_set(count=4, min_count=2)], workload([pod_set(count=4, min_count=2)]).to_wire())


@pytest.mark.parametrize(
    "change",
    [
        lambda wire: wire["spec"]["podSets"][0].update(count="2"),
        lambda wire: wire["spec"]["podSets"][0].update(minCount=True),
        lambda wire: wire["spec"]["podSets"][0].update(template=None),
        lambda wire: wire["spec"].update(podSets={"main": {}}),
        lambda wire: wire["spec"].update(maximumExecutionTimeSeconds="60"),
        lambda wire: wire["metadata"]["ownerReferences"][0].update(controller="true"),
        lambda wire: wire["metadata"]["ownerReferences"][0].pop("uid"),
        lambda wire: wire["metadata"].update(ownerReferences={"name": "job"}),
        lambda wire: wire.update(spec=[]),
    ],
)
def test_wire_leaves_what_the_model_would_read_differently_to_the_model(change: Any) -> None:
    wire = workload([pod_set()]).to_wire()
    change(wire)
    assert on_the_wire([pod_set()], wire) is None
