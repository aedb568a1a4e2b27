"""Helpers of the ``kueue-bridge explain`` tests on the devcluster (this module holds no tests).

* ``explain_cluster``: one devcluster with the Kueue stand-in and Kueue's real CRDs for a whole test
  module (each test works in its own namespace, with its own ClusterQueue and flavor, so tests do
  not see each other's quota).
* ``batch_job`` / ``create_queues`` / ``create_workload``: objects as users and kueue-bridge's
  reconciler would write them (``create_workload`` builds the Workload with the same shared code
  the reconciler uses, for tests that do not need a running reconciler).
* ``explained`` / ``wait_for_verdict``: run ``explain`` through a fresh ``ClusterView``, polling with
  a deadline while the stand-in converges.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bridge_tools.explain.cluster_view import (
    CLUSTER_QUEUE,
    LOCAL_QUEUE,
    NAMESPACE,
    RESOURCE_FLAVOR,
    WORKLOAD,
    ClusterView,
)
from bridge_tools.explain.diagnosis import ExplainSettings, explain
from bridge_tools.explain.verdict import Explanation
from bridge_tools.kinds import resolve_kind
from devcluster.apiserver import ServerOptions
from devcluster.server import ThreadedDevCluster
from shared.config import Configuration, default_config
from shared.frameworks.builtin_kinds import BATCH_JOB
from shared.frameworks.workload_builder import ResolvedPriority, construct_workload
from shared.kube import KubeClient
from tests.e2e.conftest import install_crds, kube_client
from tests.e2e.test_reconciler_e2e import KUEUE_CRDS
from tests.polling import eventually

__all__ = [
    "JOB",
    "batch_job",
    "create_queues",
    "create_workload",
    "explain_cluster",
    "explained",
    "kueue_crds",
    "wait_for_verdict",
]

JOB = BATCH_JOB.gvk


def kueue_crds(shared_dir: Path) -> list[Path]:
    return [shared_dir / "crds" / "kueue" / f"kueue.x-k8s.io_{name}.yaml" for name in KUEUE_CRDS]


def explain_cluster(shared_dir: Path) -> Iterator[ThreadedDevCluster]:
    """Body of a module-scoped fixture: the devcluster with the stand-in and the Kueue CRDs."""
    cluster = ThreadedDevCluster(options=ServerOptions(kueue_standin=True)).start()
    try:

        async def install() -> None:
            async with kube_client(cluster.kubeconfig_path) as client:
                await install_crds(client, kueue_crds(shared_dir))

        asyncio.run(install())
        yield cluster
    finally:
        cluster.stop()


def batch_job(
    name: str,
    *,
    namespace: str,
    queue: str | None = "q",
    cpu: str = "1",
    suspend: bool = True,
    labels: dict[str, str] | None = None,
    owner: dict[str, Any] | None = None,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
    if queue:
        metadata["labels"]["kueue.x-k8s.io/queue-name"] = queue
    if owner:
        metadata["ownerReferences"] = [owner]
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            "suspend": suspend,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
                    ],
                }
            },
        },
    }


async def create_queues(
    client: KubeClient,
    *,
    namespace: str,
    cluster_queue: str,
    cpu: str = "1",
    local_queue: str | None = "q",
    namespace_labels: dict[str, str] | None = None,
    cluster_queue_spec: dict[str, Any] | None = None,
    local_queue_spec: dict[str, Any] | None = None,
    flavor: bool = True,
) -> None:
    """The namespace, flavor ``<cq>-flavor``, ClusterQueue (cpu quota) and LocalQueue of one test."""
    await client.create(NAMESPACE, {"metadata": {"name": namespace, "labels": namespace_labels or {}}})
    flavor_name = f"{cluster_queue}-flavor"
    if flavor:
        await client.create(RESOURCE_FLAVOR, {"metadata": {"name": flavor_name}})
    spec: dict[str, Any] = {
        "namespaceSelector": {},
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [{"name": flavor_name, "resources": [{"name": "cpu", "nominalQuota": cpu}]}],
            }
        ],
        **(cluster_queue_spec or {}),
    }
    await client.create(CLUSTER_QUEUE, {"metadata": {"name": cluster_queue}, "spec": spec})
    if local_queue:
        await client.create(
            LOCAL_QUEUE,
            {
                "metadata": {"name": local_queue},
                "spec": {"clusterQueue": cluster_queue, **(local_queue_spec or {})},
            },
            namespace=namespace,
        )


async def create_workload(client: KubeClient, job: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """The Workload kueue-bridge's reconciler creates for ``job`` (as read back from the server)."""
    settings = ExplainSettings.from_config(default_config())
    adapter = settings.registry.adapter_for(dict(job))
    workload = construct_workload(
        job=job, gvk=JOB, pod_sets=adapter.pod_sets(), priority=ResolvedPriority(ref=None, value=0)
    ).to_wire()
    workload["spec"].update(spec)
    return await client.create(WORKLOAD, workload, namespace=job["metadata"]["namespace"])


async def explained(
    client: KubeClient, name: str, *, namespace: str, kind: str = "job", config: Configuration | None = None
) -> Explanation:
    settings = ExplainSettings.from_config(config or default_config())
    return await explain(
        ClusterView(client),
        settings=settings,
        framework=resolve_kind(kind, settings.registry),
        namespace=namespace,
        name=name,
        now=datetime.now(UTC),
    )


async def wait_for_verdict(
    client: KubeClient,
    name: str,
    *,
    namespace: str,
    verdict: str,
    config: Configuration | None = None,
    kind: str = "job",
    until: Callable[[Explanation], bool] = lambda _: True,
    within_seconds: float = 20.0,
) -> Explanation:
    """Poll until the verdict line starts with ``verdict`` (and ``until`` holds); fail with the last one."""
    last: list[Explanation] = []

    async def check() -> Explanation | None:
        explanation = await explained(client, name, namespace=namespace, kind=kind, config=config)
        last[:] = [explanation]
        return explanation if explanation.verdict.startswith(verdict) and until(explanation) else None

    try:
        found: Explanation = await eventually(
            check, what=f"verdict {verdict!r}", within_seconds=within_seconds
        )
    except AssertionError:
        pytest.fail(
            f"expected a verdict starting {verdict!r}, last was {last[0].verdict!r}" if last else "no verdict"
        )
    return found
