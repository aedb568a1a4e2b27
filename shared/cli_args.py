"""Command-line parsing for the ``kueue-bridge`` commands that return an exit code instead of exiting.

``argparse`` exits the process on ``--help`` (0) and on a usage error (2). The commands whose
``main(argv)`` is also called in-process (tests, ``kueue_bridge.cli``) turn that into a return
value; this is the one place that does it.
"""

from __future__ import annotations

import argparse
from typing import Final

__all__ = ["EXIT_USAGE", "parse_or_exit_code"]

EXIT_USAGE: Final = 2


def parse_or_exit_code(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace | int:
    """The parsed arguments, or the exit code argparse chose (help printed: 0, usage error: 2)."""
    try:
        return parser.parse_args(argv)
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
