"""shared.https_probe: a cancelled probe still closes its connection (the module's invariant)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from certs.authority import generate_ca
from shared.https_probe import https_get


async def test_a_probe_cancelled_in_its_tls_handshake_closes_its_connection(tmp_path: Path) -> None:
    ca_file = tmp_path / "ca.crt"
    ca_file.write_bytes(generate_ca().cert_pem)
    accepted: asyncio.Queue[asyncio.StreamReader] = asyncio.Queue()
    writers: list[asyncio.StreamWriter] = []

    async def never_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.append(writer)
        await accepted.put(reader)

    server = await asyncio.start_server(never_answer, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        probe = asyncio.create_task(
            https_get(host="127.0.0.1", port=port, ca_file=ca_file, path="/readyz", within=0.5)
        )
        reader = await asyncio.wait_for(accepted.get(), timeout=20)
        assert await asyncio.wait_for(reader.read(5), timeout=20)  # the ClientHello: in the handshake
        probe.cancel()
        with pytest.raises(asyncio.CancelledError):
            await probe
        # the probe's side of the connection is closed: the server reads end of stream
        async with asyncio.timeout(20):
            while await reader.read(65536):
                pass
    finally:
        for writer in writers:
            writer.close()
        server.close()
        await server.wait_closed()
