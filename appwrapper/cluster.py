"""The phase machine's ports on ``shared.kube``: the API server is the only thing spoken to.

:class:`KubePort` implements :class:`appwrapper.ports.ClusterPort` with a ``KubeClient``:

* component kinds are resolved through the client's REST mapper (discovery); a kind that is not
  served is ``UnknownKindError`` on create (fatal for the AppWrapper) and "not there" for get and
  delete -- no object of it can exist, and deletion must not hang on it (AppWrapper issue #276);
* status writes are JSON merge patches of the status subresource; finalizer writes are merge
  patches carrying ``metadata.resourceVersion`` (optimistic lock: 409 when the object moved on);
* every write names the configured field manager (``kueueBridge.fieldManager``);
* ``get`` and ``list_pods`` read the API server; ``cached_pods`` reads the pod informer's cache,
  indexed by ``<namespace>/<appwrapper>`` from the ``workload.codeflare.dev/appwrapper`` label.

:class:`EventSinkOnRecorder` adapts ``shared.kube``'s non-blocking ``EventRecorder``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from appwrapper.model import APPWRAPPER_LABEL
from shared.frameworks.builtin_kinds import APPWRAPPER
from shared.kube import (
    JOB_GVK,
    POD_GVK,
    EventRecorder,
    GroupVersionKind,
    KubeClient,
    NotFound,
    StoreView,
    UnknownKindError,
)
from shared.models.base import WireDict

__all__ = [
    "APPWRAPPER_INDEX",
    "JOB_GVK",
    "POD_GVK",
    "EventSinkOnRecorder",
    "KubePort",
    "appwrapper_index",
]

#: pod informer index: "<namespace>/<value of workload.codeflare.dev/appwrapper>"
APPWRAPPER_INDEX: Final = "appwrapper"


def appwrapper_index(obj: Mapping[str, Any]) -> list[str]:
    metadata = obj.get("metadata") or {}
    owner = (metadata.get("labels") or {}).get(APPWRAPPER_LABEL)
    return [f"{metadata.get('namespace', '')}/{owner}"] if isinstance(owner, str) and owner else []


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name", ""))


def _namespace(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("namespace", ""))


class KubePort:
    def __init__(self, *, client: KubeClient, pods: StoreView, field_manager: str) -> None:
        self._client = client
        self._pods = pods
        self._field_manager = field_manager

    async def patch_status(self, aw: Mapping[str, Any], patch: WireDict) -> WireDict:
        return await self._client.patch_status(
            APPWRAPPER.gvk, _name(aw), patch, namespace=_namespace(aw), field_manager=self._field_manager
        )

    async def set_finalizers(self, aw: Mapping[str, Any], finalizers: list[str]) -> WireDict:
        version = (aw.get("metadata") or {}).get("resourceVersion")
        return await self._client.patch(
            APPWRAPPER.gvk,
            _name(aw),
            {"metadata": {"finalizers": finalizers, "resourceVersion": version}},
            namespace=_namespace(aw),
            field_manager=self._field_manager,
        )

    async def create(self, obj: WireDict) -> WireDict:
        gvk = GroupVersionKind.of(obj)
        return await self._client.create(gvk, obj, field_manager=self._field_manager)

    async def get(self, *, api_version: str, kind: str, namespace: str, name: str) -> WireDict | None:
        try:
            return await self._client.get(
                GroupVersionKind.from_api_version(api_version, kind), name, namespace=namespace
            )
        except (NotFound, UnknownKindError):
            return None

    async def delete(
        self,
        *,
        api_version: str,
        kind: str,
        namespace: str,
        name: str,
        uid: str | None = None,
        propagation_policy: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> bool:
        try:
            await self._client.delete(
                GroupVersionKind.from_api_version(api_version, kind),
                name,
                namespace=namespace,
                uid=uid,
                propagation_policy=propagation_policy,
                grace_period_seconds=grace_period_seconds,
            )
        except (NotFound, UnknownKindError):
            return False
        return True

    async def list_pods(self, *, namespace: str, appwrapper: str) -> list[WireDict]:
        listed = await self._client.list_all(
            POD_GVK, namespace=namespace, label_selector=f"{APPWRAPPER_LABEL}={appwrapper}"
        )
        return listed.items

    def cached_pods(self, *, namespace: str, appwrapper: str) -> list[WireDict]:
        return self._pods.by_index(APPWRAPPER_INDEX, f"{namespace}/{appwrapper}")

    async def delete_pod(self, *, namespace: str, name: str, grace_period_seconds: int) -> None:
        try:
            await self._client.delete(
                POD_GVK, name, namespace=namespace, grace_period_seconds=grace_period_seconds
            )
        except NotFound:
            return


class EventSinkOnRecorder:
    """``appwrapper.ports.EventSink`` on ``shared.kube.EventRecorder`` (queued, never blocking)."""

    def __init__(self, recorder: EventRecorder) -> None:
        self._recorder = recorder

    def record(self, *, regarding: Mapping[str, Any], event_type: str, reason: str, message: str) -> None:
        self._recorder.event(regarding, type=event_type, reason=reason, note=message)
