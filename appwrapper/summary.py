"""What is deployed and how its pods are doing: AppWrapper's ``getComponentStatus``/``getPodStatus``.

**Components.** A component counts as deployed when its object exists and is not being deleted;
it counts as failed when its own status says so -- a ``batch/v1`` Job or a ``kubeflow.org/v1``
PyTorchJob with condition ``Failed=True`` (AppWrapper leaves Ray's failure states out on purpose:
a RayCluster reports ``failed`` transiently).

**Pods.** AppWrapper counts the pods carrying ``workload.codeflare.dev/appwrapper=<name>`` by phase
against the expected count (the replicas of every resolved pod set): ``Pending``; ``Running`` (not
being deleted); ``Succeeded``; ``Failed``, where a container that exited with a code listed in
``terminalExitCodes`` -- or, when ``retryableExitCodes`` is set, with any non-zero code not listed
there -- makes the failure terminal (no retry).

What is counted here, and why it differs: a wrapped ``batch/v1`` Job is counted **from its own
status** (``ready`` running, ``active - ready`` pending, ``succeeded``, ``failed``), not from its
pods. The Job controller's counters are what it acts on, they survive pod garbage collection, and
they are all there is where no kubelet runs pods (the devcluster). Pods controlled by such a Job are
then left out of the phase counts (they would be counted twice) but still read for exit codes, so
the terminal/retryable annotations work wherever the pods exist. Every other labelled pod is counted
as AppWrapper counts it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from shared.kube.conditions import is_object_condition_true

__all__ = ["ComponentSummary", "PodSummary", "component_failed", "summarize_components", "summarize_pods"]

JOB_KIND = ("batch/v1", "Job")
_FAILS_WITH_CONDITION = frozenset({JOB_KIND, ("kubeflow.org/v1", "PyTorchJob")})


@dataclass(frozen=True)
class ComponentSummary:
    expected: int
    deployed: int
    failed: int


@dataclass(frozen=True)
class PodSummary:
    expected: int
    pending: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    terminal_failure: bool = False


def _deleting(obj: Mapping[str, Any]) -> bool:
    return (obj.get("metadata") or {}).get("deletionTimestamp") is not None


def component_failed(obj: Mapping[str, Any]) -> bool:
    """The component's own controller says it failed (see module doc)."""
    if (obj.get("apiVersion"), obj.get("kind")) not in _FAILS_WITH_CONDITION:
        return False
    return is_object_condition_true(obj, "Failed")


def summarize_components(expected: int, objects: Iterable[Mapping[str, Any] | None]) -> ComponentSummary:
    """``objects``: the live object of every recorded component, ``None`` where it is not found."""
    deployed = failed = 0
    for obj in objects:
        if obj is None or _deleting(obj):
            continue
        deployed += 1
        failed += component_failed(obj)
    return ComponentSummary(expected=expected, deployed=deployed, failed=failed)


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _controller_uid(obj: Mapping[str, Any]) -> str | None:
    for reference in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(reference, dict) and reference.get("controller"):
            return str(reference.get("uid", ""))
    return None


def _exit_codes(pod: Mapping[str, Any]) -> list[int]:
    codes: list[int] = []
    for status in (pod.get("status") or {}).get("containerStatuses") or []:
        terminated = (
            ((status or {}).get("state") or {}).get("terminated") if isinstance(status, dict) else None
        )
        code = terminated.get("exitCode") if isinstance(terminated, dict) else None
        if isinstance(code, int) and not isinstance(code, bool) and code != 0:
            codes.append(code)
    return codes


def _terminal(pod: Mapping[str, Any], terminal_codes: Sequence[int], retryable_codes: Sequence[int]) -> bool:
    codes = _exit_codes(pod)
    if terminal_codes and any(code in terminal_codes for code in codes):
        return True
    return bool(retryable_codes) and any(code not in retryable_codes for code in codes)


def summarize_pods(
    *,
    expected: int,
    pods: Iterable[Mapping[str, Any]],
    jobs: Iterable[Mapping[str, Any]] = (),
    terminal_codes: Sequence[int] = (),
    retryable_codes: Sequence[int] = (),
) -> PodSummary:
    """Pod counts of one AppWrapper: ``pods`` are its labelled pods, ``jobs`` its deployed Jobs."""
    pending = running = succeeded = failed = 0
    terminal = False
    job_uids: set[str] = set()
    for job in jobs:
        job_uids.add(str((job.get("metadata") or {}).get("uid", "")))
        status = job.get("status") or {}
        ready, active = _count(status.get("ready")), _count(status.get("active"))
        running += ready
        pending += max(0, active - ready)
        succeeded += _count(status.get("succeeded"))
        failed += _count(status.get("failed"))
    for pod in pods:
        phase = (pod.get("status") or {}).get("phase")
        if phase == "Failed" and _terminal(pod, terminal_codes, retryable_codes):
            terminal = True
        if _controller_uid(pod) in job_uids:
            continue
        if phase == "Pending":
            pending += 1
        elif phase == "Running":
            running += not _deleting(pod)
        elif phase == "Succeeded":
            succeeded += 1
        elif phase == "Failed":
            failed += 1
    return PodSummary(
        expected=expected,
        pending=pending,
        running=running,
        succeeded=succeeded,
        failed=failed,
        terminal_failure=terminal,
    )
