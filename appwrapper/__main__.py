"""``kueue-bridge appwrapper --config FILE [--kubeconfig FILE]``: AppWrapper's framework controller.

Process life, as the reconciler's (``shared.runtime.manager.ControllerManager``): load and validate the configuration (a bad file stops start-up
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
import sys
from typing import Final

from prometheus_client import CollectorRegistry, Counter

from appwrapper.cluster import EventSinkOnRecorder
from appwrapper.faulttolerance import FaultTolerance
from appwrapper.manager import AppWrapperManager
from shared.config import DEFAULT_RECONCILE_CONCURRENCY, Configuration
from shared.frameworks.builtin_kinds import APPWRAPPER
from shared.runtime.cli_args import controller_config, controller_parser, run_component
from shared.runtime.manager import ControllerManager

__all__ = ["main", "phase_counter"]

COMPONENT: Final = "appwrapper"
#: the operator's event source (``mgr.GetEventRecorderFor("appwrappers")``)
REPORTING_CONTROLLER = "appwrappers"
NOT_CONFIGURED = (
    "workload.codeflare.dev/appwrapper is not a configured framework "
    "(integrations.frameworks or integrations.externalFrameworks): nothing to do"
)


def _parser() -> argparse.ArgumentParser:
    return controller_parser(
        prog="kueue-bridge appwrapper",
        description=__doc__.splitlines()[0],
        workers_default="controller.groupKindConcurrency[AppWrapper.workload.codeflare.dev], "
        f"else {DEFAULT_RECONCILE_CONCURRENCY}",
    )


def phase_counter(registry: CollectorRegistry) -> Counter:
    """``appwrapper_phase_total{namespace, phase}``: the AppWrapper operator's own metric."""
    return Counter(
        "appwrapper_phase_total",
        "The total number of times an appwrapper transitioned to a given phase per namespace.",
        ["namespace", "phase"],
        registry=registry,
    )


def manages_appwrappers(config: Configuration) -> bool:
    return any(kind.gvk == APPWRAPPER.gvk for kind in config.managed_kinds())


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    config = controller_config(args)
    if config is None:
        return 1
    if not manages_appwrappers(config):
        print(f"{args.config}: {NOT_CONFIGURED}", file=sys.stderr)
        return 1
    manager = ControllerManager.for_process(
        args, config=config, component=COMPONENT, event_source=REPORTING_CONTROLLER
    )
    phases = phase_counter(manager.registry)

    def on_phase(*, namespace: str, phase: str) -> None:
        phases.labels(namespace, phase).inc()

    def controllers(process: ControllerManager) -> AppWrapperManager:
        return AppWrapperManager(
            client=process.client,
            events=EventSinkOnRecorder(process.recorder),
            on_phase=on_phase,
            config=FaultTolerance(),
            field_manager=config.kueue_bridge.field_manager,
            workers=args.workers or config.reconcile_concurrency(APPWRAPPER.gvk),
        )

    return run_component(
        "kueue-bridge appwrapper", lambda stop: manager.run(stop=stop, controllers=controllers)
    )


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
