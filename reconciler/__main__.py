"""``kueue-bridge reconciler --config FILE [--kubeconfig FILE]``: the job <-> Workload controller.

Process life (``shared.manager.ControllerManager``): load and validate the configuration (a bad file
stops start-up with one line per error), connect, serve probes and metrics, then campaign for the
Lease ``<leaderElection.resourceName>-reconciler``. Only the leader runs informers and workers; a
second replica is a hot standby waiting on the Lease. SIGTERM/SIGINT stop the workers (in-flight
reconciles drain), release the Lease so the standby takes over at once, and exit 0. Losing the
Lease stops all work immediately and the process campaigns again.

Events about a job are reported as Kueue's job reconciler for that kind reports them
(``reconciler.event_reporting``).
"""

from __future__ import annotations

import argparse
import os
import sys

from reconciler.event_reporting import RecorderSink, reporters_for, workload_event_counter
from reconciler.manager import ReconcilerManager
from shared.cli_args import (
    controller_parser,
    default_identity,
    load_config_or_report,
    positive_int,
    run_component,
)
from shared.config import DEFAULT_RECONCILE_CONCURRENCY
from shared.kube import configure_logging
from shared.manager import ControllerManager

__all__ = ["main"]

COMPONENT = "reconciler"


def _parser() -> argparse.ArgumentParser:
    parser = controller_parser(prog="kueue-bridge reconciler", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--workers",
        type=positive_int,
        help="concurrent reconciles per job kind (default: controller.groupKindConcurrency, else "
        f"{DEFAULT_RECONCILE_CONCURRENCY})",
    )
    return parser


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    configure_logging(json=args.log_format == "json")
    config = load_config_or_report(args.config)
    if config is None:
        return 1
    manager = ControllerManager(
        config=config,
        component=COMPONENT,
        event_source="kueue-bridge-reconciler",
        identity=args.identity or default_identity(),
        probe_address=args.probe_address or config.health.health_probe_bind_address,
        kubeconfig=args.kubeconfig or os.environ.get("KUBECONFIG"),
    )
    workload_events = workload_event_counter(manager.registry)
    reporters = reporters_for(config)

    def controllers(process: ControllerManager) -> ReconcilerManager:
        events = RecorderSink(process.recorder, workload_events=workload_events, reporters=reporters)
        return ReconcilerManager.from_config(
            config, client=process.client, events=events, workers=args.workers
        )

    return run_component(
        "kueue-bridge reconciler", lambda stop: manager.run(stop=stop, controllers=controllers)
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
