"""PodSetInfo: what admission injects into a job's pod templates, and how it is taken back out.

A ``PodSetInfo`` is built from a Workload's ``status.admission`` (flavors -> node labels and
tolerations, the ``kueue.x-k8s.io/podset`` label, queue labels, the workload annotation and
admission-check ``podSetUpdates``), merged into a pod template on start, and restored from the
Workload's ``spec.podSets`` on stop. This module is Kueue's ``pkg/podset/podset.go`` plus
``getPodSetsInfoFromStatus`` of the job reconciler, on raw pod-template dicts.

Invariant (Kueue's ``podset.Merge``): a merge never overwrites a key the template already has with a
different value; such a conflict is a permanent ``PodSetInfoConflictError`` (the Workload is then
finished ``FailedToStart``), never a silent overwrite. Tolerations and scheduling gates are appended
only when not already present. The one exception is Kueue's: for elastic jobs the Kueue-owned
slice-name (and, for an elastic admission, workload) annotations are replaced.

Invariant (``RestorePodSpec``): restoring sets template labels, annotations, node selector,
tolerations and scheduling gates to exactly the stored values, so merge-then-restore gives back the
original template; other template fields (affinity included, as in Kueue) are never touched. An
empty stored map or list removes the key, as Kubernetes serialises empty ``omitempty`` fields.

Feature gates that change the result are keyword arguments defaulting to Kueue's defaults, so the
caller passes its configuration explicitly. ResourceFlavors are plain data (``FlavorData``), so the
function stays pure; a flavor missing from the mapping raises ``UnknownFlavorError`` (retryable, like
Kueue's failed ``Get``), not a permanent error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from shared.constants import (
    CLUSTER_QUEUE_LABEL,
    ELASTIC_JOB_ANNOTATION,
    ELASTIC_JOB_ANNOTATION_VALUE,
    LOCAL_QUEUE_LABEL,
    MULTIKUEUE_ORIGIN_LABEL,
    MULTIKUEUE_WORKER_WORKLOAD_POD_LABEL,
    MULTIKUEUE_WORKER_WORKLOAD_POD_VALUE,
    PODSET_LABEL,
    PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION,
    TOPOLOGY_SCHEDULING_GATE,
    WORKLOAD_ANNOTATION,
    WORKLOAD_SLICE_NAME_ANNOTATION,
)
from shared.jsontree import copy_json
from shared.models.workload import PodSet, PodSetAssignment, PodSetUpdate, Workload
from shared.validation_k8s import is_dns1123_label

__all__ = [
    "DEFAULT_GATES",
    "FlavorData",
    "PodSetGates",
    "PodSetInfo",
    "PodSetInfoConflictError",
    "PodSetInfoError",
    "UnknownFlavorError",
    "bad_pod_sets_info_len_error",
    "merge_into_template",
    "merge_pod_set_info",
    "pod_set_info_from_pod_set",
    "pod_set_info_from_update",
    "pod_set_infos_from_admission",
    "pod_set_infos_from_workload_spec",
    "restore_template",
    "tolerations_equal",
]

INVALID_PODSET_INFO = "invalid podset infos"
INVALID_PODSET_UPDATE = "invalid admission check PodSetUpdate"


class PodSetInfoError(Exception):
    """A permanent error starting a job from its admission (Kueue's ``ErrInvalidPodsetInfo``)."""


class PodSetInfoConflictError(PodSetInfoError):
    """Admission data conflicts with what the pod template or another admission check already set."""


class UnknownFlavorError(LookupError):
    """A ResourceFlavor named by the admission is not in the flavor data (retryable: not cached yet)."""

    def __init__(self, flavor: str) -> None:
        super().__init__(f'resourceflavor "{flavor}" not found')
        self.flavor = flavor


@dataclass
class PodSetInfo:
    name: str
    count: int
    annotations: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    node_selector: dict[str, str] = field(default_factory=dict)
    tolerations: list[dict[str, Any]] = field(default_factory=list)
    scheduling_gates: list[dict[str, Any]] = field(default_factory=list)


FlavorData = tuple[Mapping[str, str], Sequence[Mapping[str, Any]]]
"""A ResourceFlavor reduced to what admission injects: ``(spec.nodeLabels, spec.tolerations)``."""


def bad_pod_sets_info_len_error(*, want: int, got: int) -> PodSetInfoError:
    """``BadPodSetsInfoLenError``: "invalid podset infos: expecting 1 podset, got 2"."""
    return PodSetInfoError(f"{INVALID_PODSET_INFO}: expecting {want} podset, got {got}")


def _conflict(section: str, key: str, template_value: str, update_value: str) -> PodSetInfoConflictError:
    # BadPodSetsUpdateError wrapping maps.HaveConflict; value1 is the existing, value2 the new value.
    return PodSetInfoConflictError(
        f"{INVALID_PODSET_UPDATE}: conflict for {section}: "
        f"conflict for key={key}, value1={template_value}, value2={update_value}"
    )


def _check_no_conflict(section: str, existing: Mapping[str, str], incoming: Mapping[str, str]) -> None:
    for key, existing_value in existing.items():
        if key in incoming and incoming[key] != existing_value:
            raise _conflict(section, key, existing_value, incoming[key])


def tolerations_equal(first: Mapping[str, Any], second: Mapping[str, Any]) -> bool:
    """Kueue's ``tolerations.Equal``: same key, effect, value and operator ("" means "Equal").

    ``tolerationSeconds`` is not compared (``Toleration.MatchToleration``).
    """

    def operator(toleration: Mapping[str, Any]) -> Any:
        return toleration.get("operator") or "Equal"

    return operator(first) == operator(second) and all(
        (first.get(key) or "") == (second.get(key) or "") for key in ("key", "effect", "value")
    )


def _append_missing_tolerations(target: list[dict[str, Any]], incoming: Iterable[Mapping[str, Any]]) -> None:
    for toleration in incoming:
        if not any(tolerations_equal(existing, toleration) for existing in target):
            target.append(copy_json(dict(toleration)))


def _append_missing_gates(target: list[dict[str, Any]], incoming: Iterable[Mapping[str, Any]]) -> None:
    for gate in incoming:
        if dict(gate) not in target:
            target.append(copy_json(dict(gate)))


def merge_pod_set_info(target: PodSetInfo, update: PodSetInfo) -> None:
    """``PodSetInfo.Merge``: add ``update`` to ``target`` in place, refusing conflicting keys.

    Raises ``PodSetInfoConflictError`` ("invalid admission check PodSetUpdate: conflict for labels:
    conflict for key=k, value1=<target's>, value2=<update's>") and then leaves ``target`` unchanged.
    """
    _check_no_conflict("annotations", target.annotations, update.annotations)
    _check_no_conflict("labels", target.labels, update.labels)
    _check_no_conflict("nodeSelector", target.node_selector, update.node_selector)
    target.annotations.update(update.annotations)
    target.labels.update(update.labels)
    target.node_selector.update(update.node_selector)
    _append_missing_tolerations(target.tolerations, update.tolerations)
    _append_missing_gates(target.scheduling_gates, update.scheduling_gates)


def pod_set_info_from_update(update: PodSetUpdate) -> PodSetInfo:
    """``FromUpdate``: an admission check's ``podSetUpdates`` entry as a ``PodSetInfo`` (count 0)."""
    return PodSetInfo(
        name=update.name,
        count=0,
        annotations=dict(update.annotations or {}),
        labels=dict(update.labels or {}),
        node_selector=dict(update.node_selector or {}),
        tolerations=copy_json(list(update.tolerations or [])),
    )


def _set_or_drop(template: dict[str, Any], section: str, key: str, value: Any) -> None:
    """Write ``template[section][key] = value``, or remove the key when ``value`` is empty."""
    holder = template.get(section)
    if not value:
        if isinstance(holder, dict):
            holder.pop(key, None)
        return
    if holder is None:
        holder = {}
        template[section] = holder
    if not isinstance(holder, dict):
        raise PodSetInfoError(f"template.{section}: expected an object, got {type(holder).__name__}")
    holder[key] = value


_FIELDS = (
    ("metadata", "annotations", "annotations"),
    ("metadata", "labels", "labels"),
    ("spec", "nodeSelector", "node_selector"),
    ("spec", "tolerations", "tolerations"),
    ("spec", "schedulingGates", "scheduling_gates"),
)
"""(template section, wire key, PodSetInfo attribute) of every field a merge or restore may touch."""


def _apply(template: dict[str, Any], before: PodSetInfo, after: PodSetInfo) -> bool:
    changed = False
    for section, key, attribute in _FIELDS:
        value = getattr(after, attribute)
        if value != getattr(before, attribute):
            _set_or_drop(template, section, key, copy_json(value))
            changed = True
    return changed


def _read_map(section: Mapping[str, Any], key: str, path: str) -> dict[str, str]:
    value = section.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise PodSetInfoError(f"{path}: expected an object, got {type(value).__name__}")
    return {str(k): v for k, v in value.items()}


def _read_list(section: Mapping[str, Any], key: str, path: str) -> list[dict[str, Any]]:
    value = section.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, Mapping) for item in value):
        raise PodSetInfoError(f"{path}: expected a list of objects")
    return [dict(item) for item in value]


def _template_info(template: dict[str, Any], *, name: str = "", count: int = 0) -> PodSetInfo:
    metadata = template.get("metadata") or {}
    spec = template.get("spec") or {}
    if not isinstance(metadata, Mapping):
        raise PodSetInfoError(f"template.metadata: expected an object, got {type(metadata).__name__}")
    if not isinstance(spec, Mapping):
        raise PodSetInfoError(f"template.spec: expected an object, got {type(spec).__name__}")
    return PodSetInfo(
        name=name,
        count=count,
        annotations=_read_map(metadata, "annotations", "template.metadata.annotations"),
        labels=_read_map(metadata, "labels", "template.metadata.labels"),
        node_selector=_read_map(spec, "nodeSelector", "template.spec.nodeSelector"),
        tolerations=copy_json(_read_list(spec, "tolerations", "template.spec.tolerations")),
        scheduling_gates=copy_json(_read_list(spec, "schedulingGates", "template.spec.schedulingGates")),
    )


def merge_into_template(
    template: dict[str, Any], info: PodSetInfo, *, elastic_workload_slices: bool = True
) -> None:
    """``podset.Merge``: inject ``info`` into a raw pod template in place.

    Labels, annotations and node selector are added only where the template has no different value
    (else ``PodSetInfoConflictError`` and the template is left unchanged); tolerations and
    scheduling gates are appended without duplicates. With ``elastic_workload_slices`` (Kueue's
    ``ElasticJobsViaWorkloadSlices``, Beta, on) a stale slice-name annotation, and for an elastic
    admission a stale workload annotation, is replaced instead of conflicting.
    """
    current = _template_info(template)
    overridable: list[str] = []
    if elastic_workload_slices:
        overridable.append(WORKLOAD_SLICE_NAME_ANNOTATION)
        if WORKLOAD_SLICE_NAME_ANNOTATION in info.annotations:
            overridable.append(WORKLOAD_ANNOTATION)
    for key in overridable:
        if (
            key in info.annotations
            and current.annotations.get(key, info.annotations[key]) != info.annotations[key]
        ):
            del current.annotations[key]
    # ``current`` is already private to this call (``_template_info`` builds fresh maps and deep-copies
    # the lists; ``merge_pod_set_info`` only updates/appends to those containers, and ``_apply``
    # copies what it writes into the template), and is not read again: merge into it, no copy.
    merge_pod_set_info(current, info)
    _apply(template, _template_info(template), current)


def restore_template(template: dict[str, Any], info: PodSetInfo, *, keep_labels: Iterable[str] = ()) -> bool:
    """``RestorePodSpec``: put back the stored labels, annotations, node selector, tolerations, gates.

    ``keep_labels`` names labels whose *current* template value survives the restore (the batch
    Job adapter passes the job controller's managed labels, which the Workload copy does not
    carry). Returns whether the template changed.
    """
    current = _template_info(template)
    labels = dict(info.labels)
    for key in keep_labels:
        if key in current.labels:
            labels[key] = current.labels[key]
    wanted = PodSetInfo(
        name=info.name,
        count=info.count,
        annotations=dict(info.annotations),
        labels=labels,
        node_selector=dict(info.node_selector),
        tolerations=copy_json(info.tolerations),
        scheduling_gates=copy_json(info.scheduling_gates),
    )
    return _apply(template, current, wanted)


def pod_set_info_from_pod_set(pod_set: PodSet) -> PodSetInfo:
    """``FromPodSet``: the restore data stored in a Workload's ``spec.podSets`` entry."""
    return _template_info(copy_json(pod_set.template), name=pod_set.name, count=pod_set.count)


def pod_set_infos_from_workload_spec(workload: Workload) -> list[PodSetInfo]:
    """``GetPodSetsInfoFromWorkload``: one restore ``PodSetInfo`` per ``spec.podSets`` entry."""
    return [pod_set_info_from_pod_set(pod_set) for pod_set in workload.spec.pod_sets]


def _has_explicit_topology_request(pod_set: PodSet) -> bool:
    request = pod_set.topology_request or {}
    return any(request.get(key) is not None for key in ("required", "preferred", "unconstrained"))


def _info_from_assignment(
    assignment: PodSetAssignment,
    pod_set: PodSet,
    flavors: Mapping[str, FlavorData],
    *,
    topology_aware_scheduling: bool,
) -> PodSetInfo:
    """``FromAssignment``: count, and node labels + tolerations of each distinct flavor."""
    info = PodSetInfo(
        name=assignment.name, count=pod_set.count if assignment.count is None else assignment.count
    )
    if topology_aware_scheduling and assignment.topology_assignment is not None:
        if not _has_explicit_topology_request(pod_set):
            info.annotations[PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION] = "true"
        info.scheduling_gates.append({"name": TOPOLOGY_SCHEDULING_GATE})
    seen: set[str] = set()
    for flavor_name in (assignment.flavors or {}).values():
        if flavor_name in seen:
            continue
        if flavor_name not in flavors:
            raise UnknownFlavorError(flavor_name)
        node_labels, tolerations = flavors[flavor_name]
        info.node_selector.update(node_labels)
        info.tolerations.extend(copy_json(dict(toleration)) for toleration in tolerations)
        seen.add(flavor_name)
    return info


@dataclass(frozen=True)
class PodSetGates:
    """The Kueue feature gates that change what an admitted job's pod sets get (``pkg/features``);
    all on, as in the Kueue versions we follow, unless a caller switches one off."""

    #: ``TopologyAwareScheduling``: the topology scheduling gate, unconstrained annotation, workload name
    topology_aware_scheduling: bool = True
    #: ``AssignQueueLabelsForPods``: the local (and cluster) queue labels on every pod
    assign_queue_labels_for_pods: bool = True
    #: ``ElasticJobsViaWorkloadSlices``: the slice name annotation, scheduling gates kept on merge
    elastic_workload_slices: bool = True


#: every gate on (the default of every function that takes ``gates``)
DEFAULT_GATES: Final = PodSetGates()


def pod_set_infos_from_admission(
    *, workload: Workload, flavors: Mapping[str, FlavorData], gates: PodSetGates = DEFAULT_GATES
) -> list[PodSetInfo]:
    """``getPodSetsInfoFromStatus``: what to inject into each pod set to start an admitted job.

    One info per ``status.admission.podSetAssignments[i]``, paired **by index** with
    ``spec.podSets[i]``. Empty when there is no admission. Raises ``UnknownFlavorError`` for a
    flavor missing from ``flavors`` (retryable) and ``PodSetInfoError`` when the admission does not
    fit the spec or an admission check's ``podSetUpdates`` conflict (permanent).
    """
    admission = workload.status.admission if workload.status is not None else None
    if admission is None or not admission.pod_set_assignments:
        return []
    spec_pod_sets = workload.spec.pod_sets
    labels = workload.metadata.labels or {}
    annotations = workload.metadata.annotations or {}
    elastic = (
        gates.elastic_workload_slices
        and annotations.get(ELASTIC_JOB_ANNOTATION) == ELASTIC_JOB_ANNOTATION_VALUE
    )
    checks = (workload.status.admission_checks if workload.status is not None else None) or []
    infos: list[PodSetInfo] = []
    for index, assignment in enumerate(admission.pod_set_assignments):
        if index >= len(spec_pod_sets):
            raise PodSetInfoError(
                f"{INVALID_PODSET_INFO}: status.admission.podSetAssignments[{index}] ({assignment.name!r}) "
                f"has no spec.podSets[{index}]; the workload has {len(spec_pod_sets)} pod sets"
            )
        info = _info_from_assignment(
            assignment,
            spec_pod_sets[index],
            flavors,
            topology_aware_scheduling=gates.topology_aware_scheduling,
        )
        if gates.topology_aware_scheduling:
            info.annotations[WORKLOAD_ANNOTATION] = workload.metadata.name or ""
        if elastic:
            slice_name = annotations.get(WORKLOAD_SLICE_NAME_ANNOTATION, workload.metadata.name or "")
            info.annotations[WORKLOAD_SLICE_NAME_ANNOTATION] = slice_name
        info.labels[PODSET_LABEL] = assignment.name
        if MULTIKUEUE_ORIGIN_LABEL in labels:
            info.labels[MULTIKUEUE_WORKER_WORKLOAD_POD_LABEL] = MULTIKUEUE_WORKER_WORKLOAD_POD_VALUE
        if gates.assign_queue_labels_for_pods:
            info.labels[LOCAL_QUEUE_LABEL] = workload.spec.queue_name or ""
            if not is_dns1123_label(admission.cluster_queue):
                info.labels[CLUSTER_QUEUE_LABEL] = admission.cluster_queue
        for check in checks:
            for update in check.pod_set_updates or []:
                if update.name != info.name:
                    continue
                try:
                    merge_pod_set_info(info, pod_set_info_from_update(update))
                except PodSetInfoConflictError as error:
                    raise PodSetInfoConflictError(f'in admission check "{check.name}": {error}') from error
                break
        infos.append(info)
    return infos
