"""``docker compose up`` brings the whole system up, queues and starts jobs, and ``down -v`` leaves nothing.

Runs the repository's ``docker-compose.yaml`` unchanged through the real-cluster kit
(``tests/compose/stack.py``): only with ``KUEUE_BRIDGE_TEST_COMPOSE=1`` (``make test-compose``, which
also fails when anything here was skipped). The tests share one stack and run in file order: up,
ready, a batch Job, a SampleJob, down.

Compose has no node, so "started" means what Kueue and kueue-bridge do: the job is unsuspended once
its Workload is admitted. Its pods never run.
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.compose.stack import ENABLING_VARIABLE, TIMINGS, ComposeFailure, ComposeStack, find_kit

if os.environ.get(ENABLING_VARIABLE) != "1":
    pytest.skip(
        f"docker compose tests run only with {ENABLING_VARIABLE}=1 (make test-compose: root, podman "
        "through ../shared/real-cluster/containers.sh, a few minutes)",
        allow_module_level=True,
    )

#: long-running services and the one-shot services that must have exited 0
RUNNING = ("etcd", "kube-apiserver", "kueue", "webhook", "reconciler", "multikueue", "appwrapper")
COMPLETED = (
    "pki",
    "wait-apiserver",
    "crds",
    "crds-established",
    "kueue-manager-config",
    "queues",
    "register-webhooks",
)
CONTROLLERS = ("reconciler", "multikueue", "appwrapper")
NAMESPACE = "team-a"
QUEUE = "team-a"
#: generous: a build from PyPI on two shared cores; these bound a hang, they are not speed targets
BUILD_SECONDS = 1200
UP_SECONDS = 600
CONVERGE_SECONDS = 180


class Stack(ComposeStack):
    started_at: float = 0.0
    api: httpx.Client


@pytest.fixture(scope="module")
def stack() -> Iterator[Stack]:
    kit = find_kit()
    if kit is None:
        raise ComposeFailure(
            "the real-cluster kit is not at ../shared/real-cluster (or $KUEUE_BRIDGE_SHARED_DIR/real-cluster)"
        )
    stack = Stack(kit=kit)
    try:
        stack.prepare()
        begun = time.monotonic()
        stack.compose("build", timeout=BUILD_SECONDS)
        TIMINGS["build"] = time.monotonic() - begun
        stack.started_at = time.monotonic()
        try:
            stack.compose("up", "-d", timeout=UP_SECONDS)
        except ComposeFailure as exc:
            raise ComposeFailure(f"{exc}\n{stack.logs(stack.failing_services())}") from exc
        TIMINGS["up -d"] = time.monotonic() - stack.started_at
        stack.api = stack.host_client()
        with stack.api:
            yield stack
    finally:
        stack.remove()


def _get(api: httpx.Client, path: str) -> dict[str, Any] | None:
    response = api.get(path)
    if response.status_code == 404:
        return None
    response.raise_for_status()
    document: dict[str, Any] = response.json()
    return document


def _holder(stack: Stack, component: str) -> str:
    path = f"/apis/coordination.k8s.io/v1/namespaces/kueue-bridge-system/leases/kueue-bridge-{component}"
    lease = _get(stack.api, path) or {}
    holder: str = (lease.get("spec") or {}).get("holderIdentity") or ""
    return holder


def test_every_service_is_up_and_each_controller_holds_its_lease(stack: Stack) -> None:
    def settled() -> dict[str, dict[str, Any]] | None:
        services = stack.services()
        running = all(services.get(name, {}).get("State") == "running" for name in RUNNING)
        completed = all(
            services.get(name, {}).get("State") == "exited" and services[name].get("ExitCode") == 0
            for name in COMPLETED
        )
        return services if running and completed else None

    services = stack.eventually(
        settled,
        what="every service running, every one-shot exited 0",
        services=[*RUNNING, *COMPLETED],
        within_seconds=CONVERGE_SECONDS,
    )

    def holders() -> dict[str, str] | None:
        found = {component: _holder(stack, component) for component in CONTROLLERS}
        return found if all(found.values()) else None

    def readyz_answers(component: str) -> bool:
        # the probe server listens on health.healthProbeBindAddress (:8081) inside the container only
        probe = "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:8081/readyz', timeout=5).status)"
        output = stack.compose("exec", "-T", component, "python3", "-c", probe, check=False, timeout=60)
        return output.strip() == "200"

    for component in CONTROLLERS:
        stack.eventually(
            functools.partial(readyz_answers, component),
            what=f"{component}'s /readyz",
            services=(component,),
            within_seconds=CONVERGE_SECONDS,
        )

    held = stack.eventually(
        holders,
        what="a holder on each controller's Lease",
        services=CONTROLLERS,
        within_seconds=CONVERGE_SECONDS,
    )
    TIMINGS["up to leases held"] = time.monotonic() - stack.started_at
    for component in CONTROLLERS:
        # the holder identity starts with the hostname, which is the container's short ID
        assert services[component]["ID"].startswith(held[component].split("_", 1)[0]), (component, held)

    for kind in ("mutating", "validating"):
        configuration = _get(
            stack.api,
            f"/apis/admissionregistration.k8s.io/v1/{kind}webhookconfigurations/kueue-bridge-{kind}-webhook-configuration",
        )
        assert configuration is not None, kind
        assert all(
            webhook["clientConfig"].get("caBundle")
            and webhook["clientConfig"]["url"].startswith("https://webhook:9443/")
            for webhook in configuration["webhooks"]
        ), configuration["webhooks"]


def _suspended_admitted_started(
    stack: Stack, *, collection: str, manifest: dict[str, Any], timing: str
) -> None:
    """Create ``manifest`` in the queue; it is suspended on create, then admitted, then unsuspended."""
    created_at = time.monotonic()
    response = stack.api.post(collection, json=manifest)
    assert response.status_code == 201, response.text
    created = response.json()
    assert created["spec"]["suspend"] is True, created["spec"]
    uid = created["metadata"]["uid"]
    name = created["metadata"]["name"]

    def admitted_workload() -> dict[str, Any] | None:
        listed = _get(stack.api, f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{NAMESPACE}/workloads") or {}
        for workload in listed.get("items", []):
            owners = workload["metadata"].get("ownerReferences") or []
            conditions = (workload.get("status") or {}).get("conditions") or []
            admitted = any(c["type"] == "Admitted" and c["status"] == "True" for c in conditions)
            if any(owner["uid"] == uid for owner in owners) and admitted:
                found: dict[str, Any] = workload
                return found
        return None

    workload = stack.eventually(
        admitted_workload,
        what=f"an admitted Workload for {name}",
        services=("reconciler", "kueue", "webhook"),
        within_seconds=CONVERGE_SECONDS,
    )
    assert workload["spec"]["queueName"] == QUEUE
    assert workload["status"]["admission"]["clusterQueue"] == "dev-cluster-queue"

    def started() -> dict[str, Any] | None:
        current = _get(stack.api, f"{collection}/{name}")
        return current if current and current["spec"].get("suspend") is False else None

    stack.eventually(
        started, what=f"{name} unsuspended", services=("reconciler", "kueue"), within_seconds=CONVERGE_SECONDS
    )
    TIMINGS[f"{timing}: create to started"] = time.monotonic() - created_at
    TIMINGS[f"{timing}: up to started"] = time.monotonic() - stack.started_at


def _queued(kind: str, api_version: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "metadata": {
            "name": "compose-probe",
            "namespace": NAMESPACE,
            "labels": {"kueue.x-k8s.io/queue-name": QUEUE},
        },
        "spec": spec,
    }


POD_TEMPLATE = {
    "spec": {
        "restartPolicy": "Never",
        "containers": [
            {
                "name": "main",
                "image": "busybox:1.36",
                "command": ["true"],
                "resources": {"requests": {"cpu": "500m"}},
            }
        ],
    }
}


def test_a_queued_batch_job_is_suspended_on_create_admitted_and_started(stack: Stack) -> None:
    _suspended_admitted_started(
        stack,
        collection=f"/apis/batch/v1/namespaces/{NAMESPACE}/jobs",
        manifest=_queued("Job", "batch/v1", {"template": POD_TEMPLATE}),
        timing="batch Job",
    )


def test_a_samplejob_through_the_declarative_adapter_is_suspended_admitted_and_started(stack: Stack) -> None:
    _suspended_admitted_started(
        stack,
        collection=f"/apis/samples.kueue-bridge.dev/v1alpha1/namespaces/{NAMESPACE}/samplejobs",
        manifest=_queued(
            "SampleJob", "samples.kueue-bridge.dev/v1alpha1", {"replicas": 1, "template": POD_TEMPLATE}
        ),
        timing="SampleJob",
    )


def test_a_stopped_controller_releases_its_lease_and_leads_again_when_started(stack: Stack) -> None:
    assert _holder(stack, "reconciler")
    stack.compose("stop", "reconciler", timeout=120)
    assert stack.services()["reconciler"]["ExitCode"] == 0
    assert _holder(stack, "reconciler") == ""
    stack.compose("start", "reconciler", timeout=120)
    container = stack.services()["reconciler"]["ID"]
    stack.eventually(
        lambda: container.startswith(_holder(stack, "reconciler").split("_", 1)[0] or "-"),
        what="the restarted reconciler holding its Lease",
        services=("reconciler",),
        within_seconds=CONVERGE_SECONDS,
    )


def test_down_v_leaves_no_container_volume_or_network(stack: Stack) -> None:
    label = f"label=com.docker.compose.project={stack.project}"
    assert stack.podman("ps", "-a", "-q", "--filter", label).strip(), "nothing of the project was running"
    stack.compose("down", "-v", timeout=300)
    assert stack.podman("ps", "-a", "-q", "--filter", label).strip() == ""
    assert stack.podman("volume", "ls", "-q", "--filter", label).strip() == ""
    assert stack.podman("network", "ls", "-q", "--filter", label).strip() == ""
    assert stack.project not in stack.podman("volume", "ls", "--format", "{{.Name}}")
    assert stack.project not in stack.podman("network", "ls", "--format", "{{.Name}}")
