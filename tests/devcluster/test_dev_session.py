"""``make dev`` starts each component through ``Session.launch``: stop registered before start."""

from __future__ import annotations

import argparse
import contextlib
import io
from pathlib import Path
from typing import Any, cast

import pytest

from devrun.cluster import Session as _Session
from devrun.components import ComponentError, ComponentProcess


class _FakeProcess:
    def __init__(self, *, fail: bool = False) -> None:
        self.calls: list[Any] = []
        self.fail = fail

    async def start(self, *, within_seconds: float) -> None:
        self.calls.append(("start", within_seconds))
        if self.fail:
            raise ComponentError("did not become healthy")

    async def stop(self) -> None:
        self.calls.append("stop")


def _session(tmp_path: Path) -> _Session:
    return _Session(
        args=argparse.Namespace(start_timeout=7.5), out=io.StringIO(), state=tmp_path, components=[]
    )


async def test_launch_starts_with_the_timeout_and_stops_on_close(tmp_path: Path) -> None:
    session, fake = _session(tmp_path), _FakeProcess()
    process = cast(ComponentProcess, fake)
    async with contextlib.AsyncExitStack() as stack:
        await session.launch(stack, process)
        assert session.components == [process]
        assert fake.calls == [("start", 7.5)]
    assert fake.calls == [("start", 7.5), "stop"]


async def test_a_failed_start_is_still_stopped(tmp_path: Path) -> None:
    session, fake = _session(tmp_path), _FakeProcess(fail=True)
    with pytest.raises(ComponentError):
        async with contextlib.AsyncExitStack() as stack:
            await session.launch(stack, cast(ComponentProcess, fake))
    assert fake.calls == [("start", 7.5), "stop"]
