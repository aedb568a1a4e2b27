"""``kueue-bridge appwrapper --config FILE [--kubeconfig FILE]``: AppWrapper's framework controller.

Process life, as the reconciler's: load and validate the configuration (a bad file stops start-up
with one line per error; so does a configuration that does not manage
``workload.codeflare.dev/appwrapper`` -- listed in ``integrations.frameworks``, or as
``AppWrapper.v1beta2.workload.codeflare.dev`` in ``externalFrameworks`` -- since there would be
nothing to do), connect, serve probes and metrics, then campaign for the Lease
``<leaderElection.resourceName>-appwrapper``. Only the leader runs informers and workers; a second
replica is a hot standby. SIGTERM/SIGINT stop the workers (in-flight reconciles drain), flush
queued events, release the Lease and exit 0. Losing the Lease stops all work at once and the
process campaigns again.

Metrics: ``appwrapper_phase_total{namespace,phase}`` (the operator's name: phase transitions
written) and the ``shared.kube`` client, queue and reconcile metrics, on the probe port.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys

from prometheus_client import CollectorRegistry, Counter

from appwrapper.cluster import EventSinkOnRecorder
from appwrapper.faulttolerance import FaultTolerance
from appwrapper.manager import AppWrapperManager
from appwrapper.model import APPWRAPPER_GVK
from shared.cli_args import (
    controller_parser,
    default_identity,
    load_config_or_report,
    positive_int,
    run_component,
)
from shared.config import DEFAULT_RECONCILE_CONCURRENCY, Configuration
from shared.kube import ClientSettings, KubeClient, KubeMetrics, configure_logging, load_connection
from shared.kube.events import EventRecorder, EventSettings
from shared.leading import leader_elector_for, serve_while_leading, stop_event_recorder
from shared.preflight import check_before_start
from shared.probes import ProbeServer, parse_bind_address

__all__ = ["main", "phase_counter", "run_appwrapper_controller"]

logger = logging.getLogger("appwrapper")
COMPONENT = "appwrapper"
#: the operator's event source (``mgr.GetEventRecorderFor("appwrappers")``)
REPORTING_CONTROLLER = "appwrappers"
NOT_CONFIGURED = (
    "workload.codeflare.dev/appwrapper is not a configured framework "
    "(integrations.frameworks or integrations.externalFrameworks): nothing to do"
)


def _parser() -> argparse.ArgumentParser:
    parser = controller_parser(prog="kueue-bridge appwrapper", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--workers",
        type=positive_int,
        help="concurrent reconciles (default: controller.groupKindConcurrency[AppWrapper.workload.codeflare.dev], "
        f"else {DEFAULT_RECONCILE_CONCURRENCY})",
    )
    return parser


def phase_counter(registry: CollectorRegistry) -> Counter:
    """``appwrapper_phase_total{namespace, phase}``: the AppWrapper operator's own metric."""
    return Counter(
        "appwrapper_phase_total",
        "The total number of times an appwrapper transitioned to a given phase per namespace.",
        ["namespace", "phase"],
        registry=registry,
    )


def manages_appwrappers(config: Configuration) -> bool:
    return any(kind.gvk == APPWRAPPER_GVK for kind in config.managed_kinds())


async def run_appwrapper_controller(
    *,
    config: Configuration,
    kubeconfig: str | None,
    identity: str,
    probe_address: str,
    workers: int | None,
    stop: asyncio.Event,
    fault_tolerance: FaultTolerance | None = None,
) -> None:
    registry = CollectorRegistry()
    metrics = KubeMetrics(registry)
    phases = phase_counter(registry)
    connection = load_connection(kubeconfig=kubeconfig)
    settings = ClientSettings(qps=config.client_connection.qps, burst=config.client_connection.burst)
    host, port = parse_bind_address(probe_address)
    probes = ProbeServer(registry=registry, ready=lambda: True, host=host, port=port)
    await probes.start()
    logger.info("probes and metrics listening", extra={"port": probes.port})
    try:  # after the probes: a taken port is the first thing a user must hear about
        await check_before_start(connection, config, component="appwrapper", logger=logger, settings=settings)
    except BaseException:
        await probes.stop()
        raise
    async with KubeClient.from_connection(connection, settings=settings, metrics=metrics) as client:
        recorder = EventRecorder(
            client, EventSettings(reporting_controller=REPORTING_CONTROLLER, reporting_instance=identity)
        )
        recorder_task = asyncio.create_task(recorder.run(), name="event-recorder")
        elector = leader_elector_for(
            client, config=config, component=COMPONENT, identity=identity, metrics=metrics
        )

        def on_phase(*, namespace: str, phase: str) -> None:
            phases.labels(namespace, phase).inc()

        def make_manager() -> AppWrapperManager:
            return AppWrapperManager(
                client=client,
                events=EventSinkOnRecorder(recorder),
                on_phase=on_phase,
                config=fault_tolerance or FaultTolerance(),
                field_manager=config.kueue_bridge.field_manager,
                workers=workers or config.reconcile_concurrency(APPWRAPPER_GVK),
            )

        try:
            await serve_while_leading(
                stop=stop,
                leader_elect=config.leader_election.leader_elect,
                elector=elector,
                make_manager=make_manager,
                name="appwrapper-manager",
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
    if not manages_appwrappers(config):
        print(f"{args.config}: {NOT_CONFIGURED}", file=sys.stderr)
        return 1
    identity = args.identity or default_identity()
    probe_address = args.probe_address or config.health.health_probe_bind_address

    return run_component(
        "kueue-bridge appwrapper",
        lambda stop: run_appwrapper_controller(
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
