"""Real-cluster end-to-end fixtures: the kit's kube-apiserver and Kueue manager, our components as processes.

These tests run only under ``make test-real`` (``devrun/real_suite.py``), which sets
``KUEUE_BRIDGE_REAL_ROOT`` to a folder it sweeps afterwards; ``tests/conftest.py`` leaves this
folder out of every other pytest run. Fixtures:

* ``kueue_version``: each Kueue version of ``KUEUE_BRIDGE_REAL_KUEUE_VERSIONS`` in turn (session
  parameter, so every test runs once per version and each version's clusters start once);
* ``start_real_cluster``: ``start(name, kueue_mode=..., ...)`` -> a started :class:`RealCluster`,
  stopped at the end of the session (Kueue before its apiserver);
* ``bridge``: one cluster per Kueue version with real Kueue in external-framework mode (Kueue
  schedules; the kinds of ``examples/dev/config.yaml`` are its ``externalFrameworks``) and our
  webhook, reconciler and AppWrapper controller running as ``kueue-bridge`` processes, started the
  way ``make dev`` starts them (``devrun.cluster.start_components``);
* ``namespace``: a fresh namespace with the ``default`` ServiceAccount, per test, in ``bridge``.

Every async test and fixture here runs on the session's event loop: the component processes are
children of that loop.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio

from devrun.cluster import ClusterRun, Session, start_components
from devrun.components import ComponentProcess
from devrun.real_cluster import KUEUE_VERSIONS, Kit, KueueMode, RealCluster, find_kit
from devrun.samples import EXAMPLES_DIR
from shared.config import load_config
from shared.kube import GroupVersionKind, KubeClient, load_kubeconfig
from tests.e2e.conftest import install_crds, wait_served

__all__ = ["NAMESPACE_GVK", "Bridge", "job_status_succeeded"]

REAL_ROOT = os.environ.get("KUEUE_BRIDGE_REAL_ROOT")
VERSIONS = [
    v for v in os.environ.get("KUEUE_BRIDGE_REAL_KUEUE_VERSIONS", ",".join(KUEUE_VERSIONS)).split(",") if v
]
NAMESPACE_GVK = GroupVersionKind("", "v1", "Namespace")
SERVICE_ACCOUNT_GVK = GroupVersionKind("", "v1", "ServiceAccount")
BRIDGE_CONFIG = EXAMPLES_DIR / "config.yaml"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    # A session-wide hook: it sees every item of the run, so it touches only this folder's tests.
    here = Path(__file__).parent
    for item in items:
        if pytest_asyncio.is_async_test(item) and here in item.path.parents:
            item.add_marker(pytest.mark.asyncio(loop_scope="session"), append=False)


@pytest.fixture(scope="session")
def kit(shared_dir: Path) -> Kit:
    return find_kit(shared_dir=shared_dir)


@pytest.fixture(scope="session")
def real_root() -> Path:
    if not REAL_ROOT:
        pytest.fail("tests/real run only under `make test-real` (KUEUE_BRIDGE_REAL_ROOT is not set)")
    root = Path(REAL_ROOT)
    root.mkdir(parents=True, exist_ok=True)
    return root


@pytest.fixture(scope="session", params=VERSIONS)
def kueue_version(request: pytest.FixtureRequest) -> str:
    version: str = request.param
    return version


@pytest.fixture(scope="session")
def start_real_cluster(kit: Kit, real_root: Path) -> Iterator[Callable[..., RealCluster]]:
    started: list[RealCluster] = []

    def start(
        name: str,
        *,
        kueue_version: str,
        kueue_mode: KueueMode | None = "external",
        watch_cache: bool = True,
        kueue_config_extra: str | None = None,
        external_frameworks: tuple[str, ...] | None = None,
    ) -> RealCluster:
        cluster = RealCluster(
            kit=kit,
            name=name,
            state=real_root / f"{name}-{secrets.token_hex(3)}",
            kueue_version=kueue_version,
            watch_cache=watch_cache,
        )
        started.append(cluster)
        cluster.start_apiserver()
        if kueue_mode is not None:
            cluster.start_kueue(
                mode=kueue_mode, config_extra=kueue_config_extra, external_frameworks=external_frameworks
            )
        return cluster

    yield start
    errors = []
    for cluster in reversed(started):
        try:
            cluster.stop()
        except Exception as exc:  # every cluster gets its stop; the sweep in real_suite is the backstop
            errors.append(str(exc))
    assert not errors, "\n".join(errors)


def bridge_external_frameworks(config: Path) -> tuple[str, ...]:
    """Kueue's ``externalFrameworks`` for the kinds a kueue-bridge configuration manages."""
    return tuple(kind.gvk.kind_arg for kind in load_config(config).managed_kinds())


@dataclass
class Bridge:
    """A real cluster with real Kueue (external-framework mode) and our components as processes."""

    cluster: RealCluster
    run: ClusterRun
    session: Session
    kueue_version: str

    @property
    def client(self) -> KubeClient:
        return self.run.client

    @property
    def kubeconfig(self) -> Path:
        return self.cluster.kubeconfig

    def component(self, name: str) -> ComponentProcess:
        return next(c for c in self.session.components if c.name == name)


def _shared_crds(shared_dir: Path) -> list[Path]:
    return [
        *sorted((shared_dir / "crds" / "appwrapper").glob("*.yaml")),
        EXAMPLES_DIR / "crds" / "samplejob.yaml",
    ]


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def bridge(
    kueue_version: str, start_real_cluster: Callable[..., RealCluster], shared_dir: Path
) -> AsyncIterator[Bridge]:
    cluster = start_real_cluster(
        f"bridge-{kueue_version}",
        kueue_version=kueue_version,
        external_frameworks=bridge_external_frameworks(BRIDGE_CONFIG),
    )
    async with contextlib.AsyncExitStack() as stack:
        client = KubeClient.from_connection(load_kubeconfig(cluster.kubeconfig))
        stack.push_async_callback(client.aclose)
        crds = _shared_crds(shared_dir)
        await install_crds(client, crds)
        await wait_served(
            client,
            [
                GroupVersionKind("workload.codeflare.dev", "v1beta2", "AppWrapper"),
                GroupVersionKind("samples.kueue-bridge.dev", "v1alpha1", "SampleJob"),
            ],
        )
        session = Session(
            args=argparse.Namespace(start_timeout=90.0), out=sys.stdout, state=cluster.state, components=[]
        )
        run = ClusterRun(name=cluster.name, state=cluster.state / "bridge", url=cluster.url, client=client)
        run.logs.mkdir(parents=True, exist_ok=True)
        # ClusterRun reads its kubeconfig from its state folder: point it at the real cluster's.
        (run.state / "kubeconfig").symlink_to(cluster.kubeconfig)
        await start_components(session, stack, run, source=BRIDGE_CONFIG)
        yield Bridge(cluster=cluster, run=run, session=session, kueue_version=kueue_version)


@pytest_asyncio.fixture(loop_scope="session")
async def namespace(bridge: Bridge) -> AsyncIterator[str]:
    """A fresh namespace with the ``default`` ServiceAccount (kube-controller-manager's job elsewhere)."""
    name = f"real-{secrets.token_hex(4)}"
    await bridge.client.create(NAMESPACE_GVK, {"metadata": {"name": name}})
    await bridge.client.create(SERVICE_ACCOUNT_GVK, {"metadata": {"name": "default"}}, namespace=name)
    yield name
    # No namespace controller here: the namespace would stay Terminating; the cluster is swept anyway.


def job_status_succeeded(*, now: str) -> dict[str, Any]:
    """A batch Job's status as the job controller of 1.36 writes it when the Job succeeds (no kubelet here)."""
    conditions = [
        {"type": kind, "status": "True", "lastTransitionTime": now, "lastProbeTime": now}
        for kind in ("SuccessCriteriaMet", "Complete")
    ]
    return {"startTime": now, "completionTime": now, "succeeded": 1, "conditions": conditions}
