"""The raw ASGI application: routing, request decoding, authentication and responses.

No framework sits on this path: a request is a path split, a dict lookup in the registry and one
verb call, which is what makes >1,000 creates/s possible in one Python process. Every failure is
rendered as a Kubernetes ``Status`` (see :mod:`devcluster.apiserver.errors`); an unexpected exception becomes
a 500 ``InternalError`` Status and is logged, and never takes the server down.

Bodies: JSON or YAML for create/update, the four patch media types for PATCH, at most
``max_body_bytes`` (413 ``RequestEntityTooLarge`` past kube's 3 MiB), anything else 415.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qsl

import orjson

from devcluster.apiserver.auth.authz import (
    ANONYMOUS_USER,
    PUBLIC_PATHS,
    authenticate,
    authorize_anonymous,
    request_attributes,
    review_access,
)
from devcluster.apiserver.auth.impersonation import impersonated_user
from devcluster.apiserver.core import Cluster
from devcluster.apiserver.deletion import Deleter
from devcluster.apiserver.errors import (
    StatusError,
    bad_request,
    method_not_allowed,
    not_found,
    page_not_found,
    path_not_found,
    too_large_resource_version,
    unauthorized,
    unsupported_media_type,
)
from devcluster.apiserver.output.crd_printer import printer_for
from devcluster.apiserver.output.partial import PartialMetadata, negotiate_partial
from devcluster.apiserver.output.tables import TableWriter, negotiate
from devcluster.apiserver.registry.events import EventsCodec
from devcluster.apiserver.registry.openapi import openapi_v3
from devcluster.apiserver.registry.resources import ResourceType
from devcluster.apiserver.registry.views import View
from devcluster.apiserver.request.bodies import (
    Request,
    decode_body,
    delete_options,
    drain,
    parse_body,
    read_body,
)
from devcluster.apiserver.request.object_decoding import decode_object, parse_error, unrecognized
from devcluster.apiserver.request.query_options import (
    flag,
    integer,
    validate_delete_options,
    validate_list_options,
    validate_write_options,
)
from devcluster.apiserver.rest import APPLY_PATCH, PATCH_TYPES, Caller, Rest, WriteOptions
from devcluster.apiserver.selectors import Selector, unknown_field_label
from devcluster.apiserver.storage.watch import stream_watch
from shared.kube import GroupVersionKind

__all__ = ["VERSION_INFO", "DevClusterApp"]

log = logging.getLogger(__name__)

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

VERSION_INFO = {
    "major": "1",
    "minor": "36",
    "gitVersion": "v1.36.0-devcluster",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2025-01-01T00:00:00Z",
    "goVersion": "go1.25.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}
_JSON_HEADERS = [(b"content-type", b"application/json"), (b"cache-control", b"no-cache, private")]
_RESOURCE_VERSION_WAIT = 3.0
_SAR_KINDS = {"subjectaccessreviews", "selfsubjectaccessreviews", "localsubjectaccessreviews"}
#: strconv.ParseBool: the ``force`` values Go reads (anything else leaves the option unset)
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})


class DevClusterApp:
    def __init__(self, *, cluster: Cluster, server_address: str = "127.0.0.1:0") -> None:
        self.cluster = cluster
        self.options = cluster.options
        self.rest = Rest(cluster)
        self.deleter = Deleter(cluster, self.rest)
        self.server_address = server_address
        #: caller user name -> impersonation mode that last succeeded for them (auth.impersonation)
        self._impersonation_modes: dict[str, str] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            await _lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        try:
            await self._handle(scope, receive, send)
        except StatusError as error:
            if error.plain_text is not None:
                text_headers = [
                    (b"content-type", b"text/plain; charset=utf-8"),
                    (b"x-content-type-options", b"nosniff"),
                ]
                await _respond(send, error.code, error.plain_text.encode(), text_headers)
                return
            await _respond(send, error.code, orjson.dumps(error.to_status()), error.headers)
        except Exception:
            log.exception("devcluster: internal error on %s %s", scope.get("method"), scope.get("path"))
            body = {
                "kind": "Status",
                "apiVersion": "v1",
                "metadata": {},
                "status": "Failure",
                "message": "Internal error occurred: unexpected server error",
                "reason": "InternalError",
                "code": 500,
            }
            await _respond(send, 500, orjson.dumps(body))

    async def _handle(self, scope: Scope, receive: Receive, send: Send) -> None:
        path: str = scope["path"]
        method: str = scope["method"]
        headers = dict(scope["headers"])
        public = path.rstrip("/") in PUBLIC_PATHS or path.startswith(("/healthz/", "/livez/", "/readyz/"))
        # impersonation is authorized on public paths too (kube's filter runs before any handler)
        if public and not any(key.startswith(b"impersonate-") for key in headers):
            await _respond_public(send, path)
            return
        user = authenticate(headers, self.options)
        params = dict(parse_qsl(scope["query_string"].decode("latin-1"), keep_blank_values=True))
        if user is None:
            await drain(receive, self.options.max_body_bytes)
            raise unauthorized()
        try:
            acting = impersonated_user(
                scope["headers"],
                user,
                attributes=lambda: request_attributes(method, path, params),
                may=lambda spec: bool(review_access(spec, self.options, self._rbac_objects).get("allowed")),
                last_mode=self._impersonation_modes,
            )
            if acting is ANONYMOUS_USER:
                authorize_anonymous(
                    request_attributes(method, path, params), self.options, self._rbac_objects
                )
        except StatusError:
            await drain(receive, self.options.max_body_bytes)
            raise
        user = acting
        if public:
            await _respond_public(send, path)
            return
        body = b""
        if method in {"POST", "PUT", "PATCH", "DELETE"}:
            body = await read_body(headers, receive, self.options.max_body_bytes)
        content_type = headers.get(b"content-type", b"").decode("latin-1").split(";", 1)[0].strip().lower()
        accept = headers.get(b"accept", b"").decode("latin-1")
        request = Request(method, path, params, content_type, body, accept)
        caller = Caller(user=user, user_agent=headers.get(b"user-agent", b"").decode("latin-1"))
        parts = [p for p in path.split("/") if p]
        if not parts:
            raise path_not_found()
        if parts[0] == "openapi":
            document = openapi_v3(self.cluster.registry, parts[2:]) if parts[1:2] == ["v3"] else None
            if document is None:
                raise page_not_found()
            await _respond(send, 200, orjson.dumps(document))
            return
        registry = self.cluster.registry
        if parts[0] == "api":
            if len(parts) == 1:
                await _respond(
                    send, 200, orjson.dumps(registry.api_versions(server_address=self.server_address))
                )
                return
            group, version, rest = "", parts[1], parts[2:]
        elif parts[0] == "apis":
            if len(parts) == 1:
                await _respond(send, 200, orjson.dumps(registry.api_group_list()))
                return
            if len(parts) == 2:
                doc = registry.api_group(parts[1])
                if doc is None:
                    raise page_not_found()
                await _respond(send, 200, orjson.dumps(doc))
                return
            group, version, rest = parts[1], parts[2], parts[3:]
        else:
            raise page_not_found()
        if not rest:
            listing = registry.resource_list(group, version)
            if listing is None:
                raise self._unknown_path(group)
            await _respond(send, 200, orjson.dumps(listing))
            return
        watch_prefix = rest[0] == "watch"
        if watch_prefix:
            rest = rest[1:]
            params["watch"] = "true"
        namespace: str | None = None
        if len(rest) >= 3 and rest[0] == "namespaces" and rest[2] not in {"status", "finalize"}:
            namespace, rest = rest[1], rest[2:]
        plural = rest[0] if rest else ""
        name = rest[1] if len(rest) > 1 else ""
        subresource = rest[2] if len(rest) > 2 else ""
        if len(rest) > 3 or not plural:
            raise path_not_found()
        rtype = registry.lookup(group=group, version=version, plural=plural)
        if rtype is None:
            raise self._unknown_path(group)
        if namespace is not None and not rtype.namespaced:
            raise path_not_found()
        if subresource and subresource not in rtype.subresources:
            raise path_not_found()
        await self._resource(request, rtype, version, namespace, name, subresource, caller, send, receive)

    async def _resource(
        self,
        request: Request,
        rtype: ResourceType,
        version: str,
        namespace: str | None,
        name: str,
        subresource: str,
        caller: Caller,
        send: Send,
        receive: Receive,
    ) -> None:
        method, params = request.method, request.params
        view = self._view(rtype, version)
        rtype, version, api_version = view.rtype, view.version, view.api_version
        write = WriteOptions(
            dry_run=params.get("dryRun") == "All",
            field_manager=params.get("fieldManager", ""),
            force=params.get("force") in _GO_TRUE,
            force_set=params.get("force") in _GO_TRUE | _GO_FALSE,
            served_group=GroupVersionKind.from_api_version(view.api_version, "").group
            if view.codec is not None
            else "",
        )
        ns = namespace or ""
        partial = negotiate_partial(request.accept) if request.accept else None

        def answer(obj: dict[str, Any]) -> bytes:
            return view.dump(obj) if partial is None else partial.object(rtype, view.convert(obj))

        if rtype.plural in _SAR_KINDS:
            if method != "POST" or name:
                raise method_not_allowed()
            await self._access_review(request, rtype, api_version, ns, caller, send)
            return
        if rtype.namespaced and name and namespace is None:
            raise path_not_found()
        if method in ("POST", "PUT") or (method == "PATCH" and request.content_type in PATCH_TYPES):
            validate_write_options(params, method=method)
        elif method == "DELETE":
            validate_delete_options(params, delete_options(request))
        elif method == "GET" and not name:
            validate_list_options(params)
        if not name:
            if method == "GET":
                selector = _selector(view, params)
                tables = self._tables(request, view)
                if flag(params, "watch"):
                    await stream_watch(
                        store=self.cluster.store,
                        rtype=rtype,
                        version=version,
                        namespace=namespace,
                        selector=selector,
                        params=params,
                        bookmark_interval=self.options.bookmark_interval,
                        max_seconds=self.options.max_watch_seconds,
                        send=send,
                        receive=receive,
                        served_as=view.served_as,
                        render=tables.frame if tables is not None else partial.frame if partial else None,
                    )
                    return
                await self._list(view, namespace, selector, params, send, tables, partial)
                return
            if method == "POST":
                if rtype.namespaced and namespace is None:
                    raise method_not_allowed()
                obj = await self.rest.create(
                    rtype,
                    version=version,
                    namespace=ns,
                    body=view.decode(self._decode_object(request, view)),
                    caller=caller,
                    options=write,
                )
                await _respond(send, 201, answer(obj))
                return
            if method == "DELETE":
                selector = _selector(view, params)
                page = self.rest.list_objects(
                    rtype, namespace=namespace, selector=selector, limit=0, continue_token=""
                )
                result = await self.deleter.delete_collection(
                    rtype,
                    version=version,
                    namespace=namespace,
                    items=page.items,
                    options=delete_options(request),
                    caller=caller,
                    dry_run=write.dry_run,
                )
                result["items"] = [view.convert(item) for item in result["items"]]
                result["apiVersion"] = api_version
                await _respond(send, 200, orjson.dumps(result))
                return
            raise method_not_allowed()
        if method == "GET":
            await self._reached(params.get("resourceVersion", ""), wait=True)
            obj = self.rest.get(rtype, namespace=ns, name=name)
            tables = self._tables(request, view) if not subresource else None
            if tables is not None:
                meta = {"resourceVersion": str(obj["metadata"].get("resourceVersion") or "")}
                await _respond(send, 200, tables.render([obj], meta))
                return
            await _respond(send, 200, answer(obj))
            return
        if method == "PUT":
            obj = await self.rest.update(
                rtype,
                version=version,
                namespace=ns,
                name=name,
                subresource=subresource,
                body=view.decode(self._decode_object(request, view)),
                caller=caller,
                options=write,
            )
            await _respond(send, 200, answer(obj))
            return
        if method == "PATCH":
            if request.content_type not in PATCH_TYPES:
                raise unsupported_media_type(list(PATCH_TYPES))
            patch = parse_body(request.body, yaml_ok=request.content_type == APPLY_PATCH)
            obj, created = await self.rest.patch(
                rtype,
                version=version,
                namespace=ns,
                name=name,
                subresource=subresource,
                patch_type=request.content_type,
                patch=patch,
                caller=caller,
                options=write,
                codec=view.codec,
            )
            await _respond(send, 201 if created else 200, answer(obj))
            return
        if method == "DELETE":
            if subresource:
                raise method_not_allowed()
            code, body = await self.deleter.delete(
                rtype,
                version=version,
                namespace=ns,
                name=name,
                options=delete_options(request),
                caller=caller,
                dry_run=write.dry_run,
            )
            if not body:
                raise not_found(group=rtype.group, plural=rtype.plural, name=name)
            await _respond(send, code, answer(body) if body.get("kind") != "Status" else orjson.dumps(body))
            return
        raise method_not_allowed()

    def _decode_object(self, request: Request, view: View) -> Any:
        """A create/update body as kube decodes it into the kind (:mod:`devcluster.apiserver.request.object_decoding`'s 400s)."""
        kind = view.served_kind or view.rtype.kind
        version = GroupVersionKind.from_api_version(view.api_version, kind).version
        if request.content_type in {"", "application/json", "*/*"}:
            why = parse_error(request.body)
            if why is not None:
                raise unrecognized(kind, f"couldn't get version/kind; json parse error: {why}", request.body)
        return decode_object(
            decode_body(request), request.body, kind=kind, version=version, builtin=view.rtype.builtin
        )

    async def _reached(self, resource_version: str, *, wait: bool) -> None:
        """A read at ``resourceVersion`` N needs the store at N or later: kube's watch cache waits
        up to 3 s for it (not for ``Exact``), then answers 504 Too large resource version."""
        if not resource_version.isdigit() or resource_version == "0":
            return
        wanted, store = int(resource_version), self.cluster.store
        if store.revision < wanted and wait:
            reached = asyncio.Event()

            def _on_commit(_table: Any, _event: Any) -> None:
                if store.revision >= wanted:
                    reached.set()

            store.listeners.append(_on_commit)
            try:
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(_RESOURCE_VERSION_WAIT):
                        await reached.wait()
            finally:
                store.listeners.remove(_on_commit)
        if store.revision < wanted:
            raise too_large_resource_version(wanted, store.revision)

    def _unknown_path(self, group: str) -> StatusError:
        """kube-apiserver's built-in groups answer an unknown version or resource with a NotFound
        Status; anything else falls through to the plain-text 404 (custom resource groups too)."""
        if group == "" or any(rtype.builtin and rtype.group == group for rtype in self.cluster.registry):
            return path_not_found()
        return page_not_found()

    def _tables(self, request: Request, view: View) -> TableWriter | None:
        """A Table writer when the client asked for server-side printing (kubectl get), else None."""
        api_version = negotiate(request.accept) if request.accept else None
        if api_version is None:
            return None
        return TableWriter(
            printer=printer_for(view.rtype, view.version),
            api_version=api_version,
            include_object=request.params.get("includeObject", ""),
            served=view.convert,
            clock=self.cluster.clock,
        )

    async def _list(
        self,
        view: View,
        namespace: str | None,
        selector: Selector,
        params: dict[str, str],
        send: Send,
        tables: TableWriter | None = None,
        partial: PartialMetadata | None = None,
    ) -> None:
        limit = integer(params, "limit") or 0
        exact = params.get("resourceVersionMatch") == "Exact"
        await self._reached(params.get("resourceVersion", ""), wait=not exact)
        page = self.rest.list_objects(
            view.rtype,
            namespace=namespace,
            selector=selector,
            limit=max(limit, 0),
            continue_token=params.get("continue", ""),
            exact_revision=int(params["resourceVersion"]) if exact else None,
        )
        meta: dict[str, Any] = {"resourceVersion": str(page.revision)}
        if page.continue_token:
            meta["continue"] = page.continue_token
            if page.remaining is not None:
                meta["remainingItemCount"] = page.remaining
        items = page.items
        if tables is not None:
            await _respond(send, 200, tables.render(items, meta))
            return
        if partial is not None:
            await _respond(send, 200, partial.list(view.rtype, [view.convert(item) for item in items], meta))
            return
        if view.codec is not None or any(item.get("apiVersion") != view.api_version for item in items):
            items = [view.convert(item) for item in items]
        body = {
            "kind": f"{view.rtype.kind}List",
            "apiVersion": view.api_version,
            "metadata": meta,
            "items": items,
        }
        await _respond(send, 200, orjson.dumps(body))

    def _view(self, rtype: ResourceType, version: str) -> View:
        if rtype.served_from is None:
            return View(rtype=rtype, version=version, api_version=rtype.api_version(version))
        stored = self.cluster.registry.get(rtype.served_from)
        if stored is None:  # pragma: no cover - built-in pairs are registered together
            raise path_not_found()
        return View(
            rtype=stored,
            version=stored.preferred_version,
            api_version=rtype.api_version(version),
            codec=EventsCodec(),
            served_kind=rtype.kind,
        )

    def _rbac_objects(self, plural: str, namespace: str | None) -> list[dict[str, Any]]:
        return self.cluster.rbac_objects(plural, namespace)

    async def _access_review(
        self,
        request: Request,
        rtype: ResourceType,
        api_version: str,
        namespace: str,
        caller: Caller,
        send: Send,
    ) -> None:
        review = decode_body(request)
        if not isinstance(review, dict) or not isinstance(review.get("spec"), dict):
            raise bad_request("spec is required")
        spec = dict(review["spec"])
        if rtype.plural == "selfsubjectaccessreviews":
            spec["user"] = caller.user.get("username", "")
            spec["groups"] = caller.user.get("groups", [])
        elif rtype.plural == "localsubjectaccessreviews" and isinstance(spec.get("resourceAttributes"), dict):
            spec["resourceAttributes"] = {**spec["resourceAttributes"], "namespace": namespace}
        review = {
            **review,
            "apiVersion": api_version,
            "kind": rtype.kind,
            "metadata": {**(review.get("metadata") or {}), "creationTimestamp": None},
            "status": review_access(spec, self.options, self._rbac_objects),
        }
        await _respond(send, 201, orjson.dumps(review))


def _selector(view: View, params: dict[str, str]) -> Selector:
    """A list's, a watch's or a collection delete's label and field selectors, with the fields this
    resource lets a client select on (kube's "field label not supported" otherwise)."""
    rtype = view.rtype
    return Selector(
        labels=params.get("labelSelector", ""),
        fields=view.fields(params.get("fieldSelector", "")),
        allowed_fields=rtype.selectable_fields,
        unknown_field=unknown_field_label(
            group=rtype.group,
            kind=rtype.kind,
            builtin=rtype.builtin,
            selectable=rtype.selectable_fields,
        ),
    )


async def _respond_public(send: Send, path: str) -> None:
    """The health and version endpoints anyone may read (``system:public-info-viewer``)."""
    if path.startswith("/version"):
        await _respond(send, 200, orjson.dumps(VERSION_INFO))
    else:
        await _respond(send, 200, b"ok", [(b"content-type", b"text/plain; charset=utf-8")])


async def _respond(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    out = list(headers) if headers and any(h[0] == b"content-type" for h in headers) else [*_JSON_HEADERS]
    if headers:
        out.extend(h for h in headers if h[0] != b"content-type")
    out.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": out})
    await send({"type": "http.response.body", "body": body})


async def _lifespan(receive: Receive, send: Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return
