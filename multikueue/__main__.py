"""``kueue-bridge multikueue --config FILE [--kubeconfig FILE]``: the MultiKueue controller.

Process life, as ``kueue-bridge reconciler``'s: load and validate the configuration (a bad file
stops start-up with one line per error), connect to the manager cluster, serve probes and metrics,
then campaign for the Lease ``<leaderElection.resourceName>-multikueue``. Only the leader runs
informers, controllers, worker connections and the garbage collector; a second replica is a hot
standby waiting on the Lease. SIGTERM/SIGINT stop the controllers (in-flight reconciles drain),
close the worker connections, release the Lease so the standby takes over at once, and exit 0.
Losing the Lease stops all work immediately and the process campaigns again.

``/readyz`` is ready once the leader's caches have synced, or while standing by (a standby is
ready to take over; it serves no traffic).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys

from prometheus_client import CollectorRegistry

from multikueue.manager import ManagerOptions, MultiKueueManager
from shared.cli_args import controller_parser, default_identity, load_config_or_report, run_component
from shared.config import Configuration
from shared.kube import ClientSettings, KubeClient, KubeMetrics, configure_logging, load_connection
from shared.kube.events import EventRecorder, EventSettings
from shared.leading import Leadership, leader_elector_for, serve_while_leading, stop_event_recorder
from shared.preflight import check_before_start
from shared.probes import ProbeServer, parse_bind_address

__all__ = ["COMPONENT", "main", "run_multikueue"]

logger = logging.getLogger("multikueue")
COMPONENT = "multikueue"
#: how long a stopping process keeps writing queued events (Kubernetes' default grace is 30 s)


def _parser() -> argparse.ArgumentParser:
    parser = controller_parser(
        prog="kueue-bridge multikueue",
        description=__doc__.splitlines()[0],
        kubeconfig_help="kubeconfig of the manager cluster (default: $KUBECONFIG, then in-cluster)",
    )
    parser.add_argument(
        "--kubeconfig-path-prefix",
        help="directory MultiKueueClusters with locationType Path must point into (default: /etc/multikueue/kubeconfigs)",
    )
    return parser


async def run_multikueue(
    *,
    config: Configuration,
    kubeconfig: str | None,
    identity: str,
    probe_address: str,
    stop: asyncio.Event,
    options: ManagerOptions | None = None,
) -> None:
    options = options or ManagerOptions()
    registry = CollectorRegistry()
    metrics = KubeMetrics(registry)
    connection = load_connection(kubeconfig=kubeconfig)
    settings = ClientSettings(qps=config.client_connection.qps, burst=config.client_connection.burst)
    leadership = Leadership()

    def ready() -> bool:
        manager = leadership.manager
        if not leadership.leading:
            return True
        return isinstance(manager, MultiKueueManager) and manager.synced()

    host, port = parse_bind_address(probe_address)
    probes = ProbeServer(registry=registry, ready=ready, host=host, port=port)
    await probes.start()
    logger.info("probes and metrics listening", extra={"port": probes.port})
    try:  # after the probes: a taken port is the first thing a user must hear about
        await check_before_start(connection, config, component="multikueue", logger=logger, settings=settings)
    except BaseException:
        await probes.stop()
        raise
    async with KubeClient.from_connection(connection, settings=settings, metrics=metrics) as client:
        recorder = EventRecorder(
            client, EventSettings(reporting_controller="kueue-bridge-multikueue", reporting_instance=identity)
        )
        recorder_task = asyncio.create_task(recorder.run(), name="event-recorder")
        elector = leader_elector_for(
            client, config=config, component=COMPONENT, identity=identity, metrics=metrics
        )
        try:
            await serve_while_leading(
                stop=stop,
                leader_elect=config.leader_election.leader_elect,
                elector=elector,
                make_manager=lambda: MultiKueueManager(
                    client=client, config=config, options=options, recorder=recorder
                ),
                name="multikueue-manager",
                leadership=leadership,
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
    options = ManagerOptions()
    if args.kubeconfig_path_prefix:
        options = ManagerOptions(path_prefix=args.kubeconfig_path_prefix)

    return run_component(
        "kueue-bridge multikueue",
        lambda stop: run_multikueue(
            config=config,
            kubeconfig=args.kubeconfig or os.environ.get("KUBECONFIG"),
            identity=identity,
            probe_address=probe_address,
            stop=stop,
            options=options,
        ),
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
