"""MultiKueue job adapters: for each synced kind, how its manager copy relates to its worker copy.

Kueue's ``MultiKueueAdapter`` implementations (``pkg/controller/jobs/*/…_multikueue_adapter.go`` and
the generic ``externalframeworks/adapter.go``), reduced to pure functions on raw objects; the
Workload reconciler makes the API calls. An adapter answers three questions:

* **Is the local job ours to dispatch?** Its manager field (``spec.managedBy``, or a declarative
  kind's ``managedBy.path``) must say ``kueue.x-k8s.io/multikueue``; otherwise Kueue's reason,
  ``Expecting spec.managedBy to be "kueue.x-k8s.io/multikueue" not "<value>"`` (built-in kinds) or
  ``Expecting .spec.managedBy ...`` (generic kinds).
* **What is created on the worker?** ``shared.remote_copy.remote_job_copy`` minus the manager field
  and the kind's own extra fields: a batch Job also loses its generated ``spec.selector`` and the
  job-controller labels of its template (Kueue's ``cleanLabels``); a batch Job or JobSet loses
  ``spec.ttlSecondsAfterFinished`` (kueue-bridge: the final status must reach the manager before
  the worker may delete the object, Kueue #14734); a declarative kind loses its adapter's
  ``remoteDropPaths``. A PipelineRun copy is always created pending (``spec.status:
  PipelineRunPending``, Tekton's "do not start yet"), like every other kind's copy is created
  suspended: Kueue copies the local job as is, relying on it being suspended while its Workload is
  not admitted, but a PipelineRun stopped on the manager (an eviction, tekton-kueue's graceful
  ``StoppedRunFinally``) is not pending, and a re-dispatched copy carrying that value would be
  stopped by the worker's Tekton before its first task (kueue-bridge; Kueue has no PipelineRun
  adapter). The worker's Kueue then starts the copy by clearing the field.
* **Which status does the local job get?** The remote ``status`` as a whole (Kueue's JobSet,
  AppWrapper and generic adapters; a remote without a status changes nothing), written as a merge
  patch of the status subresource and only when it differs. A batch Job follows Kueue's
  ``determineStatusUpdate``: while the local Job is still suspended and the remote one runs, the
  status is *deferred* (not copied; the local Job only gets ``Suspended=True``
  "MultiKueueAdapter"/"Set by MultiKueue adapter", which newer Kubernetes requires for spec
  updates), and the caller re-checks 2 s later. kueue-bridge also keeps the mirrored Job status
  within kube-apiserver's Job status rules (``_within_job_status_rules``).

Adapters exist for the built-in frameworks enabled in ``integrations`` (batch Job, JobSet,
AppWrapper, PipelineRun) and for every ``multiKueue.externalFrameworks`` entry: a declarative kind
of ours uses its adapter spec's ``managedBy.path``; any other kind Kueue's generic ``spec.managedBy``.
A kind without a manager field at all (``managed_by is None``) is *kept pending* (see
``multikueue.workload``), kueue-bridge's extension for CRDs that know nothing about MultiKueue.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from shared.config import Configuration
from shared.constants import BATCH_JOB_MANAGED_LABELS, MULTIKUEUE_CONTROLLER_NAME
from shared.frameworks.base import AdapterError
from shared.frameworks.batch_job import JOB_NAME_LABEL, BatchJobAdapter
from shared.frameworks.builtin_kinds import BATCH_JOB, JOBSET, PIPELINERUN
from shared.frameworks.paths import FieldPath, parse_path
from shared.frameworks.tekton import PIPELINERUN_PENDING
from shared.jsontree import json_tree_copy
from shared.kube import GroupVersionKind
from shared.kube.conditions import is_condition_true
from shared.kube.times import format_time
from shared.merge_patch import create_merge_patch
from shared.remote_copy import remote_job_copy

__all__ = [
    "SPEC_MANAGED_BY",
    "MultiKueueAdapters",
    "MultiKueueJobAdapter",
    "StatusSync",
]

SPEC_MANAGED_BY: Final = parse_path("spec.managedBy")
_SELECTOR: Final = parse_path("spec.selector")
_TTL: Final = parse_path("spec.ttlSecondsAfterFinished")
_TEMPLATE_LABELS: Final = parse_path("spec.template.metadata.labels")
_SUSPEND: Final = parse_path("spec.suspend")
_PIPELINERUN_STATUS: Final = parse_path("spec.status")
#: the built-in kinds Kueue has a MultiKueue adapter for (plus PipelineRun, generic in Kueue)
_SELF_CLEANING: Final[dict[GroupVersionKind, tuple[FieldPath, ...]]] = {
    BATCH_JOB.gvk: (_SELECTOR, _TTL),
    JOBSET.gvk: (_TTL,),
}


@dataclass(frozen=True)
class StatusSync:
    """A merge patch for the local job's status subresource (``None``: nothing to write)."""

    patch: dict[str, Any] | None
    deferred: bool = False


@dataclass(frozen=True)
class MultiKueueJobAdapter:
    gvk: GroupVersionKind
    managed_by: FieldPath | None = SPEC_MANAGED_BY
    #: how the manager field is named in the "not managed" reason (Kueue: built-ins vs generic)
    managed_by_text: str = "spec.managedBy"
    drop: tuple[FieldPath, ...] = ()
    #: fields the copy is created with whatever the local job says (its "not started yet" form)
    created_as: tuple[tuple[FieldPath, Any], ...] = ()
    batch_job: bool = False
    builtin: bool = False

    @property
    def keep_pending(self) -> bool:
        """No manager field: the local copy must stay suspended while the remote one runs."""
        return self.managed_by is None

    def is_managed(self, local: Mapping[str, Any]) -> tuple[bool, str]:
        """``IsJobManagedByKueue``: ``(True, "")`` or ``(False, reason)``; ``AdapterError`` for a non-string."""
        if self.managed_by is None:
            return True, ""
        value = self.managed_by.get(local, default="")
        if not isinstance(value, str):
            raise AdapterError(self.managed_by.text, "expected a string")
        if value != MULTIKUEUE_CONTROLLER_NAME:
            return (
                False,
                f'Expecting {self.managed_by_text} to be "{MULTIKUEUE_CONTROLLER_NAME}" not "{value}"',
            )
        return True, ""

    def remote_copy(
        self,
        local: Mapping[str, Any],
        *,
        workload_name: str,
        origin: str,
        workload_identifier_annotations: bool = True,
    ) -> dict[str, Any]:
        drop = self.drop if self.managed_by is None else (self.managed_by, *self.drop)
        copy = remote_job_copy(
            local,
            workload_name=workload_name,
            origin=origin,
            drop=drop,
            workload_identifier_annotations=workload_identifier_annotations,
        )
        for path, value in self.created_as:
            path.set(copy, value)
        if self.batch_job:
            labels = _TEMPLATE_LABELS.get(copy, default=None)
            if isinstance(labels, dict):
                for label in BATCH_JOB_MANAGED_LABELS:
                    if label != JOB_NAME_LABEL:
                        labels.pop(label, None)
        return copy

    def status_sync(
        self, local: Mapping[str, Any], remote: Mapping[str, Any], *, now: datetime
    ) -> StatusSync:
        """The local status write that mirrors ``remote`` (Kueue's per-kind rules, module doc)."""
        current = local.get("status")
        current_status = current if isinstance(current, dict) else {}
        wanted, deferred = (
            _batch_status(local, remote, now=now) if self.batch_job else (remote.get("status"), False)
        )
        if not isinstance(wanted, dict):
            return StatusSync(None, deferred)
        if self.batch_job:
            wanted = _within_job_status_rules(local, current_status, wanted)
        patch = create_merge_patch(current_status, wanted)
        return StatusSync({"status": patch} if patch else None, deferred)


def _within_job_status_rules(
    local: Mapping[str, Any], current: dict[str, Any], wanted: dict[str, Any]
) -> dict[str, Any]:
    """The mirrored status, kept within kube-apiserver's Job status rules for the manager's Job.

    Since JobManagedBy is GA, every ``/status`` write of a Job is validated as an external
    controller's: ``startTime`` of an unsuspended Job may not change once set, ``failed`` and
    ``succeeded`` never decrease, ``completionTime`` never changes once set. A copy on another
    worker (after a re-dispatch), or one not started yet, reports less than the manager's Job already
    shows; Kueue copies it verbatim and gets 422 until the copy catches up (kueue-bridge keeps the
    manager's values for exactly those fields instead).
    """
    adjusted = dict(wanted)
    if _SUSPEND.get(local, default=False) is not True and current.get("startTime"):
        adjusted["startTime"] = current["startTime"]
    for counter in ("failed", "succeeded"):
        mine, theirs = current.get(counter), adjusted.get(counter)
        if isinstance(mine, int) and mine > (theirs if isinstance(theirs, int) else 0):
            adjusted[counter] = mine
    if current.get("completionTime") and adjusted.get("completionTime") != current["completionTime"]:
        adjusted["completionTime"] = current["completionTime"]
    return adjusted


def _batch_status(local: Mapping[str, Any], remote: Mapping[str, Any], *, now: datetime) -> tuple[Any, bool]:
    """Kueue's ``determineStatusUpdate`` for batch Jobs: ``(status to write, deferred)``."""
    remote_status = remote.get("status") or {}
    if _SUSPEND.get(local, default=False) is not True:
        return remote_status, False
    if _SUSPEND.get(remote, default=False) is True:
        return remote_status, False
    if BatchJobAdapter(json_tree_copy(dict(remote))).finished().finished:
        return remote_status, False
    status = json_tree_copy(local.get("status") or {})
    found = status.get("conditions")
    conditions: list[Any] = found if isinstance(found, list) else []
    if not is_condition_true(conditions, "Suspended"):
        stamp = format_time(now)
        marker = {
            "type": "Suspended",
            "status": "True",
            "reason": "MultiKueueAdapter",
            "message": "Set by MultiKueue adapter",
            "lastTransitionTime": stamp,
            "lastProbeTime": stamp,
        }
        conditions = [c for c in conditions if not (isinstance(c, dict) and c.get("type") == "Suspended")]
        status["conditions"] = [*conditions, marker]
    return status, True


@dataclass
class MultiKueueAdapters:
    """Adapters by GVK (Kueue keys them by ``gvk.String()``: the owner's apiVersion and kind, exactly)."""

    by_gvk: dict[GroupVersionKind, MultiKueueJobAdapter] = field(default_factory=dict)

    def get(self, gvk: GroupVersionKind) -> MultiKueueJobAdapter | None:
        return self.by_gvk.get(gvk)

    @property
    def gvks(self) -> tuple[GroupVersionKind, ...]:
        return tuple(self.by_gvk)

    @classmethod
    def from_config(cls, config: Configuration) -> MultiKueueAdapters:
        adapters: dict[GroupVersionKind, MultiKueueJobAdapter] = {}
        for kind in config.multikueue_kinds():
            if kind.builtin is not None:
                adapters[kind.gvk] = _builtin(kind.gvk)
            elif kind.adapter is not None:
                adapters[kind.gvk] = _declarative(kind.gvk, kind.adapter)
            else:
                adapters[kind.gvk] = _generic(kind.gvk)
        return cls(adapters)


def _builtin(gvk: GroupVersionKind) -> MultiKueueJobAdapter:
    created_as = ((_PIPELINERUN_STATUS, PIPELINERUN_PENDING),) if gvk == PIPELINERUN.gvk else ()
    return MultiKueueJobAdapter(
        gvk=gvk,
        drop=_SELF_CLEANING.get(gvk, ()),
        created_as=created_as,
        batch_job=gvk == BATCH_JOB.gvk,
        builtin=True,
    )


def _generic(gvk: GroupVersionKind) -> MultiKueueJobAdapter:
    return MultiKueueJobAdapter(gvk=gvk, managed_by_text=".spec.managedBy")


def _paths(texts: Iterable[str]) -> tuple[FieldPath, ...]:
    return tuple(parse_path(text) for text in texts)


def _declarative(gvk: GroupVersionKind, spec: Any) -> MultiKueueJobAdapter:
    managed_by = parse_path(spec.managed_by.path) if spec.managed_by is not None else None
    return MultiKueueJobAdapter(
        gvk=gvk,
        managed_by=managed_by,
        managed_by_text=f".{managed_by.text}" if managed_by is not None else ".spec.managedBy",
        drop=_paths(spec.remote_drop_paths),
    )
