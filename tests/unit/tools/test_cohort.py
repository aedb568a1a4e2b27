"""``bridge_tools.cohort``: Kueue's available and potentially available quota in a cohort tree.

The cases are those of Kueue's own ``TestAvailable`` (``pkg/cache/scheduler/resource_test.go``,
v0.20): the same ClusterQueues, Cohorts and usage must give the same two numbers per ClusterQueue,
before usage (when available equals the potential) and after.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from bridge_tools.cohort import CohortTree, build_cohort_tree

Quota = tuple[str, str, str | None, str | None]  # flavor, nominal, borrowingLimit, lendingLimit


def _groups(quotas: tuple[Quota, ...]) -> list[dict[str, Any]]:
    flavors = []
    for flavor, nominal, borrowing, lending in quotas:
        quota: dict[str, Any] = {"name": "cpu", "nominalQuota": nominal}
        if borrowing is not None:
            quota["borrowingLimit"] = borrowing
        if lending is not None:
            quota["lendingLimit"] = lending
        flavors.append({"name": flavor, "resources": [quota]})
    return [{"coveredResources": ["cpu"], "flavors": flavors}]


def cq(name: str, cohort: str | None, *quotas: Quota) -> dict[str, Any]:
    spec: dict[str, Any] = {"resourceGroups": _groups(quotas)}
    if cohort:
        spec["cohortName"] = cohort
    return {"metadata": {"name": name}, "spec": spec}


def cohort(name: str, parent: str | None = None, *quotas: Quota) -> dict[str, Any]:
    spec: dict[str, Any] = {"resourceGroups": _groups(quotas)} if quotas else {}
    if parent:
        spec["parentName"] = parent
    return {"metadata": {"name": name}, "spec": spec}


def red(nominal: str, borrowing: str | None = None, lending: str | None = None) -> Quota:
    return ("red", nominal, borrowing, lending)


CASES: dict[str, Any] = {
    "base cqs": (
        [cq("cq1", None, red("0")), cq("cq2", None, red("5"), ("blue", "10", None, None))],
        [],
        {"cq1": {"red": "1"}, "cq2": {"red": "2.5", "blue": "1"}},
        {"cq1": {"red": "0"}, "cq2": {"red": "2.5", "blue": "9"}},
        {"cq1": {"red": "0"}, "cq2": {"red": "5", "blue": "10"}},
    ),
    "cqs with cohort": (
        [cq("cq1", "cohort", red("10")), cq("cq2", "cohort", red("10", None, "9"))],
        [cohort("cohort", None, red("10"))],
        {"cq1": {"red": "1"}, "cq2": {"red": "0.5"}},
        {"cq1": {"red": "28"}, "cq2": {"red": "28.5"}},
        {"cq1": {"red": "29"}, "cq2": {"red": "30"}},
    ),
    "cq borrows from cohort": (
        [cq("cq1", "cohort", red("10"))],
        [cohort("cohort", None, red("10"))],
        {"cq1": {"red": "11"}},
        {"cq1": {"red": "9"}},
        {"cq1": {"red": "20"}},
    ),
    "cq oversubscription spills into cohort": (
        [cq("cq1", "cohort", red("10")), cq("cq2", "cohort", red("10", "0", "0"))],
        [cohort("cohort", None, red("10"))],
        {"cq1": {"red": "31"}},
        {"cq1": {"red": "0"}, "cq2": {"red": "0"}},
        {"cq1": {"red": "20"}, "cq2": {"red": "10"}},
    ),
    "lending and borrowing limits respected": (
        [
            cq("cq1", "cohort", red("10")),
            cq("cq2", "cohort", red("10", "2")),
            cq("cq3", "cohort", red("10", None, "5")),
        ],
        [cohort("cohort", None, red("10"))],
        {"cq1": {"red": "20"}, "cq2": {"red": "10"}, "cq3": {"red": "6"}},
        {"cq1": {"red": "4"}, "cq2": {"red": "2"}, "cq3": {"red": "4"}},
        {"cq1": {"red": "35"}, "cq2": {"red": "12"}, "cq3": {"red": "40"}},
    ),
    "hierarchical cohort": (
        [cq("cq1", "left", red("10")), cq("cq2", "right", red("10", None, "0"))],
        [cohort("root"), cohort("left", "root", red("10")), cohort("right", "root", red("10"))],
        {"cq1": {"red": "10"}, "cq2": {"red": "5"}},
        {"cq1": {"red": "20"}, "cq2": {"red": "25"}},
        {"cq1": {"red": "30"}, "cq2": {"red": "40"}},
    ),
    "hierarchical cohort respects borrowing limit": (
        [
            cq("left-cq1", "left", red("10")),
            cq("left-cq2", "left", red("10", "5")),
            cq("right-cq", "right", red("10")),
        ],
        [cohort("root"), cohort("left", "root", red("10", "5")), cohort("right", "root", red("10"))],
        {},
        {"left-cq1": {"red": "35"}, "left-cq2": {"red": "15"}, "right-cq": {"red": "50"}},
        {"left-cq1": {"red": "35"}, "left-cq2": {"red": "15"}, "right-cq": {"red": "50"}},
    ),
    "hierarchical cohort respects lending limit": (
        [
            cq("left-cq1", "left", red("10", None, "5")),
            cq("left-cq2", "left", red("10")),
            cq("right-cq", "right", red("0")),
            cq("root-cq", "root", red("0")),
        ],
        [cohort("root"), cohort("left", "root", red("0", None, "5")), cohort("right", "root", red("0"))],
        {},
        {
            "left-cq1": {"red": "20"},
            "left-cq2": {"red": "15"},
            "right-cq": {"red": "5"},
            "root-cq": {"red": "5"},
        },
        {
            "left-cq1": {"red": "20"},
            "left-cq2": {"red": "15"},
            "right-cq": {"red": "5"},
            "root-cq": {"red": "5"},
        },
    ),
}


def _tree(
    queues: list[dict[str, Any]], cohorts: list[dict[str, Any]], usage: dict[str, Any], name: str
) -> CohortTree:
    def usage_of(raw: dict[str, Any]) -> dict[tuple[str, str], Decimal]:
        used = usage.get(raw["metadata"]["name"], {})
        return {(flavor, "cpu"): Decimal(amount) for flavor, amount in used.items()}

    tree = build_cohort_tree(cluster_queue=name, cluster_queues=queues, cohorts=cohorts, usage_of=usage_of)
    assert isinstance(tree, CohortTree), tree
    return tree


@pytest.mark.parametrize("case", sorted(CASES))
def test_available_and_potential_are_kueues(case: str) -> None:
    queues, cohorts, usage, want_available, want_potential = CASES[case]
    for name in want_potential:
        before = _tree(queues, cohorts, {}, name)
        after = _tree(queues, cohorts, usage, name)
        for flavor in want_potential[name]:
            fr = (flavor, "cpu")
            assert before.available(fr) == Decimal(want_potential[name][flavor]), (name, flavor, "no usage")
            assert after.available(fr) == Decimal(want_available[name][flavor]), (name, flavor)
            assert after.potential(fr) == Decimal(want_potential[name][flavor]), (name, flavor)


def test_the_tree_is_described_and_a_parent_cycle_is_not_computed() -> None:
    queues, cohorts, usage, _, _ = CASES["hierarchical cohort"]
    tree = _tree(queues, cohorts, usage, "cq1")
    assert (tree.cohort, tree.root, tree.cluster_queues, tree.cohorts) == ("left", "root", 2, 3)
    looped = [cohort("a", "b"), cohort("b", "a")]
    found = build_cohort_tree(
        cluster_queue="cq", cluster_queues=[cq("cq", "a", red("1"))], cohorts=looped, usage_of=lambda _: {}
    )
    assert found == "the parentName chain of cohort a has a cycle"


def test_odd_objects_do_not_raise() -> None:
    queues = [cq("cq", "pool", red("2")), {"metadata": {"name": "broken"}, "spec": "nope"}]
    queues.append(
        {
            "metadata": {"name": "odd"},
            "spec": {"cohortName": "pool", "resourceGroups": ["x", {"flavors": [3]}]},
        }
    )
    tree = _tree(queues, [{"metadata": {"name": "pool"}, "spec": []}], {"cq": {"red": "1"}}, "cq")
    assert tree.available(("red", "cpu")) == Decimal(1)
    assert tree.cluster_queues == 2
    assert build_cohort_tree(
        cluster_queue="gone", cluster_queues=queues, cohorts=[], usage_of=lambda _: {}
    ) == ("ClusterQueue gone cannot be read")
