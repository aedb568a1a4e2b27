"""Running a devcluster: the asyncio server and a background-thread runner for tests and tools.

:class:`DevClusterServer` serves one :class:`~devcluster.apiserver.Cluster` over HTTPS with
uvicorn (httptools parser, uvloop when available) on a socket bound before start, so the port is known
(and free) before any client connects, and several servers can run in one process: each
:class:`ThreadedDevCluster` runs its own event loop in its own thread, which is what the pytest
fixtures and the MultiKueue tests (one manager, two workers) use.

This module (with :mod:`devcluster.tls`) is where the two subpackages meet: it hosts
:mod:`devcluster.apiserver` and, when :class:`~devcluster.apiserver.ServerOptions` asks for them,
starts :mod:`devcluster.standin`'s add-ons, which it hands only the URL, token, CA file and an
in-process ASGI transport to the app (they are HTTP clients like any other, minus TLS and sockets:
the same request handling at a fraction of the CPU). The API server itself never imports the stand-in.

Stopping ends every open watch first (clients see the stream close, as when an apiserver restarts),
then the controllers and add-ons, then the listener; persistence is closed last.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import tempfile
import threading
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import httpx
import uvicorn

from devcluster.apiserver import Cluster, Controllers, DevClusterApp, ServerOptions
from devcluster.standin import start_addons
from devcluster.tls import ServingFiles, write_kubeconfig, write_serving_files

__all__ = ["DevClusterServer", "ThreadedDevCluster"]

log = logging.getLogger(__name__)


def bind_socket(host: str, port: int) -> socket.socket:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(1024)
    sock.setblocking(False)
    return sock


@dataclass(frozen=True, slots=True)
class Endpoint:
    url: str
    token: str
    ca_file: Path
    kubeconfig_path: Path


class DevClusterServer:
    """One devcluster on the current event loop: ``await start()``, ``await stop()``."""

    def __init__(self, *, options: ServerOptions, kubeconfig_path: Path | None = None) -> None:
        self.options = options
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        if options.cert_dir is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="devcluster-")
            cert_dir = Path(self._tmp.name)
        else:
            cert_dir = options.cert_dir
        self.files: ServingFiles = write_serving_files(cert_dir)
        self.kubeconfig_path = kubeconfig_path or cert_dir / "kubeconfig"
        self.sock = bind_socket(options.host, options.port)
        port = self.sock.getsockname()[1]
        self.url = f"https://{options.host}:{port}"
        self.cluster = Cluster(options=options)
        self.app = DevClusterApp(cluster=self.cluster, server_address=f"{options.host}:{port}")
        self.controllers = Controllers(
            cluster=self.cluster, deleter=self.app.deleter, ca_pem=self.files.ca_file.read_text()
        )
        self._uvicorn: uvicorn.Server | None = None
        self._tasks: list[asyncio.Task[Any]] = []
        self._addons = AsyncExitStack()
        self._stopping: asyncio.Task[None] | None = None
        write_kubeconfig(self.kubeconfig_path, url=self.url, token=options.token, ca_file=self.files.ca_file)

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint(self.url, self.options.token, self.files.ca_file, self.kubeconfig_path)

    async def start(self) -> None:
        config = uvicorn.Config(
            self.app,
            http="httptools",
            lifespan="off",
            access_log=False,
            log_level="warning",
            ssl_certfile=str(self.files.cert_file),
            ssl_keyfile=str(self.files.key_file),
            timeout_keep_alive=300,
            timeout_graceful_shutdown=1,
            server_header=False,
            proxy_headers=False,
            date_header=False,
        )
        self._uvicorn = uvicorn.Server(config)
        self._tasks.append(asyncio.create_task(self.controllers.run(), name="devcluster-controllers"))
        self._tasks.append(
            asyncio.create_task(self._uvicorn.serve(sockets=[self.sock]), name="devcluster-http")
        )
        while not self._uvicorn.started:
            if self._tasks[-1].done():
                self._tasks[-1].result()
                raise RuntimeError("devcluster HTTP server exited during start-up")
            await asyncio.sleep(0.01)
        await self._start_addons()

    def addon_transport(self) -> httpx.AsyncBaseTransport:
        """Requests of in-process add-ons straight to the app: no TLS, no socket, same handling."""
        # the app is an ASGI callable; its Scope is typed as dict, httpx's as MutableMapping
        return httpx.ASGITransport(app=cast(Any, self.app))

    async def _start_addons(self) -> None:
        options = self.options
        if self.cluster.admission is not None and hasattr(self.cluster.admission, "aclose"):
            self._addons.push_async_callback(self.cluster.admission.aclose)
        if not (options.kueue_standin or options.job_runner):
            return
        started = await start_addons(
            url=self.url,
            token=options.token,
            ca_file=str(self.files.ca_file),
            kueue_standin=options.kueue_standin,
            job_runner=options.job_runner,
            clock=options.clock,
            transport=self.addon_transport(),
        )
        self._addons.push_async_callback(started.aclose)

    async def serve_forever(self) -> None:
        await self.start()
        try:
            await asyncio.gather(*self._tasks)
        finally:
            await self.stop()

    async def wait_closed(self) -> None:
        """Until the HTTP server exits (after :meth:`request_stop` or a fatal error)."""
        for task in self._tasks:
            if task.get_name() == "devcluster-http":
                await asyncio.shield(task)

    def request_stop(self) -> None:
        """Begin stopping (a signal handler): the add-ons first, whose watches would otherwise hold
        the HTTP server's graceful shutdown open (and be re-opened when ended), then the server."""
        if self._stopping is None:
            self._stopping = asyncio.get_running_loop().create_task(self._stop_serving())

    async def _stop_serving(self) -> None:
        with contextlib.suppress(Exception):
            await self._addons.aclose()
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True

    async def stop(self) -> None:
        with contextlib.suppress(Exception):
            await self._addons.aclose()
        for table in list(self.cluster.store.tables.values()):
            for watcher in list(table.watchers):
                watcher.close()
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True
        for task in self._tasks:
            if task.get_name() == "devcluster-http":
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(task, timeout=10)
            task.cancel()
        if self._uvicorn is not None:
            # clients that keep connections open past the graceful period (pooled keep-alives)
            for connection in list(self._uvicorn.server_state.connections):
                transport = getattr(connection, "transport", None)
                if transport is not None:
                    transport.abort()
            await asyncio.sleep(0)
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        with contextlib.suppress(OSError):
            self.sock.close()
        self.cluster.close()
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None


def _new_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvloop is a dependency
        return asyncio.new_event_loop()
    loop: asyncio.AbstractEventLoop = uvloop.new_event_loop()
    return loop


class ThreadedDevCluster:
    """A devcluster on its own event loop in a background thread (a context manager).

    Exposes ``url``, ``token``, ``ca_file``, ``kubeconfig_path`` and ``server_options`` as the
    fixtures promise; ``call(fn)`` runs a function on the server's loop (for white-box checks).
    """

    def __init__(self, *, options: ServerOptions | None = None, kubeconfig_path: Path | None = None) -> None:
        self.server_options = options or ServerOptions()
        self._kubeconfig_path = kubeconfig_path
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self.server: DevClusterServer | None = None
        self._stopped: asyncio.Event | None = None

    # the fixture contract
    @property
    def url(self) -> str:
        assert self.server is not None
        return self.server.url

    @property
    def token(self) -> str:
        return self.server_options.token

    @property
    def ca_file(self) -> Path:
        assert self.server is not None
        return self.server.files.ca_file

    @property
    def kubeconfig_path(self) -> Path:
        assert self.server is not None
        return self.server.kubeconfig_path

    def start(self, *, timeout: float = 30.0) -> ThreadedDevCluster:
        self._thread = threading.Thread(target=self._main, name="devcluster", daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            raise TimeoutError("devcluster did not start in time")
        if self._error is not None:
            raise RuntimeError("devcluster failed to start") from self._error
        return self

    def _main(self) -> None:
        loop = self._loop = _new_loop()
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(self._run())
        finally:
            leftovers = [task for task in asyncio.all_tasks(loop) if not task.done()]
            for task in leftovers:
                task.cancel()
            with contextlib.suppress(Exception):
                loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))
                loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def _run(self) -> None:
        try:
            self.server = DevClusterServer(options=self.server_options, kubeconfig_path=self._kubeconfig_path)
            await self.server.start()
        except BaseException as exc:
            self._error = exc
            self._ready.set()
            if self.server is not None:
                await self.server.stop()
            return
        self._stopped = asyncio.Event()
        self._ready.set()
        await self._stopped.wait()
        await self.server.stop()

    def call(self, fn: Any, *args: Any) -> Any:
        """Run ``fn(*args)`` on the server's loop and return its result."""
        assert self._loop is not None

        async def _invoke() -> Any:
            return fn(*args)

        return asyncio.run_coroutine_threadsafe(_invoke(), self._loop).result(timeout=30)

    def stop(self) -> None:
        if self._loop is not None and self._stopped is not None and not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._stopped.set)
        if self._thread is not None:
            self._thread.join(timeout=30)
            self._thread = None

    def __enter__(self) -> ThreadedDevCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
