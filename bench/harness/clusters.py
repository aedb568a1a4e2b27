"""The clusters the benchmarks run against, and the bench's client and queues on them.

* :func:`devcluster_process`: ``kueue-bridge devcluster`` in its own process (uvloop, as ``make dev``
  runs it), so a benchmark's figures are the server's over HTTPS and not a client sharing its loop.
* :func:`bench_client` / :func:`client_for`: a client whose rate limit is not what is measured.
* :func:`create_kueue_crds`: Kueue's CRDs from the reference folder; :func:`setup_queues`: the
  ``bench`` namespace, a ResourceFlavor, a ClusterQueue every job fits in at once and its LocalQueue.

The real kube-apiserver of ``../shared/real-cluster`` is :mod:`bench.harness.real_cluster`.
"""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, Final

import yaml

from bench.harness.processes import REPO_ROOT
from devrun import crd_files, install_crds
from shared.constants import CLUSTER_QUEUE_GVK, LOCAL_QUEUE_GVK, RESOURCE_FLAVOR_GVK
from shared.kube import AlreadyExists, ClientSettings, GroupVersionKind, KubeClient, load_kubeconfig
from shared.kube.kinds import CRD_GVK, NAMESPACE_GVK

__all__ = [
    "BENCH_NAMESPACE",
    "KUEUE_NAMESPACE",
    "bench_client",
    "client_for",
    "create_kueue_crds",
    "devcluster_process",
    "setup_queues",
]

BENCH_NAMESPACE: Final = "bench"
#: Kueue's namespace, and the components' (the bench's configuration)
KUEUE_NAMESPACE: Final = "kueue-system"


@contextlib.contextmanager
def devcluster_process(
    tmp: Path, *, profile: str | None = None, extra_args: tuple[str, ...] = (), name: str = "devcluster"
) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """``kueue-bridge devcluster`` in its own process (uvloop, as ``make dev`` runs it), yielding the
    process and its kubeconfig; ``profile`` writes the server's cProfile stats there. Shared by the
    benchmarks that need a server out of their own interpreter. ``extra_args`` are more
    ``kueue-bridge devcluster`` flags (``--kueue-standin``...); ``name`` tells several apart."""
    kubeconfig = tmp / f"{name}.kubeconfig"
    profiling = ["-m", "cProfile", "-o", profile] if profile else []
    command = [sys.executable, *profiling, "-m", "kueue_bridge.cli", "devcluster", "--port", "0"]
    command += ["--kubeconfig-out", str(kubeconfig), *extra_args]
    process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not kubeconfig.exists():
            if time.monotonic() > deadline or process.poll() is not None:
                raise RuntimeError("the devcluster did not start")
            time.sleep(0.05)
        yield process, kubeconfig
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)


def bench_client(kubeconfig: Path, *, qps: int) -> KubeClient:
    """A client whose rate limit (``qps`` = burst) is not what the benchmark measures."""
    return KubeClient.from_connection(
        load_kubeconfig(kubeconfig), settings=ClientSettings(qps=qps, burst=qps)
    )


def client_for(kubeconfig: Path) -> KubeClient:
    """The bench's own client for whole job lifecycles: never rate-limited."""
    return bench_client(kubeconfig, qps=100000)


async def create_kueue_crds(client: KubeClient, shared: Path, names: Iterable[str]) -> None:
    """Create Kueue's CRDs ``kueue.x-k8s.io_<name>.yaml`` from the reference folder ``shared``
    (one that exists is left alone)."""
    for name in names:
        for document in yaml.safe_load_all(
            (shared / "crds" / "kueue" / f"kueue.x-k8s.io_{name}.yaml").read_text()
        ):
            if document and document.get("kind") == "CustomResourceDefinition":
                with contextlib.suppress(AlreadyExists):
                    await client.create(CRD_GVK, document)


async def setup_queues(client: KubeClient, *, jobs: int, install: bool = True) -> None:
    """The bench namespace and queues; with ``install``, the CRDs and ``kueue-system`` first (a
    devcluster starts empty; the real cluster's kit has both)."""
    if install:
        files, _ = crd_files()
        await install_crds(client, files)
        await client.create(NAMESPACE_GVK, {"metadata": {"name": KUEUE_NAMESPACE}})
    quota = str(max(jobs, 10))  # 10m per job: every job fits at once
    objects: list[tuple[GroupVersionKind, dict[str, Any]]] = [
        (NAMESPACE_GVK, {"metadata": {"name": BENCH_NAMESPACE}}),
        (RESOURCE_FLAVOR_GVK, {"metadata": {"name": "default-flavor"}}),
        (
            CLUSTER_QUEUE_GVK,
            {
                "metadata": {"name": "bench"},
                "spec": {
                    "namespaceSelector": {},
                    "resourceGroups": [
                        {
                            "coveredResources": ["cpu"],
                            "flavors": [
                                {
                                    "name": "default-flavor",
                                    "resources": [{"name": "cpu", "nominalQuota": quota}],
                                }
                            ],
                        }
                    ],
                },
            },
        ),
        (
            LOCAL_QUEUE_GVK,
            {"metadata": {"name": "bench", "namespace": BENCH_NAMESPACE}, "spec": {"clusterQueue": "bench"}},
        ),
    ]
    for gvk, body in objects:  # kube-apiserver wants apiVersion and kind in every body
        await client.create(gvk, {"apiVersion": gvk.api_version, "kind": gvk.kind, **body})
