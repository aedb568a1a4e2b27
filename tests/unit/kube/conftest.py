"""Fixtures for the client-runtime tests: a fake API server, fake clocks, clients wired to them."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator

import pytest
from prometheus_client import CollectorRegistry

from shared.kube import ClientSettings, FakeClock, HttpxTransport, KubeClient, KubeMetrics, StaticTokenSource
from shared.kube.auth import BearerTokenAuth
from tests.unit.kube.fakeapi import FakeApi


class InstantClock(FakeClock):
    """A fake clock whose sleeps return at once, moving time forward and recording the delays."""

    def __init__(self) -> None:
        super().__init__()
        self.slept: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self._now += max(0.0, seconds)
        await asyncio.sleep(0)


@pytest.fixture
def fake_api() -> FakeApi:
    return FakeApi()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def instant_clock() -> InstantClock:
    return InstantClock()


@pytest.fixture
def registry() -> CollectorRegistry:
    return CollectorRegistry()


@pytest.fixture
def metrics(registry: CollectorRegistry) -> KubeMetrics:
    return KubeMetrics(registry)


def make_client(
    api: FakeApi,
    *,
    clock: FakeClock,
    metrics: KubeMetrics | None = None,
    settings: ClientSettings | None = None,
    token: str | None = "t0ken",
) -> KubeClient:
    return KubeClient(
        server="https://fake.invalid:6443",
        transport=HttpxTransport(api.transport()),
        auth=BearerTokenAuth(StaticTokenSource(token)),
        settings=settings or ClientSettings(qps=0, burst=1),
        metrics=metrics,
        clock=clock,
        rng=random.Random(7),
    )


@pytest.fixture
async def client(
    fake_api: FakeApi, instant_clock: InstantClock, metrics: KubeMetrics
) -> AsyncIterator[KubeClient]:
    kube = make_client(fake_api, clock=instant_clock, metrics=metrics)
    yield kube
    await kube.aclose()
