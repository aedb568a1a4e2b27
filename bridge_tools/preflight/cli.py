"""``kueue-bridge preflight --config FILE [--kubeconfig F] [--all-clusters] [-o text|json]``.

Runs :func:`shared.preflight.run_preflight` against the cluster of the kubeconfig (the MultiKueue
manager, when there is one) and prints one line per finding: ``OK``, ``WARN`` or ``FAIL``, the check
and what it found, and for a warning or a failure the fix on the next line; then a summary.
``--all-clusters`` also runs every single-cluster check on each MultiKueue worker, through the
kubeconfig of its MultiKueueCluster. ``-o json`` prints the same as one object (``findings``,
``summary``, ``failed``).

Exit codes: 0 when nothing failed (warnings allowed), 1 on any failure or when the configuration
or the cluster cannot be read (one ``kueue-bridge preflight: ...`` line), 2 for usage errors.
Read-only: reads, SubjectAccessReviews and server-side dry-run creates (nothing is stored).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import TextIO

from shared.config import DEFAULT_NAMESPACE, Configuration
from shared.kube import KubeClient, KubeError, load_connection
from shared.preflight import PreflightOptions, Report, render_json, render_text, run_preflight
from shared.runtime.cli_args import run_configured_command

__all__ = ["EXIT_FAILED", "EXIT_OK", "main"]

EXIT_OK = 0
EXIT_FAILED = 1
PROG = "kueue-bridge preflight"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Check a cluster for the misconfigurations that break kueue-bridge and Kueue (read-only).",
    )
    parser.add_argument(
        "--config", required=True, help="the kueue-bridge configuration the components run with"
    )
    parser.add_argument("--kubeconfig", help="kubeconfig (default: $KUBECONFIG, then ~/.kube/config)")
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")
    parser.add_argument(
        "--all-clusters",
        action="store_true",
        help="also check every MultiKueue worker cluster itself (through its MultiKueueCluster kubeconfig)",
    )
    parser.add_argument(
        "--kueue-namespace", default=DEFAULT_NAMESPACE, help="where Kueue runs (default: kueue-system)"
    )
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")
    return parser


async def _run(args: argparse.Namespace, config: Configuration) -> Report:
    connection = load_connection(kubeconfig=args.kubeconfig, context=args.context)
    options = PreflightOptions(kueue_namespace=args.kueue_namespace, all_clusters=args.all_clusters)
    async with KubeClient.from_connection(connection) as client:
        await client.mapper.server_groups()  # an unreachable cluster is one error line, not N findings
        return await run_preflight(client, config, options=options)


def main(argv: list[str], *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    return run_configured_command(_parser(), argv, _preflight, stdout=stdout, stderr=stderr)


def _preflight(args: argparse.Namespace, config: Configuration, out: TextIO, err: TextIO) -> int:
    """Print the findings; failed when one of them is an error."""
    try:
        report = asyncio.run(_run(args, config))
    except KubeError as exc:
        print(f"{PROG}: cannot read the cluster: {exc}", file=err)
        return EXIT_FAILED
    except (ValueError, OSError) as exc:  # an unreadable kubeconfig
        print(f"{PROG}: {exc}", file=err)
        return EXIT_FAILED
    if args.output == "json":
        out.write(json.dumps(render_json(report), indent=2) + "\n")
    else:
        out.write(render_text(report.findings, summary=report.summary()))
    return EXIT_FAILED if report.failed else EXIT_OK
