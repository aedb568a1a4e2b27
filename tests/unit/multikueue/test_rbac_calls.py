"""The requests ``kueue-bridge multikueue`` really makes are allowed by deploy/ (manager and worker).

The manager runs for real on in-memory clusters through a dispatch, an admission on a worker, a
status mirror, a finish and the clean-up; every request each fake API server served is turned into
(API group, resource[/subresource], verb) and must be granted by ``deploy/base/multikueue-rbac.yaml``
(manager) or ``deploy/worker/worker-rbac.yaml`` (worker).
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from multikueue.manager import ManagerOptions, MultiKueueManager
from shared.config import parse_config
from shared.kube import SystemClock
from tests.polling import eventually
from tests.unit.kube.fakeapi import RecordedRequest
from tests.unit.multikueue.fakes import (
    ADMISSION_CHECK,
    JOB,
    MK_CLUSTER,
    MK_CONFIG,
    SECRET,
    WORKER_KINDS,
    WORKLOAD,
    FakeCluster,
    kubeconfig_for,
    secret_for,
    worker_factory,
)
from tests.unit.webhook.test_deploy import grants, worker_grants

CONFIG = "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nnamespace: kueue-bridge-system\n"


def permission(request: RecordedRequest) -> tuple[str, str, str] | None:
    parts = request.path.strip("/").split("/")
    if parts[0] == "api":
        group, rest = "", parts[2:]
    elif parts[0] == "apis" and len(parts) > 3:
        group, rest = parts[1], parts[3:]
    else:
        return None  # discovery
    if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) > 2:
        rest = rest[2:]
    if not rest:
        return None
    resource = rest[0] if len(rest) < 3 else f"{rest[0]}/{rest[2]}"
    if request.method == "GET":
        verb = (
            "watch" if request.params.get("watch") in ("1", "true") else ("get" if len(rest) > 1 else "list")
        )
    else:
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}[request.method]
    return group, resource, verb


def used(cluster: FakeCluster) -> set[tuple[str, str, str]]:
    return {p for r in cluster.api.requests if (p := permission(r)) is not None}


async def test_every_request_is_granted_by_the_shipped_rbac() -> None:
    clock = SystemClock()
    manager = FakeCluster("manager", clock=clock)
    workers = {"w1": FakeCluster("w1", clock=clock, kinds=WORKER_KINDS)}
    manager.put(SECRET, secret_for("w1", kubeconfig_for("w1"), namespace="kueue-bridge-system"))
    manager.put(
        MK_CLUSTER,
        {"metadata": {"name": "w1"}, "spec": {"clusterSource": {"kubeConfig": {"location": "w1"}}}},
    )
    manager.put(MK_CONFIG, {"metadata": {"name": "cfg"}, "spec": {"clusters": ["w1"]}})
    manager.put(
        ADMISSION_CHECK,
        {
            "metadata": {"name": "mk"},
            "spec": {
                "controllerName": "kueue-bridge.dev/multikueue",
                "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "cfg"},
            },
        },
    )
    manager.put(
        JOB,
        {
            "metadata": {"name": "job", "namespace": "ns"},
            "spec": {"managedBy": "kueue.x-k8s.io/multikueue", "suspend": True},
        },
    )
    manager.put(
        WORKLOAD,
        {
            "metadata": {
                "name": "wl",
                "namespace": "ns",
                "ownerReferences": [
                    {"apiVersion": "batch/v1", "kind": "Job", "name": "job", "uid": "u", "controller": True}
                ],
            },
            "spec": {"queueName": "q", "podSets": []},
            "status": {
                "conditions": [
                    {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": ""}
                ],
                "admissionChecks": [{"name": "mk", "state": "Pending", "message": ""}],
            },
        },
    )
    mk = MultiKueueManager(
        client=manager.client,
        config=parse_config(CONFIG, source="t"),
        options=ManagerOptions(events_batch_period=0.01),
        client_factory=worker_factory(workers),
    )
    task = asyncio.create_task(mk.run())
    worker = workers["w1"]
    try:
        copy: dict[str, Any] = await eventually(
            lambda: asyncio.sleep(0, worker.get(WORKLOAD, "wl", "ns")), what="the copy"
        )
        copy["status"] = {
            "conditions": [
                {
                    "type": "Admitted",
                    "status": "True",
                    "reason": "Admitted",
                    "message": "",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            ]
        }
        worker.put(WORKLOAD, copy)
        remote_job: dict[str, Any] = await eventually(
            lambda: asyncio.sleep(0, worker.get(JOB, "job", "ns")), what="the remote job"
        )
        remote_job["status"] = {"succeeded": 1}
        worker.put(JOB, remote_job)
        copy = worker.get(WORKLOAD, "wl", "ns") or {}
        copy["metadata"]["finalizers"] = ["kueue.x-k8s.io/resource-in-use"]
        copy["status"]["conditions"].append(
            {
                "type": "Finished",
                "status": "True",
                "reason": "Succeeded",
                "message": "done",
                "lastTransitionTime": "2026-01-01T00:01:00Z",
            }
        )
        worker.put(WORKLOAD, copy)
        await eventually(
            lambda: asyncio.sleep(0, worker.get(WORKLOAD, "wl", "ns") is None), what="the copy removed"
        )
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    manager_used, worker_used = used(manager), used(worker)
    assert {
        ("kueue.x-k8s.io", "workloads/status", "patch"),
        ("batch", "jobs/status", "patch"),
    } <= manager_used
    assert {("batch", "jobs", "create"), ("kueue.x-k8s.io", "workloads", "delete")} <= worker_used
    assert manager_used <= grants("kueue-bridge-multikueue")
    assert worker_used <= worker_grants()
