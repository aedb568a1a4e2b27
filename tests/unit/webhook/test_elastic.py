"""Elastic batch Jobs at admission: Kueue's rules, and all of them switched off with the feature gate.

``workloadslicing.Enabled`` is false for every job while ``ElasticJobsViaWorkloadSlices`` is off,
so then the annotation neither gates the template nor triggers any elastic rule.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any

import pytest

from shared.config import parse_config
from shared.frameworks.batch_job import BatchJobAdapter
from tests.unit.webhook.helpers import BATCH_JOB, apply, job, response, review
from webhook.rules.fielderrors import to_aggregate
from webhook.rules.lookups import InMemoryLookups
from webhook.rules.settings import Framework, WebhookSettings
from webhook.rules.validation import validate_create, validate_update
from webhook.serving.admission_review import AdmissionHandler
from webhook.serving.metrics import WebhookMetrics
from webhook.settings_from_config import frameworks_from_config

ELASTIC = "kueue.x-k8s.io/elastic-job"
ELASTIC_PATH = f"metadata.annotations[{ELASTIC}]"
GATE_OFF = dataclasses.replace(
    BATCH_JOB, adapter=functools.partial(BatchJobAdapter, elastic_jobs=False), elastic_jobs=False
)


def elastic(obj: dict[str, Any], value: str = "true") -> dict[str, Any]:
    obj.setdefault("metadata", {}).setdefault("annotations", {})[ELASTIC] = value
    return obj


def create(obj: dict[str, Any], framework: Framework = BATCH_JOB) -> str | None:
    return to_aggregate(validate_create(framework.adapter(obj), framework=framework))


def update(old: dict[str, Any], new: dict[str, Any], framework: Framework = BATCH_JOB) -> str | None:
    errors = validate_update(
        framework.adapter(old), framework.adapter(new), framework=framework, lookups=InMemoryLookups()
    )
    return to_aggregate(errors)


def test_elastic_enablement_cannot_flip() -> None:
    running = job(suspend=False)
    assert (
        update(running, elastic(job(suspend=False)))
        == f"{ELASTIC_PATH}: Invalid value: true: field is immutable"
    )
    assert update(elastic(job(suspend=True)), job(suspend=True)) == (
        f"{ELASTIC_PATH}: Invalid value: false: field is immutable"
    )
    assert update(elastic(job(suspend=False)), elastic(job(suspend=False), "yes")) == (
        f"{ELASTIC_PATH}: Invalid value: false: field is immutable"
    )


def test_a_running_elastic_job_may_change_its_parallelism() -> None:
    old = elastic(job(suspend=False, parallelism=2, completions=8))
    assert update(old, elastic(job(suspend=False, parallelism=5, completions=8))) is None
    assert update(old, elastic(job(suspend=False, parallelism=1, completions=8))) is None


def test_a_running_elastic_job_may_change_its_prebuilt_workload() -> None:
    """``validateUpdateForPrebuiltWorkload``: an elastic job gets the create checks, not immutability."""
    old = elastic(job(suspend=False, labels={"kueue.x-k8s.io/prebuilt-workload-name": "a"}))
    new = elastic(job(suspend=False, labels={"kueue.x-k8s.io/prebuilt-workload-name": "b"}))
    assert update(old, new) is None
    plain_old, plain_new = (
        job(suspend=False, labels=old["metadata"]["labels"]),
        job(suspend=False, labels=new["metadata"]["labels"]),
    )
    assert update(plain_old, plain_new) == (
        'metadata.labels[kueue.x-k8s.io/prebuilt-workload-name]: Invalid value: "b": field is immutable'
    )


@pytest.mark.parametrize(
    ("annotation", "message"),
    [
        ("kueue.x-k8s.io/podset-required-topology", "required topology is not supported with elastic jobs"),
        ("kueue.x-k8s.io/podset-preferred-topology", "preferred topology is not supported with elastic jobs"),
    ],
)
def test_an_elastic_job_may_not_ask_for_required_or_preferred_topology(annotation: str, message: str) -> None:
    obj = elastic(job())
    obj["spec"]["template"]["metadata"] = {"annotations": {annotation: "cloud.provider.com/rack"}}
    expected = f"spec.template.metadata.annotations[{annotation}]: Forbidden: {message}"
    assert create(obj) == expected
    assert update(obj, obj) == expected
    plain = job()
    plain["spec"]["template"]["metadata"] = obj["spec"]["template"]["metadata"]
    assert create(plain) is None
    assert create(obj, GATE_OFF) is None


def test_required_topology_is_reported_before_preferred_only_once() -> None:
    obj = elastic(job())
    obj["spec"]["template"]["metadata"] = {
        "annotations": {
            "kueue.x-k8s.io/podset-preferred-topology": "rack",
            "kueue.x-k8s.io/podset-required-topology": "rack",
        }
    }
    assert create(obj) == (
        "spec.template.metadata.annotations[kueue.x-k8s.io/podset-required-topology]: Forbidden: "
        "required topology is not supported with elastic jobs"
    )


def test_unconstrained_topology_is_fine_for_an_elastic_job() -> None:
    obj = elastic(job())
    obj["spec"]["template"]["metadata"] = {
        "annotations": {"kueue.x-k8s.io/podset-unconstrained-topology": "true"}
    }
    assert create(obj) is None


def test_the_gate_off_turns_every_elastic_rule_off() -> None:
    partial = elastic(job(parallelism=3, completions=3))
    partial["metadata"]["annotations"]["kueue.x-k8s.io/job-min-parallelism"] = "2"
    assert create(partial) == (
        "metadata.annotations[kueue.x-k8s.io/job-min-parallelism]: Invalid value: "
        '"2": partial admission and elastic job cannot be used together'
    )
    assert create(partial, GATE_OFF) is None
    assert update(job(suspend=False), elastic(job(suspend=False)), GATE_OFF) is None
    other_kind = dataclasses.replace(GATE_OFF, gvk=BATCH_JOB.gvk.__class__("example.com", "v1", "X"))
    assert create(elastic(job()), other_kind) is None


def mutate(obj: dict[str, Any], framework: Framework) -> dict[str, Any]:
    admission = AdmissionHandler(
        settings=WebhookSettings(frameworks=(framework,)), lookups=InMemoryLookups(), metrics=WebhookMetrics()
    )
    status, payload = admission.mutate(review(obj))
    assert status == 200
    return apply(obj, response(payload))


def test_the_gate_off_adds_no_scheduling_gate() -> None:
    obj = elastic(job(labels={"kueue.x-k8s.io/queue-name": "q"}))
    assert mutate(obj, BATCH_JOB)["spec"]["template"]["spec"]["schedulingGates"] == [
        {"name": "kueue.x-k8s.io/elastic-job"}
    ]
    assert "schedulingGates" not in mutate(obj, GATE_OFF)["spec"]["template"]["spec"]


@pytest.mark.parametrize("gate", [None, True, False])
def test_the_webhook_reads_the_gate_from_feature_gates(gate: bool | None) -> None:
    text = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
    if gate is not None:
        text += f"featureGates:\n  ElasticJobsViaWorkloadSlices: {str(gate).lower()}\n"
    config = parse_config(text, source="config.yaml")
    expected = True if gate is None else gate
    (framework,) = frameworks_from_config(config)
    assert framework.elastic_jobs is expected
    partial = elastic(job(parallelism=3, completions=3))
    partial["metadata"]["annotations"]["kueue.x-k8s.io/job-min-parallelism"] = "2"
    assert (create(partial, framework) is None) is not expected
