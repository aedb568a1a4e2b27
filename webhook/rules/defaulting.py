"""Kueue's job defaulting (``BaseWebhook.Default``), in Kueue's order, as a minimal JSON patch.

Order and rules (``jobframework/defaults.go``, ``utils.go`` at the commit in the reference notes):

1. **Default LocalQueue**: a LocalQueue named ``default`` exists in the namespace, the job has no
   queue-name, its controller owner is not a Kueue-managed kind, and the namespace matches
   ``managedJobsNamespaceSelector`` (Kueue #13374) -> label ``kueue.x-k8s.io/queue-name: default``.
2. **Default WorkloadPriorityClass**: no priority-class label, owner not Kueue-managed, and a
   WorkloadPriorityClass named ``default`` exists -> label ``kueue.x-k8s.io/priority-class: default``.
3. **Suspend** (``WorkloadShouldBeSuspended``): never for an object being deleted; never when an
   ancestor is managed by Kueue (owner walk, errors deny the request); with a queue-name -> suspend
   (no namespace check here, as in Kueue); without one and ``manageJobsWithoutQueueName`` -> suspend
   iff the namespace matches the selector. Only if not already suspended.
4. **managedBy** (``ApplyDefaultForManagedBy``): for adapters with ``can_default_managed_by()`` and a
   queue-name label whose LocalQueue -> ClusterQueue uses an AdmissionCheck run by a MultiKueue
   controller -> ``set_managed_by("kueue.x-k8s.io/multikueue")``.
5. **Elastic scheduling gate** (batch Job only, ``applyWorkloadSliceSchedulingGate``; feature gate
   ``ElasticJobsViaWorkloadSlices``, Beta and on since Kueue 0.18, ``Framework.elastic_jobs``): a job annotated
   ``kueue.x-k8s.io/elastic-job: "true"`` gets the scheduling gate ``kueue.x-k8s.io/elastic-job``
   appended to its pod template's ``spec.schedulingGates`` unless already there
   (``Framework.elastic_gate_template_path``). A template that is not an object is a 400 naming it.

The rules read the request object and mutate a copy of it made at their first write
(``_Working``; labels directly, suspend/managedBy through the adapter, which
knows its kind's field paths) and ``patch.diff_ops`` produces add/replace operations on
exactly the touched paths. Every lookup is a cache read (``Lookups``).

Errors Kueue returns from ``Default`` raise ``DefaultingError``; the server turns them into a denial
exactly as controller-runtime does, which depends on whether an API ``StatusError`` is inside:

* **an object not found in the cache** (the namespace when a selector is set; an owner of a known kind
  anywhere up the chain): Kueue reads through controller-runtime's cached client, whose miss is
  ``apierrors.NewNotFound`` with the *Kind* as resource (``cache_reader.go``), so the text is
  ``Job.batch "ghost" not found`` / ``Namespace "ns" not found``. Kueue wraps it
  (``errors.Join(ErrWorkloadOwnerNotFound, err)``, ``fmt.Errorf("failed to get namespace: %w")``) but
  the defaulter's ``errors.As(err, &apiStatus)`` finds the StatusError and answers with *its* Status:
  code 404, reason ``NotFound``, ``details`` {name, group, kind}; the wrapping text never reaches the
  user. ``DefaultingError.status`` carries that Status.
* **plain errors** (``cyclic ownership``, ``managed owner chain limit reached``):
  ``admission.Denied(err.Error())``, code 403, reason ``Forbidden``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import orjson

from shared.ancestry import AncestryError, OwnerNotFoundError, OwnerRef
from shared.ancestry import find_managed_ancestor as walk_to_managed_ancestor
from shared.constants import (
    DEFAULT_LOCAL_QUEUE_NAME,
    DEFAULT_WORKLOAD_PRIORITY_CLASS_NAME,
    ELASTIC_JOB_SCHEDULING_GATE,
    MULTIKUEUE_CONTROLLER_NAME,
    QUEUE_LABEL,
    WORKLOAD_PRIORITY_CLASS_LABEL,
)
from shared.frameworks.base import AdapterError, GenericJob
from shared.frameworks.capabilities import has_managed_by
from shared.frameworks.strconv import quote
from shared.jobmeta import controller_owner_ref, job_namespace, label_value, queue_name
from shared.kube import GroupVersionKind
from webhook.rules.lookups import Lookups, ObjectKey
from webhook.rules.patch import diff_ops
from webhook.rules.settings import Framework, WebhookSettings

__all__ = [
    "DefaultingError",
    "cache_not_found",
    "default_job",
    "find_managed_ancestor",
    "owner_managed_by_kueue",
]


class DefaultingError(Exception):
    """Kueue's ``Default`` returned an error; ``str()`` is the denial message.

    ``status`` is the ``metav1.Status`` to deny with when Kueue's error wraps an API StatusError;
    ``None`` means a plain error (403 ``Forbidden``).
    """

    def __init__(self, message: str, *, status: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.status = status


def cache_not_found(*, api_version: str, kind: str, name: str) -> DefaultingError:
    """The error of a controller-runtime cached ``Get`` miss, as the defaulter answers it.

    ``apierrors.NewNotFound(schema.GroupResource{Group: group, Resource: kind}, name)``: the
    qualified resource is ``<Kind>.<group>`` (just ``<Kind>`` in the core group), the name ``%q``.
    """
    group = GroupVersionKind.from_api_version(api_version, kind).group
    resource = f"{kind}.{group}" if group else kind  # schema.GroupResource.String()
    message = f"{resource} {quote(name)} not found"
    # metav1.StatusDetails in Go's field order; an empty group is omitted (omitempty)
    details: dict[str, Any] = (
        {"name": name, "group": group, "kind": kind} if group else {"name": name, "kind": kind}
    )
    status = {"status": "Failure", "message": message, "reason": "NotFound", "details": details, "code": 404}
    return DefaultingError(message, status=status)


def owner_managed_by_kueue(obj: Mapping[str, Any], *, settings: WebhookSettings) -> bool:
    """``IsOwnerManagedByKueueForObject``: the controller owner is a kind Kueue manages."""
    owner = controller_owner_ref(obj)
    if owner is None:
        return False
    return (owner.get("apiVersion"), owner.get("kind")) in settings.managed_owner_kinds


def find_managed_ancestor(
    obj: Mapping[str, Any], *, settings: WebhookSettings, lookups: Lookups
) -> Mapping[str, Any] | None:
    """``FindAncestorJobManagedByKueue`` (``shared.ancestry``) over the informer caches; its errors
    as the defaulter answers them."""

    def lookup(owner: OwnerRef) -> Mapping[str, Any] | None:
        return lookups.owner(ObjectKey(owner.api_version, owner.kind, owner.namespace, owner.name))

    try:
        return walk_to_managed_ancestor(
            obj,
            owner_kinds=settings.owner_kinds,
            manage_jobs_without_queue_name=settings.manage_jobs_without_queue_name,
            lookup=lookup,
        )
    except OwnerNotFoundError as exc:  # errors.Join(ErrWorkloadOwnerNotFound, <the cache's NotFound>)
        raise cache_not_found(
            api_version=exc.owner.api_version, kind=exc.owner.kind, name=exc.owner.name
        ) from exc
    except AncestryError as exc:  # cyclic ownership, chain limit: admission.Denied(err.Error())
        raise DefaultingError(str(exc)) from exc


def _namespace_selected(namespace: str, *, settings: WebhookSettings, lookups: Lookups) -> bool:
    """``namespaceMatchesSelector``: nil selector matches; an unknown namespace is an error."""
    if settings.managed_jobs_namespace_selector is None:
        return True
    labels = lookups.namespace_labels(namespace)
    if labels is None:  # fmt.Errorf("failed to get namespace: %w", <the cache's NotFound>)
        raise cache_not_found(api_version="v1", kind="Namespace", name=namespace)
    return settings.namespace_selected(labels)


def _being_deleted(obj: Mapping[str, Any]) -> bool:
    metadata = obj.get("metadata")
    if type(metadata) is not dict and not isinstance(metadata, Mapping):
        return False
    return metadata.get("deletionTimestamp") is not None


def _set_label(obj: dict[str, Any], key: str, value: str) -> None:
    metadata = obj.setdefault("metadata", {})
    labels = metadata.get("labels")
    if not isinstance(labels, dict):
        labels = {}
        metadata["labels"] = labels
    labels[key] = value


def _should_suspend(obj: Mapping[str, Any], *, settings: WebhookSettings, lookups: Lookups) -> bool:
    if _being_deleted(obj):
        return False
    if find_managed_ancestor(obj, settings=settings, lookups=lookups) is not None:
        return False
    if queue_name(obj):
        return True
    if settings.manage_jobs_without_queue_name:
        return _namespace_selected(job_namespace(obj), settings=settings, lookups=lookups)
    return False


def _multikueue_behind(obj: Mapping[str, Any], *, settings: WebhookSettings, lookups: Lookups) -> bool:
    queue = label_value(obj, QUEUE_LABEL)
    if queue is None:
        return False
    cluster_queue = lookups.cluster_queue_for(job_namespace(obj), queue)
    if cluster_queue is None:
        return False
    controllers = lookups.admission_check_controllers(cluster_queue)
    return any(name in settings.multikueue_controller_names for name in controllers)


def default_job(
    obj: dict[str, Any],
    *,
    framework: Framework,
    settings: WebhookSettings,
    lookups: Lookups,
    finish: Callable[[dict[str, Any]], None] | None = None,
) -> list[dict[str, Any]]:
    """The JSON patch (possibly empty) that applies Kueue's defaults to the raw ``obj``.

    ``finish`` applies a framework's own defaults to the defaulted copy last (AppWrapper's user
    labels). ``obj`` is not modified. Raises ``DefaultingError`` (deny) and
    ``shared.frameworks.AdapterError`` (the object has a field of the wrong type; the caller
    answers 400 naming the path).
    """
    # Rules read the request object and write to a private copy made at the first write (most
    # admissions change nothing: then nothing is copied and there is nothing to diff)
    working = _Working(obj, framework)
    namespace = job_namespace(obj)
    owner_managed = owner_managed_by_kueue(obj, settings=settings)

    # 1. default LocalQueue
    if (
        lookups.local_queue_exists(namespace, DEFAULT_LOCAL_QUEUE_NAME)
        and not queue_name(working.obj)
        and not owner_managed
        and _namespace_selected(namespace, settings=settings, lookups=lookups)
    ):
        _set_label(working.own().obj, QUEUE_LABEL, DEFAULT_LOCAL_QUEUE_NAME)

    # 2. default WorkloadPriorityClass
    if (
        not label_value(working.obj, WORKLOAD_PRIORITY_CLASS_LABEL)
        and not owner_managed
        and lookups.workload_priority_class_exists(DEFAULT_WORKLOAD_PRIORITY_CLASS_NAME)
    ):
        _set_label(working.own().obj, WORKLOAD_PRIORITY_CLASS_LABEL, DEFAULT_WORKLOAD_PRIORITY_CLASS_NAME)

    # 3. suspend
    if _should_suspend(working.obj, settings=settings, lookups=lookups) and not working.job.is_suspended():
        working.own().suspend()

    # 4. managedBy behind a MultiKueue admission check
    job = working.job
    if (
        has_managed_by(job)
        and job.can_default_managed_by()
        and _multikueue_behind(working.obj, settings=settings, lookups=lookups)
    ):
        managed = working.own()
        assert has_managed_by(managed)
        managed.set_managed_by(MULTIKUEUE_CONTROLLER_NAME)

    # 5. elastic scheduling gate on the pod template
    if framework.elastic_gate_template_path is not None and framework.is_elastic(working.obj):
        _gate_template(working.own().obj, framework.elastic_gate_template_path, ELASTIC_JOB_SCHEDULING_GATE)

    if finish is not None:
        finish(working.own().obj)
    if not working.owned:
        return []  # no rule wrote: the object is the request's own, unchanged
    return diff_ops(obj, working.obj)


class _Working:
    """The object the rules see: the request's (read-only) until ``own()`` switches to a deep copy
    of it without ``metadata.managedFields`` (``_without_managed_fields``).

    ``job`` is the kind's adapter over the current object; after ``own()`` it wraps the copy, so a
    write through it never reaches the request object. ``owned`` is false as long as no rule wrote.
    """

    __slots__ = ("_framework", "job", "owned")

    def __init__(self, obj: dict[str, Any], framework: Framework) -> None:
        self._framework = framework
        self.job: GenericJob = framework.adapter(obj)
        self.owned = False

    @property
    def obj(self) -> dict[str, Any]:
        return self.job.obj

    def own(self) -> GenericJob:
        if not self.owned:
            copied: dict[str, Any] = orjson.loads(orjson.dumps(_without_managed_fields(self.job.obj)))
            self.job = self._framework.adapter(copied)
            self.owned = True
        return self.job


def _without_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` without ``metadata.managedFields`` (a shallow view: only the top and metadata dicts
    are new), what the rules read and the copy-on-write adapter copies.

    No rule reads or writes managedFields, and ``diff_ops`` never removes a key the copy lacks, so
    leaving them out changes no patch. On an object from a real API server they are every writer's
    field sets, the largest part of the metadata: copying them, then comparing them key by key with
    the original, was most of the copy-and-diff cost of a mutation."""
    metadata = obj.get("metadata")
    if isinstance(metadata, dict) and "managedFields" in metadata:
        return {**obj, "metadata": {key: value for key, value in metadata.items() if key != "managedFields"}}
    return obj


def _gate_template(obj: dict[str, Any], template_path: str, gate: str) -> None:
    """``utilpod.GateTemplate``: append ``{"name": gate}`` to the template's schedulingGates once."""
    node: Any = obj
    walked = ""
    for key in [*template_path.split("."), "spec"]:
        walked = f"{walked}.{key}" if walked else key
        child = node.get(key)
        if child is None:
            child = node[key] = {}
        if not isinstance(child, dict):
            raise AdapterError(walked, "must be an object")
        node = child
    gates = node.get("schedulingGates")
    if gates is None:
        gates = node["schedulingGates"] = []
    if not isinstance(gates, list):
        raise AdapterError(f"{walked}.schedulingGates", "must be a list")
    if not any(isinstance(item, dict) and item.get("name") == gate for item in gates):
        gates.append({"name": gate})
