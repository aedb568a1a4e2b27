"""A JobSet-shaped CRD of our own, queued through a declarative adapter, scheduled by real Kueue.

``JobGroup`` (``tests/real/crds/jobgroup.yaml``) is a list of replicated jobs, each a batch Job
template with a replica count, as JobSet is. No code knows it: ``tests/real/bridge-config.yaml``
describes it to kueue-bridge (one pod set per replicated job, pods = replicas x parallelism,
finished/succeeded/message from its conditions), and its kind is in real Kueue's
``externalFrameworks``. Nothing runs its pods here: the test writes its status as its controller
would.
"""

from __future__ import annotations

import copy
from typing import Any

from shared.constants import CLUSTER_QUEUE_LABEL, LOCAL_QUEUE_LABEL, PODSET_LABEL, QUEUE_LABEL
from shared.kueue.naming import workload_name_for_owner
from tests.polling import eventually
from tests.real.conftest import JOBGROUP, Bridge
from tests.real.support import WORKLOAD, apply_queues, condition, now_rfc3339, owned_workload, pod_template

POOL_LABEL = "e2e.kueue-bridge.dev/pool"


def _replicated_job(name: str, *, replicas: int, parallelism: int, cpu: str) -> dict[str, Any]:
    template = pod_template(cpu=cpu, labels={"role": name})
    return {
        "name": name,
        "replicas": replicas,
        "template": {"spec": {"parallelism": parallelism, "template": template}},
    }


def _job_group(name: str) -> dict[str, Any]:
    return {
        "apiVersion": JOBGROUP.api_version,
        "kind": JOBGROUP.kind,
        "metadata": {"name": name, "labels": {QUEUE_LABEL: "q"}},
        "spec": {
            "suspend": False,
            "replicatedJobs": [
                _replicated_job("driver", replicas=1, parallelism=1, cpu="1"),
                _replicated_job("workers", replicas=2, parallelism=2, cpu="500m"),
            ],
        },
    }


def _templates(group: dict[str, Any]) -> list[dict[str, Any]]:
    return [job["template"]["spec"]["template"] for job in group["spec"]["replicatedJobs"]]


async def _workload_with(bridge: Bridge, namespace: str, uid: str, kind: str, status: str) -> dict[str, Any]:
    async def found() -> dict[str, Any] | None:
        workload = await owned_workload(bridge.client, namespace, owner_uid=uid)
        state = condition(workload, kind)
        return workload if state and state["status"] == status else None

    workload: dict[str, Any] = await eventually(
        found, what=f"the JobGroup's Workload with {kind}={status}", within_seconds=60
    )
    return workload


async def _group_with(bridge: Bridge, namespace: str, name: str, *, suspend: bool) -> dict[str, Any]:
    async def found() -> dict[str, Any] | None:
        group: dict[str, Any] = await bridge.client.get(JOBGROUP, name, namespace=namespace)
        return group if group["spec"].get("suspend") is suspend else None

    group: dict[str, Any] = await eventually(
        found, what=f"JobGroup {name} with suspend={suspend}", within_seconds=60
    )
    return group


async def test_a_jobgroup_is_queued_started_stopped_restored_and_finished(
    bridge: Bridge, namespace: str
) -> None:
    client = bridge.client
    cluster_queue = await apply_queues(
        client, namespace, cpu="3", flavor={"nodeLabels": {POOL_LABEL: "batch"}}
    )
    created = await client.create(JOBGROUP, _job_group("train"), namespace=namespace)
    assert created["spec"]["suspend"] is True, "our webhook suspends a queued JobGroup on create"
    uid = created["metadata"]["uid"]

    workload = await _workload_with(bridge, namespace, uid, "Admitted", "True")
    assert workload["metadata"]["name"] == workload_name_for_owner(
        owner_name="train", owner_uid=uid, owner_gvk=JOBGROUP
    )
    pod_sets = [
        (p["name"], p["count"], p["template"]["spec"]["containers"][0]["resources"])
        for p in workload["spec"]["podSets"]
    ]
    assert pod_sets == [
        ("driver", 1, {"requests": {"cpu": "1"}}),
        ("workers", 4, {"requests": {"cpu": "500m"}}),
    ], "one pod set per replicated job, replicas x parallelism pods"
    assignments = {a["name"]: a for a in workload["status"]["admission"]["podSetAssignments"]}
    assert assignments["workers"]["resourceUsage"] == {"cpu": "2"}, "real Kueue charged 4 x 500m"

    running = await _group_with(bridge, namespace, "train", suspend=False)
    for job, template in zip(running["spec"]["replicatedJobs"], _templates(running), strict=True):
        assert template["spec"]["nodeSelector"] == {POOL_LABEL: "batch"}, job["name"]
        assert template["metadata"]["labels"] == {
            "role": job["name"],
            PODSET_LABEL: job["name"],
            # Kueue's AssignQueueLabelsForPods (beta, on by default in both versions)
            LOCAL_QUEUE_LABEL: "q",
            CLUSTER_QUEUE_LABEL: cluster_queue,
        }

    # Stop it the way `kueuectl stop workload` does: real Kueue evicts (Deactivated), we suspend the
    # JobGroup and put its templates back exactly as they were created.
    await client.patch(
        WORKLOAD, workload["metadata"]["name"], {"spec": {"active": False}}, namespace=namespace
    )
    stopped = await _group_with(bridge, namespace, "train", suspend=True)
    assert _templates(stopped) == _templates(created), "pod templates restored on stop"
    evicted = await _workload_with(bridge, namespace, uid, "QuotaReserved", "False")
    state = condition(evicted, "Evicted")
    assert state is not None
    assert (state["status"], state["reason"], state["message"]) == (
        "True",
        "Deactivated",
        "The workload is deactivated",
    )
    assert "admission" not in evicted["status"]

    await client.patch(
        WORKLOAD, workload["metadata"]["name"], {"spec": {"active": True}}, namespace=namespace
    )
    running = await _group_with(bridge, namespace, "train", suspend=False)
    assert all(t["spec"]["nodeSelector"] == {POOL_LABEL: "batch"} for t in _templates(running))

    done = copy.deepcopy(running)
    done["status"] = {
        "conditions": [
            {
                "type": "Completed",
                "status": "True",
                "reason": "AllJobsCompleted",
                "message": "jobs completed",
                "lastTransitionTime": now_rfc3339(),
            }
        ]
    }
    await client.update_status(JOBGROUP, done, namespace=namespace)
    finished = await _workload_with(bridge, namespace, uid, "Finished", "True")
    state = condition(finished, "Finished")
    assert state is not None
    assert (state["reason"], state["message"]) == ("Succeeded", "jobs completed")
