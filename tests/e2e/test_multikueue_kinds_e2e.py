"""MultiKueue end to end for the built-in kinds beyond batch Jobs: JobSet, AppWrapper, PipelineRun.

Each test runs a manager and two workers (``multikueue_support.fleet``) with the kind's real CRD
(``../shared/crds``) on all three clusters and the kind enabled in every component, and follows one
job through Kueue's MultiKueue contract (reference notes §2.6):

* queued on the manager, dispatched, the MultiKueue check ``Ready`` naming the winner;
* the sanitised copy on the winning worker only: ``spec.managedBy`` removed (so the worker's
  controller takes it over), the origin label, the ``prebuilt-workload-name`` annotation, no owner
  references, and no field that would let the worker delete the finished object by itself;
* the worker's status (written by the kind's controller there) mirrored onto the manager's object,
  which can only happen through the status subresource: every kind's CRD declares it, so the main
  resource ignores ``status``;
* on the remote finish, the manager Workload ``Finished`` with the remote reason and message, and
  the copy and its Workload removed from the worker.

All three kinds have ``spec.managedBy`` in the CRDs we ship against (Tekton added it to PipelineRun
before v1.15), so none of them is a kept-pending kind: their check goes ``Ready`` as in Kueue.

Who plays each kind's controller on the worker: kueue-bridge's ``appwrapper`` component *is* an
AppWrapper controller, so it runs on every cluster (on the manager it must leave the
MultiKueue-managed AppWrapper alone, as the operator does); JobSet and Tekton controllers are played
by the test (``kind_controllers``), with their real status texts.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from appwrapper.faulttolerance import FaultTolerance
from appwrapper.manager import AppWrapperManager
from shared.kube import GroupVersionKind, KubeClient, Watch
from tests.e2e.conftest import write_latest
from tests.e2e.kind_controllers import (
    APPWRAPPER,
    JOBSET,
    PIPELINERUN,
    jobset_completed,
    jobset_running,
    pipelinerun_running,
    pipelinerun_succeeded,
    write_status,
)
from tests.e2e.multikueue_support import (
    CLUSTER_QUEUE,
    JOB,
    NAMESPACE,
    Fleet,
    add_condition,
    condition,
    fleet,
)
from tests.polling import eventually

pytestmark = [pytest.mark.e2e, pytest.mark.needs_shared, pytest.mark.slow]

MULTIKUEUE = "kueue.x-k8s.io/multikueue"
ORIGIN_LABEL = "kueue.x-k8s.io/multikueue-origin"
PREBUILT = "kueue.x-k8s.io/prebuilt-workload-name"
T0 = "2030-01-01T00:00:00Z"
T1 = "2030-01-01T00:00:05Z"


def _crd(shared_dir: Path, kind: GroupVersionKind) -> Path:
    return {
        JOBSET: shared_dir / "crds" / "jobset" / "jobset.x-k8s.io_jobsets.yaml",
        APPWRAPPER: shared_dir / "crds" / "appwrapper" / "workload.codeflare.dev_appwrappers.yaml",
        PIPELINERUN: shared_dir / "crds" / "tekton" / "300-pipelinerun.yaml",
    }[kind]


def _frameworks(framework: str) -> str:
    return f"integrations: {{frameworks: [batch/job, {framework}]}}\n"


async def objects_on(f: Fleet, gvk: GroupVersionKind, name: str) -> dict[str, dict[str, Any]]:
    found = {}
    for worker, client in f.workers.items():
        obj = await f.get(client, gvk, name)
        if obj is not None:
            found[worker] = obj
    return found


async def record(client: KubeClient, gvk: GroupVersionKind, seen: list[dict[str, Any]]) -> None:
    """Every version of every object of ``gvk`` in the namespace (transient states cannot be polled)."""
    async for event in Watch(client, gvk, namespace=NAMESPACE).events():
        if event.object:
            seen.append(event.object)


@contextlib.asynccontextmanager
async def recording(client: KubeClient, gvk: GroupVersionKind) -> AsyncIterator[list[dict[str, Any]]]:
    seen: list[dict[str, Any]] = []
    task = asyncio.create_task(record(client, gvk, seen))
    try:
        yield seen
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


@dataclass
class KindFleet:
    fleet: Fleet
    kind: GroupVersionKind
    #: every version of the kind seen on each worker (its first: the copy as MultiKueue created it)
    seen: dict[str, list[dict[str, Any]]]


@contextlib.asynccontextmanager
async def kind_fleet(
    devcluster_factory: Callable[..., Any],
    shared_dir: Path,
    kind: GroupVersionKind,
    framework: str,
    *,
    quota: dict[str, str] | None = None,
) -> AsyncIterator[KindFleet]:
    crd = [_crd(shared_dir, kind)]
    async with (
        fleet(
            devcluster_factory,
            shared_dir,
            multikueue=_frameworks(framework),
            crds={"manager": crd, "w1": crd, "w2": crd},
            quota=quota,
        ) as f,
        recording(f.workers["w1"], kind) as w1,
        recording(f.workers["w2"], kind) as w2,
    ):
        yield KindFleet(f, kind, {"w1": w1, "w2": w2})


async def dispatched_copy(k: KindFleet, name: str) -> tuple[str, dict[str, Any]]:
    """Wait for the check ``Ready``; assert that a copy was only ever created on the winner and was
    sanitised there; return the winner and the copy as created (the kind's own dropped fields are
    checked by the caller)."""
    f = k.fleet

    async def ready() -> dict[str, Any] | None:
        check = await f.check_of(name)
        return check if check and check["state"] == "Ready" else None

    check = await eventually(ready, what=f"the MultiKueue check of {name} Ready", within_seconds=30)
    winner = check["message"].split('"')[1]
    assert check["message"] == f'The workload was admitted on "{winner}"'
    local = await f.workload_of(name)
    assert local is not None and local["status"]["clusterName"] == winner

    def created_on(worker: str) -> dict[str, Any] | None:
        return next((obj for obj in k.seen[worker] if obj["metadata"]["name"] == name), None)

    remote = await eventually(
        lambda: asyncio.sleep(0, created_on(winner)), what=f"the copy of {name} on {winner}"
    )
    assert [worker for worker in k.seen if created_on(worker)] == [winner], "created on the winner only"
    metadata = remote["metadata"]
    assert metadata["labels"][ORIGIN_LABEL] == "multikueue"
    assert metadata["annotations"][PREBUILT] == local["metadata"]["name"]
    assert not metadata.get("ownerReferences")
    assert "managedBy" not in remote["spec"], "the worker's controller must take the copy over"
    return winner, remote


async def started_on(
    f: Fleet, gvk: GroupVersionKind, name: str, worker: str, started: Callable[[dict[str, Any]], bool]
) -> dict[str, Any]:
    """The copy once the worker's reconciler has started it (the worker's Kueue admitted its Workload)."""

    async def check() -> dict[str, Any] | None:
        obj = await f.get(f.workers[worker], gvk, name)
        return obj if obj is not None and started(obj) else None

    result: dict[str, Any] = await eventually(check, what=f"{name} started on {worker}")
    return result


async def mirrored(f: Fleet, gvk: GroupVersionKind, name: str, status: dict[str, Any]) -> None:
    async def equal() -> bool:
        local = await f.get(f.manager, gvk, name)
        return local is not None and local.get("status") == status

    await eventually(equal, what=f"the worker's status of {name} on the manager")


async def finished_and_cleaned(f: Fleet, gvk: GroupVersionKind, name: str) -> dict[str, Any]:
    finished = await f.wait_finished(name, within_seconds=30)

    async def cleaned() -> bool:
        if await objects_on(f, gvk, name):
            return False
        return all([await f.copy_of(name, client) is None for client in f.workers.values()])

    await eventually(cleaned, what=f"the copy of {name} and its Workload removed", within_seconds=30)
    return finished


def _pod_template(cpu: str = "1") -> dict[str, Any]:
    return {
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}],
        }
    }


def new_jobset(name: str) -> dict[str, Any]:
    return {
        "apiVersion": JOBSET.api_version,
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"kueue.x-k8s.io/queue-name": "q"}},
        "spec": {
            "suspend": True,
            "managedBy": MULTIKUEUE,
            "ttlSecondsAfterFinished": 0,
            "replicatedJobs": [
                {
                    "name": "workers",
                    "replicas": 2,
                    "template": {"spec": {"parallelism": 1, "completions": 1, "template": _pod_template()}},
                }
            ],
        },
    }


def sent_spec(created: dict[str, Any], *dropped: str) -> dict[str, Any]:
    """The spec a copy must carry: the manager's object as created (server defaults included),
    without ``managedBy`` and the kind's ``dropped`` fields."""
    spec = dict(created["spec"])
    for key in ("managedBy", *dropped):
        spec.pop(key)
    return spec


async def test_jobset_is_dispatched_mirrored_and_finished(devcluster_factory: Any, shared_dir: Path) -> None:
    async with kind_fleet(devcluster_factory, shared_dir, JOBSET, "jobset.x-k8s.io/jobset") as k:
        f = k.fleet
        created = await f.manager.create(JOBSET, new_jobset("js"), namespace=NAMESPACE)
        winner, remote = await dispatched_copy(k, "js")
        assert remote["spec"] == sent_spec(created, "ttlSecondsAfterFinished"), (
            "the TTL is dropped: the worker would delete the JobSet before its final status is synced"
        )

        # the JobSet controller on the worker runs the jobs once kueue-bridge's reconciler resumes it
        await started_on(f, JOBSET, "js", winner, lambda obj: obj["spec"].get("suspend") is False)
        worker = f.workers[winner]
        running = jobset_running("workers", replicas=2, at=T0)
        await write_status(worker, JOBSET, "js", namespace=NAMESPACE, status=running)
        await mirrored(f, JOBSET, "js", running)
        completed = jobset_completed("workers", replicas=2, at=T1)
        await write_status(worker, JOBSET, "js", namespace=NAMESPACE, status=completed)

        finished = await finished_and_cleaned(f, JOBSET, "js")
        assert (finished["reason"], finished["message"]) == ("Succeeded", "jobset completed successfully")
        local = await f.get(f.manager, JOBSET, "js")
        assert local is not None and local["status"] == completed, "the final status reached the manager"


def new_pipelinerun(name: str) -> dict[str, Any]:
    step = {"name": "echo", "image": "busybox", "script": "echo hello"}
    return {
        "apiVersion": PIPELINERUN.api_version,
        "kind": "PipelineRun",
        "metadata": {
            "name": name,
            "namespace": NAMESPACE,
            "labels": {"kueue.x-k8s.io/queue-name": "q"},
            "annotations": {"kueue.konflux-ci.dev/requests-cpu": "1"},
        },
        "spec": {
            "status": "PipelineRunPending",
            "managedBy": MULTIKUEUE,
            "pipelineSpec": {"tasks": [{"name": "hello", "taskSpec": {"steps": [step]}}]},
        },
    }


async def test_pipelinerun_is_dispatched_mirrored_and_finished(
    devcluster_factory: Any, shared_dir: Path
) -> None:
    quota = {"tekton.dev/pipelineruns": "10"}  # the synthetic resource of every PipelineRun Workload
    async with kind_fleet(
        devcluster_factory, shared_dir, PIPELINERUN, "tekton.dev/pipelinerun", quota=quota
    ) as k:
        f = k.fleet
        created = await f.manager.create(PIPELINERUN, new_pipelinerun("pr"), namespace=NAMESPACE)
        winner, remote = await dispatched_copy(k, "pr")
        assert remote["spec"] == sent_spec(created), (
            "nothing else is dropped: no PipelineRun field self-deletes"
        )

        # Tekton on the worker runs it once kueue-bridge's reconciler clears spec.status there
        await started_on(f, PIPELINERUN, "pr", winner, lambda obj: "status" not in obj["spec"])
        worker = f.workers[winner]
        running = pipelinerun_running(started=T0)
        await write_status(worker, PIPELINERUN, "pr", namespace=NAMESPACE, status=running)
        await mirrored(f, PIPELINERUN, "pr", running)
        succeeded = pipelinerun_succeeded(started=T0, completed=T1)
        await write_status(worker, PIPELINERUN, "pr", namespace=NAMESPACE, status=succeeded)

        finished = await finished_and_cleaned(f, PIPELINERUN, "pr")
        assert (finished["reason"], finished["message"]) == (
            "Succeeded",
            "Tasks Completed: 1 (Failed: 0, Cancelled 0), Skipped: 0",
        )
        local = await f.get(f.manager, PIPELINERUN, "pr")
        assert local is not None and local["status"] == succeeded, "the final status reached the manager"


def _no_cpu_quota(cluster_queue: dict[str, Any]) -> None:
    for group in cluster_queue["spec"]["resourceGroups"]:
        for flavor in group["flavors"]:
            for resource in flavor["resources"]:
                if resource["name"] == "cpu":
                    resource["nominalQuota"] = "0"


async def test_a_pipelinerun_evicted_on_its_worker_is_re_dispatched_pending_and_runs(
    devcluster_factory: Any, shared_dir: Path
) -> None:
    """The worker's Kueue preempts the copy: its reconciler stops it (tekton-kueue's graceful
    ``StoppedRunFinally``), MultiKueue retries, the manager evicts and stops its own PipelineRun the
    same way. The re-dispatched copy must still be created pending, or the worker's Tekton would stop
    it before its first task (it used to inherit ``StoppedRunFinally`` from the manager)."""
    quota = {"tekton.dev/pipelineruns": "10"}
    async with kind_fleet(
        devcluster_factory, shared_dir, PIPELINERUN, "tekton.dev/pipelinerun", quota=quota
    ) as k:
        f = k.fleet
        await f.manager.create(PIPELINERUN, new_pipelinerun("again"), namespace=NAMESPACE)
        winner, first = await dispatched_copy(k, "again")
        await started_on(f, PIPELINERUN, "again", winner, lambda obj: "status" not in obj["spec"])
        preempted = {
            "type": "Evicted",
            "status": "True",
            "reason": "Preempted",
            "message": "Preempted to accommodate a workload",
            "lastTransitionTime": T0,
        }
        # a real preemption: the preemptor holds the winner's quota, so the copy cannot simply be
        # admitted there again (the stand-in would, before MultiKueue saw the eviction)
        await write_latest(f.workers[winner], CLUSTER_QUEUE, "cq", namespace="", change=_no_cpu_quota)
        await add_condition(f, f.workers[winner], "again", preempted)

        def second_copy() -> tuple[str, dict[str, Any]] | None:
            for worker, seen in k.seen.items():
                for obj in seen:
                    if (
                        obj["metadata"]["name"] == "again"
                        and obj["metadata"]["uid"] != first["metadata"]["uid"]
                    ):
                        return worker, obj
            return None

        worker, created = await eventually(
            lambda: asyncio.sleep(0, second_copy()), what="the re-dispatched copy", within_seconds=30
        )
        assert worker != winner, "the winner has no quota left"
        assert created["spec"]["status"] == "PipelineRunPending", (
            "created pending, whatever the manager's state"
        )
        check = await f.check_of("again")
        assert check is not None and check["retryCount"] == 1

        await started_on(f, PIPELINERUN, "again", worker, lambda obj: "status" not in obj["spec"])
        succeeded = pipelinerun_succeeded(started=T0, completed=T1)
        await write_status(f.workers[worker], PIPELINERUN, "again", namespace=NAMESPACE, status=succeeded)
        finished = await finished_and_cleaned(f, PIPELINERUN, "again")
        assert finished["reason"] == "Succeeded"


def new_appwrapper(name: str) -> dict[str, Any]:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": f"{name}-job", "annotations": {"kueue-bridge.dev/run-seconds": "1"}},
        "spec": {"parallelism": 1, "completions": 1, "template": _pod_template()},
    }
    return {
        "apiVersion": APPWRAPPER.api_version,
        "kind": "AppWrapper",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"kueue.x-k8s.io/queue-name": "q"}},
        "spec": {"suspend": True, "managedBy": MULTIKUEUE, "components": [{"template": job}]},
    }


class _Events:
    def record(self, *, regarding: Any, event_type: str, reason: str, message: str) -> None:
        return None


@contextlib.asynccontextmanager
async def appwrapper_controllers(clients: list[KubeClient]) -> AsyncIterator[None]:
    """kueue-bridge's ``appwrapper`` component on each cluster, as the operator runs on each."""
    tasks = [
        asyncio.create_task(
            AppWrapperManager(
                client=client,
                events=_Events(),
                on_phase=lambda **_: None,
                config=FaultTolerance(),
                field_manager="kueue-bridge",
                workers=2,
            ).run()
        )
        for client in clients
    ]
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task


async def test_appwrapper_runs_on_the_worker_with_its_controller_there(
    devcluster_factory: Any, shared_dir: Path
) -> None:
    framework = "workload.codeflare.dev/appwrapper"
    async with (
        kind_fleet(devcluster_factory, shared_dir, APPWRAPPER, framework) as k,
        appwrapper_controllers([k.fleet.manager, *k.fleet.workers.values()]),
        recording(k.fleet.manager, APPWRAPPER) as seen,
        recording(k.fleet.manager, JOB) as manager_jobs,
    ):
        f = k.fleet
        created = await f.manager.create(APPWRAPPER, new_appwrapper("aw"), namespace=NAMESPACE)
        winner, remote = await dispatched_copy(k, "aw")
        assert remote["spec"] == sent_spec(created), (
            "nothing else is dropped: an AppWrapper's success TTL deletes its components, never itself"
        )

        # the worker's AppWrapper controller deploys the wrapped Job, the job runner runs it
        finished = await finished_and_cleaned(f, APPWRAPPER, "aw")
        assert (finished["reason"], finished["message"]) == ("Succeeded", "AppWrapper finished successfully")
        phases = [(obj.get("status") or {}).get("phase") for obj in seen]
        assert "Running" in phases, "the running status was mirrored while the copy ran"
        local = await f.get(f.manager, APPWRAPPER, "aw")
        assert local is not None and local["status"]["phase"] == "Succeeded"
        assert condition(local, "QuotaReserved") is not None, "the worker controller's conditions came along"
        assert not manager_jobs, "the manager's AppWrapper controller left the MultiKueue-managed one alone"
        assert await f.get(f.workers[winner], JOB, "aw-job") is None, "the worker removed its component"
