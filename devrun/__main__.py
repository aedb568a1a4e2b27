"""``kueue-bridge dev`` (``make dev``): the whole system on a local devcluster, with a live table.

One command, in this order (each step must succeed before the next; a failure names the step and
shows the tail of the failing component's log):

1. the devcluster on ``--port`` with the Kueue stand-in and the job runner (which also completes our
   ``SampleJob`` CRD); kubeconfig in ``.dev/kubeconfig``, objects kept in ``.dev/data``;
2. CRDs: Kueue's from ``../shared/crds`` when present (else the project's minimal ones) and ours;
3. certificates in ``.dev/certs``; ``.dev/config.yaml`` from ``examples/dev/config.yaml``;
4. ``kueue-bridge webhook`` as a child process, ready (``/readyz``) before its Mutating/Validating
   WebhookConfigurations are registered (url form, caBundle = our CA);
5. ``kueue-bridge reconciler`` as a child process, healthy (``/healthz``), and, when the
   configuration manages AppWrappers, ``kueue-bridge appwrapper`` likewise;
6. ``examples/dev/queues.yaml`` applied, ``examples/dev/jobs.yaml`` (re)created through the API
   server, so the webhook suspends every sample on create;
7. the progress table (:mod:`devrun.progress`) until Ctrl-C/SIGTERM, or, with
   ``--exit-when-done``, until every sample is Finished (exit 0) or ``--timeout`` passes (exit 1).

With ``--workers N`` (``make dev-multicluster``) the same parts make a MultiKueue fleet of N+1
devclusters instead: see :mod:`devrun.multicluster`. The cluster steps live in
:mod:`devrun.cluster`, the live phase in :mod:`devrun.watch`; this module parses the flags, picks
the mode and owns the process life.

Stopping (Ctrl-C, SIGTERM, the end of ``--exit-when-done``, or a failure) always runs the same
teardown, newest first: children (SIGTERM, then SIGKILL after a grace period), add-ons, devclusters.
A stop requested by the user exits 0. The components are never imported here (see the import
contracts): they run as ``kueue-bridge <component>`` subprocesses, as in production.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import shutil
import signal
import sys
from pathlib import Path
from typing import Any, Final, TextIO

from devrun.cluster import Session, relative, start_cluster, start_components, start_extra
from devrun.components import ComponentError
from devrun.multicluster import MANAGER, start_fleet, worker_names
from devrun.samples import EXAMPLES_DIR, apply_queues, creation_note, load_manifests, recreate_jobs
from devrun.watch import Watched, watch
from shared.kube import KubeClient, KubeError

__all__ = ["MAX_WORKERS", "build_parser", "main"]

#: each worker is a devcluster in this process and two more child processes
MAX_WORKERS: Final = 8


async def _apply_samples(session: Session, client: KubeClient, examples: Path) -> list[dict[str, Any]]:
    applied = await apply_queues(client, load_manifests(examples / "queues.yaml"))
    session.say(f"applied         {', '.join(applied)}")
    if session.args.no_samples:
        return []
    created = await recreate_jobs(client, load_manifests(examples / "jobs.yaml"))
    for obj in created:
        session.say(f"created         {creation_note(obj)}")
    return created


def _hints(session: Session) -> None:
    kubeconfig = (session.state / "kubeconfig").resolve()
    logs = relative(session.state / "logs")
    session.say(
        f"\nkubeconfig      {kubeconfig}\n"
        f"  kubectl --kubeconfig {kubeconfig} get workloads -A\n"
        f"  export KUBECONFIG={kubeconfig}\n"
        f"logs            {logs}/webhook.log, {logs}/reconciler.log, {logs}/appwrapper.log, {logs}/devcluster.log\n"
    )


async def _single(session: Session, stack: contextlib.AsyncExitStack) -> Watched:
    """``make dev``: steps 1-6 of the module docstring on one devcluster."""
    args = session.args
    cluster = await start_cluster(session, stack, name="dev", state=session.state, port=args.port)
    config = await start_components(
        session, stack, cluster, source=args.config or EXAMPLES_DIR / "config.yaml"
    )
    for index, extra in enumerate(args.components):
        await start_extra(session, stack, cluster, extra=extra, index=index)
    created = await _apply_samples(session, cluster.client, args.examples or EXAMPLES_DIR)
    _hints(session)
    logs = relative(session.state / "logs")
    return Watched(
        client=cluster.client,
        created=created,
        config=config,
        logs=f"{logs}/reconciler.log, {logs}/webhook.log, {logs}/devcluster.log",
    )


async def _session(session: Session) -> int:
    async with contextlib.AsyncExitStack() as stack:
        try:
            if session.args.workers:
                watched = await start_fleet(session, stack)
            else:
                watched = await _single(session, stack)
            if not watched.created and session.args.exit_when_done:
                return 0
            return await watch(session, watched)
        finally:
            session.say("stopping ...")


def _reset(args: argparse.Namespace, state: Path) -> None:
    """``--reset``: delete the stored objects of every cluster this run starts."""
    folders = [state / name for name in (MANAGER, *worker_names(args.workers))] if args.workers else [state]
    for folder in folders:
        if (folder / "data").exists():
            shutil.rmtree(folder / "data")


async def _run(args: argparse.Namespace, *, out: TextIO) -> int:
    state: Path = args.state_dir.resolve()
    if args.reset:
        _reset(args, state)
    (state / "logs").mkdir(parents=True, exist_ok=True)
    session = Session(args=args, out=out, state=state, components=[])
    task = asyncio.ensure_future(_session(session))
    stopping = False

    def request_stop() -> None:
        nonlocal stopping
        if not stopping:
            stopping = True
            task.cancel()

    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, request_stop)
    try:
        code = await task
    except asyncio.CancelledError:
        if not stopping:
            raise
        code = 0
    except ComponentError as exc:
        print(f"kueue-bridge dev: {exc}", file=sys.stderr)
        code = 1
    except (KubeError, TimeoutError, OSError, ValueError) as exc:
        print(f"kueue-bridge dev: {type(exc).__name__}: {exc}", file=sys.stderr)
        code = 1
    finally:
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(signum)
    session.say(f"stopped (exit {code})")
    return code


def _worker_count(text: str) -> int:
    """``--workers``: a whole number of worker clusters, 1 to :data:`MAX_WORKERS`."""
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a whole number; give how many worker clusters to run (1 to {MAX_WORKERS})"
        ) from None
    if not 1 <= count <= MAX_WORKERS:
        raise argparse.ArgumentTypeError(
            f"{count} worker clusters: give 1 to {MAX_WORKERS} (leave --workers out for one cluster)"
        )
    return count


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kueue-bridge dev", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=6443, help="devcluster HTTPS port (0: any free one)")
    parser.add_argument(
        "--state-dir", type=Path, default=Path(".dev"), help="kubeconfig, certs, config, logs, data (.dev)"
    )
    parser.add_argument(
        "--reset", action="store_true", help="start from an empty cluster (delete STATE/data)"
    )
    parser.add_argument(
        "--workers",
        type=_worker_count,
        default=None,
        metavar="N",
        help="run a MultiKueue fleet: a manager and N worker devclusters (make dev-multicluster: 2)",
    )
    parser.add_argument(
        "--config",
        type=Path,
        default=None,
        help="configuration the components run with (examples/dev/config.yaml; "
        "examples/dev-multicluster/config.yaml with --workers)",
    )
    parser.add_argument(
        "--examples",
        type=Path,
        default=None,
        help="folder with queues.yaml and jobs.yaml (examples/dev; with --workers examples/dev-multicluster, "
        "with manager.yaml, worker.yaml and jobs.yaml)",
    )
    parser.add_argument("--no-samples", action="store_true", help="apply the queues but no sample jobs")
    parser.add_argument(
        "--exit-when-done",
        "--once",
        action="store_true",
        help="exit 0 once every sample job is Finished (1 after --timeout): CI smoke runs",
    )
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds --exit-when-done waits")
    parser.add_argument(
        "--start-timeout", type=float, default=60.0, help="seconds each component gets to become healthy"
    )
    tty = parser.add_mutually_exclusive_group()
    tty.add_argument("--tty", dest="tty", action="store_true", default=None, help="redraw the table in place")
    tty.add_argument("--no-tty", dest="tty", action="store_false", help="append tables (default when piped)")
    parser.add_argument(
        "--with",
        dest="components",
        action="append",
        default=[],
        metavar="COMPONENT ARGS",
        help="also run `kueue-bridge COMPONENT ARGS` with KUBECONFIG set (repeatable; "
        "the manager's with --workers)",
    )
    return parser


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    state: Path = args.state_dir
    (state / "logs").mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(state / "logs" / "devcluster.log")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request drowns everything else
    try:
        return asyncio.run(_run(args, out=sys.stdout))
    except OSError as exc:
        print(f"kueue-bridge dev: {exc}", file=sys.stderr)
        return 1
    finally:
        root.removeHandler(handler)
        handler.close()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
