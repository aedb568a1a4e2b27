"""Who the reconciler's Events say they come from: Kueue's job reconciler of the job's kind.

Events about a job are reported as Kueue's job reconciler for that kind reports them: controller
``<framework>-kueue-controller`` (jobframework ``setupControllerAndWebhook``'s recorder name, with
Kueue's manager name ``kueue``; ``<framework>`` is Kueue's framework name, e.g. ``batch/job``, or
the ``integrations.externalFrameworks`` name ``Kind.version.group`` for a kind Kueue has no
integration for), instance ``<controller>-<hostname>`` (client-go's ``NewRecorder``). So the Events
kueue-bridge writes cannot be told from the ones Kueue would write.

``RecorderSink`` is the reconciler's ``EventSink`` port on ``shared.kube``'s recorder; it also
counts Workload life-cycle events (``kueue_bridge_reconciler_workload_events_total{reason}``), a
counter registered once per process (``workload_event_counter``) and shared by every leadership
term's sink.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from shared.config import Configuration
from shared.kube import EventRecorder, Reporter

__all__ = [
    "KUEUE_MANAGER_NAME",
    "RecorderSink",
    "kueue_controller_name",
    "reporters_for",
    "workload_event_counter",
]

#: Kueue's ``constants.KueueName``, its manager name (``jobframework.WithManagerName``)
KUEUE_MANAGER_NAME = "kueue"


def kueue_controller_name(framework: str) -> str:
    """The recorder name Kueue gives the job reconciler of ``framework`` (jobframework setup.go)."""
    return f"{framework}-{KUEUE_MANAGER_NAME}-controller"


def reporters_for(config: Configuration, *, host: str | None = None) -> dict[tuple[str, str], Reporter]:
    """(apiVersion, kind) of every managed kind -> the ``Reporter`` Kueue would record its events as."""
    reporters: dict[tuple[str, str], Reporter] = {}
    for kind in config.managed_kinds():
        framework = kind.builtin or kind.gvk.kind_arg
        reporters[(kind.gvk.api_version, kind.gvk.kind)] = Reporter.on_host(
            kueue_controller_name(framework), host=host
        )
    return reporters


def workload_event_counter(registry: CollectorRegistry) -> Counter:
    """``kueue_bridge_reconciler_workload_events_total{reason}`` on the process's registry."""
    return Counter(
        "kueue_bridge_reconciler_workload_events_total",
        "Workload life-cycle events recorded on jobs (CreatedWorkload, FinishedWorkload, ...).",
        ["reason"],
        registry=registry,
    )


class RecorderSink:
    """The reconciler's ``EventSink`` on ``shared.kube``'s recorder, counting Workload life events;
    each event is reported as Kueue's reconciler for the regarding object's kind (``reporters``)."""

    def __init__(
        self,
        recorder: EventRecorder,
        *,
        workload_events: Counter,
        reporters: Mapping[tuple[str, str], Reporter] | None = None,
    ) -> None:
        self._recorder = recorder
        self._reporters = dict(reporters or {})
        self._workloads = workload_events

    def record(self, *, regarding: dict[str, Any], event_type: str, reason: str, message: str) -> None:
        if reason.endswith("Workload"):
            self._workloads.labels(reason).inc()
        reporter = self._reporters.get((str(regarding.get("apiVersion")), str(regarding.get("kind"))))
        self._recorder.event(regarding, type=event_type, reason=reason, note=message, reporter=reporter)
