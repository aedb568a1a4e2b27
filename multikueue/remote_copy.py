"""The copy of a job (or Workload) that MultiKueue creates on a worker cluster.

Kueue builds remote objects from scratch instead of copying the local one (``CloneObjectMetaForCreation``,
``externalframeworks/adapter.go``; Kueue #12540 -> #12643): only ``apiVersion``, ``kind``, the
name, namespace, labels and annotations, and a deep copy of ``spec``. Everything else -- uid,
resourceVersion, ownerReferences (they point at manager-only UIDs, so the worker's garbage
collector would delete the copy and MultiKueue recreate it forever), finalizers, managedFields,
generation, timestamps and the whole ``status`` -- is left behind.

Then, for a job:

* the field naming its manager (``spec.managedBy`` for the built-in kinds, the declarative
  adapter's ``managedBy.path``) is removed, so the worker's own controller runs the copy;
* fields the kind's adapter lists are removed (a batch Job's generated ``spec.selector``; fields
  that make a worker delete a finished object by itself, such as ``ttlSecondsAfterFinished``,
  which would otherwise lose the final status before the manager copied it -- Kueue #14734);
* the label ``kueue.x-k8s.io/multikueue-origin=<origin>`` marks it as ours (the ownership token for
  watches, deletion and garbage collection), and the prebuilt Workload name is recorded (an
  annotation with ``WorkloadIdentifierAnnotations``, Kueue's default, else a label).

Pure functions on raw dicts; the input is never modified.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from shared.constants import JOB_UID_LABEL, MULTIKUEUE_ORIGIN_LABEL
from shared.frameworks.paths import FieldPath
from shared.jsontree import json_tree_copy
from shared.kueue.jobmeta import set_prebuilt_workload_name

__all__ = ["remote_job_copy", "remote_workload_copy", "sanitized_object"]


def _string_map(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        return {}
    return {str(key): str(item) for key, item in value.items() if isinstance(item, str)}


def sanitized_object(local: Mapping[str, Any]) -> dict[str, Any]:
    """apiVersion, kind, metadata {name, namespace, labels, annotations} and a deep copy of spec."""
    metadata = local.get("metadata") or {}
    copied_metadata: dict[str, Any] = {"name": metadata.get("name")}
    if metadata.get("namespace"):
        copied_metadata["namespace"] = metadata["namespace"]
    labels = _string_map(metadata.get("labels"))
    if labels:
        copied_metadata["labels"] = labels
    annotations = _string_map(metadata.get("annotations"))
    if annotations:
        copied_metadata["annotations"] = annotations
    copy: dict[str, Any] = {
        "apiVersion": local.get("apiVersion"),
        "kind": local.get("kind"),
        "metadata": copied_metadata,
    }
    if "spec" in local:
        copy["spec"] = json_tree_copy(local["spec"])
    return copy


def _mark_ours(obj: dict[str, Any], origin: str) -> None:
    labels = obj["metadata"].setdefault("labels", {})
    labels[MULTIKUEUE_ORIGIN_LABEL] = origin


def remote_job_copy(
    local: Mapping[str, Any],
    *,
    workload_name: str,
    origin: str,
    drop: Iterable[FieldPath] = (),
    workload_identifier_annotations: bool = True,
) -> dict[str, Any]:
    """The job to create on the worker (``drop``: the managedBy path and the kind's extra fields)."""
    copy = sanitized_object(local)
    for path in drop:
        try:
            path.delete(copy)
        except ValueError:  # a field of an unexpected shape on the way: nothing to drop there
            continue
    _mark_ours(copy, origin)
    set_prebuilt_workload_name(
        copy, workload_name, workload_identifier_annotations=workload_identifier_annotations
    )
    return copy


def remote_workload_copy(local: Mapping[str, Any], *, origin: str) -> dict[str, Any]:
    """Kueue's ``cloneForCreate``: the Workload clone, without ``kueue.x-k8s.io/job-uid``."""
    copy = sanitized_object(local)
    labels = copy["metadata"].get("labels") or {}
    labels.pop(JOB_UID_LABEL, None)
    copy["metadata"]["labels"] = labels
    _mark_ours(copy, origin)
    return copy
