"""Fixtures for the client runtime's component tests: ``shared.kube`` against a devcluster over HTTPS.

Every test talks to a real (in-process, own thread) devcluster through the kubeconfig it writes, so
TLS, the token, discovery, streaming watches and typed errors are exercised end to end.
``client`` is a ``KubeClient`` without a client-side rate limit (bursts in tests must not queue);
``namespace`` is a fresh namespace for one test. ``eventually`` polls with a deadline: tests never
sleep to wait.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from devcluster.server import ThreadedDevCluster
from shared.frameworks.base import GroupVersionKind
from shared.kube import ClientSettings, KubeClient, load_kubeconfig
from tests.devcluster.conftest import devcluster, devcluster_factory

__all__ = [
    "CONFIGMAP",
    "NAMESPACE",
    "client",
    "devcluster",
    "devcluster_factory",
    "eventually",
    "make_client",
    "namespace",
]

CONFIGMAP = GroupVersionKind("", "v1", "ConfigMap")
NAMESPACE = GroupVersionKind("", "v1", "Namespace")

UNLIMITED = ClientSettings(qps=0, burst=1, max_attempts=3)


def make_client(cluster: ThreadedDevCluster, *, settings: ClientSettings = UNLIMITED) -> KubeClient:
    """A client configured only from the kubeconfig the devcluster wrote (CA bundle + token)."""
    return KubeClient.from_connection(load_kubeconfig(cluster.kubeconfig_path), settings=settings)


async def eventually(
    check: Callable[[], Awaitable[Any]], *, what: str, within_seconds: float = 20.0, interval: float = 0.02
) -> Any:
    """Poll ``check`` until it returns something truthy; fail naming ``what`` after the deadline."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_seconds
    while True:
        result = await check()
        if result:
            return result
        assert loop.time() < deadline, f"timed out after {within_seconds}s waiting for {what}"
        await asyncio.sleep(interval)


@pytest.fixture
async def client(devcluster: ThreadedDevCluster) -> AsyncIterator[KubeClient]:
    async with make_client(devcluster) as kube:
        yield kube


@pytest.fixture
async def namespace(client: KubeClient) -> str:
    name = f"kube-{secrets.token_hex(4)}"
    await client.create(NAMESPACE, {"metadata": {"name": name}})
    return name
