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
import sys
from typing import Final

from reconciler.event_reporting import RecorderSink, reporters_for, workload_event_counter
from reconciler.manager import ReconcilerControllers
from shared.cli_args import controller_config, controller_parser, run_component
from shared.config import DEFAULT_RECONCILE_CONCURRENCY
from shared.manager import ControllerManager

__all__ = ["main"]

COMPONENT: Final = "reconciler"


def _parser() -> argparse.ArgumentParser:
    return controller_parser(
        prog="kueue-bridge reconciler",
        description=__doc__.splitlines()[0],
        workers_default=f"per job kind, controller.groupKindConcurrency, else {DEFAULT_RECONCILE_CONCURRENCY}",
    )


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    config = controller_config(args)
    if config is None:
        return 1
    manager = ControllerManager.for_process(
        args, config=config, component=COMPONENT, event_source="kueue-bridge-reconciler"
    )
    workload_events = workload_event_counter(manager.registry)
    reporters = reporters_for(config)

    def controllers(process: ControllerManager) -> ReconcilerControllers:
        events = RecorderSink(process.recorder, workload_events=workload_events, reporters=reporters)
        return ReconcilerControllers.from_config(
            config, client=process.client, events=events, workers=args.workers
        )

    return run_component(
        "kueue-bridge reconciler", lambda stop: manager.run(stop=stop, controllers=controllers)
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
