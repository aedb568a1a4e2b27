"""``kueue-bridge explain``: every verdict, on the devcluster with the Kueue stand-in.

Each test builds the situation the verdict names (in its own namespace, with its own ClusterQueue)
the way users, kueue-bridge and Kueue would write it -- the stand-in reserves quota FIFO within
nominal quota and writes Kueue's conditions -- and checks the verdict line and the evidence that
backs it. Quota verdicts also run the real reconciler, so they cover the whole chain.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
from collections.abc import AsyncIterator, Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from bridge_tools.explain.cli import main as explain_main
from bridge_tools.explain.cluster_view import (
    ADMISSION_CHECK,
    LOCAL_QUEUE,
    NAMESPACE,
    WORKLOAD,
    WORKLOAD_PRIORITY_CLASS,
)
from bridge_tools.explain.diagnosis import ObjectNotFound
from bridge_tools.explain.verdict import Explanation, State, render_json, render_text
from devcluster.server import ThreadedDevCluster
from shared.config import Configuration, parse_config
from shared.kube import KubeClient
from tests.e2e.conftest import kube_client
from tests.e2e.explain_support import (
    JOB,
    batch_job,
    create_queues,
    create_workload,
    explain_cluster,
    explained,
    wait_for_verdict,
)
from tests.e2e.test_reconciler_e2e import RecordedEvents, running_reconciler
from tests.polling import eventually

pytestmark = [pytest.mark.e2e, pytest.mark.needs_shared]


@pytest.fixture(scope="module")
def cluster(shared_dir: Path) -> Iterator[ThreadedDevCluster]:
    yield from explain_cluster(shared_dir)


@pytest.fixture
async def client(cluster: ThreadedDevCluster) -> AsyncIterator[KubeClient]:
    async with kube_client(cluster.kubeconfig_path) as kube:
        yield kube


def config(text: str = "") -> Configuration:
    return parse_config(
        f"apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n{text}", source="test.yaml"
    )


def fields(explanation: Explanation, title: str) -> dict[str, str]:
    return dict(explanation.section(title).fields)


@contextlib.asynccontextmanager
async def reconciling(client: KubeClient, namespace: str) -> AsyncIterator[None]:
    """The real reconciler, managing ``namespace`` only (other tests' objects are left alone)."""
    only = config(
        f"managedJobsNamespaceSelector: {{matchLabels: {{kubernetes.io/metadata.name: {namespace}}}}}\n"
    )
    async with running_reconciler(client, RecordedEvents(), config=only):
        yield


def has_condition(condition_type: str) -> Callable[[Explanation], bool]:
    return lambda explanation: any(row[0] == condition_type for row in explanation.section("Workload").rows)


# --- not queued -------------------------------------------------------------------------------------


async def test_no_queue_label(client: KubeClient) -> None:
    await create_queues(client, namespace="ex-nolabel", cluster_queue="cq-nolabel")
    await client.create(JOB, batch_job("plain", namespace="ex-nolabel", queue=None, suspend=False))
    explanation = await explained(client, "plain", namespace="ex-nolabel")
    assert explanation.state is State.NOT_QUEUED
    assert explanation.verdict == (
        "Not queued: no kueue.x-k8s.io/queue-name label and manageJobsWithoutQueueName is off"
    )
    assert fields(explanation, "Job")["queue name"] == "- (no kueue.x-k8s.io/queue-name label)"


async def test_namespace_not_selected(client: KubeClient) -> None:
    await create_queues(client, namespace="ex-unselected", cluster_queue="cq-unselected")
    await client.create(JOB, batch_job("j", namespace="ex-unselected"))
    selective = config("managedJobsNamespaceSelector: {matchLabels: {kueue: enabled}}\n")
    explanation = await explained(client, "j", namespace="ex-unselected", config=selective)
    assert (
        explanation.verdict
        == "Not queued: namespace ex-unselected does not match managedJobsNamespaceSelector"
    )
    assert fields(explanation, "Job")["managedJobsNamespaceSelector"] == "kueue=enabled"


async def test_owned_by_a_managed_ancestor(client: KubeClient) -> None:
    await create_queues(client, namespace="ex-child", cluster_queue="cq-child")
    parent = await client.create(JOB, batch_job("parent", namespace="ex-child"))
    owner = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "name": "parent",
        "uid": parent["metadata"]["uid"],
        "controller": True,
    }
    await client.create(JOB, batch_job("child", namespace="ex-child", queue=None, owner=owner))
    explanation = await explained(client, "child", namespace="ex-child")
    assert explanation.state is State.CHILD
    assert explanation.verdict == (
        "Managed by parent: Job ex-child/parent owns it and holds the Workload; "
        "run: kueue-bridge explain job/parent -n ex-child"
    )


async def test_missing_workload_priority_class(client: KubeClient) -> None:
    await create_queues(client, namespace="ex-wpc", cluster_queue="cq-wpc")
    job = batch_job("urgent", namespace="ex-wpc", labels={"kueue.x-k8s.io/priority-class": "urgent"})
    await client.create(JOB, job)
    explanation = await explained(client, "urgent", namespace="ex-wpc")
    assert explanation.verdict == 'Not queued: WorkloadPriorityClass "urgent" not found'
    await client.create(WORKLOAD_PRIORITY_CLASS, {"metadata": {"name": "urgent"}, "value": 1000})
    explanation = await explained(client, "urgent", namespace="ex-wpc")
    assert explanation.state is State.WAITING  # the class exists now: only the Workload is missing


async def test_running_without_a_webhook(client: KubeClient) -> None:
    await create_queues(client, namespace="ex-nohook", cluster_queue="cq-nohook")
    await client.create(JOB, batch_job("escaped", namespace="ex-nohook", suspend=False))
    explanation = await explained(client, "escaped", namespace="ex-nohook")
    assert explanation.verdict == (
        "Not queued: it runs without a Workload: no mutating webhook is registered for jobs.batch, "
        "so nothing suspended it when it was created"
    )
    assert fields(explanation, "Job")["mutating webhooks"] == "none"


async def test_waiting_for_a_reconciler(client: KubeClient) -> None:
    await create_queues(client, namespace="ex-nolease", cluster_queue="cq-nolease")
    await client.create(JOB, batch_job("waits", namespace="ex-nolease"))
    explanation = await explained(client, "waits", namespace="ex-nolease")
    assert explanation.verdict == (
        "Waiting: no Workload yet: no kueue-bridge reconciler holds the Lease kueue-system/kueue-bridge-reconciler"
    )
    without_election = config("leaderElection: {leaderElect: false}\n")
    explanation = await explained(client, "waits", namespace="ex-nolease", config=without_election)
    assert explanation.verdict.startswith(
        "Waiting: kueue-bridge's reconciler has not created Workload job-waits-"
    )


# --- pending: the queue chain -------------------------------------------------------------------------


async def test_local_queue_missing(client: KubeClient) -> None:
    await create_queues(client, namespace="ex-nolq", cluster_queue="cq-nolq", local_queue=None)
    job = await client.create(JOB, batch_job("j", namespace="ex-nolq", queue="nope"))
    await create_workload(client, job)
    explanation = await wait_for_verdict(
        client, "j", namespace="ex-nolq", verdict="Pending: LocalQueue ex-nolq/nope doesn't exist"
    )
    assert fields(explanation, "LocalQueue")["exists"] == "false"


async def test_local_queue_stopped(client: KubeClient) -> None:
    await create_queues(
        client, namespace="ex-lqstop", cluster_queue="cq-lqstop", local_queue_spec={"stopPolicy": "Hold"}
    )
    job = await client.create(JOB, batch_job("j", namespace="ex-lqstop"))
    await create_workload(client, job)
    await wait_for_verdict(
        client,
        "j",
        namespace="ex-lqstop",
        verdict="Pending: LocalQueue ex-lqstop/q is stopped (stopPolicy: Hold)",
    )


async def test_cluster_queue_missing(client: KubeClient) -> None:
    await create_queues(client, namespace="ex-nocq", cluster_queue="cq-nocq", local_queue=None)
    await client.create(
        LOCAL_QUEUE, {"metadata": {"name": "q"}, "spec": {"clusterQueue": "ghost"}}, namespace="ex-nocq"
    )
    job = await client.create(JOB, batch_job("j", namespace="ex-nocq"))
    await create_workload(client, job)
    await wait_for_verdict(
        client, "j", namespace="ex-nocq", verdict="Pending: ClusterQueue ghost doesn't exist"
    )


async def test_cluster_queue_stopped(client: KubeClient) -> None:
    await create_queues(
        client,
        namespace="ex-cqstop",
        cluster_queue="cq-cqstop",
        cluster_queue_spec={"stopPolicy": "HoldAndDrain"},
    )
    job = await client.create(JOB, batch_job("j", namespace="ex-cqstop"))
    await create_workload(client, job)
    explanation = await explained(client, "j", namespace="ex-cqstop")
    assert explanation.verdict == (
        "Pending: ClusterQueue cq-cqstop is inactive: Can't admit new workloads: is stopped"
    )
    assert fields(explanation, "ClusterQueue")["stopPolicy"] == "HoldAndDrain"


async def test_cluster_queue_missing_flavor(client: KubeClient) -> None:
    await create_queues(client, namespace="ex-noflavor", cluster_queue="cq-noflavor", flavor=False)
    job = await client.create(JOB, batch_job("j", namespace="ex-noflavor"))
    await create_workload(client, job)
    explanation = await explained(client, "j", namespace="ex-noflavor")
    assert explanation.verdict == (
        "Pending: ClusterQueue cq-noflavor is inactive: Can't admit new workloads: "
        "references missing ResourceFlavor(s): cq-noflavor-flavor"
    )


async def test_namespace_not_selected_by_the_cluster_queue(client: KubeClient) -> None:
    await create_queues(
        client,
        namespace="ex-cqsel",
        cluster_queue="cq-cqsel",
        cluster_queue_spec={"namespaceSelector": {"matchLabels": {"team": "ml"}}},
    )
    job = await client.create(JOB, batch_job("j", namespace="ex-cqsel"))
    await create_workload(client, job)
    explanation = await explained(client, "j", namespace="ex-cqsel")
    assert (
        explanation.verdict
        == "Pending: namespace ex-cqsel does not match ClusterQueue cq-cqsel's namespaceSelector"
    )
    assert (
        fields(explanation, "ClusterQueue")["namespaceSelector"]
        == "team=ml; namespace ex-cqsel: not selected"
    )


async def test_quota_in_use_with_the_reconciler(client: KubeClient) -> None:
    """Two 1-cpu jobs, 1 cpu of quota: the first runs, the second waits for its cpu."""
    await create_queues(client, namespace="ex-quota", cluster_queue="cq-quota", cpu="1")
    await client.create(JOB, batch_job("first", namespace="ex-quota"))
    async with reconciling(client, "ex-quota"):
        await wait_for_verdict(
            client, "first", namespace="ex-quota", verdict="Running: admitted by ClusterQueue cq-quota"
        )
        await client.create(JOB, batch_job("second", namespace="ex-quota"))
        explanation = await wait_for_verdict(
            client,
            "second",
            namespace="ex-quota",
            verdict="Pending: ClusterQueue cq-quota has 1/1 cpu in use in flavor cq-quota-flavor; this job needs 1 cpu",
            until=has_condition("QuotaReserved"),
        )
    assert explanation.section("Quota").rows == [("cq-quota-flavor", "cpu", "1", "1", "-", "1")]
    assert (
        fields(explanation, "ClusterQueue")["position"]
        == "1 of 1 pending in the ClusterQueue, 1 of 1 in LocalQueue ex-quota/q"
    )
    assert (
        explanation.section("ClusterQueue")
        .notes[0]
        .startswith("position: estimated (Kueue's visibility API is not served) in Kueue's order")
    )
    conditions = {row[0]: row for row in explanation.section("Workload").rows}
    assert conditions["QuotaReserved"][1:3] == ("False", "WaitingForQuota")
    assert "insufficient unused quota for cpu in flavor cq-quota-flavor" in conditions["QuotaReserved"][4]


async def test_request_larger_than_the_quota(client: KubeClient) -> None:
    await create_queues(client, namespace="ex-huge", cluster_queue="cq-huge", cpu="2")
    job = await client.create(JOB, batch_job("huge", namespace="ex-huge", cpu="3"))
    await create_workload(client, job)
    await wait_for_verdict(
        client,
        "huge",
        namespace="ex-huge",
        verdict="Pending: this job needs 3 cpu, more than ClusterQueue cq-huge can ever give in flavor "
        "cq-huge-flavor (2 nominal)",
    )


async def test_a_cluster_queue_in_a_cohort_counts_what_the_cohort_can_lend(client: KubeClient) -> None:
    """cq-coh-a (2 cpu) and cq-coh-b (4 cpu) share cohort pool-x and flavor: with both full, a
    third job waits for quota the cohort does not have either (the stand-in never borrows, so
    the jobs that hold quota do so within their own nominal quota)."""
    flavor = "cq-coh-a-flavor"

    def spec(cpu: str) -> dict[str, Any]:
        group = {
            "coveredResources": ["cpu"],
            "flavors": [{"name": flavor, "resources": [{"name": "cpu", "nominalQuota": cpu}]}],
        }
        return {"cohortName": "pool-x", "resourceGroups": [group]}

    await create_queues(client, namespace="ex-coh-a", cluster_queue="cq-coh-a", cluster_queue_spec=spec("2"))
    await create_queues(
        client, namespace="ex-coh-b", cluster_queue="cq-coh-b", cluster_queue_spec=spec("4"), flavor=False
    )
    await create_workload(client, await client.create(JOB, batch_job("mine", namespace="ex-coh-a", cpu="2")))
    await create_workload(
        client, await client.create(JOB, batch_job("theirs", namespace="ex-coh-b", cpu="4"))
    )
    for name, namespace in (("mine", "ex-coh-a"), ("theirs", "ex-coh-b")):
        await wait_for_verdict(client, name, namespace=namespace, verdict="Admitted:")
    await create_workload(client, await client.create(JOB, batch_job("next", namespace="ex-coh-a", cpu="2")))
    explanation = await wait_for_verdict(
        client,
        "next",
        namespace="ex-coh-a",
        verdict=f"Pending: ClusterQueue cq-coh-a has 2/2 cpu in use in flavor {flavor} and 0 available with "
        "cohort pool-x's unused quota; this job needs 2 cpu",
    )
    quota = explanation.section("Quota")
    assert quota.columns == (
        "FLAVOR",
        "RESOURCE",
        "USED",
        "NOMINAL",
        "BORROWING LIMIT",
        "LENDING LIMIT",
        "AVAILABLE",
        "THIS JOB",
    )
    assert quota.rows == [(flavor, "cpu", "2", "2", "-", "-", "0", "2")]
    assert quota.notes[1].startswith(
        "AVAILABLE: what Kueue's flavor assigner sees: its unused quota plus what cohort pool-x "
        "(tree pool-x: 2 ClusterQueue(s), 1 Cohort(s)) can lend it"
    )


async def test_resource_without_quota(client: KubeClient) -> None:
    await create_queues(client, namespace="ex-gpu", cluster_queue="cq-gpu")
    job = batch_job("gpu", namespace="ex-gpu")
    job["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["nvidia.com/gpu"] = "1"
    await create_workload(client, await client.create(JOB, job))
    await wait_for_verdict(
        client,
        "gpu",
        namespace="ex-gpu",
        verdict="Pending: ClusterQueue cq-gpu has no quota for nvidia.com/gpu",
    )


async def test_strict_fifo_position(client: KubeClient) -> None:
    await create_queues(
        client,
        namespace="ex-fifo",
        cluster_queue="cq-fifo",
        cpu="1",
        cluster_queue_spec={"queueingStrategy": "StrictFIFO"},
    )
    # created within a second of each other: Kueue breaks equal creation times by UID, so the
    # priorities pin the order (big, then blocked, then small)
    for name, cpu, priority in (("big", "1", 2), ("blocked", "1", 1), ("small", "500m", 0)):
        job = await client.create(JOB, batch_job(name, namespace="ex-fifo", cpu=cpu))
        await create_workload(client, job, priority=priority)
    await wait_for_verdict(
        client, "big", namespace="ex-fifo", verdict="Admitted: admitted by ClusterQueue cq-fifo"
    )
    explanation = await wait_for_verdict(client, "small", namespace="ex-fifo", verdict="Pending:")
    assert fields(explanation, "ClusterQueue")["position"].startswith("2 of 2 pending")
    assert "StrictFIFO: the Workloads ahead block this one" in explanation.section("ClusterQueue").notes


# --- reserved, admitted, evicted, finished ------------------------------------------------------------


async def test_admitted_waiting_for_a_reconciler(client: KubeClient) -> None:
    await create_queues(client, namespace="ex-admitted", cluster_queue="cq-admitted")
    await create_workload(client, await client.create(JOB, batch_job("j", namespace="ex-admitted")))
    explanation = await wait_for_verdict(client, "j", namespace="ex-admitted", verdict="Admitted:")
    assert explanation.verdict == (
        "Admitted: admitted by ClusterQueue cq-admitted; "
        "no kueue-bridge reconciler holds the Lease kueue-system/kueue-bridge-reconciler"
    )
    assert fields(explanation, "Workload")["admitted to"] == "cq-admitted"


async def test_waiting_for_an_admission_check(client: KubeClient) -> None:
    controller = "example.com/capacity"  # not a MultiKueue controller: its state and message only
    await client.create(
        ADMISSION_CHECK, {"metadata": {"name": "cap"}, "spec": {"controllerName": controller}}
    )
    await create_queues(
        client,
        namespace="ex-check",
        cluster_queue="cq-check",
        cluster_queue_spec={"admissionChecksStrategy": {"admissionChecks": [{"name": "cap"}]}},
    )
    workload = await create_workload(client, await client.create(JOB, batch_job("j", namespace="ex-check")))
    await wait_for_verdict(client, "j", namespace="ex-check", verdict="Quota reserved:")

    async def check_message() -> bool:
        current = await client.get(WORKLOAD, workload["metadata"]["name"], namespace="ex-check")
        current["status"]["admissionChecks"][0]["message"] = "waiting for capacity"
        await client.update_status(WORKLOAD, current, namespace="ex-check")
        return True

    await eventually(check_message, what="the check's message written")
    explanation = await wait_for_verdict(
        client,
        "j",
        namespace="ex-check",
        verdict="Quota reserved: in ClusterQueue cq-check, waiting for admission check 'cap' "
        "(Pending: waiting for capacity)",
    )
    assert explanation.section("Admission checks").rows == [
        ("cap", controller, "Pending", "waiting for capacity")
    ]
    assert explanation.section("MultiKueue").empty


def _condition(condition_type: str, status: str, reason: str, message: str) -> dict[str, Any]:
    return {
        "type": condition_type,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


async def test_evicted_with_requeue_backoff(client: KubeClient) -> None:
    await create_queues(client, namespace="ex-evicted", cluster_queue="cq-evicted")
    workload = await create_workload(client, await client.create(JOB, batch_job("j", namespace="ex-evicted")))
    requeue_at = (datetime.now(UTC) + timedelta(minutes=10)).strftime("%Y-%m-%dT%H:%M:%SZ")
    message = "Exceeded the PodsReady timeout ex-evicted/" + workload["metadata"]["name"]
    workload["status"] = {
        "conditions": [
            _condition("QuotaReserved", "False", "Pending", message),
            _condition("Evicted", "True", "PodsReadyTimeout", message),
            _condition("Requeued", "False", "PodsReadyTimeout", message),
        ],
        "requeueState": {"count": 2, "requeueAt": requeue_at},
        "schedulingStats": {"evictions": [{"reason": "PodsReadyTimeout", "underlyingCause": "", "count": 2}]},
    }
    await client.update_status(WORKLOAD, workload, namespace="ex-evicted")
    explanation = await explained(client, "j", namespace="ex-evicted")
    assert (
        explanation.verdict == f"Evicted: PodsReadyTimeout: {message}; requeued after backoff at {requeue_at}"
    )
    eviction = fields(explanation, "Eviction and requeue")
    assert eviction["evictions"] == "PodsReadyTimeout x2"
    assert eviction["requeue count"] == "2"
    assert eviction["backoff until"].startswith(f"{requeue_at} (in 9m")


async def test_deactivated(client: KubeClient) -> None:
    await create_queues(client, namespace="ex-inactive", cluster_queue="cq-inactive")
    job = await client.create(JOB, batch_job("j", namespace="ex-inactive"))
    workload = await create_workload(client, job, active=False)
    explanation = await explained(client, "j", namespace="ex-inactive")
    assert (
        explanation.verdict
        == f"Deactivated: Workload {workload['metadata']['name']} is deactivated (spec.active: false)"
    )


async def test_finished(client: KubeClient) -> None:
    await create_queues(client, namespace="ex-done", cluster_queue="cq-done")
    workload = await create_workload(client, await client.create(JOB, batch_job("j", namespace="ex-done")))
    workload["status"] = {
        "conditions": [_condition("Finished", "True", "Succeeded", "Job finished successfully")]
    }
    await client.update_status(WORKLOAD, workload, namespace="ex-done")
    explanation = await explained(client, "j", namespace="ex-done")
    assert explanation.verdict == (
        f"Finished: Workload {workload['metadata']['name']} finished (Succeeded): Job finished successfully"
    )


async def test_not_found(client: KubeClient) -> None:
    with pytest.raises(
        ObjectNotFound, match=re.escape('jobs.batch "ghost" not found in namespace "default"')
    ):
        await explained(client, "ghost", namespace="default")


async def test_text_and_json_carry_the_same_evidence(client: KubeClient) -> None:
    await create_queues(client, namespace="ex-render", cluster_queue="cq-render")
    await create_workload(client, await client.create(JOB, batch_job("j", namespace="ex-render")))
    explanation = await wait_for_verdict(client, "j", namespace="ex-render", verdict="Admitted:")
    text = render_text(explanation)
    document = render_json(explanation)
    assert text.splitlines()[0] == document["verdict"] == explanation.verdict
    for section in document["sections"]:
        assert f"\n{section['title']}\n" in text
        for key, value in section["fields"].items():
            assert f"  {key}" in text and value in text


def test_the_command_exits_0_with_a_verdict_and_1_when_the_job_does_not_exist(
    cluster: ThreadedDevCluster, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = ["--kubeconfig", str(cluster.kubeconfig_path)]
    assert explain_main(["job/ghost", "-n", "default", *kubeconfig]) == 1
    assert capsys.readouterr() == (
        "",
        'kueue-bridge explain: jobs.batch "ghost" not found in namespace "default"\n',
    )

    async def job_without_label() -> None:
        async with kube_client(cluster.kubeconfig_path) as client:
            await client.create(NAMESPACE, {"metadata": {"name": "ex-cli"}})
            await client.create(JOB, batch_job("plain", namespace="ex-cli", queue=None))

    asyncio.run(job_without_label())
    assert explain_main(["jobs.batch/plain", "-n", "ex-cli", "-o", "json", *kubeconfig]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["state"] == "NotQueued"
    assert document["verdict"].startswith("Not queued: no kueue.x-k8s.io/queue-name label")
    assert document["sections"][0]["fields"]["name"] == "ex-cli/plain"


def test_without_n_the_namespace_is_the_kubeconfig_contexts(
    cluster: ThreadedDevCluster, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    document = yaml.safe_load(Path(cluster.kubeconfig_path).read_text())
    for context in document["contexts"]:
        context["context"]["namespace"] = "ex-context"
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump(document))

    async def job_in_the_contexts_namespace() -> None:
        async with kube_client(cluster.kubeconfig_path) as client:
            await client.create(NAMESPACE, {"metadata": {"name": "ex-context"}})
            await client.create(JOB, batch_job("plain", namespace="ex-context", queue=None))

    asyncio.run(job_in_the_contexts_namespace())
    assert explain_main(["job/plain", "--kubeconfig", str(kubeconfig), "-o", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["sections"][0]["fields"]["name"] == "ex-context/plain"
    # the context's namespace, not "default": a job only in "default" is not found without -n
    assert explain_main(["job/ghost", "--kubeconfig", str(kubeconfig)]) == 1
    assert 'not found in namespace "ex-context"' in capsys.readouterr().err
