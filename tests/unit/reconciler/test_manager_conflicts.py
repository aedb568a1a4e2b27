"""A 409 on a reconciler write is a requeue, not a failure: the wiring of ReconcilerControllers end to end.

``KubeWriter`` translates the client's ``Conflict``/``AlreadyExists`` into the port's
``ConflictError``; ReconcilerControllers must hand that type to its controllers as a conflict, or a busy
machine's stale cache shows up as ERROR "reconcile failed" with a traceback.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import httpx
import pytest
from prometheus_client import CollectorRegistry

from reconciler.manager import ReconcilerControllers
from shared.config import parse_config
from shared.kube import GroupVersionKind, KubeMetrics
from shared.kube.clock import FakeClock
from shared.kube.discovery import ResourceInfo
from tests.unit.kube.conftest import make_client
from tests.unit.kube.fakeapi import FakeApi, RecordedRequest, status_body

VERBS = frozenset({"get", "list", "watch", "create", "update", "patch", "delete"})
RESOURCES = [
    ResourceInfo(GroupVersionKind("", "v1", "Namespace"), "namespaces", False, VERBS),
    ResourceInfo(GroupVersionKind("batch", "v1", "Job"), "jobs", True, VERBS),
    ResourceInfo(GroupVersionKind("kueue.x-k8s.io", "v1beta2", "Workload"), "workloads", True, VERBS),
    ResourceInfo(
        GroupVersionKind("kueue.x-k8s.io", "v1beta2", "ResourceFlavor"), "resourceflavors", False, VERBS
    ),
    ResourceInfo(
        GroupVersionKind("kueue.x-k8s.io", "v1beta2", "WorkloadPriorityClass"),
        "workloadpriorityclasses",
        False,
        VERBS,
    ),
    ResourceInfo(
        GroupVersionKind("scheduling.k8s.io", "v1", "PriorityClass"), "priorityclasses", False, VERBS
    ),
]
CONFIG = """apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
integrations:
  frameworks: [batch/job]
"""


class Silent:
    def record(self, **_: object) -> None:
        return None


def queued_job() -> dict[str, object]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "later", "namespace": "e2e", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
        "spec": {
            "suspend": True,
            "parallelism": 1,
            "completions": 1,
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}},
        },
    }


def is_workload_create(request: RecordedRequest) -> bool:
    return request.method == "POST" and request.path.endswith("/workloads")


def conflict(_: RecordedRequest) -> httpx.Response:
    return httpx.Response(
        409,
        content=status_body(409, "AlreadyExists", 'workloads.kueue.x-k8s.io "job-later" already exists'),
        headers={"content-type": "application/json"},
    )


async def test_a_conflicting_workload_create_is_retried_without_an_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    api = FakeApi(RESOURCES)
    api.put_object("namespaces", {"metadata": {"name": "e2e"}})
    api.put_object("jobs.batch", queued_job())
    api.fail_when(is_workload_create, conflict, times=1)
    clock, registry = FakeClock(), CollectorRegistry()
    client = make_client(api, clock=clock, metrics=KubeMetrics(registry))
    controllers = ReconcilerControllers.from_config(
        parse_config(CONFIG, source="x"), client=client, events=Silent()
    )
    caplog.set_level(logging.DEBUG, logger="shared.kube.controller")
    task = asyncio.create_task(controllers.run())
    try:
        await clock.advance_in_steps(2.0, step=0.005)
        workloads = [key for key in api.objects if key[0] == "workloads.kueue.x-k8s.io"]
        assert len(workloads) == 1, caplog.text[-3000:]
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await client.aclose()
    assert sum(1 for r in api.requests if is_workload_create(r)) == 2  # refused once, then created
    sample = registry.get_sample_value
    assert sample("kueue_bridge_controller_runtime_reconcile_conflicts_total", {"controller": "job"}) == 1.0
    assert sample("kueue_bridge_controller_runtime_reconcile_errors_total", {"controller": "job"}) is None
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    assert any("e2e/later" in r.getMessage() and "conflict" in r.getMessage() for r in caplog.records)
