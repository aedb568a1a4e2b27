"""AppWrapper (``workload.codeflare.dev/v1beta2``), with Kueue's ``pkg/controller/jobs/appwrapper`` semantics.

An AppWrapper bundles arbitrary objects (``spec.components[i].template``); Kueue admits it as one
Workload whose pod sets are the pod templates found inside those components (AppWrapper notes §1.4-1.5):

* **Pod-set resolution**, in AppWrapper's order of authority: the podsets already resolved into
  ``status.componentStatus[i].podSets`` (when there is one status per component: resolved podsets are
  cached in status so a later ``kubectl apply`` of the spec cannot change what was accounted for); else
  the component's *declared* ``podSets`` (path + replicas); else podsets *inferred* for the kinds
  AppWrapper knows (Pod, Deployment, StatefulSet, batch Job, JobSet, PyTorchJob, RayCluster, RayJob).
  Other kinds contribute no pods (a Service, a ConfigMap). Paths are rooted at the component, e.g.
  ``template.spec.template``.
* **Admission data is not merged into the templates**: ``run_with_pod_sets_info`` writes it to
  ``spec.components[i].podSetInfos[j]`` in pod-set order, and the AppWrapper controller injects it when
  it creates the wrapped objects; ``restore_pod_sets_info`` clears those lists. So a run/restore round
  trip gives back the exact original object.
* **Finished** follows ``status.phase``; a ``Failed`` AppWrapper is finished only once its
  ``ResourcesDeployed`` condition is no longer true, so Kueue keeps the quota until cleanup is done.
* **Active** is the ``QuotaReserved`` condition (the AppWrapper controller, not pod presence, says
  whether resources may exist); **PodsReady** is the ``PodsReady`` condition.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from shared.constants import BATCH_JOB_COMPLETION_INDEX_ANNOTATION
from shared.frameworks.base import AdapterError, FinishedState
from shared.frameworks.builtin_base import SpecSuspend
from shared.frameworks.builtin_kinds import APPWRAPPER, JOBSET
from shared.frameworks.conditions import find_condition
from shared.frameworks.jobset import JOBSET_JOB_INDEX_LABEL
from shared.frameworks.paths import FieldPath, PathSyntaxError, describe_type, parse_path
from shared.frameworks.strconv import GoParseError, atoi
from shared.frameworks.templates import template_copy
from shared.frameworks.topology import build_topology_request
from shared.kube.conditions import is_true
from shared.models.workload import PodSet
from shared.podset import PodSetInfo, PodSetInfoError

__all__ = [
    "TAS_POD_INDEX_LABEL_ANNOTATION",
    "TAS_SUB_GROUP_COUNT_ANNOTATION",
    "TAS_SUB_GROUP_INDEX_LABEL_ANNOTATION",
    "AppWrapperAdapter",
    "ResolvedPodSet",
]

TAS_POD_INDEX_LABEL_ANNOTATION: Final = "workload.codeflare.dev.appwrapper/tas-pod-index-label"
TAS_SUB_GROUP_INDEX_LABEL_ANNOTATION: Final = "workload.codeflare.dev.appwrapper/tas-sub-group-index-label"
TAS_SUB_GROUP_COUNT_ANNOTATION: Final = "workload.codeflare.dev.appwrapper/tas-sub-group-count"
PYTORCH_REPLICA_INDEX_LABEL: Final = "training.kubeflow.org/replica-index"

_COMPONENTS = parse_path("spec.components")
_COMPONENT_STATUS = parse_path("status.componentStatus")
_PHASE = parse_path("status.phase")


@dataclass(frozen=True)
class ResolvedPodSet:
    """One pod set of one component: ``path`` is relative to the component (``template.spec.template``)."""

    component: int
    path: str
    replicas: int
    annotations: dict[str, str] = field(default_factory=dict)


class AppWrapperAdapter(SpecSuspend):
    """``GenericJob`` + ManagedBy."""

    KIND = APPWRAPPER

    # --- pod-set resolution ---------------------------------------------------------------------

    def _components(self) -> list[dict[str, Any]]:
        components = _COMPONENTS.get_typed(self._obj, list, default=[])
        for index, component in enumerate(components):
            if not isinstance(component, dict):
                raise AdapterError(
                    _COMPONENTS.index(index).text, f"expected an object, got {describe_type(component)}"
                )
        return components

    def resolved_pod_sets(self) -> list[ResolvedPodSet]:
        """Every pod set, in Workload order (component order, then pod-set order within it)."""
        components = self._components()
        statuses = _COMPONENT_STATUS.get_typed(self._obj, list, default=[])
        out: list[ResolvedPodSet] = []
        for index in range(len(components)):
            if len(statuses) == len(components) and statuses:
                out += self._declared(index, _COMPONENT_STATUS.index(index).key("podSets"))
            else:
                out += self.component_pod_sets(index)
        return out

    def component_pod_sets(self, index: int) -> list[ResolvedPodSet]:
        """Component ``index``'s pod sets from the spec alone (declared, else inferred), ignoring
        any cached status: what AppWrapper's ``EnsureComponentStatusInitialized`` resolves."""
        component_path = _COMPONENTS.index(index)
        declared_path = component_path.key("podSets")
        if declared_path.get(self._obj, default=[]):
            return self._declared(index, declared_path)
        return self._inferred(index, component_path.key("template"))

    def inferred_pod_sets(self, index: int) -> list[ResolvedPodSet]:
        """The pod sets AppWrapper infers for component ``index``'s kind (empty for kinds it does not
        know), whether or not the component declares its own: what declared ones must match."""
        return self._inferred(index, _COMPONENTS.index(index).key("template"))

    def _declared(self, component: int, path: FieldPath) -> list[ResolvedPodSet]:
        out: list[ResolvedPodSet] = []
        for position, _ in enumerate(path.get_typed(self._obj, list, default=[])):
            entry = path.index(position)
            annotations = entry.key("annotations").get_typed(self._obj, dict, default={})
            out.append(
                ResolvedPodSet(
                    component=component,
                    path=entry.key("path").get_typed(self._obj, str),
                    replicas=entry.key("replicas").get_typed(self._obj, int, default=1),
                    annotations={str(k): str(v) for k, v in annotations.items()},
                )
            )
        return out

    def _inferred(self, component: int, template: FieldPath) -> list[ResolvedPodSet]:
        wrapped = template.get_typed(self._obj, dict)
        api_version, kind = wrapped.get("apiVersion"), wrapped.get("kind")

        def count(relative: str, default: int = 1) -> int:
            return template.join(parse_path(relative)).get_typed(self._obj, int, default=default)

        def exists(relative: str) -> bool:
            return template.join(parse_path(relative)).exists(self._obj)

        def pod_set(path: str, replicas: int, annotations: dict[str, str] | None = None) -> ResolvedPodSet:
            return ResolvedPodSet(
                component, f"template.{path}" if path else "template", replicas, annotations or {}
            )

        if (api_version, kind) == ("v1", "Pod"):
            return [pod_set("", 1)]
        if (api_version, kind) in (("apps/v1", "Deployment"), ("apps/v1", "StatefulSet")):
            return [pod_set("spec.template", count("spec.replicas"))] if exists("spec.template") else []
        if (api_version, kind) == ("batch/v1", "Job"):
            parallelism = count("spec.parallelism")
            pods = min(parallelism, count("spec.completions", parallelism))
            return [
                pod_set(
                    "spec.template",
                    pods,
                    {TAS_POD_INDEX_LABEL_ANNOTATION: BATCH_JOB_COMPLETION_INDEX_ANNOTATION},
                )
            ]
        if (api_version, kind) == (JOBSET.gvk.api_version, JOBSET.gvk.kind):
            out: list[ResolvedPodSet] = []
            jobs = template.join(parse_path("spec.replicatedJobs")).get_typed(self._obj, list, default=[])
            for index in range(len(jobs)):
                prefix = f"spec.replicatedJobs[{index}]"
                if not exists(f"{prefix}.template"):
                    continue
                parallelism = count(f"{prefix}.template.spec.parallelism")
                pods = min(parallelism, count(f"{prefix}.template.spec.completions", parallelism))
                replicas = count(f"{prefix}.replicas")
                annotations = {
                    TAS_POD_INDEX_LABEL_ANNOTATION: BATCH_JOB_COMPLETION_INDEX_ANNOTATION,
                    TAS_SUB_GROUP_INDEX_LABEL_ANNOTATION: JOBSET_JOB_INDEX_LABEL,
                    TAS_SUB_GROUP_COUNT_ANNOTATION: str(replicas),
                }
                out.append(pod_set(f"{prefix}.template.spec.template", replicas * pods, annotations))
            return out
        if (api_version, kind) == ("kubeflow.org/v1", "PyTorchJob"):
            return [
                pod_set(
                    f"spec.pytorchReplicaSpecs.{role}.template",
                    count(f"spec.pytorchReplicaSpecs.{role}.replicas"),
                    {TAS_POD_INDEX_LABEL_ANNOTATION: PYTORCH_REPLICA_INDEX_LABEL},
                )
                for role in ("Master", "Worker")
                if exists(f"spec.pytorchReplicaSpecs.{role}.template")
            ]
        if api_version == "ray.io/v1" and kind in ("RayCluster", "RayJob"):
            cluster = "spec" if kind == "RayCluster" else "spec.rayClusterSpec"
            out = [pod_set(f"{cluster}.headGroupSpec.template", 1)]
            workers = template.join(parse_path(f"{cluster}.workerGroupSpecs")).get(self._obj, default=[])
            for index in range(len(workers) if isinstance(workers, list) else 0):
                prefix = f"{cluster}.workerGroupSpecs[{index}]"
                if exists(f"{prefix}.template"):
                    out.append(pod_set(f"{prefix}.template", count(f"{prefix}.replicas")))
            return out
        return []

    def _template_path(self, resolved: ResolvedPodSet) -> FieldPath:
        component = _COMPONENTS.index(resolved.component)
        try:
            return component.join(parse_path(resolved.path))
        except PathSyntaxError as exc:
            raise AdapterError(
                component.key("podSets").text, f"invalid path {resolved.path!r}: {exc.message}"
            ) from None

    # --- GenericJob -----------------------------------------------------------------------------

    def is_active(self) -> bool:
        return is_true(find_condition(self._obj, "QuotaReserved"))

    def pod_sets(self) -> list[PodSet]:
        name = self._object_name()
        resolved = self.resolved_pod_sets()
        if not resolved:
            raise AdapterError(
                _COMPONENTS.text, "no component has a pod template (declare podSets for unknown kinds)"
            )
        pod_sets: list[PodSet] = []
        for index, pod_set in enumerate(resolved):
            path = self._template_path(pod_set)
            raw = template_copy(self._obj, path)
            metadata = raw.get("metadata") or {}
            template: dict[str, Any] = {
                "metadata": {key: metadata[key] for key in ("labels", "annotations") if metadata.get(key)},
                "spec": raw.get("spec") or {},
            }
            sub_group_count: int | None = None
            if TAS_SUB_GROUP_COUNT_ANNOTATION in pod_set.annotations:
                try:  # Kueue logs and ignores a malformed count
                    sub_group_count = atoi(pod_set.annotations[TAS_SUB_GROUP_COUNT_ANNOTATION])
                except GoParseError:
                    sub_group_count = None
            pod_sets.append(
                PodSet(
                    name=f"{name}-{index}",
                    template=template,
                    count=pod_set.replicas,
                    topology_request=build_topology_request(
                        template,
                        template_path=path.text,
                        pod_index_label=pod_set.annotations.get(TAS_POD_INDEX_LABEL_ANNOTATION),
                        sub_group_index_label=pod_set.annotations.get(TAS_SUB_GROUP_INDEX_LABEL_ANNOTATION),
                        sub_group_count=sub_group_count,
                    ),
                )
            )
        return pod_sets

    def template_paths(self) -> list[str]:
        return [self._template_path(pod_set).text for pod_set in self.resolved_pod_sets()]

    def run_with_pod_sets_info(self, infos: Sequence[PodSetInfo]) -> None:
        resolved = self.resolved_pod_sets()
        if len(resolved) != len(infos):
            raise PodSetInfoError(
                f"invalid podset infos: expecting {len(resolved)} podsets, got {len(infos)}"
            )
        components = self._components()
        per_component: dict[int, list[dict[str, Any]]] = {index: [] for index in range(len(components))}
        for pod_set, info in zip(resolved, infos, strict=True):
            per_component[pod_set.component].append(_info_to_wire(info))
        for index, wire in per_component.items():
            if wire:
                components[index]["podSetInfos"] = wire
        self._unsuspend()

    def restore_pod_sets_info(self, infos: Sequence[PodSetInfo]) -> bool:
        changed = False
        for component in self._components():
            if "podSetInfos" in component:
                del component["podSetInfos"]
                changed = True
        return changed

    def finished(self) -> FinishedState:
        phase = _PHASE.get_typed(self._obj, str, default="")
        if phase == "Succeeded":
            return FinishedState(finished=True, success=True, message="AppWrapper finished successfully")
        if phase == "Failed":
            if is_true(find_condition(self._obj, "ResourcesDeployed")):
                return FinishedState(finished=False, message="Still deleting resources for failed AppWrapper")
            return FinishedState(finished=True, success=False, message="AppWrapper failed")
        return FinishedState(finished=False)

    def pods_ready(self) -> bool:
        return is_true(find_condition(self._obj, "PodsReady"))

    # --- JobWithManagedBy -----------------------------------------------------------------------


def _info_to_wire(info: PodSetInfo) -> dict[str, Any]:
    """``AppWrapperPodSetInfo`` JSON: every field ``omitempty``."""
    wire: dict[str, Any] = {
        "annotations": dict(info.annotations),
        "labels": dict(info.labels),
        "nodeSelector": dict(info.node_selector),
        "tolerations": [dict(item) for item in info.tolerations],
        "schedulingGates": [dict(item) for item in info.scheduling_gates],
    }
    return {key: value for key, value in wire.items() if value}
