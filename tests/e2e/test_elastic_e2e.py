"""An elastic Job scaled up while running, on the devcluster with Kueue's real Workload CRD.

The test plays Kueue's scheduler (admits the replacement slice and retires the old one with
``Scheduler.replaceWorkloadSlice``'s reason and message). What it proves beyond the unit tests:
the generation the API server assigns is the one hashed into the slice names, the slice
annotations survive the real CRD (pruning, validation), and the running Job is never suspended
across the scale-up.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from shared.constants import JOB_UID_LABEL
from shared.frameworks.builtin_kinds import BATCH_JOB
from shared.kube import Conflict, KubeClient
from shared.kueue.workload_slicing import scheduler_replaced_message, slice_workload_name
from tests.e2e.conftest import eventually, kube_client
from tests.e2e.test_reconciler_e2e import (
    JOB,
    WORKLOAD,
    RecordedEvents,
    condition,
    get_or_none,
    running_reconciler,
    setup_cluster,
)
from tests.unit.reconciler.conftest import golden_job

pytestmark = [pytest.mark.e2e, pytest.mark.needs_shared]


def slice_name_for(job: dict[str, Any]) -> str:
    metadata = job["metadata"]
    return slice_workload_name(
        owner_name=metadata["name"],
        owner_uid=metadata["uid"],
        owner_gvk=BATCH_JOB.gvk,
        generation=metadata["generation"],
        max_length=253,
    )


async def write_status(
    client: KubeClient, name: str, change: Callable[[dict[str, Any]], bool], *, what: str
) -> None:
    """Re-read Workload ``name``, ``change`` it (False: nothing to write) and write its status,
    again on a Conflict: the reconciler writes the same Workloads concurrently, as with Kueue."""

    async def attempt() -> bool:
        current = (await workloads(client))[name]
        if not change(current):
            return True
        try:
            await client.update_status(WORKLOAD, current, namespace="golden")
        except Conflict:
            return False
        return True

    await eventually(attempt, what=what)


def admission(workload: dict[str, Any], *, count: int) -> bool:
    """Kueue's scheduler: ``status.admission`` for ``count`` pods, QuotaReserved and Admitted."""
    conditions = [
        c
        for c in (workload.get("status") or {}).get("conditions", [])
        if c["type"] not in ("QuotaReserved", "Admitted")
    ]
    for condition_type, reason, message in (
        ("QuotaReserved", "QuotaReserved", "Quota reserved in ClusterQueue golden-cq"),
        ("Admitted", "Admitted", "The workload is admitted"),
    ):
        conditions.append(
            {
                "type": condition_type,
                "status": "True",
                "reason": reason,
                "message": message,
                "lastTransitionTime": "2026-11-22T02:34:03Z",
            }
        )
    workload["status"] = {
        "conditions": conditions,
        "admission": {
            "clusterQueue": "golden-cq",
            "podSetAssignments": [
                {
                    "name": "main",
                    "count": count,
                    "flavors": {"cpu": "golden-spot", "memory": "golden-spot"},
                    "resourceUsage": {"cpu": str(count), "memory": f"{200 * count}Mi"},
                }
            ],
        },
    }
    return True


async def workloads(client: KubeClient) -> dict[str, dict[str, Any]]:
    items = (await client.list(WORKLOAD, namespace="golden"))["items"]
    return {item["metadata"]["name"]: item for item in items}


async def test_scale_up_of_a_running_elastic_job(devcluster: Any, shared_dir: Path) -> None:
    events = RecordedEvents()
    async with kube_client(devcluster.kubeconfig_path) as client:
        await setup_cluster(client, shared_dir)
        job = golden_job()
        for key in ("uid", "generation"):
            del job["metadata"][key]
        job["metadata"]["annotations"] = {"kueue.x-k8s.io/elastic-job": "true"}
        job["spec"].pop("selector")
        for key in ("batch.kubernetes.io/controller-uid", "controller-uid"):
            del job["spec"]["template"]["metadata"]["labels"][key]
        job["spec"]["template"]["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/elastic-job"}]
        created = await client.create(JOB, job, namespace="golden")
        first = slice_name_for(created)

        async with running_reconciler(client, events):

            async def first_slice_pending() -> dict[str, Any] | None:
                current = (await workloads(client)).get(first)
                return current if current and condition(current, "PodsReady") else None

            workload = await eventually(first_slice_pending, what=f"the first slice {first}")
            assert workload["metadata"]["annotations"] == {
                "kueue.x-k8s.io/elastic-job": "true",
                "kueue.x-k8s.io/workload-slice-name": first,
            }
            await write_status(
                client, first, lambda w: admission(w, count=2), what="admitting the first slice"
            )

            async def started() -> dict[str, Any] | None:
                current = await get_or_none(client, JOB, "sample")
                return current if current and current["spec"]["suspend"] is False else None

            running = await eventually(started, what="the job to start")
            assert running["spec"]["template"]["metadata"]["annotations"][
                "kueue.x-k8s.io/workload-slice-name"
            ] == (first)

            scaled = await client.patch(JOB, "sample", {"spec": {"parallelism": 4}}, namespace="golden")
            assert scaled["metadata"]["generation"] > running["metadata"]["generation"]
            second = slice_name_for(scaled)
            assert second != first

            async def replacement_pending() -> dict[str, Any] | None:
                current = (await workloads(client)).get(second)
                return current if current and condition(current, "PodsReady") else None

            replacement = await eventually(replacement_pending, what=f"the replacement slice {second}")
            assert replacement["metadata"]["annotations"] == {
                "kueue.x-k8s.io/elastic-job": "true",
                "kueue.x-k8s.io/workload-slice-name": first,
                "kueue.x-k8s.io/workload-slice-replacement-for": f"golden/{first}",
            }
            assert replacement["spec"]["podSets"][0]["count"] == 4
            still_running = await get_or_none(client, JOB, "sample")
            assert still_running is not None and still_running["spec"]["suspend"] is False

            # Kueue's scheduler: admit the replacement, retire the old slice
            await write_status(
                client, second, lambda w: admission(w, count=4), what="admitting the replacement"
            )
            scheduler_message = scheduler_replaced_message(
                new_slice_uid=replacement["metadata"]["uid"],
                job_uid=replacement["metadata"]["labels"][JOB_UID_LABEL],
            )

            def retire(old: dict[str, Any]) -> bool:
                if condition(old, "Finished"):  # the reconciler was first (Kueue's recovery path)
                    return False
                old["status"]["conditions"].append(
                    {
                        "type": "Finished",
                        "status": "True",
                        "reason": "WorkloadSliceReplaced",
                        "message": scheduler_message,
                        "lastTransitionTime": "2026-11-22T02:35:00Z",
                    }
                )
                return True

            await write_status(client, first, retire, what="retiring the old slice")

            done = await get_or_none(client, JOB, "sample")
            assert done is not None
            done["status"] = {
                "startTime": "2026-11-22T02:34:04Z",
                "completionTime": "2026-11-22T02:34:20Z",
                "succeeded": 4,
                "conditions": [
                    {
                        "type": "SuccessCriteriaMet",
                        "status": "True",
                        "reason": "CompletionsReached",
                        "message": "done",
                    },
                    {"type": "Complete", "status": "True", "reason": "CompletionsReached", "message": "done"},
                ],
            }
            await client.update_status(JOB, done, namespace="golden")

            async def replacement_finished() -> dict[str, Any] | None:
                current = (await workloads(client)).get(second)
                finished = condition(current, "Finished") if current else None
                return finished if finished and finished["status"] == "True" else None

            finished = await eventually(replacement_finished, what="the replacement slice to finish")
            assert (finished["reason"], finished["message"]) == ("Succeeded", "done")

        retired = condition((await workloads(client))[first], "Finished")
        assert retired is not None
        assert (retired["status"], retired["reason"]) == ("True", "WorkloadSliceReplaced")
        assert retired["message"] in (scheduler_message, "Replaced to accommodate a new workload slice")
        reasons = [reason for _, reason, _ in events.items]
        assert "Stopped" not in reasons and "DeletedWorkload" not in reasons
        assert reasons.count("CreatedWorkload") == 2
