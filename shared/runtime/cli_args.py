"""Command-line parsing shared by the ``kueue-bridge`` commands.

* ``argparse`` exits the process on ``--help`` (0) and on a usage error (2). The commands whose
  ``main(argv)`` is also called in-process (tests, ``kueue_bridge.cli``) turn that into a return
  value; ``parse_or_exit_code`` is the one place that does it.
* Start-up errors a user fixes by changing a flag or a file (a port already in use, a kubeconfig that
  cannot be loaded) end a controller process with one line naming the fix and exit code 1, never a
  traceback (``run_component``); so does a refusal to start next to a second controller of the same
  kind (``shared.preflight``).
* The controller processes (reconciler, multikueue, appwrapper) take the same options
  (``controller_parser``), load the configuration the same way (``load_config_or_report``: every
  error line on stderr, ``None`` for exit code 1) and campaign under the same default identity, so
  a flag or a message means one thing whichever process a user starts.
"""

from __future__ import annotations

import argparse
import asyncio
import socket
import sys
import uuid
from collections.abc import Awaitable, Callable
from typing import Final, TextIO

from shared.config import ConfigError, Configuration, load_config
from shared.kube import ConnectionConfigError, configure_logging
from shared.preflight.run import StartupRefused
from shared.runtime.eventloop import run_until_signalled
from shared.runtime.probes import BindError

__all__ = [
    "EXIT_USAGE",
    "controller_config",
    "controller_parser",
    "default_identity",
    "load_config_or_report",
    "parse_command",
    "parse_or_exit_code",
    "positive_int",
    "run_component",
    "run_configured_command",
]

EXIT_USAGE: Final = 2


def parse_or_exit_code(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace | int:
    """The parsed arguments, or the exit code argparse chose (help printed: 0, usage error: 2)."""
    try:
        return parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE


def positive_int(text: str) -> int:
    """An ``argparse`` type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer, not {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def controller_parser(
    *,
    prog: str,
    description: str,
    kubeconfig_help: str = "kubeconfig (default: $KUBECONFIG, then in-cluster)",
    workers_default: str | None = None,
) -> argparse.ArgumentParser:
    """A parser with the options every controller process takes; callers add their own.

    ``workers_default`` (what ``--workers`` defaults to, in words) adds ``--workers``.
    """
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--config", required=True, help="kueue-bridge configuration file")
    parser.add_argument("--kubeconfig", help=kubeconfig_help)
    parser.add_argument("--identity", help="leader-election identity (default: hostname_uuid)")
    parser.add_argument("--log-format", choices=("text", "json"), default="text")
    parser.add_argument("--probe-address", help="override health.healthProbeBindAddress (host:port)")
    if workers_default is not None:
        parser.add_argument(
            "--workers", type=positive_int, help=f"concurrent reconciles (default: {workers_default})"
        )
    return parser


def controller_config(args: argparse.Namespace) -> Configuration | None:
    """Set up logging as ``--log-format`` says and load ``--config`` (``None``: errors reported)."""
    configure_logging(json=args.log_format == "json")
    return load_config_or_report(args.config)


def parse_command(
    parser: argparse.ArgumentParser, argv: list[str], *, stdout: TextIO | None, stderr: TextIO | None
) -> tuple[argparse.Namespace, TextIO, TextIO] | int:
    """An operator command's arguments and its output streams (``sys``'s unless given), or the exit
    code argparse chose."""
    args = parse_or_exit_code(parser, argv)
    if isinstance(args, int):
        return args
    return args, stdout or sys.stdout, stderr or sys.stderr


def run_configured_command(
    parser: argparse.ArgumentParser,
    argv: list[str],
    command: Callable[[argparse.Namespace, Configuration, TextIO, TextIO], int],
    *,
    stdout: TextIO | None,
    stderr: TextIO | None,
    default: Callable[[], Configuration] | None = None,
) -> int:
    """``main`` of an operator command with ``--config``: ``command(args, config, out, err)``'s exit
    code. The arguments are parsed as ``parse_command`` does and the configuration loaded
    (``default()`` when ``--config`` is not given and there is a default); a parse that ends the
    command gives its exit code, a configuration that does not load exit code 1 after each of its
    errors was written to the command's stderr."""
    parsed = parse_command(parser, argv, stdout=stdout, stderr=stderr)
    if isinstance(parsed, int):
        return parsed
    args, out, err = parsed
    config = (
        default()
        if args.config is None and default is not None
        else load_config_or_report(args.config, stderr=err)
    )
    if config is None:
        return 1
    return command(args, config, out, err)


def load_config_or_report(path: str, *, stderr: TextIO | None = None) -> Configuration | None:
    """The configuration at ``path``, or ``None`` after writing each of its errors to ``stderr``."""
    try:
        return load_config(path)
    except ConfigError as exc:
        for line in exc.lines():
            print(line, file=stderr or sys.stderr)
        return None


def default_identity() -> str:
    """``hostname_uuid``, as controller-runtime's leader election names a candidate."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


def run_component(
    prog: str, start: Callable[[asyncio.Event], Awaitable[None]], *, stderr: TextIO | None = None
) -> int:
    """Run ``start(stop)`` until SIGTERM/SIGINT; 0 after a clean stop, 1 after a start-up error.

    The start-up errors reported as one line (``prog: message``) are the ones the user fixes from
    the outside: the probe address is taken (:class:`BindError` names ``--probe-address``) or the
    connection cannot be loaded (:class:`ConnectionConfigError` names the file). Anything else is a
    bug and keeps its traceback.
    """
    try:
        run_until_signalled(start)
    except (BindError, ConnectionConfigError) as exc:
        print(f"{prog}: {exc}", file=stderr or sys.stderr)
        return 1
    except StartupRefused as refused:  # two controllers for one kind (shared.preflight)
        print(f"{prog}: refusing to start: {refused}", file=stderr or sys.stderr)
        return 1
    return 0
