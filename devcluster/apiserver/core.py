"""The cluster state shared by the HTTP layer, the verbs and the controllers.

:class:`Cluster` owns the registry, the store, the uid and owner indexes the garbage collector
needs, the admission seam and the persistence. It is created and used on one event loop; nothing
here blocks or awaits, so each method observes and changes the state atomically.

Indexes are maintained from the store's event stream (a store listener), not by the verbs, so any
write path (verbs, controllers, persistence load) keeps them right.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import uuid
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import orjson

from devcluster.apiserver.auth.authz import review_access
from devcluster.apiserver.auth.rbac import RBAC_GROUP
from devcluster.apiserver.customresources.definitions import CRD_KEY, resource_type_for
from devcluster.apiserver.options import ServerOptions
from devcluster.apiserver.registry.builtins import BUILTIN_TYPES
from devcluster.apiserver.registry.resources import Registry, ResourceType
from devcluster.apiserver.storage.persistence import SqlitePersistence
from devcluster.apiserver.storage.store import ADDED, DELETED, MODIFIED, Store, StoredEvent
from shared.kube import GroupVersionKind
from shared.kube.times import format_time

__all__ = ["NAMESPACE_KEY", "Cluster", "Location"]

log = logging.getLogger(__name__)

NAMESPACE_KEY = ("", "namespaces")
INITIAL_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")

#: (table key, (namespace, name))
Location = tuple[tuple[str, str], tuple[str, str]]


class Cluster:
    def __init__(self, *, options: ServerOptions) -> None:
        self.options = options
        self.clock = options.clock
        self.registry = Registry()
        for rtype in BUILTIN_TYPES:
            self.registry.register(rtype)
        self.persistence: SqlitePersistence | None = None
        revision = 0
        if options.data_dir is not None:
            self.persistence = SqlitePersistence(directory=options.data_dir)
            revision = self.persistence.revision()
        self.store = Store(
            history_size=options.watch_history_size, persistence=self.persistence, revision=revision
        )
        self.by_uid: dict[str, Location] = {}
        self.dependents: defaultdict[str, set[Location]] = defaultdict(set)
        self.store.listeners.append(self._index)
        self.admission: Any = None
        #: callbacks run after each committed event (the controllers register here)
        self.on_event: list[Callable[[tuple[str, str], StoredEvent], None]] = []
        if self.persistence is not None:
            self._load()
        self._bootstrap()

    # -- indexes -----------------------------------------------------------------------------------
    def _index(self, table: tuple[str, str], event: StoredEvent) -> None:
        meta = event.obj["metadata"]
        location = (table, (meta.get("namespace", ""), meta["name"]))
        if event.prev is not None:
            for ref in event.prev["metadata"].get("ownerReferences") or []:
                self.dependents[ref.get("uid", "")].discard(location)
        if event.type == DELETED:
            # the deleted object's own dependents stay indexed: the garbage collector needs them
            self.by_uid.pop(meta.get("uid", ""), None)
        else:
            self.by_uid[meta["uid"]] = location
            for ref in meta.get("ownerReferences") or []:
                self.dependents[ref.get("uid", "")].add(location)
        if table == CRD_KEY:
            self._crd_event(event)
        for callback in self.on_event:
            callback(table, event)

    def _crd_event(self, event: StoredEvent) -> None:
        """Serve a CRD's resource from the write that creates it until the write that removes it."""
        if event.type == DELETED:
            spec = event.obj.get("spec") or {}
            key = (spec.get("group", ""), (spec.get("names") or {}).get("plural", ""))
            rtype = self.registry.get(key)
            if rtype is not None and not rtype.builtin:
                self.registry.unregister(key)
                self.store.drop_table(key)
            return
        try:
            rtype = resource_type_for(event.obj)
        except (KeyError, TypeError, ValueError):  # pragma: no cover - validated before commit
            log.exception("cannot serve CRD %s", event.obj["metadata"]["name"])
            return
        self.registry.register(rtype)
        if event.type == MODIFIED:
            self._default_stored(rtype)

    def _default_stored(self, rtype: ResourceType) -> None:
        """kube-apiserver defaults custom resources when it reads them from storage, so a default
        added to a CRD's schema shows on objects stored before it: the stored objects are given
        their schema's defaults, with no new resourceVersion and no watch event (a read changes
        nothing). Stored dicts are replaced, never mutated."""
        table = self.store.tables.get(rtype.key)
        if table is None or not rtype.schemas:
            return
        for key, obj in list(table.objects.items()):
            version = GroupVersionKind.of(obj).version
            schema = rtype.schemas.get(version) or rtype.schemas.get(rtype.preferred_version)
            if schema is None:
                continue
            defaulted = schema.apply_defaults(orjson.loads(orjson.dumps(obj)))
            if defaulted != obj:
                table.objects[key] = defaulted

    def _index_loaded(self, table: tuple[str, str], key: tuple[str, str], obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        self.by_uid[meta["uid"]] = (table, key)
        for ref in meta.get("ownerReferences") or []:
            self.dependents[ref.get("uid", "")].add((table, key))

    def lookup_uid(self, uid: str) -> dict[str, Any] | None:
        location = self.by_uid.get(uid)
        return None if location is None else self.store.get(*location)

    # -- start-up ----------------------------------------------------------------------------------
    def _load(self) -> None:
        assert self.persistence is not None
        rows = self.persistence.load_all()
        for table, key, obj in rows:
            if table == CRD_KEY:
                self.store.load(table, key, obj)
                self._index_loaded(table, key, obj)
                try:
                    self.registry.register(resource_type_for(obj))
                except (KeyError, TypeError, ValueError):  # pragma: no cover - stored CRDs were valid
                    log.exception("cannot serve stored CRD %s", key[1])
        for table, key, obj in rows:
            if table != CRD_KEY:
                self.store.load(table, key, obj)
                self._index_loaded(table, key, obj)
        for rtype in list(self.registry):
            if not rtype.builtin:
                self._default_stored(rtype)

    def _bootstrap(self) -> None:
        for name in INITIAL_NAMESPACES:
            if self.store.get(NAMESPACE_KEY, ("", name)) is None:
                self.store.commit(
                    table=NAMESPACE_KEY,
                    key=("", name),
                    event_type=ADDED,
                    obj={
                        "apiVersion": "v1",
                        "kind": "Namespace",
                        "metadata": {
                            "name": name,
                            "uid": str(uuid.uuid4()),
                            "creationTimestamp": self.timestamp(),
                            "labels": {"kubernetes.io/metadata.name": name},
                        },
                        "spec": {"finalizers": ["kubernetes"]},
                        "status": {"phase": "Active"},
                    },
                )
        if importlib.util.find_spec("devcluster.apiserver.admission") is not None:
            self.admission = _make_admission(self)

    # -- helpers -----------------------------------------------------------------------------------
    def timestamp(self) -> str:
        return format_time(self.clock())

    def namespace(self, name: str) -> dict[str, Any] | None:
        return self.store.get(NAMESPACE_KEY, ("", name))

    def resource_type(self, key: tuple[str, str]) -> ResourceType | None:
        return self.registry.get(key)

    def rbac_objects(self, plural: str, namespace: str | None) -> list[dict[str, Any]]:
        """The stored Roles, ClusterRoles and their bindings (an :data:`~.auth.rbac.RbacLister`)."""
        table = self.store.tables.get((RBAC_GROUP, plural))
        return [] if table is None else [obj for _, obj in table.sorted_items(namespace)]

    def close(self) -> None:
        if self.persistence is not None:
            self.persistence.close()


def _make_admission(cluster: Cluster) -> Any:
    """Wire ``devcluster.apiserver.admission.AdmissionChain`` to this cluster's webhook configurations."""
    module = importlib.import_module("devcluster.apiserver.admission")

    def _configs(plural: str) -> Callable[[], list[dict[str, Any]]]:
        table = cluster.store.table(("admissionregistration.k8s.io", plural))
        return lambda: [obj for _, obj in table.sorted_items()]

    def _namespace_labels(name: str) -> dict[str, str] | None:
        found = cluster.namespace(name)
        return None if found is None else dict(found["metadata"].get("labels") or {})

    return module.AdmissionChain(
        list_mutating=_configs("mutatingwebhookconfigurations"),
        list_validating=_configs("validatingwebhookconfigurations"),
        namespace_labels=_namespace_labels,
        service_resolver=cluster.options.service_resolver,
        authorize=lambda spec: review_access(spec, cluster.options, cluster.rbac_objects),
    )
