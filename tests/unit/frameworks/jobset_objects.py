"""A JobSet object and the declarative spec that describes JobSet, shared by several test modules."""

from __future__ import annotations

import copy
from typing import Any

import yaml

from shared.frameworks.spec import DeclarativeAdapterSpec
from shared.kube import GroupVersionKind

__all__ = ["JOBSET_DECLARATIVE_SPEC", "JOBSET_LIKE_GVK", "make_jobset"]

JOBSET_LIKE_GVK = GroupVersionKind("jobset.x-k8s.io", "v1alpha2", "JobSet")

_PARALLELISM = "(has(element.template.spec.parallelism) ? element.template.spec.parallelism : 1)"
_COMPLETIONS = (
    f"(has(element.template.spec.completions) ? element.template.spec.completions : {_PARALLELISM})"
)
_POD_COUNT = f"(has(element.replicas) ? element.replicas : 1) * ({_COMPLETIONS} < {_PARALLELISM} ? {_COMPLETIONS} : {_PARALLELISM})"

JOBSET_DECLARATIVE_SPEC = DeclarativeAdapterSpec.model_validate(
    yaml.safe_load(
        f"""
suspend: {{path: spec.suspend}}
managedBy: {{path: spec.managedBy, controllerName: jobset.sigs.k8s.io/jobset-controller}}
podSets:
- forEach: spec.replicatedJobs
  name: {{path: name}}
  template: template.spec.template
  count: {{expression: "{_POD_COUNT}"}}
  topologyRequest:
    podIndexLabel: batch.kubernetes.io/job-completion-index
    subGroupIndexLabel: jobset.sigs.k8s.io/job-index
    subGroupCount: {{path: replicas, default: 1}}
finished: >-
  has(object.status) && has(object.status.conditions) &&
  object.status.conditions.exists(c, c.type in ['Completed', 'Failed'] && c.status == 'True')
succeeded: "object.status.conditions.exists(c, c.type == 'Completed' && c.status == 'True')"
message: >-
  object.status.conditions.filter(c, c.type in ['Completed', 'Failed'] && c.status == 'True')[0].message
active: >-
  has(object.status) && has(object.status.replicatedJobsStatus) &&
  object.status.replicatedJobsStatus.exists(s, has(s.active) && s.active > 0)
"""
    )
)


def _job(
    name: str, *, replicas: int | None, parallelism: int | None, completions: int | None
) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "template": {
            "metadata": {"labels": {"role": name}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": name, "image": "busybox"}]},
        }
    }
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is not None:
        spec["completions"] = completions
    job: dict[str, Any] = {"name": name, "template": {"spec": spec}}
    if replicas is not None:
        job["replicas"] = replicas
    return job


def make_jobset(*, status: dict[str, Any] | None = None) -> dict[str, Any]:
    jobset: dict[str, Any] = {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {"name": "train", "namespace": "ns"},
        "spec": {
            "suspend": True,
            "replicatedJobs": [
                _job("driver", replicas=None, parallelism=None, completions=None),
                _job("workers", replicas=3, parallelism=4, completions=2),
                _job("ps", replicas=2, parallelism=2, completions=None),
            ],
        },
    }
    jobset["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["metadata"]["annotations"] = {
        "kueue.x-k8s.io/podset-required-topology": "cloud.com/rack"
    }
    if status is not None:
        jobset["status"] = copy.deepcopy(status)
    return jobset
