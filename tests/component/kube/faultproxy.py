"""A loopback TCP proxy that can cut every connection: a dropped network, on demand.

Component tests put it between a ``KubeClient`` and the devcluster to prove what happens when a
watch's TCP connection dies (resume from the last version, or relist after 410) without touching
the client's internals. TLS passes through untouched (the serving certificate names 127.0.0.1, so
the proxy's address verifies too). ``kubeconfig_through()`` writes a copy of a kubeconfig whose
server is the proxy.
"""

from __future__ import annotations

import asyncio
import contextlib
from pathlib import Path

import yaml

__all__ = ["FaultProxy"]


class FaultProxy:
    """``async with FaultProxy(target_port=...) as proxy``; ``await proxy.cut()`` drops connections."""

    def __init__(self, *, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target_host = target_host
        self.target_port = target_port
        self.port = 0
        self.connections_cut = 0
        self._server: asyncio.Server | None = None
        self._pumps: set[asyncio.Task[None]] = set()
        self._writers: set[asyncio.StreamWriter] = set()

    async def __aenter__(self) -> FaultProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        assert self._server is not None
        self._server.close()
        await self.cut()
        await self._server.wait_closed()

    @property
    def open_connections(self) -> int:
        return len(self._writers) // 2

    def kubeconfig_through(self, kubeconfig: Path, destination: Path) -> Path:
        document = yaml.safe_load(kubeconfig.read_text())
        for entry in document["clusters"]:
            entry["cluster"]["server"] = f"https://127.0.0.1:{self.port}"
        destination.write_text(yaml.safe_dump(document))
        return destination

    async def cut(self) -> None:
        """Close both sides of every open connection (new connections are still accepted)."""
        writers = list(self._writers)
        self.connections_cut += len(writers) // 2
        for writer in writers:
            writer.close()
        for writer in writers:
            with contextlib.suppress(OSError):
                await writer.wait_closed()
        pumps = list(self._pumps)
        for pump in pumps:
            pump.cancel()
        for pump in pumps:
            with contextlib.suppress(asyncio.CancelledError):
                await pump

    async def _accept(self, client_reader: asyncio.StreamReader, client_writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection(
                self.target_host, self.target_port
            )
        except OSError:
            client_writer.close()
            return
        self._writers.update((client_writer, upstream_writer))
        for reader, writer in ((client_reader, upstream_writer), (upstream_reader, client_writer)):
            task = asyncio.create_task(self._pump(reader, writer))
            self._pumps.add(task)
            task.add_done_callback(self._pumps.discard)

    async def _pump(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            self._writers.discard(writer)
            writer.close()
