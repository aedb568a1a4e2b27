"""The components of ``kueue-bridge dev`` as child processes: start, health-check, stop, register.

The webhook and the reconciler run exactly as in production, as ``kueue-bridge webhook ...`` and
``kueue-bridge reconciler ...`` subprocesses (the dev runner never imports them: the import
contracts keep ``devrun`` and the components apart), each writing to its own log file. Rules:

* A component counts as started only once its health endpoint answers 200; if the process exits
  first, start-up fails with the tail of its log, never with a bare timeout.
* Children run in their own session so a terminal's Ctrl-C reaches only the runner, which then
  stops them in order (reconciler, webhook, devcluster): SIGTERM, a grace period, then SIGKILL.
  No child outlives the runner's normal exit.
* The webhook configurations are rendered by ``kueue-bridge webhook manifests --url`` (so their
  rules are the webhook's own) and registered with the CA of ``.dev/certs`` as ``caBundle``,
  replacing any left in ``.dev/data`` by an earlier run (which pointed at another port).
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import signal
import socket
import ssl
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from certs import generate_ca, issue_serving_cert, write_cert_dir
from shared.kube import AlreadyExists, GroupVersionKind, KubeClient

__all__ = [
    "ComponentError",
    "ComponentProcess",
    "free_port",
    "generate_certs",
    "register_webhooks",
    "render_webhook_manifests",
]

_KINDS = {
    "MutatingWebhookConfiguration": GroupVersionKind(
        "admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration"
    ),
    "ValidatingWebhookConfiguration": GroupVersionKind(
        "admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration"
    ),
}


class ComponentError(RuntimeError):
    """A component failed to start or stopped unexpectedly (the message ends with its log tail)."""


_HANDED_OUT: set[int] = set()
"""Every port :func:`free_port` has returned in this process.

The port is released before the child binds it, so the kernel may offer it again to the next
caller: three clusters started together once gave two of their webhooks the same port.
"""


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on right now and never returned before by this process (loopback only).

    The child binds it a moment later; remembering what was handed out keeps two children that start
    together (``kueue-bridge dev --workers``) from being offered the same port in between.
    """
    for _ in range(64):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind((host, 0))
            port: int = sock.getsockname()[1]
        if port not in _HANDED_OUT:
            _HANDED_OUT.add(port)
            return port
    raise ComponentError(f"no free port on {host}: 64 tries returned ports already handed out")


def generate_certs(cert_dir: Path) -> bytes:
    """A fresh CA and a serving certificate for 127.0.0.1/localhost in ``cert_dir``; the CA PEM."""
    ca = generate_ca(common_name="kueue-bridge-dev-ca")
    pair = issue_serving_cert(ca=ca, dns_names=["localhost"], ip_addresses=["127.0.0.1"])
    write_cert_dir(cert_dir, serving=pair, ca_cert_pem=ca.cert_pem)
    return ca.cert_pem


def _tail(path: Path, lines: int = 20) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "(no log)"
    return "\n".join(text.splitlines()[-lines:]) or "(empty log)"


@dataclass
class ComponentProcess:
    """``kueue-bridge <args>`` with stdout/stderr in ``log_path``; a health URL says it is up."""

    name: str
    args: tuple[str, ...]
    log_path: Path
    #: None: no health endpoint; started means still running after a moment
    health_url: str | None = None
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    ca_pem: bytes | None = None
    process: asyncio.subprocess.Process | None = None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.returncode is None

    def describe_exit(self) -> str:
        code = self.process.returncode if self.process is not None else None
        return f"{self.name} exited with code {code}; last lines of {self.log_path}:\n{_tail(self.log_path)}"

    async def start(self, *, within_seconds: float = 60.0) -> None:
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "kueue_bridge.cli",
                *self.args,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=asyncio.subprocess.STDOUT,
                env=dict(self.env),
                start_new_session=True,
            )
        await self._wait_healthy(within_seconds=within_seconds)

    async def _wait_healthy(self, *, within_seconds: float) -> None:
        verify: ssl.SSLContext | bool = False
        if self.ca_pem is not None:
            verify = ssl.create_default_context(cadata=self.ca_pem.decode())
        loop = asyncio.get_running_loop()
        started = loop.time()
        deadline = started + within_seconds
        async with httpx.AsyncClient(verify=verify, timeout=2.0) as http:
            while True:
                if not self.running:
                    raise ComponentError(self.describe_exit())
                if self.health_url is None:
                    if loop.time() > started + 1.0:
                        return
                else:
                    with contextlib.suppress(httpx.HTTPError):
                        if (await http.get(self.health_url)).status_code == 200:
                            return
                if loop.time() > deadline:
                    raise ComponentError(
                        f"{self.name} did not answer {self.health_url} within {within_seconds:.0f}s; "
                        f"last lines of {self.log_path}:\n{_tail(self.log_path)}"
                    )
                await asyncio.sleep(0.1)

    async def stop(self, *, grace: float = 10.0) -> None:
        """SIGTERM, then SIGKILL after ``grace`` seconds; always reaps the child."""
        process = self.process
        if process is None:
            return
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(process.wait(), timeout=grace)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()
        else:
            await process.wait()


async def render_webhook_manifests(*, config: Path, url: str, env: Mapping[str, str]) -> list[dict[str, Any]]:
    """``kueue-bridge webhook manifests --config CONFIG --url URL``, parsed."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kueue_bridge.cli",
        "webhook",
        "manifests",
        "--config",
        str(config),
        "--url",
        url,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=dict(env),
    )
    stdout, stderr = await process.communicate()
    if process.returncode != 0:
        raise ComponentError(
            f"`kueue-bridge webhook manifests` exited with code {process.returncode}:\n"
            f"{stderr.decode(errors='replace')[-2000:]}"
        )
    return [doc for doc in yaml.safe_load_all(stdout) if isinstance(doc, dict)]


async def register_webhooks(
    client: KubeClient, documents: list[dict[str, Any]], *, ca_pem: bytes
) -> list[str]:
    """Create or replace each webhook configuration with ``ca_pem`` as every hook's caBundle."""
    bundle = base64.b64encode(ca_pem).decode()
    registered: list[str] = []
    for document in documents:
        gvk = _KINDS.get(str(document.get("kind")))
        if gvk is None:
            continue
        for hook in document.get("webhooks") or []:
            hook.setdefault("clientConfig", {})["caBundle"] = bundle
        try:
            await client.create(gvk, document)
        except AlreadyExists:
            current = await client.get(gvk, document["metadata"]["name"])
            document["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
            await client.update(gvk, document)
        registered.append(f"{document['kind']}/{document['metadata']['name']}")
    return registered
