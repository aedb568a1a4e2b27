"""Kueue ``v1beta1`` <-> ``v1beta2`` conversion on wire dicts, and parsers that accept either.

kueue-bridge speaks v1beta2 (Kueue's storage version). A cluster may still hand out v1beta1 (an
older Kueue, a MultiKueue worker, a user's manifest), so every object read is passed through
``parse_*`` (or ``convert_from_v1beta1``) and, where a v1beta1-only peer must be written,
``convert_to_v1beta1``. The rules mirror Kueue's ``apis/kueue/v1beta1/*_conversion.go``; the list of
differences was obtained by diffing the two ``openAPIV3Schema`` of every CRD in
``config/components/crd/bases`` (the test suite re-checks converted objects against both schemas).

Invariants:

* Input is never mutated; output is a deep copy.
* **Unknown fields are preserved** (a field neither schema knows is copied verbatim). Fields the
  *target* version has no place for are dropped, exactly as Kueue's converter drops them (the API
  server would prune them anyway, or reject them under ``fieldValidation=Strict``). Each is listed
  below.
* A wire object already in the target version is returned as an (unchanged) copy, so callers need
  not check first. Any other ``apiVersion``, or a ``kind`` other than the one a function converts,
  raises ``ConversionError`` (a ``ValueError``) naming the field; so do malformed topology
  assignments. Missing ``apiVersion``/``kind`` are taken to be the source version/kind.

Workload (``spec`` / ``status``):

* ``spec.priorityClassName`` + ``spec.priorityClassSource`` <-> ``spec.priorityClassRef{group,
  kind, name}``: ``kueue.x-k8s.io/workloadpriorityclass`` <-> ``{kueue.x-k8s.io,
  WorkloadPriorityClass}``, ``scheduling.k8s.io/priorityclass`` <-> ``{scheduling.k8s.io,
  PriorityClass}``. Source ``""`` (the v1beta1 default, "no priority class") or an empty name gives
  no ref and the name is dropped; a ref with any other group/kind pair (rejected by the CRD's CEL)
  gives no v1beta1 fields. Both as in Kueue.
* ``status.accumulatedPastExexcutionTimeSeconds`` (v1beta1's misspelling) <->
  ``status.accumulatedPastExecutionTimeSeconds``.
* ``status.admission.podSetAssignments[].topologyAssignment``: v1beta1 ``domains`` <-> v1beta2
  compressed ``slices`` (``shared.models.topology_assignment``).
* v1beta2-only, dropped going to v1beta1: ``spec.preemptionGates``, ``status.preemptionGates``,
  ``spec.podSets[].topologyRequest.podsetSliceRequiredTopologyConstraints``.
* Required in v1beta1, defaulted in v1beta2 (filled in going to v1beta1 with the v1beta2 default so
  the result passes the v1beta1 schema): ``spec.podSets[].count`` (1),
  ``status.admission.podSetAssignments[].name`` (``main``).
* Not converted because they do not differ on the wire: ``unhealthyNodes`` and
  ``admissionChecks[].podSetUpdates[].tolerations`` (only list-type markers changed), and condition
  types and reasons: v1beta2 *adds* types/reasons (``WaitingForReplacementPods``,
  ``BlockedOnPreemptionGates``, ``NoReservation`` ...) but renames none (checked against the
  v1beta1/v1beta2 ``workload_types.go`` constants), and Kueue's converter copies conditions verbatim.

ClusterQueue: ``spec.cohort`` <-> ``spec.cohortName``; v1beta1 ``spec.admissionChecks`` (names)
becomes ``spec.admissionChecksStrategy.admissionChecks[{name}]`` (replacing any strategy, as Kueue
does; ``admissionChecksStrategy`` itself exists in both versions and is kept going back);
v1beta1 ``flavorFungibility`` values ``Preempt``/``Borrow`` become ``MayStopSearch``; dropped going
to v1beta2: ``status.pendingWorkloadsStatus``, ``status.fairSharing.admissionFairSharingStatus``;
dropped going to v1beta1: ``spec.concurrentAdmissionPolicy``.

LocalQueue: ``status.flavorUsage`` <-> ``status.flavorsUsage``; v1beta1 ``status.flavors`` (flavor
details, removed from v1beta2) is dropped going to v1beta2.

Cohort: v1beta1 ``status.fairSharing.admissionFairSharingStatus`` is dropped going to v1beta2.

MultiKueueCluster: v1beta1 ``spec.kubeConfig`` / ``spec.clusterProfileRef`` <-> v1beta2
``spec.clusterSource.kubeConfig`` / ``spec.clusterSource.clusterProfileRef`` (a v1beta1
``kubeConfig`` with an empty ``location`` is no source, as in Kueue). A v1beta2 cluster with only a
``clusterProfileRef`` has no valid v1beta1 form (v1beta1 requires ``kubeConfig``); the result then
lacks ``kubeConfig`` rather than inventing one.

MultiKueueConfig: ``spec.quotaManagement`` (v1beta2 only) is dropped going to v1beta1.
AdmissionCheck: ``spec.retryDelayMinutes`` (v1beta1 only, deprecated) is dropped going to v1beta2.
ResourceFlavor, WorkloadPriorityClass, Topology, ProvisioningRequestConfig: identical on the wire;
only ``apiVersion`` changes.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, Final, TypeVar

from shared.constants import API_VERSION, API_VERSION_V1BETA1, DEFAULT_PODSET_NAME
from shared.models.base import KubeModel, WireDict
from shared.models.cluster_config import AdmissionCheck, ResourceFlavor, WorkloadPriorityClass
from shared.models.multikueue import MultiKueueCluster, MultiKueueConfig
from shared.models.queue import ClusterQueue, LocalQueue
from shared.models.topology_assignment import ConversionError, domains_to_slices, slices_to_domains
from shared.models.workload import Workload

__all__ = [
    "PRIORITY_CLASS_SOURCE_POD",
    "PRIORITY_CLASS_SOURCE_WORKLOAD",
    "ConversionError",
    "cluster_queue_from_v1beta1",
    "cluster_queue_to_v1beta1",
    "convert_from_v1beta1",
    "convert_to_v1beta1",
    "local_queue_from_v1beta1",
    "local_queue_to_v1beta1",
    "multikueue_cluster_from_v1beta1",
    "multikueue_cluster_to_v1beta1",
    "parse_admission_check",
    "parse_cluster_queue",
    "parse_local_queue",
    "parse_multikueue_cluster",
    "parse_multikueue_config",
    "parse_resource_flavor",
    "parse_workload",
    "parse_workload_priority_class",
    "workload_from_v1beta1",
    "workload_to_v1beta1",
]

PRIORITY_CLASS_SOURCE_WORKLOAD: Final = "kueue.x-k8s.io/workloadpriorityclass"
PRIORITY_CLASS_SOURCE_POD: Final = "scheduling.k8s.io/priorityclass"

# v1beta1 priorityClassSource <-> v1beta2 priorityClassRef (group, kind)
_PRIORITY_SOURCE_TO_REF: Final = {
    PRIORITY_CLASS_SOURCE_WORKLOAD: ("kueue.x-k8s.io", "WorkloadPriorityClass"),
    PRIORITY_CLASS_SOURCE_POD: ("scheduling.k8s.io", "PriorityClass"),
}
_PRIORITY_REF_TO_SOURCE: Final[dict[tuple[object, object], str]] = {
    ref: source for source, ref in _PRIORITY_SOURCE_TO_REF.items()
}

_DEPRECATED_FUNGIBILITY: Final = {"whenCanPreempt": "Preempt", "whenCanBorrow": "Borrow"}
_MAY_STOP_SEARCH: Final = "MayStopSearch"

ModelT = TypeVar("ModelT", bound=KubeModel)
_Rewrite = Callable[[WireDict], None]


# --- plumbing --------------------------------------------------------------------------------------


def _convert(wire: WireDict, *, kind: str | None, source: str, target: str, rewrite: _Rewrite) -> WireDict:
    if not isinstance(wire, dict):
        raise ConversionError("", f"expected a JSON object, got {type(wire).__name__}")
    found_kind = wire.get("kind")
    if kind is not None and found_kind is not None and found_kind != kind:
        raise ConversionError("kind", f"expected {kind}, got {found_kind!r}")
    api_version = wire.get("apiVersion", source)
    converted = copy.deepcopy(wire)
    if api_version == target:
        return converted
    if api_version != source:
        raise ConversionError("apiVersion", f"expected {source} or {target}, got {api_version!r}")
    converted["apiVersion"] = target
    rewrite(converted)
    return converted


def _object(parent: Any, key: str) -> WireDict | None:
    """``parent[key]`` when both are JSON objects (anything else is left for the model to reject)."""
    if isinstance(parent, dict):
        child = parent.get(key)
        if isinstance(child, dict):
            return child
    return None


def _objects(parent: Any, key: str) -> list[WireDict]:
    """The object items of the list ``parent[key]`` (non-objects are left as they are)."""
    if isinstance(parent, dict):
        items = parent.get(key)
        if isinstance(items, list):
            return [item for item in items if isinstance(item, dict)]
    return []


def _rename(parent: WireDict | None, old: str, new: str) -> None:
    if parent is not None and old in parent:
        parent[new] = parent.pop(old)


def _drop(parent: WireDict | None, *keys: str) -> None:
    if parent is not None:
        for key in keys:
            parent.pop(key, None)


# --- Workload --------------------------------------------------------------------------------------


def _workload_to_v1beta2(wire: WireDict) -> None:
    spec = _object(wire, "spec")
    if spec is not None:
        name = spec.pop("priorityClassName", None)
        source = spec.pop("priorityClassSource", None)
        group_kind = _PRIORITY_SOURCE_TO_REF.get(source) if isinstance(source, str) else None
        if group_kind is not None and isinstance(name, str) and name:
            spec["priorityClassRef"] = {"group": group_kind[0], "kind": group_kind[1], "name": name}
    status = _object(wire, "status")
    if status is not None:
        _rename(status, "accumulatedPastExexcutionTimeSeconds", "accumulatedPastExecutionTimeSeconds")
        for index, assignment in enumerate(_objects(_object(status, "admission"), "podSetAssignments")):
            topology = _object(assignment, "topologyAssignment")
            if topology is not None and "domains" in topology:
                path = f"status.admission.podSetAssignments[{index}].topologyAssignment"
                assignment["topologyAssignment"] = domains_to_slices(topology, path=path)


def _workload_to_v1beta1(wire: WireDict) -> None:
    spec = _object(wire, "spec")
    if spec is not None:
        ref = spec.pop("priorityClassRef", None)
        if isinstance(ref, dict):
            source = _PRIORITY_REF_TO_SOURCE.get((ref.get("group"), ref.get("kind")))
            if source is not None and ref.get("name"):
                spec["priorityClassName"] = ref["name"]
                spec["priorityClassSource"] = source
        _drop(spec, "preemptionGates")
        for pod_set in _objects(spec, "podSets"):
            pod_set.setdefault("count", 1)
            _drop(_object(pod_set, "topologyRequest"), "podsetSliceRequiredTopologyConstraints")
    status = _object(wire, "status")
    if status is not None:
        _rename(status, "accumulatedPastExecutionTimeSeconds", "accumulatedPastExexcutionTimeSeconds")
        _drop(status, "preemptionGates")
        for index, assignment in enumerate(_objects(_object(status, "admission"), "podSetAssignments")):
            assignment.setdefault("name", DEFAULT_PODSET_NAME)
            topology = _object(assignment, "topologyAssignment")
            if topology is not None and "slices" in topology:
                path = f"status.admission.podSetAssignments[{index}].topologyAssignment"
                assignment["topologyAssignment"] = slices_to_domains(topology, path=path)


def workload_from_v1beta1(wire: WireDict) -> WireDict:
    """A v1beta1 Workload (as the API server returns it) in v1beta2 form."""
    return _from_v1beta1(wire, "Workload")


def workload_to_v1beta1(wire: WireDict) -> WireDict:
    """A v1beta2 Workload in v1beta1 form."""
    return _to_v1beta1(wire, "Workload")


# --- ClusterQueue / Cohort -------------------------------------------------------------------------


def _drop_admission_fair_sharing_status(wire: WireDict) -> None:
    _drop(_object(_object(wire, "status"), "fairSharing"), "admissionFairSharingStatus")


def _cluster_queue_to_v1beta2(wire: WireDict) -> None:
    spec = _object(wire, "spec")
    if spec is not None:
        cohort = spec.pop("cohort", None)
        if cohort:
            spec["cohortName"] = cohort
        checks = spec.pop("admissionChecks", None)
        if isinstance(checks, list) and checks:
            spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": name} for name in checks]}
        fungibility = _object(spec, "flavorFungibility")
        for field, deprecated in _DEPRECATED_FUNGIBILITY.items():
            if fungibility is not None and fungibility.get(field) == deprecated:
                fungibility[field] = _MAY_STOP_SEARCH
    _drop(_object(wire, "status"), "pendingWorkloadsStatus")
    _drop_admission_fair_sharing_status(wire)


def _cluster_queue_to_v1beta1(wire: WireDict) -> None:
    spec = _object(wire, "spec")
    if spec is not None:
        cohort_name = spec.pop("cohortName", None)
        if cohort_name:
            spec["cohort"] = cohort_name
        _drop(spec, "concurrentAdmissionPolicy")


def cluster_queue_from_v1beta1(wire: WireDict) -> WireDict:
    return _from_v1beta1(wire, "ClusterQueue")


def cluster_queue_to_v1beta1(wire: WireDict) -> WireDict:
    return _to_v1beta1(wire, "ClusterQueue")


# --- LocalQueue ------------------------------------------------------------------------------------


def _local_queue_to_v1beta2(wire: WireDict) -> None:
    status = _object(wire, "status")
    _rename(status, "flavorUsage", "flavorsUsage")
    _drop(status, "flavors")


def _local_queue_to_v1beta1(wire: WireDict) -> None:
    _rename(_object(wire, "status"), "flavorsUsage", "flavorUsage")


def local_queue_from_v1beta1(wire: WireDict) -> WireDict:
    return _from_v1beta1(wire, "LocalQueue")


def local_queue_to_v1beta1(wire: WireDict) -> WireDict:
    return _to_v1beta1(wire, "LocalQueue")


# --- MultiKueue, AdmissionCheck --------------------------------------------------------------------


def _multikueue_cluster_to_v1beta2(wire: WireDict) -> None:
    spec = _object(wire, "spec")
    if spec is None:
        return
    cluster_source: WireDict = {}
    kube_config = spec.pop("kubeConfig", None)
    if isinstance(kube_config, dict) and kube_config.get("location"):
        cluster_source["kubeConfig"] = kube_config
    profile = spec.pop("clusterProfileRef", None)
    if profile is not None:
        cluster_source["clusterProfileRef"] = profile
    spec["clusterSource"] = cluster_source


def _multikueue_cluster_to_v1beta1(wire: WireDict) -> None:
    spec = _object(wire, "spec")
    cluster_source = _object(spec, "clusterSource")
    if spec is None or cluster_source is None:
        return
    del spec["clusterSource"]
    for key in ("kubeConfig", "clusterProfileRef"):
        if cluster_source.get(key) is not None:
            spec[key] = cluster_source[key]


def multikueue_cluster_from_v1beta1(wire: WireDict) -> WireDict:
    return _from_v1beta1(wire, "MultiKueueCluster")


def multikueue_cluster_to_v1beta1(wire: WireDict) -> WireDict:
    return _to_v1beta1(wire, "MultiKueueCluster")


def _multikueue_config_to_v1beta1(wire: WireDict) -> None:
    _drop(_object(wire, "spec"), "quotaManagement")


def _admission_check_to_v1beta2(wire: WireDict) -> None:
    _drop(_object(wire, "spec"), "retryDelayMinutes")


def _unchanged(wire: WireDict) -> None:
    del wire  # only apiVersion differs


# --- any Kueue kind --------------------------------------------------------------------------------

_TO_V1BETA2: Final[dict[str, _Rewrite]] = {
    "Workload": _workload_to_v1beta2,
    "ClusterQueue": _cluster_queue_to_v1beta2,
    "Cohort": _drop_admission_fair_sharing_status,
    "LocalQueue": _local_queue_to_v1beta2,
    "MultiKueueCluster": _multikueue_cluster_to_v1beta2,
    "MultiKueueConfig": _unchanged,
    "AdmissionCheck": _admission_check_to_v1beta2,
    "ResourceFlavor": _unchanged,
    "WorkloadPriorityClass": _unchanged,
    "Topology": _unchanged,
    "ProvisioningRequestConfig": _unchanged,
}
_TO_V1BETA1: Final[dict[str, _Rewrite]] = {
    "Workload": _workload_to_v1beta1,
    "ClusterQueue": _cluster_queue_to_v1beta1,
    "Cohort": _unchanged,
    "LocalQueue": _local_queue_to_v1beta1,
    "MultiKueueCluster": _multikueue_cluster_to_v1beta1,
    "MultiKueueConfig": _multikueue_config_to_v1beta1,
    "AdmissionCheck": _unchanged,
    "ResourceFlavor": _unchanged,
    "WorkloadPriorityClass": _unchanged,
    "Topology": _unchanged,
    "ProvisioningRequestConfig": _unchanged,
}


def _from_v1beta1(wire: WireDict, kind: str) -> WireDict:
    return _convert(
        wire, kind=kind, source=API_VERSION_V1BETA1, target=API_VERSION, rewrite=_TO_V1BETA2[kind]
    )


def _to_v1beta1(wire: WireDict, kind: str) -> WireDict:
    return _convert(
        wire, kind=kind, source=API_VERSION, target=API_VERSION_V1BETA1, rewrite=_TO_V1BETA1[kind]
    )


def _kueue_kind(wire: WireDict) -> str:
    kind = wire.get("kind") if isinstance(wire, dict) else None
    if not isinstance(kind, str) or kind not in _TO_V1BETA2:
        raise ConversionError("kind", f"not a Kueue kind with a v1beta1 version: {kind!r}")
    return kind


def convert_from_v1beta1(wire: WireDict) -> WireDict:
    """Any ``kueue.x-k8s.io`` object (selected by ``kind``) in v1beta2 form."""
    return _from_v1beta1(wire, _kueue_kind(wire))


def convert_to_v1beta1(wire: WireDict) -> WireDict:
    """Any ``kueue.x-k8s.io`` object (selected by ``kind``) in v1beta1 form."""
    return _to_v1beta1(wire, _kueue_kind(wire))


# --- parsers ---------------------------------------------------------------------------------------


def _parse(model: type[ModelT], wire: WireDict) -> ModelT:
    """``model`` from a v1beta1 or v1beta2 wire object (converted by the table row of its kind)."""
    return model.from_wire(_from_v1beta1(wire, model.model_fields["kind"].default))


def parse_workload(wire: WireDict) -> Workload:
    """A Workload from a v1beta1 or v1beta2 wire object.

    Raises ``ConversionError`` (wrong ``apiVersion``/``kind``, bad topology assignment) or
    ``pydantic.ValidationError``; both name the field.
    """
    return _parse(Workload, wire)


def parse_cluster_queue(wire: WireDict) -> ClusterQueue:
    return _parse(ClusterQueue, wire)


def parse_local_queue(wire: WireDict) -> LocalQueue:
    return _parse(LocalQueue, wire)


def parse_multikueue_cluster(wire: WireDict) -> MultiKueueCluster:
    return _parse(MultiKueueCluster, wire)


def parse_multikueue_config(wire: WireDict) -> MultiKueueConfig:
    return _parse(MultiKueueConfig, wire)


def parse_admission_check(wire: WireDict) -> AdmissionCheck:
    return _parse(AdmissionCheck, wire)


def parse_resource_flavor(wire: WireDict) -> ResourceFlavor:
    return _parse(ResourceFlavor, wire)


def parse_workload_priority_class(wire: WireDict) -> WorkloadPriorityClass:
    return _parse(WorkloadPriorityClass, wire)
