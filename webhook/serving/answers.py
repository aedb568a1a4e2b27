"""What an admission route is to the servers that carry it (ASGI, the HTTP/1.1 fast path, HTTP/2).

A route takes the request body and gives ``(HTTP status, response body)``. The synchronous form
answers at once, or ``None`` when its answer must be awaited (AppWrapper's access reviews); the
pending form is that awaited answer. Every server hands an oversized body to the route as
:func:`oversized_body` instead of refusing it itself, so the 400, its one-line reason and its count
are the handler's, the same on every protocol.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

__all__ = ["PendingAnswer", "SyncAnswer", "oversized_body", "received_body"]

SyncAnswer = Callable[[bytes], "tuple[int, bytes] | None"]
"""Body -> (HTTP status, response body), or ``None`` when the answer needs an await."""

PendingAnswer = Callable[[bytes], Awaitable["tuple[int, bytes]"]]
"""Body -> (HTTP status, response body), awaited (the same rules as the synchronous answer)."""


def oversized_body(limit: int) -> bytes:
    """A stand-in for a body over ``limit`` bytes (one byte over, its content never read): the
    server stops buffering at the limit, and the handler answers the stand-in with its own 400."""
    return b" " * (limit + 1)


def received_body(chunks: list[bytes], *, size: int, limit: int) -> bytes:
    """The body a server buffered (``chunks``, kept only up to ``limit``) of ``size`` bytes received,
    as its route takes it: joined, or :func:`oversized_body` when ``size`` is over ``limit``."""
    if size > limit:
        return oversized_body(limit)
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)
