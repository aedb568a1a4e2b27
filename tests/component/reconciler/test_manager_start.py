"""The reconciler's workers start only once *every* cache has synced, not just the watched ones.

Reconciles read Namespaces (and flavors, priority classes) from informers the controllers do not
watch; a worker starting before the Namespace list arrived took "not cached yet" for "no such
namespace" and dropped the job for good (seen as a job that never got a Workload).
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path
from typing import Any

import pytest

from reconciler.manager import ReconcilerControllers
from shared.config import default_config
from tests.e2e.conftest import eventually, install_crds, kube_client

pytestmark = [pytest.mark.needs_shared]


class NoEvents:
    def record(self, *, regarding: dict[str, Any], event_type: str, reason: str, message: str) -> None:
        return None


async def test_controllers_start_after_every_informer_synced(devcluster: Any, kueue_crd_dir: Path) -> None:
    async with kube_client(devcluster.kubeconfig_path) as client:
        await install_crds(
            client,
            [
                kueue_crd_dir / f"kueue.x-k8s.io_{name}.yaml"
                for name in ("workloads", "resourceflavors", "workloadpriorityclasses")
            ],
        )
        controllers = ReconcilerControllers.from_config(default_config(), client=client, events=NoEvents())
        namespaces = next(i for i in controllers.informers if i.gvk.kind == "Namespace")
        gate = asyncio.Event()
        namespace_run = namespaces.run

        async def slow_namespace_list() -> None:
            await gate.wait()
            await namespace_run()

        namespaces.run = slow_namespace_list  # type: ignore[method-assign]
        watched = [i for i in controllers.informers if i.gvk.kind in ("Job", "Workload")]
        task = asyncio.create_task(controllers.run())
        try:
            await eventually(lambda: asyncio.sleep(0, all(i.has_synced for i in watched)), what="job caches")
            for _ in range(20):
                await asyncio.sleep(0)
            assert not any(c.started for c in controllers.controllers), (
                "workers started before Namespaces synced"
            )
            gate.set()
            await eventually(
                lambda: asyncio.sleep(0, all(c.started for c in controllers.controllers)),
                what="controllers started",
            )
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
