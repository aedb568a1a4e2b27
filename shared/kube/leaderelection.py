"""Leader election on a ``coordination.k8s.io/v1`` Lease, with client-go's semantics.

Several replicas of a controller run; exactly one must act. They compete for a Lease object:

* **Acquire**: every ``retry_period`` (jittered by up to ``jitter_factor``) a candidate reads the
  Lease; if it does not exist it creates it naming itself; if its holder is empty or has not renewed
  for the record's ``leaseDurationSeconds`` -- measured on *our* monotonic clock since *we* last saw
  the record change, so clock skew between machines does not matter -- it takes the Lease over
  (``acquireTime`` = now, ``leaseTransitions`` + 1). Writes use the Lease's resourceVersion, so two
  candidates can never both win: the loser gets a ``Conflict``.
* **Renew**: the leader updates ``renewTime`` every ``retry_period``. If no renewal has succeeded
  for ``renew_deadline`` seconds, the leader **stops leading at once**: its leading task (the task
  group running the controllers) is cancelled and awaited, then ``on_stopped_leading`` fires. Since
  ``renew_deadline < lease_duration``, this happens before any other candidate can consider the
  lease expired, so two leaders never act at the same time.
* **Release**: when ``run()`` is cancelled (graceful shutdown) the leader first stops its work and
  then, with ``release_on_cancel``, writes the Lease with an empty ``holderIdentity`` and
  ``leaseDurationSeconds: 1`` (client-go's ReleaseOnCancel) so a successor takes over at its next
  retry instead of waiting a whole lease duration.

Defaults 15 s / 10 s / 2 s are component-base's; the component passes its configured values in.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from shared.kube.client import KubeClient
from shared.kube.clock import Clock
from shared.kube.errors import Conflict, KubeError, NotFound
from shared.kube.gvk import GroupVersionKind
from shared.kube.observability import KubeMetrics
from shared.kube.times import format_micro_time

__all__ = ["LEASE", "LeaderElectionSettings", "LeaderElector"]

logger = logging.getLogger(__name__)

LEASE = GroupVersionKind("coordination.k8s.io", "v1", "Lease")


def _number(value: Any, *, default: float) -> float:
    """A numeric Lease field; a missing or malformed one (hand-edited Lease) reads as ``default``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        return default
    return float(value)


@dataclass(frozen=True)
class LeaderElectionSettings:
    lease_name: str
    lease_namespace: str
    identity: str
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    jitter_factor: float = 1.2
    release_on_cancel: bool = True

    def __post_init__(self) -> None:
        if not self.identity:
            raise ValueError("leader election: identity must not be empty")
        if self.lease_duration <= self.renew_deadline:
            raise ValueError("leader election: lease_duration must be greater than renew_deadline")
        if self.renew_deadline <= self.jitter_factor * self.retry_period:
            raise ValueError(
                "leader election: renew_deadline must be greater than jitter_factor * retry_period"
            )
        if self.retry_period <= 0:
            raise ValueError("leader election: retry_period must be positive")


class LeaderElector:
    """``await elector.run(on_started_leading=...)``; returns when leadership is lost."""

    def __init__(
        self,
        client: KubeClient,
        settings: LeaderElectionSettings,
        *,
        clock: Clock | None = None,
        metrics: KubeMetrics | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.client = client
        self.settings = settings
        self.clock: Clock = clock or client.clock
        self.metrics = metrics
        self._rng = rng or random.Random()
        self.is_leader = False
        self.observed_holder = ""
        self._observed_spec: dict[str, Any] | None = None
        self._observed_at = 0.0
        self._last_renew = 0.0
        self._lease: dict[str, Any] | None = None
        self._on_new_leader: Callable[[str], None] | None = None

    # --- one attempt -----------------------------------------------------------------------------

    def _observe(self, spec: dict[str, Any]) -> None:
        if spec != self._observed_spec:
            self._observed_spec = dict(spec)
            self._observed_at = self.clock.now()
            holder = str(spec.get("holderIdentity") or "")
            if holder != self.observed_holder:
                self.observed_holder = holder
                if holder and self._on_new_leader is not None:
                    try:
                        self._on_new_leader(holder)
                    except Exception:
                        logger.exception("on_new_leader callback failed")

    async def try_acquire_or_renew(self) -> bool:
        """One acquire/renew attempt; ``True`` if we hold the lease afterwards."""
        s = self.settings
        now = format_micro_time(self.clock.wall())
        try:
            lease = await self.client.get(LEASE, s.lease_name, namespace=s.lease_namespace)
        except NotFound:
            first_spec: dict[str, Any] = {
                "holderIdentity": s.identity,
                "leaseDurationSeconds": int(s.lease_duration),
                "acquireTime": now,
                "renewTime": now,
                "leaseTransitions": 0,
            }
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": s.lease_name, "namespace": s.lease_namespace},
                "spec": first_spec,
            }
            try:
                self._lease = await self.client.create(LEASE, body)
            except KubeError as exc:
                logger.info("lease create failed", extra={"lease": s.lease_name, "error": str(exc)})
                return False
            self._observe(first_spec)
            return True
        except KubeError as exc:
            logger.warning("lease read failed", extra={"lease": s.lease_name, "error": str(exc)})
            return False

        raw_spec = lease.get("spec")
        spec: dict[str, Any] = dict(raw_spec) if isinstance(raw_spec, dict) else {}
        self._observe(spec)
        holder = str(spec.get("holderIdentity") or "")
        duration = _number(spec.get("leaseDurationSeconds"), default=s.lease_duration)
        if holder and holder != s.identity and self._observed_at + duration > self.clock.now():
            return False  # someone else holds a valid lease
        new_spec = dict(spec)
        new_spec["holderIdentity"] = s.identity
        new_spec["leaseDurationSeconds"] = int(s.lease_duration)
        new_spec["renewTime"] = now
        if holder != s.identity:
            new_spec["acquireTime"] = now
            new_spec["leaseTransitions"] = int(_number(spec.get("leaseTransitions"), default=0)) + 1
        try:
            self._lease = await self.client.update(LEASE, {**lease, "spec": new_spec})
        except Conflict:
            return False
        except KubeError as exc:
            logger.warning("lease update failed", extra={"lease": s.lease_name, "error": str(exc)})
            return False
        self._observe(new_spec)
        return True

    async def release(self) -> bool:
        """Give the lease up (empty holder, 1 s duration) if we hold it.

        A renewal cancelled in flight may have been stored without our knowing its resourceVersion:
        on a 409 Conflict the Lease is read again and, if still ours, released from what was read.
        """
        s = self.settings
        lease = self._lease
        if lease is None:
            return False
        for _ in range(2):
            now = format_micro_time(self.clock.wall())
            spec = dict(lease.get("spec") or {})
            if spec.get("holderIdentity") != s.identity:
                return False
            spec.update(
                {"holderIdentity": "", "leaseDurationSeconds": 1, "renewTime": now, "acquireTime": now}
            )
            try:
                self._lease = await self.clock.wait_for(
                    self.client.update(LEASE, {**lease, "spec": spec}), s.renew_deadline
                )
            except Conflict:
                try:
                    lease = await self.clock.wait_for(
                        self.client.get(LEASE, s.lease_name, namespace=s.lease_namespace), s.renew_deadline
                    )
                except (KubeError, TimeoutError) as exc:
                    logger.warning("lease release failed", extra={"lease": s.lease_name, "error": str(exc)})
                    return False
                continue
            except (KubeError, TimeoutError) as exc:
                logger.warning("lease release failed", extra={"lease": s.lease_name, "error": str(exc)})
                return False
            self._observe(spec)
            return True
        logger.warning("lease release failed", extra={"lease": s.lease_name, "error": "conflict"})
        return False

    # --- loops -----------------------------------------------------------------------------------

    async def _attempt_within(self, seconds: float) -> bool:
        try:
            return await self.clock.wait_for(self.try_acquire_or_renew(), max(seconds, 0.0))
        except TimeoutError:
            return False

    async def _acquire(self) -> None:
        s = self.settings
        while True:
            if await self._attempt_within(s.renew_deadline):
                self._last_renew = self.clock.now()
                return
            await self.clock.sleep(s.retry_period * (1 + self._rng.random() * s.jitter_factor))

    async def _renew_until_lost(self) -> None:
        s = self.settings
        while True:
            await self.clock.sleep(s.retry_period)
            while True:
                remaining = self._last_renew + s.renew_deadline - self.clock.now()
                if remaining <= 0:
                    logger.error(
                        "failed to renew the lease within the renew deadline; stopping",
                        extra={"lease": s.lease_name, "identity": s.identity},
                    )
                    return
                if await self._attempt_within(remaining):
                    self._last_renew = self.clock.now()
                    break
                remaining = self._last_renew + s.renew_deadline - self.clock.now()
                if remaining > 0:
                    await self.clock.sleep(min(s.retry_period, remaining))

    def _set_leader(self, value: bool) -> None:
        self.is_leader = value
        if self.metrics is not None:
            self.metrics.leader.labels(self.settings.lease_name).set(1 if value else 0)

    async def run(
        self,
        *,
        on_started_leading: Callable[[], Awaitable[None]],
        on_stopped_leading: Callable[[], None] | None = None,
        on_new_leader: Callable[[str], None] | None = None,
    ) -> None:
        """Campaign, lead, and return when leadership ends (lost, or the leading work finished).

        Cancelling ``run()`` stops the leading work, releases the lease and re-raises.
        """
        self._on_new_leader = on_new_leader
        await self._acquire()
        self._set_leader(True)
        logger.info(
            "became leader", extra={"lease": self.settings.lease_name, "identity": self.settings.identity}
        )
        leading = asyncio.ensure_future(on_started_leading())
        renewing = asyncio.ensure_future(self._renew_until_lost())
        release = False
        try:
            await asyncio.wait({leading, renewing}, return_when=asyncio.FIRST_COMPLETED)
            release = leading.done()  # our work ended on its own: hand the lease over
        except asyncio.CancelledError:
            release = self.settings.release_on_cancel
            raise
        finally:
            renewing.cancel()
            leading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewing
            outcome: BaseException | None = None
            try:
                await leading
            except asyncio.CancelledError:
                pass
            except Exception as exc:
                outcome = exc
            self._set_leader(False)
            if on_stopped_leading is not None:
                try:
                    on_stopped_leading()
                except Exception:
                    logger.exception("on_stopped_leading callback failed")
            if release:
                await self.release()
            if outcome is not None:
                logger.error(
                    "leading work failed", exc_info=outcome, extra={"lease": self.settings.lease_name}
                )
