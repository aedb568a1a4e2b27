"""``kueue-bridge dev``: a local cluster for development (``make dev``).

Starts a devcluster with the Kueue stand-in and the job runner, installs the CRDs found in the
reference folder beside the repository (``../shared/crds``, or ``$KUEUE_BRIDGE_SHARED_DIR/crds``;
read in place, never copied), writes ``.dev/kubeconfig`` and keeps objects in ``.dev/data`` across
restarts. Components given with ``--with`` (e.g. ``--with reconciler``) are started as
``kueue-bridge <args>`` subprocesses with ``KUBECONFIG`` pointing at the devcluster, and stopped
with it on Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shlex
import signal
import ssl
import sys
from pathlib import Path
from typing import Any

import httpx
import yaml

from devcluster.options import ServerOptions
from devcluster.server import DevClusterServer

__all__ = ["find_crd_files", "install_crds", "main"]

REPO_ROOT = Path(__file__).resolve().parent.parent


def find_crd_files() -> list[Path]:
    explicit = os.environ.get("KUEUE_BRIDGE_SHARED_DIR")
    shared = Path(explicit) if explicit else REPO_ROOT.parent / "shared"
    return sorted((shared / "crds").glob("*/*.yaml")) if (shared / "crds").is_dir() else []


async def install_crds(*, url: str, token: str, ca_file: Path, files: list[Path]) -> int:
    """Create (or leave in place) every CustomResourceDefinition in ``files``; returns how many."""
    installed = 0
    context = ssl.create_default_context(cafile=str(ca_file))
    async with httpx.AsyncClient(
        base_url=url, verify=context, headers={"Authorization": f"Bearer {token}"}, timeout=60
    ) as client:
        for path in files:
            for document in yaml.safe_load_all(path.read_text()):
                if not isinstance(document, dict) or document.get("kind") != "CustomResourceDefinition":
                    continue
                response = await client.post(
                    "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=document
                )
                if response.status_code not in {201, 409}:
                    raise RuntimeError(
                        f"installing {path.name}: {response.status_code} {response.text[:300]}"
                    )
                installed += 1
    return installed


async def _run(args: argparse.Namespace) -> int:
    state = args.state_dir
    options = ServerOptions(
        port=args.port, data_dir=state / "data", cert_dir=state / "pki", kueue_standin=True, job_runner=True
    )
    token_file = state / "token"
    if token_file.exists():
        options.token = token_file.read_text().strip()
    state.mkdir(parents=True, exist_ok=True)
    token_file.write_text(options.token)
    token_file.chmod(0o600)
    server = DevClusterServer(options=options, kubeconfig_path=state / "kubeconfig")
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, stop.set)
    await server.start()
    children: list[asyncio.subprocess.Process] = []
    try:
        count = await install_crds(
            url=server.url, token=options.token, ca_file=server.files.ca_file, files=find_crd_files()
        )
        print(
            f"devcluster at {server.url} ({count} CRDs installed)\n  export KUBECONFIG={server.kubeconfig_path}",
            flush=True,
        )
        env: dict[str, Any] = {**os.environ, "KUBECONFIG": str(server.kubeconfig_path)}
        for component in args.components:
            children.append(
                await asyncio.create_subprocess_exec(
                    sys.executable, "-m", "kueue_bridge.cli", *shlex.split(component), env=env
                )
            )
        await stop.wait()
    finally:
        for child in children:
            if child.returncode is None:
                child.terminate()
        for child in children:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(child.wait(), timeout=10)
        await server.stop()
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kueue-bridge dev", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=6443)
    parser.add_argument("--state-dir", type=Path, default=Path(".dev"), help="kubeconfig, certificates, data")
    parser.add_argument(
        "--with",
        dest="components",
        action="append",
        default=[],
        metavar="COMPONENT ARGS",
        help="also run `kueue-bridge COMPONENT ARGS` against the devcluster (repeatable)",
    )
    args = parser.parse_args(argv)
    return asyncio.run(_run(args))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
