from __future__ import annotations

import copy
from typing import Any

import pytest

from shared.merge_patch import apply_merge_patch, create_merge_patch, with_optimistic_lock

JOB: dict[str, Any] = {
    "metadata": {"name": "sample", "labels": {"a": "1", "b": "2"}, "resourceVersion": "7"},
    "spec": {
        "suspend": True,
        "template": {"spec": {"nodeSelector": {"zone": "a"}, "tolerations": [{"key": "x"}]}},
    },
}


@pytest.mark.parametrize(
    ("mutate", "expected_patch"),
    [
        (lambda o: o["spec"].__setitem__("suspend", False), {"spec": {"suspend": False}}),
        (lambda o: o["metadata"]["labels"].pop("b"), {"metadata": {"labels": {"b": None}}}),
        (
            lambda o: o["spec"]["template"]["spec"]["nodeSelector"].__setitem__("it", "spot"),
            {"spec": {"template": {"spec": {"nodeSelector": {"it": "spot"}}}}},
        ),
        (
            lambda o: o["spec"]["template"]["spec"]["tolerations"].append({"key": "y"}),
            {"spec": {"template": {"spec": {"tolerations": [{"key": "x"}, {"key": "y"}]}}}},
        ),
        (lambda o: None, {}),
    ],
)
def test_minimal_patch_round_trips(mutate: Any, expected_patch: dict[str, Any]) -> None:
    after = copy.deepcopy(JOB)
    mutate(after)
    patch = create_merge_patch(JOB, after)
    assert patch == expected_patch
    assert apply_merge_patch(JOB, patch) == after


def test_type_change_is_sent_whole() -> None:
    assert create_merge_patch({"a": 1}, {"a": "1"}) == {"a": "1"}
    assert create_merge_patch({"a": {"b": 1}}, {"a": [1]}) == {"a": [1]}


def test_optimistic_lock_adds_resource_version_without_touching_input() -> None:
    patch = {"spec": {"suspend": False}}
    locked = with_optimistic_lock(patch, resource_version="42")
    assert locked == {"spec": {"suspend": False}, "metadata": {"resourceVersion": "42"}}
    assert patch == {"spec": {"suspend": False}}
