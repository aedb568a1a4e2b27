"""Health, readiness and metrics endpoints for controller processes (reconciler, MultiKueue).

One small aiohttp server per process: ``/healthz`` (the process is alive), ``/readyz`` (the
component says it is ready: caches synced, or a standby waiting for its lease) and ``/metrics``
(Prometheus text from the process's own ``CollectorRegistry``). aiohttp is already the client's
transport, so this adds no dependency; the webhook serves its own probes on its FastAPI app.

Invariant: probes never touch the API server, so a slow API server cannot make a healthy process
look dead and get it restarted.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

__all__ = ["BindError", "ProbeServer", "bind_listening_socket", "parse_bind_address"]


class BindError(OSError):
    """A server cannot listen where it was told to; the message names the flag or field to change.

    Its text is the message alone (no ``[Errno 98]`` prefix): it is printed as the process's
    one-line start-up error.
    """

    def __str__(self) -> str:
        return str(self.strerror)


def bind_listening_socket(host: str, port: int, *, purpose: str, fix: str) -> socket.socket:
    """A TCP socket bound to ``host:port`` (not yet listening), or :class:`BindError` saying ``fix``."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise _bind_error(exc, host=host, port=port, purpose=purpose, fix=fix) from exc
    sock.set_inheritable(True)
    return sock


def _bind_error(exc: OSError, *, host: str, port: int, purpose: str, fix: str) -> BindError:
    why = "address already in use" if exc.errno == errno.EADDRINUSE else (exc.strerror or str(exc))
    return BindError(exc.errno, f"cannot listen on {host}:{port} for {purpose}: {why}; {fix}")


def parse_bind_address(address: str, *, default_host: str = "0.0.0.0") -> tuple[str, int]:
    """Go-style ``host:port`` (``:8081`` means every interface); port 0 picks a free one."""
    host, _, port = address.rpartition(":")
    if not port.isdigit():
        raise ValueError(f"bind address {address!r}: expected host:port")
    return (host or default_host).strip("[]"), int(port)


class ProbeServer:
    def __init__(
        self, *, registry: CollectorRegistry, ready: Callable[[], bool], host: str, port: int
    ) -> None:
        self._registry = registry
        self._ready = ready
        self._host = host
        self._port = port
        self._runner: web.AppRunner | None = None
        self.port = port

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _readyz(self, request: web.Request) -> web.Response:
        if self._ready():
            return web.Response(text="ok")
        return web.Response(status=503, text="not ready")

    async def _metrics(self, request: web.Request) -> web.Response:
        return web.Response(
            body=generate_latest(self._registry), headers={"Content-Type": CONTENT_TYPE_LATEST}
        )

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self._host, self._port)
        try:
            await site.start()
        except OSError as exc:
            await self._runner.cleanup()
            self._runner = None
            raise _bind_error(
                exc,
                host=self._host,
                port=self._port,
                purpose="probes and metrics",
                fix="give this process another address with --probe-address HOST:PORT "
                "(or health.healthProbeBindAddress in the configuration; port 0 picks a free one)",
            ) from exc
        addresses = self._runner.addresses
        if addresses:
            self.port = int(addresses[0][1])

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
