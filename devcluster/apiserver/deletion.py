"""DELETE: preconditions, finalizers, propagation policies and the delete response.

kube-apiserver semantics (``registry/generic/registry/store.go``):

* An object with finalizers is not removed: it gets ``deletionTimestamp`` (and
  ``deletionGracePeriodSeconds: 0``, generation + 1) and lives until an update empties the list.
* ``propagationPolicy`` Orphan / Foreground adds the ``orphan`` / ``foregroundDeletion`` finalizer
  that the garbage collector (:mod:`devcluster.apiserver.controllers`) honours; Background removes the object
  at once and
  the collector deletes dependents afterwards. Without a policy batch/v1 Jobs orphan their
  dependents (the legacy default kube keeps for that group-version); everything else uses Background.
* Namespaces and CRDs always go through a terminating phase handled by their controllers.
* The response is ``Status Success`` (or the deleted object for pods and namespaces) when the object
  is gone, else the object with its deletionTimestamp; 202 only when ``orphanDependents: false`` was
  sent explicitly and the object is not gone, as the real handler does.
"""

from __future__ import annotations

from typing import Any

from devcluster.apiserver.core import NAMESPACE_KEY, Cluster
from devcluster.apiserver.customresources.definitions import CRD_CLEANUP_FINALIZER, CRD_KEY
from devcluster.apiserver.errors import StatusError, bad_request, conflict
from devcluster.apiserver.registry.resources import ResourceType
from devcluster.apiserver.rest import Caller, Rest, WriteOptions, copy_object
from devcluster.apiserver.storage.store import DELETED, MODIFIED

__all__ = ["FOREGROUND_FINALIZER", "ORPHAN_FINALIZER", "Deleter", "success_status"]

ORPHAN_FINALIZER = "orphan"
FOREGROUND_FINALIZER = "foregroundDeletion"
_POLICIES = ("Orphan", "Background", "Foreground")


def success_status(rtype: ResourceType, obj: dict[str, Any]) -> dict[str, Any]:
    details: dict[str, Any] = {"name": obj["metadata"]["name"]}
    if rtype.group:
        details["group"] = rtype.group
    details["kind"] = rtype.plural
    details["uid"] = obj["metadata"].get("uid", "")
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


class Deleter:
    def __init__(self, cluster: Cluster, rest: Rest) -> None:
        self.cluster = cluster
        self.rest = rest
        self.store = cluster.store

    async def delete(
        self,
        rtype: ResourceType,
        *,
        version: str,
        namespace: str,
        name: str,
        options: dict[str, Any],
        caller: Caller,
        dry_run: bool,
    ) -> tuple[int, dict[str, Any]]:
        if not isinstance(options, dict):
            raise bad_request("DeleteOptions must be an object")
        obj = self.rest.get(rtype, namespace=namespace, name=name)
        self._check_preconditions(rtype, obj, options.get("preconditions"))
        policy = self._policy(rtype, version, options)
        await self.rest._admit(
            "DELETE", rtype, version, namespace, name, None, obj, caller, WriteOptions(dry_run=dry_run), ""
        )
        code, body = self.delete_now(rtype, namespace=namespace, name=name, policy=policy, dry_run=dry_run)
        if code == 200 and body.get("kind") != "Status" and options.get("orphanDependents") is False:
            code = 202
        return code, body

    def _check_preconditions(self, rtype: ResourceType, obj: dict[str, Any], pre: Any) -> None:
        if not isinstance(pre, dict):
            return
        meta, name = obj["metadata"], obj["metadata"]["name"]
        if pre.get("uid") and pre["uid"] != meta.get("uid"):
            raise conflict(
                group=rtype.group,
                plural=rtype.plural,
                name=name,
                why=f"Precondition failed: UID in precondition: {pre['uid']}, UID in object meta: {meta.get('uid')}",
            )
        if pre.get("resourceVersion") and pre["resourceVersion"] != meta.get("resourceVersion"):
            raise conflict(
                group=rtype.group,
                plural=rtype.plural,
                name=name,
                why=f"Precondition failed: ResourceVersion in precondition: {pre['resourceVersion']}, "
                f"ResourceVersion in object meta: {meta.get('resourceVersion')}",
            )

    @staticmethod
    def _policy(rtype: ResourceType, version: str, options: dict[str, Any]) -> str:
        """The propagation policy of valid DeleteOptions (query_options.py refused the others)."""
        policy = options.get("propagationPolicy")
        orphan = options.get("orphanDependents")
        if policy is None and orphan is not None:
            policy = "Orphan" if orphan else "Background"
        if policy is None:
            return (
                "Orphan" if (rtype.group, version, rtype.plural) == ("batch", "v1", "jobs") else "Background"
            )
        return str(policy) if policy in _POLICIES else "Background"

    def delete_now(
        self, rtype: ResourceType, *, namespace: str, name: str, policy: str, dry_run: bool = False
    ) -> tuple[int, dict[str, Any]]:
        """The synchronous part (also used by the controllers, which skip admission)."""
        key = (namespace if rtype.namespaced else "", name)
        obj = self.store.get(rtype.key, key)
        if obj is None:
            return 200, {}
        meta = obj["metadata"]
        finalizers = [
            f for f in meta.get("finalizers") or [] if f not in (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)
        ]
        existing_gc = [
            f for f in meta.get("finalizers") or [] if f in (ORPHAN_FINALIZER, FOREGROUND_FINALIZER)
        ]
        if rtype.key == NAMESPACE_KEY:
            return 200, self._mark(
                rtype, key, obj, meta.get("finalizers") or [], dry_run=dry_run, terminating=True
            )
        if rtype.key == CRD_KEY and CRD_CLEANUP_FINALIZER not in finalizers:
            finalizers.append(CRD_CLEANUP_FINALIZER)
        if meta.get("deletionTimestamp"):
            # already deleting: only the GC finalizer choice can change (kube lets a later
            # delete switch orphan <-> foreground); never add new ones otherwise
            if policy == "Orphan" and existing_gc != [ORPHAN_FINALIZER]:
                finalizers.append(ORPHAN_FINALIZER)
            elif policy == "Foreground" and existing_gc != [FOREGROUND_FINALIZER]:
                finalizers.append(FOREGROUND_FINALIZER)
            else:
                finalizers += existing_gc
            return 200, self._mark(rtype, key, obj, finalizers, dry_run=dry_run)
        if policy == "Orphan":
            finalizers.append(ORPHAN_FINALIZER)
        elif policy == "Foreground":
            finalizers.append(FOREGROUND_FINALIZER)
        if finalizers:
            return 200, self._mark(rtype, key, obj, finalizers, dry_run=dry_run)
        gone = obj if dry_run else self.store.commit(table=rtype.key, key=key, event_type=DELETED, obj=obj)
        return 200, (gone if rtype.returns_deleted_object else success_status(rtype, gone))

    def _mark(
        self,
        rtype: ResourceType,
        key: tuple[str, str],
        obj: dict[str, Any],
        finalizers: list[str],
        *,
        dry_run: bool,
        terminating: bool = False,
    ) -> dict[str, Any]:
        meta = obj["metadata"]
        if meta.get("deletionTimestamp") and list(meta.get("finalizers") or []) == finalizers:
            return obj
        new = copy_object(obj)
        new_meta = new["metadata"]
        if not new_meta.get("deletionTimestamp"):
            if "generation" in new_meta:
                new_meta["generation"] += 1
            new_meta["deletionTimestamp"] = self.cluster.timestamp()
            new_meta["deletionGracePeriodSeconds"] = 0
        if finalizers:
            new_meta["finalizers"] = finalizers
        else:
            new_meta.pop("finalizers", None)
        if terminating:
            new["status"] = {**(new.get("status") or {}), "phase": "Terminating"}
        if dry_run:
            return new
        return self.store.commit(table=rtype.key, key=key, event_type=MODIFIED, obj=new)

    def remove_finalizer(self, rtype: ResourceType, obj: dict[str, Any], finalizer: str) -> None:
        """Controller write: drop one finalizer; deletes the object when it was the last one."""
        meta = obj["metadata"]
        remaining = [f for f in meta.get("finalizers") or [] if f != finalizer]
        new = copy_object(obj)
        if remaining:
            new["metadata"]["finalizers"] = remaining
        else:
            new["metadata"].pop("finalizers", None)
        key = (meta.get("namespace", ""), meta["name"])
        event = DELETED if (meta.get("deletionTimestamp") and not remaining) else MODIFIED
        self.store.commit(table=rtype.key, key=key, event_type=event, obj=new)

    def replace(self, rtype: ResourceType, new: dict[str, Any]) -> None:
        """Controller write of a modified copy (e.g. owner references removed)."""
        meta = new["metadata"]
        self.store.commit(
            table=rtype.key, key=(meta.get("namespace", ""), meta["name"]), event_type=MODIFIED, obj=new
        )

    async def delete_collection(
        self,
        rtype: ResourceType,
        *,
        version: str,
        namespace: str | None,
        items: list[dict[str, Any]],
        options: dict[str, Any],
        caller: Caller,
        dry_run: bool,
    ) -> dict[str, Any]:
        deleted = []
        for obj in items:
            meta = obj["metadata"]
            try:
                _, body = await self.delete(
                    rtype,
                    version=version,
                    namespace=meta.get("namespace", ""),
                    name=meta["name"],
                    options=options,
                    caller=caller,
                    dry_run=dry_run,
                )
            except StatusError as error:
                if error.code == 404:
                    continue
                raise
            deleted.append(body if body.get("kind") != "Status" else obj)
        return {
            "kind": f"{rtype.kind}List",
            "apiVersion": rtype.api_version(version),
            "metadata": {"resourceVersion": str(self.store.revision)},
            "items": deleted,
        }
