"""A leadership term logs ``caches synced`` once every informer has listed, with what it cached.

A restart's cost up to the first reconcile (a new leader after a failover, a cold start at scale) is
read from that line: it must come after the last informer's list, never before, and count the
objects the term cached.
"""

from __future__ import annotations

import asyncio
import logging

import pytest

from shared.kube import FakeClock, GroupVersionKind, Informer
from shared.kube.discovery import ResourceInfo
from shared.runtime.manager import ControllerSet
from tests.polling import eventually
from tests.unit.kube.conftest import make_client
from tests.unit.kube.fakeapi import CONFIGMAP, FakeApi

CM = GroupVersionKind("", "v1", "ConfigMap")
SECRET = GroupVersionKind("", "v1", "Secret")
SECRETS = ResourceInfo(gvk=SECRET, plural="secrets", namespaced=True)


def _object(kind: str, name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": "ns"}}


async def test_a_term_logs_caches_synced_with_the_objects_it_cached(caplog: pytest.LogCaptureFixture) -> None:
    api = FakeApi([CONFIGMAP, SECRETS])
    for name in ("a", "b", "c"):
        api.put_object("configmaps", _object("ConfigMap", name))
    api.put_object("secrets", _object("Secret", "s"))
    client = make_client(api, clock=FakeClock())
    informers = [Informer(client, CM), Informer(client, SECRET)]
    term = ControllerSet(informers=informers, controllers=[])
    caplog.set_level(logging.INFO, logger="shared.runtime.manager")
    running = asyncio.create_task(term.run())
    try:

        async def logged() -> bool:
            return any(record.getMessage() == "caches synced" for record in caplog.records)

        await eventually(logged, what="the caches synced line")
        record = next(record for record in caplog.records if record.getMessage() == "caches synced")
        assert all(informer.has_synced for informer in informers)
        assert record.__dict__["informers"] == 2
        assert record.__dict__["objects"] == 4
        assert record.__dict__["seconds"] >= 0
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        await client.aclose()
