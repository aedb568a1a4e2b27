"""The Kubernetes verbs on raw dicts, built on ``KubeClient.request``.

Each verb resolves the kind through the REST mapper (cached after the first call), builds the URL
of the collection, object or subresource, and sends one request through the client's request core
(retries, rate limit, metrics, typed errors live there). Bodies go out and come back as dicts, so
nothing the server returns is ever dropped.

Invariants:

* ``update`` is always conditional: it requires ``metadata.resourceVersion`` (a stale one raises
  ``Conflict``); blind writes are patches.
* Namespaced kinds need a namespace (given, or from the body's metadata); the error names the GVK.
* Server-side apply always names its field manager; JSON patches are lists of operations.
* ``list_all`` follows ``continue`` tokens; an expired token (410) falls back to one unpaginated
  list, as client-go's pager does. Items get ``apiVersion``/``kind``, which list responses omit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from shared.kube.discovery import ResourceInfo, RESTMapper
from shared.kube.errors import Gone
from shared.kube.gvk import GroupVersionKind

__all__ = ["METADATA_LIST", "ObjectList", "PatchType", "ResourceVerbs"]

#: what a metadata-only list asks for (client-go's metadata informers): ``PartialObjectMetadataList``,
#: plain JSON from a server that cannot (its items are then whole objects, a superset)
METADATA_LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1, application/json"


def _typed(gvk: GroupVersionKind, body: Mapping[str, Any]) -> Mapping[str, Any]:
    """``body`` with ``apiVersion`` and ``kind`` (the verb's), as client-go's typed clients send
    them: kube-apiserver refuses a custom resource without ``kind`` (400 "Object 'Kind' is
    missing"). What the caller set is kept (a mismatch is the server's to refuse)."""
    if body.get("apiVersion") and body.get("kind"):
        return body
    typed = {"apiVersion": body.get("apiVersion") or gvk.api_version, "kind": body.get("kind") or gvk.kind}
    return {**typed, **{k: v for k, v in body.items() if k not in typed}}


class PatchType(StrEnum):
    MERGE = "application/merge-patch+json"
    JSON = "application/json-patch+json"
    STRATEGIC = "application/strategic-merge-patch+json"
    APPLY = "application/apply-patch+yaml"


@dataclass(frozen=True)
class ObjectList:
    """All items of a (paginated) list and the resourceVersion to watch from."""

    items: list[dict[str, Any]]
    resource_version: str


class ResourceVerbs:
    """Mixed into ``KubeClient``, which provides ``mapper`` and ``request``."""

    mapper: RESTMapper

    async def request(
        self,
        method: str,
        path: str,
        *,
        verb: str,
        resource: str,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        content_type: str | None = None,
        decode: bool = True,
        accept: str | None = None,
    ) -> Any:
        raise NotImplementedError

    # --- verbs -----------------------------------------------------------------------------------

    async def resource(self, gvk: GroupVersionKind) -> ResourceInfo:
        return await self.mapper.resolve(gvk)

    @staticmethod
    def _namespace(
        info: ResourceInfo, namespace: str | None, body: Mapping[str, Any] | None = None
    ) -> str | None:
        if not info.namespaced:
            return None
        if namespace is None and body is not None:
            metadata = body.get("metadata")
            namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
        if not namespace:
            raise ValueError(f"{info.gvk}: metadata.namespace is required for a namespaced resource")
        return namespace

    @staticmethod
    def _name(body: Mapping[str, Any], gvk: GroupVersionKind) -> str:
        metadata = body.get("metadata")
        name = metadata.get("name") if isinstance(metadata, dict) else None
        if not isinstance(name, str) or not name:
            raise ValueError(f"{gvk}: metadata.name is required")
        return name

    async def get(
        self,
        gvk: GroupVersionKind,
        name: str,
        *,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        info = self.mapper.cached(gvk) or await self.mapper.resolve(gvk)
        path = info.path(namespace=self._namespace(info, namespace), name=name, subresource=subresource)
        result: dict[str, Any] = await self.request(
            "GET", path, verb="get", resource=info.label_for(subresource)
        )
        return result

    async def list(
        self,
        gvk: GroupVersionKind,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        limit: int | None = None,
        continue_token: str | None = None,
        resource_version: str | None = None,
        metadata_only: bool = False,
    ) -> dict[str, Any]:
        """One page of a list (the raw ``*List`` object; ``metadata.continue`` for the next page).
        ``metadata_only``: a ``PartialObjectMetadataList`` (whole items from a server that cannot)."""
        info = self.mapper.cached(gvk) or await self.mapper.resolve(gvk)
        params: dict[str, str] = {}
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        if limit:
            params["limit"] = str(limit)
        if continue_token:
            params["continue"] = continue_token
        if resource_version is not None:
            params["resourceVersion"] = resource_version
        path = info.path(namespace=namespace if info.namespaced else None)
        result: dict[str, Any] = await self.request(
            "GET",
            path,
            verb="list",
            resource=info.resource_label,
            params=params,
            accept=METADATA_LIST if metadata_only else None,
        )
        return result

    async def list_all(
        self,
        gvk: GroupVersionKind,
        *,
        namespace: str | None = None,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int | None = 500,
        metadata_only: bool = False,
        transform: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    ) -> ObjectList:
        """Every item across pages; items get ``apiVersion``/``kind`` (lists omit them).
        ``metadata_only``: ``PartialObjectMetadata`` items, as client-go's metadata informers list.
        ``transform`` is applied to each item as its page arrives, so a transform that drops or
        shares parts (an informer's) leaves one page, not the whole list, decoded in full at a time.

        An expired continue token (410) falls back to one unpaginated list, as client-go's pager does.
        """
        items: list[dict[str, Any]] = []
        token: str | None = None
        resource_version = ""
        limit = page_size
        while True:
            try:
                page = await self.list(
                    gvk,
                    namespace=namespace,
                    label_selector=label_selector,
                    field_selector=field_selector,
                    limit=limit,
                    continue_token=token,
                    metadata_only=metadata_only,
                )
            except Gone:
                if token is None:
                    raise
                items, token, limit = [], None, None
                continue
            page_items = page.get("items") or []
            for item in page_items:
                if isinstance(item, dict):
                    item.setdefault("apiVersion", gvk.api_version)
                    item.setdefault("kind", gvk.kind)
                    items.append(item if transform is None else transform(item))
            metadata = page.get("metadata") or {}
            resource_version = str(metadata.get("resourceVersion") or resource_version)
            token = metadata.get("continue") or None
            if not token:
                return ObjectList(items=items, resource_version=resource_version)

    async def create(
        self,
        gvk: GroupVersionKind,
        body: Mapping[str, Any],
        *,
        namespace: str | None = None,
        field_manager: str | None = None,
        dry_run: bool = False,
        decode: bool = True,
    ) -> dict[str, Any]:
        """POST; the created object (``{}`` with ``decode=False``, for callers that drop it).

        ``apiVersion`` and ``kind`` are filled in from ``gvk`` when the body has none: kube-apiserver
        infers them for built-in kinds but refuses a custom resource without its kind.
        """
        info = self.mapper.cached(gvk) or await self.mapper.resolve(gvk)
        path = info.path(namespace=self._namespace(info, namespace, body))
        if "kind" not in body or "apiVersion" not in body:
            body = {"apiVersion": gvk.api_version, "kind": gvk.kind, **body}
        params = self._write_params(field_manager=field_manager, dry_run=dry_run)
        result: dict[str, Any] = await self.request(
            "POST",
            path,
            verb="create",
            resource=info.resource_label,
            params=params,
            body=_typed(gvk, body),
            decode=decode,
        )
        return result

    async def update(
        self,
        gvk: GroupVersionKind,
        body: Mapping[str, Any],
        *,
        namespace: str | None = None,
        subresource: str | None = None,
        resource_version: str | None = None,
        field_manager: str | None = None,
        decode: bool = True,
    ) -> dict[str, Any]:
        """PUT with optimistic concurrency: ``metadata.resourceVersion`` must be set (``Conflict`` if stale).
        Returns the stored object (``{}`` with ``decode=False``)."""
        info = self.mapper.cached(gvk) or await self.mapper.resolve(gvk)
        name = self._name(body, gvk)
        metadata = dict(body.get("metadata") or {})
        if resource_version is not None:
            metadata["resourceVersion"] = resource_version
        if not metadata.get("resourceVersion"):
            raise ValueError(
                f"{gvk} {name}: metadata.resourceVersion is required for update (use patch for blind writes)"
            )
        payload = {**_typed(gvk, body), "metadata": metadata}
        path = info.path(namespace=self._namespace(info, namespace, body), name=name, subresource=subresource)
        params = self._write_params(field_manager=field_manager)
        result: dict[str, Any] = await self.request(
            "PUT",
            path,
            verb="update",
            resource=info.label_for(subresource),
            params=params,
            body=payload,
            decode=decode,
        )
        return result

    async def patch(
        self,
        gvk: GroupVersionKind,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        patch_type: PatchType = PatchType.MERGE,
        subresource: str | None = None,
        field_manager: str | None = None,
        force: bool | None = None,
        decode: bool = True,
    ) -> dict[str, Any]:
        """Merge (default), JSON (a list of ops), strategic or apply patch of one object; returns the
        patched object (``{}`` with ``decode=False``)."""
        info = self.mapper.cached(gvk) or await self.mapper.resolve(gvk)
        if patch_type is PatchType.APPLY and not field_manager:
            raise ValueError(f"{gvk} {name}: server-side apply needs a field_manager")
        if patch_type is PatchType.JSON and not isinstance(patch, list):
            raise ValueError(f"{gvk} {name}: a JSON patch is a list of operations")
        params = self._write_params(field_manager=field_manager)
        if force is not None and patch_type is PatchType.APPLY:
            params["force"] = "true" if force else "false"
        path = info.path(namespace=self._namespace(info, namespace), name=name, subresource=subresource)
        result: dict[str, Any] = await self.request(
            "PATCH",
            path,
            verb="apply" if patch_type is PatchType.APPLY else "patch",
            resource=info.label_for(subresource),
            params=params,
            body=patch,
            content_type=patch_type.value,
            decode=decode,
        )
        return result

    async def apply(
        self,
        gvk: GroupVersionKind,
        body: Mapping[str, Any],
        *,
        field_manager: str,
        force: bool = False,
        namespace: str | None = None,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        """Server-side apply of ``body`` (which carries apiVersion, kind and metadata.name)."""
        info = self.mapper.cached(gvk) or await self.mapper.resolve(gvk)
        payload = {"apiVersion": gvk.api_version, "kind": gvk.kind, **body}
        return await self.patch(
            gvk,
            self._name(body, gvk),
            payload,
            namespace=self._namespace(info, namespace, body),
            patch_type=PatchType.APPLY,
            subresource=subresource,
            field_manager=field_manager,
            force=force,
        )

    async def delete(
        self,
        gvk: GroupVersionKind,
        name: str,
        *,
        namespace: str | None = None,
        propagation_policy: str | None = None,
        uid: str | None = None,
        resource_version: str | None = None,
        grace_period_seconds: int | None = None,
    ) -> dict[str, Any]:
        """DELETE with optional propagation policy and uid/resourceVersion preconditions."""
        info = self.mapper.cached(gvk) or await self.mapper.resolve(gvk)
        options: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if propagation_policy is not None:
            options["propagationPolicy"] = propagation_policy
        if grace_period_seconds is not None:
            options["gracePeriodSeconds"] = grace_period_seconds
        preconditions = {
            key: value
            for key, value in (("uid", uid), ("resourceVersion", resource_version))
            if value is not None
        }
        if preconditions:
            options["preconditions"] = preconditions
        path = info.path(namespace=self._namespace(info, namespace), name=name)
        result: dict[str, Any] = await self.request(
            "DELETE", path, verb="delete", resource=info.resource_label, body=options
        )
        return result

    async def get_status(
        self, gvk: GroupVersionKind, name: str, *, namespace: str | None = None
    ) -> dict[str, Any]:
        return await self.get(gvk, name, namespace=namespace, subresource="status")

    async def update_status(
        self, gvk: GroupVersionKind, body: Mapping[str, Any], *, namespace: str | None = None
    ) -> dict[str, Any]:
        return await self.update(gvk, body, namespace=namespace, subresource="status")

    async def patch_status(
        self,
        gvk: GroupVersionKind,
        name: str,
        patch: Any,
        *,
        namespace: str | None = None,
        patch_type: PatchType = PatchType.MERGE,
        field_manager: str | None = None,
        force: bool | None = None,
    ) -> dict[str, Any]:
        return await self.patch(
            gvk,
            name,
            patch,
            namespace=namespace,
            patch_type=patch_type,
            subresource="status",
            field_manager=field_manager,
            force=force,
        )

    @staticmethod
    def _write_params(*, field_manager: str | None, dry_run: bool = False) -> dict[str, str]:
        params: dict[str, str] = {}
        if field_manager:
            params["fieldManager"] = field_manager
        if dry_run:
            params["dryRun"] = "All"
        return params
