"""``loads_without_managed_fields``: the same object as parsing then stripping, whatever the line."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest

from shared.kube.informer import strip_managed_fields
from shared.kube.watch import loads_without_managed_fields

MANAGED = [
    {
        "manager": "kueue",
        "operation": "Apply",
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:status": {"f:conditions": {'k:{"type":"Admitted"}': {".": {}, "f:status": {}}}}},
        "subresource": "status",
    },
    {
        "manager": 'odd ] manager " [',
        "operation": "Update",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:args": {'v:["a]","b"]': {}}}},
    },
]


def workload(metadata: dict[str, Any], **rest: Any) -> dict[str, Any]:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload", "metadata": metadata, **rest}


def event(obj: dict[str, Any]) -> bytes:
    return orjson.dumps({"type": "MODIFIED", "object": obj})


def expected(line: bytes) -> Any:
    raw = orjson.loads(line)
    strip_managed_fields(raw["object"])
    return raw


LINES = {
    "as the API server orders it": event(
        workload(
            {"name": "w", "namespace": "ns", "finalizers": ["a"], "managedFields": MANAGED},
            spec={"queueName": "q"},
            status={"conditions": [{"type": "Admitted"}]},
        )
    ),
    "in the middle of metadata": event(
        workload({"name": "w", "managedFields": MANAGED, "labels": {"a": "b"}}, spec={"x": [1, 2]})
    ),
    "metadata last in the object": event(workload({"name": "w", "uid": "u", "managedFields": MANAGED})),
    "a spec field named managedFields, none in metadata": event(
        workload({"name": "w", "uid": "u"}, spec={"template": {"metadata": {"a": 1, "managedFields": [1]}}})
    ),
    "a nested one before metadata's": orjson.dumps(
        {
            "type": "MODIFIED",
            "object": {
                "kind": "Widget",
                "extra": {"metadata": {"n": 1, "managedFields": [2]}},
                "metadata": {"name": "w", "managedFields": MANAGED},
            },
        }
    ),
    "escaped backslashes in a key": event(
        workload({"name": "w", "managedFields": [{"fieldsV1": {"f:a\\]": {}}}], "labels": {"x": "y"}})
    ),
    "escapes the server writes differently": event(
        workload({"name": "w", "annotations": {"a": "<&>"}, "managedFields": MANAGED})
    ).replace(b"<&>", b"\\u003c\\u0026\\u003e"),
    "a key that would close the array and metadata": event(
        workload(
            {"name": "w", "managedFields": [{"manager": "m", "fieldsV1": {'v:}]},"x":{': {}}}]},
            spec={"a": 1},
        )
    ),
    "a manager name with }]} in it": event(
        workload({"name": "w", "managedFields": [{"manager": "m}]}", "operation": "Update"}, *MANAGED]})
    ),
    "only managedFields in metadata": event(workload({"managedFields": MANAGED})),
    "no managedFields": event(workload({"name": "w"})),
    "a bookmark": b'{"type":"BOOKMARK","object":{"kind":"Workload","metadata":{"resourceVersion":"7"}}}',
}


@pytest.mark.parametrize("line", LINES.values(), ids=LINES.keys())
def test_the_object_is_the_parsed_one_without_managed_fields(line: bytes) -> None:
    parsed = loads_without_managed_fields(line)
    wanted = expected(line)
    got = copy.deepcopy(parsed)
    strip_managed_fields(got["object"])  # a whole-line fallback still carries them: the caller strips
    assert got == wanted


def test_the_common_line_is_cut_before_parsing() -> None:
    parsed = loads_without_managed_fields(LINES["as the API server orders it"])
    assert "managedFields" not in parsed["object"]["metadata"]
    assert parsed["object"]["metadata"]["finalizers"] == ["a"]


@pytest.mark.parametrize(
    "line",
    [
        b'{"type":"MODIFIED","object":{"metadata":{"name":"w","managedFields":[{"a":1}',
        b'{"type":"MODIFIED","object":{"metadata":{"name":"w","managedFields":[]}',
        b"not json",
    ],
)
def test_malformed_lines_raise_as_orjson_does(line: bytes) -> None:
    with pytest.raises(orjson.JSONDecodeError):
        loads_without_managed_fields(line)
