"""``kueue-bridge <component> [args...]``.

Each component owns its own argument parser in ``<package>/__main__.py`` exposing
``main(argv: list[str]) -> int``. This dispatcher imports a component only when it is asked for,
so ``kueue-bridge config validate`` never pays for importing FastAPI or the devcluster, and the
component packages stay independent of each other (they never import this module).

Invariant: ``--help`` lists exactly the components this installation can run. The image
(``deploy/Dockerfile``) installs no ``devcluster`` or ``devrun`` package, so there ``devcluster``
and ``dev`` are neither listed nor runnable; a checkout with ``make .venv/.installed`` has them all.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable, Sequence

from kueue_bridge.build_info import version_line

__all__ = ["COMPONENTS", "available_components", "main"]

#: component name -> (module providing ``main(argv)``, one-line help)
COMPONENTS: dict[str, tuple[str, str]] = {
    "config": ("bridge_tools.config.cli", "validate and print a kueue-bridge configuration file"),
    "webhook": (
        "webhook.__main__",
        "run the admission webhook server (or render/register its configurations)",
    ),
    "reconciler": ("reconciler.__main__", "run the job <-> Workload reconciler"),
    "multikueue": (
        "multikueue.__main__",
        "run the MultiKueue controller (dispatches Workloads to worker clusters)",
    ),
    "appwrapper": (
        "appwrapper.__main__",
        "run the AppWrapper controller (creates and follows wrapped resources)",
    ),
    "certs": ("certs.__main__", "generate certificates and inject caBundles"),
    "devcluster": ("devcluster.__main__", "run the embedded development API server"),
    "dev": (
        "devrun.__main__",
        "run the whole system on the devcluster (make dev; --workers N: MultiKueue, make dev-multicluster)",
    ),
    "explain": ("bridge_tools.explain.cli", "say why a job is (not) running: a verdict, then the evidence"),
    "adapter": ("bridge_tools.adapter.cli", "try an adapter on a sample object (adapter test)"),
    "preflight": (
        "bridge_tools.preflight.cli",
        "check a cluster for the misconfigurations that break kueue-bridge and Kueue (read-only)",
    ),
    "manifests": ("bridge_tools.manifests.cli", "render the deploy manifests for a configuration"),
}


def _installed(module_name: str) -> bool:
    """Is the top-level package of ``module_name`` installed (found without importing it)?"""
    return importlib.util.find_spec(module_name.partition(".")[0]) is not None


def available_components() -> dict[str, tuple[str, str]]:
    """The components whose package this installation has, in :data:`COMPONENTS` order."""
    return {name: entry for name, entry in COMPONENTS.items() if _installed(entry[0])}


def _usage() -> str:
    components = available_components()
    lines = ["usage: kueue-bridge <component> [args...]", "       kueue-bridge version", "", "components:"]
    width = max(len(name) for name in components)
    for name, (_, help_text) in components.items():
        lines.append(f"  {name.ljust(width)}  {help_text}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in {"-h", "--help", "help"}:
        print(_usage())
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name in {"version", "--version"}:
        print(version_line())
        return 0
    if name in COMPONENTS and name not in available_components():
        print(
            f"kueue-bridge: component {name!r} is a development tool and is not installed here "
            "(the image holds production components only; run it from a checkout: make dev)",
            file=sys.stderr,
        )
        return 2
    if name not in COMPONENTS:
        print(f"kueue-bridge: unknown component {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module_name, _ = COMPONENTS[name]
    module = importlib.import_module(module_name)
    component_main: Callable[[list[str]], int] = module.main
    return component_main(rest)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
