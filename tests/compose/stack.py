"""The repository's ``docker-compose.yaml``, run through the real-cluster kit's podman and Docker Compose v2.

``ComposeStack`` is one run of the file as a user runs it (``compose build``, ``compose up -d``,
``compose cp`` of the host kubeconfig, ``compose down -v``) with three differences that only change
where things come from: the kit's stand-ins answer for the ``registry.k8s.io`` images, the project
name is unique (``-p``) so that nothing of another run or of a developer's own ``kueue-bridge`` project
is touched, and ``KUEUE_BRIDGE_API_PORT`` / ``KUEUE_BRIDGE_IMAGE`` pick a free port and a tag of its
own. The kit's podman service is started on a state directory of its own and stopped afterwards.

Every wait polls with a deadline; when one passes, the error carries the tail of the logs of the
services that were being waited for.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import ssl
import subprocess
import tempfile
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import httpx
import yaml

from devrun import free_port

__all__ = [
    "ENABLING_VARIABLE",
    "TIMINGS",
    "ComposeFailure",
    "ComposeStack",
    "find_kit",
]

REPO = Path(__file__).resolve().parents[2]
COMPOSE_FILE = REPO / "docker-compose.yaml"
#: ``make test-compose`` sets it; without it the tests skip (they need root, podman and minutes)
ENABLING_VARIABLE = "KUEUE_BRIDGE_TEST_COMPOSE"
#: the image tag the tests build: not ``kueue-bridge:dev``, which a developer may be building
TEST_IMAGE = "localhost/kueue-bridge:compose-test"
#: figures of this run, printed at the end of the session (tests/compose/conftest.py)
TIMINGS: dict[str, float] = {}
LOG_TAIL_LINES = 40

T = TypeVar("T")


class ComposeFailure(AssertionError):
    """A step or a wait failed; the message carries the commands' output and the services' logs."""


def find_kit() -> Path | None:
    """``../shared/real-cluster`` (or ``$KUEUE_BRIDGE_SHARED_DIR/real-cluster``) when it has ``containers.sh``."""
    shared = os.environ.get("KUEUE_BRIDGE_SHARED_DIR")
    kit = (Path(shared) if shared else REPO.parent / "shared") / "real-cluster"
    return kit if (kit / "containers.sh").is_file() else None


@dataclass
class ComposeStack:
    kit: Path
    state: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="kb-compose-")))
    project: str = field(default_factory=lambda: f"kbtest{uuid.uuid4().hex[:8]}")
    api_port: int = field(default_factory=free_port)
    service_started: bool = False

    # --- commands ------------------------------------------------------------------------------------
    @property
    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "REALCONTAINERS_STATE": str(self.state),
            "KUEUE_BRIDGE_API_PORT": str(self.api_port),
            "KUEUE_BRIDGE_IMAGE": TEST_IMAGE,
        }

    def containers(self, *args: str, timeout: float = 900, check: bool = True) -> str:
        """``containers.sh ARGS`` in the repository; its stdout (a failure shows stderr too)."""
        argv = [str(self.kit / "containers.sh"), *args]
        try:
            done = subprocess.run(
                argv,
                cwd=REPO,
                env=self.env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise ComposeFailure(f"{' '.join(args)}: no answer within {timeout:.0f}s\n{exc.output}") from exc
        if check and done.returncode != 0:
            output = _tail(done.stdout + done.stderr, 60)
            raise ComposeFailure(f"{' '.join(args)}: exit {done.returncode}\n{output}")
        return done.stdout

    def compose(self, *args: str, timeout: float = 900, check: bool = True) -> str:
        return self.containers(
            "compose", "-p", self.project, "-f", str(COMPOSE_FILE), *args, timeout=timeout, check=check
        )

    def podman(self, *args: str) -> str:
        return self.containers("podman", *args)

    def logs(self, services: Sequence[str]) -> str:
        parts = []
        for service in services:
            output = self.compose("logs", "--no-color", "--tail", str(LOG_TAIL_LINES), service, check=False)
            parts.append(f"--- the last {LOG_TAIL_LINES} log lines of {service}:\n{output}")
        return "\n".join(parts)

    # --- life ---------------------------------------------------------------------------------------
    def prepare(self) -> None:
        """What a fresh machine lacks: podman and its configuration, the base image, the stand-ins."""
        for step in (("setup",), ("base",), ("standins",)):
            self.containers(*step)
        self.containers("service", "start")
        self.service_started = True

    def remove(self) -> None:
        """``compose down -v`` (again, if a test did it), then stop the service this stack started."""
        try:
            self.compose("down", "-v", "--remove-orphans", check=False, timeout=300)
        finally:
            if self.service_started:
                self.containers("service", "stop", check=False, timeout=120)
                self.service_started = False
            shutil.rmtree(self.state, ignore_errors=True)

    def services(self) -> dict[str, dict[str, Any]]:
        """``compose ps -a``: each service's container (State, ExitCode, ID, ...)."""
        output = self.compose("ps", "-a", "--format", "json")
        rows: list[dict[str, Any]] = []
        for line in output.splitlines():
            line = line.strip()
            if line.startswith("["):
                rows.extend(json.loads(line))
            elif line.startswith("{"):
                rows.append(json.loads(line))
        return {row["Service"]: row for row in rows}

    def failing_services(self) -> list[str]:
        """Services with no container, or one that is neither running nor exited with 0."""
        declared = yaml.safe_load(COMPOSE_FILE.read_text())["services"]
        seen = self.services()

        def fine(row: dict[str, Any]) -> bool:
            return row.get("State") == "running" or (
                row.get("State") == "exited" and row.get("ExitCode") == 0
            )

        return [name for name in declared if name not in seen or not fine(seen[name])]

    def eventually(
        self, check: Callable[[], T | None], *, what: str, services: Sequence[str], within_seconds: float
    ) -> T:
        """Poll ``check`` (falsy: not yet) until the deadline; then fail with the services' logs."""
        deadline = time.monotonic() + within_seconds
        while True:
            result = check()
            if result:
                return result
            if time.monotonic() >= deadline:
                raise ComposeFailure(
                    f"timed out after {within_seconds:.0f}s waiting for {what}\n{self.logs(services)}"
                )
            time.sleep(0.2)

    # --- the cluster, as the file's header says to reach it ------------------------------------------
    def host_client(self) -> httpx.Client:
        """An API client from ``host.kubeconfig``, copied out with ``compose cp`` as the header says."""
        target = self.state / "kubeconfig"
        self.compose("cp", "kube-apiserver:/pki/host.kubeconfig", str(target))
        config = yaml.safe_load(target.read_text())
        cluster = config["clusters"][0]["cluster"]
        token = config["users"][0]["user"]["token"]
        assert cluster["server"] == f"https://127.0.0.1:{self.api_port}", cluster["server"]
        context = ssl.create_default_context(
            cadata=base64.b64decode(cluster["certificate-authority-data"]).decode()
        )
        return httpx.Client(
            base_url=cluster["server"],
            verify=context,
            headers={"Authorization": f"Bearer {token}"},
            timeout=10,
        )


def _tail(text: str, lines: int) -> str:
    return "\n".join(text.splitlines()[-lines:])
