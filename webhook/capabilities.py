"""Which optional adapter protocols a job implements, decided once per adapter class.

``isinstance(job, SomeProtocol)`` on a ``runtime_checkable`` Protocol walks the protocol's members on
every call (``typing._get_protocol_attrs``): profiled at ~12 % of an UPDATE validation. The answer
depends only on the adapter's class - adapters express optional capabilities through their class
(the declarative adapter has one subclass per capability mix), never per instance - so it is cached
per class. The cache is bounded by the number of adapter classes.
"""

from __future__ import annotations

from typing import TypeGuard

from shared.frameworks.base import JobWithManagedBy, JobWithValidation

__all__ = ["has_managed_by", "has_validation"]

_MANAGED_BY: dict[type, bool] = {}
_VALIDATION: dict[type, bool] = {}


def has_managed_by(job: object) -> TypeGuard[JobWithManagedBy]:
    cls = type(job)
    answer = _MANAGED_BY.get(cls)
    if answer is None:
        answer = _MANAGED_BY[cls] = isinstance(job, JobWithManagedBy)
    return answer


def has_validation(job: object) -> TypeGuard[JobWithValidation]:
    cls = type(job)
    answer = _VALIDATION.get(cls)
    if answer is None:
        answer = _VALIDATION[cls] = isinstance(job, JobWithValidation)
    return answer
