"""Kueue's reading of a job's metadata: queue name, prebuilt workload, priority class, limits.

Every accessor takes the **raw job dict** as read from the API server and applies Kueue's rule for
that key (``jobframework/interface.go``, ``utils.go``, ``reconciler.go``):

* the queue name is a *label* only (Kueue removed the legacy annotation);
* the prebuilt workload name is a label or an annotation under the same key; with the feature gate
  ``WorkloadIdentifierAnnotations`` (Beta, on) the annotation wins, otherwise the label wins and the
  annotation only counts when its value is too long for a label;
* ``kueue.x-k8s.io/max-exec-time-seconds`` is a base-10 int32; an invalid or non-positive value is
  treated as absent (the webhook rejects it, but the reconciler must not crash on an old object);
* ``provreq.kueue.x-k8s.io/*`` annotations and the configured ``labelKeysToCopy`` are copied to the
  Workload at creation.

Invariant: bad input never raises. A metadata section of the wrong type reads as empty and a
non-string label/annotation value is ignored, so a malformed object is handled as "not set" by the
caller and reported by the webhook, never crashes a reconcile loop.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from shared.constants import (
    MAX_EXEC_TIME_SECONDS_LABEL,
    PREBUILT_WORKLOAD_ANNOTATION,
    PREBUILT_WORKLOAD_LABEL,
    PROVREQ_ANNOTATION_PREFIX,
    QUEUE_LABEL,
    WORKLOAD_PRIORITY_CLASS_LABEL,
)
from shared.validation_k8s import LABEL_VALUE_MAX_LENGTH, is_label_value

__all__ = [
    "annotation_value",
    "annotations_of",
    "controller_owner_ref",
    "is_valid_job_uid_label",
    "job_name",
    "job_namespace",
    "job_uid",
    "label_value",
    "labels_of",
    "labels_to_copy",
    "max_exec_time_seconds",
    "parse_go_int",
    "prebuilt_workload_name",
    "provreq_annotations",
    "queue_name",
    "set_prebuilt_workload_name",
    "workload_priority_class_name",
]

_GO_DECIMAL_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)


def _metadata(job: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata = job.get("metadata")
    return metadata if type(metadata) is dict or isinstance(metadata, Mapping) else {}


def _string_map(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping):
        return {}
    return {key: item for key, item in value.items() if isinstance(key, str) and isinstance(item, str)}


def _string_field(job: Mapping[str, Any], key: str) -> str:
    value = _metadata(job).get(key)
    return value if isinstance(value, str) else ""


def _metadata_string(job: Mapping[str, Any], section: str, key: str) -> str | None:
    """One string entry of ``metadata.<section>`` without copying the map (hot path: admission)."""
    metadata = job.get("metadata")  # ``_metadata(job)`` inline: this runs ~6 times a pass
    if type(metadata) is not dict and (metadata is None or not isinstance(metadata, Mapping)):
        return None  # ``is None`` first: an ABC isinstance is a Python-level call
    entries = metadata.get(section)
    if type(entries) is not dict and (entries is None or not isinstance(entries, Mapping)):
        return None
    value = entries.get(key)
    return value if isinstance(value, str) else None


def labels_of(job: Mapping[str, Any]) -> dict[str, str]:
    """A copy of ``metadata.labels`` (only string values; empty when absent or malformed)."""
    return _string_map(_metadata(job).get("labels"))


def annotations_of(job: Mapping[str, Any]) -> dict[str, str]:
    """A copy of ``metadata.annotations`` (only string values; empty when absent or malformed)."""
    return _string_map(_metadata(job).get("annotations"))


def label_value(job: Mapping[str, Any], key: str) -> str | None:
    """``labels_of(job).get(key)`` without copying the map: the label's value, ``None`` when it is
    absent or not a string."""
    return _metadata_string(job, "labels", key)


def annotation_value(job: Mapping[str, Any], key: str) -> str | None:
    """``annotations_of(job).get(key)`` without copying the map."""
    return _metadata_string(job, "annotations", key)


def job_name(job: Mapping[str, Any]) -> str:
    return _string_field(job, "name")


def job_namespace(job: Mapping[str, Any]) -> str:
    return _string_field(job, "namespace")


def job_uid(job: Mapping[str, Any]) -> str:
    return _string_field(job, "uid")


def queue_name(job: Mapping[str, Any]) -> str:
    """``QueueNameForObject``: the ``kueue.x-k8s.io/queue-name`` label, or ``""``."""
    return _metadata_string(job, "labels", QUEUE_LABEL) or ""


def workload_priority_class_name(job: Mapping[str, Any]) -> str:
    """``WorkloadPriorityClassName``: the ``kueue.x-k8s.io/priority-class`` label, or ``""``."""
    return _metadata_string(job, "labels", WORKLOAD_PRIORITY_CLASS_LABEL) or ""


def prebuilt_workload_name(job: Mapping[str, Any], *, workload_identifier_annotations: bool = True) -> str:
    """``PrebuiltWorkloadNameFor``: the prebuilt Workload's name, or ``""`` when there is none."""
    annotation = _metadata_string(job, "annotations", PREBUILT_WORKLOAD_ANNOTATION) or ""
    label = _metadata_string(job, "labels", PREBUILT_WORKLOAD_LABEL) or ""
    if workload_identifier_annotations:
        return annotation or label
    if label:
        return label
    return annotation if len(annotation) > LABEL_VALUE_MAX_LENGTH else ""


def set_prebuilt_workload_name(
    job: dict[str, Any], workload_name: str, *, workload_identifier_annotations: bool = True
) -> None:
    """``SetPrebuiltWorkloadName``: write the name as an annotation (gate on, or too long) or a label."""
    use_annotation = workload_identifier_annotations or len(workload_name) > LABEL_VALUE_MAX_LENGTH
    metadata = job.setdefault("metadata", {})
    section = "annotations" if use_annotation else "labels"
    target = metadata.get(section)
    if not isinstance(target, dict):
        target = {}
        metadata[section] = target
    target[PREBUILT_WORKLOAD_LABEL] = workload_name


def parse_go_int(value: str, *, bits: int = 64) -> int | None:
    """``strconv.ParseInt(value, 10, bits)``: an optional sign and ASCII digits only, within range.

    Stricter than Python's ``int()``, which also accepts spaces, underscores and non-ASCII digits.
    Returns ``None`` when Go would return an error.
    """
    if _GO_DECIMAL_INT.fullmatch(value) is None:
        return None
    number = int(value)
    limit = 2 ** (bits - 1)
    return number if -limit <= number < limit else None


def max_exec_time_seconds(job: Mapping[str, Any]) -> int | None:
    """``MaximumExecutionTimeSecondsForObject``: the label as a positive int32, else ``None``."""
    raw = _metadata_string(job, "labels", MAX_EXEC_TIME_SECONDS_LABEL)
    if raw is None:
        return None
    value = parse_go_int(raw, bits=32)
    if value is None or value <= 0:
        return None
    return value


def is_valid_job_uid_label(uid: str) -> bool:
    """Whether ``uid`` may be stored in the Workload's ``kueue.x-k8s.io/job-uid`` label."""
    return not is_label_value(uid)


def controller_owner_ref(job: Mapping[str, Any]) -> dict[str, Any] | None:
    """The ``ownerReferences`` entry with ``controller: true`` (a copy), or ``None``."""
    references = _metadata(job).get("ownerReferences")
    if not isinstance(references, list):
        return None
    for reference in references:
        if isinstance(reference, Mapping) and reference.get("controller") is True:
            return dict(reference)
    return None


def provreq_annotations(job: Mapping[str, Any]) -> dict[str, str]:
    """``FilterProvReqAnnotations``: the ``provreq.kueue.x-k8s.io/`` annotations, copied to the Workload."""
    return {
        key: value for key, value in annotations_of(job).items() if key.startswith(PROVREQ_ANNOTATION_PREFIX)
    }


def labels_to_copy(job: Mapping[str, Any], keys: Iterable[str]) -> dict[str, str]:
    """The job labels named in ``integrations.labelKeysToCopy`` that the job actually has."""
    labels = labels_of(job)
    return {key: labels[key] for key in keys if key in labels}
