"""Kueue's validation rules with its exact paths and messages (reference §3.2-3.4)."""

from __future__ import annotations

from typing import Any

from shared.constants import (
    MAX_EXEC_TIME_SECONDS_LABEL,
    PREBUILT_WORKLOAD_LABEL,
    QUEUE_LABEL,
    WORKLOAD_PRIORITY_CLASS_LABEL,
)
from shared.frameworks.base import FieldError
from tests.unit.webhook.helpers import BATCH_JOB, job
from webhook.rules.fielderrors import format_field_error, go_quote, to_aggregate
from webhook.rules.lookups import InMemoryLookups
from webhook.rules.settings import Framework
from webhook.rules.validation import validate_create, validate_update

Q = f"metadata.labels[{QUEUE_LABEL}]"


def create(obj: dict[str, Any], framework: Framework = BATCH_JOB) -> str | None:
    return to_aggregate(validate_create(framework.adapter(obj), framework=framework))


def update(old: dict[str, Any], new: dict[str, Any], lookups: InMemoryLookups | None = None) -> str | None:
    errors = validate_update(
        BATCH_JOB.adapter(old),
        BATCH_JOB.adapter(new),
        framework=BATCH_JOB,
        lookups=lookups or InMemoryLookups(),
    )
    return to_aggregate(errors)


def test_field_error_rendering_matches_apimachinery() -> None:
    assert (
        format_field_error(FieldError("a.b", "Invalid value", "bad", "x")) == 'a.b: Invalid value: "x": bad'
    )
    assert format_field_error(FieldError("a", "Invalid value", "d", None)) == "a: Invalid value: null: d"
    assert format_field_error(FieldError("a", "Invalid value", "d", 3)) == "a: Invalid value: 3: d"
    assert format_field_error(FieldError("a", "Forbidden", "no", "ignored")) == "a: Forbidden: no"
    assert go_quote('a"b\n\x01é') == '"a\\"b\\n\\x01é"'
    e = FieldError("a", "Forbidden", "x")
    assert to_aggregate([e, e]) == "a: Forbidden: x"
    assert to_aggregate([e, FieldError("b", "Forbidden", "y")]) == "[a: Forbidden: x, b: Forbidden: y]"
    assert to_aggregate([]) is None


def test_valid_job_passes() -> None:
    assert create(job(labels={QUEUE_LABEL: "q"})) is None


def test_queue_name_must_be_a_subdomain() -> None:
    assert create(job(labels={QUEUE_LABEL: "Bad_Q"})) == (
        f'{Q}: Invalid value: "Bad_Q": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric '
        "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
        "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    )


def test_max_exec_time_rules() -> None:
    path = f"metadata.labels[{MAX_EXEC_TIME_SECONDS_LABEL}]"
    assert (
        create(job(labels={MAX_EXEC_TIME_SECONDS_LABEL: "abc"}))
        == f'{path}: Invalid value: "abc": strconv.Atoi: parsing "abc": invalid syntax'
    )
    assert (
        create(job(labels={MAX_EXEC_TIME_SECONDS_LABEL: "0"}))
        == f"{path}: Invalid value: 0: should be greater than 0"
    )
    assert create(job(labels={MAX_EXEC_TIME_SECONDS_LABEL: "10"})) is None


def test_prebuilt_workload_name_rules() -> None:
    obj = job()
    obj["metadata"]["annotations"] = {PREBUILT_WORKLOAD_LABEL: "Not_Valid"}
    assert (create(obj) or "").startswith(
        f'metadata.annotations[{PREBUILT_WORKLOAD_LABEL}]: Invalid value: "Not_Valid": a lowercase RFC 1123 subdomain'
    )
    other = Framework(
        name="X.v1.example.com",
        gvk=BATCH_JOB.gvk.__class__("example.com", "v1", "X"),
        plural="xs",
        adapter=BATCH_JOB.adapter,
    )
    obj = job(labels={PREBUILT_WORKLOAD_LABEL: "wl"})
    assert (
        create(obj, other)
        == f'metadata.labels[{PREBUILT_WORKLOAD_LABEL}]: Forbidden: Is not supported for "example.com/v1, Kind=X"'
    )


def test_elastic_annotation_only_for_supported_kinds() -> None:
    other = Framework(
        name="X.v1.example.com",
        gvk=BATCH_JOB.gvk.__class__("example.com", "v1", "X"),
        plural="xs",
        adapter=BATCH_JOB.adapter,
    )
    obj = job()
    obj["metadata"]["annotations"] = {"kueue.x-k8s.io/elastic-job": "true"}
    assert (
        create(obj, other)
        == 'metadata.annotations[kueue.x-k8s.io/elastic-job]: Forbidden: elastic job is not supported for "example.com/v1, Kind=X"'
    )
    assert create(obj) is None


def test_batch_job_extras_from_the_adapter() -> None:
    obj = job(parallelism=3, completions=3)
    obj["metadata"]["annotations"] = {"kueue.x-k8s.io/job-min-parallelism": "5"}
    assert (
        create(obj)
        == "metadata.annotations[kueue.x-k8s.io/job-min-parallelism]: Invalid value: 5: should be between 0 and 2"
    )
    obj = job(parallelism=2, completions=3, completionMode="Indexed")
    obj["metadata"]["annotations"] = {"kueue.x-k8s.io/job-completions-equal-parallelism": "true"}
    assert (
        create(obj)
        == "spec.completions: Invalid value: 3: should be equal to parallelism when kueue.x-k8s.io/job-completions-equal-parallelism annotation is true"
    )


def test_queue_name_immutable_while_running() -> None:
    old, new = job(labels={QUEUE_LABEL: "a"}, suspend=False), job(labels={QUEUE_LABEL: "b"}, suspend=False)
    assert update(old, new) == f'{Q}: Invalid value: "b": field is immutable'
    assert (
        update(job(labels={QUEUE_LABEL: "a"}, suspend=True), job(labels={QUEUE_LABEL: "b"}, suspend=True))
        is None
    )


def test_queue_name_not_removable_with_default_queue() -> None:
    lookups = InMemoryLookups(local_queues={("ns", "default"): "cq"})
    old, new = job(labels={QUEUE_LABEL: "a"}, suspend=True), job(labels={}, suspend=True)
    assert (
        update(old, new, lookups)
        == f'{Q}: Invalid value: "": queue-name must not be empty in namespace with default queue'
    )
    assert update(old, new) is None


def test_max_exec_time_immutable_unless_both_suspended() -> None:
    path = f"metadata.labels[{MAX_EXEC_TIME_SECONDS_LABEL}]"
    old = job(labels={MAX_EXEC_TIME_SECONDS_LABEL: "10"}, suspend=True)
    new = job(labels={MAX_EXEC_TIME_SECONDS_LABEL: "20"}, suspend=False)
    assert update(old, new) == f'{path}: Invalid value: "20": field is immutable'
    new["spec"]["suspend"] = True
    assert update(old, new) is None


def test_priority_class_label_rules() -> None:
    path = f"metadata.labels[{WORKLOAD_PRIORITY_CLASS_LABEL}]"
    assert update(
        job(labels={}, suspend=False), job(labels={WORKLOAD_PRIORITY_CLASS_LABEL: "p"}, suspend=False)
    ) == (f'{path}: Invalid value: "p": WorkloadPriorityClass cannot be added to a non-suspended workload')
    assert update(
        job(labels={WORKLOAD_PRIORITY_CLASS_LABEL: "p"}, suspend=True), job(labels={}, suspend=True)
    ) == (f'{path}: Invalid value: "": WorkloadPriorityClass cannot be removed from a workload')
    assert (
        update(
            job(labels={WORKLOAD_PRIORITY_CLASS_LABEL: "p"}), job(labels={WORKLOAD_PRIORITY_CLASS_LABEL: "q"})
        )
        is None
    )


def test_managed_by_immutable() -> None:
    assert update(job(suspend=True), job(suspend=True, managedBy="kueue.x-k8s.io/multikueue")) == (
        'spec.managedBy: Invalid value: "kueue.x-k8s.io/multikueue": field is immutable'
    )
    assert update(job(managedBy="x"), job()) == "spec.managedBy: Invalid value: null: field is immutable"


def test_several_errors_are_aggregated_in_brackets() -> None:
    old = job(labels={QUEUE_LABEL: "a", MAX_EXEC_TIME_SECONDS_LABEL: "1"})
    new = job(labels={QUEUE_LABEL: "b", MAX_EXEC_TIME_SECONDS_LABEL: "2"})
    assert update(old, new) == (
        f'[{Q}: Invalid value: "b": field is immutable, '
        f'metadata.labels[{MAX_EXEC_TIME_SECONDS_LABEL}]: Invalid value: "2": field is immutable]'
    )


def test_kinds_kueue_knows_only_as_external_frameworks_accept_a_prebuilt_workload() -> None:
    """A MultiKueue worker's webhook admits the copies kueue-bridge's MultiKueue creates there.

    Kueue's ``supportedPrebuiltWlJobGVKs`` is a rule of Kueue's own integrations; a declarative kind
    or a PipelineRun has no such rule in Kueue, and kueue-bridge's copy on a worker carries the
    prebuilt-workload name (found by ``make dev-multicluster``: every SampleJob copy was denied).
    """
    from shared.config import parse_config
    from webhook.settings_from_config import frameworks_from_config

    config = parse_config(
        """apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
integrations:
  frameworks: [batch/job, tekton.dev/pipelinerun]
  externalFrameworks:
  - name: Widget.v1.example.com
    resource: widgets
    adapter:
      suspend: {path: spec.suspend}
      podSets: [{name: main, template: spec.template}]
      finished: "false"
""",
        source="t",
    )
    frameworks = {framework.gvk.kind: framework for framework in frameworks_from_config(config)}
    assert set(frameworks) == {"Job", "PipelineRun", "Widget"}
    for kind in ("Widget", "PipelineRun"):
        obj: dict[str, Any] = {
            "apiVersion": frameworks[kind].gvk.api_version,
            "kind": kind,
            "metadata": {
                "name": "copy",
                "namespace": "team",
                "labels": {QUEUE_LABEL: "q"},
                "annotations": {PREBUILT_WORKLOAD_LABEL: "widget-copy-1a2b3"},
            },
            "spec": {"suspend": True, "template": {"spec": {"containers": [{"name": "c"}]}}},
        }
        assert create(obj, frameworks[kind]) is None, kind
        obj["metadata"]["annotations"] = {PREBUILT_WORKLOAD_LABEL: "Not_Valid"}
        assert (create(obj, frameworks[kind]) or "").startswith(
            f'metadata.annotations[{PREBUILT_WORKLOAD_LABEL}]: Invalid value: "Not_Valid"'
        ), kind
    assert frameworks["Job"].supports_prebuilt_workload
    assert not frameworks["Job"].external_prebuilt_workloads  # Kueue's list decides for its own kinds
