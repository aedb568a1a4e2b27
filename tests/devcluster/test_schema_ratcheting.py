"""StructuralSchema ratcheting on update (KEP-4008): which errors an unchanged old value excuses."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from devcluster.apiserver.customresources.ratcheting import NO_OLD, correlate_map_list, unchanged
from devcluster.apiserver.customresources.schema import SchemaCause, StructuralSchema

PORTS: dict[str, Any] = {
    "type": "array",
    "x-kubernetes-list-type": "map",
    "x-kubernetes-list-map-keys": ["name"],
    "items": {
        "type": "object",
        "required": ["name"],
        "properties": {"name": {"type": "string"}, "port": {"type": "integer", "minimum": 1}},
    },
}
SCHEMA = StructuralSchema(
    {
        "type": "object",
        "required": ["spec"],
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "size": {"type": "integer", "minimum": 0},
                    "mode": {"type": "string", "enum": ["Fast", "Slow"]},
                    "since": {"type": "string", "format": "date-time"},
                    "flag": {"type": "boolean"},
                    "note": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$"}},
                    "set": {
                        "type": "array",
                        "x-kubernetes-list-type": "set",
                        "items": {"type": "string", "maxLength": 3},
                    },
                    "ports": PORTS,
                    "limits": {"type": "object", "additionalProperties": {"type": "integer", "maximum": 10}},
                    "inner": {
                        "type": "object",
                        "required": ["id"],
                        "properties": {"id": {"type": "string"}, "note": {"type": "string"}},
                    },
                },
            },
            "status": {
                "type": "object",
                "properties": {"phase": {"type": "string", "enum": ["Ready", "Failed"]}},
            },
        },
    }
)
SIZE_MINUS_TWO = "spec.size: Invalid value: -2: spec.size in body should be greater than or equal to 0"


def _gadget(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Gadget",
        "metadata": {"name": "g", "namespace": "ns"},
        "spec": {"note": "a", **spec},
    }


def _updated(old: dict[str, Any], **spec: Any) -> dict[str, Any]:
    new = copy.deepcopy(old)
    new["spec"].update(spec)
    return new


def _messages(causes: list[SchemaCause]) -> list[str]:
    return [cause.message for cause in causes]


INVALID_VALUES = {
    "minimum": {"size": -1},
    "enum": {"mode": "Medium"},
    "format": {"since": "yesterday"},
    "type": {"flag": "yes"},
    "pattern-in-atomic-list": {"tags": ["UP"]},
    "maxLength-in-set": {"set": ["long"]},
    "list-map-item": {"ports": [{"name": "a", "port": 0}]},
    "additionalProperties": {"limits": {"a": 11}},
    "required-in-nested-object": {"inner": {"note": "no id"}},
}


@pytest.mark.parametrize("bad", INVALID_VALUES.values(), ids=INVALID_VALUES.keys())
def test_unchanged_invalid_value_is_accepted_on_update_only(bad: dict[str, Any]) -> None:
    old = _gadget(**bad)
    assert SCHEMA.validate(old), "the value must be invalid for this test to mean anything"
    new = _updated(old, note="changed elsewhere")
    new["status"] = {"phase": "Ready"}
    assert SCHEMA.validate(new, old_obj=old) == []
    assert SCHEMA.validate(new) != [], "create never ratchets"
    assert SCHEMA.validate(new, old_obj=None) == SCHEMA.validate(new)


def test_changed_invalid_value_is_denied_with_the_create_text() -> None:
    invalid_before = _gadget(size=-1)
    valid_before = _gadget(size=1)
    for old in (invalid_before, valid_before):
        new = _updated(old, size=-2)
        assert SCHEMA.validate(new, old_obj=old) == [
            SchemaCause(field="spec.size", reason="FieldValueInvalid", message=SIZE_MINUS_TWO)
        ]
        assert SCHEMA.validate(new, old_obj=old) == SCHEMA.validate(new)


def test_list_map_items_correlate_by_key_not_index() -> None:
    old = _gadget(ports=[{"name": "a", "port": 0}, {"name": "b", "port": 2}])
    reordered = _updated(old, ports=[{"name": "b", "port": 2}, {"name": "a", "port": 0}])
    assert SCHEMA.validate(reordered, old_obj=old) == []

    added = _updated(old, ports=[*old["spec"]["ports"], {"name": "c", "port": 0}])
    assert _messages(SCHEMA.validate(added, old_obj=old)) == [
        "spec.ports[2].port: Invalid value: 0: spec.ports[2].port in body should be greater than or equal to 1"
    ]

    renamed = _updated(old, ports=[{"name": "z", "port": 0}, {"name": "b", "port": 2}])
    assert [c.field for c in SCHEMA.validate(renamed, old_obj=old)] == ["spec.ports[0].port"]

    changed = _updated(old, ports=[{"name": "a", "port": -1}, {"name": "b", "port": 3}])
    assert [c.field for c in SCHEMA.validate(changed, old_obj=old)] == ["spec.ports[0].port"]


@pytest.mark.parametrize(
    ("field", "old_items", "new_items", "errors"),
    [
        ("tags", ["UP", "ok"], ["UP", "fine"], ["spec.tags[0]"]),
        ("set", ["long", "ok"], ["long", "new"], ["spec.set[0]"]),
    ],
    ids=["atomic", "set"],
)
def test_a_list_without_map_keys_revalidates_every_item_when_one_changes(
    field: str, old_items: list[str], new_items: list[str], errors: list[str]
) -> None:
    old = _gadget(**{field: old_items})
    assert SCHEMA.validate(_updated(old, note="b"), old_obj=old) == []
    new = _updated(old, **{field: new_items})
    assert [c.field for c in SCHEMA.validate(new, old_obj=old)] == errors


def test_additional_properties_correlate_by_key() -> None:
    old = _gadget(limits={"a": 11})
    new = _updated(old, limits={"a": 11, "b": 12})
    assert _messages(SCHEMA.validate(new, old_obj=old)) == [
        "spec.limits.b: Invalid value: 12: spec.limits.b in body should be less than or equal to 10"
    ]


def test_required_ratchets_only_while_its_object_is_unchanged() -> None:
    old = _gadget(inner={"note": "no id"})
    assert SCHEMA.validate(_updated(old, size=3), old_obj=old) == []
    touched = _updated(old, inner={"note": "still no id"})
    assert _messages(SCHEMA.validate(touched, old_obj=old)) == ["spec.inner.id: Required value"]


def test_root_required_ratchets_only_for_an_identical_object() -> None:
    old: dict[str, Any] = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}}
    assert SCHEMA.validate(copy.deepcopy(old), old_obj=old) == []
    new = {**copy.deepcopy(old), "status": {"phase": "Ready"}}
    assert _messages(SCHEMA.validate(new, old_obj=old)) == ["spec: Required value"]


def test_numbers_and_booleans_are_not_deep_equal_to_each_other() -> None:
    old = _gadget(size=1, flag=True)
    new = _updated(old, flag=1)  # Python's 1 == True must not ratchet the type error
    assert _messages(SCHEMA.validate(new, old_obj=old)) == [
        'spec.flag: Invalid value: "integer": spec.flag in body must be of type boolean: "integer"'
    ]


def test_duplicates_are_reported_last_and_only_if_the_old_object_had_none() -> None:
    duplicated = [{"name": "a", "port": 1}, {"name": "a", "port": 2}]
    old = _gadget(size=1)
    new = _updated(old, ports=duplicated, size=-2)
    assert _messages(SCHEMA.validate(new, old_obj=old)) == [
        SIZE_MINUS_TWO,
        'spec.ports[1]: Duplicate value: {"name":"a"}',
    ]
    old_with_duplicates = _gadget(set=["x", "x"])
    again = _updated(old_with_duplicates, ports=duplicated)
    assert SCHEMA.validate(again, old_obj=old_with_duplicates) == []


def test_status_write_validates_status_only() -> None:
    old: dict[str, Any] = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}}
    old["spec"] = {"size": -1}
    new = {**copy.deepcopy(old), "status": {"phase": "Gone"}}
    del new["spec"]  # even a missing root-required field is not the status schema's business
    assert _messages(SCHEMA.validate(new, old_obj=old, status_only=True)) == [
        'status.phase: Unsupported value: "Gone": supported values: "Ready", "Failed"'
    ]
    old["status"] = {"phase": "Gone"}
    assert SCHEMA.validate(new, old_obj=old, status_only=True) == []


@pytest.mark.parametrize(
    ("new", "old", "equal"),
    [
        ({"a": [1, {"b": None}]}, {"a": [1, {"b": None}]}, True),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}, True),
        (None, None, True),
        (1, 1.0, False),
        (1, True, False),
        ({"a": [1]}, {"a": [1.0]}, False),
        ({"a": [True]}, {"a": [1]}, False),
        ([1, 2], [2, 1], False),
        ({"a": 1}, {"a": 1, "b": None}, False),
        ({"big": 2**70}, {"big": 2**70}, True),
        ({"big": 2**70}, {"big": float(2**70)}, False),
        ("x", NO_OLD, False),
    ],
)
def test_unchanged_is_go_deep_equality_of_decoded_json(new: Any, old: Any, equal: bool) -> None:
    assert unchanged(new, old) is equal


def test_map_list_correlation_uses_every_key() -> None:
    old = [{"a": 1, "b": "x", "v": 1}, {"a": 1, "b": "y", "v": 2}, "junk"]
    new = [{"b": "y", "a": 1}, {"a": 1, "b": "z"}, {"a": True, "b": "x"}, "junk"]
    assert correlate_map_list(new, old, ("a", "b")) == [old[1], NO_OLD, NO_OLD, NO_OLD]
    assert correlate_map_list(new, NO_OLD, ("a", "b")) == [NO_OLD] * 4
