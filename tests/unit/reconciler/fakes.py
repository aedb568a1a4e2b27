"""An in-memory cluster implementing the reconciler's ports, for unit tests.

It behaves like the API server where the reconciler's correctness depends on it: resourceVersion
preconditions (409 on a stale write), merge-patch semantics, status subresource isolation, deletion
with finalizers, owner lookups, and kube-apiserver's batch/v1 Job rules that decide how a Job can be
stopped (a 422 ``InvalidError`` otherwise): the pod template may change only while the stored Job is
suspended and has no ``status.startTime``, and then only in labels, annotations, node selector,
tolerations, node affinity and scheduling gates; ``status.startTime`` may be removed only while the
Job is suspended (``pkg/apis/batch/validation``: ``validatePodTemplateUpdate``,
``ValidateJobStatusUpdate``). Every write is appended to ``writes`` so tests can assert
exactly which API calls a reconcile made (and that an idempotent second pass makes none).
"""

from __future__ import annotations

import copy
import itertools
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from reconciler.ports import ConflictError, InvalidError, NotFoundError
from shared.kube import GroupVersionKind
from shared.merge_patch import apply_merge_patch

WireDict = dict[str, Any]
StoreKey = tuple[str, str, str, str]  # group, kind, namespace, name

_SCHEDULING_DIRECTIVES = ("nodeSelector", "tolerations", "schedulingGates")


def _template_without_directives(template: WireDict) -> WireDict:
    stripped = copy.deepcopy(template)
    metadata = stripped.get("metadata") or {}
    metadata.pop("labels", None)
    metadata.pop("annotations", None)
    spec = stripped.get("spec") or {}
    for name in _SCHEDULING_DIRECTIVES:
        spec.pop(name, None)
    affinity = spec.get("affinity")
    if isinstance(affinity, dict):
        affinity.pop("nodeAffinity", None)
        if not affinity:
            del spec["affinity"]
    return stripped


def check_batch_job_write(old: WireDict, new: WireDict, *, subresource: str | None) -> None:
    """kube-apiserver's Job update rules that matter for stopping a started Job (422 otherwise)."""
    name = old["metadata"]["name"]
    old_status = old.get("status") or {}
    suspended = old.get("spec", {}).get("suspend") is True
    if subresource == "status":
        started = old_status.get("startTime")
        if started and (new.get("status") or {}).get("startTime") != started and not suspended:
            raise InvalidError(
                f'Job.batch "{name}" is invalid: status.startTime: Invalid value: null: '
                "field is immutable for unsuspended job once set",
                fields=("status.startTime",),
            )
        return
    old_template, new_template = old["spec"]["template"], new["spec"]["template"]
    # kube-apiserver 1.36.2 (measured): suspended, no active pod, and never started or Suspended=True
    if suspended and not old_status.get("active") and not old_status.get("startTime"):
        old_template, new_template = (
            _template_without_directives(old_template),
            _template_without_directives(new_template),
        )
    if old_template != new_template:
        raise InvalidError(
            f'Job.batch "{name}" is invalid: spec.template: Invalid value: ...: field is immutable',
            fields=("spec.template",),
        )


@dataclass
class Write:
    verb: str
    kind: str
    name: str
    subresource: str | None = None
    body: WireDict = field(default_factory=dict)
    field_manager: str | None = None


@dataclass
class RecordedEvent:
    kind: str
    name: str
    event_type: str
    reason: str
    message: str


class FakeCluster:
    def __init__(self) -> None:
        self.objects: dict[StoreKey, WireDict] = {}
        self.writes: list[Write] = []
        self.events: list[RecordedEvent] = []
        #: per object, per field manager: the status fields it applied (conditions by type)
        self.status_owners: dict[StoreKey, dict[str, set[tuple[str, str]]]] = {}
        self._revision = itertools.count(100)
        self._created = itertools.count()

    def _creation_timestamp(self) -> str:
        """Strictly increasing, one second apart, so creation order is unambiguous (as on a server
        whose clock ticks between creates; Kueue orders slices by it)."""
        when = datetime(2026, 11, 22, tzinfo=UTC) + timedelta(seconds=next(self._created))
        return when.strftime("%Y-%m-%dT%H:%M:%SZ")

    # --- setup helpers --------------------------------------------------------------------------
    def add(self, obj: WireDict) -> WireDict:
        stored = copy.deepcopy(obj)
        metadata = stored.setdefault("metadata", {})
        metadata.setdefault("uid", str(uuid.uuid4()))
        metadata.setdefault("generation", 1)
        metadata.setdefault("creationTimestamp", self._creation_timestamp())
        metadata["resourceVersion"] = str(next(self._revision))
        self.objects[self._key_of(stored)] = stored
        return copy.deepcopy(stored)

    def own_status(self, key: StoreKey, manager: str, *fields: tuple[str, str]) -> None:
        """Record ``fields`` of a status written directly in ``objects`` as applied by ``manager``
        (Kueue's scheduler and workload controller apply what the tests write for them)."""
        self.status_owners.setdefault(key, {}).setdefault(manager, set()).update(fields)

    def find(self, kind: str, namespace: str | None, name: str) -> WireDict | None:
        for (_, stored_kind, stored_namespace, stored_name), obj in self.objects.items():
            if (stored_kind, stored_namespace, stored_name) == (kind, namespace or "", name):
                return copy.deepcopy(obj)
        return None

    def of_kind(self, kind: str) -> list[WireDict]:
        return [copy.deepcopy(obj) for key, obj in sorted(self.objects.items()) if key[1] == kind]

    def reasons(self) -> list[str]:
        return [event.reason for event in self.events]

    @staticmethod
    def _key_of(obj: WireDict) -> StoreKey:
        group = GroupVersionKind.of(obj).group
        metadata = obj["metadata"]
        return (group, str(obj["kind"]), str(metadata.get("namespace") or ""), str(metadata["name"]))

    @staticmethod
    def _key(gvk: GroupVersionKind, namespace: str | None, name: str) -> StoreKey:
        return (gvk.group, gvk.kind, namespace or "", name)

    # --- ClusterReader ----------------------------------------------------------------------------
    async def get(self, gvk: GroupVersionKind, namespace: str | None, name: str) -> WireDict | None:
        obj = self.objects.get(self._key(gvk, namespace, name))
        return copy.deepcopy(obj) if obj is not None else None

    async def workloads_owned_by(
        self, *, namespace: str, owner_gvk: GroupVersionKind, owner_name: str
    ) -> list[WireDict]:
        owned = []
        for (group, kind, obj_namespace, _), obj in sorted(self.objects.items()):
            if (group, kind, obj_namespace) != ("kueue.x-k8s.io", "Workload", namespace):
                continue
            for reference in obj["metadata"].get("ownerReferences") or []:
                ref_group = GroupVersionKind.of(reference).group
                if (ref_group, reference.get("kind"), reference.get("name")) == (
                    owner_gvk.group,
                    owner_gvk.kind,
                    owner_name,
                ):
                    owned.append(copy.deepcopy(obj))
                    break
        return owned

    async def list_priority_classes(self) -> list[WireDict]:
        return self.of_kind("PriorityClass")

    # --- ClusterWriter ----------------------------------------------------------------------------
    async def create(
        self, gvk: GroupVersionKind, namespace: str | None, body: WireDict, *, read_back: bool = True
    ) -> WireDict:
        key = self._key(gvk, namespace, body["metadata"]["name"])
        if key in self.objects:
            raise ConflictError(f"{gvk.kind} {body['metadata']['name']} already exists")
        self.writes.append(Write("create", gvk.kind, body["metadata"]["name"], body=copy.deepcopy(body)))
        stored = copy.deepcopy(body)
        stored["metadata"]["namespace"] = namespace
        stored["metadata"].setdefault("uid", str(uuid.uuid4()))
        stored["metadata"]["generation"] = 1
        stored["metadata"]["creationTimestamp"] = self._creation_timestamp()
        stored["metadata"]["resourceVersion"] = str(next(self._revision))
        self.objects[key] = stored
        return copy.deepcopy(stored) if read_back else {}

    def _store_write(self, key: StoreKey, new: WireDict, *, subresource: str | None) -> WireDict:
        old = self.objects[key]
        if key[:2] == ("batch", "Job"):
            check_batch_job_write(old, new, subresource=subresource)
        if subresource == "status":
            merged = copy.deepcopy(old)
            merged["status"] = copy.deepcopy(new.get("status"))
        else:
            merged = copy.deepcopy(new)
            if "status" in old:
                merged["status"] = copy.deepcopy(old["status"])
            if merged.get("spec") != old.get("spec"):
                merged["metadata"]["generation"] = int(old["metadata"].get("generation", 1)) + 1
        merged["metadata"]["resourceVersion"] = str(next(self._revision))
        if merged["metadata"].get("deletionTimestamp") and not merged["metadata"].get("finalizers"):
            del self.objects[key]
        else:
            self.objects[key] = merged
        return copy.deepcopy(merged)

    async def update(
        self,
        gvk: GroupVersionKind,
        namespace: str | None,
        body: WireDict,
        *,
        subresource: str | None = None,
        read_back: bool = True,
    ) -> WireDict:
        key = self._key(gvk, namespace, body["metadata"]["name"])
        if key not in self.objects:
            raise NotFoundError(body["metadata"]["name"])
        current_rv = self.objects[key]["metadata"]["resourceVersion"]
        if body["metadata"].get("resourceVersion") != current_rv:
            raise ConflictError(f"{gvk.kind} {body['metadata']['name']} was modified")
        self.writes.append(
            Write("update", gvk.kind, body["metadata"]["name"], subresource, copy.deepcopy(body))
        )
        stored = self._store_write(key, body, subresource=subresource)
        return stored if read_back else {}  # as KubeWriter: a caller that dropped it gets nothing

    async def merge_patch(
        self,
        gvk: GroupVersionKind,
        namespace: str | None,
        name: str,
        patch: WireDict,
        *,
        subresource: str | None = None,
        read_back: bool = True,
    ) -> WireDict:
        key = self._key(gvk, namespace, name)
        if key not in self.objects:
            raise NotFoundError(name)
        precondition = (patch.get("metadata") or {}).get("resourceVersion")
        if precondition is not None and precondition != self.objects[key]["metadata"]["resourceVersion"]:
            raise ConflictError(f"{gvk.kind} {name} was modified")
        self.writes.append(Write("patch", gvk.kind, name, subresource, copy.deepcopy(patch)))
        patched = apply_merge_patch(self.objects[key], patch)
        stored = self._store_write(key, patched, subresource=subresource)
        return stored if read_back else {}

    async def apply_status(
        self,
        gvk: GroupVersionKind,
        namespace: str | None,
        body: WireDict,
        *,
        field_manager: str,
        read_back: bool = True,
    ) -> WireDict:
        """A forced status apply, owned per manager at the granularity the reconciler's writes need:
        each status field, and each condition by type. What this manager applied before and leaves
        out now is removed unless another manager applied it too."""
        name = body["metadata"]["name"]
        key = self._key(gvk, namespace, name)
        if key not in self.objects:
            raise NotFoundError(name)
        precondition = body["metadata"].get("resourceVersion")
        if precondition is not None and precondition != self.objects[key]["metadata"]["resourceVersion"]:
            raise ConflictError(f"{gvk.kind} {name} was modified")
        self.writes.append(Write("apply", gvk.kind, name, "status", copy.deepcopy(body), field_manager))
        applied = body.get("status") or {}
        fields = {
            (field_name, str(item.get("type"))) if field_name == "conditions" else (field_name, "")
            for field_name, value in applied.items()
            for item in (value if field_name == "conditions" else [{}])
        }
        status = copy.deepcopy(self.objects[key].get("status") or {})
        owners = self.status_owners.setdefault(key, {})
        for field_name, condition_type in owners.get(field_manager, set()) - fields:
            if any(
                (field_name, condition_type) in owned for m, owned in owners.items() if m != field_manager
            ):
                continue
            if field_name == "conditions":
                status["conditions"] = [
                    c for c in status.get("conditions") or [] if c.get("type") != condition_type
                ]
            else:
                status.pop(field_name, None)
        for field_name, value in applied.items():
            if field_name != "conditions":
                status[field_name] = copy.deepcopy(value)
                continue
            conditions = status.setdefault("conditions", [])
            for condition in value:
                found = [i for i, c in enumerate(conditions) if c.get("type") == condition.get("type")]
                if found:
                    conditions[found[0]] = copy.deepcopy(condition)
                else:
                    conditions.append(copy.deepcopy(condition))
        if not status.get("conditions"):
            status.pop("conditions", None)
        for other in owners.values():
            other -= fields  # forced: the fields move to this manager
        owners[field_manager] = fields
        stored = self._store_write(key, {**self.objects[key], "status": status}, subresource="status")
        return stored if read_back else {}

    async def delete(
        self, gvk: GroupVersionKind, namespace: str | None, name: str, *, uid: str | None = None
    ) -> None:
        key = self._key(gvk, namespace, name)
        if key not in self.objects:
            raise NotFoundError(name)
        if uid is not None and self.objects[key]["metadata"].get("uid") != uid:
            raise ConflictError(f"{gvk.kind} {name} has another uid")
        self.writes.append(Write("delete", gvk.kind, name))
        obj = self.objects[key]
        if obj["metadata"].get("finalizers"):
            obj["metadata"].setdefault("deletionTimestamp", "2026-11-22T00:00:00Z")
            obj["metadata"]["resourceVersion"] = str(next(self._revision))
        else:
            del self.objects[key]

    # --- EventSink --------------------------------------------------------------------------------
    def record(self, *, regarding: WireDict, event_type: str, reason: str, message: str) -> None:
        self.events.append(
            RecordedEvent(
                str(regarding.get("kind")), regarding["metadata"]["name"], event_type, reason, message
            )
        )
