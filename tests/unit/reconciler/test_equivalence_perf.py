"""Performance shortcuts in ``shared.kueue.equivalence``: same answers as the plain paths."""

from __future__ import annotations

import copy
from decimal import Decimal

from shared.kueue import equivalence
from shared.kueue.equivalence import equivalent_to_workload, parse_quantity, sanitize_pod_sets
from shared.models.workload import PodSet, Workload


def _pod_set() -> PodSet:
    return PodSet.model_validate(
        {
            "name": "main",
            "count": 2,
            "minCount": 1,
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "main",
                            "env": [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}],
                            "resources": {"requests": {"cpu": "1"}},
                        }
                    ],
                    "initContainers": [{"name": "init", "env": [{"name": "B", "value": "x"}]}],
                    "tolerations": [{"key": "k", "operator": "Exists"}],
                }
            },
        }
    )


def test_sanitized_views_match_sanitize_pod_sets_and_leave_input_alone() -> None:
    pod_sets = [_pod_set(), PodSet.model_validate({"name": "bare", "count": 1})]
    before = [copy.deepcopy(p.model_dump()) for p in pod_sets]
    views = equivalence._sanitized_views(pod_sets)
    assert [v.model_dump() for v in views] == [s.model_dump() for s in sanitize_pod_sets(pod_sets)]
    views[0].min_count = None
    assert [p.model_dump() for p in pod_sets] == before
    assert views[0].template["spec"]["containers"][0]["env"] == [{"name": "A", "value": "2"}]


def test_equivalence_does_not_modify_job_pod_sets() -> None:
    pod_sets = [_pod_set()]
    before = copy.deepcopy(pod_sets[0].model_dump())
    workload = Workload.model_validate(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "metadata": {
                "name": "wl",
                "namespace": "ns",
                "ownerReferences": [
                    {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u", "controller": True}
                ],
            },
            "spec": {
                "podSets": [sanitize_pod_sets(pod_sets)[0].model_dump(by_alias=True, exclude_none=True)]
            },
        }
    )
    assert (
        equivalent_to_workload(
            job_pod_sets=pod_sets,
            job_name="j",
            job_uid="u",
            max_exec_seconds=None,
            workload=workload,
            partial_admission=False,
        )
        is False
    )  # minCount dropped on the job side only
    assert equivalent_to_workload(
        job_pod_sets=pod_sets, job_name="j", job_uid="u", max_exec_seconds=None, workload=workload
    )
    assert pod_sets[0].model_dump() == before


def test_parse_quantity_cache_hit_miss_and_bound() -> None:
    cache = equivalence._parse_quantity_text
    cache.cache_clear()
    assert parse_quantity("1500m") == Decimal("1.5")
    assert cache.cache_info().misses == 1
    assert parse_quantity("1500m") == Decimal("1.5")
    assert cache.cache_info().hits == 1
    assert parse_quantity(2) == Decimal(2)  # numbers go through their text
    assert parse_quantity("2") == Decimal(2)
    assert cache.cache_info().hits == 2
    assert parse_quantity("bogus") is None
    assert parse_quantity(True) is None
    assert parse_quantity(["1"]) is None  # unhashable input never reaches the cache
    maxsize = cache.cache_info().maxsize
    assert maxsize is not None
    for i in range(maxsize + 10):
        parse_quantity(f"{i}Mi")
    assert cache.cache_info().currsize == maxsize
    assert parse_quantity("1Ki") == Decimal(1024)
