"""``make test-real``: the conformance suite and the real-cluster end-to-end suite on the real thing.

Two stages, each a pytest run of its own:

1. **Conformance** (``tests/devcluster``) against a real kube-apiserver 1.36.2: the cluster named by
   ``KUEUE_BRIDGE_TEST_KUBECONFIG`` when it is set (then that cluster is only read and written
   through the tests, never started or stopped), otherwise one this command starts from the kit
   with only the apiserver (Kueue's webhooks would change what the suite measures).
2. **End to end** (``tests/real``): our components as processes next to the real Kueue manager;
   its fixtures start the clusters they need from the kit below this run's own folder.

Every cluster this command starts lives in one temporary folder; whatever happens (a failed stage,
a crashed test, Ctrl-C, SIGTERM) the ``finally`` sweeps that folder with the kit's ``stop``, which
signals only the PIDs recorded there, then stops any process still naming that folder in its
arguments (our components; the folder's name is unique), then deletes it (``--keep`` keeps it,
logs included). A cluster it did not start is never touched. pytest runs in a process group of its
own, so a Ctrl-C reaches only this command, which then interrupts pytest once, kills its group if
it has not ended after ``INTERRUPT_GRACE`` seconds, and sweeps; a second Ctrl-C during the sweep is
ignored. Exit code: 0 when both stages pass, 1 when a stage fails, 2 when the kit cannot run here
(with the reason), 130 on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any, Final

from testkit.real_cluster import (
    KUEUE_VERSIONS,
    Kit,
    KitError,
    RealCluster,
    find_kit,
    stop_all_below,
    stop_processes_below,
)

__all__ = ["main"]

_REPO_ROOT: Final = Path(__file__).resolve().parent.parent
#: Set for the end-to-end stage: the folder its fixtures start clusters in (tests/real/conftest.py).
ROOT_VARIABLE: Final = "KUEUE_BRIDGE_REAL_ROOT"
VERSIONS_VARIABLE: Final = "KUEUE_BRIDGE_REAL_KUEUE_VERSIONS"
#: seconds pytest gets after an interrupt to stop what it started, before its process group is killed
INTERRUPT_GRACE: Final = 20.0


class _Terminated(Exception):
    """SIGTERM, turned into an exception so that the ``finally`` sweep runs."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise _Terminated


def _say(message: str) -> None:
    print(f"[test-real] {message}", flush=True)


def _pytest(args: Sequence[str], *, env: dict[str, str]) -> int:
    """Run pytest in a process group of its own; on Ctrl-C or SIGTERM, stop it (then re-raise).

    Its own group keeps a terminal's Ctrl-C from reaching pytest and the clusters it started
    half-way: this process decides how they stop. pytest gets one SIGINT (its fixtures' teardown
    stops what they started) and :data:`INTERRUPT_GRACE` seconds; then its whole group is killed.
    Whatever is left is the sweep's (``main``'s ``finally``).
    """
    command = [sys.executable, "-m", "pytest", *args]
    _say(" ".join(["pytest", *args]))
    process = subprocess.Popen(command, cwd=_REPO_ROOT, env=env, start_new_session=True)
    try:
        return process.wait()
    except BaseException:
        _stop_pytest(process)
        raise


def _stop_pytest(process: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=INTERRUPT_GRACE)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def _with_kubectl_on_path(env: dict[str, str], kit: Kit) -> dict[str, str]:
    """Some conformance tests run ``kubectl`` from PATH: the kit's, which the first start installed."""
    return {**env, "PATH": f"{kit.kubectl.parent}{os.pathsep}{env.get('PATH', '')}"}


def _conformance(kit: Kit, root: Path, pytest_args: Sequence[str]) -> int:
    given = os.environ.get("KUEUE_BRIDGE_TEST_KUBECONFIG")
    env = dict(os.environ)
    if given:
        _say(f"conformance: against KUEUE_BRIDGE_TEST_KUBECONFIG={given} (not started or stopped here)")
        if not kit.kubectl.exists():
            _say(f"note: {kit.kubectl} is missing; tests that run kubectl use the one on PATH")
        return _pytest(["tests/devcluster", *pytest_args], env=_with_kubectl_on_path(env, kit))
    # Compaction every 60 s instead of 5 min: the suite checks that a list at a compacted revision
    # is 410 Expired, which a fresh cluster shows only after its first compaction.
    cluster = RealCluster(
        kit=kit,
        name="conformance",
        state=root / "conformance",
        apiserver_args=("--etcd-compaction-interval=60s",),
    )
    started = time.monotonic()
    cluster.start_apiserver()
    _say(f"conformance: kube-apiserver on {cluster.url} ready after {time.monotonic() - started:.0f}s")
    env["KUEUE_BRIDGE_TEST_KUBECONFIG"] = str(cluster.kubeconfig)
    try:
        return _pytest(["tests/devcluster", *pytest_args], env=_with_kubectl_on_path(env, kit))
    finally:
        cluster.stop()


def _end_to_end(kit: Kit, root: Path, versions: Sequence[str], pytest_args: Sequence[str]) -> int:
    env = {
        **os.environ,
        ROOT_VARIABLE: str(root / "e2e"),
        VERSIONS_VARIABLE: ",".join(versions),
        "KUEUE_BRIDGE_SHARED_DIR": str(kit.directory.parent),
    }
    _say(f"end to end: real Kueue {', '.join(versions)}; clusters below {root / 'e2e'}")
    return _pytest(["tests/real", *pytest_args], env=_with_kubectl_on_path(env, kit))


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="make test-real",
        description="Conformance and end-to-end tests on a real kube-apiserver with real Kueue (the kit).",
    )
    parser.add_argument(
        "--stage", choices=("all", "conformance", "e2e"), default="all", help="run only one stage"
    )
    parser.add_argument(
        "--kueue-versions",
        default=os.environ.get(VERSIONS_VARIABLE, ",".join(KUEUE_VERSIONS)),
        help=f"comma list of Kueue versions for the end-to-end stage (default: {','.join(KUEUE_VERSIONS)})",
    )
    parser.add_argument(
        "--keep",
        action="store_true",
        help="keep the run's folder (cluster state, Kueue's and the components' logs) after stopping everything",
    )
    parser.add_argument("pytest_args", nargs="*", help="passed to both pytest runs (after --)")
    return parser.parse_args(argv)


def _sweep(root: Path, *, kit: Kit, keep: bool, restore_sigterm: Any) -> None:
    """Stop every cluster and process below ``root``, then delete it (unless ``keep``).

    Runs to its end: a second Ctrl-C or SIGTERM meanwhile is ignored (an interrupted sweep would
    leave processes behind); the usual handlers come back afterwards.
    """
    sigint = signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    try:
        for failure in stop_all_below(root, kit=kit) + stop_all_below(root / "e2e", kit=kit):
            print(f"make test-real: {failure}", file=sys.stderr)
        for left in stop_processes_below(root):
            print(f"make test-real: stopped a process left behind: {left}", file=sys.stderr)
        if keep:
            _say(f"kept {root} (cluster state and logs)")
        else:
            shutil.rmtree(root, ignore_errors=True)
    finally:
        signal.signal(signal.SIGINT, sigint)
        signal.signal(signal.SIGTERM, restore_sigterm)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(sys.argv[1:] if argv is None else argv)
    try:
        kit = find_kit()
    except KitError as exc:
        print(f"make test-real: {exc}", file=sys.stderr)
        return 2
    versions = [version for version in args.kueue_versions.split(",") if version]
    unknown = [version for version in versions if not (kit.directory / "kueue" / version).is_dir()]
    if unknown:
        print(
            f"make test-real: the kit has no Kueue {', '.join(unknown)} (it ships {', '.join(KUEUE_VERSIONS)}; "
            "build.sh builds others)",
            file=sys.stderr,
        )
        return 2
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    root = Path(tempfile.mkdtemp(prefix="kueue-bridge-test-real-"))
    results: dict[str, int] = {}
    try:
        if args.stage in ("all", "conformance"):
            results["conformance"] = _conformance(kit, root, args.pytest_args)
        if args.stage in ("all", "e2e"):
            results["end to end"] = _end_to_end(kit, root, versions, args.pytest_args)
    except KitError as exc:
        print(f"make test-real: {exc}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, _Terminated):
        print("make test-real: interrupted; stopping the clusters it started", file=sys.stderr)
        return 130
    finally:
        _sweep(root, kit=kit, keep=args.keep, restore_sigterm=previous)
    for stage, code in results.items():
        _say(f"{stage}: {'passed' if code == 0 else f'FAILED (pytest exit code {code})'}")
    return 0 if all(code == 0 for code in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
