"""``controller.groupKindConcurrency``: Kueue's field sets how many jobs of a kind reconcile at once."""

from __future__ import annotations

import pytest

from shared.config import DEFAULT_RECONCILE_CONCURRENCY, ConfigError, dump_config, parse_config
from shared.kube import GroupVersionKind

HEADER = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
JOB = GroupVersionKind("batch", "v1", "Job")
WORKLOAD = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "Workload")
JOBSET = GroupVersionKind("jobset.x-k8s.io", "v1alpha2", "JobSet")
POD = GroupVersionKind("", "v1", "Pod")

# Kueue's own config/components/manager/controller_manager_config.yaml section, verbatim.
KUEUE_SECTION = """controller:
  groupKindConcurrency:
    Job.batch: 5
    Pod: 5
    Workload.kueue.x-k8s.io: 10
    LocalQueue.kueue.x-k8s.io: 5
    Cohort.kueue.x-k8s.io: 1
    ClusterQueue.kueue.x-k8s.io: 5
    ResourceFlavor.kueue.x-k8s.io: 1
"""


def test_kueue_section_sets_the_concurrency_of_the_kinds_it_names() -> None:
    config = parse_config(HEADER + KUEUE_SECTION, source="kueue.yaml")
    assert config.reconcile_concurrency(JOB) == 5
    assert config.reconcile_concurrency(POD) == 5  # core kinds are keyed by the kind alone


def test_kinds_not_named_get_the_default() -> None:
    config = parse_config(HEADER + KUEUE_SECTION, source="kueue.yaml")
    assert config.reconcile_concurrency(JOBSET) == DEFAULT_RECONCILE_CONCURRENCY
    assert parse_config(HEADER, source="x").reconcile_concurrency(JOB) == DEFAULT_RECONCILE_CONCURRENCY


def test_a_caller_may_bring_its_own_default() -> None:
    config = parse_config(HEADER + KUEUE_SECTION, source="kueue.yaml")
    assert config.reconcile_concurrency(WORKLOAD, default=64) == 10  # named: the file wins
    assert parse_config(HEADER, source="x").reconcile_concurrency(WORKLOAD, default=64) == 64


def test_the_key_is_group_kind_not_the_version() -> None:
    config = parse_config(
        HEADER + "controller: {groupKindConcurrency: {JobSet.jobset.x-k8s.io: 3}}\n", source="x"
    )
    assert config.reconcile_concurrency(GroupVersionKind("jobset.x-k8s.io", "v1beta9", "JobSet")) == 3


def test_section_round_trips_with_cache_sync_timeout_kept() -> None:
    text = HEADER + "controller: {groupKindConcurrency: {Job.batch: 2}, cacheSyncTimeout: 2m}\n"
    wire = dump_config(parse_config(text, source="x"))
    assert wire["controller"] == {"groupKindConcurrency": {"Job.batch": 2}, "cacheSyncTimeout": "2m"}


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0", "controller.groupKindConcurrency.Job.batch: Invalid value: 0: must be greater than zero"),
        ("-3", "controller.groupKindConcurrency.Job.batch: Invalid value: -3: must be greater than zero"),
        ("'5'", "controller.groupKindConcurrency.Job.batch: must be an integer, not string"),
    ],
)
def test_bad_values_name_the_field(value: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config(HEADER + f"controller: {{groupKindConcurrency: {{Job.batch: {value}}}}}\n", source="x")
    assert raised.value.lines() == [f"x: {message}"]


def test_unknown_controller_fields_are_errors() -> None:
    with pytest.raises(ConfigError) as raised:
        parse_config(HEADER + "controller: {groupKindConcurency: {}}\n", source="x")
    assert raised.value.lines() == ['x: controller.groupKindConcurency: unknown field "groupKindConcurency"']
