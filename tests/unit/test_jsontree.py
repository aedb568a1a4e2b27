"""``shared.jsontree``: exact, independent copies of decoded JSON, with a deepcopy fallback."""

from __future__ import annotations

import dataclasses
import datetime as dt
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from shared.jsontree import copy_json, json_tree_copy


def containers(value: Any) -> list[Any]:
    """Every dict and list inside ``value`` (itself included)."""
    found = []
    if isinstance(value, dict | list):
        found.append(value)
        for item in value.values() if isinstance(value, dict) else value:
            found.extend(containers(item))
    return found


def test_a_copy_is_equal_and_shares_no_dict_or_list() -> None:
    original: dict[str, Any] = {
        "metadata": {"labels": {"a": "b"}, "annotations": {}},
        "spec": {"tolerations": [{"key": "k", "operator": "Exists"}], "count": 3, "ratio": 0.5},
        "flags": [True, False, None, [1, [2]]],
    }
    copied = copy_json(original)
    assert copied == original
    assert not {id(c) for c in containers(copied)} & {id(c) for c in containers(original)}
    copied["spec"]["tolerations"][0]["key"] = "changed"
    copied["flags"][3][1].append(3)
    assert original["spec"]["tolerations"][0]["key"] == "k"
    assert original["flags"][3][1] == [2]


def test_values_that_are_not_json_are_deep_copied_too() -> None:
    class Box:
        def __init__(self, items: list[int]) -> None:
            self.items = items

    original: dict[str, Any] = {
        "box": Box([1]),
        "when": datetime(2026, 11, 22, tzinfo=UTC),
        "cpu": Decimal("0.5"),
        "pair": (1, [2]),
        "set": {3},
    }
    copied = copy_json(original)
    assert copied["box"] is not original["box"]
    assert copied["box"].items == [1]
    assert copied["box"].items is not original["box"].items
    assert (copied["when"], copied["cpu"], copied["set"]) == (original["when"], original["cpu"], {3})
    assert type(copied["pair"]) is tuple
    assert copied["pair"] == (1, [2])
    assert copied["pair"][1] is not original["pair"][1]
    assert copied["set"] is not original["set"]


def test_scalars_come_back_as_they_are() -> None:
    for scalar in ("text", 7, 1.5, True, None):
        assert copy_json(scalar) is scalar


# --- json_tree_copy (orjson round trip) ----------------------------------------------------------


def test_copies_decoded_json_exactly_and_independently() -> None:
    tree: dict[str, Any] = {
        "s": "x",
        "i": 3,
        "f": 0.1,
        "b": True,
        "n": None,
        "l": [{"k": [1, 2]}, "y"],
        "d": {"nested": {"deep": []}},
    }
    copied = json_tree_copy(tree)
    assert copied == tree
    assert type(copied["f"]) is float and type(copied["b"]) is bool
    copied["l"][0]["k"].append(3)
    copied["d"]["nested"]["deep"].append(1)
    assert tree["l"][0]["k"] == [1, 2]
    assert tree["d"]["nested"]["deep"] == []


@dataclasses.dataclass
class _Point:
    x: int


def test_values_orjson_would_convert_fall_back_to_deepcopy() -> None:
    when = dt.datetime(2026, 1, 1, tzinfo=dt.UTC)
    for tree in ({"t": when}, {"p": _Point(1)}, {1: "int key"}, {"big": 2**70}):
        copied = json_tree_copy(tree)  # type: ignore[arg-type]
        assert copied == tree
        assert [type(value) for value in copied.values()] == [type(value) for value in tree.values()]
    point = _Point(1)
    copied = json_tree_copy({"p": point})
    assert copied["p"] is not point
