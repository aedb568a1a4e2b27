"""End-to-end fixtures: the devcluster fixtures plus helpers to install CRDs and run components.

Tests that play Kueue or a job controller write objects the reconciler writes too (a Workload's
status, a job's status). They write like any controller does - re-read and retry on 409 Conflict
(``write_latest``) - so losing a race with the reconciler on a busy machine is not a test failure.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import AsyncIterator, Callable, Iterable
from pathlib import Path
from typing import Any

import yaml

from shared.jsontree import json_tree_copy
from shared.kube import AlreadyExists, Conflict, GroupVersionKind, KubeClient, KubeError, load_kubeconfig
from shared.kueue.admission_apply import apply_admission_status
from tests.devcluster.conftest import devcluster, devcluster_factory
from tests.polling import eventually

__all__ = [
    "create_namespace",
    "devcluster",
    "devcluster_factory",
    "eventually",
    "install_crds",
    "kube_client",
    "wait_served",
    "write_latest",
]

CRD_GVK = GroupVersionKind("apiextensions.k8s.io", "v1", "CustomResourceDefinition")
NAMESPACE_GVK = GroupVersionKind("", "v1", "Namespace")


@contextlib.asynccontextmanager
async def kube_client(kubeconfig: Path) -> AsyncIterator[KubeClient]:
    client = KubeClient.from_connection(load_kubeconfig(kubeconfig))
    try:
        yield client
    finally:
        await client.aclose()


async def wait_served(client: KubeClient, gvks: Iterable[GroupVersionKind]) -> None:
    """Wait until every kind lists (its CRD is established and discovery sees it)."""
    for gvk in gvks:

        async def served(kind: GroupVersionKind = gvk) -> bool:
            try:
                await client.list(kind)
            except KubeError:
                return False
            return True

        await eventually(served, what=f"{gvk.kind} served")


@functools.cache
def _crd_documents(path: Path) -> tuple[dict[str, Any], ...]:
    """The CRDs of one file, parsed once per test process with libyaml's loader when present: the
    pure-Python loader takes seconds for Kueue's Workload CRD, and a three-cluster fleet installs
    it three times per test."""
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return tuple(
        document
        for document in yaml.load_all(path.read_text(), Loader=loader)
        if isinstance(document, dict) and document.get("kind") == "CustomResourceDefinition"
    )


async def install_crds(client: KubeClient, paths: list[Path]) -> None:
    """Create every CRD in ``paths`` (the client's REST mapper finds them on first use)."""
    for path in paths:
        for document in _crd_documents(path):
            try:
                await client.create(CRD_GVK, json_tree_copy(document))
            except AlreadyExists:
                continue


async def create_namespace(kubeconfig: Path, name: str) -> str:
    """Create Namespace ``name`` (tests sharing a module's devcluster take one each) and return it."""
    async with kube_client(kubeconfig) as client:
        await client.create(NAMESPACE_GVK, {"metadata": {"name": name}})
    return name


async def write_latest(
    client: KubeClient,
    gvk: GroupVersionKind,
    name: str,
    *,
    namespace: str,
    change: Callable[[dict[str, Any]], None],
    status: bool = False,
    kueue_admission: bool = False,
) -> dict[str, Any]:
    """Read ``name``, apply ``change``, write it back (``status``: the status subresource); on 409
    Conflict read again and retry (client-go's ``RetryOnConflict``). Returns the written object.

    ``kueue_admission`` (a Workload): write the changed admission state as Kueue's scheduler and
    workload controller do, ``PatchAdmissionStatus`` (a strict forced apply as ``kueue-admission``),
    so that ``kueue-admission`` owns it as on a real cluster."""

    async def attempt() -> dict[str, Any] | None:
        current = await client.get(gvk, name, namespace=namespace)
        change(current)
        try:
            if kueue_admission:
                return await apply_admission_status(client, current)
            if status:
                return await client.update_status(gvk, current, namespace=namespace)
            return await client.update(gvk, current, namespace=namespace)
        except Conflict:
            return None

    written: dict[str, Any] = await eventually(attempt, what=f"{gvk.kind} {namespace}/{name} written")
    return written
