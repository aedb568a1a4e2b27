"""``adapter test``: what kueue-bridge would do with one object, without a cluster.

For a platform team writing a declarative adapter (or checking a built-in one), this runs a sample
object through the configured adapter and the same shared code the webhook and the reconciler use,
and reports: whether it is suspended, its queue name and managedBy, each pod set (name, count,
minCount, per-pod requests, template path, topology request), the priority class it names, the
``finished``/``succeeded``/``message``/``active``/``podsReady`` results, the Workload kueue-bridge
would create (``shared.workload_builder``, with the deterministic name of ``shared.naming``), and
the RFC 6902 JSON patches that starting it with a sample admission (one flavor with a node label
and a toleration, merged by ``shared.podset``) and then stopping it would apply.

Invariants:

* **Pure.** No API calls: priority classes are assumed to exist with value 0 (said in ``notes``),
  the name hash uses the object's ``metadata.uid`` as given (the API server assigns the real one).
* **Every problem is reported, none raises.** Each part is evaluated on its own; an object the
  adapter cannot read yields one line per problem, ``<object file>: <object path>: <message>
  (adapter field <configuration field>)``, like ``kueue-bridge config validate``. A CEL result has
  no single object path; its line names the whole object.
* The object is never modified; start works on the suspended form (what the webhook makes of it on
  create), stop on the started one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, Final, TypeVar

import jsonpatch

from bridge_tools.quota import format_amount, per_pod_requests
from shared.config import Configuration
from shared.frameworks.base import AdapterError, GenericJob, JobWithTemplatePaths
from shared.frameworks.capabilities import has_custom_stop, has_managed_by
from shared.frameworks.declarative import DeclarativeFramework
from shared.frameworks.registry import Framework, gvk_of
from shared.jobmeta import job_uid, queue_name, workload_priority_class_name
from shared.jsontree import copy_json
from shared.merge_patch import apply_merge_patch
from shared.models.base import WireDict
from shared.models.workload import Admission, PodSet, PodSetAssignment, Workload, WorkloadStatus
from shared.podset import PodSetInfoError, pod_set_info_from_pod_set, pod_set_infos_from_admission
from shared.workload_builder import (
    PriorityNotFound,
    WorkloadConstructionError,
    construct_workload,
    priority_class_names,
    resolve_priority,
)

__all__ = [
    "SAMPLE_CLUSTER_QUEUE",
    "SAMPLE_FLAVOR",
    "SAMPLE_NODE_LABELS",
    "SAMPLE_TOLERATIONS",
    "DryRunFailed",
    "adapter_field",
    "dry_run",
]

T = TypeVar("T")

SAMPLE_CLUSTER_QUEUE: Final = "sample-cluster-queue"
SAMPLE_FLAVOR: Final = "sample-flavor"
SAMPLE_NODE_LABELS: Final = {"example.com/pool": "sample"}
SAMPLE_TOLERATIONS: Final = (
    {"key": "example.com/pool", "operator": "Equal", "value": "sample", "effect": "NoSchedule"},
)


class DryRunFailed(Exception):
    """The object (or the adapter) has problems; ``lines`` has one message per problem."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("\n".join(lines))
        self.lines = lines


def adapter_field(framework: Framework) -> str:
    """The configuration field behind ``framework``: the declarative spec, or the built-in's entry."""
    if isinstance(framework.factory, DeclarativeFramework):
        return framework.factory.field
    return f"integrations.frameworks[{framework.name}]"


@dataclass
class _Run:
    """Collects problems while the report is assembled; ``check`` runs one part."""

    framework: Framework
    source: str
    problems: list[str]

    def field(self, part: str) -> str:
        base = adapter_field(self.framework)
        return f"{base}.{part}" if isinstance(self.framework.factory, DeclarativeFramework) else base

    def check(self, part: str, call: Callable[[], T], default: T) -> T:
        base = adapter_field(self.framework)
        field = self.field(part)
        try:
            return call()
        except AdapterError as exc:
            through_cel = exc.path.startswith(base)  # a CEL failure names its configuration field
            where = exc.path if through_cel else exc.field or field
            path = "(CEL over the object)" if through_cel else exc.path
            self.report(f"{self.source}: {path}: {exc.message} (adapter field {where})")
        except PodSetInfoError as exc:
            self.report(f"{self.source}: {exc} (adapter field {field})")
        except ValueError as exc:  # a malformed quantity in a pod template
            self.report(f"{self.source}: {exc} (adapter field {field})")
        return default

    def report(self, line: str) -> None:
        if line not in self.problems:  # two parts reading the same broken field say it once
            self.problems.append(line)


def _pod_set_report(run: _Run, pod_sets: list[PodSet], paths: list[str] | None) -> list[WireDict]:
    out: list[WireDict] = []
    for index, pod_set in enumerate(pod_sets):
        path = paths[index] if paths is not None and index < len(paths) else None
        try:
            requests = per_pod_requests(pod_set)
        except ValueError as exc:
            where = f"{path}.spec" if path else f"pod set {pod_set.name}"
            run.report(f"{run.source}: {where}: {exc} (adapter field {run.field('podSets')})")
            requests = {}
        out.append(
            {
                "name": pod_set.name,
                "count": pod_set.count,
                "minCount": pod_set.min_count,
                "templatePath": path,
                "resourcesPerPod": {
                    name: format_amount(name, amount) for name, amount in sorted(requests.items())
                },
                "topologyRequest": pod_set.topology_request,
            }
        )
    return out


def _sample_admission(workload: Workload) -> Workload:
    assignments = []
    for pod_set in workload.spec.pod_sets:
        requests = per_pod_requests(pod_set)
        assignments.append(
            PodSetAssignment(
                name=pod_set.name,
                flavors=dict.fromkeys(sorted(requests), SAMPLE_FLAVOR),
                resource_usage={
                    name: format_amount(name, amount * pod_set.count)
                    for name, amount in sorted(requests.items())
                },
                count=pod_set.count,
            )
        )
    admitted = workload.model_copy(deep=True)
    admitted.status = WorkloadStatus(
        admission=Admission(cluster_queue=SAMPLE_CLUSTER_QUEUE, pod_set_assignments=assignments)
    )
    return admitted


def _patch(before: WireDict, after: WireDict) -> list[WireDict]:
    operations: list[WireDict] = jsonpatch.make_patch(before, after).patch
    return operations


def _start_and_stop(run: _Run, *, suspended_obj: WireDict, workload: Workload) -> tuple[WireDict, WireDict]:
    infos = pod_set_infos_from_admission(
        workload=_sample_admission(workload),
        flavors={SAMPLE_FLAVOR: (SAMPLE_NODE_LABELS, [dict(t) for t in SAMPLE_TOLERATIONS])},
    )
    started = copy_json(suspended_obj)
    run.framework.factory(started).run_with_pod_sets_info(infos)
    start = {
        "admission": {
            "clusterQueue": SAMPLE_CLUSTER_QUEUE,
            "flavor": SAMPLE_FLAVOR,
            "nodeLabels": dict(SAMPLE_NODE_LABELS),
            "tolerations": [dict(t) for t in SAMPLE_TOLERATIONS],
        },
        "patch": _patch(suspended_obj, started),
    }
    restore = [pod_set_info_from_pod_set(pod_set) for pod_set in workload.spec.pod_sets]
    adapter = run.framework.factory(copy_json(started))
    if has_custom_stop(adapter):
        steps, current = [], started
        for step in adapter.stop_steps(restore):
            following = apply_merge_patch(current, step.merge_patch)
            steps.append({"subresource": step.subresource, "patch": _patch(current, following)})
            current = following
        return start, {"steps": steps}
    adapter.suspend()
    adapter.restore_pod_sets_info(restore)
    return start, {"steps": [{"subresource": None, "patch": _patch(started, adapter.obj)}]}


def dry_run(*, framework: Framework, obj: WireDict, config: Configuration, source: str) -> WireDict:
    """The report for ``obj`` (see the module docstring); ``DryRunFailed`` lists every problem."""
    run = _Run(framework=framework, source=source, problems=[])
    obj = copy_json(obj)
    obj.setdefault("apiVersion", framework.gvk.api_version)
    obj.setdefault("kind", framework.gvk.kind)
    try:
        gvk = gvk_of(obj)
    except AdapterError as exc:
        raise DryRunFailed([f"{source}: {exc.path}: {exc.message}"]) from None
    if (gvk.group, gvk.kind) != (framework.gvk.group, framework.gvk.kind):
        raise DryRunFailed(
            [f"{source}: kind: the object is {gvk}, not {framework.gvk} (--kind {framework.gvk.kind_arg})"]
        )
    adapter: GenericJob = framework.factory(copy_json(obj))
    notes: list[str] = []
    suspended = run.check("suspend.path", adapter.is_suspended, None)
    managed_by: Any = "not supported by this adapter"
    if has_managed_by(adapter):
        managed_by = run.check("managedBy.path", adapter.managed_by, None)
    no_pod_sets: list[PodSet] = []
    pod_sets = run.check("podSets", adapter.pod_sets, no_pod_sets)
    no_paths: list[str] | None = None
    paths = (
        run.check("podSets", adapter.template_paths, no_paths)
        if isinstance(adapter, JobWithTemplatePaths)
        else None
    )
    if not isinstance(adapter, JobWithTemplatePaths):
        notes.append("this kind's pod sets are synthetic: there is no pod template in the object")
    finished = run.check("finished", adapter.finished, None)
    active = run.check("active", adapter.is_active, None)
    pods_ready = run.check("podsReady", adapter.pods_ready, None)
    wpc, pod_class = run.check(
        "priorityClass",
        lambda: priority_class_names(adapter, pod_sets=pod_sets),
        (workload_priority_class_name(obj), ""),
    )
    report: WireDict = {
        "kind": framework.gvk.kind_arg,
        "adapter": f"declarative ({adapter_field(framework)})"
        if isinstance(framework.factory, DeclarativeFramework)
        else f"built-in {framework.name}",
        "object": f"{(obj.get('metadata') or {}).get('namespace') or '-'}/{(obj.get('metadata') or {}).get('name') or '-'}",
        "suspended": suspended,
        "queueName": queue_name(obj) or None,
        "managedBy": managed_by,
        "priorityClass": {
            "workloadPriorityClass": wpc or None,
            "podPriorityClass": (pod_class or None) if not wpc else None,
        },
        "podSets": _pod_set_report(run, pod_sets, paths),
        "state": {
            "finished": finished.finished if finished else None,
            "succeeded": finished.success if finished and finished.finished else None,
            "message": finished.message if finished and finished.finished else None,
            "active": active,
            "podsReady": pods_ready,
        },
    }
    if finished is not None and not finished.finished:
        notes.append("succeeded and message are evaluated only once finished is true")
    if run.problems or not pod_sets:
        raise DryRunFailed(run.problems or [f"{source}: the adapter found no pod sets"])
    priority = resolve_priority(
        wpc_label=wpc,
        pod_priority_class_name=pod_class,
        wpc_lookup=lambda _: 0,
        pc_lookup=lambda _: 0,
        global_default=None,
    )
    assert not isinstance(priority, PriorityNotFound)  # the lookups above find every class
    if priority.ref is not None:
        notes.append(
            f"spec.priority assumes {priority.ref.kind} {priority.ref.name!r} has value 0 (no cluster was read)"
        )
    try:
        workload = construct_workload(
            job=obj,
            gvk=framework.gvk,
            pod_sets=pod_sets,
            priority=priority,
            label_keys_to_copy=config.integrations.label_keys_to_copy,
        )
    except WorkloadConstructionError as exc:
        raise DryRunFailed([f"{source}: {exc.path}: {exc}"]) from None
    if not job_uid(obj):
        notes.append(
            "the object has no metadata.uid, which the API server assigns; "
            "the name hash and the owner reference of the Workload use it"
        )
    report["workload"] = workload.to_wire()
    suspended_obj = copy_json(obj)
    if not suspended:
        framework.factory(suspended_obj).suspend()
        notes.append(
            "the object is not suspended; the webhook suspends it on create, and start applies to that"
        )
    nothing: tuple[WireDict, WireDict] = ({}, {})
    start, stop = run.check(
        "podSets", partial(_start_and_stop, run, suspended_obj=suspended_obj, workload=workload), nothing
    )
    if run.problems:
        raise DryRunFailed(run.problems)
    report["start"] = start
    report["stop"] = stop
    report["notes"] = notes
    return report
