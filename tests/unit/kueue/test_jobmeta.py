"""Job metadata accessors with Kueue's rules, on raw (and malformed) job dicts."""

from __future__ import annotations

from typing import Any

import pytest

from shared.kueue.jobmeta import (
    annotation_value,
    annotations_of,
    controller_owner_ref,
    is_valid_job_uid_label,
    label_value,
    labels_of,
    labels_to_copy,
    max_exec_time_seconds,
    parse_go_int,
    prebuilt_workload_name,
    provreq_annotations,
    queue_name,
    set_prebuilt_workload_name,
    workload_priority_class_name,
)

PREBUILT = "kueue.x-k8s.io/prebuilt-workload-name"


def job(labels: dict[str, Any] | None = None, annotations: dict[str, Any] | None = None, **meta: Any) -> dict:
    metadata: dict[str, Any] = {"name": "j", "namespace": "ns", **meta}
    if labels is not None:
        metadata["labels"] = labels
    if annotations is not None:
        metadata["annotations"] = annotations
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata}


def test_queue_name_is_read_from_the_label_only() -> None:
    assert queue_name(job({"kueue.x-k8s.io/queue-name": "q"})) == "q"
    assert queue_name(job(annotations={"kueue.x-k8s.io/queue-name": "q"})) == ""
    assert queue_name(job()) == ""


@pytest.mark.parametrize(
    "broken",
    [
        {},
        {"metadata": None},
        {"metadata": []},
        {"metadata": {"labels": ["x"]}},
        {"metadata": {"labels": {"a": 1}}},
    ],
)
def test_malformed_metadata_reads_as_unset(broken: dict) -> None:
    assert queue_name(broken) == ""
    assert prebuilt_workload_name(broken) == ""
    assert max_exec_time_seconds(broken) is None
    assert controller_owner_ref(broken) is None
    assert provreq_annotations(broken) == {}


@pytest.mark.parametrize(
    "obj",
    [
        {},
        {"metadata": None},
        {"metadata": {"labels": ["x"], "annotations": "x"}},
        job({"a": "1", "b": 2, "": "empty key"}, {"a": "x", "c": None}),
        job({}, {}),
    ],
)
@pytest.mark.parametrize("key", ["a", "b", "c", "", "missing"])
def test_one_label_or_annotation_reads_as_the_copied_map_does(obj: dict, key: str) -> None:
    assert label_value(obj, key) == labels_of(obj).get(key)
    assert annotation_value(obj, key) == annotations_of(obj).get(key)


def test_non_string_label_value_is_ignored() -> None:
    assert queue_name(job({"kueue.x-k8s.io/queue-name": 5})) == ""


def test_prebuilt_annotation_wins_over_label_with_workload_identifier_annotations() -> None:
    both = job({PREBUILT: "from-label"}, {PREBUILT: "from-annotation"})
    assert prebuilt_workload_name(both) == "from-annotation"
    assert prebuilt_workload_name(job({PREBUILT: "from-label"})) == "from-label"
    assert prebuilt_workload_name(job(annotations={PREBUILT: ""}, labels={PREBUILT: "l"})) == "l"


def test_prebuilt_label_wins_with_the_gate_off_and_annotation_counts_only_when_too_long() -> None:
    both = job({PREBUILT: "from-label"}, {PREBUILT: "from-annotation"})
    assert prebuilt_workload_name(both, workload_identifier_annotations=False) == "from-label"
    assert (
        prebuilt_workload_name(job(annotations={PREBUILT: "short"}), workload_identifier_annotations=False)
        == ""
    )
    long_name = "w" * 64
    only_annotation = job(annotations={PREBUILT: long_name})
    assert prebuilt_workload_name(only_annotation, workload_identifier_annotations=False) == long_name


def test_set_prebuilt_workload_name_uses_annotation_with_gate_or_long_name() -> None:
    target = job()
    set_prebuilt_workload_name(target, "wl")
    assert target["metadata"]["annotations"] == {PREBUILT: "wl"}
    target = job()
    set_prebuilt_workload_name(target, "wl", workload_identifier_annotations=False)
    assert target["metadata"]["labels"] == {PREBUILT: "wl"}
    target = job(labels={"a": "b"})
    set_prebuilt_workload_name(target, "w" * 64, workload_identifier_annotations=False)
    assert target["metadata"]["annotations"] == {PREBUILT: "w" * 64}
    assert prebuilt_workload_name(target, workload_identifier_annotations=False) == "w" * 64


def test_workload_priority_class_label() -> None:
    assert workload_priority_class_name(job({"kueue.x-k8s.io/priority-class": "high"})) == "high"
    assert workload_priority_class_name(job()) == ""


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("60", 60),
        ("+7", 7),
        ("2147483647", 2147483647),
        ("0", None),
        ("-5", None),
        ("2147483648", None),
        ("1.5", None),
        (" 60", None),
        ("6_0", None),
        ("٣", None),
        ("", None),
        ("abc", None),
    ],
)
def test_max_exec_time_label_invalid_or_non_positive_is_absent(raw: str, expected: int | None) -> None:
    assert max_exec_time_seconds(job({"kueue.x-k8s.io/max-exec-time-seconds": raw})) == expected


def test_max_exec_time_absent() -> None:
    assert max_exec_time_seconds(job()) is None


def test_parse_go_int_ranges() -> None:
    assert parse_go_int("-9223372036854775808") == -(2**63)
    assert parse_go_int("9223372036854775808") is None
    assert parse_go_int("-2147483649", bits=32) is None


def test_job_uid_label_validity() -> None:
    assert is_valid_job_uid_label("6b817d4a-659b-494a-b90b-4869cc58f3b7")
    assert not is_valid_job_uid_label("not/valid")
    assert not is_valid_job_uid_label("u" * 64)


def test_controller_owner_ref_picks_the_controller() -> None:
    refs = [
        {"apiVersion": "v1", "kind": "A", "name": "a", "uid": "1"},
        {"apiVersion": "v1", "kind": "B", "name": "b", "uid": "2", "controller": True},
    ]
    owner = controller_owner_ref(job(ownerReferences=refs))
    assert owner == refs[1]
    assert owner is not refs[1]
    assert controller_owner_ref(job(ownerReferences=refs[:1])) is None
    assert controller_owner_ref(job(ownerReferences=[{"controller": "true"}])) is None


def test_provreq_annotations_are_filtered_by_prefix() -> None:
    annotations = {
        "provreq.kueue.x-k8s.io/ValidUntilSeconds": "60",
        "provreq.kueue.x-k8s.io/maxRunDurationSeconds": "3600",
        "other.io/x": "y",
        "kueue.x-k8s.io/provreq": "no",
    }
    assert provreq_annotations(job(annotations=annotations)) == {
        "provreq.kueue.x-k8s.io/ValidUntilSeconds": "60",
        "provreq.kueue.x-k8s.io/maxRunDurationSeconds": "3600",
    }


def test_labels_to_copy_selects_existing_keys() -> None:
    source = job({"team": "ml", "cost-center": "42", "other": "x"})
    assert labels_to_copy(source, ["team", "cost-center", "missing"]) == {"team": "ml", "cost-center": "42"}
    assert labels_to_copy(source, []) == {}
