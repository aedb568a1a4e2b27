"""Creating and deleting an AppWrapper's components (AppWrapper's ``resource_management.go``).

**Create** (:func:`create_components`), component by component, skipping those already deployed:

1. build the object (:func:`appwrapper.components.build_component`); a bad component is *fatal*;
2. if the component has no ``ResourcesDeployed`` condition yet, record its name/kind/apiVersion with
   ``ResourcesDeployed=Unknown`` "ComponentCreationInitiated" **before** creating it, so a crash
   between the create and the next status write still leaves a record to clean up from;
3. create it. ``AlreadyExists`` is success only if the AppWrapper controls the existing object
   (a retried create after a crash), else fatal and the component is recorded as
   ``ResourcesDeployed=False`` (it was never ours, so nothing will delete it). Any other failure is recorded as
   ``ResourcesDeployed=False`` "ComponentCreationErrored" and returned; it is fatal when the kind is
   not served (the CRD is missing) or the object is ``Invalid``, otherwise it is retried;
4. record the real name (``generateName``) with ``ResourcesDeployed=True`` "ComponentCreatedSuccessfully".

**Delete** (:func:`delete_components`), the progress guarantee behind quota release: set
``DeletingResources=True`` "DeletionInitiated"; delete every recorded component with background
propagation; once none is left *and* no pod labelled for the AppWrapper remains (read live), clear
``DeletingResources`` ("DeletionComplete") and answer ``True``. After
``forcefulDeletionGracePeriodDuration`` (from ``DeletingResources``' transition) remaining pods are
deleted with grace period 0, then, once the pods are gone, the components too. Until then the
answer is ``False`` and the caller requeues. A component whose kind is no longer served counts as
gone (AppWrapper issue #276: deletion used to hang on it).

**Never delete what is not ours.** A component is deleted only after a live read shows that this
AppWrapper (by UID) is its controller, and the delete carries that object's UID as a precondition, so
an object replaced in between is not hit either. The AppWrapper operator deletes recorded components
by name alone (``resource_management.go``): an AppWrapper wrapping a ConfigMap named like a user's
existing one fails on ``AlreadyExists`` and then deletes the user's ConfigMap. Since the webhook's
access review only checks that the user may *create* each component, that let anyone who may create
AppWrappers delete same-named objects of others in the namespace. We deliberately differ here.

Invariant: these functions edit ``attempt.status`` and flush it exactly where the operator patches;
they raise only the status writes' API errors (a failed create or delete is an outcome, not an
exception).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from appwrapper.components import ComponentError, build_component
from appwrapper.model import DELETING_RESOURCES, RESOURCES_DEPLOYED
from appwrapper.state import Attempt
from shared.jobmeta import controller_owner_ref
from shared.kube import AlreadyExists, ApiError, Conflict, Invalid, KubeError, UnknownKindError
from shared.kube.conditions import find_condition, is_condition_true, is_false, is_undecided, set_condition

__all__ = ["CreateFailure", "create_components", "delete_components", "error_text"]

log = logging.getLogger(__name__)

BACKGROUND = "Background"


@dataclass(frozen=True)
class CreateFailure:
    """Why components could not all be created; ``fatal`` ones are never retried."""

    message: str
    fatal: bool


def error_text(exc: Exception) -> str:
    """What Go's error would print: an API Status's own message, else the error text."""
    if isinstance(exc, ApiError) and exc.message:
        return exc.message
    return str(exc)


def _set_component(attempt: Attempt, index: int, status: str, reason: str) -> None:
    entry = attempt.component_status[index]
    conditions = entry.get("conditions")
    if not isinstance(conditions, list):
        conditions = entry["conditions"] = []
    set_condition(
        conditions, condition_type=RESOURCES_DEPLOYED, status=status, reason=reason, now=attempt.now
    )


def _component_conditions(attempt: Attempt, index: int) -> list[dict[str, Any]]:
    conditions = attempt.component_status[index].get("conditions")
    return conditions if isinstance(conditions, list) else []


def _controlled_by_appwrapper(obj: dict[str, Any], attempt: Attempt) -> bool:
    """Whether ``obj``'s controller reference is this AppWrapper (by UID; by name when it has none)."""
    owner = controller_owner_ref(obj)
    if owner is None or owner.get("kind") not in (None, "AppWrapper"):
        return False
    uid = (attempt.aw.get("metadata") or {}).get("uid")
    if uid:
        return bool(owner.get("uid") == uid)
    return bool(owner.get("name") == attempt.name)


async def _create_component(attempt: Attempt, index: int) -> CreateFailure | None:
    try:
        obj = build_component(attempt.aw, index)
    except ComponentError as exc:
        return CreateFailure(str(exc), fatal=True)
    where = f"spec.components[{index}]"
    entry = attempt.component_status[index]
    metadata = obj.get("metadata") or {}
    name = str(metadata.get("name") or "")
    if find_condition(_component_conditions(attempt, index), RESOURCES_DEPLOYED) is None:
        entry.update(name=name, kind=obj["kind"], apiVersion=obj["apiVersion"])
        _set_component(attempt, index, "Unknown", "ComponentCreationInitiated")
        try:
            await attempt.flush()
        except KubeError as exc:
            return CreateFailure(error_text(exc), fatal=False)
    try:
        created = await attempt.port.create(obj)
    except AlreadyExists:
        try:
            existing = await attempt.port.get(
                api_version=obj["apiVersion"], kind=obj["kind"], namespace=attempt.namespace, name=name
            )
        except KubeError as exc:
            return CreateFailure(error_text(exc), fatal=False)
        if existing is None:
            return CreateFailure(f"{where}: resource {name} disappeared while being created", fatal=False)
        if not _controlled_by_appwrapper(existing, attempt):
            # Not ours: record it as never deployed, so no deletion path will ever touch it.
            _set_component(attempt, index, "False", "ComponentCreationErrored")
            failure = CreateFailure(
                f"{where}: resource {name} exists, but is not controlled by appwrapper", fatal=True
            )
            try:
                await attempt.flush()
            except KubeError as exc:
                return CreateFailure(error_text(exc), fatal=False)
            return failure
        created = existing
    except KubeError as exc:
        _set_component(attempt, index, "False", "ComponentCreationErrored")
        try:
            await attempt.flush()
        except KubeError as patch_error:
            return CreateFailure(error_text(patch_error), fatal=False)
        return CreateFailure(f"{where}: {error_text(exc)}", fatal=isinstance(exc, UnknownKindError | Invalid))
    entry["name"] = str((created.get("metadata") or {}).get("name") or name)
    _set_component(attempt, index, "True", "ComponentCreatedSuccessfully")
    try:
        await attempt.flush()
    except KubeError as exc:
        return CreateFailure(error_text(exc), fatal=False)
    return None


async def create_components(attempt: Attempt) -> CreateFailure | None:
    """Create every component not yet deployed, in order; the first failure stops the pass."""
    for index in range(min(len(attempt.components), len(attempt.component_status))):
        if not is_condition_true(_component_conditions(attempt, index), RESOURCES_DEPLOYED):
            failure = await _create_component(attempt, index)
            if failure is not None:
                return failure
    return None


async def _delete_if_present(
    attempt: Attempt, index: int, *, propagation: str | None = None, grace: int | None = None
) -> bool:
    """AppWrapper's ``deleteIfPresent``: ``True`` while the component may still exist."""
    entry = attempt.component_status[index]
    deployed = find_condition(_component_conditions(attempt, index), RESOURCES_DEPLOYED)
    name = str(entry.get("name") or "")
    if deployed is None or is_false(deployed) or (is_undecided(deployed) and not name):
        return False
    api_version, kind = str(entry.get("apiVersion", "")), str(entry.get("kind", ""))
    where = f"{attempt.namespace}/{attempt.name}"
    try:
        existing = await attempt.port.get(
            api_version=api_version, kind=kind, namespace=attempt.namespace, name=name
        )
        if existing is not None and not _controlled_by_appwrapper(existing, attempt):
            log.warning(
                "not deleting %s %s/%s: it is not controlled by AppWrapper %s",
                kind,
                attempt.namespace,
                name,
                where,
                extra={"appwrapper": where},
            )
            existing = None
        present = existing is not None and await attempt.port.delete(
            api_version=api_version,
            kind=kind,
            namespace=attempt.namespace,
            name=name,
            uid=str((existing.get("metadata") or {}).get("uid") or "") or None,
            propagation_policy=propagation,
            grace_period_seconds=grace,
        )
    except Conflict:
        return True  # the UID precondition failed: the name now holds another object; read again
    except (KubeError, ValueError) as exc:
        log.error("deletion error", extra={"appwrapper": where, "error": str(exc)})
        return True
    if not present:
        _set_component(attempt, index, "False", "CompononetDeleted")  # sic: AppWrapper's reason
        return False
    return True


async def delete_components(attempt: Attempt) -> bool:
    """Delete the components (see module doc); ``True`` once nothing is left."""
    attempt.set(DELETING_RESOURCES, "True", "DeletionInitiated")
    count = min(len(attempt.components), len(attempt.component_status))
    remaining = False
    for index in range(count):
        remaining = await _delete_if_present(attempt, index, propagation=BACKGROUND) or remaining
    grace = attempt.knobs.forceful_deletion_grace.total_seconds()
    expired = attempt.remaining(attempt.since(DELETING_RESOURCES), grace) < 0
    if remaining and not expired:
        return False
    try:
        pods = await attempt.port.list_pods(namespace=attempt.namespace, appwrapper=attempt.name)
    except KubeError as exc:
        log.error(
            "pod list error", extra={"appwrapper": f"{attempt.namespace}/{attempt.name}", "error": str(exc)}
        )
        pods = []
    if not remaining and not pods:
        attempt.clear(DELETING_RESOURCES, "DeletionComplete")
        return True
    if expired:
        if pods:
            for pod in pods:
                pod_name = str((pod.get("metadata") or {}).get("name", ""))
                try:
                    await attempt.port.delete_pod(
                        namespace=attempt.namespace, name=pod_name, grace_period_seconds=0
                    )
                except KubeError as exc:
                    log.error("forceful pod deletion error", extra={"pod": pod_name, "error": str(exc)})
        else:
            for index in range(count):
                await _delete_if_present(attempt, index, grace=0)
    return False
