"""Reconciler replicas with Lease leader election, and restarts of the API server under them.

* :class:`LeaseSettings` -- the ``leaderElection`` timings the replicas run with;
  :func:`replica_config` writes them into a copy of the bench's configuration.
* :func:`start_replica` -- one ``kueue-bridge reconciler`` process with its own identity, probe port
  and log; :meth:`Replica.kill` is ``kill -9`` (the Lease is not released: a standby waits out
  ``leaseDuration``), :meth:`Replica.stop` is SIGTERM (drain, then release).
* :class:`LogFollower` -- when a line with a given text appears in a log (polled, so the moment is
  this process's monotonic clock, comparable with its own readings).
* :func:`lease_holder` -- who holds a Lease now.
* :func:`restart_kube_apiserver` -- kube-apiserver stopped and started again with **etcd kept
  running**. The kit's ``apiserver.sh restart`` is ``stop`` + ``start`` of both processes (it stops
  etcd too); this stops only the ``kube-apiserver`` of the kit's ``pids`` file, the way the kit's
  ``stop_pid`` does (SIGTERM, SIGKILL after 10 s, the entry forgotten), then runs
  ``apiserver.sh start``, which keeps the etcd that still runs and starts kube-apiserver alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from devrun import ComponentProcess, free_port
from shared.kube import GroupVersionKind, KubeClient, NotFound
from testkit import RealCluster

__all__ = [
    "LEASE_GVK",
    "LeaseSettings",
    "LogFollower",
    "Replica",
    "lease_holder",
    "replica_config",
    "restart_kube_apiserver",
    "start_replica",
]

LEASE_GVK = GroupVersionKind("coordination.k8s.io", "v1", "Lease")
#: the kit's stop_pid: SIGTERM, then SIGKILL after this many seconds
_STOP_GRACE = 10.0


@dataclass(frozen=True)
class LeaseSettings:
    """``leaderElection`` timings in seconds (Kueue's and component-base's defaults: 15/10/2)."""

    duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def config(self) -> dict[str, Any]:
        return {
            "leaderElect": True,
            "leaseDuration": f"{self.duration:g}s",
            "renewDeadline": f"{self.renew_deadline:g}s",
            "retryPeriod": f"{self.retry_period:g}s",
        }

    def describe(self) -> str:
        return (
            f"leaseDuration {self.duration:g} s, renewDeadline {self.renew_deadline:g} s, "
            f"retryPeriod {self.retry_period:g} s"
        )


def replica_config(base: Path, target: Path, *, lease: LeaseSettings) -> Path:
    """``base`` (``bench.harness.components.write_config``'s file) with leader election on."""
    config = yaml.safe_load(base.read_text())
    config["leaderElection"] = lease.config()
    target.write_text(yaml.safe_dump(config, sort_keys=False))
    return target


@dataclass
class Replica:
    identity: str
    process: ComponentProcess
    probe_port: int

    @property
    def metrics_url(self) -> str:
        return f"http://127.0.0.1:{self.probe_port}/metrics"

    @property
    def pid(self) -> int:
        assert self.process.pid is not None
        return self.process.pid

    @property
    def log_path(self) -> Path:
        return self.process.log_path

    async def kill(self) -> None:
        """SIGKILL, as ``kill -9``: no drain, no Lease release; the child is reaped."""
        process = self.process.process
        assert process is not None
        with contextlib.suppress(ProcessLookupError):
            process.send_signal(signal.SIGKILL)
        await process.wait()

    async def stop(self) -> None:
        await self.process.stop()


async def start_replica(
    stack: contextlib.AsyncExitStack,
    *,
    tmp: Path,
    identity: str,
    config: Path,
    kubeconfig: Path,
    env: dict[str, str],
) -> Replica:
    """``kueue-bridge reconciler --identity IDENTITY`` on a free probe port, healthy (a standby is
    healthy too: it answers its probes while it waits for the Lease); stopped when ``stack`` closes."""
    probe_port = free_port()
    process = ComponentProcess(
        name=f"reconciler {identity}",
        args=(
            "reconciler",
            "--config",
            str(config),
            "--kubeconfig",
            str(kubeconfig),
            "--probe-address",
            f"127.0.0.1:{probe_port}",
            "--identity",
            identity,
        ),
        log_path=tmp / f"reconciler-{identity}.log",
        health_url=f"http://127.0.0.1:{probe_port}/healthz",
        env={**env, "KUBECONFIG": str(kubeconfig)},
    )
    stack.push_async_callback(process.stop)
    await process.start()
    return Replica(identity=identity, process=process, probe_port=probe_port)


class LogFollower:
    """Polls a log from where it ends now; :meth:`wait` returns when a line with ``text`` appears
    after that point (the line, and this process's monotonic time it was seen: within ``interval``).
    :meth:`follow` polls in a task from now on, so the moment is right however late it is awaited."""

    def __init__(self, path: Path, *, interval: float = 0.05) -> None:
        self.path = path
        self.interval = interval
        self._offset = path.stat().st_size if path.exists() else 0

    def follow(self, text: str, *, within: float) -> asyncio.Task[tuple[str, float]]:
        """:meth:`wait` in a task started now (cancel it when it is not awaited)."""
        return asyncio.create_task(self.wait(text, within=within))

    async def wait(self, text: str, *, within: float) -> tuple[str, float]:
        deadline = time.monotonic() + within
        buffered = ""
        while True:
            with contextlib.suppress(FileNotFoundError):
                with self.path.open("rb") as log:
                    log.seek(self._offset)
                    chunk = log.read()
                self._offset += len(chunk)
                buffered += chunk.decode(errors="replace")
                *lines, buffered = buffered.split("\n")
                for line in lines:
                    if text in line:
                        return line, time.monotonic()
            if time.monotonic() > deadline:
                raise TimeoutError(f"no line with {text!r} in {self.path} within {within:.0f}s")
            await asyncio.sleep(self.interval)


async def lease_holder(client: KubeClient, *, namespace: str, name: str) -> str | None:
    try:
        lease = await client.get(LEASE_GVK, name, namespace=namespace)
    except NotFound:
        return None
    holder = (lease.get("spec") or {}).get("holderIdentity")
    return str(holder) if holder else None


def _start_time(pid: int) -> str | None:
    """The start time of a live process (``/proc/<pid>/stat``, as the kit records it); None once it is
    gone or a zombie."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return None
    return None if len(fields) < 20 or fields[0] == "Z" else fields[19]


def restart_kube_apiserver(cluster: RealCluster) -> tuple[float, float]:
    """Stop the kit's kube-apiserver (only it: etcd keeps running with its data), start it again
    through ``apiserver.sh start`` (Kueue's CRDs not applied again: they are stored); the seconds
    from the stop signal to the process gone, and from then to ready. Blocking: call it in a thread."""
    pids = cluster.apiserver_state / "pids"
    entries = {line.split()[0]: line.split() for line in pids.read_text().splitlines() if line.strip()}
    name, pid_text, *rest = entries["kube-apiserver"]
    pid = int(pid_text)
    recorded_start = rest[0] if rest else "0"
    started = time.monotonic()
    if recorded_start in ("0", _start_time(pid)):  # that very process, not a reused PID
        os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + _STOP_GRACE
        while _start_time(pid) is not None and time.monotonic() < deadline:
            time.sleep(0.1)
        if _start_time(pid) is not None:
            os.kill(pid, signal.SIGKILL)
            while _start_time(pid) is not None:
                time.sleep(0.05)
    pids.write_text("".join(f"{' '.join(fields)}\n" for key, fields in entries.items() if key != name))
    stopped = time.monotonic()
    cluster.start_apiserver(apply_kueue_crds=False)
    return stopped - started, time.monotonic() - stopped
