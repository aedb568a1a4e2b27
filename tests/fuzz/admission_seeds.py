"""The webhook every fuzz caller attacks, and the well-formed AdmissionReviews mutations start from.

``fuzz_handler()`` serves every built-in framework (batch Job, JobSet, AppWrapper, PipelineRun) and a
declarative ``SampleJob``, with ``manageJobsWithoutQueueName`` and a namespace selector on, and
lookups holding a default LocalQueue, a default WorkloadPriorityClass, a MultiKueue-checked queue
and an owner JobSet, so defaulting and validation reach every rule. It is a module-level function
so a spawned server process (``bench.harness.webhook_server.webhook_process``) can build it by name.

``seed_reviews()``: CREATE, UPDATE (suspended -> running) and DELETE of a batch Job, an elastic and
admission-gated Job, a Job owned by that JobSet, a JobSet, an AppWrapper, a PipelineRun and a
SampleJob, built in code (nothing outside the repository needed). Every seed is admitted unchanged
or patched, never denied (``tests/unit/webhook/test_admission_fuzz.py`` checks it), so a denial in a
fuzz run always comes from a mutation.
"""

from __future__ import annotations

import copy
from typing import Any, Final

from shared.config import parse_config
from shared.constants import ADMISSION_GATED_BY_ANNOTATION, ELASTIC_JOB_ANNOTATION, QUEUE_LABEL
from webhook.rules.lookups import InMemoryLookups
from webhook.serving.admission_review import AdmissionHandler
from webhook.serving.metrics import WebhookMetrics
from webhook.settings_from_config import settings_from_config

__all__ = ["FUZZ_CONFIG", "fuzz_handler", "seed_reviews"]

#: the configuration of the fuzzed webhook: every built-in framework and a declarative kind
FUZZ_CONFIG: Final = """
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
manageJobsWithoutQueueName: true
managedJobsNamespaceSelector:
  matchExpressions:
  - {key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system, kueue-system]}
integrations:
  frameworks: [batch/job, jobset.x-k8s.io/jobset, workload.codeflare.dev/appwrapper, tekton.dev/pipelinerun]
  externalFrameworks:
  - name: SampleJob.v1alpha1.samples.kueue-bridge.dev
    resource: samplejobs
    adapter:
      suspend: {path: spec.suspend}
      managedBy: {path: spec.managedBy}
      podSets:
      - name: main
        template: spec.template
        count: {path: spec.replicas, default: 1}
      finished: "has(object.status) && has(object.status.phase)"
"""

_NAMESPACE: Final = "ns"
_OWNER: Final = {
    "apiVersion": "jobset.x-k8s.io/v1alpha2",
    "kind": "JobSet",
    "metadata": {"name": "owner", "namespace": _NAMESPACE, "uid": "owner-uid", "labels": {QUEUE_LABEL: "q"}},
    "spec": {"suspend": True, "replicatedJobs": []},
}


def fuzz_handler() -> AdmissionHandler:
    """The webhook under fuzz (module level, so a spawned server process can build it by name)."""
    lookups = InMemoryLookups(
        namespaces={_NAMESPACE: {"kubernetes.io/metadata.name": _NAMESPACE}, "kube-system": {}},
        local_queues={(_NAMESPACE, "default"): "cq", (_NAMESPACE, "q"): "cq", (_NAMESPACE, "mk"): "mk-cq"},
        cluster_queue_checks={"mk-cq": ["multikueue"]},
        admission_checks={"multikueue": "kueue.x-k8s.io/multikueue"},
        priority_classes={"default"},
    )
    lookups.put_owner(copy.deepcopy(_OWNER))
    settings = settings_from_config(parse_config(FUZZ_CONFIG, source="fuzz"))
    return AdmissionHandler(settings=settings, lookups=lookups, metrics=WebhookMetrics())


def _pod_template(name: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": name}},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": name, "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
        },
    }


def _metadata(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": _NAMESPACE,
        "uid": f"{name}-uid",
        "labels": {QUEUE_LABEL: "q", "app": name},
        "annotations": {"note": "seed"},
    }


def _seed_objects() -> list[tuple[tuple[str, str, str], dict[str, Any]]]:
    job: dict[str, Any] = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _metadata("job"),
        "spec": {"parallelism": 2, "completions": 4, "suspend": False, "template": _pod_template("job")},
    }
    elastic = copy.deepcopy(job)
    elastic["metadata"]["annotations"] = {
        ELASTIC_JOB_ANNOTATION: "true",
        ADMISSION_GATED_BY_ANNOTATION: "a.io/b",
    }
    owned = copy.deepcopy(job)
    owned["metadata"]["ownerReferences"] = [
        {
            "apiVersion": "jobset.x-k8s.io/v1alpha2",
            "kind": "JobSet",
            "name": "owner",
            "uid": "owner-uid",
            "controller": True,
        }
    ]
    jobset = copy.deepcopy(_OWNER)
    jobset["metadata"] = _metadata("jobset")
    jobset["spec"] = {
        "managedBy": "jobset.sigs.k8s.io/jobset-controller",
        "replicatedJobs": [
            {
                "name": "workers",
                "replicas": 2,
                "template": {"spec": {"parallelism": 2, "template": _pod_template("w")}},
            }
        ],
    }
    appwrapper = {
        "apiVersion": "workload.codeflare.dev/v1beta2",
        "kind": "AppWrapper",
        "metadata": _metadata("aw"),
        "spec": {"suspend": True, "components": [{"template": copy.deepcopy(job)}]},
    }
    pipelinerun = {
        "apiVersion": "tekton.dev/v1",
        "kind": "PipelineRun",
        "metadata": _metadata("build") | {"labels": {"app": "build"}},
        "spec": {"pipelineRef": {"name": "p"}},
    }
    samplejob = {
        "apiVersion": "samples.kueue-bridge.dev/v1alpha1",
        "kind": "SampleJob",
        "metadata": _metadata("sample") | {"labels": {QUEUE_LABEL: "mk"}},
        "spec": {"replicas": 2, "template": _pod_template("sample")},
    }
    return [
        (("batch", "v1", "Job"), job),
        (("batch", "v1", "Job"), elastic),
        (("batch", "v1", "Job"), owned),
        (("jobset.x-k8s.io", "v1alpha2", "JobSet"), jobset),
        (("workload.codeflare.dev", "v1beta2", "AppWrapper"), appwrapper),
        (("tekton.dev", "v1", "PipelineRun"), pipelinerun),
        (("samples.kueue-bridge.dev", "v1alpha1", "SampleJob"), samplejob),
    ]


def _envelope(kind: tuple[str, str, str], operation: str, obj: Any, old: Any) -> dict[str, Any]:
    group, version, name = kind
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "0b1d6a3c-5c2e-4d7e-9a57-2f1e0c9d8b7a",
            "kind": {"group": group, "version": version, "kind": name},
            "resource": {"group": group, "version": version, "resource": name.lower() + "s"},
            "namespace": _NAMESPACE,
            "operation": operation,
            "userInfo": {"username": "fuzz"},
            "object": obj,
            "oldObject": old,
            "dryRun": False,
        },
    }


def seed_reviews() -> list[dict[str, Any]]:
    """Well-formed AdmissionReviews: CREATE, UPDATE (suspended -> running) and DELETE of every seed."""
    seeds: list[dict[str, Any]] = []
    for kind, obj in _seed_objects():
        old = copy.deepcopy(obj)
        old.setdefault("spec", {})["suspend"] = True
        seeds.append(_envelope(kind, "CREATE", obj, None))
        seeds.append(_envelope(kind, "UPDATE", copy.deepcopy(obj), old))
        seeds.append(_envelope(kind, "DELETE", None, copy.deepcopy(obj)))
    return seeds
