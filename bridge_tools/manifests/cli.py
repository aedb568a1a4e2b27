"""``kueue-bridge manifests --config FILE [--part deploy|worker|kueue-config] [--image IMAGE]``.

Prints YAML to stdout, for ``kubectl apply --server-side -f -``:

* ``deploy`` (default): everything that runs kueue-bridge with this configuration on the cluster
  where jobs are created (:func:`bridge_tools.manifests.render.render_manifests`), preceded by a
  comment with the fragment to merge into Kueue's own Configuration;
* ``worker``: what a MultiKueue worker cluster needs for this manager to dispatch to it;
* ``kueue-config``: only that Kueue Configuration fragment, as YAML.

Exit codes: 0; 1 when the configuration cannot be read (its errors on stderr, one per line);
2 for usage errors. Reads no cluster.
"""

from __future__ import annotations

import argparse
from importlib import metadata
from pathlib import Path
from typing import Any, TextIO

import yaml

from bridge_tools.manifests.render import (
    RenderOptions,
    kueue_configuration_fragment,
    kueue_frameworks_to_remove,
    render_manifests,
    render_worker,
)
from shared.component_access import KUEUE_CONFIG_KEY, KUEUE_CONFIG_MAP
from shared.config import DEFAULT_NAMESPACE, Configuration
from shared.runtime.cli_args import run_configured_command

__all__ = ["DEFAULT_IMAGE_REPOSITORY", "default_image", "dump_documents", "kueue_config_comment", "main"]

DEFAULT_IMAGE_REPOSITORY = "kueue-bridge"
PROG = "kueue-bridge manifests"


def default_image() -> str:
    """``kueue-bridge:<this package's version>``: a pinned tag, never ``latest``."""
    return f"{DEFAULT_IMAGE_REPOSITORY}:{metadata.version('kueue-bridge')}"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Render the manifests that deploy kueue-bridge with one configuration."
    )
    parser.add_argument("--config", required=True, help="the kueue-bridge configuration file")
    parser.add_argument("--part", choices=("deploy", "worker", "kueue-config"), default="deploy")
    parser.add_argument("--image", help=f"container image (default: {default_image()})")
    parser.add_argument(
        "--kueue-namespace",
        default=DEFAULT_NAMESPACE,
        help="where Kueue runs (its manager's ServiceAccount and ConfigMap)",
    )
    parser.add_argument("--replicas", type=int, default=2, help="replicas of each Deployment")
    return parser


def kueue_config_comment(config: Configuration, *, kueue_namespace: str) -> str:
    """The fragment for Kueue's Configuration and what to remove, as YAML comment lines."""
    fragment = yaml.safe_dump(kueue_configuration_fragment(config), sort_keys=False).rstrip("\n")
    lines = [
        f"Kueue's own Configuration (ConfigMap {kueue_namespace}/{KUEUE_CONFIG_MAP}, key {KUEUE_CONFIG_KEY})",
        "must hand these kinds to kueue-bridge; merge:",
        *("  " + line for line in fragment.splitlines()),
    ]
    remove = kueue_frameworks_to_remove(config)
    if remove:
        lines += [
            f"and remove {', '.join(remove)} from integrations.frameworks (Kueue reads an empty list",
            "as [batch/job]: keep one framework you do not hand over, e.g. jobset.x-k8s.io/jobset).",
        ]
    lines.append("`kueue-bridge preflight --config FILE` checks it, and everything below, on the cluster.")
    return "".join(f"# {line}\n" for line in lines)


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (the configuration in its ConfigMap) as literal blocks, as people write them."""


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _string)


def dump_documents(documents: list[dict[str, Any]]) -> str:
    """YAML documents separated by ``---``, keys in rendering order."""
    return yaml.dump_all(documents, Dumper=_Dumper, sort_keys=False, width=120)


def main(argv: list[str], *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    return run_configured_command(_parser(), argv, _render, stdout=stdout, stderr=stderr)


def _render(args: argparse.Namespace, config: Configuration, out: TextIO, _: TextIO) -> int:
    """Print the requested part of the manifests."""
    text = Path(args.config).read_text(encoding="utf-8")  # read once more: loading succeeded
    if args.part == "kueue-config":
        out.write(kueue_config_comment(config, kueue_namespace=args.kueue_namespace))
        out.write(yaml.safe_dump(kueue_configuration_fragment(config), sort_keys=False))
        return 0
    if args.part == "worker":
        out.write(dump_documents(render_worker(config)))
        return 0
    options = RenderOptions(
        config_text=text,
        image=args.image or default_image(),
        kueue_namespace=args.kueue_namespace,
        replicas=args.replicas,
    )
    out.write(kueue_config_comment(config, kueue_namespace=args.kueue_namespace))
    out.write(dump_documents(render_manifests(config, options=options)))
    return 0
