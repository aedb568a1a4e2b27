"""An AppWrapper (a batch Job and a ConfigMap) admitted by real Kueue and run by our AppWrapper controller.

Real Kueue lists ``AppWrapper.v1beta2.workload.codeflare.dev`` under ``externalFrameworks``: our
webhook suspends the AppWrapper, our reconciler makes its Workload and unsuspends it once real Kueue
admits it, and ``kueue-bridge appwrapper`` creates the wrapped objects with the admission's pod-set
labels, node selector and tolerations. No job controller runs here: the test writes the wrapped
Job's status as the job controller of 1.36 would, and the AppWrapper's ``Succeeded`` phase must
finish its Workload.
"""

from __future__ import annotations

from typing import Any

from shared.constants import PODSET_LABEL, QUEUE_LABEL
from shared.frameworks.builtin_kinds import APPWRAPPER
from shared.kube import GroupVersionKind
from tests.polling import eventually
from tests.real.conftest import Bridge
from tests.real.support import (
    CLUSTER_QUEUE,
    JOB,
    JOB_SUCCEEDED_MESSAGE,
    apply_queues,
    condition,
    now_rfc3339,
    owned_workload,
    pod_template,
)

CONFIG_MAP = GroupVersionKind("", "v1", "ConfigMap")
APPWRAPPER_LABEL = "workload.codeflare.dev/appwrapper"
POOL_LABEL = "e2e.kueue-bridge.dev/pool"
TOLERATION = {"key": "e2e.kueue-bridge.dev/spot", "operator": "Exists", "effect": "NoSchedule"}


def _appwrapper(name: str) -> dict[str, Any]:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": f"{name}-job"},
        "spec": {"parallelism": 2, "completions": 2, "template": pod_template(cpu="1")},
    }
    config_map = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": f"{name}-config"},
        "data": {"k": "v"},
    }
    return {
        "apiVersion": APPWRAPPER.gvk.api_version,
        "kind": APPWRAPPER.gvk.kind,
        "metadata": {"name": name, "labels": {QUEUE_LABEL: "q"}},
        "spec": {"suspend": False, "components": [{"template": job}, {"template": config_map}]},
    }


async def _phase(bridge: Bridge, namespace: str, name: str, phase: str) -> dict[str, Any]:
    async def reached() -> dict[str, Any] | None:
        appwrapper: dict[str, Any] = await bridge.client.get(APPWRAPPER.gvk, name, namespace=namespace)
        return appwrapper if (appwrapper.get("status") or {}).get("phase") == phase else None

    appwrapper: dict[str, Any] = await eventually(
        reached, what=f"AppWrapper {name} in phase {phase}", within_seconds=60
    )
    return appwrapper


async def test_an_appwrapper_runs_its_components_with_the_admission_and_finishes(
    bridge: Bridge, namespace: str
) -> None:
    client = bridge.client
    cluster_queue = await apply_queues(
        client, namespace, cpu="2", flavor={"nodeLabels": {POOL_LABEL: "spot"}, "tolerations": [TOLERATION]}
    )
    created = await client.create(APPWRAPPER.gvk, _appwrapper("wrapped"), namespace=namespace)
    assert created["spec"]["suspend"] is True, "our webhook suspends a queued AppWrapper on create"

    running = await _phase(bridge, namespace, "wrapped", "Running")
    assert running["spec"]["suspend"] is False
    workload = await owned_workload(client, namespace, owner_uid=created["metadata"]["uid"])
    assert workload is not None
    admitted = condition(workload, "Admitted")
    assert admitted is not None and admitted["status"] == "True", "admitted by real Kueue"
    [pod_set] = workload["spec"]["podSets"]
    assert (pod_set["name"], pod_set["count"]) == ("wrapped-0", 2)

    job = await client.get(JOB, "wrapped-job", namespace=namespace)
    template = job["spec"]["template"]
    assert template["spec"]["nodeSelector"] == {POOL_LABEL: "spot"}
    assert template["spec"]["tolerations"] == [TOLERATION]
    labels = template["metadata"]["labels"]
    assert {PODSET_LABEL: "wrapped-0", APPWRAPPER_LABEL: "wrapped"}.items() <= labels.items(), labels
    assert job["metadata"]["labels"][APPWRAPPER_LABEL] == "wrapped"
    owner = job["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == (
        "AppWrapper",
        "wrapped",
        created["metadata"]["uid"],
        True,
    )
    assert QUEUE_LABEL not in job["metadata"]["labels"], "the wrapped Job is not queued on its own"
    assert await owned_workload(client, namespace, owner_uid=job["metadata"]["uid"]) is None
    config_map = await client.get(CONFIG_MAP, "wrapped-config", namespace=namespace)
    assert config_map["metadata"]["labels"] == {APPWRAPPER_LABEL: "wrapped"}
    assert config_map["metadata"]["ownerReferences"][0]["uid"] == created["metadata"]["uid"]

    now = now_rfc3339()
    job["status"] = {
        "startTime": now,
        "completionTime": now,
        "succeeded": 2,
        "conditions": [
            {
                "type": kind,
                "status": "True",
                "reason": "CompletionsReached",
                "message": JOB_SUCCEEDED_MESSAGE,
                "lastTransitionTime": now,
                "lastProbeTime": now,
            }
            for kind in ("SuccessCriteriaMet", "Complete")
        ],
    }
    await client.update_status(JOB, job, namespace=namespace)
    done = await _phase(bridge, namespace, "wrapped", "Succeeded")
    message = "2 pods succeeded and no running, pending, or failed pods"
    state = condition(done, "QuotaReserved")
    assert state is not None
    assert (state["status"], state["reason"], state["message"]) == ("False", "Succeeded", message)

    async def finished() -> dict[str, Any] | None:
        current = await owned_workload(client, namespace, owner_uid=created["metadata"]["uid"])
        state = condition(current, "Finished")
        return state if state and state["status"] == "True" else None

    state = await eventually(finished, what="the AppWrapper's Workload Finished", within_seconds=60)
    assert (state["reason"], state["message"]) == ("Succeeded", "AppWrapper finished successfully")

    async def released() -> bool:
        cq = await client.get(CLUSTER_QUEUE, cluster_queue)
        return (cq.get("status") or {}).get("reservingWorkloads") == 0

    await eventually(released, what="real Kueue releasing the AppWrapper's quota", within_seconds=60)
