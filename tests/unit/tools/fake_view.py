"""An in-memory ``ClusterView`` for unit tests of ``explain`` (no API server).

Objects are raw dicts keyed by kind, namespace and name; ``pending`` stands in for Kueue's visibility
API (``None``: not served, as on the devcluster); ``unserved`` lists kinds whose CRD is missing.
"""

from __future__ import annotations

from typing import Any

from bridge_tools.explain.cluster_view import ClusterView
from shared.kube import GroupVersionKind

__all__ = ["FakeView"]

WireDict = dict[str, Any]


class FakeView(ClusterView):
    def __init__(
        self,
        objects: dict[GroupVersionKind, list[WireDict]],
        *,
        pending: dict[str, list[WireDict]] | None = None,
        local_pending: dict[str, list[WireDict]] | None = None,
        unserved: frozenset[GroupVersionKind] = frozenset(),
        events: list[WireDict] = (),  # type: ignore[assignment]
    ) -> None:
        self.objects = objects
        self.pending = pending
        self.local_pending = local_pending
        self.unserved = unserved
        self.events = list(events)

    async def served(self, gvk: GroupVersionKind) -> bool:
        return gvk not in self.unserved

    async def get(self, gvk: GroupVersionKind, name: str, *, namespace: str | None = None) -> WireDict | None:
        for item in self.objects.get(gvk, []):
            metadata = item.get("metadata") or {}
            if metadata.get("name") == name and (namespace is None or metadata.get("namespace") == namespace):
                return item
        return None

    async def items(self, gvk: GroupVersionKind, *, namespace: str | None = None) -> list[WireDict]:
        return [
            item
            for item in self.objects.get(gvk, [])
            if namespace is None or (item.get("metadata") or {}).get("namespace") == namespace
        ]

    async def events_about(self, *, uid: str, namespace: str) -> list[WireDict]:
        return [event for event in self.events if (event.get("involvedObject") or {}).get("uid") == uid]

    async def pending_workloads(
        self, cluster_queue: str, *, offset: int = 0, limit: int = 1000
    ) -> list[WireDict] | None:
        if self.pending is None:
            return None
        return self.pending.get(cluster_queue, [])[offset : offset + limit]

    async def local_queue_pending_workloads(
        self, namespace: str, local_queue: str, *, offset: int = 0, limit: int = 1000
    ) -> list[WireDict] | None:
        if self.local_pending is None:
            return None
        return self.local_pending.get(f"{namespace}/{local_queue}", [])[offset : offset + limit]

    def visibility_problem(self, cluster_queue: str) -> str:
        return "Kueue's visibility API is not served"
