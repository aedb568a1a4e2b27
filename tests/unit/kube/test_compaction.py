from __future__ import annotations

import copy
from typing import Any

import orjson

from shared.kube.compaction import SharedParts


def job(name: str, uid: str) -> dict[str, Any]:
    labels = {"batch.kubernetes.io/controller-uid": uid, "job-name": name}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": "team-a",
            "uid": uid,
            "labels": {"kueue.x-k8s.io/queue-name": "main"},
            "managedFields": [{"manager": "kubectl", "operation": "Update"}],
        },
        "spec": {
            "suspend": True,
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "10m"}}}
                    ],
                },
            },
        },
    }


def fresh(obj: dict[str, Any]) -> dict[str, Any]:
    """As a watch hands it over: decoded from JSON, nothing shared with anything."""
    decoded: dict[str, Any] = orjson.loads(orjson.dumps(obj))
    return decoded


def test_equal_parts_of_two_objects_become_one_object_and_values_do_not_change() -> None:
    shared = SharedParts()
    first = shared(fresh(job("a", "uid-a")))
    second = shared(fresh(job("b", "uid-b")))
    assert first["spec"]["template"]["spec"] is second["spec"]["template"]["spec"]
    assert first["metadata"]["labels"] is second["metadata"]["labels"]
    # the parts that differ stay each object's own, with their own values
    assert first["spec"]["selector"] is not second["spec"]["selector"]
    expected_first, expected_second = job("a", "uid-a"), job("b", "uid-b")
    for expected in (expected_first, expected_second):
        del expected["metadata"]["managedFields"]
    assert first == expected_first
    assert second == expected_second


def test_serialised_bytes_are_those_of_the_object_without_managed_fields() -> None:
    shared = SharedParts()
    shared(fresh(job("a", "uid-a")))
    original = job("b", "uid-b")
    kept = shared(fresh(original))
    del original["metadata"]["managedFields"]
    assert orjson.dumps(kept) == orjson.dumps(original)


def test_parts_equal_in_content_but_not_in_key_order_are_not_shared() -> None:
    shared = SharedParts()
    first = shared({"spec": {"a": {"x": "1", "y": "2"}}})
    second = shared({"spec": {"a": {"y": "2", "x": "1"}}})
    assert first["spec"]["a"] == second["spec"]["a"]
    assert first["spec"]["a"] is not second["spec"]["a"]
    assert list(second["spec"]["a"]) == ["y", "x"]


def test_repeated_strings_are_one_object() -> None:
    shared = SharedParts()
    first = shared(fresh(job("a", "uid-a")))
    uid = first["metadata"]["uid"]
    assert first["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"] is uid
    assert first["spec"]["template"]["metadata"]["labels"]["batch.kubernetes.io/controller-uid"] is uid


def test_the_table_of_parts_stays_within_its_capacity() -> None:
    shared = SharedParts(capacity=16)
    for n in range(200):
        shared(fresh(job(f"job-{n}", f"uid-{n}")))
    assert len(shared) <= 16
    # the part every object repeats is used most recently, so it stays shared
    a, b = shared(fresh(job("x", "uid-x"))), shared(fresh(job("y", "uid-y")))
    assert a["spec"]["template"]["spec"] is b["spec"]["template"]["spec"]


def test_metadata_and_the_object_itself_are_never_shared_whole() -> None:
    shared = SharedParts()
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "n", "namespace": "d"}}
    first, second = shared(fresh(body)), shared(fresh(body))
    assert first is not second
    assert first["metadata"] is not second["metadata"]
    assert first == second == body


def test_values_that_are_not_json_are_kept_as_they_are() -> None:
    shared = SharedParts()
    odd = {"spec": {"when": {1, 2}}, "status": {"items": [object]}}
    kept = shared(copy.copy(odd))
    assert kept["spec"]["when"] == {1, 2}
    assert kept["status"]["items"] == [object]
