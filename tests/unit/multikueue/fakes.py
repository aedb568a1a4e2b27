"""In-memory manager and worker clusters for the MultiKueue unit tests (``FakeApi`` behind clients).

``FakeCluster`` is one API server (``tests.unit.kube.fakeapi.FakeApi``) serving the kinds MultiKueue
touches, with a ``KubeClient`` on it; ``kubeconfig_for(name)`` is a valid, secure kubeconfig naming a
worker, and ``worker_factory`` turns such a kubeconfig back into the client of that fake worker --
the seam ``RemoteCluster`` builds its clients through.
"""

from __future__ import annotations

import base64
import random
from typing import Any

import yaml

from shared.kube import ClientSettings, Clock, GroupVersionKind, HttpxTransport, KubeClient, StaticTokenSource
from shared.kube.auth import BearerTokenAuth
from shared.kube.discovery import ResourceInfo
from tests.unit.kube.fakeapi import FakeApi

__all__ = [
    "ADMISSION_CHECK",
    "JOB",
    "JOBSET",
    "MK_CLUSTER",
    "MK_CONFIG",
    "SECRET",
    "TRAINING",
    "WORKLOAD",
    "FakeCluster",
    "kubeconfig_for",
    "secret_for",
    "worker_factory",
]

VERBS = frozenset({"get", "list", "watch", "create", "update", "patch", "delete"})


def _info(
    group: str, version: str, kind: str, plural: str, *, namespaced: bool, status: bool = True
) -> ResourceInfo:
    return ResourceInfo(
        gvk=GroupVersionKind(group, version, kind),
        plural=plural,
        namespaced=namespaced,
        verbs=VERBS,
        subresources=frozenset({"status"}) if status else frozenset(),
    )


WORKLOAD = _info("kueue.x-k8s.io", "v1beta2", "Workload", "workloads", namespaced=True)
ADMISSION_CHECK = _info("kueue.x-k8s.io", "v1beta2", "AdmissionCheck", "admissionchecks", namespaced=False)
MK_CONFIG = _info(
    "kueue.x-k8s.io", "v1beta2", "MultiKueueConfig", "multikueueconfigs", namespaced=False, status=False
)
MK_CLUSTER = _info("kueue.x-k8s.io", "v1beta2", "MultiKueueCluster", "multikueueclusters", namespaced=False)
SECRET = _info("", "v1", "Secret", "secrets", namespaced=True, status=False)
JOB = _info("batch", "v1", "Job", "jobs", namespaced=True)
JOBSET = _info("jobset.x-k8s.io", "v1alpha2", "JobSet", "jobsets", namespaced=True)
TRAINING = _info("ml.example.com", "v1alpha1", "TrainingRun", "trainingruns", namespaced=True)
MANAGER_KINDS = (WORKLOAD, ADMISSION_CHECK, MK_CONFIG, MK_CLUSTER, SECRET, JOB, JOBSET, TRAINING)
WORKER_KINDS = (WORKLOAD, JOB, JOBSET, TRAINING)


class FakeCluster:
    def __init__(self, name: str, *, clock: Clock, kinds: tuple[ResourceInfo, ...] = MANAGER_KINDS) -> None:
        self.name = name
        self.api = FakeApi(list(kinds))
        self.client = KubeClient(
            server=f"https://{name}.example.com:6443",
            transport=HttpxTransport(self.api.transport()),
            auth=BearerTokenAuth(StaticTokenSource("t0ken")),
            settings=ClientSettings(qps=0, burst=1, max_attempts=1),
            clock=clock,
            rng=random.Random(7),
        )

    def get(self, info: ResourceInfo, name: str, namespace: str = "") -> dict[str, Any] | None:
        return self.api.objects.get((info.resource_label, namespace, name))

    def put(self, info: ResourceInfo, obj: dict[str, Any]) -> dict[str, Any]:
        obj.setdefault("apiVersion", info.gvk.api_version)
        obj.setdefault("kind", info.gvk.kind)
        obj.setdefault("metadata", {}).setdefault("generation", 1)
        return self.api.put_object(info.resource_label, obj)

    def getter(self, info: ResourceInfo) -> Any:
        def get(key: str) -> dict[str, Any] | None:
            namespace, _, name = key.rpartition("/")
            return self.get(info, name, namespace)

        return get


def kubeconfig_for(worker: str, **user: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "ctx",
        "clusters": [
            {
                "name": worker,
                "cluster": {
                    "server": f"https://{worker}.example.com:6443",
                    "certificate-authority-data": base64.b64encode(b"not a real CA").decode(),
                },
            }
        ],
        "users": [{"name": "mk", "user": user or {"token": "secret-token-value"}}],
        "contexts": [{"name": "ctx", "context": {"cluster": worker, "user": "mk"}}],
    }


def secret_for(
    name: str, document: dict[str, Any] | str, *, namespace: str = "kueue-system"
) -> dict[str, Any]:
    text = document if isinstance(document, str) else yaml.safe_dump(document)
    return {
        "metadata": {"name": name, "namespace": namespace},
        "data": {"kubeconfig": base64.b64encode(text.encode()).decode()},
    }


def worker_factory(workers: dict[str, FakeCluster]) -> Any:
    """A ``ClientFactory``: the fake worker named by the kubeconfig's current cluster."""

    def build(raw: bytes, document: dict[str, Any]) -> KubeClient:
        name = document["clusters"][0]["name"]
        if name not in workers:
            raise ValueError(f"no fake worker {name}")
        return workers[name].client

    return build
