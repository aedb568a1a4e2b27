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

Stopping (Ctrl-C, SIGTERM, the end of ``--exit-when-done``, or a failure) always runs the same
teardown, newest first: children (SIGTERM, then SIGKILL after a grace period), add-ons, devcluster.
A stop requested by the user exits 0. The components are never imported here (see the import
contracts): they run as ``kueue-bridge <component>`` subprocesses, as in production.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import secrets
import shlex
import shutil
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from bridge_tools.cluster_view import ClusterView
from bridge_tools.explain import ExplainSettings, reason_for
from devcluster.apiserver import ServerOptions
from devcluster.server import DevClusterServer
from devcluster.standin import WORKLOADS, start_addons
from devrun.components import (
    ComponentError,
    ComponentProcess,
    free_port,
    generate_certs,
    register_webhooks,
    render_webhook_manifests,
)
from devrun.progress import JobRow, TableDisplay, job_row
from devrun.samples import (
    EXAMPLES_DIR,
    SAMPLE_KINDS,
    apply_queues,
    crd_files,
    declarative_completions,
    install_crds,
    load_manifests,
    recreate_jobs,
    write_runtime_config,
)
from shared.config import ConfigError, load_config
from shared.frameworks.appwrapper import APPWRAPPER_GVK
from shared.frameworks.base import GroupVersionKind
from shared.kube import KubeClient, KubeError, load_kubeconfig

__all__ = ["build_parser", "main"]

_WORKLOAD_GVK = GroupVersionKind(WORKLOADS.group, WORKLOADS.version, "Workload")
_REFRESH_SECONDS = 0.5


@dataclass
class _Session:
    """Everything the live phase needs (filled in step by step)."""

    args: argparse.Namespace
    out: TextIO
    state: Path
    components: list[ComponentProcess]

    def say(self, message: str) -> None:
        self.out.write(message + "\n")
        self.out.flush()

    async def launch(self, stack: contextlib.AsyncExitStack, process: ComponentProcess) -> None:
        """Start one component; its stop is registered first, so a failed start is cleaned up too."""
        stack.push_async_callback(process.stop)
        self.components.append(process)
        await process.start(within_seconds=self.args.start_timeout)


def _relative(path: Path) -> str:
    with contextlib.suppress(ValueError):
        return str(path.relative_to(Path.cwd()))
    return str(path)


def _server_options(args: argparse.Namespace, state: Path) -> ServerOptions:
    token_file = state / "token"
    token = token_file.read_text().strip() if token_file.exists() else secrets.token_urlsafe(24)
    token_file.write_text(token)
    token_file.chmod(0o600)
    # The add-ons are started by this runner (not by the server) so that the job runner also
    # completes our SampleJob CRD; see _start_cluster.
    return ServerOptions(port=args.port, data_dir=state / "data", cert_dir=state / "pki", token=token)


async def _start_cluster(session: _Session, stack: contextlib.AsyncExitStack) -> KubeClient:
    state = session.state
    port = session.args.port
    try:
        server = DevClusterServer(
            options=_server_options(session.args, state), kubeconfig_path=state / "kubeconfig"
        )
    except OSError as exc:
        raise ComponentError(
            f"the devcluster cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}. "
            "Is another `make dev` running? Stop it, or pick another port: --port 0 takes any free one."
        ) from exc
    stack.push_async_callback(server.stop)
    await server.start()
    addons = await start_addons(
        url=server.url,
        token=server.options.token,
        ca_file=str(server.files.ca_file),
        kueue_standin=True,
        job_runner=True,
        declarative=declarative_completions(),
    )
    stack.push_async_callback(addons.aclose)
    client = KubeClient.from_connection(load_kubeconfig(server.kubeconfig_path))
    stack.push_async_callback(client.aclose)
    session.say(f"devcluster      {server.url}  (Kueue stand-in, job runner; state in {_relative(state)})")
    files, note = crd_files()
    count = await install_crds(client, files)
    session.say(f"CRDs            {count} installed; {note}")
    return client


async def _start_components(session: _Session, stack: contextlib.AsyncExitStack, client: KubeClient) -> None:
    state, args = session.state, session.args
    logs = state / "logs"
    env = {**os.environ, "KUBECONFIG": str(state / "kubeconfig")}
    cert_dir = state / "certs"
    ca_pem = generate_certs(cert_dir)
    session.say(f"certificates    {_relative(cert_dir)} (fresh CA; serving cert for 127.0.0.1, localhost)")
    webhook_port, probe_port = free_port(), free_port()
    config = write_runtime_config(
        source=args.config,
        target=state / "config.yaml",
        webhook_port=webhook_port,
        cert_dir=cert_dir,
        probe_address=f"127.0.0.1:{probe_port}",
    )
    kubeconfig = str(state / "kubeconfig")
    webhook_url = f"https://127.0.0.1:{webhook_port}"
    webhook = ComponentProcess(
        name="webhook",
        args=("webhook", "--config", str(config), "--kubeconfig", kubeconfig, "--cert-dir", str(cert_dir)),
        log_path=logs / "webhook.log",
        health_url=f"{webhook_url}/readyz",
        env=env,
        ca_pem=ca_pem,
    )
    await session.launch(stack, webhook)
    session.say(f"webhook         {webhook_url}  pid {webhook.pid}, log {_relative(webhook.log_path)}, ready")
    documents = await render_webhook_manifests(config=config, url=webhook_url, env=env)
    registered = await register_webhooks(client, documents, ca_pem=ca_pem)
    session.say(f"registered      {', '.join(registered)} (caBundle from {_relative(cert_dir)})")
    reconciler = ComponentProcess(
        name="reconciler",
        args=(
            "reconciler",
            "--config",
            str(config),
            "--kubeconfig",
            kubeconfig,
            "--probe-address",
            f"127.0.0.1:{probe_port}",
        ),
        log_path=logs / "reconciler.log",
        health_url=f"http://127.0.0.1:{probe_port}/healthz",
        env=env,
    )
    await session.launch(stack, reconciler)
    session.say(
        f"reconciler      probes on 127.0.0.1:{probe_port}  pid {reconciler.pid}, "
        f"log {_relative(reconciler.log_path)}, healthy"
    )
    if manages_appwrappers(config):
        appwrapper_port = free_port()
        appwrapper = ComponentProcess(
            name="appwrapper",
            args=(
                "appwrapper",
                "--config",
                str(config),
                "--kubeconfig",
                kubeconfig,
                "--probe-address",
                f"127.0.0.1:{appwrapper_port}",
            ),
            log_path=logs / "appwrapper.log",
            health_url=f"http://127.0.0.1:{appwrapper_port}/healthz",
            env=env,
        )
        await session.launch(stack, appwrapper)
        session.say(
            f"appwrapper      probes on 127.0.0.1:{appwrapper_port}  pid {appwrapper.pid}, "
            f"log {_relative(appwrapper.log_path)}, healthy"
        )
    for index, extra in enumerate(args.components):
        words = shlex.split(extra)
        name = f"{words[0] if words else 'with'}-{index}"
        process = ComponentProcess(
            name=name,
            args=tuple(words),
            log_path=logs / f"{name}.log",
            env=env,
        )
        await session.launch(stack, process)
        session.say(
            f"--with          kueue-bridge {extra}  pid {process.pid}, log {_relative(process.log_path)}"
        )


async def _apply_samples(session: _Session, client: KubeClient) -> list[dict[str, Any]]:
    examples: Path = session.args.examples
    applied = await apply_queues(client, load_manifests(examples / "queues.yaml"))
    session.say(f"applied         {', '.join(applied)}")
    if session.args.no_samples:
        return []
    created = await recreate_jobs(client, load_manifests(examples / "jobs.yaml"))
    for obj in created:
        kind = next((k for k in SAMPLE_KINDS if k.gvk.kind == obj.get("kind")), SAMPLE_KINDS[0])
        value: Any = obj
        for key in kind.suspend_path:
            value = value.get(key) if isinstance(value, dict) else None
        how = (
            "suspended by the webhook"
            if value is True
            else f"NOT suspended ({'.'.join(kind.suspend_path)}={value})"
        )
        meta = obj["metadata"]
        session.say(f"created         {obj['kind']} {meta['namespace']}/{meta['name']}: {how}")
    return created


async def _rows(
    client: KubeClient, created: Sequence[dict[str, Any]], *, settings: ExplainSettings | None
) -> list[JobRow]:
    namespaces = sorted({obj["metadata"]["namespace"] for obj in created})
    live: dict[str, dict[str, Any]] = {}
    workloads: list[dict[str, Any]] = []
    for namespace in namespaces:
        for kind in SAMPLE_KINDS:
            if any(obj.get("kind") == kind.gvk.kind for obj in created):
                for item in (await client.list_all(kind.gvk, namespace=namespace)).items:
                    live[item["metadata"]["uid"]] = item
        workloads.extend((await client.list_all(_WORKLOAD_GVK, namespace=namespace)).items)
    now = datetime.now(UTC)
    view = ClusterView(client)
    rows = []
    for obj in created:
        kind = next(k for k in SAMPLE_KINDS if k.gvk.kind == obj.get("kind"))
        current = live.get(obj["metadata"]["uid"])
        if current is None:
            meta = obj["metadata"]
            rows.append(JobRow(obj["kind"], f"{meta['namespace']}/{meta['name']}", "Deleted", "-", "-", "-"))
            continue
        row = job_row(job=current, suspend_path=kind.suspend_path, workloads=workloads, now=now)
        if settings is not None and not row.finished and row.state != "Running":
            row = replace(row, why=await reason_for(view, settings=settings, job=current, now=now))
        rows.append(row)
    return rows


def _explain_settings(session: _Session) -> ExplainSettings | None:
    """explain's view of the configuration the components run with (the WHY column needs it)."""
    try:
        return ExplainSettings.from_config(load_config(session.state / "config.yaml"))
    except (ConfigError, ValueError):
        return None


def _check_components(session: _Session) -> None:
    for component in session.components:
        if not component.running:
            raise ComponentError(component.describe_exit())


async def _watch(session: _Session, client: KubeClient, created: list[dict[str, Any]]) -> int:
    args = session.args
    display = TableDisplay(out=session.out, tty=args.tty)
    settings = _explain_settings(session)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + args.timeout
    while True:
        _check_components(session)
        rows = await _rows(client, created, settings=settings)
        done = bool(rows) and all(row.finished for row in rows)
        if args.exit_when_done:
            if done:
                display.final(rows, footer=f"all {len(rows)} sample jobs finished")
                return 0
            if loop.time() > deadline:
                logs = _relative(session.state / "logs")
                display.final(
                    rows,
                    footer=f"timed out after {args.timeout:.0f}s waiting for every sample to finish; "
                    f"see {logs}/reconciler.log, {logs}/webhook.log, {logs}/devcluster.log",
                )
                return 1
            display.show(rows)
        else:
            footer = "all sample jobs finished; " if done else ""
            display.show(rows, footer=f"{footer}Ctrl-C stops everything")
        await asyncio.sleep(_REFRESH_SECONDS)


def manages_appwrappers(config: Path) -> bool:
    """Whether the run-time configuration manages AppWrappers (then their controller runs too)."""
    return any(kind.gvk == APPWRAPPER_GVK for kind in load_config(config).managed_kinds())


def _hints(session: _Session) -> None:
    kubeconfig = (session.state / "kubeconfig").resolve()
    logs = _relative(session.state / "logs")
    session.say(
        f"\nkubeconfig      {kubeconfig}\n"
        f"  kubectl --kubeconfig {kubeconfig} get workloads -A\n"
        f"  export KUBECONFIG={kubeconfig}\n"
        f"logs            {logs}/webhook.log, {logs}/reconciler.log, {logs}/appwrapper.log, {logs}/devcluster.log\n"
    )


async def _session(session: _Session) -> int:
    async with contextlib.AsyncExitStack() as stack:
        try:
            client = await _start_cluster(session, stack)
            await _start_components(session, stack, client)
            created = await _apply_samples(session, client)
            _hints(session)
            if not created and session.args.exit_when_done:
                return 0
            return await _watch(session, client, created)
        finally:
            session.say("stopping ...")


async def _run(args: argparse.Namespace, *, out: TextIO) -> int:
    state: Path = args.state_dir.resolve()
    if args.reset and (state / "data").exists():
        shutil.rmtree(state / "data")
    (state / "logs").mkdir(parents=True, exist_ok=True)
    session = _Session(args=args, out=out, state=state, components=[])
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
        "--config",
        type=Path,
        default=EXAMPLES_DIR / "config.yaml",
        help="configuration the components run with",
    )
    parser.add_argument(
        "--examples", type=Path, default=EXAMPLES_DIR, help="folder with queues.yaml and jobs.yaml"
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
        help="also run `kueue-bridge COMPONENT ARGS` with KUBECONFIG set (repeatable)",
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
