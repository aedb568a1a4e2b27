"""Stand-ins for the JobSet and Tekton controllers of a MultiKueue worker, for end-to-end tests.

A devcluster runs no JobSet or Tekton controller, so a test plays that controller on the worker
that runs the copy: once kueue-bridge's reconciler there has started the copy, the test writes the
status the real controller would write, through the status subresource, as that controller does.

The statuses are the real controllers' own (texts exactly theirs, so Kueue's ``Finished`` logic and
our adapters see what they would see on a real worker):

* **JobSet** (kubernetes-sigs/jobset ``pkg/controllers/jobset_controller.go``, ``pkg/constants``):
  on resume ``Suspended=False`` ``ResumeJobs`` "jobset is resumed" and one ``replicatedJobsStatus``
  entry per replicated job; on success ``Completed=True`` ``AllJobsCompleted`` "jobset completed
  successfully" and ``terminalState: Completed``. Kueue's ``JobSet.Finished`` reads the
  ``Completed``/``Failed`` conditions, not ``terminalState``.
* **PipelineRun** (tektoncd/pipeline ``pkg/reconciler/pipelinerun``, knative conditions): while
  running ``Succeeded=Unknown`` ``Running`` "Tasks Completed: 0 (Failed: 0, Cancelled 0),
  Incomplete: 1, Skipped: 0" with ``startTime``; when done ``Succeeded=True`` ``Succeeded`` "Tasks
  Completed: 1 (Failed: 0, Cancelled 0), Skipped: 0" with ``completionTime``.

AppWrapper needs no stand-in: kueue-bridge's own ``appwrapper`` component is the AppWrapper
controller, and the test runs it on every cluster (a real worker runs the AppWrapper operator).
"""

from __future__ import annotations

from typing import Any, Final

from shared.kube import GroupVersionKind, KubeClient

__all__ = [
    "APPWRAPPER",
    "JOBSET",
    "PIPELINERUN",
    "jobset_completed",
    "jobset_running",
    "pipelinerun_running",
    "pipelinerun_succeeded",
    "write_status",
]

JOBSET: Final = GroupVersionKind("jobset.x-k8s.io", "v1alpha2", "JobSet")
APPWRAPPER: Final = GroupVersionKind("workload.codeflare.dev", "v1beta2", "AppWrapper")
PIPELINERUN: Final = GroupVersionKind("tekton.dev", "v1", "PipelineRun")


def _condition(condition_type: str, status: str, reason: str, message: str, at: str) -> dict[str, Any]:
    return {
        "type": condition_type,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": at,
    }


def _replicated_status(name: str, *, active: int, succeeded: int) -> dict[str, Any]:
    return {
        "name": name,
        "ready": active,
        "succeeded": succeeded,
        "failed": 0,
        "active": active,
        "suspended": 0,
    }


def jobset_running(replicated_job: str, *, replicas: int, at: str) -> dict[str, Any]:
    """What the JobSet controller writes once it has resumed the jobs of one replicated job."""
    return {
        "conditions": [_condition("Suspended", "False", "ResumeJobs", "jobset is resumed", at)],
        "replicatedJobsStatus": [_replicated_status(replicated_job, active=replicas, succeeded=0)],
    }


def jobset_completed(replicated_job: str, *, replicas: int, at: str) -> dict[str, Any]:
    """What it writes when every job succeeded (success policy ``All``, the default)."""
    return {
        "conditions": [
            _condition("Suspended", "False", "ResumeJobs", "jobset is resumed", at),
            _condition("Completed", "True", "AllJobsCompleted", "jobset completed successfully", at),
        ],
        "replicatedJobsStatus": [_replicated_status(replicated_job, active=0, succeeded=replicas)],
        "terminalState": "Completed",
    }


def pipelinerun_running(*, started: str) -> dict[str, Any]:
    """Tekton's status of a one-task PipelineRun whose TaskRun runs."""
    message = "Tasks Completed: 0 (Failed: 0, Cancelled 0), Incomplete: 1, Skipped: 0"
    return {
        "conditions": [_condition("Succeeded", "Unknown", "Running", message, started)],
        "startTime": started,
    }


def pipelinerun_succeeded(*, started: str, completed: str) -> dict[str, Any]:
    """Tekton's status once that task succeeded."""
    message = "Tasks Completed: 1 (Failed: 0, Cancelled 0), Skipped: 0"
    return {
        "conditions": [_condition("Succeeded", "True", "Succeeded", message, completed)],
        "startTime": started,
        "completionTime": completed,
    }


async def write_status(
    client: KubeClient, gvk: GroupVersionKind, name: str, *, namespace: str, status: dict[str, Any]
) -> dict[str, Any]:
    """Replace the object's status through its status subresource, as the kind's controller does
    (a merge patch: no resourceVersion to race with the reconciler writing the object's spec)."""
    current = await client.get(gvk, name, namespace=namespace)
    patch: dict[str, Any] = {
        "status": {key: None for key in current.get("status") or {} if key not in status}
    }
    patch["status"].update(status)
    written: dict[str, Any] = await client.patch_status(gvk, name, patch, namespace=namespace)
    return written
