"""AppWrapper (real CRD) and a declarative CRD of our own, reconciled on the devcluster.

The same reconcile steps as for batch/Job, through the other two kinds of adapter: the built-in
AppWrapper one (admission goes to ``spec.components[i].podSetInfos``) and a declarative adapter
from ``integrations.externalFrameworks`` (a ``TrainingRun`` whose suspend field is ``spec.paused``).
The Workload CRD is Kueue's real one, so pod sets built from these kinds must survive its schema.
Kueue is played by the test (admission and eviction written to Workload status).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from devcluster.server import ThreadedDevCluster
from shared.config import parse_config
from shared.kube import GroupVersionKind, KubeClient
from tests.e2e.conftest import (
    CRD_GVK,
    create_namespace,
    eventually,
    install_crds,
    kube_client,
    wait_served,
    write_latest,
)
from tests.e2e.test_reconciler_e2e import (
    WORKLOAD,
    RecordedEvents,
    condition,
    running_reconciler,
    setup_cluster,
)
from tests.e2e.test_reconciler_steps import NOW, has

pytestmark = [pytest.mark.e2e, pytest.mark.needs_shared]

APPWRAPPER = GroupVersionKind("workload.codeflare.dev", "v1beta2", "AppWrapper")
TRAINING_RUN = GroupVersionKind("ml.example.com", "v1alpha1", "TrainingRun")
CONFIG = """
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
integrations:
  frameworks: [workload.codeflare.dev/appwrapper]
  externalFrameworks:
  - name: TrainingRun.v1alpha1.ml.example.com
    adapter:
      suspend: {path: spec.paused}
      podSets:
      - name: main
        template: spec.template
        count: {path: spec.replicas}
      finished: "has(object.status) && has(object.status.phase) && object.status.phase in ['Succeeded', 'Failed']"
      succeeded: "object.status.phase == 'Succeeded'"
"""
PRESERVE = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
TRAINING_RUN_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "trainingruns.ml.example.com"},
    "spec": {
        "group": "ml.example.com",
        "scope": "Namespaced",
        "names": {"plural": "trainingruns", "singular": "trainingrun", "kind": "TrainingRun"},
        "versions": [
            {
                "name": "v1alpha1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "paused": {"type": "boolean"},
                                    "replicas": {"type": "integer"},
                                    "template": PRESERVE,
                                },
                            },
                            "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
                        },
                    }
                },
            }
        ],
    },
}
POD_SPEC = {
    "restartPolicy": "Never",
    "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
}
_namespaces = itertools.count()


@pytest.fixture(scope="module")
def cluster(shared_dir: Path) -> Iterator[ThreadedDevCluster]:
    async def install(kubeconfig: Path) -> None:
        async with kube_client(kubeconfig) as client:
            await setup_cluster(client, shared_dir, namespace=None)
            await install_crds(
                client, [shared_dir / "crds" / "appwrapper" / "workload.codeflare.dev_appwrappers.yaml"]
            )
            await client.create(CRD_GVK, TRAINING_RUN_CRD)
            await wait_served(
                client, (WORKLOAD, APPWRAPPER, TRAINING_RUN)
            )  # CRDs established before any test

    with ThreadedDevCluster() as started:
        asyncio.run(install(started.kubeconfig_path))
        yield started


@pytest.fixture
async def ns(cluster: ThreadedDevCluster) -> str:
    return await create_namespace(cluster.kubeconfig_path, f"frameworks-{next(_namespaces)}")


@contextlib.asynccontextmanager
async def reconciling(client: KubeClient) -> AsyncIterator[RecordedEvents]:
    events = RecordedEvents()
    async with running_reconciler(client, events, config=parse_config(CONFIG, source="frameworks-config")):
        yield events


async def the_workload(client: KubeClient, ns: str, check: Any, *, what: str) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        items = (await client.list(WORKLOAD, namespace=ns))["items"]
        assert len(items) <= 1, f"more than one Workload: {[i['metadata']['name'] for i in items]}"
        return items[0] if items and check(items[0]) else None

    result: dict[str, Any] = await eventually(probe, what=what)
    return result


async def the_object(
    client: KubeClient, gvk: GroupVersionKind, ns: str, check: Any, *, what: str
) -> dict[str, Any]:
    async def probe() -> dict[str, Any] | None:
        current = await client.get(gvk, "sample", namespace=ns)
        return current if check(current) else None

    result: dict[str, Any] = await eventually(probe, what=what)
    return result


async def admit(client: KubeClient, workload: dict[str, Any]) -> None:
    """Kueue's scheduler: one assignment per pod set on ``golden-spot``; a past eviction turns False."""

    def reserve(latest: dict[str, Any]) -> None:
        assignments = [
            {
                "name": p["name"],
                "count": p["count"],
                "flavors": {"cpu": "golden-spot"},
                "resourceUsage": {"cpu": str(p["count"])},
            }
            for p in latest["spec"]["podSets"]
        ]
        status = latest.setdefault("status", {})
        status["admission"] = {"clusterQueue": "golden-cq", "podSetAssignments": assignments}
        status["conditions"] = [
            c for c in status.get("conditions", []) if c["type"] not in ("QuotaReserved", "Admitted")
        ]
        for previous in status["conditions"]:
            if previous["type"] in ("Evicted", "Preempted") and previous["status"] == "True":
                previous.update(
                    status="False", message=f"Previously: {previous['message']}", lastTransitionTime=NOW
                )
        for condition_type, reason in (("QuotaReserved", "QuotaReserved"), ("Admitted", "Admitted")):
            status["conditions"].append(
                {
                    "type": condition_type,
                    "status": "True",
                    "reason": reason,
                    "message": reason,
                    "lastTransitionTime": NOW,
                }
            )

    metadata = workload["metadata"]
    await write_latest(
        client,
        WORKLOAD,
        metadata["name"],
        namespace=metadata["namespace"],
        change=reserve,
        kueue_admission=True,
    )


async def preempt(client: KubeClient, workload: dict[str, Any]) -> None:
    def evict(latest: dict[str, Any]) -> None:
        latest["status"]["conditions"].append(
            {
                "type": "Evicted",
                "status": "True",
                "reason": "Preempted",
                "message": "preempted",
                "lastTransitionTime": NOW,
            }
        )

    metadata = workload["metadata"]
    await write_latest(
        client,
        WORKLOAD,
        metadata["name"],
        namespace=metadata["namespace"],
        change=evict,
        kueue_admission=True,
    )


def succeeded(obj: dict[str, Any]) -> None:
    obj["status"] = {"phase": "Succeeded"}


def failed(obj: dict[str, Any]) -> None:
    obj["status"] = {"phase": "Failed"}


def labelled(ns: str, body: dict[str, Any]) -> dict[str, Any]:
    body["metadata"] = {
        "name": "sample",
        "namespace": ns,
        "labels": {"kueue.x-k8s.io/queue-name": "golden-q"},
    }
    return body


async def test_appwrapper_is_queued_started_with_pod_set_infos_and_finished(
    cluster: ThreadedDevCluster, ns: str
) -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "inner"},
        "spec": {"parallelism": 2, "completions": 2, "template": {"spec": POD_SPEC}},
    }
    wrapper = labelled(
        ns,
        {
            "apiVersion": "workload.codeflare.dev/v1beta2",
            "kind": "AppWrapper",
            "spec": {"suspend": True, "components": [{"template": job}]},
        },
    )
    async with kube_client(cluster.kubeconfig_path) as client:
        await client.create(APPWRAPPER, wrapper, namespace=ns)
        async with reconciling(client) as events:
            workload = await the_workload(
                client, ns, lambda w: condition(w, "PodsReady"), what="the Workload"
            )
            assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [("sample-0", 2)]
            assert workload["metadata"]["ownerReferences"][0]["kind"] == "AppWrapper"
            await admit(client, workload)
            running = await the_object(
                client, APPWRAPPER, ns, lambda o: o["spec"]["suspend"] is False, what="started"
            )
            infos = running["spec"]["components"][0]["podSetInfos"]
            assert infos[0]["nodeSelector"] == {"instance-type": "spot"}
            await write_latest(client, APPWRAPPER, "sample", namespace=ns, change=succeeded, status=True)
            finished = await the_workload(
                client,
                ns,
                lambda w: has(w, "Finished", "True", "Succeeded") and not w["metadata"].get("finalizers"),
                what="Finished Succeeded, released",
            )
        assert condition(finished, "Finished")["message"] == "AppWrapper finished successfully"  # type: ignore[index]
        assert ("Normal", "Started", "Admitted by clusterQueue golden-cq") in events.items


async def test_declarative_crd_is_started_stopped_and_requeued(cluster: ThreadedDevCluster, ns: str) -> None:
    run = labelled(
        ns,
        {
            "apiVersion": "ml.example.com/v1alpha1",
            "kind": "TrainingRun",
            "spec": {
                "paused": True,
                "replicas": 3,
                "template": {"metadata": {"labels": {"role": "w"}}, "spec": POD_SPEC},
            },
        },
    )
    async with kube_client(cluster.kubeconfig_path) as client:
        await client.create(TRAINING_RUN, run, namespace=ns)
        async with reconciling(client):
            workload = await the_workload(
                client, ns, lambda w: condition(w, "PodsReady"), what="the Workload"
            )
            assert [(p["name"], p["count"]) for p in workload["spec"]["podSets"]] == [("main", 3)]
            await admit(client, workload)
            running = await the_object(
                client, TRAINING_RUN, ns, lambda o: o["spec"]["paused"] is False, what="started"
            )
            template = running["spec"]["template"]
            assert template["spec"]["nodeSelector"] == {"instance-type": "spot"}
            assert {"role": "w", "kueue.x-k8s.io/podset": "main"}.items() <= template["metadata"][
                "labels"
            ].items()

            await preempt(
                client, await the_workload(client, ns, lambda w: True, what="the admitted Workload")
            )
            stopped = await the_object(
                client, TRAINING_RUN, ns, lambda o: o["spec"]["paused"] is True, what="paused"
            )
            assert stopped["spec"]["template"] == run["spec"]["template"]
            await the_workload(client, ns, lambda w: has(w, "Requeued", "True", "Preempted"), what="Requeued")

            await admit(client, await the_workload(client, ns, lambda w: True, what="the requeued Workload"))
            await the_object(
                client, TRAINING_RUN, ns, lambda o: o["spec"]["paused"] is False, what="restarted"
            )
            await write_latest(client, TRAINING_RUN, "sample", namespace=ns, change=failed, status=True)
            await the_workload(
                client, ns, lambda w: has(w, "Finished", "True", "Failed"), what="Finished Failed"
            )
