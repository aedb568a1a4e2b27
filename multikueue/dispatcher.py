"""The incremental dispatcher: nominate worker clusters a few at a time, one 5-minute round each.

Kueue's ``IncrementalDispatcherReconciler`` (``pkg/controller/workloaddispatcher``), run only when
``multiKueue.dispatcherName`` is ``kueue.x-k8s.io/multikueue-dispatcher-incremental``:

* it acts on a Workload whose MultiKueue check is ``Pending``, with no ``status.clusterName``, quota
  reserved and not finished (otherwise its round is forgotten);
* a round lasts 5 minutes (kept in memory, per Workload). When none is running, the next
  ``stepSize`` clusters (``multiKueue.incrementalDispatcherConfig.stepSize``, 3 by default) that are
  not nominated yet are appended to ``status.nominatedClusterNames``, in the MultiKueueConfig's
  order (gate ``MultiKueueIncrementalDispatcherRespectConfigOrder``, on by default; else sorted);
* when every cluster is nominated the error is ``no more workers to nominate`` (retried with backoff).

The Workload reconciler then creates copies on exactly the nominated clusters, as for an external
dispatcher.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from multikueue.admissioncheck import ParametersError, config_clusters, parameters_config_name
from shared.constants import ADMISSION_CHECK_GVK, MULTIKUEUE_CONFIG_GVK, CheckState
from shared.jsontree import json_tree_copy
from shared.kube import Clock, KubeClient, Result, cache_miss_message
from shared.kube.conditions import read_status, writable_status
from shared.kueue.admission_apply import apply_admission_status
from shared.kueue.workload_state import has_quota_reservation, is_finished

__all__ = ["ROUND_SECONDS", "IncrementalDispatcher", "NoMoreWorkersError"]

ROUND_SECONDS: Final = 300.0


class NoMoreWorkersError(Exception):
    def __init__(self) -> None:
        super().__init__("no more workers to nominate")


@dataclass(frozen=True, kw_only=True, eq=False)
class IncrementalDispatcher:
    """MultiKueue's incremental dispatching: the Workload's copy goes to ``step_size`` more worker
    clusters each round; ``round_started`` remembers when each Workload's round began."""

    client: KubeClient
    workloads: Callable[[str], dict[str, Any] | None]
    checks: Callable[[str], dict[str, Any] | None]
    configs: Callable[[str], dict[str, Any] | None]
    multikueue_check: Callable[[dict[str, Any]], dict[str, Any] | None]
    step_size: int
    respect_config_order: bool
    clock: Clock
    now: Callable[[], datetime]
    round_started: dict[str, float] = field(default_factory=dict, init=False)

    async def reconcile(self, key: str) -> Result:
        cached = self.workloads(key)
        if cached is None or (cached.get("metadata") or {}).get("deletionTimestamp"):
            self.round_started.pop(key, None)
            return Result.done()
        check = self.multikueue_check(cached)
        if (
            check is None
            or check.get("state") != CheckState.PENDING
            or read_status(cached).get("clusterName")
        ):
            return Result.done()
        admission_check = self.checks(str(check.get("name")))
        if admission_check is None:
            raise ParametersError(cache_miss_message(ADMISSION_CHECK_GVK, str(check.get("name"))))
        config_name = parameters_config_name(admission_check)
        config = self.configs(config_name)
        if config is None:
            raise ParametersError(cache_miss_message(MULTIKUEUE_CONFIG_GVK, config_name))
        clusters = config_clusters(config)
        if not clusters:
            raise ParametersError("no active clusters")
        if is_finished(cached) or not has_quota_reservation(cached):
            self.round_started.pop(key, None)
            return Result.done()
        started = self.round_started.get(key)
        now = self.clock.now()
        if started is not None and now - started <= ROUND_SECONDS:
            return Result.after(ROUND_SECONDS - (now - started))
        workload = json_tree_copy(cached)
        status = writable_status(workload)
        nominated = [str(name) for name in status.get("nominatedClusterNames") or []]
        remaining = [name for name in clusters if name not in nominated]
        if not self.respect_config_order:
            remaining.sort()
        if not remaining:
            raise NoMoreWorkersError()
        status["nominatedClusterNames"] = nominated + remaining[: self.step_size]
        await apply_admission_status(self.client, workload)  # PatchAdmissionStatus, as Kueue
        self.round_started[key] = now
        return Result.done()
