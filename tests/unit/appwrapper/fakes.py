"""An in-memory cluster implementing ``appwrapper.ports``, and AppWrapper builders, for unit tests.

It behaves like the API server where the phase machine depends on it: typed errors
(``AlreadyExists``, ``UnknownKindError`` for a kind that is not served, ``Conflict`` on a stale
resourceVersion), merge-patch status writes, ``generateName``, and deletions that either take effect
at once or, for objects listed in ``slow_deletions``, only mark ``deletionTimestamp`` (a finalizer
that some other controller has not removed yet). Every write is appended to ``writes``.
"""

from __future__ import annotations

import copy
import itertools
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from appwrapper.model import APPWRAPPER_LABEL
from shared.kube import AlreadyExists, Conflict, GroupVersionKind, UnknownKindError
from shared.merge_patch import apply_merge_patch

WireDict = dict[str, Any]
Key = tuple[str, str, str, str]  # apiVersion, kind, namespace, name

POD_SPEC = {
    "restartPolicy": "Never",
    "containers": [{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}],
}
START = datetime(2025, 1, 1, tzinfo=UTC)


def batch_job(name: str = "job", *, parallelism: int = 2, completions: int | None = None) -> WireDict:
    spec: WireDict = {"parallelism": parallelism, "template": {"spec": copy.deepcopy(POD_SPEC)}}
    if completions is not None:
        spec["completions"] = completions
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name}, "spec": spec}


def config_map(name: str = "cfg") -> WireDict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"a": "b"}}


def appwrapper(
    *templates: WireDict, suspend: bool = True, annotations: Mapping[str, str] | None = None, **extra: Any
) -> WireDict:
    metadata: WireDict = {"name": "aw", "namespace": "ns", "uid": "aw-uid", "resourceVersion": "1"}
    if annotations:
        metadata["annotations"] = dict(annotations)
    return {
        "apiVersion": "workload.codeflare.dev/v1beta2",
        "kind": "AppWrapper",
        "metadata": metadata,
        "spec": {"suspend": suspend, "components": [{"template": t, **extra} for t in templates]},
    }


@dataclass
class RecordedEvents:
    items: list[tuple[str, str, str]] = field(default_factory=list)

    def record(self, *, regarding: Mapping[str, Any], event_type: str, reason: str, message: str) -> None:
        self.items.append((event_type, reason, message))


@dataclass
class FakeCluster:
    aw: WireDict
    served: set[tuple[str, str]] = field(
        default_factory=lambda: {("batch/v1", "Job"), ("v1", "ConfigMap"), ("v1", "Pod")}
    )
    objects: dict[Key, WireDict] = field(default_factory=dict)
    pods: list[WireDict] = field(default_factory=list)
    #: objects whose delete only sets deletionTimestamp
    slow_deletions: set[str] = field(default_factory=set)
    #: exceptions the next create of an object name raises (consumed)
    create_errors: dict[str, Exception] = field(default_factory=dict)
    #: an exception the next finalizer write raises (consumed)
    finalizer_error: Exception | None = None
    #: an exception the next status write raises (consumed)
    status_error: Exception | None = None
    writes: list[tuple[str, Any]] = field(default_factory=list)
    phases: list[str] = field(default_factory=list)
    _uids: Any = field(default_factory=lambda: itertools.count(1))

    def _check_served(self, api_version: str, kind: str) -> None:
        if (api_version, kind) not in self.served:
            raise UnknownKindError(GroupVersionKind.from_api_version(api_version, kind), "not served")

    def _bump(self) -> None:
        metadata = self.aw["metadata"]
        metadata["resourceVersion"] = str(int(metadata.get("resourceVersion", "1")) + 1)

    def on_phase(self, *, namespace: str, phase: str) -> None:
        self.phases.append(phase)

    # --- ClusterPort -----------------------------------------------------------------------------

    async def patch_status(self, aw: Mapping[str, Any], patch: WireDict) -> WireDict:
        error, self.status_error = self.status_error, None
        if error is not None:
            raise error
        self.writes.append(("patch_status", copy.deepcopy(patch)))
        self.aw["status"] = apply_merge_patch({"status": self.aw.get("status") or {}}, patch)["status"]
        self._bump()
        return copy.deepcopy(self.aw)

    async def set_finalizers(self, aw: Mapping[str, Any], finalizers: list[str]) -> WireDict:
        error, self.finalizer_error = self.finalizer_error, None
        if error is not None:
            raise error
        if aw["metadata"].get("resourceVersion") != self.aw["metadata"].get("resourceVersion"):
            raise Conflict(code=409, message="the object has been modified")
        self.writes.append(("set_finalizers", list(finalizers)))
        self.aw["metadata"]["finalizers"] = list(finalizers)
        self._bump()
        return copy.deepcopy(self.aw)

    async def create(self, obj: WireDict) -> WireDict:
        self._check_served(obj["apiVersion"], obj["kind"])
        created = copy.deepcopy(obj)
        metadata = created["metadata"]
        if not metadata.get("name"):
            metadata["name"] = f"{metadata['generateName']}{next(self._uids)}"
        error = self.create_errors.pop(metadata["name"], None)
        if error is not None:
            raise error
        key = (obj["apiVersion"], obj["kind"], metadata["namespace"], metadata["name"])
        if key in self.objects:
            raise AlreadyExists(code=409, message=f'{obj["kind"]} "{metadata["name"]}" already exists')
        metadata["uid"] = f"uid-{next(self._uids)}"
        self.objects[key] = created
        self.writes.append(("create", key))
        return copy.deepcopy(created)

    async def get(self, *, api_version: str, kind: str, namespace: str, name: str) -> WireDict | None:
        if (api_version, kind) not in self.served:
            return None
        found = self.objects.get((api_version, kind, namespace, name))
        return copy.deepcopy(found) if found is not None else None

    async def delete(
        self,
        *,
        api_version: str,
        kind: str,
        namespace: str,
        name: str,
        uid: str | None = None,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> bool:
        if (api_version, kind) not in self.served:
            return False
        key = (api_version, kind, namespace, name)
        if key not in self.objects:
            return False
        if uid is not None and self.objects[key]["metadata"].get("uid") != uid:
            raise Conflict(code=409, message=f"Precondition failed: UID in precondition: {uid}")
        self.writes.append(("delete", (*key, propagation_policy, grace_period_seconds)))
        if name in self.slow_deletions and grace_period_seconds != 0:
            self.objects[key]["metadata"]["deletionTimestamp"] = "2025-01-01T00:00:00Z"
        else:
            del self.objects[key]
        return True

    async def list_pods(self, *, namespace: str, appwrapper: str) -> list[WireDict]:
        return self.cached_pods(namespace=namespace, appwrapper=appwrapper)

    def cached_pods(self, *, namespace: str, appwrapper: str) -> list[WireDict]:
        return [
            copy.deepcopy(p)
            for p in self.pods
            if p["metadata"].get("namespace") == namespace
            and (p["metadata"].get("labels") or {}).get(APPWRAPPER_LABEL) == appwrapper
        ]

    async def delete_pod(self, *, namespace: str, name: str, grace_period_seconds: int) -> None:
        self.writes.append(("delete_pod", (name, grace_period_seconds)))
        self.pods = [p for p in self.pods if p["metadata"]["name"] != name]

    # --- helpers for tests -----------------------------------------------------------------------

    def job(self, name: str = "job") -> WireDict:
        return self.objects[("batch/v1", "Job", "ns", name)]

    def set_job_status(self, status: WireDict, name: str = "job") -> None:
        self.job(name)["status"] = status

    def condition(self, condition_type: str) -> WireDict | None:
        for condition in (self.aw.get("status") or {}).get("conditions") or []:
            if condition["type"] == condition_type:
                return dict(condition)
        return None

    @property
    def phase(self) -> str:
        return str((self.aw.get("status") or {}).get("phase", ""))


def pod(name: str, phase: str, *, exit_code: int | None = None, owner_uid: str | None = None) -> WireDict:
    status: WireDict = {"phase": phase}
    if exit_code is not None:
        status["containerStatuses"] = [{"name": "main", "state": {"terminated": {"exitCode": exit_code}}}]
    metadata: WireDict = {"name": name, "namespace": "ns", "labels": {APPWRAPPER_LABEL: "aw"}}
    if owner_uid is not None:
        metadata["ownerReferences"] = [{"kind": "Job", "name": "job", "uid": owner_uid, "controller": True}]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "status": status}
