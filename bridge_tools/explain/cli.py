"""``kueue-bridge explain KIND/NAME [-n NS] [--kubeconfig F] [--config F] [-o text|json]``.

Prints why a job is (not) running: the verdict on the first line, then the evidence (see
:mod:`bridge_tools.explain.diagnosis`), then the preflight findings about the job
(:mod:`bridge_tools.explain.preflight`; ``--no-preflight`` skips them). ``KIND`` is any kind the configuration manages, spelled as kubectl
would (``job``, ``jobs.batch``, ``Job.v1.batch``, ``trainingrun``...); without ``--config`` the
configuration is Kueue's default (batch Jobs only). Pass the file the components run with so the
namespace selector, ``manageJobsWithoutQueueName`` and the declarative adapters are theirs.

Without ``-n`` the namespace is the one kubectl would use: the selected kubeconfig context's
``namespace``, in a pod its service account's namespace, else ``default``.

Exit codes: 0 with a verdict (whatever it says), 1 when the object, its kind or the configuration
cannot be found or read, or the API server cannot be reached (one ``kueue-bridge explain: ...``
line on stderr), 2 for usage errors. No input prints a traceback.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from datetime import UTC, datetime
from typing import TextIO

from bridge_tools.explain.cluster_view import ClusterView
from bridge_tools.explain.diagnosis import ExplainSettings, ObjectNotFound, explain
from bridge_tools.explain.preflight import add_preflight_findings
from bridge_tools.explain.verdict import Explanation, render_json, render_text
from bridge_tools.kinds import KindError, parse_object_ref
from shared.config import DEFAULT_NAMESPACE, Configuration, default_config
from shared.kube import KubeClient, KubeError, load_connection
from shared.preflight import PreflightOptions
from shared.runtime.cli_args import EXIT_USAGE, run_configured_command

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "main"]

EXIT_OK = 0
EXIT_FAILED = 1
PROG = "kueue-bridge explain"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Say why a job is (not) running: a verdict line, then the evidence."
    )
    parser.add_argument("object", metavar="KIND/NAME", help="e.g. job/hello, trainingrun/resnet")
    parser.add_argument(
        "-n",
        "--namespace",
        help="the job's namespace (default: the kubeconfig context's namespace, else default, as kubectl)",
    )
    parser.add_argument("--kubeconfig", help="kubeconfig (default: $KUBECONFIG, then ~/.kube/config)")
    parser.add_argument(
        "--config", help="the kueue-bridge configuration the components run with (default: Kueue's defaults)"
    )
    parser.add_argument(
        "--kueue-namespace", default=DEFAULT_NAMESPACE, help="where Kueue runs (default: kueue-system)"
    )
    parser.add_argument(
        "--no-preflight",
        action="store_true",
        help="skip the Preflight section (the checks of kueue-bridge preflight that concern this job)",
    )
    parser.add_argument("-o", "--output", choices=("text", "json"), default="text")
    return parser


async def _explain(args: argparse.Namespace, settings: ExplainSettings) -> Explanation:
    reference = parse_object_ref(args.object, settings.registry)
    connection = load_connection(kubeconfig=args.kubeconfig)
    namespace = args.namespace or connection.namespace
    now = datetime.now(UTC)
    async with KubeClient.from_connection(connection) as client:
        explanation = await explain(
            ClusterView(client),
            settings=settings,
            framework=reference.framework,
            namespace=namespace,
            name=reference.name,
            now=now,
        )
        if not args.no_preflight:
            await add_preflight_findings(
                client,
                explanation,
                config=settings.config,
                framework=reference.framework,
                namespace=namespace,
                options=PreflightOptions(kueue_namespace=args.kueue_namespace),
                now=now,
            )
        return explanation


def _fail(err: TextIO, message: str) -> int:
    print(f"{PROG}: {message}", file=err)
    return EXIT_FAILED


def main(argv: list[str], *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    return run_configured_command(
        _parser(), argv, _explain_command, stdout=stdout, stderr=stderr, default=default_config
    )


def _explain_command(args: argparse.Namespace, config: Configuration, out: TextIO, err: TextIO) -> int:
    """Print the verdict and its evidence."""
    try:
        explanation = asyncio.run(_explain(args, ExplainSettings.from_config(config)))
    except (KindError, ObjectNotFound) as exc:
        return _fail(err, str(exc))
    except KubeError as exc:
        return _fail(err, f"cannot read the cluster: {exc}")
    except (ValueError, OSError) as exc:  # an unreadable kubeconfig
        return _fail(err, str(exc))
    if args.output == "json":
        out.write(json.dumps(render_json(explanation), indent=2) + "\n")
    else:
        out.write(render_text(explanation))
    return EXIT_OK
