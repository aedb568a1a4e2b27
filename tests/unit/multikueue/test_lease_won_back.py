"""A multikueue process that loses its Lease and wins it back runs a working manager again.

The process builds a new ``MultiKueueManager`` for every leadership on the same client, so on the
same metrics registry. On a busy node a renewal can miss ``renewDeadline``: the leader stops and
campaigns again. The second manager used to fail in its constructor (its counters were already
registered), give the Lease back and campaign again, for ever -- a live process that never again
dispatched, finished or cleaned up a Workload (the crash-restart e2e test's stall on a busy host).

The elector here is a stand-in that grants the Lease, takes it away when the test says so (as a
missed renewal does) and grants it again; the manager runs for real on the in-memory fakes.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable

from prometheus_client import CollectorRegistry

from multikueue.manager import ManagerOptions, MultiKueueManager
from shared.config import default_config
from shared.kube import KubeMetrics, SystemClock
from shared.kube.leaderelection import LeaderElectionSettings, LeaderElector
from shared.runtime.leading import Leadership, serve_while_leading
from tests.polling import eventually
from tests.unit.multikueue.fakes import (
    MK_CLUSTER,
    SECRET,
    WORKER_KINDS,
    FakeCluster,
    kubeconfig_for,
    secret_for,
    worker_factory,
)


class LeaseTakenAway(LeaderElector):
    """Grants the Lease at once; ``take_away()`` ends the term as a missed renewal does."""

    def __init__(self, cluster: FakeCluster) -> None:
        super().__init__(
            cluster.client,
            LeaderElectionSettings(lease_name="kueue-bridge-multikueue", lease_namespace="x", identity="me"),
        )
        self.terms = 0
        self.failures: list[BaseException] = []
        self._lost = asyncio.Event()

    def take_away(self) -> None:
        self._lost.set()

    async def run(
        self,
        *,
        on_started_leading: Callable[[], Awaitable[None]],
        on_stopped_leading: Callable[[], None] | None = None,
        on_new_leader: Callable[[str], None] | None = None,
    ) -> None:
        self.terms += 1
        self._lost.clear()
        leading = asyncio.ensure_future(on_started_leading())
        lost = asyncio.ensure_future(self._lost.wait())
        try:
            await asyncio.wait({leading, lost}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (leading, lost):
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await lost
            try:
                await leading
            except asyncio.CancelledError:
                pass
            except Exception as exc:  # the real elector logs "leading work failed" and campaigns again
                self.failures.append(exc)


def active(manager: FakeCluster, name: str) -> bool:
    for item in ((manager.get(MK_CLUSTER, name) or {}).get("status") or {}).get("conditions") or []:
        if item["type"] == "Active":
            return bool(item["status"] == "True")
    return False


def add_worker(manager: FakeCluster, name: str) -> None:
    manager.put(SECRET, secret_for(f"{name}-secret", kubeconfig_for(name)))
    manager.put(
        MK_CLUSTER,
        {
            "metadata": {"name": name},
            "spec": {"clusterSource": {"kubeConfig": {"location": f"{name}-secret"}}},
        },
    )


async def test_a_lease_won_back_runs_a_working_manager_again() -> None:
    clock = SystemClock()
    manager = FakeCluster("manager", clock=clock)
    registry = CollectorRegistry()
    manager.client.metrics = KubeMetrics(registry)  # one registry per process, as run_multikueue has
    workers = {name: FakeCluster(name, clock=clock, kinds=WORKER_KINDS) for name in ("w1", "w2")}
    elector = LeaseTakenAway(manager)
    leadership = Leadership()
    stop = asyncio.Event()
    built: list[MultiKueueManager] = []

    def make_manager() -> MultiKueueManager:
        mk = MultiKueueManager(
            client=manager.client,
            config=default_config(),
            options=ManagerOptions(),
            client_factory=worker_factory(workers),
        )
        built.append(mk)
        return mk

    async def leading_term(number: int) -> bool:
        assert not elector.failures, f"leadership {number} failed: {elector.failures!r}"
        mk = leadership.manager
        return elector.terms == number and isinstance(mk, MultiKueueManager) and mk.synced()

    serving = asyncio.create_task(
        serve_while_leading(
            stop=stop,
            leader_elect=True,
            elector=elector,
            make_manager=make_manager,
            name="mk",
            leadership=leadership,
        )
    )
    try:
        await eventually(lambda: leading_term(1), what="the first leadership's manager synced")
        add_worker(manager, "w1")
        await eventually(lambda: asyncio.sleep(0, active(manager, "w1")), what="w1 Active")

        elector.take_away()
        await eventually(lambda: leading_term(2), what="the Lease won back and a new manager synced")
        add_worker(manager, "w2")
        await eventually(
            lambda: asyncio.sleep(0, active(manager, "w2")), what="w2 Active: the new manager reconciles"
        )
    finally:
        stop.set()
        elector.take_away()
        await serving
    assert not elector.failures
    assert len(built) == 2 and built[0].metrics is built[1].metrics, "one set of counters per registry"
    exposed = [family.name for family in registry.collect()]
    assert exposed.count("kueue_bridge_multikueue_workloads_dispatched") == 1
    assert exposed.count("kueue_bridge_multikueue_workloads_admitted") == 1
