"""``kueue-bridge reconciler`` with its decisions taken out: the floor of ``bench.reconciler_throughput``.

A diagnostic, never a product: the process is the real one (configuration, leader election,
informers, work queue, workers, event recorder, client, uvloop), but each reconcile makes only the
writes a burst needs and none of Kueue's decisions: no namespace selector, ancestor walk,
equivalence check, priority, pod-set building or models. A Job without a Workload gets one (the
Job's template, one pod set) and a ``CreatedWorkload`` Event; a Workload without ``PodsReady`` gets
it. ``python -m bench.reconciler_throughput --floor`` runs the burst and its ceiling against this process, so the
ratio it prints is what the client stack, the watches and the process layout cost on this machine
before any reconcile logic: the best ratio the real reconciler could reach here.

It replaces ``JobReconciler.reconcile`` before the CLI starts (a bench cannot reach inside the
process any other way, and the product must not grow a hook for it).
"""

from __future__ import annotations

import sys
from typing import Any

from bench.reconciler_throughput import PODS_READY_WAIT_FOR_START
from reconciler import job_reconciler
from reconciler.job_reconciler import DONE, JobReconciler, ReconcileResult
from reconciler.ports import WORKLOAD_GVK, ConflictError, JobKey, NotFoundError
from shared.constants import EventReason

__all__ = ["floor_reconcile", "main"]


def _workload_for(key: JobKey, job: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": WORKLOAD_GVK.api_version,
        "kind": WORKLOAD_GVK.kind,
        "metadata": {
            "name": f"job-{key.name}",
            "namespace": key.namespace,
            "ownerReferences": [
                {
                    "apiVersion": key.gvk.api_version,
                    "kind": key.gvk.kind,
                    "name": key.name,
                    "uid": job["metadata"]["uid"],
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "queueName": job["metadata"].get("labels", {}).get("kueue.x-k8s.io/queue-name", ""),
            "podSets": [{"name": "main", "count": 1, "template": job["spec"]["template"]}],
        },
    }


async def floor_reconcile(self: JobReconciler, key: JobKey) -> ReconcileResult:
    """The minimum writes for ``key``; write races are ignored (the next event retries)."""
    reader, writer, events = self._reader, self._writer, self._events
    job = await reader.get(key.gvk, key.namespace, key.name)
    if job is None:
        return DONE
    owned = await reader.workloads_owned_by(namespace=key.namespace, owner_gvk=key.gvk, owner_name=key.name)
    try:
        if not owned:
            await writer.create(WORKLOAD_GVK, key.namespace, _workload_for(key, job))
            events.record(
                regarding=job,
                event_type="Normal",
                reason=EventReason.CREATED_WORKLOAD,
                message=f"Created Workload: {key.namespace}/job-{key.name}",
            )
            return DONE
        workload = owned[0]
        conditions = (workload.get("status") or {}).get("conditions") or []
        if not any(condition.get("type") == "PodsReady" for condition in conditions):
            workload.setdefault("status", {})["conditions"] = [*conditions, dict(PODS_READY_WAIT_FOR_START)]
            await writer.update(WORKLOAD_GVK, key.namespace, workload, subresource="status")
    except (ConflictError, NotFoundError):
        pass
    return DONE


def main() -> None:
    job_reconciler.JobReconciler.reconcile = floor_reconcile  # type: ignore[method-assign]
    from kueue_bridge.cli import main as cli_main

    sys.exit(cli_main())


if __name__ == "__main__":
    main()
