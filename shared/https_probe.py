"""One HTTPS ``GET`` to a server whose certificate must chain to a given CA, the name not checked.

For components that must ask a server they are about to point the API server at (a webhook replica,
by its endpoint address) whether it serves, before registering it: the certificate names the
Service, not the address dialled, so the hostname is not checked; the chain is, because that is what
the API server verifies with the ``caBundle`` registered. The components reach HTTP only through
``shared`` (the import contracts): this is that seam for this one request.

Invariant: **the connection is closed when ``https_get`` returns or raises, cancellation included.**
httpcore closes the TCP stream when a TLS handshake fails with an ``Exception`` but not when it is
cancelled (``CancelledError`` is a ``BaseException``), and nothing else holds the socket then. So
the request runs in a task of its own that a cancellation does not reach: the caller's
cancellation waits for that request to end by itself (``within`` bounds each of its phases) and is
then raised.
"""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import httpx

__all__ = ["https_get"]


async def https_get(
    *, host: str, port: int, ca_file: Path, path: str, within: float
) -> tuple[int, bytes] | None:
    """``GET path`` on ``host:port`` over TLS verified against ``ca_file``: (status, body), or
    ``None`` when the CA cannot be read, the connection or handshake fails, or no answer comes within
    ``within`` seconds."""
    try:
        context = ssl.create_default_context(cafile=str(ca_file))
    except (OSError, ssl.SSLError):
        return None
    context.check_hostname = False
    authority = f"[{host}]" if ":" in host else host
    request = asyncio.create_task(_get(f"https://{authority}:{port}{path}", context=context, within=within))
    try:
        return await asyncio.shield(request)
    except asyncio.CancelledError:
        await asyncio.wait({request})  # module doc: cancelled in a handshake, httpcore closes nothing
        raise


async def _get(url: str, *, context: ssl.SSLContext, within: float) -> tuple[int, bytes] | None:
    try:
        async with httpx.AsyncClient(verify=context, timeout=within, trust_env=False) as client:
            response = await client.get(url)
    except (httpx.HTTPError, OSError, ssl.SSLError):
        return None
    return response.status_code, response.content
