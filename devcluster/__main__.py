"""``kueue-bridge devcluster [--port N] [--kubeconfig-out FILE] [--data-dir DIR] ...``.

Serves the devcluster on 127.0.0.1 over HTTPS until SIGINT/SIGTERM and writes a kubeconfig (bearer
token, embedded CA) that kubectl and the ``kubernetes`` client accept. With ``--data-dir`` objects,
CRDs and the resourceVersion counter survive restarts; the serving certificate and the token are
kept there too so an existing kubeconfig stays valid.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import secrets
import signal
import sys
from pathlib import Path

from devcluster.apiserver import ServerOptions
from devcluster.server import DevClusterServer

__all__ = ["build_parser", "main", "options_from_args"]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kueue-bridge devcluster", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument(
        "--port", type=int, default=6443, help="HTTPS port (0 picks a free one; default 6443)"
    )
    parser.add_argument("--kubeconfig-out", type=Path, help="write the kubeconfig here")
    parser.add_argument("--data-dir", type=Path, help="persist objects in SQLite under this directory")
    parser.add_argument("--token", help="admin bearer token (random, or the one kept in --data-dir)")
    parser.add_argument("--watch-history", type=int, default=1000, help="watch events kept per resource")
    parser.add_argument(
        "--bookmark-interval", type=float, default=5.0, help="seconds between watch bookmarks"
    )
    parser.add_argument("--kueue-standin", action="store_true", help="run the Kueue stand-in add-on")
    parser.add_argument("--job-runner", action="store_true", help="run the Job runner add-on")
    parser.add_argument(
        "--webhook-service",
        action="append",
        default=[],
        metavar="NS/NAME=HOST:PORT",
        help="where an admission webhook Service is reachable (repeatable)",
    )
    parser.add_argument("-v", "--verbose", action="store_true")
    return parser


def options_from_args(args: argparse.Namespace) -> ServerOptions:
    token = args.token
    cert_dir = None
    if args.data_dir is not None:
        cert_dir = args.data_dir / "pki"
        token_file = args.data_dir / "token"
        args.data_dir.mkdir(parents=True, exist_ok=True)
        if token is None and token_file.exists():
            token = token_file.read_text().strip()
        token = token or secrets.token_urlsafe(24)
        token_file.write_text(token)
        token_file.chmod(0o600)
    resolver = {}
    for entry in args.webhook_service:
        service, _, address = entry.partition("=")
        resolver[service] = address
    options = ServerOptions(
        host=args.host,
        port=args.port,
        data_dir=args.data_dir,
        cert_dir=cert_dir,
        watch_history_size=args.watch_history,
        bookmark_interval=args.bookmark_interval,
        kueue_standin=args.kueue_standin,
        job_runner=args.job_runner,
        service_resolver=resolver,
    )
    if token:
        options.token = token
    return options


async def _serve(server: DevClusterServer) -> None:
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, server.request_stop)
    await server.start()
    print(f"devcluster serving at {server.url}; kubeconfig: {server.kubeconfig_path}", flush=True)
    try:
        await server.wait_closed()
    finally:
        await server.stop()


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING)
    options = options_from_args(args)
    kubeconfig = args.kubeconfig_out
    if kubeconfig is None and args.data_dir is not None:
        kubeconfig = args.data_dir / "kubeconfig"
    try:
        server = DevClusterServer(options=options, kubeconfig_path=kubeconfig)
    except OSError as exc:
        print(f"kueue-bridge devcluster: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    try:
        import uvloop

        uvloop.run(_serve(server))
    except ImportError:  # pragma: no cover
        asyncio.run(_serve(server))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
