"""Stand-in and job runner end to end on the real devcluster with the real Kueue CRDs installed.

Skips while the ``devcluster`` fixture (tests/devcluster/conftest.py, owned by the devcluster core)
is not available.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from devcluster.standin.kueue import start_addons

pytestmark = [pytest.mark.needs_shared, pytest.mark.slow]

CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
KUEUE = "/apis/kueue.x-k8s.io/v1beta2"


async def _eventually(check: Callable[[], Awaitable[bool]], what: str, within_seconds: float = 20) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_seconds
    while not await check():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


async def _create(http: httpx.AsyncClient, path: str, body: dict[str, Any]) -> None:
    response = await http.post(path, json=body)
    assert response.status_code in (200, 201, 409), response.text


async def test_workload_is_admitted_and_job_completes(
    request: pytest.FixtureRequest, kueue_crd_dir: Path
) -> None:
    try:
        cluster = request.getfixturevalue("devcluster")
    except pytest.FixtureLookupError:
        pytest.skip("the devcluster fixture (tests/devcluster/conftest.py) is not available yet")
    verify = ssl.create_default_context(cafile=str(cluster.ca_file))
    headers = {"Authorization": f"Bearer {cluster.token}"}
    async with httpx.AsyncClient(base_url=cluster.url, headers=headers, verify=verify, timeout=10) as http:
        for name in ("workloads", "clusterqueues", "localqueues", "resourceflavors"):
            crd = yaml.safe_load((kueue_crd_dir / f"kueue.x-k8s.io_{name}.yaml").read_text())
            await _create(http, CRD_PATH, crd)

        async def served() -> bool:
            response = await http.get(f"{KUEUE}/workloads")
            return response.status_code == 200

        await _eventually(served, "the Kueue CRDs to be served")
        await _create(
            http, "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "e2e"}}
        )
        await _create(
            http,
            f"{KUEUE}/resourceflavors",
            {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": "spot"}},
        )
        flavor = {
            "name": "spot",
            "resources": [{"name": "cpu", "nominalQuota": 4}, {"name": "memory", "nominalQuota": "4Gi"}],
        }
        await _create(
            http,
            f"{KUEUE}/clusterqueues",
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ClusterQueue",
                "metadata": {"name": "e2e-cq"},
                "spec": {
                    "namespaceSelector": {},
                    "resourceGroups": [{"coveredResources": ["cpu", "memory"], "flavors": [flavor]}],
                },
            },
        )
        await _create(
            http,
            f"{KUEUE}/namespaces/e2e/localqueues",
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "LocalQueue",
                "metadata": {"name": "q", "namespace": "e2e"},
                "spec": {"clusterQueue": "e2e-cq"},
            },
        )
        container = {
            "name": "c",
            "image": "busybox",
            "resources": {"requests": {"cpu": "1", "memory": "200Mi"}},
        }
        await _create(
            http,
            f"{KUEUE}/namespaces/e2e/workloads",
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "Workload",
                "metadata": {"name": "wl", "namespace": "e2e"},
                "spec": {
                    "queueName": "q",
                    "podSets": [{"count": 2, "template": {"spec": {"containers": [container]}}}],
                },
            },
        )
        await _create(
            http,
            "/apis/batch/v1/namespaces/e2e/jobs",
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "metadata": {
                    "name": "quick",
                    "namespace": "e2e",
                    "annotations": {"kueue-bridge.dev/run-seconds": "0"},
                },
                "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [container]}}},
            },
        )

        stack = await start_addons(
            url=cluster.url,
            token=cluster.token,
            ca_file=str(cluster.ca_file),
            kueue_standin=True,
            job_runner=True,
            poll_interval=0.05,
        )
        try:

            async def admitted() -> bool:
                wl = (await http.get(f"{KUEUE}/namespaces/e2e/workloads/wl")).json()
                return any(
                    c.get("type") == "Admitted" and c.get("status") == "True"
                    for c in (wl.get("status") or {}).get("conditions", [])
                )

            async def completed() -> bool:
                job = (await http.get("/apis/batch/v1/namespaces/e2e/jobs/quick")).json()
                return bool((job.get("status") or {}).get("completionTime"))

            await _eventually(admitted, "the Workload to be admitted")
            await _eventually(completed, "the Job to complete")
        finally:
            await stack.aclose()

        wl = (await http.get(f"{KUEUE}/namespaces/e2e/workloads/wl")).json()
        assert wl["status"]["admission"] == {
            "clusterQueue": "e2e-cq",
            "podSetAssignments": [
                {
                    "name": "main",
                    "flavors": {"cpu": "spot", "memory": "spot"},
                    "resourceUsage": {"cpu": "2", "memory": "400Mi"},
                    "count": 2,
                }
            ],
        }
