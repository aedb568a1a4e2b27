"""The reconcile logic alone: CPU of one batch Job's whole life through ``JobReconciler``, in process.

``bench.reconciler_cpu`` measures the reconciler process as deployed, where watches, HTTP/TLS and
the event loop share the CPU with the logic and a loaded machine moves the figure by half. This
bench takes those out: the reconciler's ports are bound to an in-memory cluster that answers from
dicts (reads share the stored objects, as the informer caches do; writes go through the production
``reconciler.cluster.KubeWriter`` to an in-memory client that stores what a server would store),
and one job lives the same life as on a real cluster, pass by pass:

    created -> Workload created -> PodsReady=False -> (echo) -> admitted -> started -> (echo)
    -> running: PodsReady=True -> (echo) -> complete: Finished -> finalizer released -> finished

(an "echo" is the pass the watch event of our own write triggers). It prints the microseconds of
CPU (``time.process_time``, less what the in-memory client's writes took) per life and per pass kind, the
minimum over ``--repeats`` batches of
``--jobs`` lives: the minimum is what the code costs when nothing else interferes, which is what
tells one version of the logic from another on a shared machine.

    .venv/bin/python -m bench.reconcile_passes [--jobs 200] [--repeats 15]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
import time
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from typing import Any, cast

import orjson

from reconciler.ancestry import OwnerKinds
from reconciler.cluster import KubeWriter
from reconciler.job_reconciler import JobReconciler, ReconcilerSettings
from reconciler.ports import JobKey
from shared.frameworks.base import GenericJob
from shared.frameworks.batch_job import BatchJobAdapter
from shared.kube import Conflict, GroupVersionKind, KubeClient, NotFound
from shared.kube.kinds import JOB_GVK
from shared.merge_patch import apply_merge_patch

__all__ = ["main"]

NAMESPACE = "bench"
Key = tuple[str, str, str]  # kind, namespace, name
WireDict = dict[str, Any]


def _copy(obj: Any) -> Any:
    return orjson.loads(orjson.dumps(obj))


def job_object(index: int) -> WireDict:
    """A queued Job as kube-apiserver stores it after our webhook (defaulted, suspended)."""
    name, uid = f"job-{index}", f"00000000-0000-0000-0000-{index:012d}"
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "uid": uid,
            "resourceVersion": "1",
            "generation": 1,
            "creationTimestamp": "2026-11-26T20:00:00Z",
            "labels": {"kueue.x-k8s.io/queue-name": "bench"},
            "annotations": {"kueue-bridge.dev/run-seconds": "1.0"},
        },
        "spec": {
            "parallelism": 1,
            "completions": 1,
            "backoffLimit": 6,
            "completionMode": "NonIndexed",
            "manualSelector": False,
            "podReplacementPolicy": "TerminatingOrFailed",
            "suspend": True,
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}},
            "template": {
                "metadata": {
                    "labels": {
                        "batch.kubernetes.io/controller-uid": uid,
                        "batch.kubernetes.io/job-name": name,
                        "controller-uid": uid,
                        "job-name": name,
                    }
                },
                "spec": {
                    "containers": [
                        {
                            "name": "main",
                            "image": "busybox",
                            "resources": {"requests": {"cpu": "10m"}},
                            "terminationMessagePath": "/dev/termination-log",
                            "terminationMessagePolicy": "File",
                            "imagePullPolicy": "Always",
                        }
                    ],
                    "restartPolicy": "Never",
                    "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst",
                    "securityContext": {},
                    "schedulerName": "default-scheduler",
                },
            },
        },
        "status": {},
    }


def _harness(method: Any) -> Any:
    """Count a client method's own CPU as the harness's (the bench subtracts it: a server's work)."""

    async def timed(self: MemoryClient, *args: Any, **kwargs: Any) -> Any:
        started = time.process_time()
        try:
            return await method(self, *args, **kwargs)
        finally:
            self.cluster.harness += time.process_time() - started

    return timed


class MemoryCluster:
    """The reconciler's read and event ports over dicts: reads share the stored objects (never
    changed in place: every write stores a new dict). Writes reach it as in production, through
    ``reconciler.cluster.KubeWriter`` and a client (``MemoryClient``); the CPU the stand-in for the
    server takes is counted apart (``harness``) and not charged to the reconcile logic."""

    def __init__(self) -> None:
        self.harness = 0.0
        self.objects: dict[Key, WireDict] = {}
        self.owned: dict[str, Key] = {}  # job name -> its Workload's key
        self.revision = 10
        self.events = 0

    def put(self, obj: WireDict) -> WireDict:
        self.revision += 1
        obj["metadata"]["resourceVersion"] = str(self.revision)
        metadata = obj["metadata"]
        key = (obj["kind"], str(metadata.get("namespace") or ""), metadata["name"])
        self.objects[key] = obj
        if obj["kind"] == "Workload":
            for reference in metadata.get("ownerReferences") or []:
                self.owned[reference["name"]] = key
        return obj

    # --- ClusterReader
    async def get(self, gvk: GroupVersionKind, namespace: str | None, name: str) -> WireDict | None:
        return self.objects.get((gvk.kind, namespace or "", name))

    async def workloads_owned_by(
        self, *, namespace: str, owner_gvk: GroupVersionKind, owner_name: str
    ) -> list[WireDict]:
        key = self.owned.get(owner_name)
        return [self.objects[key]] if key is not None and key in self.objects else []

    async def list_priority_classes(self) -> list[WireDict]:
        return []

    # --- EventSink
    def record(self, *, regarding: WireDict, event_type: str, reason: str, message: str) -> None:
        self.events += 1


class MemoryClient:
    """The part of ``KubeClient`` that ``KubeWriter`` calls, answering as a server would: writes
    check resourceVersions and store a new dict in ``cluster``; failures are the client's typed
    errors, which ``KubeWriter`` translates as it does in production."""

    def __init__(self, cluster: MemoryCluster) -> None:
        self.cluster = cluster

    def _stored(self, key: Key) -> WireDict:
        old = self.cluster.objects.get(key)
        if old is None:
            raise NotFound(code=404, message=key[2])
        return old

    @_harness
    async def create(
        self,
        gvk: GroupVersionKind,
        body: WireDict,
        *,
        namespace: str | None,
        field_manager: str,
        decode: bool,
    ) -> WireDict:
        stored = _copy(body)
        stored["metadata"].update(
            namespace=namespace,
            uid=f"wl-{stored['metadata']['name']}",
            generation=1,
            creationTimestamp="2026-11-26T20:00:01Z",
        )
        return self.cluster.put(stored) if decode else (self.cluster.put(stored) and {})

    @_harness
    async def update(
        self,
        gvk: GroupVersionKind,
        body: WireDict,
        *,
        namespace: str | None,
        subresource: str | None,
        field_manager: str,
        decode: bool,
    ) -> WireDict:
        old = self._stored((gvk.kind, namespace or "", body["metadata"]["name"]))
        if body["metadata"].get("resourceVersion") != old["metadata"]["resourceVersion"]:
            raise Conflict(code=409, message=body["metadata"]["name"])
        new = _copy(old)
        if subresource == "status":
            new["status"] = _copy(body.get("status") or {})
        else:
            new = {**_copy(body), "status": new.get("status")}
        stored = self.cluster.put(new)
        return stored if decode else {}

    @_harness
    async def patch(
        self,
        gvk: GroupVersionKind,
        name: str,
        patch: WireDict,
        *,
        namespace: str | None,
        subresource: str | None,
        field_manager: str,
        decode: bool,
    ) -> WireDict:
        old = self._stored((gvk.kind, namespace or "", name))
        precondition = (patch.get("metadata") or {}).get("resourceVersion")
        if precondition is not None and precondition != old["metadata"]["resourceVersion"]:
            raise Conflict(code=409, message=name)
        stored = self.cluster.put(apply_merge_patch(_copy(old), patch))
        return stored if decode else {}

    @_harness
    async def delete(
        self,
        gvk: GroupVersionKind,
        name: str,
        *,
        namespace: str | None,
        propagation_policy: str,
        uid: str | None,
    ) -> dict[str, Any]:
        self.cluster.objects.pop((gvk.kind, namespace or "", name), None)
        return {}


class Adapters:
    def adapter_for(self, obj: WireDict) -> GenericJob:
        return BatchJobAdapter(obj)


NOW = datetime(2026, 11, 26, 20, 0, 5, tzinfo=UTC)


def _replace(cluster: MemoryCluster, key: Key, change: Any) -> None:
    obj = _copy(cluster.objects[key])
    change(obj)
    cluster.put(obj)


def _admit(workload: WireDict) -> None:
    """Kueue's scheduler: admission and QuotaReserved + Admitted, as one status apply."""
    status = workload.setdefault("status", {})
    status["admission"] = {
        "clusterQueue": "bench",
        "podSetAssignments": [
            {
                "name": "main",
                "count": 1,
                "flavors": {"cpu": "default-flavor"},
                "resourceUsage": {"cpu": "10m"},
            }
        ],
    }
    status["conditions"] = [
        *(status.get("conditions") or []),
        {
            "type": "QuotaReserved",
            "status": "True",
            "reason": "QuotaReserved",
            "message": "Quota reserved in ClusterQueue bench",
            "lastTransitionTime": "2026-11-26T20:00:02Z",
        },
        {
            "type": "Admitted",
            "status": "True",
            "reason": "Admitted",
            "message": "The workload is admitted",
            "lastTransitionTime": "2026-11-26T20:00:02Z",
        },
    ]


def _running(job: WireDict) -> None:
    job["status"] = {
        "startTime": "2026-11-26T20:00:03Z",
        "active": 1,
        "ready": 1,
        "terminating": 0,
        "uncountedTerminatedPods": {},
    }


def _complete(job: WireDict) -> None:
    when = "2026-11-26T20:00:04Z"
    job["status"] = {
        "startTime": "2026-11-26T20:00:03Z",
        "completionTime": when,
        "succeeded": 1,
        "active": 0,
        "ready": 0,
        "terminating": 0,
        "uncountedTerminatedPods": {},
        "conditions": [
            {
                "type": "SuccessCriteriaMet",
                "status": "True",
                "reason": "CompletionsReached",
                "message": "Reached expected number of succeeded pods",
                "lastProbeTime": when,
                "lastTransitionTime": when,
            },
            {
                "type": "Complete",
                "status": "True",
                "reason": "CompletionsReached",
                "message": "Reached expected number of succeeded pods",
                "lastProbeTime": when,
                "lastTransitionTime": when,
            },
        ],
    }


async def one_life(
    reconciler: JobReconciler, cluster: MemoryCluster, index: int, times: dict[str, float]
) -> None:
    job = cluster.put(job_object(index))
    key = JobKey(JOB_GVK, NAMESPACE, job["metadata"]["name"])
    job_key = ("Job", NAMESPACE, job["metadata"]["name"])

    async def step(name: str) -> None:
        started, harness = time.process_time(), cluster.harness
        await reconciler.reconcile(key)
        times[name] += time.process_time() - started - (cluster.harness - harness)

    await step("create Workload")
    await step("PodsReady=False")
    await step("echo (not admitted)")
    _replace(cluster, cluster.owned[job["metadata"]["name"]], _admit)
    await step("start")
    await step("echo (started)")
    _replace(cluster, job_key, _running)
    await step("PodsReady=True")
    await step("echo (running)")
    _replace(cluster, job_key, _complete)
    await step("Finished")
    await step("finalizer released")
    await step("finished (event)")


def make_reconciler(cluster: MemoryCluster) -> JobReconciler:
    kinds = {("batch/v1", "Job")}
    return JobReconciler(
        adapters=Adapters(),
        reader=cluster,
        writer=KubeWriter(client=cast(KubeClient, MemoryClient(cluster)), field_manager="kueue-bridge"),
        events=cluster,
        settings=ReconcilerSettings(owner_kinds=OwnerKinds(known=kinds, managed=kinds)),
        clock=lambda: NOW + timedelta(seconds=0),
    )


async def measure(jobs: int, repeats: int) -> tuple[float, dict[str, float]]:
    best: dict[str, float]
    best_total, best = float("inf"), {}
    for _ in range(repeats):
        cluster = MemoryCluster()
        cluster.put({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE, "labels": {}}})
        cluster.put(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ResourceFlavor",
                "metadata": {"name": "default-flavor"},
                "spec": {},
            }
        )
        reconciler = make_reconciler(cluster)
        times: dict[str, float] = defaultdict(float)
        gc.collect()
        for index in range(jobs):
            await one_life(reconciler, cluster, index, times)
        total = sum(times.values())
        if total < best_total:
            best_total, best = total, dict(times)
    return best_total / jobs, {name: value / jobs for name, value in best.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--jobs", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args(argv)
    gc.freeze()
    per_life, per_pass = asyncio.run(measure(args.jobs, args.repeats))
    print(
        f"reconcile logic per job life: {per_life * 1e6:.0f} us CPU (best of {args.repeats} x {args.jobs} lives)"
    )
    for name, seconds in per_pass.items():
        print(f"  {name:<22} {seconds * 1e6:7.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
