"""Wiring the phase machine into a running controller: informers, one work queue, workers.

Three informers feed one ``shared.kube.Controller`` keyed ``namespace/name`` of AppWrappers:

* AppWrappers themselves (every add/update/delete; our own status writes come back this way and
  trigger the next step, as with controller-runtime);
* Pods carrying ``workload.codeflare.dev/appwrapper`` (its value names the AppWrapper): pods
  starting, succeeding or failing wake their AppWrapper (AppWrapper's operator watches pods too);
* batch/v1 Jobs carrying the same label: a wrapped Job is counted from its status
  (:mod:`appwrapper.summary`), so its status changes must wake the AppWrapper, or a finished Job
  would be noticed only at the next poll (up to a minute).

Other wrapped kinds are not watched (as in the operator): their state is read live on each
reconcile and the machine polls while it waits.

Invariants:

* Workers start only after every informer has synced (``Controller.run``).
* The machine gets a deep copy of the cached AppWrapper (it edits its working copy).
* It is the process's ``shared.runtime.manager.ControllerSet`` for one leadership term: ``run`` owns the
  informer tasks and cancels them when the controller ends (shutdown, or loss of leadership);
  ``shutdown`` drains in-flight reconciles.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from appwrapper.cluster import APPWRAPPER_INDEX, JOB_GVK, POD_GVK, KubePort, appwrapper_index
from appwrapper.faulttolerance import FaultTolerance
from appwrapper.model import APPWRAPPER_LABEL
from appwrapper.phases import PhaseMachine
from appwrapper.ports import EventSink, PhaseObserver
from shared.frameworks.builtin_kinds import APPWRAPPER
from shared.jsontree import json_tree_copy
from shared.kube import CONTROLLER_RESYNC_PERIOD, Controller, Informer, KubeClient, Result
from shared.runtime.manager import ControllerSet

__all__ = ["AppWrapperManager"]

log = logging.getLogger(__name__)


def _labelled_owner(obj: Mapping[str, Any]) -> list[str]:
    return appwrapper_index(obj)


class AppWrapperManager(ControllerSet):
    def __init__(
        self,
        *,
        client: KubeClient,
        events: EventSink,
        on_phase: PhaseObserver,
        config: FaultTolerance,
        field_manager: str,
        workers: int,
        resync_period: float | None = CONTROLLER_RESYNC_PERIOD,
    ) -> None:
        self.appwrappers = Informer(client, APPWRAPPER.gvk, resync_period=resync_period)
        self.pods = Informer(
            client, POD_GVK, label_selector=APPWRAPPER_LABEL, indexers={APPWRAPPER_INDEX: appwrapper_index}
        )
        self.jobs = Informer(client, JOB_GVK, label_selector=APPWRAPPER_LABEL)
        self.machine = PhaseMachine(
            port=KubePort(client=client, pods=self.pods.store, field_manager=field_manager),
            events=events,
            config=config,
            clock=client.clock.wall,
            on_phase=on_phase,
        )
        self.controller = Controller(
            name="appwrapper",
            reconcile=self._reconcile,
            clock=client.clock,
            workers=workers,
            metrics=client.metrics,
        )
        self.controller.watch(self.appwrappers)
        self.controller.watch(self.pods, keys=_labelled_owner)
        self.controller.watch(self.jobs, keys=_labelled_owner)
        super().__init__(informers=[self.appwrappers, self.pods, self.jobs], controllers=[self.controller])

    async def _reconcile(self, key: str) -> Result:
        cached = self.appwrappers.store.get(key)
        if cached is None:
            return Result.done()
        requeue = await self.machine.reconcile(json_tree_copy(cached))
        return Result.after(requeue) if requeue is not None and requeue > 0 else Result.done()
