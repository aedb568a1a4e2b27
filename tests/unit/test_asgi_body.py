"""``shared.asgi_body``: a body under a limit, the two ways past it, and a client gone midway."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

import pytest

from shared.asgi_body import BodyTooLarge, ClientDisconnected, declared_length, read_limited_body


def chunks(*messages: dict[str, Any]) -> Any:
    queue = list(messages)

    async def receive() -> MutableMapping[str, Any]:
        return queue.pop(0)

    return receive


def part(body: bytes, *, more: bool) -> dict[str, Any]:
    return {"type": "http.request", "body": body, "more_body": more}


def test_declared_length_reads_content_length_only_when_numeric() -> None:
    assert declared_length([(b"content-length", b"12")]) == 12
    assert declared_length([(b"content-length", b"x")]) is None
    assert declared_length([]) is None


async def test_chunks_are_joined_up_to_the_limit() -> None:
    receive = chunks(part(b"ab", more=True), part(b"cd", more=False))
    assert await read_limited_body(receive, declared=None, limit=4) == b"abcd"


async def test_a_declared_length_over_the_limit_is_refused_before_reading() -> None:
    with pytest.raises(BodyTooLarge) as refused:
        await read_limited_body(chunks(), declared=5, limit=4)
    assert refused.value.complete is False


@pytest.mark.parametrize(("more", "complete"), [(True, False), (False, True)])
async def test_chunks_past_the_limit_say_whether_anything_is_left(more: bool, complete: bool) -> None:
    with pytest.raises(BodyTooLarge) as refused:
        await read_limited_body(
            chunks(part(b"abc", more=True), part(b"de", more=more)), declared=None, limit=4
        )
    assert refused.value.complete is complete


async def test_a_client_gone_midway_is_reported() -> None:
    with pytest.raises(ClientDisconnected):
        await read_limited_body(
            chunks(part(b"ab", more=True), {"type": "http.disconnect"}), declared=None, limit=4
        )
