"""``json_tree_copy``: an exact, independent copy of decoded JSON, with a deepcopy fallback."""

from __future__ import annotations

import dataclasses
import datetime
from typing import Any

from shared.frameworks.templates import json_tree_copy


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
    when = datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)
    for tree in ({"t": when}, {"p": _Point(1)}, {1: "int key"}, {"big": 2**70}):
        copied = json_tree_copy(tree)  # type: ignore[arg-type]
        assert copied == tree
        assert [type(value) for value in copied.values()] == [type(value) for value in tree.values()]
    point = _Point(1)
    copied = json_tree_copy({"p": point})
    assert copied["p"] is not point
