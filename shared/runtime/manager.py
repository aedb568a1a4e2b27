"""The controller manager: what controller-runtime's ``Manager`` is to a controller process.

The reconciler, MultiKueue and AppWrapper processes are one scaffold around different controllers
(they may not import each other, so the scaffold lives here). ``ControllerManager`` is that
scaffold, one per process; it owns:

* the metrics registry (``/metrics``) and the client runtime's metrics on it;
* the one ``KubeClient`` of the process, built from the kubeconfig (or in-cluster) with the
  configuration's ``clientConnection`` QPS and burst;
* the ``EventRecorder`` (``reportingController`` is the component's event source, the instance is
  the leader-election identity), flushed for a bounded time on stop;
* the probe server (``/healthz``, ``/readyz``, ``/metrics``) on ``--probe-address`` or
  ``health.healthProbeBindAddress``;
* the start-up checks (``shared.preflight.check_before_start``, on a short-lived client of their
  own): findings are logged, a second controller for the same kinds refuses the start;
* leader election on the Lease ``<leaderElection.resourceName>-<component>`` (``shared.runtime.leading``);
* the runnables of each leadership term: a ``ControllerSet`` (informers -- the cache --, the
  controllers they feed, and tasks beside them) that the component builds afresh every time the
  process starts leading and that the manager runs until the Lease is lost or the process stops.

Invariants:

* **Nothing talks to the API server before the probes listen**, and nothing but the elector talks
  to it while standing by: only the leader runs informers and controllers.
* **Everything started is stopped, in reverse order**: controllers drain, informers and side tasks
  are cancelled, the Lease is released, queued Events get their bounded flush, the client and the
  probe server close. A start-up error (a taken probe port, a kubeconfig that cannot be loaded)
  surfaces from ``run`` as the typed error ``shared.runtime.cli_args.run_component`` reports in one line.
* **Controllers start on a warm cache**: a ``ControllerSet`` waits until every informer has synced,
  then starts its after-sync tasks and its controllers, so no reconcile mistakes "not listed yet"
  for "gone".
* ``/readyz`` is always ready, or with ``ready_once_synced`` ready while standing by (a standby
  serves nothing and is ready to take over) and, while leading, once the term's caches have synced.
* Every term logs ``caches synced`` (INFO: the informers, the objects cached, the seconds since the
  term began) the moment its controllers may start: what a restart costs before the first
  reconcile, whatever ``/readyz`` says.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from typing import Any

from prometheus_client import CollectorRegistry

from shared.config import Configuration
from shared.kube import (
    ClientSettings,
    Controller,
    EventRecorder,
    EventSettings,
    Informer,
    KubeClient,
    KubeMetrics,
    load_connection,
)
from shared.preflight import Component, check_before_start
from shared.runtime.cli_args import default_identity
from shared.runtime.leading import Leadership, leader_elector_for, serve_while_leading, stop_event_recorder
from shared.runtime.probes import ProbeServer, parse_bind_address

__all__ = ["ControllerManager", "ControllerSet"]

logger = logging.getLogger(__name__)

TaskFactory = Callable[[], Coroutine[Any, Any, None]]


class ControllerSet:
    """What a controller process runs while it leads: informers, the controllers they feed, and
    tasks beside them. Components subclass it (or build one) once per leadership term; its private
    attributes are name-mangled so a subclass's own ``_informers`` cannot shadow them.

    ``tasks`` run from the start, beside the informers; ``after_sync`` tasks start once every
    informer has synced, before the controllers; ``on_stop`` runs last, after everything was
    cancelled (closing connections the term opened).
    """

    def __init__(
        self,
        *,
        informers: Sequence[Informer],
        controllers: Sequence[Controller],
        tasks: Sequence[TaskFactory] = (),
        after_sync: Sequence[TaskFactory] = (),
        on_stop: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.__informers = list(informers)
        self.controllers = list(controllers)
        self.__tasks = list(tasks)
        self.__after_sync = list(after_sync)
        self.__on_stop = on_stop

    @property
    def informers(self) -> list[Informer]:
        return list(self.__informers)

    def synced(self) -> bool:
        return all(informer.has_synced for informer in self.__informers)

    async def run(self) -> None:
        """Run informers, tasks and controllers until cancelled or the controllers shut down."""
        started = [
            asyncio.create_task(informer.run(), name=f"informer-{informer.gvk.kind.lower()}")
            for informer in self.__informers
        ]
        started += [asyncio.create_task(task()) for task in self.__tasks]
        began = time.monotonic()
        try:
            await asyncio.gather(*(informer.wait_synced() for informer in self.__informers))
            logger.info(
                "caches synced",
                extra={
                    "informers": len(self.__informers),
                    "objects": sum(len(informer.store) for informer in self.__informers),
                    "seconds": round(time.monotonic() - began, 3),
                },
            )
            started += [asyncio.create_task(task()) for task in self.__after_sync]
            await asyncio.gather(*(controller.run() for controller in self.controllers))
        finally:
            for task in started:
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(*started, return_exceptions=True)
            if self.__on_stop is not None:
                await self.__on_stop()

    async def shutdown(self, *, drain_seconds: float = 30.0) -> None:
        """Stop taking new work and let in-flight reconciles finish (at most ``drain_seconds``)."""
        await asyncio.gather(*(c.shutdown(drain_seconds=drain_seconds) for c in self.controllers))


class ControllerManager:
    """One controller process: client, cache, recorder, probes, metrics, election, runnables."""

    def __init__(
        self,
        *,
        config: Configuration,
        component: Component,
        event_source: str,
        identity: str,
        probe_address: str,
        kubeconfig: str | None,
        ready_once_synced: bool = False,
    ) -> None:
        self.config = config
        self.component = component
        self.identity = identity
        self.registry = CollectorRegistry()
        self.metrics = KubeMetrics(self.registry)
        self.leadership = Leadership()
        self._event_source = event_source
        self._probe_address = probe_address
        self._kubeconfig = kubeconfig
        self._ready_once_synced = ready_once_synced
        self._client: KubeClient | None = None
        self._recorder: EventRecorder | None = None
        self._log = logging.getLogger(component)

    @classmethod
    def for_process(
        cls,
        args: argparse.Namespace,
        *,
        config: Configuration,
        component: Component,
        event_source: str,
        ready_once_synced: bool = False,
    ) -> ControllerManager:
        """The manager of a process started with ``shared.runtime.cli_args.controller_parser``'s options:
        ``--identity`` (default ``hostname_uuid``), ``--probe-address`` (default
        ``health.healthProbeBindAddress``), ``--kubeconfig`` (default ``$KUBECONFIG``, then in-cluster)."""
        return cls(
            config=config,
            component=component,
            event_source=event_source,
            identity=args.identity or default_identity(),
            probe_address=args.probe_address or config.health.health_probe_bind_address,
            kubeconfig=args.kubeconfig or os.environ.get("KUBECONFIG"),
            ready_once_synced=ready_once_synced,
        )

    @property
    def client(self) -> KubeClient:
        """The process's client (while ``run`` runs)."""
        if self._client is None:
            raise RuntimeError(f"{self.component}: the client exists only while the manager runs")
        return self._client

    @property
    def recorder(self) -> EventRecorder:
        """The process's event recorder (while ``run`` runs)."""
        if self._recorder is None:
            raise RuntimeError(f"{self.component}: the recorder exists only while the manager runs")
        return self._recorder

    def ready(self) -> bool:
        if not self._ready_once_synced or not self.leadership.leading:
            return True
        current = self.leadership.manager
        return isinstance(current, ControllerSet) and current.synced()

    async def run(
        self, *, stop: asyncio.Event, controllers: Callable[[ControllerManager], ControllerSet]
    ) -> None:
        """Serve probes, connect, and run ``controllers(self)`` in every leadership term until ``stop``."""
        config = self.config
        connection = load_connection(kubeconfig=self._kubeconfig)
        settings = ClientSettings(qps=config.client_connection.qps, burst=config.client_connection.burst)
        host, port = parse_bind_address(self._probe_address)
        probes = ProbeServer(registry=self.registry, ready=self.ready, host=host, port=port)
        await probes.start()
        self._log.info("probes and metrics listening", extra={"port": probes.port})
        try:
            # after the probes (a taken port is the first thing a user must hear about), before the
            # Lease: a conflict with a second controller of the same kind refuses the start
            await check_before_start(
                connection, config, component=self.component, logger=self._log, settings=settings
            )
            async with KubeClient.from_connection(
                connection, settings=settings, metrics=self.metrics
            ) as client:
                recorder = EventRecorder(
                    client,
                    EventSettings(reporting_controller=self._event_source, reporting_instance=self.identity),
                )
                self._client, self._recorder = client, recorder
                recorder_task = asyncio.create_task(recorder.run(), name="event-recorder")
                elector = leader_elector_for(
                    client,
                    config=config,
                    component=self.component,
                    identity=self.identity,
                    metrics=self.metrics,
                )
                try:
                    await serve_while_leading(
                        stop=stop,
                        leader_elect=config.leader_election.leader_elect,
                        elector=elector,
                        make_manager=lambda: controllers(self),
                        name=f"{self.component}-manager",
                        leadership=self.leadership,
                    )
                finally:
                    await stop_event_recorder(recorder, recorder_task)
                    self._client = self._recorder = None
        finally:
            await probes.stop()
