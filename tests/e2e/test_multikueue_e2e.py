"""MultiKueue end to end: a manager and two workers (devclusters), every component running.

Reference notes §2.6 behaviour, observed from outside: what each cluster holds, the conditions and
messages Kueue's users see. Kueue's own part is played by the devcluster stand-in on every cluster.
The paths that dispatch a Workload again after its admission was undone are in
``test_multikueue_redispatch.py`` (a copy finished ``OutOfSync`` is here).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from devcluster.standin.client import Resource
from devcluster.standin.jobrunner import DeclarativeCompletion
from shared.frameworks.base import GroupVersionKind
from shared.kube import Watch
from tests.e2e.multikueue_support import (
    ADMISSION_CHECK,
    JOB,
    MK_CLUSTER,
    MK_CONFIG,
    MK_CONTROLLER,
    NAMESPACE,
    WORKLOAD,
    Fleet,
    add_condition,
    add_worker_cluster,
    condition,
    copies_on,
    fleet,
    jobs_on,
    new_job,
    record_workloads,
    running_on,
    wait_check,
)
from tests.polling import eventually

pytestmark = [pytest.mark.e2e, pytest.mark.needs_shared, pytest.mark.slow]

ORIGIN = "kueue.x-k8s.io/multikueue-origin"


async def test_dispatch_first_admitted_wins_status_mirrored_and_finish(
    devcluster_factory: Any, shared_dir: Path
) -> None:
    async with fleet(devcluster_factory, shared_dir) as f:
        await f.manager.create(JOB, new_job("hello", run_seconds=1.5), namespace=NAMESPACE)

        async def ready() -> dict[str, Any] | None:
            check = await f.check_of("hello")
            return check if check and check["state"] == "Ready" else None

        check = await eventually(ready, what="the MultiKueue check Ready", within_seconds=40)
        winner = check["message"].split('"')[1]
        assert check["message"] == f'The workload was admitted on "{winner}"'
        local = await f.workload_of("hello")
        assert local is not None and local["status"]["clusterName"] == winner
        running = await eventually(lambda: jobs_on(f, "hello"), what="the job on a worker")
        assert list(running) == [winner], "the job exists only on the winning worker"
        remote_job = running[winner]
        assert ORIGIN in remote_job["metadata"]["labels"]
        assert "managedBy" not in remote_job["spec"]
        assert (
            remote_job["metadata"]["annotations"]["kueue.x-k8s.io/prebuilt-workload-name"]
            == local["metadata"]["name"]
        )
        assert not remote_job["metadata"].get("ownerReferences")
        finished = await f.wait_finished("hello")
        assert (finished["reason"], finished["message"]) == (
            "Succeeded",
            "Reached expected number of succeeded pods",
        )
        manager_job = await f.get(f.manager, JOB, "hello")
        assert manager_job is not None
        assert condition(manager_job, "Complete") is not None, "the worker's final status reached the manager"
        assert manager_job["status"]["succeeded"] == 1

        async def cleaned() -> bool:
            return not await jobs_on(f, "hello") and not await copies_on(f, "hello")

        await eventually(cleaned, what="remote objects removed after the finish", within_seconds=30)


async def test_the_nomination_is_cleared_once_admitted(devcluster_factory: Any, shared_dir: Path) -> None:
    async with fleet(devcluster_factory, shared_dir) as f:
        await f.manager.create(JOB, new_job("hello", run_seconds=60), namespace=NAMESPACE)

        async def ready() -> dict[str, Any] | None:
            check = await f.check_of("hello")
            return check if check and check["state"] == "Ready" else None

        await eventually(ready, what="the MultiKueue check Ready", within_seconds=40)
        local = await f.workload_of("hello")
        assert local is not None and "nominatedClusterNames" not in local["status"]


async def test_remote_sync_failure_resets_for_re_dispatch_and_never_finishes(
    devcluster_factory: Any, shared_dir: Path
) -> None:
    async with fleet(devcluster_factory, shared_dir) as f:
        await f.manager.create(JOB, new_job("sync", run_seconds=60), namespace=NAMESPACE)
        winner = await running_on(f, "sync")
        finished = {
            "type": "Finished",
            "status": "True",
            "reason": "OutOfSync",
            "message": "out of sync",
            "lastTransitionTime": "2030-01-01T00:00:00Z",
        }
        await add_condition(f, f.workers[winner], "sync", finished)

        async def evicted() -> dict[str, Any] | None:
            found = condition(await f.workload_of("sync"), "Evicted")
            return found if found and found["status"] == "True" else None

        found = await eventually(evicted, what="the manager Workload evicted by its check")
        assert found["reason"] == "AdmissionCheck"
        assert found["message"] == (
            'Evicted due to AdmissionCheck in Retry state: "mk" (Remote workload on worker cluster '
            f'"{winner}" is out of sync with its user job, resetting for re-dispatch, Previously: "Ready")'
        )
        check = await f.check_of("sync")
        assert check is not None
        assert (check["state"], check["retryCount"]) == ("Pending", 1)
        assert check["message"] == "Reset to Pending after eviction. Previously: Retry"
        assert condition(await f.workload_of("sync"), "Finished") is None


async def test_out_of_sync_retry_re_dispatches_the_job_and_it_runs_to_completion(
    devcluster_factory: Any, shared_dir: Path
) -> None:
    """After the Retry the job is not lost: the copies are removed while the manager's Workload has no
    quota, it is admitted again, dispatched again, and the new copy's job runs to its end, whose
    status finishes the manager's Workload and job as in a first run."""
    async with fleet(devcluster_factory, shared_dir) as f:
        await f.manager.create(JOB, new_job("resync", run_seconds=10), namespace=NAMESPACE)
        first = (await wait_check(f, "resync", "Ready"))["message"].split('"')[1]
        first_job = await eventually(
            lambda: f.get(f.workers[first], JOB, "resync"), what="the job on the first winner"
        )
        out_of_sync = {
            "type": "Finished",
            "status": "True",
            "reason": "OutOfSync",
            "message": "out of sync",
            "lastTransitionTime": "2030-01-01T00:00:00Z",
        }
        await add_condition(f, f.workers[first], "resync", out_of_sync)

        async def reset() -> dict[str, Any] | None:
            check = await f.check_of("resync")
            return check if check and check.get("retryCount") == 1 else None

        await eventually(reset, what="the check reset to Pending after the Retry")

        async def readmitted() -> dict[str, Any] | None:
            check = await f.check_of("resync")
            return check if check and check["state"] == "Ready" and check.get("retryCount") == 1 else None

        check = await eventually(
            readmitted, what="the check Ready again after the re-dispatch", within_seconds=60
        )
        second = check["message"].split('"')[1]
        assert check["message"] == f'The workload was admitted on "{second}"'
        second_job = await eventually(
            lambda: f.get(f.workers[second], JOB, "resync"), what="the job dispatched again"
        )
        assert second_job["metadata"]["uid"] != first_job["metadata"]["uid"], "a new copy, not the old job"

        finished = await f.wait_finished("resync", within_seconds=90)
        assert (finished["reason"], finished["message"]) == (
            "Succeeded",
            "Reached expected number of succeeded pods",
        )
        manager_job = await f.get(f.manager, JOB, "resync")
        assert manager_job is not None
        assert condition(manager_job, "Complete") is not None
        assert manager_job["status"]["succeeded"] == 1

        async def cleaned() -> bool:
            return not await jobs_on(f, "resync") and not await copies_on(f, "resync")

        await eventually(cleaned, what="remote objects removed after the finish", within_seconds=30)


async def test_deletion_gc_and_ownership(devcluster_factory: Any, shared_dir: Path) -> None:
    async with fleet(devcluster_factory, shared_dir, multikueue="multiKueue: {gcInterval: 1s}\n") as f:
        # deleting the manager's job removes its copies from the workers
        await f.manager.create(JOB, new_job("doomed", run_seconds=60), namespace=NAMESPACE)
        winner = await running_on(f, "doomed")
        await f.manager.delete(JOB, "doomed", namespace=NAMESPACE, propagation_policy="Background")

        async def gone() -> bool:
            return not await jobs_on(f, "doomed") and not await copies_on(f, "doomed")

        await eventually(gone, what=f"the copy and the job removed from {winner}", within_seconds=30)

        # the garbage collector removes orphans by origin label, and only those
        w2 = f.workers["w2"]
        ours = {ORIGIN: "multikueue"}
        job = new_job("orphan", managed_by="example.com/other")
        job["metadata"]["labels"] = ours
        created = await w2.create(JOB, job, namespace=NAMESPACE)
        owner = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "name": "orphan",
            "uid": created["metadata"]["uid"],
            "controller": True,
        }
        spec = {
            "queueName": "q",
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}},
                }
            ],
        }
        for name, labels, owners in (
            ("orphan", ours, [owner]),
            ("another-manager", {ORIGIN: "elsewhere"}, []),
            ("worker-own", {}, []),
        ):
            metadata = {"name": name, "namespace": NAMESPACE, "labels": labels, "ownerReferences": owners}
            await w2.create(
                WORKLOAD, {"metadata": metadata, "spec": {**spec, "active": False}}, namespace=NAMESPACE
            )

        async def collected() -> bool:
            return await f.get(w2, WORKLOAD, "orphan") is None and await f.get(w2, JOB, "orphan") is None

        await eventually(collected, what="the orphan and its job collected", within_seconds=20)
        assert await f.get(w2, WORKLOAD, "another-manager") is not None
        assert await f.get(w2, WORKLOAD, "worker-own") is not None

        # a worker's own Job of the same name is never touched, and blocks the dispatch until it goes
        for client in f.workers.values():
            theirs = new_job("mine", managed_by="example.com/other")
            theirs["metadata"]["labels"] = {"team": "worker"}
            await client.create(JOB, theirs, namespace=NAMESPACE)
        await f.manager.create(JOB, new_job("mine", run_seconds=1), namespace=NAMESPACE)

        async def admitted_copy() -> bool:
            for client in f.workers.values():
                if condition(await f.copy_of("mine", client), "Admitted") is not None:
                    return True
            return False

        await eventually(admitted_copy, what="a copy admitted by a worker")
        check = await f.check_of("mine")
        assert check is not None and check["state"] == "Pending"
        for client in f.workers.values():
            theirs_now = await f.get(client, JOB, "mine")
            assert theirs_now is not None and theirs_now["metadata"]["labels"] == {"team": "worker"}
            await client.delete(JOB, "mine", namespace=NAMESPACE, propagation_policy="Background")
        await f.wait_finished("mine", within_seconds=60)


async def test_bad_clusters_and_checks_leave_the_good_workers_working(
    devcluster_factory: Any, shared_dir: Path
) -> None:
    async with fleet(devcluster_factory, shared_dir) as f:
        good = worker_kubeconfig_text(f)
        insecure = yaml.safe_load(good)
        insecure["clusters"][0]["cluster"]["insecure-skip-tls-verify"] = True
        unreachable = yaml.safe_load(good)
        unreachable["clusters"][0]["cluster"]["server"] = "https://127.0.0.1:1"
        await add_worker_cluster(f.manager, "insecure", yaml.safe_dump(insecure))
        await add_worker_cluster(f.manager, "garbage", "clusters: [unclosed")
        await add_worker_cluster(f.manager, "unreachable", yaml.safe_dump(unreachable))
        await f.manager.create(
            MK_CLUSTER,
            {
                "metadata": {"name": "nosecret"},
                "spec": {"clusterSource": {"kubeConfig": {"location": "absent"}}},
            },
        )
        config = await f.get(f.manager, MK_CONFIG, "cfg", namespace=None)
        assert config is not None
        config["spec"]["clusters"] = ["w1", "w2", "insecure", "garbage", "unreachable", "nosecret", "missing"]
        await f.manager.update(MK_CONFIG, config)

        async def active_of(name: str) -> tuple[str, str, str] | None:
            found = condition(await f.get(f.manager, MK_CLUSTER, name, namespace=None), "Active")
            return (found["status"], found["reason"], found["message"]) if found else None

        expected = {
            "insecure": (
                "False",
                "InsecureKubeConfig",
                "load client config failed: insecure TLS verification is not allowed for cluster devcluster",
            ),
            "nosecret": ("False", "BadKubeConfig", 'load client config failed: Secret "absent" not found'),
        }
        for name, wanted in expected.items():

            async def reached(name: str = name, wanted: tuple[str, str, str] = wanted) -> bool:
                return await active_of(name) == wanted

            await eventually(reached, what=f"{name}'s Active condition")

        # a cluster reconciled before its Secret reached the informer is BadKubeConfig ("secrets ...
        # not found") until the Secret's event requeues it, as in Kueue: wait for the settled reason
        async def settled(name: str, reason: str) -> tuple[str, str, str] | None:
            state = await active_of(name)
            return state if state is not None and state[1] == reason else None

        garbage = await eventually(
            lambda: settled("garbage", "InsecureKubeConfig"), what="garbage's Active condition"
        )
        assert garbage[0] == "False"
        assert garbage[2].startswith("load client config failed: failed to parse kubeconfig(apiconfig): ")
        unreachable_state = await eventually(
            lambda: settled("unreachable", "ClientConnectionFailed"), what="unreachable's Active condition"
        )
        assert unreachable_state[0] == "False"
        # the first attempt's message; on a loaded machine the 5 s retry may come before this look
        attempts = re.search(
            r"; connection attempts: (\d+), next connection attempt: \S+Z$", unreachable_state[2]
        )
        assert attempts is not None, unreachable_state[2]
        assert int(attempts.group(1)) >= 1

        async def check_condition() -> tuple[str, str, str] | None:
            found = condition(await f.get(f.manager, ADMISSION_CHECK, "mk", namespace=None), "Active")
            return (found["status"], found["reason"], found["message"]) if found else None

        await eventually(
            lambda: _equals(
                check_condition(),
                (
                    "True",
                    "SomeActiveClusters",
                    "Missing clusters: [missing], Inactive clusters: [insecure garbage unreachable nosecret]",
                ),
            ),
            what="the check listing its unusable clusters",
        )
        await f.manager.create(
            ADMISSION_CHECK,
            {
                "metadata": {"name": "bad"},
                "spec": {
                    "controllerName": MK_CONTROLLER,
                    "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "ConfigMap", "name": "x"},
                },
            },
        )

        async def bad_check() -> tuple[str, str, str] | None:
            found = condition(await f.get(f.manager, ADMISSION_CHECK, "bad", namespace=None), "Active")
            return (found["status"], found["reason"], found["message"]) if found else None

        await eventually(
            lambda: _equals(
                bad_check(),
                (
                    "False",
                    "BadConfig",
                    'Cannot load the AdmissionChecks parameters: wrong kind "ConfigMap", expecting "MultiKueueConfig": bad parameters reference',
                ),
            ),
            what="the bad check's condition",
        )
        await f.manager.create(JOB, new_job("still-works", run_seconds=1), namespace=NAMESPACE)
        await f.wait_finished("still-works")


async def _equals(value: Any, wanted: Any) -> bool:
    return bool(await value == wanted)


def worker_kubeconfig_text(f: Fleet) -> str:
    return f.kubeconfigs["w1"]


async def test_incremental_dispatcher_nominates_step_by_step(
    devcluster_factory: Any, shared_dir: Path
) -> None:
    incremental = (
        "multiKueue: {dispatcherName: kueue.x-k8s.io/multikueue-dispatcher-incremental, "
        "incrementalDispatcherConfig: {stepSize: 1}}\n"
    )
    async with fleet(devcluster_factory, shared_dir, multikueue=incremental) as f:
        seen: list[dict[str, Any]] = []
        recorder = asyncio.create_task(record_workloads(f.workers["w2"], seen))
        try:
            await f.manager.create(JOB, new_job("step", run_seconds=1), namespace=NAMESPACE)
            check = await wait_check(f, "step", "Ready")
            assert check["message"] == 'The workload was admitted on "w1"'
            await f.wait_finished("step")
            assert seen == [], "the first round nominated only w1 (stepSize 1, the config's order)"
        finally:
            recorder.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await recorder


async def test_external_dispatcher_uses_nominated_cluster_names(
    devcluster_factory: Any, shared_dir: Path
) -> None:
    async with fleet(
        devcluster_factory, shared_dir, multikueue="multiKueue: {dispatcherName: example.com/external}\n"
    ) as f:
        seen: list[dict[str, Any]] = []
        recorder = asyncio.create_task(record_workloads(f.workers["w1"], seen))
        try:
            await f.manager.create(JOB, new_job("ext", run_seconds=1), namespace=NAMESPACE)

            async def reserved() -> dict[str, Any] | None:
                workload = await f.workload_of("ext")
                found = condition(workload, "QuotaReserved")
                return workload if found and found["status"] == "True" else None

            workload = await eventually(reserved, what="quota reserved on the manager")
            assert not await copies_on(f, "ext"), "nothing is dispatched before a nomination"
            await f.manager.patch_status(
                WORKLOAD,
                workload["metadata"]["name"],
                {"status": {"nominatedClusterNames": ["w2"]}},
                namespace=NAMESPACE,
            )
            check = await wait_check(f, "ext", "Ready")
            assert check["message"] == 'The workload was admitted on "w2"'
            await f.wait_finished("ext")
            assert seen == []
        finally:
            recorder.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await recorder


SAMPLE_JOB = GroupVersionKind("samples.kueue-bridge.dev", "v1alpha1", "SampleJob")
SAMPLE_NAME = "SampleJob.v1alpha1.samples.kueue-bridge.dev"
SAMPLE_CRD = Path(__file__).resolve().parents[2] / "examples" / "dev" / "crds" / "samplejob.yaml"
SAMPLE_CONFIG = f"""
integrations:
  frameworks: [batch/job]
  externalFrameworks:
  - name: {SAMPLE_NAME}
    resource: samplejobs
    adapter:
      suspend: {{path: spec.suspend}}
      podSets: [{{name: main, template: spec.template, count: {{path: spec.replicas, default: 1}}}}]
      finished: "has(object.status) && has(object.status.phase) && object.status.phase in ['Succeeded', 'Failed']"
      succeeded: "object.status.phase == 'Succeeded'"
      message: "has(object.status.message) ? object.status.message : ''"
multiKueue:
  externalFrameworks: [{{name: {SAMPLE_NAME}}}]
"""


async def test_beyond_kueue_kept_pending_kind_per_kind_health_and_no_worker_ttl(
    devcluster_factory: Any, shared_dir: Path
) -> None:
    completion = DeclarativeCompletion(
        resource=Resource("samples.kueue-bridge.dev", "v1alpha1", "samplejobs"),
        status_patch={"phase": "Succeeded", "message": "finished on the worker"},
    )
    async with fleet(
        devcluster_factory,
        shared_dir,
        multikueue=SAMPLE_CONFIG,
        crds={"manager": [SAMPLE_CRD], "w1": [SAMPLE_CRD]},  # w2 lacks the SampleJob CRD
        declarative=[completion],
        reconciler_configs={"w2": "integrations: {frameworks: [batch/job]}\n"},
    ) as f:
        # per-kind health: w2 is Active for batch Jobs, and says which kind it cannot take
        async def w2_active() -> dict[str, Any] | None:
            found = condition(await f.get(f.manager, MK_CLUSTER, "w2", namespace=None), "Active")
            return found if found and found["status"] == "True" else None

        active = await eventually(w2_active, what="w2 Active")
        assert active["reason"] == "Active"
        assert active["message"].startswith(f"Connected; unavailable kinds: {SAMPLE_NAME} (")

        # a kind without spec.managedBy: the manager's copy stays suspended, its check Pending
        seen: list[dict[str, Any]] = []
        recorder = asyncio.create_task(record(f.manager, SAMPLE_JOB, seen))
        try:
            sample = {
                "apiVersion": SAMPLE_JOB.api_version,
                "kind": "SampleJob",
                "metadata": {
                    "name": "train",
                    "namespace": NAMESPACE,
                    "labels": {"kueue.x-k8s.io/queue-name": "q"},
                    "annotations": {"kueue-bridge.dev/run-seconds": "2"},
                },
                "spec": {
                    "suspend": True,
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}
                            ]
                        }
                    },
                },
            }
            await f.manager.create(SAMPLE_JOB, sample, namespace=NAMESPACE)

            async def admitted_pending() -> dict[str, Any] | None:
                check = await f.check_of("train")
                return (
                    check if check and check["message"].startswith("The workload was admitted on") else None
                )

            check = await eventually(
                admitted_pending, what="the kept-pending check naming its worker", within_seconds=40
            )
            assert (check["state"], check["message"]) == ("Pending", 'The workload was admitted on "w1"')
            finished = await f.wait_finished("train")
            assert (finished["reason"], finished["message"]) == ("Succeeded", "finished on the worker")
            final = await f.get(f.manager, SAMPLE_JOB, "train")
            assert final is not None and final["status"] == {
                "phase": "Succeeded",
                "message": "finished on the worker",
            }
            assert seen and all(obj["spec"]["suspend"] is True for obj in seen), (
                "the manager's copy never ran"
            )
        finally:
            recorder.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await recorder

        # batch Jobs still use both workers, and their copies never carry a TTL
        await f.manager.create(
            JOB,
            {
                **new_job("ttl", run_seconds=2),
                "spec": {**new_job("ttl")["spec"], "ttlSecondsAfterFinished": 0},
            },
            namespace=NAMESPACE,
        )
        winner = await running_on(f, "ttl")
        remote_job = (await jobs_on(f, "ttl"))[winner]
        assert "ttlSecondsAfterFinished" not in remote_job["spec"]
        await f.wait_finished("ttl")


async def record(client: Any, gvk: GroupVersionKind, seen: list[dict[str, Any]]) -> None:
    async for event in Watch(client, gvk, namespace=NAMESPACE).events():
        if event.object:
            seen.append(event.object)
