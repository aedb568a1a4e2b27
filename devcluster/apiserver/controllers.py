"""Controllers standing in for kube-controller-manager: garbage collector, namespace and CRD cleanup.

They react to the store's event stream (a synchronous listener only records *what* to look at) and
do the work in one asyncio task, through the same store commits as API writes, so watchers see the
same sequence of events a real cluster produces:

* Garbage collector (ownerReferences, by uid): when no owner of an object exists any more it is
  deleted (Background); when some still exist, references to the missing ones are removed. An owner
  with the ``orphan`` finalizer has the references to it removed from its dependents, then loses the
  finalizer; one with ``foregroundDeletion`` has its dependents deleted (in foreground too) and loses
  the finalizer once no dependent with ``blockOwnerDeletion: true`` remains. Like the real collector,
  an object created with an owner that does not exist is collected.
* Namespace controller: a terminating namespace has all its contents deleted; once nothing is left
  the ``kubernetes`` spec finalizer is removed and the namespace is gone.
* CRD finalizer: a deleted CRD has its objects deleted, then loses
  ``customresourcecleanup.apiextensions.k8s.io`` and stops being served.
* Service-account and root-CA publishers: every active namespace gets the ``default``
  ServiceAccount and the ``kube-root-ca.crt`` ConfigMap (recreated if deleted), as in a real
  cluster, so code and tests that list a namespace see what they would see there.

Controllers skip admission webhooks (as they would not for a real GC; a documented difference).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from devcluster.apiserver.core import NAMESPACE_KEY, Cluster
from devcluster.apiserver.customresources.definitions import CRD_CLEANUP_FINALIZER, CRD_KEY
from devcluster.apiserver.deletion import FOREGROUND_FINALIZER, ORPHAN_FINALIZER, Deleter
from devcluster.apiserver.rest import copy_object
from devcluster.apiserver.storage.store import DELETED, StoredEvent

__all__ = ["Controllers"]

log = logging.getLogger(__name__)

WorkItem = tuple[str, str]  # ("owner", uid) | ("namespace", name) | ("crd", name) | ("populate", name)
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
_SERVICE_ACCOUNTS = ("", "serviceaccounts")
_CONFIGMAPS = ("", "configmaps")


class Controllers:
    def __init__(self, *, cluster: Cluster, deleter: Deleter, ca_pem: str = "") -> None:
        self.cluster = cluster
        self.deleter = deleter
        self.ca_pem = ca_pem
        self._pending: dict[WorkItem, None] = {}
        self._wake = asyncio.Event()
        cluster.on_event.append(self._on_event)
        for table, _, obj in cluster.store.iter_all():  # work left over from before a restart
            self._note(table, obj, deleted=False)

    # -- event intake (synchronous, inside commit) ---------------------------------------------------
    def _on_event(self, table: tuple[str, str], event: StoredEvent) -> None:
        self._note(table, event.obj, deleted=event.type == DELETED)

    def _note(self, table: tuple[str, str], obj: dict[str, Any], *, deleted: bool) -> None:
        meta = obj["metadata"]
        uid = meta.get("uid", "")
        for ref in meta.get("ownerReferences") or []:
            self._add(("owner", ref.get("uid", "")))
        namespace = meta.get("namespace")
        if table == NAMESPACE_KEY and not meta.get("deletionTimestamp") and not deleted:
            self._add(("populate", meta["name"]))
        elif (
            deleted
            and namespace
            and (
                (table == _SERVICE_ACCOUNTS and meta["name"] == "default")
                or (table == _CONFIGMAPS and meta["name"] == ROOT_CA_CONFIGMAP)
            )
        ):
            self._add(("populate", namespace))
        if deleted:
            if self.cluster.dependents.get(uid):
                self._add(("owner", uid))
            if namespace:
                ns = self.cluster.namespace(namespace)
                if ns is not None and ns["metadata"].get("deletionTimestamp"):
                    self._add(("namespace", namespace))
            rtype = self.cluster.registry.get(table)
            if rtype is not None and rtype.crd_uid:
                self._add(("crd", f"{rtype.plural}.{rtype.group}"))
            return
        if meta.get("deletionTimestamp"):
            finalizers = meta.get("finalizers") or []
            if ORPHAN_FINALIZER in finalizers or FOREGROUND_FINALIZER in finalizers:
                self._add(("owner", uid))
            if table == NAMESPACE_KEY:
                self._add(("namespace", meta["name"]))
            elif table == CRD_KEY:
                self._add(("crd", meta["name"]))

    def _add(self, item: WorkItem) -> None:
        self._pending[item] = None
        self._wake.set()

    # -- the worker ---------------------------------------------------------------------------------
    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake.clear()
            while self._pending:
                item = next(iter(self._pending))
                del self._pending[item]
                try:
                    self._process(item)
                except Exception:  # a controller bug must not stop the cluster
                    log.exception("controller failed on %s", item)
                await asyncio.sleep(0)  # let API requests interleave with a long cleanup

    def _process(self, item: WorkItem) -> None:
        kind, name = item
        if kind == "owner":
            self._collect(name)
        elif kind == "namespace":
            self._clean_namespace(name)
        elif kind == "populate":
            self._populate_namespace(name)
        else:
            self._clean_crd(name)

    def _collect(self, uid: str) -> None:
        cluster = self.cluster
        owner = cluster.lookup_uid(uid)
        locations = list(cluster.dependents.get(uid, ()))
        if owner is None:
            for table, key in locations:
                dependent = cluster.store.get(table, key)
                if dependent is not None:
                    self._handle_dangling(table, dependent)
            if not cluster.dependents.get(uid):
                cluster.dependents.pop(uid, None)
            return
        meta = owner["metadata"]
        if not meta.get("deletionTimestamp"):
            return
        finalizers = meta.get("finalizers") or []
        owner_table = cluster.by_uid[uid][0]
        owner_type = cluster.registry.get(owner_table)
        if owner_type is None:
            return
        if ORPHAN_FINALIZER in finalizers:
            for table, key in locations:
                dependent = cluster.store.get(table, key)
                if dependent is None:
                    continue
                new = copy_object(dependent)
                refs = [r for r in new["metadata"].get("ownerReferences") or [] if r.get("uid") != uid]
                if refs:
                    new["metadata"]["ownerReferences"] = refs
                else:
                    new["metadata"].pop("ownerReferences", None)
                rtype = cluster.registry.get(table)
                if rtype is not None:
                    self.deleter.replace(rtype, new)
            self.deleter.remove_finalizer(owner_type, owner, ORPHAN_FINALIZER)
        elif FOREGROUND_FINALIZER in finalizers:
            blocking = 0
            for table, key in locations:
                dependent = cluster.store.get(table, key)
                rtype = cluster.registry.get(table)
                if dependent is None or rtype is None:
                    continue
                if not dependent["metadata"].get("deletionTimestamp"):
                    self.deleter.delete_now(rtype, namespace=key[0], name=key[1], policy="Foreground")
                    dependent = cluster.store.get(table, key)
                if dependent is not None and any(
                    r.get("uid") == uid and r.get("blockOwnerDeletion")
                    for r in dependent["metadata"].get("ownerReferences") or []
                ):
                    blocking += 1
            if blocking == 0:
                self.deleter.remove_finalizer(owner_type, owner, FOREGROUND_FINALIZER)

    def _handle_dangling(self, table: tuple[str, str], dependent: dict[str, Any]) -> None:
        rtype = self.cluster.registry.get(table)
        if rtype is None:
            return
        meta = dependent["metadata"]
        refs = meta.get("ownerReferences") or []
        solid = [r for r in refs if self.cluster.lookup_uid(r.get("uid", "")) is not None]
        if not solid:
            if not meta.get("deletionTimestamp"):
                self.deleter.delete_now(
                    rtype, namespace=meta.get("namespace", ""), name=meta["name"], policy="Background"
                )
            return
        if len(solid) != len(refs):
            new = copy_object(dependent)
            new["metadata"]["ownerReferences"] = solid
            self.deleter.replace(rtype, new)

    def _populate_namespace(self, name: str) -> None:
        cluster = self.cluster
        namespace = cluster.namespace(name)
        if namespace is None or namespace["metadata"].get("deletionTimestamp"):
            return
        wanted: list[tuple[tuple[str, str], dict[str, Any]]] = [
            (
                _SERVICE_ACCOUNTS,
                {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}},
            ),
            (
                _CONFIGMAPS,
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {
                        "name": ROOT_CA_CONFIGMAP,
                        "annotations": {
                            "kubernetes.io/description": (
                                "Contains a CA bundle that can be used to verify the "
                                "kube-apiserver when using internal endpoints such as the "
                                "internal service IP or kubernetes.default.svc. No other usage "
                                "is guaranteed across distributions of Kubernetes clusters."
                            )
                        },
                    },
                    "data": {"ca.crt": self.ca_pem},
                },
            ),
        ]
        for table, obj in wanted:
            key = (name, obj["metadata"]["name"])
            if cluster.store.get(table, key) is not None:
                continue
            obj["metadata"].update(
                namespace=name, uid=str(uuid.uuid4()), creationTimestamp=cluster.timestamp()
            )
            cluster.store.commit(table=table, key=key, event_type="ADDED", obj=obj)

    def _clean_namespace(self, name: str) -> None:
        cluster = self.cluster
        namespace = cluster.namespace(name)
        if namespace is None or not namespace["metadata"].get("deletionTimestamp"):
            return
        remaining = 0
        for table_key, table in list(cluster.store.tables.items()):
            rtype = cluster.registry.get(table_key)
            if rtype is None or not rtype.namespaced:
                continue
            for key, obj in table.sorted_items(name):
                remaining += 1
                if not obj["metadata"].get("deletionTimestamp"):
                    self.deleter.delete_now(rtype, namespace=name, name=key[1], policy="Background")
        if remaining and any(
            cluster.store.table(t).sorted_items(name)
            for t in list(cluster.store.tables)
            if (rt := cluster.registry.get(t)) is not None and rt.namespaced
        ):
            return
        new = copy_object(namespace)
        spec_finalizers = [f for f in (new.get("spec") or {}).get("finalizers") or [] if f != "kubernetes"]
        new.setdefault("spec", {})["finalizers"] = spec_finalizers
        if not spec_finalizers:
            new["spec"].pop("finalizers")
        event = "DELETED" if not new["metadata"].get("finalizers") and not spec_finalizers else "MODIFIED"
        cluster.store.commit(table=NAMESPACE_KEY, key=("", name), event_type=event, obj=new)

    def _clean_crd(self, name: str) -> None:
        cluster = self.cluster
        crd = cluster.store.get(CRD_KEY, ("", name))
        if crd is None or not crd["metadata"].get("deletionTimestamp"):
            return
        spec = crd["spec"]
        key = (spec["group"], spec["names"]["plural"])
        rtype = cluster.registry.get(key)
        if rtype is not None:
            table = cluster.store.table(key)
            for obj_key, obj in list(table.objects.items()):
                if not obj["metadata"].get("deletionTimestamp"):
                    self.deleter.delete_now(rtype, namespace=obj_key[0], name=obj_key[1], policy="Background")
            if table.objects:
                return
        crd_type = cluster.registry.get(CRD_KEY)
        assert crd_type is not None
        self.deleter.remove_finalizer(crd_type, crd, CRD_CLEANUP_FINALIZER)
