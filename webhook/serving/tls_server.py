"""Run the webhook: uvicorn over TLS with a reloadable certificate, plus background tasks.

``WebhookServer`` is the embeddable unit (tests, benchmark, ``__main__``), serving where its
``Listener`` says (address, certificate folder, how often the certificate is re-read): it owns the
uvicorn server, the certificate reloader and its watcher task, and optional background tasks (cert
rotation, informers). ``await start()`` returns once the socket is listening (the bound port is in ``port``,
so tests may pass port 0); ``await stop()`` shuts everything down and closes the sockets.

uvicorn receives our ``SSLContext`` through ``Config.ssl_context_factory`` (uvicorn >= 0.54; the
supported seam, instead of overriding ``Config.load``), so the reloader's ``load_cert_chain()`` on the
same object takes effect for new handshakes. Signal handling is left to the caller (``__main__``
installs its own), because an embedded server must not steal SIGINT from a test runner.

A ``WebhookApp`` is served with ``webhook.serving.fastpath``'s protocol (``Config(http=...)``): admission
requests are answered in uvicorn's parser callbacks, everything else through the ASGI app.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import Awaitable, Callable, Coroutine, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import uvicorn

from shared.runtime.probes import bind_listening_socket
from webhook.serving.asgi_app import ASGIApp, WebhookApp
from webhook.serving.fastpath import admission_protocol
from webhook.serving.tlsreload import CertificateReloader, new_server_context

__all__ = ["Listener", "WebhookServer"]

log = logging.getLogger(__name__)

#: how often the server's main loop wakes by itself (uvicorn's own loop: every 0.1 s)
_TICK_SECONDS = 1.0


class _EmbeddedServer(uvicorn.Server):
    """uvicorn's server without its signal handlers, whose main loop ticks once a second.

    uvicorn's ``main_loop`` wakes every 0.1 s to refresh the ``Date`` header (once a second) and to
    see ``should_exit``: on an idle webhook those wake-ups were most of its CPU (about 1.5 ms per
    second on the real cluster, ``bench/webhook_real.py``). Here the loop waits for ``request_exit``
    or one second, whichever comes first, and ``on_tick`` refreshes the header at every tick, so
    the header is as fresh as uvicorn keeps it and a stop is seen at once.
    """

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._exit_requested = asyncio.Event()

    def request_exit(self) -> None:
        self.should_exit = True
        self._exit_requested.set()

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield

    async def main_loop(self) -> None:
        counter = 0  # on_tick refreshes the Date header when counter % 10 == 0, i.e. every tick here
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + 10) % 864000
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(_TICK_SECONDS):
                    await self._exit_requested.wait()
            should_exit = await self.on_tick(counter)


@dataclass(frozen=True)
class Listener:
    """Where the webhook listens (``port`` 0: any free port) and the certificate it serves:
    ``cert_dir``'s ``tls.crt``/``tls.key``, checked for a new pair every ``reload_interval`` seconds."""

    cert_dir: Path
    host: str = "0.0.0.0"
    port: int = 9443
    reload_interval: float = 2.0


class WebhookServer:
    def __init__(
        self,
        *,
        app: ASGIApp,
        listener: Listener,
        background: Callable[[asyncio.Event], list[Coroutine[Any, Any, None]]] | None = None,
        access_log: bool = False,
    ) -> None:
        cert_dir = listener.cert_dir
        fast = isinstance(app, WebhookApp) and not access_log  # the access log is written by uvicorn's cycle
        self.reloader = CertificateReloader(
            cert_file=cert_dir / "tls.crt",
            key_file=cert_dir / "tls.key",
            context=new_server_context(http2=fast),  # HTTP/2 is served by the fast path's protocol only
        )
        self._reload_interval = listener.reload_interval
        self._background = background
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._serve_task: asyncio.Task[None] | None = None
        extra: dict[str, Any] = {}
        if fast:
            assert isinstance(app, WebhookApp)
            extra["http"] = admission_protocol(
                routes=app.fast_routes,
                pending_routes=app.pending_routes,
                body_limit=app.body_limit,
                on_connection=app.handler.metrics.connection_opened,
            )
        config = uvicorn.Config(
            app,
            host=listener.host,
            port=listener.port,
            **extra,
            ssl_context_factory=self._ssl_context,
            log_level="warning",
            access_log=access_log,
            lifespan="off",
            timeout_keep_alive=30,
            timeout_graceful_shutdown=5,
        )
        self._server = _EmbeddedServer(config)

    def _ssl_context(self, _config: uvicorn.Config, _default: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
        return self.reloader.context

    @property
    def port(self) -> int:
        for server in self._server.servers:
            for sock in server.sockets:
                return int(sock.getsockname()[1])
        raise RuntimeError("server is not listening")

    async def start(self, *, wait_for_certificate: float = 30.0) -> None:
        """Load certificates (waiting up to ``wait_for_certificate`` s for them), then listen."""
        self._tasks = [
            asyncio.create_task(c) for c in (self._background(self._stop) if self._background else [])
        ]
        deadline = asyncio.get_running_loop().time() + wait_for_certificate
        while not self.reloader.reload_if_changed() and not self.reloader.loaded:
            if asyncio.get_running_loop().time() > deadline:
                await self.stop()
                raise TimeoutError(f"no usable certificate in {self.reloader.cert_file.parent}")
            await asyncio.sleep(0.2)
        self._tasks.append(
            asyncio.create_task(self.reloader.watch(self._stop, interval=self._reload_interval))
        )
        # Bound here, not by uvicorn: uvicorn logs a taken port and calls sys.exit; this raises a
        # BindError that names the configuration fields to change.
        config = self._server.config
        sock = bind_listening_socket(
            config.host,
            config.port,
            purpose="admission requests",
            fix="set another webhook.host/webhook.port in the configuration "
            "(and the same port in the webhook configurations' clientConfig)",
        )
        self._serve_task = asyncio.create_task(self._server.serve(sockets=[sock]))
        while not self._server.started:
            if self._serve_task.done():
                await self._serve_task  # re-raise the start-up error
                raise RuntimeError("uvicorn exited during start-up")
            await asyncio.sleep(0.01)

    async def stop(self) -> None:
        self._stop.set()
        self._server.request_exit()
        if self._serve_task is not None:
            while not self._serve_task.done():
                self._abort_idle_connections()
                await asyncio.wait({self._serve_task}, timeout=0.05)
            await self._serve_task
        await _finish(self._tasks)

    def _abort_idle_connections(self) -> None:
        """Drop kept-alive connections with no request in flight once shutdown has begun.

        uvicorn "closes" an idle connection with ``transport.close()``, which on TLS sends
        close_notify and then waits for the peer's - which a pooling client (kube-apiserver, the
        devcluster) never sends while idle - so every stop would wait out the graceful timeout.
        Requests in flight still finish: only connections between requests are aborted.
        """
        for connection in list(self._server.server_state.connections):
            transport = getattr(connection, "transport", None)
            idle = getattr(connection, "idle", None)
            if idle is not None:
                between_requests = bool(idle())
            else:
                cycle = getattr(connection, "cycle", None)
                between_requests = cycle is None or cycle.response_complete
            if transport is not None and between_requests:
                transport.abort()

    async def serve_until(self, stopped: Awaitable[object], *, wait_for_certificate: float = 30.0) -> None:
        await self.start(wait_for_certificate=wait_for_certificate)
        try:
            await stopped
        finally:
            await self.stop()


async def _finish(tasks: list[asyncio.Task[None]]) -> None:
    for task in tasks:
        if not task.done():
            task.cancel()
    for result in await asyncio.gather(*tasks, return_exceptions=True):
        if isinstance(result, Exception):
            log.warning("background task ended with %r", result)
