"""AppWrapper's API vocabulary (``api/v1beta2/appwrapper_types.go``), spelled exactly as the operator.

Phases, condition types, the finalizer, the label stamped on every created object and pod template,
and the fault-tolerance annotations. These strings are user-visible (``kubectl get aw`` shows the
phase and conditions; users set the annotations), so they must never drift from AppWrapper's:
tests compare them with the operator's source text.

Invariant: a phase is one of :class:`Phase`; ``""`` (``Empty``) is the phase of a new object.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Final

__all__ = [
    "ADMISSION_GRACE_PERIOD_ANNOTATION",
    "APPWRAPPER_LABEL",
    "DELETING_RESOURCES",
    "DELETION_ON_FAILURE_GRACE_PERIOD_ANNOTATION",
    "FAILURE_GRACE_PERIOD_ANNOTATION",
    "FINALIZER",
    "FORCEFUL_DELETION_GRACE_PERIOD_ANNOTATION",
    "PODS_READY",
    "QUOTA_RESERVED",
    "RESOURCES_DEPLOYED",
    "RETRYABLE_EXIT_CODES_ANNOTATION",
    "RETRY_LIMIT_ANNOTATION",
    "RETRY_PAUSE_PERIOD_ANNOTATION",
    "SUCCESS_TTL_ANNOTATION",
    "TERMINAL_EXIT_CODES_ANNOTATION",
    "UNHEALTHY",
    "WARMUP_GRACE_PERIOD_ANNOTATION",
    "Phase",
]


class Phase(StrEnum):
    """``AppWrapperPhase``."""

    EMPTY = ""
    SUSPENDED = "Suspended"
    RESUMING = "Resuming"
    RUNNING = "Running"
    RESETTING = "Resetting"
    SUSPENDING = "Suspending"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    TERMINATING = "Terminating"


# AppWrapperCondition types
QUOTA_RESERVED: Final = "QuotaReserved"
RESOURCES_DEPLOYED: Final = "ResourcesDeployed"
PODS_READY: Final = "PodsReady"
UNHEALTHY: Final = "Unhealthy"
DELETING_RESOURCES: Final = "DeletingResources"

FINALIZER: Final = "workload.codeflare.dev/finalizer"
APPWRAPPER_LABEL: Final = "workload.codeflare.dev/appwrapper"

_PREFIX: Final = "workload.codeflare.dev.appwrapper/"
ADMISSION_GRACE_PERIOD_ANNOTATION: Final = _PREFIX + "admissionGracePeriodDuration"
WARMUP_GRACE_PERIOD_ANNOTATION: Final = _PREFIX + "warmupGracePeriodDuration"
FAILURE_GRACE_PERIOD_ANNOTATION: Final = _PREFIX + "failureGracePeriodDuration"
RETRY_PAUSE_PERIOD_ANNOTATION: Final = _PREFIX + "retryPausePeriodDuration"
RETRY_LIMIT_ANNOTATION: Final = _PREFIX + "retryLimit"
FORCEFUL_DELETION_GRACE_PERIOD_ANNOTATION: Final = _PREFIX + "forcefulDeletionGracePeriodDuration"
DELETION_ON_FAILURE_GRACE_PERIOD_ANNOTATION: Final = _PREFIX + "deletionOnFailureGracePeriodDuration"
SUCCESS_TTL_ANNOTATION: Final = _PREFIX + "successTTLDuration"
TERMINAL_EXIT_CODES_ANNOTATION: Final = _PREFIX + "terminalExitCodes"
RETRYABLE_EXIT_CODES_ANNOTATION: Final = _PREFIX + "retryableExitCodes"
