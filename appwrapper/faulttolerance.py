"""AppWrapper's fault-tolerance knobs: operator defaults, per-object annotations, their limits.

The defaults are the AppWrapper operator's (``pkg/config.NewAppWrapperConfig``) and every
AppWrapper may override them with an annotation (``workload.codeflare.dev.appwrapper/<knob>``),
read on every reconcile exactly as the operator reads them:

=============================  ==========  =============================================================
knob                           default     annotation rule
=============================  ==========  =============================================================
admission grace period         1m          Go duration, clipped to [0, gracePeriodMaximum]
warmup grace period            5m          Go duration, clipped
failure grace period           1m          Go duration, clipped
retry pause period             90s         Go duration, clipped
retry limit                    3           ``strconv.Atoi``, not clipped (a negative limit: no retry)
forceful deletion grace        10m         Go duration, clipped
deletion-on-failure grace      0s          Go duration, clipped; malformed -> 0 (not the default)
success TTL                    7 days      used only when 0 < value < the default (it may only shorten)
terminal / retryable codes     none        comma-separated ``strconv.Atoi`` values; bad items skipped
=============================  ==========  =============================================================

``gracePeriodMaximum`` (24h) is the ceiling for every clipped value. A malformed annotation is
logged and the default used; it never fails a reconcile. :func:`validate` is the operator's
start-up check of a configured set (``ValidateAppWrapperConfig``).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta

from appwrapper import model
from shared.durations import DurationError, format_go_duration, parse_go_duration
from shared.frameworks.strconv import GoParseError, atoi

__all__ = ["FaultTolerance", "Knobs", "validate"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class FaultTolerance:
    """``FaultToleranceConfig`` with the operator's defaults."""

    admission_grace_period: timedelta = timedelta(minutes=1)
    warmup_grace_period: timedelta = timedelta(minutes=5)
    failure_grace_period: timedelta = timedelta(minutes=1)
    retry_pause_period: timedelta = timedelta(seconds=90)
    retry_limit: int = 3
    forceful_deletion_grace_period: timedelta = timedelta(minutes=10)
    grace_period_maximum: timedelta = timedelta(hours=24)
    success_ttl: timedelta = timedelta(days=7)


def validate(config: FaultTolerance) -> list[str]:
    """``ValidateAppWrapperConfig``'s rules; the problems found (empty when valid)."""
    problems: list[str] = []
    ceiling = config.grace_period_maximum
    for name, value in (
        ("forcefulDeletionGracePeriod", config.forceful_deletion_grace_period),
        ("retryPausePeriod", config.retry_pause_period),
        ("failureGracePeriod", config.failure_grace_period),
        ("admissionGracePeriod", config.admission_grace_period),
        ("warmupGracePeriod", config.warmup_grace_period),
    ):
        if value > ceiling:
            problems.append(
                f"{name} {format_go_duration(value)} exceeds gracePeriodMaximum {format_go_duration(ceiling)}"
            )
    if config.admission_grace_period > config.warmup_grace_period:
        problems.append(
            f"admissionGracePeriod {format_go_duration(config.admission_grace_period)} exceeds "
            f"warmupGracePeriod {format_go_duration(config.warmup_grace_period)}"
        )
    if config.success_ttl <= timedelta(0):
        problems.append(f"successTTL {format_go_duration(config.success_ttl)} is not a positive duration")
    return problems


def _int32(value: int) -> int:
    """Go's ``int32(x)`` conversion of an ``int``: wraps around."""
    return (value + 2**31) % 2**32 - 2**31


def _codes(text: str | None) -> tuple[int, ...]:
    codes: list[int] = []
    for item in (text or "").split(","):
        try:
            codes.append(atoi(item))
        except GoParseError:
            continue
    return tuple(codes)


class Knobs:
    """The knobs of one AppWrapper: its annotations over the operator's configuration."""

    def __init__(self, annotations: Mapping[str, str], *, config: FaultTolerance, key: str = "") -> None:
        self._annotations = annotations
        self._config = config
        self._key = key

    def _limit(self, desired: timedelta) -> timedelta:
        if desired < timedelta(0):
            return timedelta(0)
        return min(desired, self._config.grace_period_maximum)

    def _duration(self, annotation: str) -> timedelta | None:
        """The annotation as a Go duration; ``None`` when absent or malformed (malformed is logged)."""
        text = self._annotations.get(annotation)
        if text is None:
            return None
        try:
            return parse_go_duration(text)
        except DurationError as exc:
            self._malformed(annotation, text, exc)
            return None

    def _malformed(self, annotation: str, text: str, exc: Exception) -> None:
        log.error(
            "malformed annotation; using the default",
            extra={"appwrapper": self._key, "annotation": annotation, "value": text, "error": str(exc)},
        )

    def _clipped(self, annotation: str, default: timedelta) -> timedelta:
        value = self._duration(annotation)
        return self._limit(default if value is None else value)

    @property
    def admission_grace(self) -> timedelta:
        return self._clipped(model.ADMISSION_GRACE_PERIOD_ANNOTATION, self._config.admission_grace_period)

    @property
    def warmup_grace(self) -> timedelta:
        return self._clipped(model.WARMUP_GRACE_PERIOD_ANNOTATION, self._config.warmup_grace_period)

    @property
    def failure_grace(self) -> timedelta:
        return self._clipped(model.FAILURE_GRACE_PERIOD_ANNOTATION, self._config.failure_grace_period)

    @property
    def retry_pause(self) -> timedelta:
        return self._clipped(model.RETRY_PAUSE_PERIOD_ANNOTATION, self._config.retry_pause_period)

    @property
    def forceful_deletion_grace(self) -> timedelta:
        return self._clipped(
            model.FORCEFUL_DELETION_GRACE_PERIOD_ANNOTATION, self._config.forceful_deletion_grace_period
        )

    @property
    def deletion_on_failure_grace(self) -> timedelta:
        return self._clipped(model.DELETION_ON_FAILURE_GRACE_PERIOD_ANNOTATION, timedelta(0))

    @property
    def success_ttl(self) -> timedelta:
        value = self._duration(model.SUCCESS_TTL_ANNOTATION)
        if value is not None and timedelta(0) < value < self._config.success_ttl:
            return value
        return self._config.success_ttl

    @property
    def retry_limit(self) -> int:
        text = self._annotations.get(model.RETRY_LIMIT_ANNOTATION)
        if text is not None:
            try:
                return _int32(atoi(text))
            except GoParseError as exc:
                self._malformed(model.RETRY_LIMIT_ANNOTATION, text, exc)
        return self._config.retry_limit

    @property
    def terminal_exit_codes(self) -> tuple[int, ...]:
        return _codes(self._annotations.get(model.TERMINAL_EXIT_CODES_ANNOTATION))

    @property
    def retryable_exit_codes(self) -> tuple[int, ...]:
        return _codes(self._annotations.get(model.RETRYABLE_EXIT_CODES_ANNOTATION))
