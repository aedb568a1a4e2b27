"""Helpers shared by the Kueue-logic tests (not fixtures: plain functions and data)."""

from __future__ import annotations

import copy
from typing import Any

from shared.constants import BATCH_JOB_COMPLETION_INDEX_ANNOTATION, BATCH_JOB_MANAGED_LABELS
from shared.kube import GroupVersionKind
from shared.models.workload import PodSet

__all__ = ["BATCH_JOB_GVK", "SPOT_FLAVOR", "batch_job_pod_sets"]

BATCH_JOB_GVK = GroupVersionKind("batch", "v1", "Job")

SPOT_FLAVOR = {
    "golden-spot": (
        {"instance-type": "spot"},
        [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
    )
}
"""``setup.yaml``'s ResourceFlavor as flavor data (kept literal so a test also checks setup.yaml)."""


def batch_job_pod_sets(job: dict[str, Any]) -> list[PodSet]:
    """What Kueue's batch Job integration returns from ``PodSets`` (TAS gate on), for tests."""
    template = copy.deepcopy(job["spec"]["template"])
    labels = template.get("metadata", {}).get("labels", {})
    for label in BATCH_JOB_MANAGED_LABELS:
        if label != "batch.kubernetes.io/job-name":
            labels.pop(label, None)
    spec = job["spec"]
    parallelism = spec.get("parallelism", 1)
    completions = spec.get("completions", parallelism)
    return [
        PodSet(
            name="main",
            template=template,
            count=min(parallelism, completions),
            topology_request={"podIndexLabel": BATCH_JOB_COMPLETION_INDEX_ANNOTATION},
        )
    ]
