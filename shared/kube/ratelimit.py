"""Token buckets and per-key exponential backoff (client-go ``flowcontrol`` and ``workqueue``).

Two places need a token bucket: the client (``clientConnection.qps``/``burst``, so a controller that
is told to be gentle with the API server is) and the work queue (an overall retry rate on top of
per-key backoff). Both are this class.

Invariants:

* A bucket starts full (``burst`` tokens) and refills at ``qps`` tokens per second up to ``burst``.
* ``reserve()`` takes a token *now* and returns how long the caller must wait before using it, so
  concurrent waiters are served in arrival order and never all wake for the same token.
* ``qps <= 0`` means unlimited (client-go's ``-1`` convention for "no client-side limit").
* Time comes from the injected ``Clock``.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Generic, TypeVar

from shared.kube.clock import Clock

__all__ = ["ItemExponentialBackoff", "TokenBucket"]

K = TypeVar("K", bound=Hashable)


class TokenBucket:
    def __init__(self, *, qps: float, burst: int, clock: Clock) -> None:
        if qps > 0 and burst < 1:
            raise ValueError(f"burst must be >= 1 when qps > 0, got {burst}")
        self.qps = qps
        self.burst = burst
        self._clock = clock
        self._tokens = float(burst)
        self._last = clock.now()

    @property
    def unlimited(self) -> bool:
        return self.qps <= 0

    def _refill(self, now: float) -> None:
        elapsed = now - self._last
        if elapsed > 0:
            self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps)
            self._last = now

    def reserve(self) -> float:
        """Take one token; return the seconds to wait before it may be used (0 when available)."""
        if self.unlimited:
            return 0.0
        self._refill(self._clock.now())
        self._tokens -= 1.0
        if self._tokens >= 0:
            return 0.0
        return -self._tokens / self.qps

    async def acquire(self) -> float:
        """Wait for a token; return how long we waited."""
        delay = self.reserve()
        if delay > 0:
            await self._clock.sleep(delay)
        return delay


class ItemExponentialBackoff(Generic[K]):
    """Per-key exponential backoff: ``base * 2**failures`` capped at ``cap`` (client-go defaults)."""

    def __init__(self, *, base: float = 0.005, cap: float = 1000.0) -> None:
        self.base = base
        self.cap = cap
        self._failures: dict[K, int] = {}

    def when(self, key: K) -> float:
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        if failures > 64:  # avoid float overflow; long since at the cap
            return self.cap
        return min(self.cap, self.base * float(2**failures))

    def forget(self, key: K) -> None:
        self._failures.pop(key, None)

    def failures(self, key: K) -> int:
        return self._failures.get(key, 0)
