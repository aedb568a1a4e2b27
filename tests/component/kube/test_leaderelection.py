"""Leader election between two electors on the devcluster's Lease API (real clock, short durations).

One elector leads; it is cancelled either without releasing the Lease (a crash: the other must
wait for the lease to expire) or with release (the other takes over at its next retry). Leading
periods are recorded so the test can prove the two never lead at the same time.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

import pytest

from devcluster.server import ThreadedDevCluster
from shared.kube import LEASE, KubeClient, LeaderElectionSettings, LeaderElector
from tests.component.kube.conftest import eventually, make_client

LEASE_DURATION = 2.0
RETRY_PERIOD = 0.3
JITTER = 1.2
# a candidate notices expiry at its first retry after the lease expired; the rest is loaded-CI slack
TAKEOVER_DEADLINE = LEASE_DURATION + RETRY_PERIOD * (1 + JITTER) + 3.0


def settings(identity: str, namespace: str, *, release: bool) -> LeaderElectionSettings:
    return LeaderElectionSettings(
        lease_name="bridge-leader",
        lease_namespace=namespace,
        identity=identity,
        lease_duration=LEASE_DURATION,
        renew_deadline=1.5,
        retry_period=RETRY_PERIOD,
        jitter_factor=JITTER,
        release_on_cancel=release,
    )


class Timeline:
    def __init__(self) -> None:
        self.entries: list[tuple[str, str]] = []
        self.leading: set[str] = set()

    def work(self, identity: str) -> Callable[[], Awaitable[None]]:
        async def lead() -> None:
            assert not self.leading, f"{identity} leads while {self.leading} still does"
            self.leading.add(identity)
            self.entries.append(("start", identity))
            try:
                await asyncio.Event().wait()
            finally:
                self.leading.discard(identity)
                self.entries.append(("stop", identity))

        return lead


async def campaign(elector: LeaderElector, timeline: Timeline) -> None:
    await elector.run(on_started_leading=timeline.work(elector.settings.identity))


@pytest.mark.parametrize("release", [False, True], ids=["crash", "graceful"])
async def test_the_other_elector_takes_over(
    devcluster: ThreadedDevCluster, client: KubeClient, namespace: str, release: bool
) -> None:
    timeline = Timeline()
    async with make_client(devcluster) as other_client:
        first = LeaderElector(client, settings("first", namespace, release=release))
        second = LeaderElector(other_client, settings("second", namespace, release=release))
        first_task = asyncio.create_task(campaign(first, timeline))

        async def first_leads() -> bool:
            return first.is_leader

        await eventually(first_leads, what="the first elector to lead")
        second_task = asyncio.create_task(campaign(second, timeline))
        try:

            async def second_sees_first() -> bool:
                return second.observed_holder == "first"

            await eventually(second_sees_first, what="the second elector to observe the leader")
            assert not second.is_leader

            first_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await first_task
            lease = await client.get(LEASE, "bridge-leader", namespace=namespace)
            if release:
                assert lease["spec"]["holderIdentity"] in ("", "second")
            else:
                assert lease["spec"]["holderIdentity"] == "first"  # a crash leaves the lease held

            async def second_leads() -> bool:
                return second.is_leader

            await eventually(second_leads, what="the takeover", within_seconds=TAKEOVER_DEADLINE)
            lease = await client.get(LEASE, "bridge-leader", namespace=namespace)
            assert lease["spec"]["holderIdentity"] == "second"
            assert lease["spec"]["leaseTransitions"] == 1
            assert timeline.entries == [("start", "first"), ("stop", "first"), ("start", "second")]
        finally:
            second_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await second_task
