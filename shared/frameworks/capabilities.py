"""Which optional adapter protocols a job implements, decided once per adapter class.

``isinstance(job, SomeProtocol)`` on a ``runtime_checkable`` Protocol walks the protocol's members
on every call (``typing._get_protocol_attrs``, ~10 µs): profiled at ~12 % of a webhook UPDATE
validation, and paid by every reconcile pass for ``JobWithReclaimablePods``. The answer depends
only on the adapter's class - adapters express optional capabilities through their class (the
declarative adapter has one subclass per capability mix), never per instance - so it is cached
per (class, protocol). The cache is bounded by the number of adapter classes times the number of
protocols.
"""

from __future__ import annotations

from typing import Any, TypeGuard

from shared.frameworks.base import (
    JobWithCustomStop,
    JobWithManagedBy,
    JobWithPriorityClass,
    JobWithReclaimablePods,
    JobWithValidation,
)

__all__ = [
    "has_custom_stop",
    "has_managed_by",
    "has_priority_class",
    "has_reclaimable_pods",
    "has_validation",
]

_ANSWERS: dict[tuple[type, Any], bool] = {}


def _implements(job: object, protocol: Any) -> bool:
    key = (type(job), protocol)
    answer = _ANSWERS.get(key)
    if answer is None:
        answer = _ANSWERS[key] = isinstance(job, protocol)
    return answer


def has_custom_stop(job: object) -> TypeGuard[JobWithCustomStop]:
    return _implements(job, JobWithCustomStop)


def has_managed_by(job: object) -> TypeGuard[JobWithManagedBy]:
    return _implements(job, JobWithManagedBy)


def has_priority_class(job: object) -> TypeGuard[JobWithPriorityClass]:
    return _implements(job, JobWithPriorityClass)


def has_reclaimable_pods(job: object) -> TypeGuard[JobWithReclaimablePods]:
    return _implements(job, JobWithReclaimablePods)


def has_validation(job: object) -> TypeGuard[JobWithValidation]:
    return _implements(job, JobWithValidation)
