"""The v1beta1 ``domains`` <-> v1beta2 ``slices`` topology-assignment codec."""

from __future__ import annotations

from typing import Any

import pytest

from shared.models.topology_assignment import (
    ConversionError,
    TopologyDomain,
    domains_to_slices,
    slices_to_domains,
    topology_domains,
)


def _v1beta1(levels: list[str], *domains: tuple[list[str], int]) -> dict[str, Any]:
    return {"levels": levels, "domains": [{"values": values, "count": count} for values, count in domains]}


def _single_level_values(*values: str) -> dict[str, Any]:
    encoded = domains_to_slices(_v1beta1(["l"], *(([value], 1) for value in values)))
    [slice_] = encoded["slices"]
    [level] = slice_["valuesPerLevel"]
    assert isinstance(level, dict)
    return level


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (("rack-1", "rack-1"), {"universal": "rack-1"}),
        (("node-1", "node-2"), {"individual": {"prefix": "node-", "roots": ["1", "2"]}}),
        (("x1", "y1"), {"individual": {"roots": ["x", "y"], "suffix": "1"}}),
        (("p-1.s", "p-22.s"), {"individual": {"prefix": "p-", "roots": ["1", "22"], "suffix": ".s"}}),
        (("ab", "cd"), {"individual": {"roots": ["ab", "cd"]}}),
        # a shrinking prefix: the common prefix is that of *all* values
        (("n45", "n4", "n", "n5"), {"individual": {"prefix": "n", "roots": ["45", "4", "", "5"]}}),
        # prefix and suffix would overlap in the shortest value: the prefix gives way
        (("xyxyx", "xyx"), {"individual": {"roots": ["xy", ""], "suffix": "xyx"}}),
        (("abcbcdc", "abcdc"), {"individual": {"prefix": "a", "roots": ["bc", ""], "suffix": "bcdc"}}),
        (("abcXYZcba", "abcZcba"), {"individual": {"prefix": "abc", "roots": ["XY", ""], "suffix": "Zcba"}}),
    ],
)
def test_each_level_is_compacted_like_kueue(values: tuple[str, ...], expected: dict[str, Any]) -> None:
    level = _single_level_values(*values)
    assert level == expected
    individual = level.get("individual", {})
    rebuilt = [
        individual.get("prefix", "") + root + individual.get("suffix", "")
        for root in individual.get("roots", [])
    ]
    assert rebuilt in ([], list(values))


def test_pod_counts_are_universal_when_equal_and_individual_otherwise() -> None:
    same = domains_to_slices(_v1beta1(["l"], (["a"], 2), (["b"], 2)))
    different = domains_to_slices(_v1beta1(["l"], (["a"], 2), (["b"], 3)))
    assert same["slices"][0]["podCounts"] == {"universal": 2}
    assert different["slices"][0]["podCounts"] == {"individual": [2, 3]}


def test_a_two_level_assignment_becomes_one_slice_and_back() -> None:
    v1beta1 = _v1beta1(
        ["cloud.com/block", "kubernetes.io/hostname"],
        (["block-a", "host-a-1"], 1),
        (["block-a", "host-a-2"], 3),
        (["block-a", "host-b-10"], 1),
    )
    v1beta2 = domains_to_slices(v1beta1)
    assert v1beta2 == {
        "levels": ["cloud.com/block", "kubernetes.io/hostname"],
        "slices": [
            {
                "domainCount": 3,
                "podCounts": {"individual": [1, 3, 1]},
                "valuesPerLevel": [
                    {"universal": "block-a"},
                    {"individual": {"prefix": "host-", "roots": ["a-1", "a-2", "b-10"]}},
                ],
            }
        ],
    }
    assert slices_to_domains(v1beta2) == v1beta1


def test_no_domains_means_no_slices() -> None:
    assert domains_to_slices({"levels": ["l"], "domains": []}) == {"levels": ["l"], "slices": []}
    assert slices_to_domains({"levels": ["l"], "slices": []}) == {"levels": ["l"], "domains": []}


def test_several_slices_expand_in_order() -> None:
    v1beta2 = {
        "levels": ["h"],
        "slices": [
            {
                "domainCount": 2,
                "podCounts": {"universal": 1},
                "valuesPerLevel": [{"individual": {"prefix": "a-", "roots": ["1", "2"]}}],
            },
            {"domainCount": 1, "podCounts": {"individual": [4]}, "valuesPerLevel": [{"universal": "b-1"}]},
        ],
    }
    assert topology_domains(v1beta2) == [
        TopologyDomain(values=("a-1",), count=1),
        TopologyDomain(values=("a-2",), count=1),
        TopologyDomain(values=("b-1",), count=4),
    ]


def test_other_fields_of_the_assignment_are_kept() -> None:
    v1beta1 = _v1beta1(["l"], (["a"], 1)) | {"future": {"x": 1}}
    assert domains_to_slices(v1beta1)["future"] == {"x": 1}
    assert slices_to_domains(domains_to_slices(v1beta1)) == v1beta1


@pytest.mark.parametrize(
    ("slice_", "path"),
    [
        (
            {"domainCount": -1, "podCounts": {"universal": 1}, "valuesPerLevel": [{"universal": "a"}]},
            "t.slices[0].domainCount",
        ),
        ({"domainCount": 1, "valuesPerLevel": [{"universal": "a"}]}, "t.slices[0].podCounts"),
        (
            {"domainCount": 2, "podCounts": {"individual": [1]}, "valuesPerLevel": [{"universal": "a"}]},
            "t.slices[0].podCounts.individual",
        ),
        (
            {"domainCount": 1, "podCounts": {"universal": 1}, "valuesPerLevel": []},
            "t.slices[0].valuesPerLevel",
        ),
        (
            {"domainCount": 1, "podCounts": {"universal": 1}, "valuesPerLevel": [{}]},
            "t.slices[0].valuesPerLevel[0]",
        ),
        (
            {
                "domainCount": 2,
                "podCounts": {"universal": 1},
                "valuesPerLevel": [{"individual": {"roots": ["a"]}}],
            },
            "t.slices[0].valuesPerLevel[0].individual.roots",
        ),
        (
            {"domainCount": 1, "podCounts": {"universal": "1"}, "valuesPerLevel": [{"universal": "a"}]},
            "t.slices[0].podCounts.universal",
        ),
        ("not a slice", "t.slices[0]"),
    ],
)
def test_malformed_slices_raise_naming_the_path(slice_: Any, path: str) -> None:
    with pytest.raises(ConversionError) as error:
        slices_to_domains({"levels": ["l"], "slices": [slice_]}, path="t")
    assert error.value.path == path
    assert str(error.value).startswith(f"{path}: ")


@pytest.mark.parametrize(
    ("assignment", "path"),
    [
        ({"levels": ["l"], "domains": [{"values": ["a", "b"], "count": 1}]}, "t.domains[0].values"),
        ({"levels": ["l"], "domains": [{"values": ["a"]}]}, "t.domains[0].count"),
        ({"levels": "l", "domains": []}, "t.levels"),
        ({"levels": ["l"], "domains": {}}, "t.domains"),
    ],
)
def test_malformed_domains_raise_naming_the_path(assignment: dict[str, Any], path: str) -> None:
    with pytest.raises(ConversionError) as error:
        domains_to_slices(assignment, path="t")
    assert error.value.path == path
