"""Reading an ASGI request body under a size limit: the webhook's and the devcluster's servers.

Both refuse a body larger than their limit, whether its ``Content-Length`` says so up front or
its chunks grow past it, without holding more than ``limit`` bytes. What they answer then differs
(the webhook counts it and answers its one-line reason, the devcluster answers
``413 RequestEntityTooLarge`` after draining the rest so the connection stays usable), so this
module only reads and tells them which case they are in:

* :class:`BodyTooLarge`, with ``complete`` saying whether the client has sent all of it (nothing
  left to drain);
* :class:`ClientDisconnected` when the client goes away before the end: there is nobody to answer.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

__all__ = ["BodyTooLarge", "ClientDisconnected", "declared_length", "read_limited_body"]

Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]


class BodyTooLarge(Exception):
    """The body exceeds the limit; ``complete``: the client has sent all of it already."""

    def __init__(self, *, complete: bool) -> None:
        super().__init__("request body too large")
        self.complete = complete


class ClientDisconnected(Exception):
    """The client went away before sending the whole body."""


def declared_length(headers: Iterable[tuple[bytes, bytes]]) -> int | None:
    """The ``Content-Length`` header's value, or ``None`` when absent or not a number."""
    for name, value in headers:
        if name == b"content-length":
            return int(value) if value.isdigit() else None
    return None


async def read_limited_body(receive: Receive, *, declared: int | None, limit: int) -> bytes:
    """The whole body, read chunk by chunk; never more than ``limit`` bytes are kept."""
    if declared is not None and declared > limit:
        raise BodyTooLarge(complete=False)
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnected
        chunk = message.get("body", b"")
        more = message.get("more_body", False)
        size += len(chunk)
        if size > limit:
            raise BodyTooLarge(complete=not more)
        chunks.append(chunk)
        if not more:
            return chunks[0] if len(chunks) == 1 else b"".join(chunks)
