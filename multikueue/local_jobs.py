"""The manager's own jobs of the synced kinds, read from informers (Kueue reads them from its cache).

Kueue's ``wlReconciler`` reads the local job through the manager's cached client and only the
worker's objects through an uncached one. ``LocalJobs`` does the same for every kind MultiKueue has
an adapter for: one informer per kind (``metadata.managedFields`` stripped, like the reconciler's
caches), and ``get`` answers from it.

Invariants:

* **A miss is never an answer.** The informer of a kind whose CRD is not installed (or that our RBAC
  may not list) never syncs: its watch keeps retrying with backoff, and until it has synced every
  read of that kind is a GET, as before. A CRD installed later is picked up when the list first
  succeeds. A synced informer that does not hold the job (created a moment ago, its event not here
  yet) is also answered with a GET, so "not found" always comes from the API server.
* **Read your own writes.** A status write of ours returns the job as the server stored it;
  ``remember`` keeps that object until the informer delivers the same resourceVersion (or a later
  event of the job, or ``REMEMBER_SECONDS`` pass), so the next reconcile does not diff against the
  status it has just replaced and write it a second time.
* Cached objects are shared with the informer: callers never mutate what ``get`` returns (the
  adapters only read it and copy its spec).
* The informers are not part of the manager's sync gate: a kind that cannot be listed must not keep
  MultiKueue from starting (its reads are GETs, see above).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable
from typing import Any, Final

from shared.kube import (
    EventHandler,
    GroupVersionKind,
    Informer,
    KubeClient,
    WatchSettings,
    object_key,
    strip_managed_fields,
)

__all__ = ["REMEMBER_SECONDS", "LocalJobs"]

#: how long a written job stands in for the cached one at most (the watch normally takes milliseconds)
REMEMBER_SECONDS: Final = 10.0

Obj = dict[str, Any]


def _resource_version(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


class LocalJobs:
    def __init__(
        self,
        *,
        client: KubeClient,
        gvks: Iterable[GroupVersionKind] = (),
        watch_settings: WatchSettings | None = None,
    ) -> None:
        self._client = client
        self._clock = client.clock
        self.informers: dict[GroupVersionKind, Informer] = {}
        #: (gvk, namespace/name) -> (written object, written at)
        self._written: dict[tuple[GroupVersionKind, str], tuple[Obj, float]] = {}
        for gvk in gvks:
            informer = Informer(client, gvk, transform=strip_managed_fields, watch_settings=watch_settings)
            informer.add_handler(self._forget_on_event(gvk))
            self.informers[gvk] = informer

    def _forget_on_event(self, gvk: GroupVersionKind) -> EventHandler:
        """Any later event of a remembered job makes the cache at least as new as our write."""

        def seen(obj: Obj) -> None:
            self._written.pop((gvk, object_key(obj)), None)

        return EventHandler(on_add=seen, on_update=lambda old, new: seen(new), on_delete=seen)

    def cached(self, gvk: GroupVersionKind) -> bool:
        informer = self.informers.get(gvk)
        return informer is not None and informer.has_synced

    async def get(self, gvk: GroupVersionKind, name: str, *, namespace: str) -> Obj:
        """The job, from the cache when it can answer, else from the API server (``NotFound``)."""
        key = f"{namespace}/{name}"
        written = self._written.get((gvk, key))
        if written is not None:
            if self._clock.now() - written[1] <= REMEMBER_SECONDS:
                return written[0]
            del self._written[(gvk, key)]
        informer = self.informers.get(gvk)
        if informer is not None and informer.has_synced:
            found = informer.store.get(key)
            if found is not None:
                return found
        return await self.fresh(gvk, name, namespace=namespace)

    async def fresh(self, gvk: GroupVersionKind, name: str, *, namespace: str) -> Obj:
        """A GET, for a decision a stale copy must not make."""
        result: Obj = await self._client.get(gvk, name, namespace=namespace)
        return result

    def remember(self, gvk: GroupVersionKind, written: Obj) -> None:
        """``written`` is what the server returned for our write: newer than the cache until it
        catches up."""
        if not isinstance(written, dict) or not _resource_version(written):
            return
        informer = self.informers.get(gvk)
        if informer is None:
            return
        strip_managed_fields(written)
        key = object_key(written)
        cached = informer.store.get(key)
        if cached is not None and _resource_version(cached) == _resource_version(written):
            return
        self._written[(gvk, key)] = (written, self._clock.now())

    async def run(self) -> None:
        """Run the informers until cancelled (each keeps retrying a kind it cannot list)."""
        tasks = [
            asyncio.create_task(informer.run(), name=f"mk-local-{informer.gvk.kind.lower()}")
            for informer in self.informers.values()
        ]
        try:
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await asyncio.gather(*tasks, return_exceptions=True)
