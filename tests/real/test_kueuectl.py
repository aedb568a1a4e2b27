"""kueuectl, Kueue's own client, shows the same on the devcluster as on a real cluster with real Kueue.

The same steps run on both, in a namespace of the same name with the same queues: the real cluster
of ``bridge`` (real Kueue in external-framework mode, our components) and ``dev_twin`` (the
devcluster as ``make dev`` runs it: the Kueue stand-in, the job runner, the same components). After
each step both must reach the state the step is about (asserted on each, explicitly), and then
``kueuectl list workload``, ``list clusterqueue`` and ``list localqueue`` must agree column by column
(names, statuses, counts; AGE and EXEC TIME are times, so only whether EXEC TIME is shown is
compared; a Workload's name ends in a hash of its job's UID, which differs, so it is checked against
the job on each side and compared without it), and so must the ClusterQueue's and LocalQueue's
status field by field (condition times left out) and the stopped Workload's conditions.

Steps: two Jobs fill a 2-CPU ClusterQueue and a third waits; ``kueuectl stop workload`` deactivates
a running one (eviction, our reconciler suspends its Job) and the waiting one takes its place;
``kueuectl resume workload`` queues it again; a Job finishing lets it run.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from shared.kube import KubeClient
from shared.kueue.naming import workload_name_for_owner
from testkit.real_cluster import Kit, run_kueuectl
from tests.polling import eventually
from tests.real.conftest import NAMESPACE_GVK, Bridge, DevTwin
from tests.real.support import (
    CLUSTER_QUEUE,
    FLAVOR,
    JOB,
    LOCAL_QUEUE,
    WORKLOAD,
    apply_queues,
    batch_job,
    condition,
    job_succeeded_status,
    now_rfc3339,
    owned_workload,
)

#: the devcluster's job runner keeps a Job running this long; nothing runs Jobs on the real cluster
RUNNING = {"kueue-bridge.dev/run-seconds": "3600"}
_COLUMN = re.compile(r"\S+(?: \S+)*")


def table(output: str) -> list[dict[str, str]]:
    """kueuectl's table as rows of ``{column: value}`` (columns are where the header's words start)."""
    lines = [line for line in output.splitlines() if line.strip()]
    if not lines:
        return []
    header = [(match.start(), match.group()) for match in _COLUMN.finditer(lines[0])]
    rows = []
    for line in lines[1:]:
        row = {}
        for index, (start, name) in enumerate(header):
            end = header[index + 1][0] if index + 1 < len(header) else len(line)
            row[name] = line[start:end].strip()
        rows.append(row)
    return rows


@dataclass
class Side:
    """One of the two clusters: how to reach it, and its Jobs' UIDs (for the Workload names)."""

    label: str
    client: KubeClient
    kubeconfig: Path
    kit: Kit
    kueue_version: str
    uids: dict[str, str]

    def kueuectl(self, *args: str) -> str:
        return run_kueuectl(self.kit, *args, kubeconfig=self.kubeconfig, version=self.kueue_version)

    async def listed(self, what: str, namespace: str | None) -> list[dict[str, str]]:
        scope = ["-n", namespace] if namespace else []
        return table(await asyncio.to_thread(self.kueuectl, "list", what, *scope))

    def workload_name(self, job: str) -> str:
        return workload_name_for_owner(owner_name=job, owner_uid=self.uids[job], owner_gvk=JOB)

    async def workloads(self, namespace: str) -> list[dict[str, str]]:
        """``list workload`` with the names checked against the Jobs and the times left out."""
        rows = []
        for row in await self.listed("workload", namespace):
            assert row["NAME"] == self.workload_name(row["JOB NAME"]), (self.label, row)
            rows.append(
                {
                    **{k: v for k, v in row.items() if k not in ("AGE", "EXEC TIME")},
                    "NAME": f"job-{row['JOB NAME']}-<uid hash>",
                    "EXEC TIME": "shown" if row["EXEC TIME"] else "",
                }
            )
        return sorted(rows, key=lambda r: r["JOB NAME"])

    async def queue_row(self, what: str, name: str, namespace: str | None) -> dict[str, str]:
        [row] = [r for r in await self.listed(what, namespace) if r["NAME"] == name]
        return {k: v for k, v in row.items() if k != "AGE"}


def _without_times(status: Mapping[str, Any]) -> dict[str, Any]:
    conditions = [
        {k: v for k, v in c.items() if k != "lastTransitionTime"} for c in status.get("conditions") or []
    ]
    return {**status, "conditions": conditions}


async def _statuses(side: Side, namespace: str, cluster_queue: str) -> tuple[dict[str, Any], dict[str, Any]]:
    cq = await side.client.get(CLUSTER_QUEUE, cluster_queue)
    lq = await side.client.get(LOCAL_QUEUE, "q", namespace=namespace)
    return _without_times(cq.get("status") or {}), _without_times(lq.get("status") or {})


async def _settled(
    side: Side, namespace: str, cluster_queue: str, *, statuses: dict[str, str], pending: int, admitted: int
) -> None:
    """Wait until ``side`` shows the step's state: each Job's STATUS and the ClusterQueue's counts."""

    seen: list[Any] = []

    async def reached() -> bool:
        rows = await side.workloads(namespace)
        shown = {row["JOB NAME"]: row["STATUS"] for row in rows}
        cq = await side.queue_row("clusterqueue", cluster_queue, None)
        counts = (cq["PENDING WORKLOADS"], cq["ADMITTED WORKLOADS"], cq["ACTIVE"])
        lq = await side.queue_row("localqueue", "q", namespace)
        lq_counts = (lq["PENDING WORKLOADS"], lq["ADMITTED WORKLOADS"])
        seen[:] = [shown, counts, lq_counts]
        return (
            shown == statuses and counts == (str(pending), str(admitted), "true") and lq_counts == counts[:2]
        )

    try:
        await eventually(reached, what=f"{side.label}: {statuses}", within_seconds=60, interval=0.2)
    except AssertionError as exc:
        raise AssertionError(
            f"{side.label}: wanted Workloads {statuses}, {pending} pending and {admitted} admitted; "
            f"last seen (workloads, ClusterQueue, LocalQueue): {seen}"
        ) from exc


async def _same_everywhere(real: Side, dev: Side, namespace: str, cluster_queue: str) -> None:
    """Both sides' kueuectl tables and queue statuses, compared column by column and field by field."""
    assert await dev.workloads(namespace) == await real.workloads(namespace)
    for what, name, scope in (("clusterqueue", cluster_queue, None), ("localqueue", "q", namespace)):
        assert await dev.queue_row(what, name, scope) == await real.queue_row(what, name, scope), what
    assert await _statuses(dev, namespace, cluster_queue) == await _statuses(real, namespace, cluster_queue)


def _conditions(workload: Mapping[str, Any], *, kueue_version: str) -> list[tuple[str, str, str, str]]:
    found = []
    for entry in (workload.get("status") or {}).get("conditions") or []:
        reason = entry.get("reason", "")
        if kueue_version == "v0.19.2" and reason == "WaitingForQuota":
            reason = "Pending"  # UnadmittedWorkloadsObservability is off by default in 0.19
        found.append((entry["type"], entry["status"], reason, entry.get("message", "")))
    return sorted(found)


async def test_kueuectl_shows_the_same_on_the_devcluster_and_on_real_kueue(
    bridge: Bridge, dev_twin: DevTwin, namespace: str
) -> None:
    kit = bridge.cluster.kit
    real = Side("real cluster", bridge.client, bridge.kubeconfig, kit, bridge.kueue_version, {})
    dev = Side("devcluster", dev_twin.client, dev_twin.kubeconfig, kit, bridge.kueue_version, {})
    await dev.client.create(NAMESPACE_GVK, {"metadata": {"name": namespace}})  # (it makes "default" itself)
    sides = (real, dev)
    cluster_queue = ""
    for side in sides:
        cluster_queue = await apply_queues(side.client, namespace, cpu="2")

    async def create(job: str) -> None:
        for side in sides:
            created = await side.client.create(JOB, batch_job(job, annotations=RUNNING), namespace=namespace)
            side.uids[job] = created["metadata"]["uid"]

    async def settled(statuses: dict[str, str], *, pending: int, admitted: int) -> None:
        for side in sides:
            await _settled(
                side, namespace, cluster_queue, statuses=statuses, pending=pending, admitted=admitted
            )

    # two Jobs fill the ClusterQueue (one after the other: Kueue's FIFO is by creation second)
    await create("a")
    await settled({"a": "ADMITTED"}, pending=0, admitted=1)
    await create("b")
    await settled({"a": "ADMITTED", "b": "ADMITTED"}, pending=0, admitted=2)
    await create("c")
    await settled({"a": "ADMITTED", "b": "ADMITTED", "c": "PENDING"}, pending=1, admitted=2)
    await _same_everywhere(real, dev, namespace, cluster_queue)

    # kueuectl stop workload: spec.active=false -> evicted (Deactivated) -> Job suspended; c runs
    for side in sides:
        said = await asyncio.to_thread(
            side.kueuectl, "stop", "workload", "-n", namespace, side.workload_name("a")
        )
        assert said.strip() == f"workload.kueue.x-k8s.io/{side.workload_name('a')} stopped"
    await settled({"a": "PENDING", "b": "ADMITTED", "c": "ADMITTED"}, pending=0, admitted=2)
    stopped = {}
    for side in sides:

        async def suspended(side: Side = side) -> dict[str, Any] | None:
            job: dict[str, Any] = await side.client.get(JOB, "a", namespace=namespace)
            annotations = job["metadata"].get("annotations") or {}
            done = job["spec"]["suspend"] is True and "kueue.x-k8s.io/stopping" not in annotations
            return job if done else None

        await eventually(
            suspended, what=f"{side.label}: Job a suspended by our reconciler", within_seconds=60
        )
        workload = await owned_workload(side.client, namespace, owner_uid=side.uids["a"])
        assert workload is not None and workload["spec"]["active"] is False
        evicted = condition(workload, "Evicted")
        assert evicted is not None
        assert (evicted["status"], evicted["reason"], evicted["message"]) == (
            "True",
            "Deactivated",
            "The workload is deactivated",
        ), side.label
        stopped[side.label] = _conditions(workload, kueue_version=bridge.kueue_version)
    if bridge.kueue_version == "v0.19.2":
        # Kueue 0.20's workload controller (UnadmittedWorkloadsObservability on) turns the reason our
        # reconciler writes when it releases the quota (0.20's PendingEvaluation) into Deactivated,
        # as the stand-in does; 0.19's (gate off) leaves it (its own job integration writes Pending)
        deactivated = ("QuotaReserved", "False", "Deactivated", "The workload is deactivated")
        released = ("QuotaReserved", "False", "PendingEvaluation", "The workload is deactivated")
        assert deactivated in stopped[dev.label] and released in stopped[real.label]
        stopped[real.label] = sorted(deactivated if c == released else c for c in stopped[real.label])
    assert stopped[dev.label] == stopped[real.label], "the stopped Workload's conditions"
    await _same_everywhere(real, dev, namespace, cluster_queue)

    # kueuectl resume workload: queued again, behind the two running Jobs
    for side in sides:
        said = await asyncio.to_thread(
            side.kueuectl, "resume", "workload", "-n", namespace, side.workload_name("a")
        )
        assert said.strip() == f"workload.kueue.x-k8s.io/{side.workload_name('a')} resumed"
    await settled({"a": "PENDING", "b": "ADMITTED", "c": "ADMITTED"}, pending=1, admitted=2)
    for side in sides:
        workload = await side.client.get(WORKLOAD, side.workload_name("a"), namespace=namespace)
        requeued = condition(workload, "Requeued")
        assert requeued is not None
        assert (requeued["status"], requeued["reason"], requeued["message"]) == (
            "True",
            "Reactivated",
            "The workload was reactivated",
        ), side.label
    await _same_everywhere(real, dev, namespace, cluster_queue)

    # b succeeds (the test is the job controller on both): a runs
    for side in sides:
        job = await side.client.get(JOB, "b", namespace=namespace)
        finished = job_succeeded_status(now=now_rfc3339())
        finished["startTime"] = (job.get("status") or {}).get("startTime") or finished["startTime"]
        await side.client.patch(
            JOB,
            "b",
            {"status": {**finished, "active": 0, "ready": 0}},
            namespace=namespace,
            subresource="status",
        )
    await settled({"a": "ADMITTED", "b": "FINISHED", "c": "ADMITTED"}, pending=0, admitted=2)
    await _same_everywhere(real, dev, namespace, cluster_queue)


async def test_inactive_queues_read_the_same_on_the_devcluster_and_on_real_kueue(
    bridge: Bridge, dev_twin: DevTwin, namespace: str
) -> None:
    """A ClusterQueue naming flavors that do not exist yet and a LocalQueue naming no ClusterQueue:
    Kueue's reasons and messages on both queues and on the Workloads waiting in them, then the same
    ClusterQueue once its flavors exist."""
    kit = bridge.cluster.kit
    real = Side("real cluster", bridge.client, bridge.kubeconfig, kit, bridge.kueue_version, {})
    dev = Side("devcluster", dev_twin.client, dev_twin.kubeconfig, kit, bridge.kueue_version, {})
    await dev.client.create(NAMESPACE_GVK, {"metadata": {"name": namespace}})
    sides = (real, dev)
    cluster_queue, flavors = f"cq-{namespace}", [f"b-{namespace}", f"a-{namespace}"]
    for side in sides:
        await side.client.apply(
            CLUSTER_QUEUE,
            {
                "metadata": {"name": cluster_queue},
                "spec": {
                    "namespaceSelector": {},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [
                                {"name": name, "resources": [{"name": "cpu", "nominalQuota": "1"}]}
                                for name in flavors
                            ],
                        }
                    ],
                },
            },
            field_manager="e2e-test",
        )
        for name, target in (("q", cluster_queue), ("orphan", f"none-{namespace}")):
            await side.client.apply(
                LOCAL_QUEUE,
                {"metadata": {"name": name, "namespace": namespace}, "spec": {"clusterQueue": target}},
                field_manager="e2e-test",
            )
        for job, queue in (("held", "q"), ("lost", "orphan")):
            created = await side.client.create(
                JOB, batch_job(job, queue=queue, annotations=RUNNING), namespace=namespace
            )
            side.uids[job] = created["metadata"]["uid"]

    missing = ",".join(flavors)
    wanted = {
        "held": ("False", "Suspended", f"ClusterQueue {cluster_queue} is inactive"),
        "lost": ("False", "Misconfigured", f"ClusterQueue none-{namespace} doesn't exist"),
    }
    for side in sides:
        expected = wanted
        if side is real and bridge.kueue_version == "v0.19.2":
            # UnadmittedWorkloadsObservability off: Kueue 0.19's legacy reason for both blockers
            expected = {job: ("False", "Inadmissible", message) for job, (_, _, message) in wanted.items()}
        seen: list[Any] = []

        async def blocked(side: Side = side, expected: Any = expected, seen: list[Any] = seen) -> bool:
            cq = await side.client.get(CLUSTER_QUEUE, cluster_queue)
            active = condition(cq, "Active")
            found = {}
            for job in wanted:
                workload = await owned_workload(side.client, namespace, owner_uid=side.uids[job])
                state = condition(workload, "QuotaReserved")
                found[job] = (state["status"], state["reason"], state["message"]) if state else None
            orphan = await side.client.get(LOCAL_QUEUE, "orphan", namespace=namespace)
            pending = (
                (orphan.get("status") or {}).get("pendingWorkloads"),
                (cq.get("status") or {}).get("pendingWorkloads"),
            )
            seen[:] = [active, found, pending]
            return (
                active is not None
                and (active["status"], active["reason"]) == ("False", "FlavorNotFound")
                and active["message"]
                == f"Can't admit new workloads: references missing ResourceFlavor(s): {missing}."
                and found == expected
                and pending == (1, 1)
            )

        try:
            await eventually(
                blocked, what=f"{side.label}: the queues inactive", within_seconds=60, interval=0.2
            )
        except AssertionError as exc:
            raise AssertionError(f"{side.label}: last seen (Active, QuotaReserved, pending): {seen}") from exc
    for side in (dev, real):
        [row] = [r for r in await side.listed("clusterqueue", None) if r["NAME"] == cluster_queue]
        assert (row["ACTIVE"], row["PENDING WORKLOADS"]) == ("false", "1"), side.label
    for local_queue in ("q", "orphan"):
        real_lq = await real.client.get(LOCAL_QUEUE, local_queue, namespace=namespace)
        dev_lq = await dev.client.get(LOCAL_QUEUE, local_queue, namespace=namespace)
        assert _without_times(dev_lq["status"]) == _without_times(real_lq["status"]), local_queue
    assert await dev.queue_row("localqueue", "orphan", namespace) == await real.queue_row(
        "localqueue", "orphan", namespace
    )
    real_cq = await real.client.get(CLUSTER_QUEUE, cluster_queue)
    dev_cq = await dev.client.get(CLUSTER_QUEUE, cluster_queue)
    assert _without_times(dev_cq["status"]) == _without_times(real_cq["status"])
    assert (
        dev_cq["metadata"]["finalizers"]
        == real_cq["metadata"]["finalizers"]
        == ["kueue.x-k8s.io/resource-in-use"]
    )

    # the flavors appear: the ClusterQueue turns active and admits the held Job
    for side in sides:
        for name in flavors:
            await side.client.apply(FLAVOR, {"metadata": {"name": name}}, field_manager="e2e-test")
    for side in sides:

        async def running(side: Side = side) -> bool:
            job = await side.client.get(JOB, "held", namespace=namespace)
            return job["spec"]["suspend"] is False

        await eventually(running, what=f"{side.label}: the held Job admitted and started", within_seconds=60)
        statuses = {"held": "ADMITTED", "lost": "PENDING"}
        await _settled(side, namespace, cluster_queue, statuses=statuses, pending=0, admitted=1)
    await _same_everywhere(real, dev, namespace, cluster_queue)
