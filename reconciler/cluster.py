"""Binding the reconciler's ports to a real API server (``shared.kube``).

``KubeWriter`` sends every write through ``KubeClient`` (rate-limited, typed errors, retries only
where safe) and translates the client's errors into the port's three meaningful outcomes:
``NotFoundError``, ``ConflictError`` (409 Conflict and AlreadyExists alike: both mean "your view
is stale; requeue") and ``InvalidError`` (422: the server refuses this write; the caller says so in
a Warning event and backs off). ``CachedReader`` answers reads from informer stores and falls back to a live
GET for kinds without an informer (owners met during the ancestor walk), so steady-state reconciles
cost no read round trips.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from reconciler.ports import WORKLOAD_GVK, ConflictError, InvalidError, NotFoundError
from shared.kube import (
    PRIORITY_CLASS_GVK,
    Conflict,
    GroupVersionKind,
    Invalid,
    KubeClient,
    NotFound,
    PatchType,
)
from shared.models.base import WireDict

__all__ = ["CachedReader", "KubeWriter", "ObjectStore", "owner_index_key"]


def owner_index_key(*, namespace: str, group: str, kind: str, name: str) -> str:
    """Index key of Workloads by owner, as Kueue's owner-reference field index (GVK + name)."""
    return f"{namespace}/{group}/{kind}/{name}"


def workload_owner_keys(workload: WireDict) -> list[str]:
    metadata = workload.get("metadata") or {}
    keys = []
    for reference in metadata.get("ownerReferences") or []:
        keys.append(
            owner_index_key(
                namespace=str(metadata.get("namespace") or ""),
                group=GroupVersionKind.of(reference).group,
                kind=str(reference.get("kind", "")),
                name=str(reference.get("name", "")),
            )
        )
    return keys


class ObjectStore(Protocol):
    """The read side of an informer: a synced cache of one kind."""

    def get(self, namespace: str | None, name: str) -> WireDict | None: ...

    def by_index(self, index: str, key: str) -> list[WireDict]: ...

    def list(self) -> list[WireDict]: ...


class _PortErrors:
    """Translate the client's typed errors into the port's outcomes (one place for every write).

    A stateless class, entered as the one instance ``_PORT_ERRORS`` (nested and concurrent uses are
    fine): every write of a pass enters it, and ``@contextmanager``'s generator machinery cost
    several Python-level calls each time."""

    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: object) -> None:
        if isinstance(exc, NotFound):
            raise NotFoundError(str(exc)) from exc
        if isinstance(exc, Conflict):  # AlreadyExists included
            raise ConflictError(str(exc)) from exc
        if isinstance(exc, Invalid):
            fields = tuple(dict.fromkeys(cause.field for cause in exc.causes if cause.field))
            raise InvalidError(exc.message or str(exc), fields=fields) from exc


_PORT_ERRORS = _PortErrors()


class KubeWriter:
    def __init__(self, *, client: KubeClient, field_manager: str) -> None:
        self._client = client
        self._field_manager = field_manager

    async def create(
        self, gvk: GroupVersionKind, namespace: str | None, body: WireDict, *, read_back: bool = True
    ) -> WireDict:
        with _PORT_ERRORS:
            return await self._client.create(
                gvk, body, namespace=namespace, field_manager=self._field_manager, decode=read_back
            )

    async def update(
        self,
        gvk: GroupVersionKind,
        namespace: str | None,
        body: WireDict,
        *,
        subresource: str | None = None,
        read_back: bool = True,
    ) -> WireDict:
        with _PORT_ERRORS:
            return await self._client.update(
                gvk,
                body,
                namespace=namespace,
                subresource=subresource,
                field_manager=self._field_manager,
                decode=read_back,
            )

    async def merge_patch(
        self,
        gvk: GroupVersionKind,
        namespace: str | None,
        name: str,
        patch: WireDict,
        *,
        subresource: str | None = None,
        read_back: bool = True,
    ) -> WireDict:
        with _PORT_ERRORS:
            return await self._client.patch(
                gvk,
                name,
                patch,
                namespace=namespace,
                subresource=subresource,
                field_manager=self._field_manager,
                decode=read_back,
            )

    async def apply_status(
        self,
        gvk: GroupVersionKind,
        namespace: str | None,
        body: WireDict,
        *,
        field_manager: str,
        read_back: bool = True,
    ) -> WireDict:
        """The one write under another manager than the reconciler's own: Kueue's Workload status
        applies name theirs (``kueue-admission``, ``kueue-job-controller-PodsReady``, ...)."""
        with _PORT_ERRORS:
            return await self._client.patch(
                gvk,
                str(body["metadata"]["name"]),
                body,
                namespace=namespace,
                patch_type=PatchType.APPLY,
                subresource="status",
                field_manager=field_manager,
                force=True,
                decode=read_back,
            )

    async def delete(
        self, gvk: GroupVersionKind, namespace: str | None, name: str, *, uid: str | None = None
    ) -> None:
        with _PORT_ERRORS:
            await self._client.delete(
                gvk, name, namespace=namespace, propagation_policy="Background", uid=uid
            )


class CachedReader:
    """Reads from informer stores keyed by (group, kind); live GETs for everything else."""

    def __init__(
        self,
        *,
        client: KubeClient,
        stores: Mapping[tuple[str, str], ObjectStore],
        workload_owner_index: str,
        live_fallback: Callable[[GroupVersionKind], bool] = lambda gvk: True,
    ) -> None:
        self._client = client
        self._stores = stores
        self._workload_owner_index = workload_owner_index
        self._live_fallback = live_fallback

    async def get(self, gvk: GroupVersionKind, namespace: str | None, name: str) -> WireDict | None:
        store = self._stores.get((gvk.group, gvk.kind))
        if store is not None:
            return store.get(namespace, name)
        if not self._live_fallback(gvk):
            return None
        try:
            return await self._client.get(gvk, name, namespace=namespace)
        except NotFound:
            return None

    async def workloads_owned_by(
        self, *, namespace: str, owner_gvk: GroupVersionKind, owner_name: str
    ) -> list[WireDict]:
        store = self._stores[(WORKLOAD_GVK.group, WORKLOAD_GVK.kind)]
        key = owner_index_key(
            namespace=namespace, group=owner_gvk.group, kind=owner_gvk.kind, name=owner_name
        )
        return store.by_index(self._workload_owner_index, key)

    async def list_priority_classes(self) -> list[WireDict]:
        store = self._stores.get((PRIORITY_CLASS_GVK.group, PRIORITY_CLASS_GVK.kind))
        if store is not None:
            return store.list()
        listed = await self._client.list_all(PRIORITY_CLASS_GVK)
        return list(listed.items)
