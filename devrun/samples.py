"""What ``kueue-bridge dev`` puts into the devcluster: CRDs, the run-time config, queues, sample jobs.

Sources and why:

* **Kueue CRDs** come from the reference folder beside the repository (``../shared/crds/kueue``, or
  ``$KUEUE_BRIDGE_SHARED_DIR/crds/kueue``), read in place and never copied, because the real schemas
  default and validate like Kueue does. Without that folder the project's own minimal definitions
  (``examples/dev/crds/kueue-minimal.yaml``, and ``appwrapper-minimal.yaml`` for the AppWrapper
  sample) are used and the runner says so. Other CRDs in the reference folder (JobSet, AppWrapper,
  Tekton) are installed too so they can be tried by hand.
* **Our sample CRD** (``examples/dev/crds/samplejob.yaml``) is always the project's own.
* **The configuration** is ``examples/dev/config.yaml`` with the run-time values filled in
  (webhook host/port/certDir) and written to ``.dev/config.yaml``: the file the components run
  with is on disk for the user to read.
* **Queues** are server-side applied (idempotent across restarts). **Sample jobs** are deleted and
  created again on every start, through the API server, so the webhook suspends them on create
  each time (a persisted, already-finished sample would show nothing).
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from devcluster.standin import DeclarativeCompletion, Resource
from shared.frameworks.builtin_kinds import APPWRAPPER, BATCH_JOB
from shared.kube import AlreadyExists, GroupVersionKind, KubeClient, NotFound
from shared.kube.conditions import is_object_condition_true
from shared.kube.kinds import CRD_GVK

__all__ = [
    "EXAMPLES_DIR",
    "FIELD_MANAGER",
    "REPO_ROOT",
    "SAMPLE_KINDS",
    "SampleKind",
    "apply_queues",
    "crd_files",
    "creation_note",
    "declarative_completions",
    "delete_jobs",
    "install_crds",
    "load_manifests",
    "recreate_jobs",
    "write_runtime_config",
]

REPO_ROOT: Final = Path(__file__).resolve().parent.parent
EXAMPLES_DIR: Final = REPO_ROOT / "examples" / "dev"
FIELD_MANAGER: Final = "kueue-bridge-dev"


@dataclass(frozen=True, slots=True)
class SampleKind:
    """A job kind of the samples: how to list it and where it keeps its suspend flag."""

    gvk: GroupVersionKind
    plural: str
    suspend_path: tuple[str, ...] = ("spec", "suspend")


SAMPLE_KINDS: Final = (
    SampleKind(BATCH_JOB.gvk, BATCH_JOB.plural),
    SampleKind(GroupVersionKind("samples.kueue-bridge.dev", "v1alpha1", "SampleJob"), "samplejobs"),
    SampleKind(APPWRAPPER.gvk, APPWRAPPER.plural),
)


def declarative_completions() -> list[DeclarativeCompletion]:
    """How the job runner finishes a SampleJob: ``status.phase: Succeeded`` after its run time."""
    return [
        DeclarativeCompletion(
            resource=Resource("samples.kueue-bridge.dev", "v1alpha1", "samplejobs"),
            status_patch={"phase": "Succeeded", "message": "finished by the devcluster job runner"},
        )
    ]


def shared_dir() -> Path:
    explicit = os.environ.get("KUEUE_BRIDGE_SHARED_DIR")
    return Path(explicit) if explicit else REPO_ROOT.parent / "shared"


def crd_files(*, examples: Path = EXAMPLES_DIR) -> tuple[list[Path], str]:
    """The CRD files to install and a one-line note saying where the Kueue CRDs come from."""
    crds = shared_dir() / "crds"
    own = [examples / "crds" / "samplejob.yaml"]
    if (crds / "kueue").is_dir() and any((crds / "kueue").glob("*.yaml")):
        return sorted(crds.glob("*/*.yaml")) + own, f"Kueue CRDs from {crds / 'kueue'}"
    note = (
        f"{crds / 'kueue'} not found (set KUEUE_BRIDGE_SHARED_DIR to the reference folder for the real "
        f"schemas); using the minimal Kueue CRDs in {examples / 'crds' / 'kueue-minimal.yaml'}"
    )
    return [
        examples / "crds" / "kueue-minimal.yaml",
        examples / "crds" / "appwrapper-minimal.yaml",
        *own,
    ], note


def load_manifests(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if isinstance(doc, dict)]


async def install_crds(client: KubeClient, files: list[Path], *, within_seconds: float = 30.0) -> int:
    """Create every CRD in ``files`` (existing ones are left alone) and wait until all are Established."""
    names: list[str] = []
    for path in files:
        for document in load_manifests(path):
            if document.get("kind") != "CustomResourceDefinition":
                continue
            names.append(document["metadata"]["name"])
            try:
                await client.create(CRD_GVK, document)
            except AlreadyExists:
                continue
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_seconds
    for name in names:
        while True:
            crd = await client.get(CRD_GVK, name)
            if is_object_condition_true(crd, "Established"):
                break
            if loop.time() > deadline:
                raise TimeoutError(
                    f"CustomResourceDefinition {name} not Established after {within_seconds:.0f}s"
                )
            await asyncio.sleep(0.05)
    return len(names)


def write_runtime_config(
    *, source: Path, target: Path, webhook_port: int, cert_dir: Path, probe_address: str
) -> Path:
    """``source`` with the run-time webhook and probe settings, written to ``target``."""
    config = yaml.safe_load(source.read_text()) or {}
    webhook = config.setdefault("webhook", {})
    webhook.update({"host": "127.0.0.1", "port": webhook_port, "certDir": str(cert_dir.resolve())})
    config.setdefault("health", {})["healthProbeBindAddress"] = probe_address
    target.parent.mkdir(parents=True, exist_ok=True)
    header = f"# Written by `kueue-bridge dev` from {source}; edit that file, not this one.\n"
    target.write_text(header + yaml.safe_dump(config, sort_keys=False))
    return target


async def apply_queues(client: KubeClient, documents: list[dict[str, Any]]) -> list[str]:
    """Server-side apply of namespaces, flavors and queues; returns ``Kind/name`` of each."""
    applied: list[str] = []
    for document in documents:
        gvk = GroupVersionKind.of(document)
        await client.apply(gvk, document, field_manager=FIELD_MANAGER, force=True)
        applied.append(f"{gvk.kind}/{document['metadata']['name']}")
    return applied


async def _gone(
    client: KubeClient, gvk: GroupVersionKind, name: str, namespace: str, within_seconds: float
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within_seconds
    while True:
        try:
            await client.get(gvk, name, namespace=namespace)
        except NotFound:
            return
        if loop.time() > deadline:
            raise TimeoutError(
                f"{gvk.kind} {namespace}/{name} still exists {within_seconds:.0f}s after deletion"
            )
        await asyncio.sleep(0.05)


async def delete_jobs(client: KubeClient, documents: list[dict[str, Any]]) -> int:
    """Delete each sample job that exists (background propagation) and wait until it is gone.

    Returns how many were deleted. Also used on MultiKueue workers, for the copies an earlier run
    left behind (a copy has the name and namespace of its sample).
    """
    deleted = 0
    for document in documents:
        gvk = GroupVersionKind.of(document)
        name = document["metadata"]["name"]
        namespace = document["metadata"].get("namespace", "default")
        try:
            await client.delete(gvk, name, namespace=namespace, propagation_policy="Background")
        except NotFound:
            continue
        await _gone(client, gvk, name, namespace, within_seconds=30.0)
        deleted += 1
    return deleted


def creation_note(obj: dict[str, Any]) -> str:
    """``created  Kind ns/name: suspended by the webhook`` (or NOT, with the value found)."""
    kind = next((k for k in SAMPLE_KINDS if k.gvk.kind == obj.get("kind")), SAMPLE_KINDS[0])
    value: Any = obj
    for key in kind.suspend_path:
        value = value.get(key) if isinstance(value, dict) else None
    how = (
        "suspended by the webhook"
        if value is True
        else f"NOT suspended ({'.'.join(kind.suspend_path)}={value})"
    )
    meta = obj["metadata"]
    return f"{obj['kind']} {meta['namespace']}/{meta['name']}: {how}"


async def recreate_jobs(client: KubeClient, documents: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Delete (if present) and create each sample job; returns the created objects as stored.

    The returned objects are the API server's answers to the create requests, so they show what the
    admission webhook did (``spec.suspend`` set on a job that did not ask for it).
    """
    created: list[dict[str, Any]] = []
    for document in documents:
        gvk = GroupVersionKind.of(document)
        namespace = document["metadata"].get("namespace", "default")
        await delete_jobs(client, [document])
        stored = await client.create(gvk, document, namespace=namespace)
        stored.setdefault("apiVersion", gvk.api_version)
        stored.setdefault("kind", gvk.kind)
        created.append(stored)
    return created
