"""``kueue-bridge adapter test --config FILE --kind Kind.version.group OBJECT.yaml [-o yaml|json]``.

Loads the configuration (every problem reported as ``config validate`` does), takes the adapter of
``--kind`` (built-in or declarative; any spelling ``kueue-bridge explain`` accepts), reads one
object from ``OBJECT.yaml`` (``-`` for stdin) and prints what kueue-bridge would do with it (see
:mod:`bridge_tools.adapter.dry_run`) as YAML (default) or JSON.

Exit codes: 0 with a report; 1 when the configuration, the kind, the file or the object has a
problem, one ``<file>: <path>: <message>`` line per problem on stderr; 2 for usage errors. No input
prints a traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, TextIO

import yaml

from bridge_tools.adapter.dry_run import DryRunFailed, dry_run
from bridge_tools.kinds import KindError, resolve_kind
from shared.config import Configuration
from shared.frameworks.base import AdapterConfigError
from shared.frameworks.registry import FrameworkRegistry
from shared.runtime.cli_args import EXIT_USAGE, run_configured_command

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "main", "render_yaml"]

EXIT_OK = 0
EXIT_FAILED = 1
PROG = "kueue-bridge adapter"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="Try a framework adapter without a cluster.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="{test}")
    test = commands.add_parser("test", help="show what kueue-bridge would do with OBJECT.yaml")
    test.add_argument("object", metavar="OBJECT.yaml", help="one object of the kind ('-': stdin)")
    test.add_argument("--config", required=True, help="kueue-bridge configuration file")
    test.add_argument("--kind", required=True, help="the kind, as Kind.version.group (e.g. Job.v1.batch)")
    test.add_argument("-o", "--output", choices=("yaml", "json"), default="yaml")
    return parser


class _Dumper(yaml.SafeDumper):
    """Short collections of scalars on one line (patch operations, requests); prose lists as blocks."""


def _represent_list(dumper: yaml.SafeDumper, data: list[Any]) -> yaml.Node:
    prose = any(isinstance(item, str) and " " in item for item in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=False if prose else None)


_Dumper.add_representer(list, _represent_list)


def render_yaml(report: dict[str, Any]) -> str:
    """The report as ``-o yaml`` prints it (key order kept)."""
    return yaml.dump(
        report, Dumper=_Dumper, sort_keys=False, allow_unicode=True, default_flow_style=None, width=110
    )


class _Unreadable(Exception):
    pass


def _read_object(path: str) -> dict[str, Any]:
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise _Unreadable(f"{path}: cannot read the object: {exc}") from None
    try:
        documents = [document for document in yaml.safe_load_all(text) if document is not None]
    except yaml.YAMLError as exc:
        raise _Unreadable(f"{path}: invalid YAML: {exc}") from None
    if len(documents) != 1:
        raise _Unreadable(f"{path}: expected exactly one object, found {len(documents)}")
    if not isinstance(documents[0], dict):
        raise _Unreadable(f"{path}: the object must be a mapping, not a {type(documents[0]).__name__}")
    return documents[0]


def main(argv: list[str], *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    return run_configured_command(_parser(), argv, _adapter_test, stdout=stdout, stderr=stderr)


def _adapter_test(args: argparse.Namespace, config: Configuration, out: TextIO, err: TextIO) -> int:
    """Print what kueue-bridge would do with the object, or why it cannot say."""
    try:
        registry = FrameworkRegistry.from_managed_kinds(config.managed_kinds())
    except AdapterConfigError as exc:
        print(f"{args.config}: {exc.path}: {exc.message}", file=err)
        return EXIT_FAILED
    try:
        framework = resolve_kind(args.kind, registry)
        obj = _read_object(args.object)
        source = "<stdin>" if args.object == "-" else args.object
        report = dry_run(framework=framework, obj=obj, config=config, source=source)
    except KindError as exc:
        print(f"{args.config}: {exc}", file=err)
        return EXIT_FAILED
    except _Unreadable as exc:
        print(str(exc), file=err)
        return EXIT_FAILED
    except DryRunFailed as exc:
        for line in exc.lines:
            print(line, file=err)
        return EXIT_FAILED
    if args.output == "json":
        out.write(json.dumps(report, indent=2) + "\n")
    else:
        out.write(render_yaml(report))
    return EXIT_OK
