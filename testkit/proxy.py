"""A TCP relay in front of an API server that a test or benchmark can cut and restore.

Making a worker cluster *unreachable* from the MultiKueue manager without stopping it: its Kueue,
its reconciler and its jobs go on as in a network partition, and :meth:`CuttableProxy.restore`
brings the same worker back with everything it did meanwhile (a copy admitted before the cut is
still admitted). The relay passes bytes through untouched, so TLS is end to end: the kubeconfig
given to the manager names ``https://127.0.0.1:<proxy port>``, which the kit's serving certificate
(SAN ``IP:127.0.0.1``) covers.

``cut`` closes the listening socket and every relayed connection; ``restore`` listens again on the
same port.
"""

from __future__ import annotations

import asyncio
import contextlib

__all__ = ["CuttableProxy"]


class CuttableProxy:
    """A TCP relay to ``target``; ``cut()`` drops every connection and refuses new ones."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self._target = (target_host, target_port)
        self._server: asyncio.Server | None = None
        self._writers: set[asyncio.StreamWriter] = set()
        self.port = 0

    @property
    def is_cut(self) -> bool:
        return self._server is None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self.port = self._server.sockets[0].getsockname()[1]

    async def cut(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
            self._server = None
        for writer in list(self._writers):
            writer.close()
        self._writers.clear()

    async def restore(self) -> None:
        await self.start()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(*self._target)
        except OSError:
            writer.close()
            return
        self._writers |= {writer, up_writer}

        async def pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, asyncio.CancelledError):
                while data := await source.read(65536):
                    sink.write(data)
                    await sink.drain()
            sink.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        self._writers -= {writer, up_writer}
