"""An in-memory Kubernetes API server behind ``httpx.MockTransport``, for unit tests.

It implements just enough of the real server's contract to test the client runtime against
behaviour rather than against canned responses: discovery from registered resources (register one
later and it appears, like an installed CRD), CRUD with resourceVersion/uid/generation, optimistic
concurrency (409 Conflict), merge/JSON/apply patches (an apply removes what only its own manager
applied before: ``fake_ssa``), delete preconditions, the status subresource,
label/field selectors, limit/continue pagination, and watches fed from an event history with
bookmarks, compaction (410 Gone as HTTP status or ERROR event), injected garbage and disconnects.

Failure injection: ``fail_when(predicate, response)`` answers matching requests with the given
response instead of serving them. Every served request is logged in ``requests``.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

import httpx
import jsonpatch
import orjson

from shared.kube import GroupVersionKind
from shared.kube.discovery import ResourceInfo
from tests.unit.kube.fake_ssa import FieldOwnership

__all__ = ["FailureRule", "FakeApi", "RecordedRequest", "lease_info", "status_body"]

CONFIGMAP = ResourceInfo(
    gvk=GroupVersionKind("", "v1", "ConfigMap"),
    plural="configmaps",
    namespaced=True,
    verbs=frozenset({"get", "list", "watch", "create", "update", "patch", "delete"}),
)


def lease_info() -> ResourceInfo:
    return ResourceInfo(
        gvk=GroupVersionKind("coordination.k8s.io", "v1", "Lease"),
        plural="leases",
        namespaced=True,
        verbs=frozenset({"get", "list", "watch", "create", "update", "patch", "delete"}),
    )


def status_body(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> bytes:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details is not None:
        body["details"] = details
    return orjson.dumps(body)


def _status(code: int, reason: str, message: str, details: dict[str, Any] | None = None) -> httpx.Response:
    return httpx.Response(
        code,
        content=status_body(code, reason, message, details),
        headers={"content-type": "application/json"},
    )


def _json(code: int, obj: Any) -> httpx.Response:
    return httpx.Response(code, content=orjson.dumps(obj), headers={"content-type": "application/json"})


def _merge(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge(result.get(key), value)
    return result


def _manager(req: RecordedRequest) -> str:
    """The request's field manager: ``fieldManager``, else its user agent's first word (as the server)."""
    return req.params.get("fieldManager") or req.headers.get("user-agent", "").split("/", 1)[0]


def _match_labels(selector: str, labels: dict[str, str]) -> bool:
    for term in (t.strip() for t in selector.split(",") if t.strip()):
        if "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key.strip()) == value.strip():
                return False
        elif "=" in term:
            key, value = term.replace("==", "=").split("=", 1)
            if labels.get(key.strip()) != value.strip():
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def _match_fields(selector: str, obj: dict[str, Any]) -> bool:
    metadata = obj.get("metadata", {})
    for term in (t.strip() for t in selector.split(",") if t.strip()):
        key, _, value = term.replace("==", "=").partition("=")
        actual = {"metadata.name": metadata.get("name"), "metadata.namespace": metadata.get("namespace")}.get(
            key
        )
        if actual != value:
            return False
    return True


@dataclass
class RecordedRequest:
    method: str
    path: str
    params: dict[str, str]
    headers: dict[str, str]
    body: bytes


@dataclass
class FailureRule:
    predicate: Callable[[RecordedRequest], bool]
    respond: Callable[[RecordedRequest], httpx.Response]
    times: int | None = None  # None: forever


@dataclass
class _Watcher:
    resource: str
    namespace: str | None
    label_selector: str | None
    queue: asyncio.Queue[bytes | None] = field(default_factory=asyncio.Queue)


class _WatchStream(httpx.AsyncByteStream):
    def __init__(self, api: FakeApi, watcher: _Watcher, initial: list[bytes]) -> None:
        self._api = api
        self._watcher = watcher
        self._initial = initial

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._initial:
            yield chunk
        while True:
            item = await self._watcher.queue.get()
            if item is None:
                return
            yield item

    async def aclose(self) -> None:
        if self._watcher in self._api.watchers:
            self._api.watchers.remove(self._watcher)


class FakeApi:
    """The fake server; ``transport()`` gives an ``httpx.MockTransport`` serving it."""

    def __init__(self, resources: list[ResourceInfo] | None = None) -> None:
        self.resources: dict[tuple[str, str, str], ResourceInfo] = {}
        for info in resources or [CONFIGMAP]:
            self.register(info)
        self.objects: dict[tuple[str, str, str], dict[str, Any]] = {}  # (resource, ns, name)
        self.ownership = FieldOwnership()  # who may remove what with an apply (fake_ssa)
        self.history: list[tuple[int, str, str, dict[str, Any]]] = []  # (rv, resource, type, obj)
        self.compacted_rv = 0
        self.rv = 100
        self.watchers: list[_Watcher] = []
        self.requests: list[RecordedRequest] = []
        self.failures: list[FailureRule] = []
        self.gone_as_event = True  # 410 for a too-old watch: as an ERROR event, else as HTTP status
        self._uids = itertools.count(1)

    # --- set-up ----------------------------------------------------------------------------------

    def register(self, info: ResourceInfo) -> None:
        self.resources[(info.gvk.group, info.gvk.version, info.plural)] = info

    def transport(self) -> httpx.MockTransport:
        return httpx.MockTransport(self.handle)

    def fail_when(
        self,
        predicate: Callable[[RecordedRequest], bool],
        respond: Callable[[RecordedRequest], httpx.Response],
        *,
        times: int | None = None,
    ) -> FailureRule:
        rule = FailureRule(predicate, respond, times)
        self.failures.append(rule)
        return rule

    # --- test controls ---------------------------------------------------------------------------

    def compact(self) -> None:
        """Forget the event history: watches from any older resourceVersion get 410."""
        self.compacted_rv = self.rv
        self.history.clear()

    def send_bookmark(self) -> None:
        for watcher in self.watchers:
            event = {
                "type": "BOOKMARK",
                "object": {"kind": "Bookmark", "metadata": {"resourceVersion": str(self.rv)}},
            }
            watcher.queue.put_nowait(orjson.dumps(event) + b"\n")

    def send_raw(self, chunk: bytes) -> None:
        for watcher in self.watchers:
            watcher.queue.put_nowait(chunk)

    def disconnect_watches(self) -> None:
        for watcher in list(self.watchers):
            watcher.queue.put_nowait(None)

    def put_object(self, resource: str, obj: dict[str, Any], *, record: bool = True) -> dict[str, Any]:
        """Create or replace an object directly (no validation), emitting a watch event."""
        metadata = obj.setdefault("metadata", {})
        key = (resource, metadata.get("namespace", ""), metadata["name"])
        kind = "MODIFIED" if key in self.objects else "ADDED"
        metadata.setdefault("uid", f"uid-{next(self._uids)}")
        self.rv += 1
        metadata["resourceVersion"] = str(self.rv)
        self.objects[key] = obj
        if record:
            self._emit(resource, kind, obj)
        return obj

    def remove_object(self, resource: str, namespace: str, name: str, *, record: bool = True) -> None:
        obj = self.objects.pop((resource, namespace, name))
        self.ownership.forget((resource, namespace, name))
        self.rv += 1
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(self.rv)
        if record:
            self._emit(resource, "DELETED", obj)

    def _emit(self, resource: str, kind: str, obj: dict[str, Any]) -> None:
        snapshot = copy.deepcopy(obj)
        self.history.append((self.rv, resource, kind, snapshot))
        line = orjson.dumps({"type": kind, "object": snapshot}) + b"\n"
        for watcher in self.watchers:
            if self._watch_matches(watcher, resource, snapshot):
                watcher.queue.put_nowait(line)

    @staticmethod
    def _watch_matches(watcher: _Watcher, resource: str, obj: dict[str, Any]) -> bool:
        if watcher.resource != resource:
            return False
        metadata = obj.get("metadata", {})
        if watcher.namespace and metadata.get("namespace") != watcher.namespace:
            return False
        return not (
            watcher.label_selector and not _match_labels(watcher.label_selector, metadata.get("labels") or {})
        )

    # --- request handling ------------------------------------------------------------------------

    async def handle(self, request: httpx.Request) -> httpx.Response:
        recorded = RecordedRequest(
            method=request.method,
            path=request.url.path,
            params=dict(request.url.params),
            headers=dict(request.headers),
            body=request.content,
        )
        self.requests.append(recorded)
        for rule in list(self.failures):
            if rule.predicate(recorded):
                if rule.times is not None:
                    rule.times -= 1
                    if rule.times <= 0:
                        self.failures.remove(rule)
                return rule.respond(recorded)
        return self._serve(recorded)

    def _discovery(self, path: str) -> httpx.Response | None:
        if path == "/api":
            return _json(200, {"kind": "APIVersions", "versions": ["v1"]})
        if path == "/apis":
            groups: dict[str, list[str]] = {}
            for group, version, _ in self.resources:
                if group:
                    groups.setdefault(group, [])
                    if version not in groups[group]:
                        groups[group].append(version)
            return _json(
                200,
                {
                    "kind": "APIGroupList",
                    "groups": [
                        {"name": g, "versions": [{"groupVersion": f"{g}/{v}", "version": v} for v in vs]}
                        for g, vs in groups.items()
                    ],
                },
            )
        parts = path.strip("/").split("/")
        if (parts[0] == "api" and len(parts) == 2) or (parts[0] == "apis" and len(parts) == 3):
            group, version = ("", parts[1]) if parts[0] == "api" else (parts[1], parts[2])
            entries = []
            for (g, v, plural), info in self.resources.items():
                if (g, v) != (group, version):
                    continue
                entries.append(
                    {
                        "name": plural,
                        "singularName": info.singular,
                        "namespaced": info.namespaced,
                        "kind": info.gvk.kind,
                        "verbs": sorted(info.verbs),
                    }
                )
                for sub in sorted(info.subresources):
                    entries.append(
                        {
                            "name": f"{plural}/{sub}",
                            "namespaced": info.namespaced,
                            "kind": info.gvk.kind,
                            "verbs": ["get", "patch", "update"],
                        }
                    )
            if not entries:
                return _status(404, "NotFound", "the server could not find the requested resource")
            return _json(
                200,
                {
                    "kind": "APIResourceList",
                    "groupVersion": f"{group}/{version}" if group else version,
                    "resources": entries,
                },
            )
        return None

    def _serve(self, req: RecordedRequest) -> httpx.Response:
        discovered = self._discovery(req.path)
        if discovered is not None:
            return discovered
        parts = [unquote(p) for p in req.path.strip("/").split("/")]
        if parts[0] == "api":
            group, version, rest = "", parts[1], parts[2:]
        else:
            group, version, rest = parts[1], parts[2], parts[3:]
        namespace = ""
        if len(rest) >= 2 and rest[0] == "namespaces" and len(rest) != 2:
            namespace, rest = rest[1], rest[2:]
        plural = rest[0]
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else None
        info = self.resources.get((group, version, plural))
        if info is None:
            return _status(404, "NotFound", "the server could not find the requested resource")
        resource = info.resource_label
        if name is None:
            if req.method == "GET" and req.params.get("watch") in ("1", "true"):
                return self._watch(resource, namespace, req)
            if req.method == "GET":
                return self._list(resource, namespace, req)
            if req.method == "POST":
                return self._create(info, namespace, req)
            return _status(405, "MethodNotAllowed", f"{req.method} not allowed")
        key = (resource, namespace, name)
        if req.method == "GET":
            obj = self.objects.get(key)
            if obj is None:
                return _status(
                    404, "NotFound", f'{plural} "{name}" not found', {"name": name, "kind": plural}
                )
            return _json(200, obj)
        if req.method == "PUT":
            return self._update(info, key, orjson.loads(req.body), sub=sub, manager=_manager(req))
        if req.method == "PATCH":
            return self._patch(info, key, req, sub=sub)
        if req.method == "DELETE":
            return self._delete(key, req)
        return _status(405, "MethodNotAllowed", f"{req.method} not allowed")

    def _list(self, resource: str, namespace: str, req: RecordedRequest) -> httpx.Response:
        selected = [
            obj
            for (res, ns, _), obj in sorted(self.objects.items())
            if res == resource
            and (not namespace or ns == namespace)
            and _match_labels(req.params.get("labelSelector", ""), obj["metadata"].get("labels") or {})
            and _match_fields(req.params.get("fieldSelector", ""), obj)
        ]
        start = int(req.params.get("continue") or 0)
        limit = int(req.params.get("limit") or 0)
        page = selected[start : start + limit] if limit else selected[start:]
        metadata: dict[str, Any] = {"resourceVersion": str(self.rv)}
        if limit and start + limit < len(selected):
            metadata["continue"] = str(start + limit)
        items = []
        for obj in page:
            item = copy.deepcopy(obj)
            item.pop("apiVersion", None)  # like the real server, list items omit apiVersion/kind
            item.pop("kind", None)
            items.append(item)
        return _json(200, {"kind": "List", "apiVersion": "v1", "metadata": metadata, "items": items})

    def _watch(self, resource: str, namespace: str, req: RecordedRequest) -> httpx.Response:
        since = int(req.params.get("resourceVersion") or self.rv)
        if since < self.compacted_rv:
            message = f"too old resource version: {since} ({self.compacted_rv})"
            if not self.gone_as_event:
                return _status(410, "Expired", message)
            event = {"type": "ERROR", "object": orjson.loads(status_body(410, "Expired", message))}
            stream_lines = [orjson.dumps(event) + b"\n"]
            watcher = _Watcher(resource, namespace or None, req.params.get("labelSelector"))
            watcher.queue.put_nowait(None)
            return httpx.Response(200, stream=_WatchStream(self, watcher, stream_lines))
        watcher = _Watcher(resource, namespace or None, req.params.get("labelSelector"))
        initial = [
            orjson.dumps({"type": kind, "object": obj}) + b"\n"
            for rv, res, kind, obj in self.history
            if rv > since and self._watch_matches(watcher, res, obj)
        ]
        self.watchers.append(watcher)
        return httpx.Response(
            200, headers={"content-type": "application/json"}, stream=_WatchStream(self, watcher, initial)
        )

    def _create(self, info: ResourceInfo, namespace: str, req: RecordedRequest) -> httpx.Response:
        obj = orjson.loads(req.body)
        metadata = obj.setdefault("metadata", {})
        if namespace:
            metadata["namespace"] = namespace
        if not metadata.get("name") and metadata.get("generateName"):
            metadata["name"] = f"{metadata['generateName']}{next(self._uids):05d}"
        key = (info.resource_label, namespace, metadata.get("name", ""))
        if key in self.objects:
            return _status(409, "AlreadyExists", f'{info.plural} "{key[2]}" already exists', {"name": key[2]})
        metadata["generation"] = 1
        metadata["creationTimestamp"] = "2025-01-01T00:00:00Z"
        return _json(201, copy.deepcopy(self.put_object(info.resource_label, obj)))

    def _update(
        self,
        info: ResourceInfo,
        key: tuple[str, str, str],
        new: dict[str, Any],
        *,
        sub: str | None,
        check_rv: bool = True,
        manager: str | None = None,
    ) -> httpx.Response:
        """``manager``: the field manager of an update (its changed fields become its own);
        ``None`` for an apply, whose ownership ``_patch`` recorded."""
        old = self.objects.get(key)
        if old is None:
            return _status(404, "NotFound", f'{info.plural} "{key[2]}" not found')
        sent_rv = new.get("metadata", {}).get("resourceVersion")
        if check_rv and sent_rv and sent_rv != old["metadata"]["resourceVersion"]:
            return _status(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {info.plural} "{key[2]}": the object has been modified; '
                "please apply your changes to the latest version and try again",
            )
        merged = copy.deepcopy(old)
        if sub == "status":
            merged["status"] = new.get("status")
        else:
            status = merged.get("status")
            merged = copy.deepcopy(new)
            merged.setdefault("metadata", {})
            for field_name in ("uid", "creationTimestamp", "generation", "namespace", "name"):
                if field_name in old["metadata"]:
                    merged["metadata"][field_name] = old["metadata"][field_name]
            if "status" in info.subresources:
                merged["status"] = status
            if merged.get("spec") != old.get("spec"):
                merged["metadata"]["generation"] = old["metadata"].get("generation", 1) + 1
        if manager is not None:
            self.ownership.update(key, manager, old, merged, subresource=sub)
        return _json(200, copy.deepcopy(self.put_object(key[0], merged)))

    def _patch(
        self, info: ResourceInfo, key: tuple[str, str, str], req: RecordedRequest, *, sub: str | None
    ) -> httpx.Response:
        content_type = req.headers.get("content-type", "")
        old = self.objects.get(key)
        patch = orjson.loads(req.body)
        if old is None:
            if content_type.startswith("application/apply-patch"):
                metadata = patch.setdefault("metadata", {})
                metadata["namespace"] = key[1] or metadata.get("namespace", "")
                return _json(201, copy.deepcopy(self.put_object(key[0], patch)))
            return _status(404, "NotFound", f'{info.plural} "{key[2]}" not found')
        applying = content_type.startswith("application/apply-patch")
        if content_type.startswith("application/json-patch"):
            try:
                new = jsonpatch.apply_patch(old, patch)
            except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
                return _status(422, "Invalid", str(exc))
        elif applying:
            new = self.ownership.apply(key, _manager(req) or "", old, patch, subresource=sub)
        else:
            new = _merge(old, patch)
        sent_rv = patch.get("metadata", {}).get("resourceVersion") if isinstance(patch, dict) else None
        if sent_rv and sent_rv != old["metadata"]["resourceVersion"]:
            return _status(409, "Conflict", "the object has been modified")
        new["metadata"]["resourceVersion"] = old["metadata"]["resourceVersion"]
        return self._update(
            info, key, new, sub=sub, check_rv=False, manager=None if applying else _manager(req)
        )

    def _delete(self, key: tuple[str, str, str], req: RecordedRequest) -> httpx.Response:
        obj = self.objects.get(key)
        if obj is None:
            return _status(404, "NotFound", f'"{key[2]}" not found')
        options = orjson.loads(req.body) if req.body else {}
        preconditions = options.get("preconditions") or {}
        if "uid" in preconditions and preconditions["uid"] != obj["metadata"]["uid"]:
            return _status(409, "Conflict", "Precondition failed: UID in precondition: mismatch")
        if (
            "resourceVersion" in preconditions
            and preconditions["resourceVersion"] != obj["metadata"]["resourceVersion"]
        ):
            return _status(409, "Conflict", "Precondition failed: ResourceVersion in precondition: mismatch")
        self.remove_object(*key)
        return _json(200, {"kind": "Status", "apiVersion": "v1", "status": "Success"})
