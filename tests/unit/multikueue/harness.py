"""A manager and two workers in memory, with the Workload reconciler wired as the manager wires it.

Tests drive it by hand: they write what Kueue (or a worker) would write, call ``reconcile`` and
look at the three clusters. Time is a ``FakeClock``; ``wall`` starts at 2026-01-01T00:00:00Z.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import yaml

from multikueue.adapters import MultiKueueAdapters
from multikueue.local_jobs import LocalJobs
from multikueue.remote import RemoteCluster
from multikueue.workload import ReconcilerSettings, WorkloadReconciler
from shared.config import parse_config
from shared.kube import FakeClock, Result
from tests.unit.multikueue.fakes import (
    ADMISSION_CHECK,
    JOB,
    MK_CONFIG,
    WORKER_KINDS,
    WORKLOAD,
    FakeCluster,
    kubeconfig_for,
    worker_factory,
)

__all__ = ["MK", "ORIGIN_LABEL", "OURS", "Harness", "condition"]

OURS = "kueue-bridge.dev/multikueue"
MK = "kueue.x-k8s.io/multikueue"
ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"
WALL = datetime(2026, 1, 1, tzinfo=UTC)


def condition(obj: dict[str, Any] | None, condition_type: str) -> dict[str, Any] | None:
    for item in ((obj or {}).get("status") or {}).get("conditions") or []:
        if item["type"] == condition_type:
            return dict(item)
    return None


class Harness:
    def __init__(
        self,
        *,
        dispatcher: str = "kueue.x-k8s.io/multikueue-dispatcher-all-at-once",
        config: str = "",
        external: tuple[str, ...] = (),
    ) -> None:
        self.clock = FakeClock(wall_start=WALL)
        self.manager = FakeCluster("manager", clock=self.clock)
        self.workers = {
            name: FakeCluster(name, clock=self.clock, kinds=WORKER_KINDS) for name in ("w1", "w2")
        }
        self.config = parse_config(
            "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
            f"multiKueue: {{dispatcherName: {dispatcher}, workerLostTimeout: 15m, "
            f"externalFrameworks: {[{'name': name} for name in external]}}}\n{config}",
            source="test",
        )
        self.events: list[tuple[str, str, str]] = []
        self.remotes: dict[str, RemoteCluster] = {}
        #: the workers whose connection was reported lost (``RemoteCluster``'s ``on_lost``)
        self.lost: list[str] = []
        self.reconciler = WorkloadReconciler(
            client=self.manager.client,
            settings=ReconcilerSettings(
                controller_name=OURS,
                origin="multikueue",
                worker_lost_timeout=900.0,
                dispatcher_name=dispatcher,
            ),
            adapters=MultiKueueAdapters.from_config(self.config),
            workloads=self.manager.getter(WORKLOAD),
            checks=self.manager.getter(ADMISSION_CHECK),
            configs=self.manager.getter(MK_CONFIG),
            remotes=self.remotes.get,
            events=lambda obj, kind, message: self.events.append((obj["metadata"]["name"], kind, message)),
            clock=self.clock,
            now=self.clock.wall,
            local_jobs=LocalJobs(client=self.manager.client),
        )
        self.manager.put(
            ADMISSION_CHECK,
            {
                "metadata": {"name": "mk"},
                "spec": {
                    "controllerName": OURS,
                    "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "cfg"},
                },
            },
        )
        self.manager.put(MK_CONFIG, {"metadata": {"name": "cfg"}, "spec": {"clusters": ["w1", "w2"]}})

    async def connect(self, *names: str) -> None:
        for name in names or ("w1", "w2"):
            remote = self.remotes.get(name) or RemoteCluster(
                name=name,
                origin="multikueue",
                job_kinds=(JOB.gvk,),
                client_factory=worker_factory(self.workers),
                clock=self.clock,
                on_workload=lambda ns, n: None,
                on_lost=self.lost.append,
            )
            self.remotes[name] = remote
            document = kubeconfig_for(name)
            retry, error = await remote.refresh(yaml.safe_dump(document).encode(), document)
            assert (retry, error) == (None, None)

    async def close(self) -> None:
        for remote in self.remotes.values():
            await remote.close()

    # --- objects ---------------------------------------------------------------------------------
    def job(self, name: str = "job", *, managed_by: str | None = MK, **spec: Any) -> dict[str, Any]:
        body: dict[str, Any] = {
            "suspend": True,
            "parallelism": 1,
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "uid-x"}},
            "ttlSecondsAfterFinished": 60,
            "template": {
                "metadata": {
                    "labels": {
                        "batch.kubernetes.io/controller-uid": "uid-x",
                        "controller-uid": "uid-x",
                        "job-name": name,
                        "batch.kubernetes.io/job-name": name,
                        "app": "demo",
                    }
                },
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
            },
            **spec,
        }
        if managed_by is not None:
            body["managedBy"] = managed_by
        return self.manager.put(
            JOB,
            {
                "metadata": {
                    "name": name,
                    "namespace": "ns",
                    "labels": {"kueue.x-k8s.io/queue-name": "q"},
                    "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "cm"}],
                    "finalizers": ["example.com/keep"],
                },
                "spec": body,
            },
        )

    def workload(
        self,
        name: str = "wl",
        *,
        job: str = "job",
        kind: str = "Job",
        api_version: str = "batch/v1",
        state: str = "Pending",
        reserved: bool = True,
        **status: Any,
    ) -> dict[str, Any]:
        conditions = []
        if reserved:
            conditions.append(
                {
                    "type": "QuotaReserved",
                    "status": "True",
                    "reason": "QuotaReserved",
                    "message": "Quota reserved in ClusterQueue cq",
                    "lastTransitionTime": "2026-01-01T00:00:00Z",
                }
            )
        return self.manager.put(
            WORKLOAD,
            {
                "metadata": {
                    "name": name,
                    "namespace": "ns",
                    "labels": {"kueue.x-k8s.io/job-uid": "uid-x", "team": "a"},
                    "annotations": {"note": "kept"},
                    "finalizers": ["kueue.x-k8s.io/resource-in-use"],
                    "ownerReferences": [
                        {
                            "apiVersion": api_version,
                            "kind": kind,
                            "name": job,
                            "uid": "uid-x",
                            "controller": True,
                        }
                    ],
                },
                "spec": {
                    "queueName": "q",
                    "podSets": [{"name": "main", "count": 1, "template": {"spec": {"containers": []}}}],
                },
                "status": {
                    "conditions": conditions,
                    "admissionChecks": [
                        {
                            "name": "mk",
                            "state": state,
                            "message": "",
                            "lastTransitionTime": "2026-01-01T00:00:00Z",
                        }
                    ],
                    **status,
                },
            },
        )

    def local(self, name: str = "wl") -> dict[str, Any]:
        obj = self.manager.get(WORKLOAD, name, "ns")
        assert obj is not None
        return obj

    def check(self, name: str = "wl") -> dict[str, Any]:
        [check] = self.local(name)["status"]["admissionChecks"]
        return dict(check)

    def remote(self, worker: str, name: str = "wl") -> dict[str, Any] | None:
        return self.workers[worker].get(WORKLOAD, name, "ns")

    def remote_job(self, worker: str, name: str = "job") -> dict[str, Any] | None:
        return self.workers[worker].get(JOB, name, "ns")

    def set_remote_condition(
        self,
        worker: str,
        condition_type: str,
        *,
        reason: str = "x",
        message: str = "",
        at: str = "2026-01-01T00:00:10Z",
        name: str = "wl",
    ) -> None:
        remote = self.remote(worker, name)
        assert remote is not None
        conditions = [
            c for c in (remote.get("status") or {}).get("conditions") or [] if c["type"] != condition_type
        ]
        conditions.append(
            {
                "type": condition_type,
                "status": "True",
                "reason": reason,
                "message": message,
                "lastTransitionTime": at,
            }
        )
        remote.setdefault("status", {})["conditions"] = conditions
        self.workers[worker].put(WORKLOAD, remote)

    async def reconcile(self, name: str = "wl") -> Result:
        return await self.reconciler.reconcile(f"ns/{name}")

    def writes(self, cluster: FakeCluster, method: str = "PUT") -> int:
        return len([r for r in cluster.api.requests if r.method == method])
