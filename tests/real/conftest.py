"""Real-cluster end-to-end fixtures: the kit's kube-apiserver and Kueue manager, our components as processes.

These tests run only under ``make test-real`` (``devrun/real_suite.py``), which sets
``KUEUE_BRIDGE_REAL_ROOT`` to a folder it sweeps afterwards; ``tests/conftest.py`` leaves this
folder out of every other pytest run. Fixtures:

* ``kueue_version``: each Kueue version of ``KUEUE_BRIDGE_REAL_KUEUE_VERSIONS`` in turn (session
  parameter, so every test runs once per version and each version's clusters start once);
* ``start_real_cluster``: ``start(name, kueue_mode=..., apply_kueue_crds=..., ...)`` -> a started :class:`RealCluster`,
  stopped at the end of the session (Kueue before its apiserver);
* ``bridge``: one cluster per Kueue version with real Kueue in external-framework mode (Kueue
  schedules; the kinds of ``tests/real/bridge-config.yaml`` are its ``externalFrameworks``: batch
  Jobs, AppWrappers and the tests' JobSet-shaped ``JobGroup`` CRD, ``crds/jobgroup.yaml``, through a
  declarative adapter) and our webhook, reconciler and AppWrapper controller running as
  ``kueue-bridge`` processes, started the way ``make dev`` starts them
  (``devrun.cluster.start_components``), each with a token of its own ServiceAccount and the RBAC
  ``kueue-bridge manifests`` grants it (``devrun.identities.run_as``);
* ``namespace``: a fresh namespace with the ``default`` ServiceAccount, per test, in ``bridge``;
* ``dev_twin``: one devcluster for the session, started as ``make dev`` starts it (Kueue stand-in,
  job runner) with the same configuration and components as ``bridge``, for the tests that run the
  same steps on both and compare what Kueue's own client (kueuectl) shows.

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

import pytest
import pytest_asyncio

from devrun.cluster import ClusterRun, Session, start_cluster, start_components
from devrun.components import ComponentProcess
from devrun.identities import run_as
from devrun.real_cluster import KUEUE_VERSIONS, Kit, KueueMode, RealCluster, find_kit
from devrun.samples import EXAMPLES_DIR
from shared.config import load_config
from shared.identities import Identity, service_account_name
from shared.kube import GroupVersionKind, KubeClient, load_kubeconfig
from tests.e2e.conftest import install_crds, wait_served

__all__ = ["JOBGROUP", "NAMESPACE_GVK", "SERVICE_ACCOUNT_GVK", "Bridge", "DevTwin"]

REAL_ROOT = os.environ.get("KUEUE_BRIDGE_REAL_ROOT")
VERSIONS = [
    v for v in os.environ.get("KUEUE_BRIDGE_REAL_KUEUE_VERSIONS", ",".join(KUEUE_VERSIONS)).split(",") if v
]
NAMESPACE_GVK = GroupVersionKind("", "v1", "Namespace")
SERVICE_ACCOUNT_GVK = GroupVersionKind("", "v1", "ServiceAccount")
HERE = Path(__file__).resolve().parent
BRIDGE_CONFIG = HERE / "bridge-config.yaml"
JOBGROUP_CRD = HERE / "crds" / "jobgroup.yaml"
JOBGROUP = GroupVersionKind("e2e.kueue-bridge.dev", "v1alpha1", "JobGroup")
#: the components of ``bridge`` that run as their own ServiceAccounts, and their tokens' lifetime
#: (the whole session: a restarted component keeps its kubeconfig)
BRIDGE_IDENTITIES: tuple[Identity, ...] = ("webhook", "reconciler", "appwrapper")
TOKEN_SECONDS = 24 * 3600


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """tests/real's async tests on the session's loop (a conftest's hook sees every item of the run)."""
    for item in items:
        if item.path.is_relative_to(HERE) and pytest_asyncio.is_async_test(item):
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
        apply_kueue_crds: bool = True,
    ) -> RealCluster:
        cluster = RealCluster(
            kit=kit,
            name=name,
            state=real_root / f"{name}-{secrets.token_hex(3)}",
            kueue_version=kueue_version,
            watch_cache=watch_cache,
        )
        started.append(cluster)
        cluster.start_apiserver(apply_kueue_crds=apply_kueue_crds)
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
        JOBGROUP_CRD,
        # not a managed kind here: an object of a CRD an AppWrapper may wrap (test_appwrapper_ownership)
        EXAMPLES_DIR / "crds" / "samplejob.yaml",
    ]


async def _let_the_appwrapper_controller_wrap_samplejobs(client: KubeClient, *, namespace: str) -> None:
    """SampleJobs are not among the kinds an AppWrapper may wrap (``shared.component_access``); as
    docs/installing.md says for any other kind, a ClusterRole bound to the controller's ServiceAccount adds
    them (test_appwrapper_ownership wraps one)."""
    name = "kueue-bridge-appwrapper-samplejobs"
    role = {
        "metadata": {"name": name},
        "rules": [
            {
                "apiGroups": ["samples.kueue-bridge.dev"],
                "resources": ["samplejobs"],
                "verbs": ["get", "create", "delete"],
            }
        ],
    }
    binding = {
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [
            {"kind": "ServiceAccount", "name": service_account_name("appwrapper"), "namespace": namespace}
        ],
    }
    for kind, body in (("ClusterRole", role), ("ClusterRoleBinding", binding)):
        gvk = GroupVersionKind("rbac.authorization.k8s.io", "v1", kind)
        await client.apply(gvk, body, field_manager="tests-real", force=True)


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
                JOBGROUP,
            ],
        )
        session = Session(
            args=argparse.Namespace(start_timeout=90.0), out=sys.stdout, state=cluster.state, components=[]
        )
        run = ClusterRun(name=cluster.name, state=cluster.state / "bridge", url=cluster.url, client=client)
        run.logs.mkdir(parents=True, exist_ok=True)
        # ClusterRun reads its kubeconfig from its state folder: point it at the real cluster's.
        (run.state / "kubeconfig").symlink_to(cluster.kubeconfig)
        # each component as its own ServiceAccount with the RBAC `kueue-bridge manifests` grants it,
        # as deployed: every test here also checks those rights, and the validating webhooks' match
        # condition on the reconciler's user takes effect (shared.webhook_configurations)
        config = load_config(BRIDGE_CONFIG)
        for identity in BRIDGE_IDENTITIES:
            run.identities[identity] = await run_as(
                client,
                identity,
                config=config,
                admin_kubeconfig=cluster.kubeconfig,
                target=run.state / f"{identity}.kubeconfig",
                kueue_namespace=config.namespace,
                seconds=TOKEN_SECONDS,
            )
        await _let_the_appwrapper_controller_wrap_samplejobs(client, namespace=config.namespace)
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


@dataclass
class DevTwin:
    """A devcluster run the ``make dev`` way, with the components and configuration of ``bridge``."""

    run: ClusterRun

    @property
    def client(self) -> KubeClient:
        return self.run.client

    @property
    def kubeconfig(self) -> Path:
        return self.run.kubeconfig


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def dev_twin(real_root: Path) -> AsyncIterator[DevTwin]:
    state = real_root / f"dev-twin-{secrets.token_hex(3)}"
    session = Session(args=argparse.Namespace(start_timeout=90.0), out=sys.stdout, state=state, components=[])
    async with contextlib.AsyncExitStack() as stack:
        run = await start_cluster(session, stack, name="devcluster", state=state, port=0)
        await install_crds(run.client, [JOBGROUP_CRD])
        await wait_served(run.client, [JOBGROUP])
        await start_components(session, stack, run, source=BRIDGE_CONFIG)
        yield DevTwin(run=run)
