"""What the real-cluster end-to-end tests share: kinds, queues, jobs as a job controller would finish them.

The real cluster has no kube-controller-manager and no kubelet: nothing runs a Pod, nothing writes a
Job's status. The tests write it the way the job controller of Kubernetes 1.36 would
(:func:`job_succeeded_status`, :func:`job_failed_status`, :func:`job_running_status`), so real
Kueue and kueue-bridge see exactly what they would see on a full cluster.

Every test has its own namespace and its own ClusterQueue (:func:`apply_queues` names it after the
namespace and selects only that namespace), so tests never compete for quota, whichever order they
run in and whatever an earlier test left behind.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Final

from shared.constants import QUEUE_LABEL
from shared.kube import GroupVersionKind, KubeClient

__all__ = [
    "CLUSTER_QUEUE",
    "EVENT",
    "FLAVOR",
    "JOB",
    "JOB_FAILED_MESSAGE",
    "JOB_SUCCEEDED_MESSAGE",
    "LOCAL_QUEUE",
    "PRIORITY_CLASS",
    "WORKLOAD",
    "apply_queues",
    "batch_job",
    "condition",
    "events_for",
    "job_failed_status",
    "job_running_status",
    "job_succeeded_status",
    "now_rfc3339",
    "owned_workload",
    "pod_template",
    "waiting_for_quota_reason",
]

JOB: Final = GroupVersionKind("batch", "v1", "Job")
WORKLOAD: Final = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "Workload")
FLAVOR: Final = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "ResourceFlavor")
CLUSTER_QUEUE: Final = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "ClusterQueue")
LOCAL_QUEUE: Final = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "LocalQueue")
PRIORITY_CLASS: Final = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "WorkloadPriorityClass")
EVENT: Final = GroupVersionKind("", "v1", "Event")
_MANAGER: Final = "e2e-test"
#: the messages of the job controller's ``Complete`` and ``Failed`` conditions (Kubernetes 1.36)
JOB_SUCCEEDED_MESSAGE: Final = "Reached expected number of succeeded pods"
JOB_FAILED_MESSAGE: Final = "Job has reached the specified backoff limit"


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def waiting_for_quota_reason(kueue_version: str) -> str:
    """``QuotaReserved=False``'s reason for a Workload that fits its quota but not the unused part.

    Kueue's UnadmittedWorkloadsObservability gate (``WaitingForQuota``, ``ExceedsMaxQuota``, ...) is
    beta in both versions, but on by default only at ff69552; v0.19.2 writes its fallback ``Pending``
    (with the same message, and a Warning event with that reason).
    """
    return "Pending" if kueue_version == "v0.19.2" else "WaitingForQuota"


def condition(obj: Mapping[str, Any] | None, kind: str) -> dict[str, Any] | None:
    """The condition ``kind`` of ``obj``'s status, or ``None``."""
    for entry in ((obj or {}).get("status") or {}).get("conditions") or []:
        if entry.get("type") == kind:
            return dict(entry)
    return None


async def apply_queues(
    client: KubeClient,
    namespace: str,
    *,
    cpu: str = "4",
    flavor: Mapping[str, Any] | None = None,
    preemption: Mapping[str, Any] | None = None,
    local_queue: str = "q",
) -> str:
    """A ResourceFlavor, a ClusterQueue for ``namespace`` only and its LocalQueue; the CQ's name.

    ``flavor`` is the flavor's ``spec`` (node labels, tolerations); the flavor is then named after
    the namespace too, so no other test sees it. Without it the shared ``default-flavor`` is used.
    """
    flavor_name = f"flavor-{namespace}" if flavor is not None else "default-flavor"
    await client.apply(
        FLAVOR,
        {"metadata": {"name": flavor_name}, "spec": dict(flavor or {})},
        field_manager=_MANAGER,
        force=True,
    )
    name = f"cq-{namespace}"
    spec: dict[str, Any] = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": namespace}},
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [{"name": flavor_name, "resources": [{"name": "cpu", "nominalQuota": cpu}]}],
            }
        ],
    }
    if preemption is not None:
        spec["preemption"] = dict(preemption)
    await client.apply(
        CLUSTER_QUEUE, {"metadata": {"name": name}, "spec": spec}, field_manager=_MANAGER, force=True
    )
    await client.apply(
        LOCAL_QUEUE,
        {"metadata": {"name": local_queue, "namespace": namespace}, "spec": {"clusterQueue": name}},
        field_manager=_MANAGER,
        force=True,
    )
    return name


def pod_template(*, cpu: str = "1", labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A pod template with one container requesting ``cpu`` (what Kueue charges)."""
    template: dict[str, Any] = {
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
        }
    }
    if labels:
        template["metadata"] = {"labels": dict(labels)}
    return template


def batch_job(
    name: str,
    *,
    cpu: str = "1",
    queue: str = "q",
    labels: Mapping[str, str] | None = None,
    annotations: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """A batch Job queued in ``queue`` that does not ask to be suspended (our webhook suspends it)."""
    metadata: dict[str, Any] = {"name": name, "labels": {QUEUE_LABEL: queue, **(labels or {})}}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {"suspend": False, "backoffLimit": 0, "template": pod_template(cpu=cpu)},
    }


def job_running_status(*, now: str, active: int = 1) -> dict[str, Any]:
    """A started Job's status: ``startTime`` and ``active`` pods (the job controller writes both)."""
    return {"startTime": now, "active": active}


def job_succeeded_status(*, now: str) -> dict[str, Any]:
    """A batch Job's status as the job controller of 1.36 writes it when the Job succeeds."""
    conditions = [
        {
            "type": kind,
            "status": "True",
            "reason": "CompletionsReached",
            "message": JOB_SUCCEEDED_MESSAGE,
            "lastTransitionTime": now,
            "lastProbeTime": now,
        }
        for kind in ("SuccessCriteriaMet", "Complete")
    ]
    return {"startTime": now, "completionTime": now, "succeeded": 1, "conditions": conditions}


def job_failed_status(*, now: str) -> dict[str, Any]:
    """A batch Job's status as the job controller of 1.36 writes it past its backoff limit."""
    message = JOB_FAILED_MESSAGE
    conditions = [
        {
            "type": kind,
            "status": "True",
            "reason": "BackoffLimitExceeded",
            "message": message,
            "lastTransitionTime": now,
            "lastProbeTime": now,
        }
        for kind in ("FailureTarget", "Failed")
    ]
    return {"startTime": now, "failed": 1, "conditions": conditions}


async def owned_workload(client: KubeClient, namespace: str, *, owner_uid: str) -> dict[str, Any] | None:
    """The Workload whose controller owner has ``owner_uid``, or ``None``."""
    for workload in (await client.list(WORKLOAD, namespace=namespace))["items"]:
        for owner in workload["metadata"].get("ownerReferences") or []:
            if owner.get("uid") == owner_uid and owner.get("controller"):
                return dict(workload)
    return None


async def events_for(client: KubeClient, namespace: str, *, kind: str, name: str) -> list[dict[str, Any]]:
    """The core/v1 Events about ``kind``/``name`` in ``namespace`` (Kueue's and ours)."""
    items = (
        await client.list(
            EVENT,
            namespace=namespace,
            field_selector=f"involvedObject.kind={kind},involvedObject.name={name}",
        )
    )["items"]
    return [dict(item) for item in items]
