"""AppWrapper end to end on the devcluster: real AppWrapper and Kueue CRDs, the Kueue stand-in
admitting (and preempting), the job runner running the wrapped Jobs, our reconciler as Kueue's
AppWrapper integration and our ``appwrapper`` controller creating, following, retrying and
deleting the wrapped objects.

Nothing here plays Kueue or the Job controller by hand: every state comes from the components.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from appwrapper.faulttolerance import FaultTolerance
from appwrapper.manager import AppWrapperManager
from devcluster.apiserver import ServerOptions
from devcluster.server import ThreadedDevCluster
from shared.config import parse_config
from shared.kube import GroupVersionKind, KubeClient, NotFound
from tests.e2e.conftest import eventually, install_crds, kube_client, wait_served
from tests.e2e.test_reconciler_e2e import (
    CLUSTER_QUEUE,
    JOB,
    LOCAL_QUEUE,
    WORKLOAD,
    RecordedEvents,
    running_reconciler,
)
from tests.e2e.test_reconciler_support import LEASE, ReconcilerProcess, running_processes

pytestmark = [pytest.mark.e2e, pytest.mark.needs_shared]

APPWRAPPER = GroupVersionKind("workload.codeflare.dev", "v1beta2", "AppWrapper")
CONFIG_MAP = GroupVersionKind("", "v1", "ConfigMap")
FLAVOR = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "ResourceFlavor")
PRIORITY_CLASS = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "WorkloadPriorityClass")
NAMESPACE = GroupVersionKind("", "v1", "Namespace")
KUEUE_CRDS = (
    "workloads",
    "resourceflavors",
    "workloadpriorityclasses",
    "clusterqueues",
    "localqueues",
    "admissionchecks",
)
CONFIG = """
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
integrations:
  frameworks: [batch/job, workload.codeflare.dev/appwrapper]
leaderElection: {leaseDuration: 2s, renewDeadline: 1500ms, retryPeriod: 500ms}
"""
TOLERATION = {"key": "spot", "operator": "Exists", "effect": "NoSchedule"}
_namespaces = itertools.count()


@pytest.fixture(scope="module")
def cluster(shared_dir: Path) -> Iterator[ThreadedDevCluster]:
    """One devcluster with the stand-in and the job runner; a namespace (and queues) per test."""

    async def install(kubeconfig: Path) -> None:
        async with kube_client(kubeconfig) as client:
            await install_crds(
                client,
                [shared_dir / "crds" / "kueue" / f"kueue.x-k8s.io_{name}.yaml" for name in KUEUE_CRDS]
                + [shared_dir / "crds" / "appwrapper" / "workload.codeflare.dev_appwrappers.yaml"],
            )
            await wait_served(client, (WORKLOAD, APPWRAPPER, CLUSTER_QUEUE))
            await client.create(NAMESPACE, {"metadata": {"name": "kueue-system"}})
            await client.create(
                FLAVOR,
                {
                    "metadata": {"name": "spot"},
                    "spec": {"nodeLabels": {"instance-type": "spot"}, "tolerations": [TOLERATION]},
                },
            )
            for name, value in (("low", 10), ("high", 1000)):
                await client.create(PRIORITY_CLASS, {"metadata": {"name": name}, "value": value})

    with ThreadedDevCluster(options=ServerOptions(kueue_standin=True, job_runner=True)) as started:
        asyncio.run(install(started.kubeconfig_path))
        yield started


async def new_namespace(client: KubeClient) -> str:
    """A namespace with ClusterQueue ``cq-N`` (2 CPUs, in-queue preemption of lower priorities)."""
    index = next(_namespaces)
    name = f"aw-{index}"
    await client.create(NAMESPACE, {"metadata": {"name": name}})
    await client.create(
        CLUSTER_QUEUE,
        {
            "metadata": {"name": f"cq-{index}"},
            "spec": {
                "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": name}},
                "preemption": {"withinClusterQueue": "LowerPriority"},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [{"name": "spot", "resources": [{"name": "cpu", "nominalQuota": "2"}]}],
                    }
                ],
            },
        },
    )
    await client.create(
        LOCAL_QUEUE, {"metadata": {"name": "q"}, "spec": {"clusterQueue": f"cq-{index}"}}, namespace=name
    )
    return name


def wrapped_job(*, run_seconds: float, outcome: str | None = None) -> dict[str, Any]:
    annotations = {"kueue-bridge.dev/run-seconds": str(run_seconds)}
    if outcome is not None:
        annotations["kueue-bridge.dev/outcome"] = outcome
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "work", "annotations": annotations},
        "spec": {
            "parallelism": 2,
            "completions": 2,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
                    ],
                }
            },
        },
    }


def new_appwrapper(
    name: str, *, job: dict[str, Any], priority: str = "low", annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-config"},
        "data": {"k": "v"},
    }
    job = {**job, "metadata": {**job["metadata"], "name": f"{name}-job"}}
    return {
        "apiVersion": "workload.codeflare.dev/v1beta2",
        "kind": "AppWrapper",
        "metadata": {
            "name": name,
            "labels": {"kueue.x-k8s.io/queue-name": "q", "kueue.x-k8s.io/priority-class": priority},
            "annotations": annotations or {},
        },
        "spec": {"suspend": True, "components": [{"template": job}, {"template": config_map}]},
    }


@contextlib.asynccontextmanager
async def running_controllers(client: KubeClient) -> AsyncIterator[RecordedEvents]:
    """The reconciler and the appwrapper controller, in-process, recording their events."""
    events = RecordedEvents()
    manager = AppWrapperManager(
        client=client,
        events=events,
        on_phase=lambda **_: None,
        config=FaultTolerance(),
        field_manager="kueue-bridge",
        workers=4,
    )
    task = asyncio.create_task(manager.run())
    try:
        async with running_reconciler(client, events, config=parse_config(CONFIG, source="appwrapper-e2e")):
            yield events
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def condition(obj: dict[str, Any], condition_type: str) -> tuple[str, str, str] | None:
    for item in (obj.get("status") or {}).get("conditions") or []:
        if item["type"] == condition_type:
            return (item["status"], item["reason"], item.get("message", ""))
    return None


def transition(obj: dict[str, Any], condition_type: str) -> datetime:
    for item in (obj.get("status") or {}).get("conditions") or []:
        if item["type"] == condition_type:
            return datetime.fromisoformat(item["lastTransitionTime"].replace("Z", "+00:00"))
    raise AssertionError(f"no {condition_type} condition")


async def phase_of(
    client: KubeClient,
    ns: str,
    name: str,
    wanted: str | Callable[[dict[str, Any]], bool],
    *,
    within: float = 30.0,
) -> dict[str, Any]:
    check = wanted if callable(wanted) else lambda aw: (aw.get("status") or {}).get("phase") == wanted

    async def probe() -> dict[str, Any] | None:
        aw = await client.get(APPWRAPPER, name, namespace=ns)
        return aw if check(aw) else None

    result: dict[str, Any] = await eventually(
        probe, what=f"AppWrapper {ns}/{name}: {wanted}", within_seconds=within, interval=0.1
    )
    return result


async def get_or_none(client: KubeClient, gvk: GroupVersionKind, ns: str, name: str) -> dict[str, Any] | None:
    try:
        return await client.get(gvk, name, namespace=ns)
    except NotFound:
        return None


async def workload_for(client: KubeClient, ns: str, name: str) -> dict[str, Any] | None:
    for item in (await client.list(WORKLOAD, namespace=ns))["items"]:
        if any(ref.get("name") == name for ref in item["metadata"].get("ownerReferences") or []):
            return dict(item)
    return None


async def test_admitted_appwrapper_runs_its_components_with_the_flavor_and_succeeds(
    cluster: ThreadedDevCluster,
) -> None:
    async with kube_client(cluster.kubeconfig_path) as client:
        ns = await new_namespace(client)
        await client.create(
            APPWRAPPER, new_appwrapper("sample", job=wrapped_job(run_seconds=1.5)), namespace=ns
        )
        async with running_controllers(client) as events:
            running = await phase_of(client, ns, "sample", "Running")
            job = await client.get(JOB, "sample-job", namespace=ns)
            template = job["spec"]["template"]
            assert template["spec"]["nodeSelector"] == {"instance-type": "spot"}
            assert template["spec"]["tolerations"] == [TOLERATION]
            labels = template["metadata"]["labels"]
            assert {
                "kueue.x-k8s.io/podset": "sample-0",
                "workload.codeflare.dev/appwrapper": "sample",
            }.items() <= labels.items(), labels
            assert job["metadata"]["labels"]["workload.codeflare.dev/appwrapper"] == "sample"
            owner = job["metadata"]["ownerReferences"][0]
            assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
                "AppWrapper",
                "sample",
                running["metadata"]["uid"],
                True,
            )
            config_map = await client.get(CONFIG_MAP, "sample-config", namespace=ns)
            assert config_map["metadata"]["labels"] == {"workload.codeflare.dev/appwrapper": "sample"}
            assert running["metadata"]["finalizers"] == ["workload.codeflare.dev/finalizer"]
            assert condition(running, "QuotaReserved") == ("True", "Resuming", "Suspend is false")

            done = await phase_of(client, ns, "sample", "Succeeded")
            message = "2 pods succeeded and no running, pending, or failed pods"
            assert condition(done, "QuotaReserved") == ("False", "Succeeded", message)
            assert condition(done, "ResourcesDeployed") == ("True", "Succeeded", message)

            async def finished() -> dict[str, Any] | None:
                workload = await workload_for(client, ns, "sample")
                return workload if workload and condition(workload, "Finished") else None

            workload = await eventually(finished, what="the Workload Finished")
            assert condition(workload, "Finished") == (
                "True",
                "Succeeded",
                "AppWrapper finished successfully",
            )
            assert await get_or_none(client, JOB, ns, "sample-job") is not None, "kept for the success TTL"
            assert not [e for e in events.items if e[0] == "Warning"]


async def test_preempted_appwrapper_removes_its_components_then_runs_again_when_readmitted(
    cluster: ThreadedDevCluster,
) -> None:
    async with kube_client(cluster.kubeconfig_path) as client:
        ns = await new_namespace(client)
        await client.create(APPWRAPPER, new_appwrapper("low", job=wrapped_job(run_seconds=4)), namespace=ns)
        async with running_controllers(client) as events:
            await phase_of(client, ns, "low", "Running")
            await client.create(
                APPWRAPPER,
                new_appwrapper("high", job=wrapped_job(run_seconds=1), priority="high"),
                namespace=ns,
            )
            suspended = await phase_of(client, ns, "low", "Suspended")
            assert condition(suspended, "ResourcesDeployed") == ("False", "Suspended", "Suspend is true")
            assert condition(suspended, "QuotaReserved") == ("False", "Suspended", "Suspend is true")
            assert await get_or_none(client, JOB, ns, "low-job") is None
            assert await get_or_none(client, CONFIG_MAP, ns, "low-config") is None
            assert ("Normal", "Suspending", "Externally suspended while in the Running phase") in events.items
            await phase_of(client, ns, "high", "Succeeded")
            # the preemptor finished: the preempted AppWrapper is admitted again and runs from scratch
            rerun = await phase_of(client, ns, "low", "Running")
            assert "podSetInfos" in rerun["spec"]["components"][0]
            assert await get_or_none(client, JOB, ns, "low-job") is not None
            await phase_of(client, ns, "low", "Succeeded")


async def test_a_failing_wrapped_job_is_retried_up_to_the_retry_limit_then_failed_and_cleaned_up(
    cluster: ThreadedDevCluster,
) -> None:
    pause = 2
    annotations = {
        "workload.codeflare.dev.appwrapper/retryLimit": "2",
        "workload.codeflare.dev.appwrapper/retryPausePeriodDuration": f"{pause}s",
    }
    async with kube_client(cluster.kubeconfig_path) as client:
        ns = await new_namespace(client)
        aw = new_appwrapper(
            "flaky", job=wrapped_job(run_seconds=0.3, outcome="Failed"), annotations=annotations
        )
        await client.create(APPWRAPPER, aw, namespace=ns)
        async with running_controllers(client) as events:
            await phase_of(client, ns, "flaky", "Running")
            started = time.monotonic()

            def cleaned_up(obj: dict[str, Any]) -> bool:
                quota = condition(obj, "QuotaReserved")
                return (
                    (obj.get("status") or {}).get("phase") == "Failed"
                    and quota is not None
                    and quota[0] == "False"
                )

            failed = await phase_of(client, ns, "flaky", cleaned_up, within=40)
            elapsed = time.monotonic() - started
            assert failed["status"]["resettingCount"] == 2
            assert condition(failed, "Unhealthy") == ("True", "FailedComponent", "Found 1 failed components")
            assert condition(failed, "ResourcesDeployed") == (
                "False",
                "Failed",
                "Resources deleted for failed AppWrapper",
            )
            assert condition(failed, "QuotaReserved") == ("False", "Failed", "No resources deployed")
            assert elapsed >= 2 * pause - 1, "two resets, each paused for retryPausePeriodDuration"
            unhealthy = [e for e in events.items if e[1] == "Unhealthy"]
            assert unhealthy == [("Normal", "Unhealthy", "FailedComponent: Found 1 failed components")] * 3
            assert await get_or_none(client, JOB, ns, "flaky-job") is None
            assert await get_or_none(client, CONFIG_MAP, ns, "flaky-config") is None

            async def finished() -> dict[str, Any] | None:
                workload = await workload_for(client, ns, "flaky")
                return workload if workload and condition(workload, "Finished") else None

            workload = await eventually(finished, what="the Workload Finished")
            assert condition(workload, "Finished") == ("True", "Failed", "AppWrapper failed")


async def test_a_missing_crd_of_a_wrapped_kind_fails_the_appwrapper_naming_the_component(
    cluster: ThreadedDevCluster,
) -> None:
    async with kube_client(cluster.kubeconfig_path) as client:
        ns = await new_namespace(client)
        aw = new_appwrapper("nocrd", job=wrapped_job(run_seconds=30))
        aw["spec"]["components"][1]["template"] = {
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {"name": "w"},
            "spec": {},
        }
        await client.create(APPWRAPPER, aw, namespace=ns)
        async with running_controllers(client):
            failed = await phase_of(
                client,
                ns,
                "nocrd",
                lambda o: condition(o, "QuotaReserved") == ("False", "Failed", "No resources deployed"),
            )
            status, reason, message = condition(failed, "Unhealthy")  # type: ignore[misc]
            assert (status, reason) == ("True", "CreateFailed")
            assert message.startswith(
                "error creating components: spec.components[1]: no resource is served for example.com/v1, Kind=Widget"
            )
            assert await get_or_none(client, JOB, ns, "nocrd-job") is None, (
                "what was created is deleted again"
            )


async def test_sigkill_during_the_retry_pause_resumes_at_the_stored_deadline(
    cluster: ThreadedDevCluster, tmp_path: Path
) -> None:
    """The ``appwrapper`` process is SIGKILLed while an AppWrapper pauses before its retry; the next
    process (a new identity, after the dead one's Lease expired) resumes it, never before the
    *stored* deadline (Unhealthy's transition + retryPausePeriodDuration). How late it resumes
    depends on the Lease takeover (up to its 15 s duration) and on the machine's load, so no upper
    bound is asserted here; that a new process measures the pause from the stored transition (not
    afresh) is checked on a fake clock in
    tests/unit/appwrapper/test_phases.py::test_retry_pause_is_measured_from_the_stored_unhealthy_transition."""
    pause = 10
    annotations = {
        "workload.codeflare.dev.appwrapper/retryLimit": "1",
        "workload.codeflare.dev.appwrapper/retryPausePeriodDuration": f"{pause}s",
    }
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)

    def controller(identity: str) -> ReconcilerProcess:
        return ReconcilerProcess(
            config=config,
            kubeconfig=cluster.kubeconfig_path,
            identity=identity,
            log_path=tmp_path / f"{identity}.log",
            component="appwrapper",
        )

    async with kube_client(cluster.kubeconfig_path) as client:
        ns = await new_namespace(client)
        aw = new_appwrapper(
            "crash", job=wrapped_job(run_seconds=3, outcome="Failed"), annotations=annotations
        )
        await client.create(APPWRAPPER, aw, namespace=ns)
        async with running_reconciler(
            client, RecordedEvents(), config=parse_config(CONFIG, source="appwrapper-e2e")
        ):
            first = controller("before-crash")
            with running_processes(first):

                def pausing(o: dict[str, Any]) -> bool:
                    deployed = condition(o, "ResourcesDeployed")
                    return (
                        (o.get("status") or {}).get("phase") == "Resetting"
                        and deployed is not None
                        and deployed[0] == "False"
                    )

                paused = await phase_of(client, ns, "crash", pausing, within=120)
                first.kill()
                assert first.wait() == -9
            second = controller("after-crash")
            with running_processes(second):
                resumed = await phase_of(
                    client,
                    ns,
                    "crash",
                    lambda o: (
                        condition(o, "ResourcesDeployed") == ("True", "Resuming", "Reset complete; resuming")
                    ),
                    within=120,  # a safety net: the Lease takeover alone may take its 15 s, or more when loaded
                )
                failed = await phase_of(client, ns, "crash", "Failed", within=120)
                lease = await client.get(LEASE, "kueue-bridge-appwrapper", namespace="kueue-system")
                assert lease["spec"]["holderIdentity"] == "after-crash"
                second.terminate()
                assert second.wait() == 0, second.log()
        waited = (transition(resumed, "ResourcesDeployed") - transition(paused, "Unhealthy")).total_seconds()
        assert waited >= pause, f"resumed {waited}s after the failure, before the stored {pause}s pause ended"
        assert failed["status"]["resettingCount"] == 1


SAMPLE_JOB = GroupVersionKind("samples.kueue-bridge.dev", "v1alpha1", "SampleJob")
REPO = Path(__file__).resolve().parents[2]


def _foreign(kind: str, name: str) -> tuple[GroupVersionKind, dict[str, Any]]:
    """A user's own object of ``kind`` named ``name`` (no owner), and its kind."""
    template = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}
    if kind == "ConfigMap":
        return CONFIG_MAP, {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name},
            "data": {"mine": "yes"},
        }
    if kind == "Job":
        job = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": name},
            "spec": {"suspend": True, "template": template},
        }
        return JOB, job
    sample = {
        "apiVersion": "samples.kueue-bridge.dev/v1alpha1",
        "kind": "SampleJob",
        "metadata": {"name": name},
        "spec": {"replicas": 1, "template": template},
    }
    return SAMPLE_JOB, sample


@pytest.mark.parametrize("kind", ["ConfigMap", "Job", "SampleJob"])
async def test_a_same_named_object_of_someone_else_survives_the_failure_and_the_deletion(
    cluster: ThreadedDevCluster, kind: str
) -> None:
    """The AppWrapper operator deletes such an object on its failure path; we never delete what the
    AppWrapper does not control (docs/appwrapper.md, where we differ)."""
    async with kube_client(cluster.kubeconfig_path) as client:
        if kind == "SampleJob":
            await install_crds(client, [REPO / "examples" / "dev" / "crds" / "samplejob.yaml"])
            await wait_served(client, [SAMPLE_JOB])
        ns = await new_namespace(client)
        gvk, users = _foreign(kind, "taken")
        before = await client.create(gvk, users, namespace=ns)
        aw = new_appwrapper("clash", job=wrapped_job(run_seconds=30))
        # the wrapped Job first (so there is something of ours to delete), then the same-named object
        aw["spec"]["components"][1] = {"template": {k: v for k, v in users.items() if k != "status"}}
        await client.create(APPWRAPPER, aw, namespace=ns)
        async with running_controllers(client):
            failed = await phase_of(client, ns, "clash", "Failed")
            assert condition(failed, "Unhealthy") == (
                "True",
                "CreateFailed",
                "error creating components: spec.components[1]: resource taken exists, "
                "but is not controlled by appwrapper",
            )
            cleaned = await phase_of(
                client, ns, "clash", lambda o: (condition(o, "ResourcesDeployed") or ("",))[0] == "False"
            )
            statuses = [c["conditions"][0] for c in cleaned["status"]["componentStatus"]]
            assert [(s["type"], s["status"]) for s in statuses] == [("ResourcesDeployed", "False")] * 2
            await eventually(lambda: _gone(client, JOB, ns, "clash-job"), what="our own wrapped Job deleted")
            # later passes (here: a touched annotation) delete nothing either
            await client.patch(
                APPWRAPPER, "clash", {"metadata": {"annotations": {"poke": "1"}}}, namespace=ns
            )
            await client.delete(APPWRAPPER, "clash", namespace=ns)
            await eventually(lambda: _gone(client, APPWRAPPER, ns, "clash"), what="the AppWrapper deleted")
        after = await client.get(gvk, "taken", namespace=ns)
        assert after["metadata"]["uid"] == before["metadata"]["uid"]
        assert "deletionTimestamp" not in after["metadata"]


async def _gone(client: KubeClient, gvk: GroupVersionKind, ns: str, name: str) -> bool:
    return await get_or_none(client, gvk, ns, name) is None
