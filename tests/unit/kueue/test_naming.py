"""Workload names: Kueue's published vectors, the golden Workload, truncation, extra and variants."""

from __future__ import annotations

import hashlib

import pytest

from shared.kube import GroupVersionKind
from shared.kueue.naming import (
    workload_name_for_owner,
    workload_name_for_variant,
    workload_name_hash,
    workload_name_prefix,
)
from tests.unit.kueue.helpers import BATCH_JOB_GVK


def test_reference_vector_without_extra() -> None:
    assert (
        workload_name_for_owner(owner_name="name", owner_uid="uid", owner_gvk=BATCH_JOB_GVK)
        == "job-name-ef3a1"
    )


def test_reference_vector_with_extra() -> None:
    name = workload_name_for_owner(owner_name="name", owner_uid="uid", owner_gvk=BATCH_JOB_GVK, extra="1")
    assert name == "job-name-2514c"


@pytest.mark.needs_shared
def test_golden_workload_name_is_reproduced(golden: dict) -> None:
    workload = golden["workload-admitted"]
    job = golden["job"]
    uid = workload["metadata"]["labels"]["kueue.x-k8s.io/job-uid"]
    name = workload_name_for_owner(owner_name=job["metadata"]["name"], owner_uid=uid, owner_gvk=BATCH_JOB_GVK)
    assert name == workload["metadata"]["name"] == "job-sample-43252"


def test_hash_input_is_kind_group_name_uid_and_extra_not_version() -> None:
    expected = hashlib.sha1(b"Job\nbatch\nname\nuid\nx").hexdigest()
    assert (
        workload_name_hash(owner_name="name", owner_uid="uid", owner_gvk=BATCH_JOB_GVK, extra="x") == expected
    )
    other_version = GroupVersionKind("batch", "v2", "Job")
    assert workload_name_for_owner(owner_name="n", owner_uid="u", owner_gvk=other_version) == (
        workload_name_for_owner(owner_name="n", owner_uid="u", owner_gvk=BATCH_JOB_GVK)
    )


def test_group_and_kind_change_the_hash_and_kind_is_lower_cased() -> None:
    jobset = GroupVersionKind("jobset.x-k8s.io", "v1alpha2", "JobSet")
    other_group = GroupVersionKind("example.com", "v1", "JobSet")
    first = workload_name_for_owner(owner_name="n", owner_uid="u", owner_gvk=jobset)
    second = workload_name_for_owner(owner_name="n", owner_uid="u", owner_gvk=other_group)
    assert first.startswith("jobset-n-")
    assert second.startswith("jobset-n-")
    assert first != second


def test_core_group_hashes_an_empty_group_line() -> None:
    pod = GroupVersionKind("", "v1", "Pod")
    digest = hashlib.sha1(b"Pod\n\nweb\nuid-1").hexdigest()[:5]
    assert workload_name_for_owner(owner_name="web", owner_uid="uid-1", owner_gvk=pod) == f"pod-web-{digest}"


def test_empty_extra_is_the_same_as_no_extra_and_different_extras_differ() -> None:
    base = workload_name_for_owner(owner_name="a", owner_uid="u", owner_gvk=BATCH_JOB_GVK)
    assert workload_name_for_owner(owner_name="a", owner_uid="u", owner_gvk=BATCH_JOB_GVK, extra="") == base
    one = workload_name_for_owner(owner_name="a", owner_uid="u", owner_gvk=BATCH_JOB_GVK, extra="1")
    two = workload_name_for_owner(owner_name="a", owner_uid="u", owner_gvk=BATCH_JOB_GVK, extra="2")
    assert len({base, one, two}) == 3
    assert one[:-5] == two[:-5] == base[:-5]


@pytest.mark.parametrize("max_length", [253, 63])
def test_long_owner_names_are_truncated_to_the_limit(max_length: int) -> None:
    owner = "a" * 300
    name = workload_name_for_owner(
        owner_name=owner, owner_uid="uid", owner_gvk=BATCH_JOB_GVK, max_length=max_length
    )
    digest = hashlib.sha1(("Job\nbatch\n" + owner + "\nuid").encode()).hexdigest()[:5]
    assert len(name) == max_length
    assert name == ("job-" + owner)[: max_length - 6] + "-" + digest
    assert workload_name_prefix(owner_name=owner, owner_gvk=BATCH_JOB_GVK, max_length=max_length) == name[:-6]


def test_name_exactly_at_the_limit_is_not_truncated() -> None:
    owner = "b" * (63 - 6 - len("job-"))
    name = workload_name_for_owner(owner_name=owner, owner_uid="u", owner_gvk=BATCH_JOB_GVK, max_length=63)
    assert len(name) == 63
    assert name.startswith("job-" + owner + "-")
    longer = workload_name_for_owner(
        owner_name=owner + "c", owner_uid="u", owner_gvk=BATCH_JOB_GVK, max_length=63
    )
    assert longer.startswith("job-" + owner + "-")
    assert longer != name  # the full name is hashed even when the prefix is cut


def test_variant_name_replaces_the_hash_and_hashes_the_parent_with_the_flavor() -> None:
    parent = workload_name_for_owner(owner_name="train", owner_uid="u", owner_gvk=BATCH_JOB_GVK)
    variant = workload_name_for_variant(
        parent_name=parent, owner_uid="u", owner_gvk=BATCH_JOB_GVK, flavor="spot"
    )
    digest = hashlib.sha1(f"Job\nbatch\n{parent}\nu\nspot".encode()).hexdigest()[:5]
    assert variant == f"job-train-variant-spot-{digest}"
