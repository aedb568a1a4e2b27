"""The field-set and merge primitives behind server-side apply, on their own (no server).

The conformance tests (``test_field_ownership.py``) check the behaviour end to end against a real
kube-apiserver; these pin the serialisation details a single request rarely shows.
"""

from __future__ import annotations

from typing import Any

from devcluster.apiserver.fieldmanager.fieldsets import canonical, difference, key, paths, union, value
from devcluster.apiserver.fieldmanager.fieldtypes import SCALAR, ListOf, Struct
from devcluster.apiserver.fieldmanager.structured import compare, merge, to_field_set

CONDITIONS = Struct({"conditions": ListOf(keys=("type",), elem=Struct({}))})


def test_canonical_order_is_structured_merge_diffs() -> None:
    messy: dict[str, Any] = {
        'v:"b"': {},
        'k:{"port":80}': {},
        "f:z": {},
        ".": {},
        'k:{"port":9}': {},
        'v:"a"': {},
        "f:a": {"f:y": {}, "f:x": {}},
    }
    ordered = canonical(messy)
    assert list(ordered) == [".", "f:a", "f:z", 'k:{"port":9}', 'k:{"port":80}', 'v:"a"', 'v:"b"']
    assert list(ordered["f:a"]) == ["f:x", "f:y"]


def test_keys_and_values_are_written_as_go_writes_json() -> None:
    assert key({"protocol": "TCP", "containerPort": 80}) == 'k:{"containerPort":80,"protocol":"TCP"}'
    assert value("a<b&c>") == 'v:"a\\u003cb\\u0026c\\u003e"'


def test_paths_print_members_before_subtrees_like_set_iterate() -> None:
    fields = {
        "f:data": {"f:b": {}, "f:a": {}},
        "f:status": {"f:conditions": {'k:{"type":"A"}': {".": {}, "f:status": {}}}},
        "f:kind": {},
    }
    assert paths(fields) == [
        ".kind",
        ".data.a",
        ".data.b",
        '.status.conditions[type="A"]',
        '.status.conditions[type="A"].status',
    ]


def test_set_algebra_keeps_membership_per_path() -> None:
    owned: dict[str, Any] = {"f:status": {".": {}, "f:a": {}, "f:b": {}}}
    assert difference(owned, {"f:status": {"f:a": {}}}) == {"f:status": {".": {}, "f:b": {}}}
    assert difference(owned, {"f:status": {}}) == {"f:status": {"f:a": {}, "f:b": {}}}
    assert union({"f:x": {}}, {"f:x": {"f:y": {}}}) == {"f:x": {"f:y": {}, ".": {}}}


def test_list_map_merge_keeps_the_configurations_order_and_live_only_items() -> None:
    live = {"conditions": [{"type": "Q"}, {"type": "A"}]}
    config = {"conditions": [{"type": "F"}, {"type": "Q", "status": "True"}]}
    merged = merge(live, config, CONDITIONS)
    assert merged["conditions"] == [{"type": "F"}, {"type": "Q", "status": "True"}, {"type": "A"}]


def test_compare_marks_new_containers_and_keeps_value_structs() -> None:
    kind = Struct({"spec": Struct({"x": SCALAR}, present=True), "labels": Struct({}, elem=SCALAR)})
    added, modified, removed = compare(None, {"spec": {"x": 1}, "labels": {"a": "1"}}, kind)
    assert added == {"f:spec": {"f:x": {}}, "f:labels": {"f:a": {}, ".": {}}}
    assert (modified, removed) == (None, None)
    assert to_field_set({"labels": {}}, kind) == {"f:labels": {}}
