"""Kueue's job validation (``jobframework/validation.go``) plus the adapters' own rules.

Create (``ValidateJobOnCreate``), with Kueue's field paths and messages:

* queue-name label must be a DNS-1123 subdomain;
* prebuilt workload name (annotation when set - ``WorkloadIdentifierAnnotations`` is on - else the
  label) must be a DNS-1123 subdomain, and is only supported for Kueue's allow-listed kinds;
* ``kueue.x-k8s.io/max-exec-time-seconds`` must parse with ``strconv.Atoi`` and be > 0;
* the elastic-job annotation only on kinds that support it;
* the ``kueue.x-k8s.io/admission-gated-by`` format (``webhook.rules.admission_gates``).

Update (``ValidateJobOnUpdate``):

* queue-name immutable while the new job is not suspended; not removable where a ``default``
  LocalQueue exists;
* prebuilt workload: re-checked as on create when the new job is suspended (or the old one was
  elastic), else immutable;
* max-exec-time immutable unless both old and new are suspended;
* WorkloadPriorityClass label cannot be added to a running job, nor ever removed;
* elastic-job enablement cannot flip;
* ``kueue.x-k8s.io/admission-gated-by``: no gate added after creation, gates only removed
  (``webhook.rules.admission_gates``, which also holds the format rule run on create);
* ``spec.managedBy`` immutable (the message Kubernetes' own validation uses for batch Jobs).

Then the adapter's ``JobWithValidation`` rules (e.g. batch Job partial admission). batch/v1 Job's
webhook also re-runs the create checks on update (``Framework.revalidate_create_on_update``), in
``JobWebhook.validateUpdate``'s order: generic create rules, the Job's own create rules, generic
update rules, the Job's own update rules. The order is visible: ``ToAggregate`` joins several errors
as ``[e1, e2]`` in list order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from shared.constants import (
    ELASTIC_JOB_ANNOTATION,
    MAX_EXEC_TIME_SECONDS_LABEL,
    PREBUILT_WORKLOAD_ANNOTATION,
    PREBUILT_WORKLOAD_LABEL,
    QUEUE_LABEL,
    WORKLOAD_PRIORITY_CLASS_LABEL,
)
from shared.frameworks.base import FORBIDDEN, INVALID, FieldError, GenericJob
from shared.frameworks.batch_job import BatchJobAdapter
from shared.frameworks.capabilities import has_managed_by, has_validation
from shared.frameworks.strconv import GoParseError, atoi, quote
from shared.kueue.jobmeta import (
    annotation_value,
    job_namespace,
    label_value,
    prebuilt_workload_name,
    queue_name,
)
from shared.validation_k8s import is_dns1123_subdomain
from webhook.rules.admission_gates import (
    validate_admission_gated_by_on_create,
    validate_admission_gated_by_on_update,
)
from webhook.rules.fielderrors import IMMUTABLE
from webhook.rules.lookups import Lookups
from webhook.rules.settings import Framework

__all__ = ["validate_create", "validate_update"]

QUEUE_NAME_PATH: Final = f"metadata.labels[{QUEUE_LABEL}]"
MAX_EXEC_TIME_PATH: Final = f"metadata.labels[{MAX_EXEC_TIME_SECONDS_LABEL}]"
PRIORITY_CLASS_PATH: Final = f"metadata.labels[{WORKLOAD_PRIORITY_CLASS_LABEL}]"
PREBUILT_LABEL_PATH: Final = f"metadata.labels[{PREBUILT_WORKLOAD_LABEL}]"
PREBUILT_ANNOTATION_PATH: Final = f"metadata.annotations[{PREBUILT_WORKLOAD_ANNOTATION}]"
ELASTIC_PATH: Final = f"metadata.annotations[{ELASTIC_JOB_ANNOTATION}]"
MANAGED_BY_PATH: Final = "spec.managedBy"


def _immutable(path: str, new: Any, old: Any) -> list[FieldError]:
    """``apivalidation.ValidateImmutableField``."""
    return [] if new == old else [FieldError(path, INVALID, IMMUTABLE, new)]


def _subdomain(path: str, value: str) -> list[FieldError]:
    errors = is_dns1123_subdomain(value)
    return [FieldError(path, INVALID, ",".join(errors), value)] if errors else []


def _prebuilt_uses_annotation(obj: Mapping[str, Any]) -> bool:
    return bool(annotation_value(obj, PREBUILT_WORKLOAD_ANNOTATION))


def _prebuilt_path(obj: Mapping[str, Any]) -> str:
    return PREBUILT_ANNOTATION_PATH if _prebuilt_uses_annotation(obj) else PREBUILT_LABEL_PATH


def _elastic(obj: Mapping[str, Any], framework: Framework) -> bool:
    """``workloadslicing.Enabled``: false for every job while the feature gate is off."""
    return framework.is_elastic(obj)


def _validate_prebuilt_create(obj: Mapping[str, Any], framework: Framework) -> list[FieldError]:
    errors: list[FieldError] = []
    annotation = annotation_value(obj, PREBUILT_WORKLOAD_ANNOTATION)
    label = label_value(obj, PREBUILT_WORKLOAD_LABEL)
    if annotation:
        errors += _subdomain(PREBUILT_ANNOTATION_PATH, annotation)
    elif label is not None:
        errors += _subdomain(PREBUILT_LABEL_PATH, label)
    if prebuilt_workload_name(obj) and not framework.supports_prebuilt_workload:
        errors.append(
            FieldError(_prebuilt_path(obj), FORBIDDEN, f"Is not supported for {quote(str(framework.gvk))}")
        )
    return errors


def _validate_generic_create(obj: Mapping[str, Any], framework: Framework) -> list[FieldError]:
    errors: list[FieldError] = []
    queue = label_value(obj, QUEUE_LABEL)
    if queue is not None:
        errors += _subdomain(QUEUE_NAME_PATH, queue)
    errors += _validate_prebuilt_create(obj, framework)
    raw = label_value(obj, MAX_EXEC_TIME_SECONDS_LABEL)
    if raw is not None:
        try:
            value = atoi(raw)
        except GoParseError as exc:
            errors.append(FieldError(MAX_EXEC_TIME_PATH, INVALID, str(exc), raw))
        else:
            if value <= 0:
                errors.append(FieldError(MAX_EXEC_TIME_PATH, INVALID, "should be greater than 0", value))
    if _elastic(obj, framework) and not framework.supports_elastic_jobs:
        errors.append(
            FieldError(
                ELASTIC_PATH, FORBIDDEN, f"elastic job is not supported for {quote(str(framework.gvk))}"
            )
        )
    errors += validate_admission_gated_by_on_create(obj)
    return errors


def validate_create(job: GenericJob, *, framework: Framework) -> list[FieldError]:
    """``ValidateCreate``: Kueue's generic rules, then the adapter's."""
    errors = _validate_generic_create(job.obj, framework)
    if has_validation(job):
        errors += job.validate_on_create()
    return errors


def _validate_priority_class_update(
    *, suspended: bool, old: Mapping[str, Any], new: Mapping[str, Any]
) -> list[FieldError]:
    old_name = label_value(old, WORKLOAD_PRIORITY_CLASS_LABEL) or ""
    new_name = label_value(new, WORKLOAD_PRIORITY_CLASS_LABEL) or ""
    if not suspended and not old_name and new_name:
        return [
            FieldError(
                PRIORITY_CLASS_PATH,
                INVALID,
                "WorkloadPriorityClass cannot be added to a non-suspended workload",
                new_name,
            )
        ]
    if not new_name and old_name:
        return [
            FieldError(
                PRIORITY_CLASS_PATH,
                INVALID,
                "WorkloadPriorityClass cannot be removed from a workload",
                new_name,
            )
        ]
    return []


def validate_update(
    old_job: GenericJob, new_job: GenericJob, *, framework: Framework, lookups: Lookups
) -> list[FieldError]:
    """``ValidateUpdate``: Kueue's generic update rules, managedBy immutability, then the adapter's."""
    old, new = old_job.obj, new_job.obj
    new_suspended = new_job.is_suspended()
    errors: list[FieldError] = []
    # batch/v1 Job (JobWebhook): its own create rules come before the generic update rules
    batch_job = new_job if isinstance(new_job, BatchJobAdapter) else None
    if framework.revalidate_create_on_update:
        errors += _validate_generic_create(new, framework)
    if batch_job is not None:
        errors += batch_job.validate_create_rules_on_update(old)

    # queue name
    if not new_suspended:
        errors += _immutable(QUEUE_NAME_PATH, queue_name(new), queue_name(old))
    if not queue_name(new) and queue_name(old) and lookups.local_queue_exists(job_namespace(old), "default"):
        errors.append(
            FieldError(
                QUEUE_NAME_PATH, INVALID, "queue-name must not be empty in namespace with default queue", ""
            )
        )

    # prebuilt workload
    if new_suspended or _elastic(old, framework):
        errors += _validate_prebuilt_create(new, framework)
    else:
        errors += _immutable(_prebuilt_path(new), prebuilt_workload_name(new), prebuilt_workload_name(old))

    # max execution time
    if not new_suspended or not old_job.is_suspended():
        errors += _immutable(
            MAX_EXEC_TIME_PATH,
            label_value(new, MAX_EXEC_TIME_SECONDS_LABEL) or "",
            label_value(old, MAX_EXEC_TIME_SECONDS_LABEL) or "",
        )

    errors += _validate_priority_class_update(suspended=new_suspended, old=old, new=new)

    if _elastic(old, framework) != _elastic(new, framework):
        errors.append(FieldError(ELASTIC_PATH, INVALID, IMMUTABLE, _elastic(new, framework)))

    errors += validate_admission_gated_by_on_update(old, new)

    if has_managed_by(new_job) and has_managed_by(old_job):
        errors += _immutable(MANAGED_BY_PATH, new_job.managed_by(), old_job.managed_by())

    if batch_job is not None:
        errors += batch_job.validate_update_rules(old)
    elif has_validation(new_job):
        errors += new_job.validate_on_update(old)
    return errors
