from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

import httpx
import pytest

from shared.kube import ClientSettings, FakeClock, HttpxTransport, KubeClient
from shared.kube.clock import settle
from shared.kube.leaderelection import LeaderElectionSettings, LeaderElector
from shared.kube.times import format_micro_time
from tests.unit.kube.fakeapi import FakeApi, lease_info

LEASE_KEY = ("leases.coordination.k8s.io", "kube-system", "bridge")


class SwitchableTransport(httpx.AsyncBaseTransport):
    """Forwards to the fake API until ``broken``; then every request fails to connect."""

    def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
        self.inner = inner
        self.broken = False

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if self.broken:
            raise httpx.ConnectError("network partition", request=request)
        return await self.inner.handle_async_request(request)


@dataclass
class Candidate:
    identity: str
    elector: LeaderElector
    transport: SwitchableTransport
    client: KubeClient
    started_at: list[float] = field(default_factory=list)
    stopped_at: list[float] = field(default_factory=list)
    task: asyncio.Task[None] | None = None


MakeCandidate = Callable[[str, int], Candidate]


@pytest.fixture
def api() -> FakeApi:
    return FakeApi([lease_info()])


@pytest.fixture
async def make_candidate(api: FakeApi, clock: FakeClock) -> AsyncIterator[MakeCandidate]:
    made: list[Candidate] = []

    def make(identity: str, seed: int) -> Candidate:
        transport = SwitchableTransport(api.transport())
        client = KubeClient(
            server="https://fake.invalid",
            transport=HttpxTransport(transport),
            settings=ClientSettings(qps=0, burst=1),
            clock=clock,
        )
        settings = LeaderElectionSettings(
            lease_name="bridge", lease_namespace="kube-system", identity=identity
        )
        elector = LeaderElector(client, settings, clock=clock, rng=random.Random(seed))
        candidate = Candidate(identity, elector, transport, client)

        async def lead() -> None:
            candidate.started_at.append(clock.now())
            await asyncio.Event().wait()  # the controllers: run until cancelled

        candidate.task = asyncio.create_task(
            elector.run(
                on_started_leading=lead, on_stopped_leading=lambda: candidate.stopped_at.append(clock.now())
            )
        )
        made.append(candidate)
        return candidate

    yield make
    for candidate in made:
        assert candidate.task is not None
        candidate.task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await candidate.task
        await candidate.client.aclose()


async def test_first_candidate_creates_the_lease_and_the_second_waits(
    api: FakeApi, clock: FakeClock, make_candidate: MakeCandidate
) -> None:
    a = make_candidate("a", 1)
    await settle()
    b = make_candidate("b", 2)
    await clock.advance_in_steps(30, step=0.5)
    assert a.elector.is_leader and a.started_at
    assert not b.elector.is_leader and not b.started_at
    assert b.elector.observed_holder == "a"
    spec = api.objects[LEASE_KEY]["spec"]
    assert spec["holderIdentity"] == "a"
    assert spec["leaseDurationSeconds"] == 15
    assert spec["leaseTransitions"] == 0
    assert spec["renewTime"] > spec["acquireTime"]


async def test_leader_whose_renewals_fail_stops_before_expiry_and_another_takes_over(
    api: FakeApi, clock: FakeClock, make_candidate: MakeCandidate
) -> None:
    a = make_candidate("a", 1)
    await settle()
    b = make_candidate("b", 2)
    await clock.advance_in_steps(10, step=0.25)
    assert a.elector.is_leader
    a.transport.broken = True
    broken_at = clock.now()
    last_renew = a.elector._last_renew
    await clock.advance_in_steps(30, step=0.25)

    assert a.stopped_at, "the leader never stopped its work"
    stopped = a.stopped_at[0]
    assert stopped - last_renew <= 10.0 + 0.25  # renew deadline (plus one fake-clock step)
    assert stopped < last_renew + 15.0  # before anyone may consider the lease expired
    assert a.task is not None and a.task.done()  # run() returned: leadership ended
    assert b.started_at, "the second candidate never took over"
    took_over = b.started_at[0]
    assert took_over > stopped  # never two leaders
    assert took_over - stopped < 15.0  # within one lease duration
    assert took_over - broken_at < 2 * 15.0
    spec = api.objects[LEASE_KEY]["spec"]
    assert spec["holderIdentity"] == "b"
    assert spec["leaseTransitions"] == 1


async def test_graceful_shutdown_releases_the_lease_for_a_fast_handover(
    api: FakeApi, clock: FakeClock, make_candidate: MakeCandidate
) -> None:
    a = make_candidate("a", 1)
    await settle()
    b = make_candidate("b", 2)
    await clock.advance_in_steps(6, step=0.25)
    assert a.task is not None
    a.task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await a.task
    assert a.stopped_at
    spec = api.objects[LEASE_KEY]["spec"]
    assert spec["holderIdentity"] == ""
    assert spec["leaseDurationSeconds"] == 1
    released_at = clock.now()
    await clock.advance_in_steps(6, step=0.25)
    assert b.started_at and b.started_at[0] - released_at <= 2 * (1 + 1.2) + 0.25
    assert api.objects[LEASE_KEY]["spec"]["leaseTransitions"] == 1


async def test_release_survives_a_renewal_it_never_heard_back_from(
    api: FakeApi, clock: FakeClock, make_candidate: MakeCandidate
) -> None:
    """A renewal cancelled in flight can be stored with a resourceVersion the leader never saw:
    the release's update conflicts, and the lease is read again and still released."""
    a = make_candidate("a", 1)
    await clock.advance_in_steps(3, step=0.25)
    assert a.elector.is_leader
    stored = api.objects[LEASE_KEY]
    stored["metadata"]["resourceVersion"] = str(int(stored["metadata"]["resourceVersion"]) + 100)
    assert a.task is not None
    a.task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await a.task
    spec = api.objects[LEASE_KEY]["spec"]
    assert (spec["holderIdentity"], spec["leaseDurationSeconds"]) == ("", 1)


async def test_takes_over_an_expired_lease_left_by_a_dead_holder(
    api: FakeApi, clock: FakeClock, make_candidate: MakeCandidate
) -> None:
    api.put_object(
        "leases.coordination.k8s.io",
        {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": "bridge", "namespace": "kube-system"},
            "spec": {
                "holderIdentity": "dead",
                "leaseDurationSeconds": 15,
                "leaseTransitions": 4,
                "renewTime": "2024-01-01T00:00:00.000000Z",
                "acquireTime": "2024-01-01T00:00:00.000000Z",
            },
        },
    )
    a = make_candidate("a", 1)
    await clock.advance_in_steps(14, step=0.5)
    assert not a.started_at  # it only just saw the record: not expired yet by our clock
    await clock.advance_in_steps(6, step=0.5)
    assert a.started_at
    spec = api.objects[LEASE_KEY]["spec"]
    assert spec["holderIdentity"] == "a"
    assert spec["leaseTransitions"] == 5


def test_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="lease_duration must be greater"):
        LeaderElectionSettings(
            lease_name="l", lease_namespace="n", identity="i", lease_duration=5, renew_deadline=10
        )
    with pytest.raises(ValueError, match="renew_deadline must be greater"):
        LeaderElectionSettings(
            lease_name="l", lease_namespace="n", identity="i", renew_deadline=2, retry_period=2
        )


@pytest.mark.parametrize(
    "moment",
    [
        datetime(2026, 11, 24, 2, 5, 9, 7, tzinfo=UTC),
        datetime(2026, 1, 2, 23, 59, 59, 999999, tzinfo=UTC),
        datetime(2026, 12, 31, 0, 0, 0, 0, tzinfo=UTC),
        datetime(987, 6, 5, 4, 3, 2, 100000, tzinfo=UTC),
    ],
)
def test_micro_time_is_rfc3339_with_microseconds(moment: datetime) -> None:
    assert format_micro_time(moment) == moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ").rjust(27, "0")
