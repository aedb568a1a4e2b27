"""Fixtures for the client runtime's component tests: ``shared.kube`` against a devcluster over HTTPS.

Every test talks to a real (in-process, own thread) devcluster through the kubeconfig it writes, so
TLS, the token, discovery, streaming watches and typed errors are exercised end to end.
``client`` is a ``KubeClient`` without a client-side rate limit (bursts in tests must not queue);
``namespace`` is a fresh namespace for one test. ``proxied_client`` is a client (with metrics)
whose connections go through a ``FaultProxy``, so a test can drop them. ``eventually`` polls with a
deadline: tests never sleep to wait.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from devcluster.server import ThreadedDevCluster
from shared.kube import (
    ClientSettings,
    GroupVersionKind,
    KubeClient,
    KubeMetrics,
    WatchSettings,
    load_kubeconfig,
)
from tests.component.kube.faultproxy import FaultProxy
from tests.devcluster.conftest import devcluster, devcluster_factory
from tests.polling import eventually

__all__ = [
    "CONFIGMAP",
    "FAST_RETRY",
    "NAMESPACE",
    "UNLIMITED",
    "client",
    "devcluster",
    "devcluster_factory",
    "eventually",
    "make_client",
    "namespace",
    "proxied_client",
]

CONFIGMAP = GroupVersionKind("", "v1", "ConfigMap")
NAMESPACE = GroupVersionKind("", "v1", "Namespace")

UNLIMITED = ClientSettings(qps=0, burst=1, max_attempts=3)
#: watches in tests reconnect quickly after a cut connection
FAST_RETRY = WatchSettings(backoff_initial=0.05, backoff_max=0.5)


def make_client(cluster: ThreadedDevCluster, *, settings: ClientSettings = UNLIMITED) -> KubeClient:
    """A client configured only from the kubeconfig the devcluster wrote (CA bundle + token)."""
    return KubeClient.from_connection(load_kubeconfig(cluster.kubeconfig_path), settings=settings)


@contextlib.asynccontextmanager
async def proxied_client(
    cluster: ThreadedDevCluster, tmp_path: Path
) -> AsyncIterator[tuple[KubeClient, FaultProxy]]:
    """A client (with metrics) whose connections go through a ``FaultProxy``."""
    async with FaultProxy(target_port=int(cluster.url.rsplit(":", 1)[1])) as proxy:
        kubeconfig = proxy.kubeconfig_through(cluster.kubeconfig_path, tmp_path / "proxied-kubeconfig")
        metrics = KubeMetrics(CollectorRegistry())
        connection = load_kubeconfig(kubeconfig)
        async with KubeClient.from_connection(connection, settings=UNLIMITED, metrics=metrics) as client:
            yield client, proxy


@pytest.fixture
async def client(devcluster: ThreadedDevCluster) -> AsyncIterator[KubeClient]:
    async with make_client(devcluster) as kube:
        yield kube


@pytest.fixture
async def namespace(client: KubeClient) -> str:
    name = f"kube-{secrets.token_hex(4)}"
    await client.create(NAMESPACE, {"metadata": {"name": name}})
    return name
