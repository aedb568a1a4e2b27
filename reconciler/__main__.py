"""``kueue-bridge reconciler --config FILE [--kubeconfig FILE]``: the job <-> Workload controller.

Process life: load and validate the configuration (a bad file stops start-up with one line per
error), connect, serve probes and metrics, then campaign for the Lease
``<leaderElection.resourceName>-reconciler``. Only the leader runs informers and workers; a second
replica is a hot standby waiting on the Lease. SIGTERM/SIGINT stop the workers (in-flight reconciles
drain), release the Lease so the standby takes over at once, and exit 0. Losing the Lease stops all
work immediately and the process campaigns again.

Events about a job are reported as Kueue's job reconciler for that kind reports them: controller
``<framework>-kueue-controller`` (jobframework ``setupControllerAndWebhook``'s recorder name, with
Kueue's manager name ``kueue``; ``<framework>`` is Kueue's framework name, e.g. ``batch/job``, or
the ``integrations.externalFrameworks`` name ``Kind.version.group`` for a kind Kueue has no
integration for), instance ``<controller>-<hostname>`` (client-go's ``NewRecorder``). So the Events
kueue-bridge writes cannot be told from the ones Kueue would write.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from reconciler.manager import ReconcilerManager
from shared.cli_args import (
    controller_parser,
    default_identity,
    load_config_or_report,
    positive_int,
    run_component,
)
from shared.config import DEFAULT_RECONCILE_CONCURRENCY, Configuration
from shared.kube import ClientSettings, KubeClient, KubeMetrics, configure_logging, load_connection
from shared.kube.events import EventRecorder, EventSettings, Reporter
from shared.leading import leader_elector_for, serve_while_leading, stop_event_recorder
from shared.probes import ProbeServer, parse_bind_address

__all__ = ["RecorderSink", "kueue_controller_name", "main", "reporters_for", "run_reconciler"]

logger = logging.getLogger("reconciler")
COMPONENT = "reconciler"
#: how long a stopping reconciler keeps writing queued events (Kubernetes' default grace is 30 s)


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
        api_version = f"{kind.gvk.group}/{kind.gvk.version}" if kind.gvk.group else kind.gvk.version
        reporters[(api_version, kind.gvk.kind)] = Reporter.on_host(
            kueue_controller_name(framework), host=host
        )
    return reporters


class RecorderSink:
    """The reconciler's ``EventSink`` on ``shared.kube``'s recorder, counting Workload life events;
    each event is reported as Kueue's reconciler for the regarding object's kind (``reporters``)."""

    def __init__(
        self,
        recorder: EventRecorder,
        *,
        registry: CollectorRegistry,
        reporters: Mapping[tuple[str, str], Reporter] | None = None,
    ) -> None:
        self._recorder = recorder
        self._reporters = dict(reporters or {})
        self._workloads = Counter(
            "kueue_bridge_reconciler_workload_events_total",
            "Workload life-cycle events recorded on jobs (CreatedWorkload, FinishedWorkload, ...).",
            ["reason"],
            registry=registry,
        )

    def record(self, *, regarding: dict[str, Any], event_type: str, reason: str, message: str) -> None:
        if reason.endswith("Workload"):
            self._workloads.labels(reason).inc()
        reporter = self._reporters.get((str(regarding.get("apiVersion")), str(regarding.get("kind"))))
        self._recorder.event(regarding, type=event_type, reason=reason, note=message, reporter=reporter)


def _parser() -> argparse.ArgumentParser:
    parser = controller_parser(prog="kueue-bridge reconciler", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--workers",
        type=positive_int,
        help="concurrent reconciles per job kind (default: controller.groupKindConcurrency, else "
        f"{DEFAULT_RECONCILE_CONCURRENCY})",
    )
    return parser


async def run_reconciler(
    *,
    config: Configuration,
    kubeconfig: str | None,
    identity: str,
    probe_address: str,
    workers: int | None,
    stop: asyncio.Event,
) -> None:
    registry = CollectorRegistry()
    metrics = KubeMetrics(registry)
    connection = load_connection(kubeconfig=kubeconfig)
    settings = ClientSettings(qps=config.client_connection.qps, burst=config.client_connection.burst)
    host, port = parse_bind_address(probe_address)
    probes = ProbeServer(registry=registry, ready=lambda: True, host=host, port=port)
    await probes.start()
    logger.info("probes and metrics listening", extra={"port": probes.port})
    async with KubeClient.from_connection(connection, settings=settings, metrics=metrics) as client:
        recorder = EventRecorder(
            client, EventSettings(reporting_controller="kueue-bridge-reconciler", reporting_instance=identity)
        )
        events = RecorderSink(recorder, registry=registry, reporters=reporters_for(config))
        recorder_task = asyncio.create_task(recorder.run(), name="event-recorder")
        elector = leader_elector_for(
            client, config=config, component=COMPONENT, identity=identity, metrics=metrics
        )
        try:
            await serve_while_leading(
                stop=stop,
                leader_elect=config.leader_election.leader_elect,
                elector=elector,
                make_manager=lambda: ReconcilerManager.from_config(
                    config, client=client, events=events, workers=workers
                ),
                name="reconciler-manager",
            )
        finally:
            await stop_event_recorder(recorder, recorder_task)
            await probes.stop()


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    configure_logging(json=args.log_format == "json")
    config = load_config_or_report(args.config)
    if config is None:
        return 1
    identity = args.identity or default_identity()
    probe_address = args.probe_address or config.health.health_probe_bind_address

    return run_component(
        "kueue-bridge reconciler",
        lambda stop: run_reconciler(
            config=config,
            kubeconfig=args.kubeconfig or os.environ.get("KUBECONFIG"),
            identity=identity,
            probe_address=probe_address,
            workers=args.workers,
            stop=stop,
        ),
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
