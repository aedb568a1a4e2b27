"""Fixtures for reconciler unit tests: a fake cluster seeded like the golden Kueue run."""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from reconciler.ancestry import OwnerKinds
from reconciler.job_reconciler import JobReconciler, ReconcilerSettings
from reconciler.ports import JobKey
from shared.frameworks.base import GenericJob
from shared.frameworks.batch_job import BatchJobAdapter
from shared.kube import GroupVersionKind
from shared.kueue.admission_apply import ADMISSION_MANAGED_CONDITIONS
from tests.unit.reconciler.fakes import FakeCluster

JOB_GVK = GroupVersionKind("batch", "v1", "Job")
JOBSET_GVK = GroupVersionKind("jobset.x-k8s.io", "v1alpha2", "JobSet")
UID = "6b817d4a-659b-494a-b90b-4869cc58f3b7"


def golden_job(
    *, name: str = "sample", uid: str = UID, suspend: bool = True, queue: str | None = "golden-q"
) -> dict[str, Any]:
    """The batch Job as the API server stored it in the golden run (after Kueue's webhook)."""
    labels = {"kueue.x-k8s.io/queue-name": queue} if queue else {}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "golden", "uid": uid, "labels": labels, "generation": 1},
        "spec": {
            "backoffLimit": 6,
            "completionMode": "NonIndexed",
            "completions": 4,
            "manualSelector": False,
            "parallelism": 2,
            "podReplacementPolicy": "TerminatingOrFailed",
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}},
            "suspend": suspend,
            "template": {
                "metadata": {
                    "annotations": {"team": "ml"},
                    "labels": {
                        "app": "sample",
                        "batch.kubernetes.io/controller-uid": uid,
                        "batch.kubernetes.io/job-name": name,
                        "controller-uid": uid,
                        "job-name": name,
                    },
                },
                "spec": {
                    "containers": [
                        {
                            "image": "busybox",
                            "imagePullPolicy": "Always",
                            "name": "main",
                            "resources": {"requests": {"cpu": "1", "memory": "200Mi"}},
                            "terminationMessagePath": "/dev/termination-log",
                            "terminationMessagePolicy": "File",
                        }
                    ],
                    "dnsPolicy": "ClusterFirst",
                    "nodeSelector": {"zone": "a"},
                    "restartPolicy": "Never",
                    "schedulerName": "default-scheduler",
                    "securityContext": {},
                    "terminationGracePeriodSeconds": 30,
                },
            },
        },
        "status": {},
    }


class Adapters:
    """Adapter factory for the kinds these tests use."""

    def adapter_for(self, obj: dict[str, Any]) -> GenericJob:
        return BatchJobAdapter(obj)


class FakeClock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 22, 2, 34, 3, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def cluster() -> FakeCluster:
    fake = FakeCluster()
    fake.add(
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "golden", "labels": {"kubernetes.io/metadata.name": "golden"}},
        }
    )
    fake.add(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ResourceFlavor",
            "metadata": {"name": "golden-spot"},
            "spec": {
                "nodeLabels": {"instance-type": "spot"},
                "tolerations": [{"key": "spot", "operator": "Exists", "effect": "NoSchedule"}],
            },
        }
    )
    return fake


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def make_reconciler(cluster: FakeCluster, clock: FakeClock) -> Callable[..., JobReconciler]:
    def make(*, adapters: Any = None, **overrides: Any) -> JobReconciler:
        settings = ReconcilerSettings(
            owner_kinds=OwnerKinds(
                known={("batch/v1", "Job"), ("jobset.x-k8s.io/v1alpha2", "JobSet")},
                managed={("batch/v1", "Job"), ("jobset.x-k8s.io/v1alpha2", "JobSet")},
            ),
            **overrides,
        )
        return JobReconciler(
            adapters=adapters or Adapters(),
            reader=cluster,
            writer=cluster,
            events=cluster,
            settings=settings,
            clock=clock,
        )

    return make


@pytest.fixture
def reconciler(make_reconciler: Callable[..., JobReconciler]) -> JobReconciler:
    return make_reconciler()


def job_key(name: str = "sample") -> JobKey:
    return JobKey(JOB_GVK, "golden", name)


def admit(cluster: FakeCluster, workload_name: str, *, cluster_queue: str = "golden-cq") -> None:
    """Write admission the way Kueue's scheduler does (QuotaReserved, then Admitted)."""
    key = next(k for k in cluster.objects if k[1] == "Workload" and k[3] == workload_name)
    workload = cluster.objects[key]
    status = workload.setdefault("status", {})
    status["admission"] = {
        "clusterQueue": cluster_queue,
        "podSetAssignments": [
            {
                "name": "main",
                "count": 2,
                "flavors": {"cpu": "golden-spot", "memory": "golden-spot"},
                "resourceUsage": {"cpu": "2", "memory": "400Mi"},
            }
        ],
    }
    conditions = [c for c in status.get("conditions", []) if c["type"] not in ("QuotaReserved", "Admitted")]
    conditions += [
        {
            "type": "QuotaReserved",
            "status": "True",
            "reason": "QuotaReserved",
            "message": f"Quota reserved in ClusterQueue {cluster_queue}",
            "lastTransitionTime": "2026-11-22T02:34:03Z",
        },
        {
            "type": "Admitted",
            "status": "True",
            "reason": "Admitted",
            "message": "The workload is admitted",
            "lastTransitionTime": "2026-11-22T02:34:03Z",
        },
    ]
    status["conditions"] = conditions
    workload["metadata"]["resourceVersion"] = str(int(workload["metadata"]["resourceVersion"]) + 1000)
    cluster.own_status(
        key, "kueue-admission", ("admission", ""), *(("conditions", t) for t in ("QuotaReserved", "Admitted"))
    )


def set_condition(cluster: FakeCluster, workload_name: str, condition: dict[str, Any]) -> None:
    key = next(k for k in cluster.objects if k[1] == "Workload" and k[3] == workload_name)
    status = cluster.objects[key].setdefault("status", {})
    status["conditions"] = [c for c in status.get("conditions", []) if c["type"] != condition["type"]] + [
        copy.deepcopy(condition)
    ]
    if condition["type"] in ADMISSION_MANAGED_CONDITIONS:  # Kueue writes them in its admission applies
        cluster.own_status(key, "kueue-admission", ("conditions", condition["type"]))
