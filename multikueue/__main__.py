"""``kueue-bridge multikueue --config FILE [--kubeconfig FILE]``: the MultiKueue controller.

Process life, as ``kueue-bridge reconciler``'s (``shared.runtime.manager.ControllerManager``): load and validate the configuration (a bad file
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
import sys
from typing import Final

from multikueue.manager import ManagerOptions, MultiKueueManager
from shared.runtime.cli_args import controller_config, controller_parser, run_component
from shared.runtime.manager import ControllerManager

__all__ = ["COMPONENT", "main"]

COMPONENT: Final = "multikueue"


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


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    config = controller_config(args)
    if config is None:
        return 1
    options = ManagerOptions()
    if args.kubeconfig_path_prefix:
        options = ManagerOptions(path_prefix=args.kubeconfig_path_prefix)
    manager = ControllerManager.for_process(
        args,
        config=config,
        component=COMPONENT,
        event_source="kueue-bridge-multikueue",
        ready_once_synced=True,
    )

    def controllers(process: ControllerManager) -> MultiKueueManager:
        return MultiKueueManager(
            client=process.client, config=config, options=options, recorder=process.recorder
        )

    return run_component(
        "kueue-bridge multikueue", lambda stop: manager.run(stop=stop, controllers=controllers)
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
