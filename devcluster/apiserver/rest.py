"""The verbs: get, list, create, update and patch, with kube-apiserver's object semantics.

Each write follows the real server's pipeline, in its order: decode -> defaulting -> (mutating and
validating) admission -> strategy (server-owned fields, status isolation, generation) -> structural
schema (custom resources) -> validation -> no-op detection -> commit. Nothing is stored unless every
step passes, so a rejected request never leaves a partial write.

Semantics kept from kube-apiserver (each has a conformance test in tests/devcluster):

* uid, creationTimestamp and the global resourceVersion are server-owned; ``generateName`` gets a
  random 5-character suffix; a create with ``resourceVersion`` set is rejected.
* ``metadata.generation`` starts at 1 and increases when anything but metadata and status changes.
* With a ``status`` subresource, the main endpoint ignores status. ``/status`` of a custom resource
  (or a CRD) ignores everything but status (labels, annotations, finalizers and ownerReferences
  included); built-in kinds' status strategies only reset the spec, so metadata written through
  ``/status`` of a Job or Pod is kept (a Pod's ownerReferences excepted).
* An update whose ``resourceVersion`` is stale is a 409 Conflict; one without resourceVersion, and
  every patch, is retried against the latest object (admission runs again), as GuaranteedUpdate does.
* A write that changes nothing stores nothing: same resourceVersion, no watch event.
* Lists are snapshots: ``resourceVersionMatch=Exact`` lists the objects as they were at that
  revision, and every page of a paginated list is read at the first page's revision (410 Expired
  once the table's history no longer reaches back that far).
* Removing the last finalizer of an object being deleted deletes it, in the same write.
"""

from __future__ import annotations

import functools
import secrets
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson

from devcluster.apiserver.core import NAMESPACE_KEY, Cluster
from devcluster.apiserver.customresources.definitions import (
    CRD_KEY,
    crd_status,
    validate_crd,
    validate_custom_resource,
)
from devcluster.apiserver.errors import (
    Cause,
    StatusError,
    already_exists,
    bad_request,
    conflict,
    expired,
    forbidden,
    invalid,
    not_found,
    unsupported_media_type,
)
from devcluster.apiserver.fieldmanager.managedfields import FieldScope, record_apply, record_update
from devcluster.apiserver.fieldmanager.ownership import (
    applied_configuration,
    field_manager_causes,
    field_scope,
)
from devcluster.apiserver.registry.resources import ResourceType
from devcluster.apiserver.request.patching import apply_json_patch, apply_strategic_merge_patch
from devcluster.apiserver.selectors import Selector
from devcluster.apiserver.storage.pagination import (
    decode_continue,
    encode_continue,
    expired_continue,
    items_key,
)
from devcluster.apiserver.storage.store import ADDED, DELETED, MODIFIED
from devcluster.apiserver.validation import strategy
from devcluster.apiserver.validation.objectmeta import field_required, validate_object_meta
from shared.merge_patch import apply_merge_patch

__all__ = ["APPLY_PATCH", "PATCH_TYPES", "Caller", "ListPage", "Rest", "WriteOptions", "copy_object"]

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"
PATCH_TYPES = (JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, APPLY_PATCH)
_CR_PATCH_TYPES = [JSON_PATCH, MERGE_PATCH, APPLY_PATCH]
_NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery utilrand: no vowels, no 0/1/3
_MAX_RETRIES = 8
_PODS = ("", "pods")
#: metadata the server alone sets: dropped from a create's body, carried over from the old object on update
_SERVER_OWNED_METADATA = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
)


def copy_object(obj: dict[str, Any]) -> dict[str, Any]:
    """A deep copy (orjson round trip: several times faster than copy.deepcopy)."""
    copied: dict[str, Any] = orjson.loads(orjson.dumps(obj))
    return copied


@dataclass(frozen=True, slots=True)
class Caller:
    user: dict[str, Any]
    user_agent: str = ""

    @property
    def default_manager(self) -> str:
        return self.user_agent.split("/", 1)[0] or "unknown"


@dataclass(frozen=True, slots=True)
class WriteOptions:
    dry_run: bool = False
    field_manager: str = ""
    force: bool = False
    #: ``force`` was given at all (even ``false``): only apply patches accept it
    force_set: bool = False
    #: the API group the request came through when it differs from the stored type's
    #: (``events.k8s.io`` for Events, which validates more strictly than core v1)
    served_group: str = ""


@dataclass(frozen=True, slots=True)
class ListPage:
    items: list[dict[str, Any]]
    revision: int
    continue_token: str
    remaining: int | None


class _Stale(Exception):
    """The object changed while admission ran; an unconditional write starts over."""


def _name_mismatch(body_name: Any, url_name: str) -> StatusError:
    return bad_request(
        f"the name of the object ({body_name}) does not match the name on the URL ({url_name})"
    )


def _without(obj: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in keys}


def _without_resource_version(obj: dict[str, Any]) -> dict[str, Any]:
    return {**obj, "metadata": {k: v for k, v in obj["metadata"].items() if k != "resourceVersion"}}


def _set_managed_fields(meta: dict[str, Any], entries: list[dict[str, Any]]) -> None:
    if entries:
        meta["managedFields"] = entries
    else:
        meta.pop("managedFields", None)


def _decode_custom(rtype: ResourceType, version: str, obj: dict[str, Any]) -> None:
    """Prune and default a custom resource as decoding does, before its fields are attributed."""
    schema = None if rtype.builtin else rtype.schemas.get(version)
    if schema is not None:
        schema.prune(obj)
        schema.apply_defaults(obj)


class Rest:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.store = cluster.store

    # -- reads -------------------------------------------------------------------------------------
    def get(self, rtype: ResourceType, *, namespace: str, name: str) -> dict[str, Any]:
        obj = self.store.get(rtype.key, (namespace, name))
        if obj is None:
            raise not_found(group=rtype.group, plural=rtype.plural, name=name)
        return obj

    def list_objects(
        self,
        rtype: ResourceType,
        *,
        namespace: str | None,
        selector: Selector,
        limit: int,
        continue_token: str,
        exact_revision: int | None = None,
    ) -> ListPage:
        """A page of the list as of the store's revision, or of ``exact_revision``
        (``resourceVersionMatch=Exact``), or of the revision a continue token carries: a past
        revision is rebuilt from the table's history, so every page of one list is one snapshot."""
        revision = self.store.revision
        start: tuple[str, str] | None = None
        table = self.store.table(rtype.key)
        if continue_token:
            start, revision = decode_continue(continue_token)
            if revision < table.floor:  # "compacted": changes since the first page are not all known
                raise expired_continue(start, self.store.revision)
        elif exact_revision is not None:
            if exact_revision < table.floor:
                raise expired("The resourceVersion for the provided list is too old.")
            revision = exact_revision
        objects = table.objects if revision >= self.store.revision else table.objects_at(revision)
        name = selector.field.exact_name() if selector.field is not None else None
        if name is not None and namespace is not None:
            found = objects.get((namespace, name))
            candidates = [((namespace, name), found)] if found is not None else []
        elif objects is table.objects:
            candidates = table.sorted_items(namespace)
        else:
            candidates = sorted((k, v) for k, v in objects.items() if namespace is None or k[0] == namespace)
        matches = selector.matches
        items: list[dict[str, Any]] = []
        token, remaining = "", None
        for index, (key, obj) in enumerate(candidates):
            if start is not None and key <= start:
                continue
            if not matches(obj):
                continue
            if limit and len(items) == limit:
                token = encode_continue(items_key(items[-1]), revision)
                if selector.empty:  # kube counts only unfiltered lists (etcd's count of the range)
                    remaining = len(candidates) - index
                break
            items.append(obj)
        return ListPage(items=items, revision=revision, continue_token=token, remaining=remaining)

    # -- create ------------------------------------------------------------------------------------
    async def create(
        self,
        rtype: ResourceType,
        *,
        version: str,
        namespace: str,
        body: Any,
        caller: Caller,
        options: WriteOptions,
        managed_fields: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """``managed_fields`` is set when a server-side apply creates the object (already recorded)."""
        obj = self._decode(rtype, version=version, namespace=namespace, body=body)
        meta = obj["metadata"]
        if meta.get("resourceVersion"):
            raise bad_request("resourceVersion should not be set on objects to be created")
        for server_owned in (*_SERVER_OWNED_METADATA, "selfLink"):
            meta.pop(server_owned, None)
        if not meta.get("name") and isinstance(meta.get("generateName"), str) and meta["generateName"]:
            meta["name"] = meta["generateName"][:58] + "".join(
                secrets.choice(_NAME_ALPHABET) for _ in range(5)
            )
        name = meta.get("name") or ""
        if rtype.namespaced:
            self._check_namespace_open(rtype, namespace, name)
        strategy.apply_defaults(rtype.key, obj, builtin=rtype.builtin)
        if rtype.has_status and not rtype.builtin:
            obj.pop("status", None)
        if managed_fields is None:
            _decode_custom(rtype, version, obj)
            sent = meta.pop("managedFields", None)
            managed_fields = record_update(
                old=None, new=obj, base=sent, scope=self._scope(rtype, version, "", caller, options)
            )
        _set_managed_fields(meta, managed_fields)
        obj = await self._admit("CREATE", rtype, version, namespace, name, obj, None, caller, options, "")
        strategy.drop_empty_collections(rtype.key, obj, builtin=rtype.builtin)
        meta = obj["metadata"]
        causes = validate_object_meta(meta, namespaced=rtype.namespaced, name_rule=rtype.name_rule)
        name = meta.get("name") or ""
        meta["uid"] = str(uuid.uuid4())
        meta["creationTimestamp"] = self.cluster.timestamp()
        if rtype.tracks_generation:
            meta["generation"] = 1
        strategy.prepare_create(rtype.key, obj)
        causes += self._validate_kind(rtype, version, obj, None, served_group=options.served_group)
        if causes:
            raise invalid(group=rtype.group, kind=rtype.kind, name=name, causes=causes)
        if rtype.key == CRD_KEY:
            self._check_crd_names(obj)
            obj["status"] = crd_status(obj, now=self.cluster.clock())
        key = (namespace if rtype.namespaced else "", name)
        if self.store.get(rtype.key, key) is not None:
            raise already_exists(group=rtype.group, plural=rtype.plural, name=name)
        if rtype.namespaced:
            self._check_namespace_open(rtype, namespace, name)
        if options.dry_run:
            return dict(obj)
        return self.store.commit(table=rtype.key, key=key, event_type=ADDED, obj=obj)

    # -- update ------------------------------------------------------------------------------------
    async def update(
        self,
        rtype: ResourceType,
        *,
        version: str,
        namespace: str,
        name: str,
        subresource: str,
        body: Any,
        caller: Caller,
        options: WriteOptions,
    ) -> dict[str, Any]:
        new = self._decode(rtype, version=version, namespace=namespace, body=body)
        if new["metadata"].get("name") != name:
            raise _name_mismatch(new["metadata"].get("name", ""), name)
        precondition = new["metadata"].get("resourceVersion") or ""
        pristine = orjson.dumps(new)
        write = self._writer(rtype, version=version, caller=caller, options=options, subresource=subresource)
        for attempt in range(_MAX_RETRIES):
            old = self.get(rtype, namespace=namespace, name=name)
            if precondition and precondition != old["metadata"]["resourceVersion"]:
                raise conflict(group=rtype.group, plural=rtype.plural, name=name)
            uid = new["metadata"].get("uid")
            if uid and uid != old["metadata"].get("uid"):
                raise conflict(
                    group=rtype.group,
                    plural=rtype.plural,
                    name=name,
                    why=f"Precondition failed: UID in precondition: {uid}, UID in object meta: {old['metadata'].get('uid')}",
                )
            try:
                return await write(old=old, new=orjson.loads(pristine) if attempt else new)
            except _Stale:
                if precondition:
                    raise conflict(group=rtype.group, plural=rtype.plural, name=name) from None
        raise conflict(group=rtype.group, plural=rtype.plural, name=name)

    # -- patch -------------------------------------------------------------------------------------
    async def patch(
        self,
        rtype: ResourceType,
        *,
        version: str,
        namespace: str,
        name: str,
        subresource: str,
        patch_type: str,
        patch: Any,
        caller: Caller,
        options: WriteOptions,
        codec: Any = None,
    ) -> tuple[dict[str, Any], bool]:
        """Returns (object, created); only apply patches create.

        ``codec`` (to_storage / from_storage) is set when the resource is served in another shape
        than stored: the patch applies to the served shape, as on the real server.
        """
        if patch_type == STRATEGIC_PATCH and not rtype.builtin:
            raise unsupported_media_type(_CR_PATCH_TYPES)
        causes = field_manager_causes(options.field_manager)
        if patch_type != APPLY_PATCH and options.force_set:
            causes.insert(
                0,
                Cause("force", "FieldValueForbidden", "Forbidden: may not be specified for non-apply patch"),
            )
        if patch_type == APPLY_PATCH and not options.field_manager:
            causes.insert(0, field_required("fieldManager", "is required for apply patch"))
        if causes:
            raise invalid(group="meta.k8s.io", kind="PatchOptions", name="", causes=causes)
        if patch_type == APPLY_PATCH:
            return await self._apply(
                rtype,
                version=version,
                namespace=namespace,
                name=name,
                subresource=subresource,
                config=patch,
                caller=caller,
                options=options,
                codec=codec,
            )
        write = self._writer(rtype, version=version, caller=caller, options=options, subresource=subresource)
        for _ in range(_MAX_RETRIES):
            old = self.store.get(rtype.key, (namespace, name))
            if old is None:
                raise not_found(group=rtype.group, plural=rtype.plural, name=name)
            current = copy_object(old)
            current["apiVersion"] = rtype.api_version(version)
            if codec is not None:
                current = codec.from_storage(current)
            new = self._patched(rtype, current, patch_type, patch)
            if codec is not None and isinstance(new, dict):
                new = codec.to_storage(new)
            if not isinstance(new, dict) or not isinstance(new.get("metadata"), dict):
                raise bad_request("the patched object is not a valid object")
            new.setdefault("apiVersion", rtype.api_version(version))
            new.setdefault("kind", rtype.kind)
            if new["metadata"].get("name", name) != name:
                raise _name_mismatch(new["metadata"]["name"], name)
            new["metadata"]["name"] = name
            if rtype.namespaced:
                new["metadata"]["namespace"] = namespace
            precondition = new["metadata"].get("resourceVersion")
            if precondition and precondition != old["metadata"]["resourceVersion"]:
                raise conflict(group=rtype.group, plural=rtype.plural, name=name)
            try:
                return await write(old=old, new=new), False
            except _Stale:
                continue
        raise conflict(group=rtype.group, plural=rtype.plural, name=name)

    async def _apply(
        self,
        rtype: ResourceType,
        *,
        version: str,
        namespace: str,
        name: str,
        subresource: str,
        config: Any,
        caller: Caller,
        options: WriteOptions,
        codec: Any,
    ) -> tuple[dict[str, Any], bool]:
        """Server-side apply (rules in :mod:`devcluster.apiserver.fieldmanager.managedfields`); creates the object when it is missing."""
        config = applied_configuration(rtype, version=version, body=config, codec=codec)
        meta = config["metadata"]
        if meta.get("name", name) != name:
            raise _name_mismatch(meta["name"], name)
        if rtype.namespaced and meta.get("namespace", namespace) != namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        scope = self._scope(rtype, version, subresource, caller, options)
        write = self._writer(rtype, version=version, caller=caller, options=options, subresource=subresource)
        for _ in range(_MAX_RETRIES):
            old = self.store.get(rtype.key, (namespace, name))
            if old is None and subresource:
                raise not_found(group=rtype.group, plural=rtype.plural, name=name)
            if old is None and meta.get("uid"):
                raise conflict(
                    group=rtype.group,
                    plural=rtype.plural,
                    name=name,
                    why=f"uid mismatch: the provided object specified uid {meta['uid']}, "
                    "and no existing object was found",
                )
            precondition = meta.get("resourceVersion")
            if old is not None and precondition and precondition != old["metadata"]["resourceVersion"]:
                raise conflict(group=rtype.group, plural=rtype.plural, name=name)
            if old is not None and meta.get("uid") and meta["uid"] != old["metadata"].get("uid"):
                immutable = Cause(
                    "metadata.uid",
                    "FieldValueInvalid",
                    f"Invalid value: {orjson.dumps(meta['uid']).decode()}: field is immutable",
                )
                # the real server reports it twice (ObjectMeta validated by two layers)
                raise invalid(group=rtype.group, kind=rtype.kind, name=name, causes=[immutable, immutable])
            live = None
            if old is not None:
                live = {**old, "apiVersion": rtype.api_version(version)}
            merged, managed_fields, _ = record_apply(
                live=live, config=config, scope=scope, force=options.force
            )
            merged = copy_object(merged)
            merged.setdefault("metadata", {})["name"] = name
            if old is None:
                merged["metadata"].pop("resourceVersion", None)
                obj = await self.create(
                    rtype,
                    version=version,
                    namespace=namespace,
                    body=merged,
                    caller=caller,
                    options=options,
                    managed_fields=managed_fields,
                )
                return obj, True
            _set_managed_fields(merged["metadata"], managed_fields)
            try:
                return await write(old=old, new=merged, managed_fields=managed_fields), False
            except _Stale:
                continue
        raise conflict(group=rtype.group, plural=rtype.plural, name=name)

    def _scope(
        self, rtype: ResourceType, version: str, subresource: str, caller: Caller, options: WriteOptions
    ) -> FieldScope:
        return field_scope(
            rtype,
            version=version,
            subresource=subresource,
            manager=options.field_manager or caller.default_manager,
            timestamp=self.cluster.timestamp(),
        )

    def _patched(self, rtype: ResourceType, current: dict[str, Any], patch_type: str, patch: Any) -> Any:
        if patch_type == JSON_PATCH:
            return apply_json_patch(current, patch)
        if not isinstance(patch, dict):
            raise bad_request("the patch must be a JSON object")
        if patch_type == MERGE_PATCH:
            return apply_merge_patch(current, patch)
        return apply_strategic_merge_patch(current, patch)

    # -- the shared write path ---------------------------------------------------------------------
    def _writer(
        self, rtype: ResourceType, *, version: str, caller: Caller, options: WriteOptions, subresource: str
    ) -> Callable[..., Awaitable[dict[str, Any]]]:
        """``_write`` for one request: the retries of an update, patch or apply differ only in the
        objects (and, for an apply, the managed fields)."""
        return functools.partial(
            self._write, rtype, version=version, caller=caller, options=options, subresource=subresource
        )

    async def _write(
        self,
        rtype: ResourceType,
        *,
        version: str,
        old: dict[str, Any],
        new: dict[str, Any],
        caller: Caller,
        options: WriteOptions,
        subresource: str,
        managed_fields: list[dict[str, Any]] | None = None,
    ) -> dict[str, Any]:
        """``managed_fields``: already recorded (server-side apply); else this write records an Update."""
        meta, old_meta = new["metadata"], old["metadata"]
        name, namespace = old_meta["name"], old_meta.get("namespace", "")
        if subresource and subresource not in rtype.subresources:
            raise not_found(group=rtype.group, plural=rtype.plural, name=name)
        if subresource == "finalize":
            # namespaces/finalize: only spec.finalizers changes (the namespace controller's write)
            finalizers = (new.get("spec") or {}).get("finalizers")
            new = copy_object(old)
            new.setdefault("spec", {})["finalizers"] = finalizers or []
            if not finalizers:
                new["spec"].pop("finalizers")
            meta = new["metadata"]
        elif subresource == "status" and rtype.builtin and rtype.key != CRD_KEY:
            # built-in status strategies reset only the spec: metadata written here is kept
            # (Pods also keep their ownerReferences, which old kubelets corrupted)
            if "spec" in old:
                new["spec"] = copy_object({"s": old["spec"]})["s"]
            else:
                new.pop("spec", None)
            if rtype.key == _PODS:
                if "ownerReferences" in old_meta:
                    meta["ownerReferences"] = old_meta["ownerReferences"]
                else:
                    meta.pop("ownerReferences", None)
            for owned in _SERVER_OWNED_METADATA:
                if owned in old_meta:
                    meta[owned] = old_meta[owned]
                else:
                    meta.pop(owned, None)
            if "managedFields" not in meta and old_meta.get("managedFields"):
                meta["managedFields"] = old_meta["managedFields"]
        elif subresource == "status":
            # custom resources (and CRDs): only status is taken from a /status write
            status = new.get("status")
            new = {**copy_object(old), "apiVersion": new.get("apiVersion", old.get("apiVersion"))}
            if status is None:
                new.pop("status", None)
            else:
                new["status"] = status
            meta = new["metadata"]
        else:
            strategy.apply_defaults(rtype.key, new, builtin=rtype.builtin)
            if rtype.has_status and "status" in old:
                new["status"] = copy_object({"s": old["status"]})["s"]
            elif rtype.has_status:
                new.pop("status", None)
            for owned in _SERVER_OWNED_METADATA:
                if owned in old_meta:
                    meta[owned] = old_meta[owned]
                else:
                    meta.pop(owned, None)
        if managed_fields is None:
            if subresource != "finalize":
                _decode_custom(rtype, version, new)
            sent = meta.pop("managedFields", None)
            managed_fields = record_update(
                old=old,
                new=new,
                base=None if subresource else sent,
                scope=self._scope(rtype, version, subresource, caller, options),
            )
        _set_managed_fields(meta, managed_fields)
        new = await self._admit(
            "UPDATE", rtype, version, namespace, name, new, old, caller, options, subresource
        )
        if self.store.get(rtype.key, (namespace, name)) is not old:
            raise _Stale
        strategy.drop_empty_collections(rtype.key, new, builtin=rtype.builtin)
        meta = new["metadata"]
        if rtype.tracks_generation and "generation" in old_meta:
            skip = ("metadata", "status") if (rtype.has_status or rtype.builtin) else ("metadata",)
            if _without(new, (*skip, "apiVersion", "kind")) != _without(old, (*skip, "apiVersion", "kind")):
                meta["generation"] = old_meta["generation"] + 1
        causes = validate_object_meta(meta, namespaced=rtype.namespaced, name_rule=rtype.name_rule, old=old)
        causes += self._validate_kind(
            rtype, version, new, old, subresource=subresource, served_group=options.served_group
        )
        if causes:
            raise invalid(group=rtype.group, kind=rtype.kind, name=name, causes=causes)
        if rtype.key == CRD_KEY and subresource != "status":
            new["status"] = crd_status(new, now=self.cluster.clock())
        new["apiVersion"] = old.get("apiVersion", new.get("apiVersion"))
        if _without_resource_version(new) == _without_resource_version(old):
            return old  # nothing changed, managedFields included: nothing is written
        if options.dry_run:
            meta["resourceVersion"] = old_meta["resourceVersion"]
            return new
        key = (namespace, name)
        spec_finalizers = (new.get("spec") or {}).get("finalizers") if rtype.key == NAMESPACE_KEY else None
        if old_meta.get("deletionTimestamp") and not meta.get("finalizers") and not spec_finalizers:
            return self.store.commit(table=rtype.key, key=key, event_type=DELETED, obj=new)
        return self.store.commit(table=rtype.key, key=key, event_type=MODIFIED, obj=new)

    # -- helpers -----------------------------------------------------------------------------------
    def _decode(self, rtype: ResourceType, *, version: str, namespace: str, body: Any) -> dict[str, Any]:
        if not isinstance(body, dict):
            raise bad_request(f"Object 'Kind' is missing in '{orjson.dumps(body).decode()[:200]}'")
        api_version = body.get("apiVersion")
        if api_version is not None and not any(api_version == rtype.api_version(v) for v in rtype.versions):
            raise bad_request(
                f"the API version in the data ({api_version}) does not match the expected API version "
                f"({rtype.api_version(version)})"
            )
        kind = body.get("kind")
        if kind is None and not rtype.builtin:
            # built-in kinds are decoded into the endpoint's type; a custom resource is unstructured
            raise bad_request(
                f"the object provided is unrecognized (must be of type {rtype.kind}): "
                f"Object 'Kind' is missing in '{orjson.dumps(body).decode()}'"
            )
        if kind is not None and kind != rtype.kind:
            raise bad_request(
                f"the kind in the data ({kind}) does not match the expected kind ({rtype.kind})"
            )
        body["apiVersion"] = rtype.api_version(version)
        body["kind"] = rtype.kind
        meta = body.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise bad_request("metadata must be an object")
        if rtype.namespaced:
            if meta.get("namespace") and meta["namespace"] != namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the namespace sent on the request"
                )
            meta["namespace"] = namespace
        return body

    def _check_namespace_open(self, rtype: ResourceType, namespace: str, name: str) -> None:
        found = self.cluster.namespace(namespace)
        if found is None:
            raise not_found(group="", plural="namespaces", name=namespace)
        if found["metadata"].get("deletionTimestamp"):
            error = forbidden(
                group=rtype.group,
                plural=rtype.plural,
                name=name,
                why=f"unable to create new content in namespace {namespace} because it is being terminated",
            )
            assert error.details is not None
            error.details["causes"] = [
                {
                    "reason": "NamespaceTerminating",
                    "message": f"namespace {namespace} is being terminated",
                    "field": "metadata.namespace",
                }
            ]
            raise error

    def _check_crd_names(self, crd: dict[str, Any]) -> None:
        spec = crd["spec"]
        existing = self.cluster.registry.get((spec["group"], spec["names"]["plural"]))
        if existing is not None and existing.crd_uid == "":
            raise invalid(
                group="apiextensions.k8s.io",
                kind="CustomResourceDefinition",
                name=crd["metadata"]["name"],
                causes=[
                    Cause(
                        "spec.names.plural",
                        "FieldValueInvalid",
                        "Invalid value: the name is used by a built-in resource",
                    )
                ],
            )

    def _validate_kind(
        self,
        rtype: ResourceType,
        version: str,
        obj: dict[str, Any],
        old: dict[str, Any] | None,
        *,
        subresource: str = "",
        served_group: str = "",
    ) -> list[Cause]:
        if not rtype.builtin:
            return validate_custom_resource(rtype, version=version, obj=obj, old=old, subresource=subresource)
        if rtype.key == CRD_KEY:
            return validate_crd(obj)
        return strategy.validate_kind(
            rtype.key, obj, old, subresource=subresource, served_group=served_group or rtype.group
        )

    async def _admit(
        self,
        operation: str,
        rtype: ResourceType,
        version: str,
        namespace: str,
        name: str,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
        caller: Caller,
        options: WriteOptions,
        subresource: str,
    ) -> Any:
        chain = self.cluster.admission
        if chain is None:
            return obj
        from devcluster.apiserver.admission import AdmissionDenied

        try:
            result = await chain.admit(
                operation=operation.upper(),
                gvk=(rtype.group, version, rtype.kind),
                gvr=(rtype.group, version, rtype.plural),
                subresource=subresource,
                namespace=namespace if rtype.namespaced else None,
                name=name,
                obj=obj,
                old_obj=old,
                user_info=caller.user,
                dry_run=options.dry_run,
            )
        except AdmissionDenied as denied:
            raise StatusError(denied.code, denied.reason, denied.message, denied.details) from denied
        if obj is None:
            return None
        if not isinstance(result, dict) or not isinstance(result.get("metadata"), dict):
            return obj
        return result
