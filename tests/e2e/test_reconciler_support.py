"""Shared helpers of the reconciler's end-to-end tests (this module holds no tests itself).

* ``ReconcilerProcess``: ``kueue-bridge reconciler`` as a real subprocess (own interpreter, own
  event loop), with its log captured to a file, probes on a free port read back from that log, and
  ``terminate``/``kill``/``wait`` so every process a test starts is reaped (no ResourceWarning).
* ``write_config``: a configuration file with short leader-election timings (lease 2 s, renew
  1.5 s, retry 0.5 s: valid under component-base's rules, fast enough for failover tests).
* ``new_job``: a minimal queued batch/v1 Job as a user would create it (the server fills in the
  selector and defaults).

Why a subprocess and not the manager in-process: signals, exit codes, Lease release on SIGTERM,
SIGKILL mid-run and the probe server are properties of the process, not of the library.
"""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from shared.kube import GroupVersionKind

__all__ = [
    "JOB",
    "LEASE",
    "LEASE_NAME",
    "NAMESPACE",
    "SYSTEM_NAMESPACE",
    "WORKLOAD",
    "ReconcilerProcess",
    "new_job",
    "running_processes",
    "write_config",
]

JOB = GroupVersionKind("batch", "v1", "Job")
WORKLOAD = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "Workload")
LEASE = GroupVersionKind("coordination.k8s.io", "v1", "Lease")
NAMESPACE = GroupVersionKind("", "v1", "Namespace")
SYSTEM_NAMESPACE = "kueue-system"
LEASE_NAME = "kueue-bridge-reconciler"

#: the start-up log line, in the plain (``port=8081``) or the JSON (``"port": 8081``) format
_PORT_LINE = re.compile(r'probes and metrics listening.*?\bport"?[=:] ?(\d+)')


def write_config(path: Path, *, extra: dict[str, Any] | None = None) -> Path:
    document: dict[str, Any] = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": SYSTEM_NAMESPACE,
        "leaderElection": {"leaseDuration": "2s", "renewDeadline": "1500ms", "retryPeriod": "500ms"},
        **(extra or {}),
    }
    path.write_text(yaml.safe_dump(document))
    return path


def new_job(name: str, *, queue: str = "q", namespace: str = "e2e", parallelism: int = 1) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": namespace, "labels": {"kueue.x-k8s.io/queue-name": queue}},
        "spec": {
            "suspend": True,
            "parallelism": parallelism,
            "completions": parallelism,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [
                        {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "100m"}}}
                    ],
                }
            },
        },
    }


class ReconcilerProcess:
    """One ``kueue-bridge reconciler`` (or another controller ``component``, same flags) subprocess;
    its combined output goes to ``log_path``."""

    def __init__(
        self,
        *,
        config: Path,
        kubeconfig: Path,
        identity: str,
        log_path: Path,
        extra_args: tuple[str, ...] = (),
        component: str = "reconciler",
    ) -> None:
        self.identity = identity
        self.log_path = log_path
        self._args = [
            sys.executable,
            "-m",
            "kueue_bridge.cli",
            component,
            "--config",
            str(config),
            "--kubeconfig",
            str(kubeconfig),
            "--identity",
            identity,
            "--probe-address",
            "127.0.0.1:0",
            *extra_args,
        ]
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> ReconcilerProcess:
        with self.log_path.open("wb") as log:
            self._process = subprocess.Popen(self._args, stdout=log, stderr=subprocess.STDOUT)
        return self

    @property
    def pid(self) -> int:
        assert self._process is not None
        return self._process.pid

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def probe_port(self) -> int | None:
        match = _PORT_LINE.search(self.log())
        return int(match.group(1)) if match else None

    def returncode(self) -> int | None:
        assert self._process is not None
        return self._process.poll()

    def terminate(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.kill()

    def wait(self, timeout: float = 30.0) -> int:
        assert self._process is not None
        return self._process.wait(timeout=timeout)


@contextlib.contextmanager
def running_processes(*processes: ReconcilerProcess) -> Iterator[tuple[ReconcilerProcess, ...]]:
    """Start the processes; on exit kill whatever still runs and reap everything."""
    try:
        for process in processes:
            process.start()
        yield processes
    finally:
        for process in processes:
            process.kill()
        for process in processes:
            with contextlib.suppress(AssertionError):
                process.wait()
