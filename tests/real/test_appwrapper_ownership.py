"""An AppWrapper never deletes what it does not control, on a real kube-apiserver with real Kueue.

A user's object (ConfigMap, Job, or an object of a CRD) has the name of one of an AppWrapper's
components. Creating that component fails with AlreadyExists; the AppWrapper fails, and its failure
path and its deletion remove only what it created. (The AppWrapper operator deletes by name there;
see docs/appwrapper.md.)
"""

from __future__ import annotations

from typing import Any

import pytest

from shared.constants import QUEUE_LABEL
from shared.kube import GroupVersionKind, KubeClient, NotFound
from tests.polling import eventually
from tests.real.conftest import Bridge
from tests.real.support import JOB, apply_queues

APPWRAPPER = GroupVersionKind("workload.codeflare.dev", "v1beta2", "AppWrapper")
CONFIG_MAP = GroupVersionKind("", "v1", "ConfigMap")
SAMPLE_JOB = GroupVersionKind("samples.kueue-bridge.dev", "v1alpha1", "SampleJob")
POD_TEMPLATE = {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}


def _users_object(kind: str) -> tuple[GroupVersionKind, dict[str, Any]]:
    if kind == "ConfigMap":
        return CONFIG_MAP, {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "taken"},
            "data": {"a": "b"},
        }
    if kind == "Job":
        spec = {"suspend": True, "template": POD_TEMPLATE}
        return JOB, {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "taken"}, "spec": spec}
    spec = {"replicas": 1, "template": POD_TEMPLATE}
    return SAMPLE_JOB, {
        "apiVersion": "samples.kueue-bridge.dev/v1alpha1",
        "kind": "SampleJob",
        "metadata": {"name": "taken"},
        "spec": spec,
    }


def _conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (obj.get("status") or {}).get("conditions") or []}


async def _absent(client: KubeClient, gvk: GroupVersionKind, name: str, namespace: str) -> bool:
    try:
        await client.get(gvk, name, namespace=namespace)
    except NotFound:
        return True
    return False


@pytest.mark.parametrize("kind", ["ConfigMap", "Job", "SampleJob"])
async def test_a_same_named_object_of_someone_else_survives_the_failure_and_the_deletion(
    bridge: Bridge, namespace: str, kind: str
) -> None:
    client = bridge.client
    await apply_queues(client, namespace)
    gvk, users = _users_object(kind)
    before = await client.create(gvk, users, namespace=namespace)
    wrapped_job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "ours"},
        "spec": {
            "template": {
                "spec": {
                    **POD_TEMPLATE["spec"],
                    "containers": [
                        {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}
                    ],
                }
            }
        },
    }
    appwrapper = {
        "apiVersion": "workload.codeflare.dev/v1beta2",
        "kind": "AppWrapper",
        "metadata": {"name": "clash", "labels": {QUEUE_LABEL: "q"}},
        "spec": {"components": [{"template": wrapped_job}, {"template": users}]},
    }
    await client.create(APPWRAPPER, appwrapper, namespace=namespace)

    async def failed_and_cleaned() -> dict[str, Any] | None:
        current: dict[str, Any] = await client.get(APPWRAPPER, "clash", namespace=namespace)
        deployed = _conditions(current).get("ResourcesDeployed")
        if current.get("status", {}).get("phase") == "Failed" and deployed and deployed["status"] == "False":
            return current
        return None

    failed = await eventually(
        failed_and_cleaned, what="the AppWrapper Failed and cleaned up", within_seconds=90
    )
    assert _conditions(failed)["Unhealthy"]["message"] == (
        "error creating components: spec.components[1]: resource taken exists, but is not controlled by appwrapper"
    )
    await eventually(
        lambda: _absent(client, JOB, "ours", namespace), what="our own wrapped Job deleted", within_seconds=60
    )
    await client.delete(APPWRAPPER, "clash", namespace=namespace)
    await eventually(
        lambda: _absent(client, APPWRAPPER, "clash", namespace),
        what="the AppWrapper deleted",
        within_seconds=60,
    )
    after = await client.get(gvk, "taken", namespace=namespace)
    assert after["metadata"]["uid"] == before["metadata"]["uid"]
    assert "deletionTimestamp" not in after["metadata"]
