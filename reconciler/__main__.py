"""``kueue-bridge reconciler --config FILE [--kubeconfig FILE]``: the job <-> Workload controller.

Process life: load and validate the configuration (a bad file stops start-up with one line per
error), connect, serve probes and metrics, then campaign for the Lease
``<leaderElection.resourceName>-reconciler``. Only the leader runs informers and workers; a second
replica is a hot standby waiting on the Lease. SIGTERM/SIGINT stop the workers (in-flight reconciles
drain), release the Lease so the standby takes over at once, and exit 0. Losing the Lease stops all
work immediately and the process campaigns again.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
import uuid
from typing import Any

from prometheus_client import CollectorRegistry, Counter

from reconciler.manager import ReconcilerManager
from shared.config import DEFAULT_RECONCILE_CONCURRENCY, ConfigError, Configuration, load_config
from shared.eventloop import run_process_loop
from shared.kube import ClientSettings, KubeClient, KubeMetrics, configure_logging, load_connection
from shared.kube.events import EventRecorder, EventSettings
from shared.kube.leaderelection import LeaderElectionSettings, LeaderElector
from shared.probes import ProbeServer, parse_bind_address

__all__ = ["RecorderSink", "main", "run_reconciler"]

logger = logging.getLogger("reconciler")
COMPONENT = "reconciler"
#: how long a stopping reconciler keeps writing queued events (Kubernetes' default grace is 30 s)
EVENT_FLUSH_SECONDS = 5.0


class RecorderSink:
    """The reconciler's ``EventSink`` on ``shared.kube``'s recorder, counting Workload life events."""

    def __init__(self, recorder: EventRecorder, *, registry: CollectorRegistry) -> None:
        self._recorder = recorder
        self._workloads = Counter(
            "kueue_bridge_reconciler_workload_events_total",
            "Workload life-cycle events recorded on jobs (CreatedWorkload, FinishedWorkload, ...).",
            ["reason"],
            registry=registry,
        )

    def record(self, *, regarding: dict[str, Any], event_type: str, reason: str, message: str) -> None:
        if reason.endswith("Workload"):
            self._workloads.labels(reason).inc()
        self._recorder.event(regarding, type=event_type, reason=reason, note=message)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kueue-bridge reconciler", description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True, help="kueue-bridge configuration file")
    parser.add_argument("--kubeconfig", help="kubeconfig (default: $KUBECONFIG, then in-cluster)")
    parser.add_argument("--identity", help="leader-election identity (default: hostname_uuid)")
    parser.add_argument("--log-format", choices=("text", "json"), default="text")
    parser.add_argument("--probe-address", help="override health.healthProbeBindAddress (host:port)")
    parser.add_argument(
        "--workers",
        type=_positive_int,
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
    leading = asyncio.Event()
    host, port = parse_bind_address(probe_address)
    probes = ProbeServer(registry=registry, ready=lambda: True, host=host, port=port)
    await probes.start()
    logger.info("probes and metrics listening", extra={"port": probes.port})
    async with KubeClient.from_connection(connection, settings=settings, metrics=metrics) as client:
        recorder = EventRecorder(
            client, EventSettings(reporting_controller="kueue-bridge-reconciler", reporting_instance=identity)
        )
        events = RecorderSink(recorder, registry=registry)
        recorder_task = asyncio.create_task(recorder.run(), name="event-recorder")
        election = config.leader_election
        elector = LeaderElector(
            client,
            LeaderElectionSettings(
                lease_name=election.lease_name(COMPONENT),
                lease_namespace=election.resource_namespace or config.namespace,
                identity=identity,
                lease_duration=election.lease_duration.total_seconds(),
                renew_deadline=election.renew_deadline.total_seconds(),
                retry_period=election.retry_period.total_seconds(),
            ),
            metrics=metrics,
        )

        async def lead() -> None:
            leading.set()
            manager = ReconcilerManager.from_config(config, client=client, events=events, workers=workers)
            run = asyncio.create_task(manager.run(), name="reconciler-manager")
            stopped = asyncio.create_task(stop.wait())
            try:
                await asyncio.wait({run, stopped}, return_when=asyncio.FIRST_COMPLETED)
                if stop.is_set():
                    await manager.shutdown(drain_seconds=10.0)
            finally:
                stopped.cancel()
                run.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await run
                leading.clear()

        try:
            while not stop.is_set():
                if election.leader_elect:
                    campaign = asyncio.create_task(elector.run(on_started_leading=lead))
                    stopped = asyncio.create_task(stop.wait())
                    await asyncio.wait({campaign, stopped}, return_when=asyncio.FIRST_COMPLETED)
                    if not campaign.done():
                        if leading.is_set():
                            await campaign  # lead() sees the stop, drains, then the lease is released
                        else:
                            campaign.cancel()
                            with contextlib.suppress(asyncio.CancelledError):
                                await campaign
                    stopped.cancel()
                    if not stop.is_set():
                        logger.warning("lost leadership; campaigning again")
                else:
                    await lead()
        finally:
            try:
                async with asyncio.timeout(EVENT_FLUSH_SECONDS):
                    await recorder.flush()
            except TimeoutError:
                logger.warning(
                    "stopping with events still queued; they are dropped",
                    extra={"events": recorder.drop_pending()},
                )
            recorder_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await recorder_task
            await probes.stop()


def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    configure_logging(json=args.log_format == "json")
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        for line in exc.lines():
            print(line, file=sys.stderr)
        return 1
    identity = args.identity or f"{socket.gethostname()}_{uuid.uuid4()}"
    probe_address = args.probe_address or config.health.health_probe_bind_address

    async def run() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(signum, stop.set)
        await run_reconciler(
            config=config,
            kubeconfig=args.kubeconfig or os.environ.get("KUBECONFIG"),
            identity=identity,
            probe_address=probe_address,
            workers=args.workers,
            stop=stop,
        )

    run_process_loop(run())
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
