"""``kueue-bridge config``: check a configuration file, or print the defaults.

* ``kueue-bridge config validate FILE`` prints the normalised configuration (YAML, camelCase, every
  default filled in, durations in Go syntax) and exits 0. When the file is invalid it prints every
  problem on its own line to stderr as ``<file>: <field.path>: <message>`` (``<file>: <message>``
  for problems with the document as a whole, e.g. a YAML syntax error naming line and column) and
  exits 1.
* ``kueue-bridge config default`` prints the default configuration and exits 0.
* Usage errors exit 2. ``--namespace`` stands in for the service-account namespace Kueue would read.

Invariant: no input makes this command print a traceback; every failure is a message and an exit
code, so it is safe to run in CI and in an init container.
"""

from __future__ import annotations

import argparse
from typing import TextIO

import yaml

from shared.config import (
    DEFAULT_NAMESPACE,
    ConfigError,
    Configuration,
    default_config,
    dump_config,
    load_config,
)
from shared.runtime.cli_args import EXIT_USAGE, parse_command

__all__ = ["EXIT_INVALID", "EXIT_OK", "EXIT_USAGE", "main", "render_config"]

EXIT_OK = 0
EXIT_INVALID = 1


def render_config(config: Configuration) -> str:
    """The configuration as the YAML document ``validate`` and ``default`` print."""
    return yaml.safe_dump(dump_config(config), sort_keys=False, allow_unicode=True, default_flow_style=False)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="kueue-bridge config", description="Validate and print a kueue-bridge configuration file."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="{validate,default}")
    validate = commands.add_parser("validate", help="check FILE and print it with every default filled in")
    validate.add_argument("file", metavar="FILE", help="a config.kueue.x-k8s.io/v1beta2 Configuration")
    default = commands.add_parser("default", help="print the default configuration")
    for command in (validate, default):
        command.add_argument(
            "--namespace",
            default=DEFAULT_NAMESPACE,
            help=f"namespace used when the file sets none (default: {DEFAULT_NAMESPACE})",
        )
    return parser


def main(argv: list[str], *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    parsed = parse_command(_parser(), argv, stdout=stdout, stderr=stderr)
    if isinstance(parsed, int):
        return parsed
    args, out, err = parsed
    try:
        if args.command == "default":
            config = default_config(namespace=args.namespace)
        else:
            config = load_config(args.file, default_namespace=args.namespace)
    except ConfigError as exc:
        for line in exc.lines():
            print(line, file=err)
        return EXIT_INVALID
    out.write(render_config(config))
    return EXIT_OK
