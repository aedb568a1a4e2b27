"""``kueue-bridge <component> [args...]``.

Each component owns its own argument parser in ``<package>/__main__.py`` exposing
``main(argv: list[str]) -> int``. This dispatcher imports a component only when it is asked for,
so ``kueue-bridge config validate`` never pays for importing FastAPI or the devcluster, and the
component packages stay independent of each other (they never import this module).
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Sequence

__all__ = ["COMPONENTS", "main"]

#: component name -> (module providing ``main(argv)``, one-line help)
COMPONENTS: dict[str, tuple[str, str]] = {
    "config": ("bridge_tools.config.cli", "validate and print a kueue-bridge configuration file"),
    "webhook": ("webhook.__main__", "run the admission webhook server (or render its manifests)"),
    "reconciler": ("reconciler.__main__", "run the job <-> Workload reconciler"),
    "multikueue": ("multikueue.__main__", "run the MultiKueue sync worker"),
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


def _usage() -> str:
    lines = ["usage: kueue-bridge <component> [args...]", "", "components:"]
    width = max(len(name) for name in COMPONENTS)
    for name, (_, help_text) in COMPONENTS.items():
        lines.append(f"  {name.ljust(width)}  {help_text}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in {"-h", "--help", "help"}:
        print(_usage())
        return 0 if args else 2
    name, rest = args[0], args[1:]
    if name not in COMPONENTS:
        print(f"kueue-bridge: unknown component {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module_name, _ = COMPONENTS[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            print(f"kueue-bridge: component {name!r} is not available in this build yet", file=sys.stderr)
            return 2
        raise
    component_main: Callable[[list[str]], int] = module.main
    return component_main(rest)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
