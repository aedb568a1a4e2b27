"""An AppWrapper's components: their resolved pod sets, and the objects created for them.

Two jobs, both pure (no I/O):

* :func:`initial_component_status` -- AppWrapper's ``EnsureComponentStatusInitialized``: one
  ``status.componentStatus`` entry per component holding its *resolved* pod sets (the declared ones,
  else those inferred for the kinds AppWrapper knows, through ``shared.frameworks.appwrapper``, the
  same resolution the reconciler's Workload is built from). They are cached in status so a later
  ``kubectl apply`` of the spec cannot change what Kueue accounted for.
* :func:`build_component` -- the first half of AppWrapper's ``createComponent``: parse the template,
  force the AppWrapper's namespace, stamp ``workload.codeflare.dev/appwrapper=<name>`` on the object
  (an existing value wins) and on every pod template, merge Kueue's ``podSetInfos`` into each pod
  template (labels, annotations and node selectors with conflict detection, tolerations appended,
  scheduling gates de-duplicated by name) and set the AppWrapper as controlling owner.

Invariant: every problem is a :class:`ComponentError` naming the component's field path
(``spec.components[1].template``), never ``KeyError``/``TypeError`` -- the caller turns it into the
AppWrapper's ``Failed`` phase (a bad component does not become good by retrying).

Deliberate difference: AppWrapper resolves declared pod set paths only when it creates the object.
Here :func:`initial_component_status` checks them at once (the path must lead to an object with a
``spec`` object) so that an AppWrapper that could never run fails before it is queued, instead of
waiting forever for a Workload the reconciler cannot build. Pod specs are not type-checked field by
field as Go's converter does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from appwrapper.model import APPWRAPPER_LABEL
from shared.frameworks.appwrapper import AppWrapperAdapter, ResolvedPodSet
from shared.frameworks.base import AdapterError
from shared.frameworks.builtin_kinds import APPWRAPPER
from shared.frameworks.paths import FieldPath, PathSyntaxError, describe_type, parse_path
from shared.jsontree import copy_json
from shared.kube import GroupVersionKind

__all__ = [
    "ComponentError",
    "build_component",
    "expected_pod_count",
    "initial_component_status",
    "template_path",
]

_TEMPLATE = "template"


class ComponentError(Exception):
    """A component that cannot be created; ``str()`` names its field path."""

    def __init__(self, index: int, message: str, *, field: str = "template") -> None:
        self.index = index
        self.message = message
        super().__init__(f"spec.components[{index}].{field}: {message}")


def template_path(path: str) -> FieldPath | None:
    """AppWrapper's pod set path (rooted at ``template``) within the component's object.

    ``None`` stands for the object itself (a Pod's path is ``template``). Raises ``ValueError`` with
    AppWrapper's wording when the path does not start at ``template``.
    """
    if path == _TEMPLATE:
        return None
    if not path.startswith(_TEMPLATE + "."):
        raise ValueError("first element of the path must be 'template'")
    try:
        return parse_path(path[len(_TEMPLATE) + 1 :])
    except PathSyntaxError as exc:
        raise ValueError(exc.message) from None


def _component(aw: Mapping[str, Any], index: int) -> dict[str, Any]:
    components = (aw.get("spec") or {}).get("components") or []
    component = components[index]
    if not isinstance(component, dict):
        raise ComponentError(index, f"expected an object, got {describe_type(component)}", field="")
    return component


def _parse_template(component: Mapping[str, Any], index: int) -> dict[str, Any]:
    """The component's object (a copy); Go's ``UnstructuredJSONScheme.Decode`` rules for kind/apiVersion."""
    template = component.get("template")
    if not isinstance(template, dict):
        raise ComponentError(index, f"expected an object, got {describe_type(template)}")
    shown = orjson.dumps(template).decode()
    if not isinstance(template.get("kind"), str) or not template["kind"]:
        raise ComponentError(index, f"Object 'Kind' is missing in '{shown}'")
    if not isinstance(template.get("apiVersion"), str) or not template["apiVersion"]:
        raise ComponentError(index, f"Object 'apiVersion' is missing in '{shown}'")
    metadata = template.get("metadata")
    if metadata is not None and not isinstance(metadata, dict):
        raise ComponentError(
            index, f"expected an object, got {describe_type(metadata)}", field="template.metadata"
        )
    return copy_json(template)


def _pod_template(obj: dict[str, Any], path: str, index: int) -> dict[str, Any]:
    """The pod template at AppWrapper ``path`` inside ``obj`` (live), with an object ``spec``."""
    try:
        within = template_path(path)
        value = obj if within is None else within.get(obj)
    except (ValueError, AdapterError) as exc:
        raise ComponentError(index, f"path {path!r} does not refer to a v1.PodSpecTemplate: {exc}") from None
    if not isinstance(value, dict):
        raise ComponentError(index, f"path {path!r} does not refer to a v1.PodSpecTemplate: non-map value")
    if not isinstance(value.get("spec"), dict):
        raise ComponentError(index, f"path {path!r} does not refer to a v1.PodSpecTemplate: no spec")
    return value


def _wire_pod_set(pod_set: ResolvedPodSet) -> dict[str, Any]:
    wire: dict[str, Any] = {"replicas": pod_set.replicas, "path": pod_set.path}
    if pod_set.annotations:
        wire["annotations"] = dict(pod_set.annotations)
    return wire


def initial_component_status(aw: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``status.componentStatus`` for a new AppWrapper (see module doc); raises ``ComponentError``."""
    components = (aw.get("spec") or {}).get("components")
    if not isinstance(components, list):
        raise ComponentError(0, "spec.components must be a list", field="")
    adapter = AppWrapperAdapter(copy_json(dict(aw)))
    statuses: list[dict[str, Any]] = []
    for index in range(len(components)):
        component = _component(aw, index)
        obj = _parse_template(component, index)
        declared = component.get("podSets")
        if declared:
            if not isinstance(declared, list) or not all(isinstance(p, dict) for p in declared):
                raise ComponentError(index, "must be a list of objects", field="podSets")
            pod_sets = copy_json(declared)
        else:
            try:
                pod_sets = [_wire_pod_set(p) for p in adapter.component_pod_sets(index)]
            except AdapterError as exc:
                raise ComponentError(index, f"error inferring PodSets: {exc}") from None
        for position, pod_set in enumerate(pod_sets):
            path = pod_set.get("path")
            if not isinstance(path, str) or not path:
                raise ComponentError(index, "podspec must specify path", field=f"podSets[{position}].path")
            _pod_template(obj, path, index)
        statuses.append({"name": "", "kind": "", "apiVersion": "", "podSets": pod_sets})
    return statuses


def expected_pod_count(component_status: list[dict[str, Any]]) -> int:
    """``utils.ExpectedPodCount``: the replicas (default 1) of every resolved pod set."""
    total = 0
    for status in component_status:
        for pod_set in status.get("podSets") or []:
            replicas = pod_set.get("replicas")
            total += replicas if isinstance(replicas, int) and not isinstance(replicas, bool) else 1
    return total


def _string_map(value: Any) -> dict[str, str]:
    """AppWrapper's ``toMap``: a map whose non-string values are printed."""
    if not isinstance(value, dict):
        return {}
    return {str(k): v if isinstance(v, str) else str(v) for k, v in value.items()}


def _merge_keep_first(first: Mapping[str, str], second: Mapping[str, str]) -> dict[str, str]:
    return {**second, **first}


def _conflict(existing: Mapping[str, str], added: Mapping[str, str]) -> str | None:
    for key in sorted(existing):
        if key in added and existing[key] != added[key]:
            return f"conflict for key={key}, value1={existing[key]}, value2={added[key]}"
    return None


def _inject(template: dict[str, Any], info: Mapping[str, Any], aw_labels: dict[str, str], index: int) -> None:
    if not isinstance(template.get("metadata"), dict):
        template["metadata"] = {}
    metadata, spec = template["metadata"], template["spec"]

    def merge(container: dict[str, Any], key: str, added: Mapping[str, str], what: str) -> None:
        existing = _string_map(container.get(key))
        problem = _conflict(existing, added)
        if problem is not None:
            raise ComponentError(index, f"conflict updating {what}: {problem}")
        container[key] = _merge_keep_first(existing, added)

    annotations = _string_map(info.get("annotations"))
    if annotations:
        merge(metadata, "annotations", annotations, "annotations")
    merge(metadata, "labels", _merge_keep_first(_string_map(info.get("labels")), aw_labels), "labels")
    node_selector = _string_map(info.get("nodeSelector"))
    if node_selector:
        merge(spec, "nodeSelector", node_selector, "nodeSelector")
    tolerations = info.get("tolerations")
    if isinstance(tolerations, list) and tolerations:
        existing = spec.get("tolerations")
        spec["tolerations"] = [*(existing if isinstance(existing, list) else []), *copy_json(tolerations)]
    gates = info.get("schedulingGates")
    if isinstance(gates, list) and gates:
        current = spec.get("schedulingGates")
        merged = list(current) if isinstance(current, list) else []
        names = {g.get("name") for g in merged if isinstance(g, dict)}
        for gate in gates:
            name = gate.get("name") if isinstance(gate, dict) else None
            if name not in names:
                merged.append({"name": name})
                names.add(name)
        spec["schedulingGates"] = merged


def _set_controller(obj: dict[str, Any], aw: Mapping[str, Any], index: int) -> None:
    """controller-runtime's ``SetControllerReference`` with the AppWrapper as owner."""
    metadata = obj.setdefault("metadata", {})
    aw_meta = aw.get("metadata") or {}
    owner = {
        "apiVersion": APPWRAPPER.gvk.api_version,
        "kind": APPWRAPPER.gvk.kind,
        "name": aw_meta.get("name", ""),
        "uid": aw_meta.get("uid", ""),
        "controller": True,
        "blockOwnerDeletion": True,
    }
    references = [r for r in metadata.get("ownerReferences") or [] if isinstance(r, dict)]
    kept: list[dict[str, Any]] = []
    for reference in references:
        same = (
            GroupVersionKind.of(reference).group == APPWRAPPER.gvk.group
            and reference.get("kind") == owner["kind"]
            and reference.get("name") == owner["name"]
        )
        if reference.get("controller") and not same:
            raise ComponentError(
                index,
                f"Object {metadata.get('namespace', '')}/{metadata.get('name', '')} is already owned by "
                f"another {reference.get('kind')} controller {reference.get('name')}",
            )
        if not same:
            kept.append(reference)
    metadata["ownerReferences"] = [*kept, owner]


def build_component(aw: Mapping[str, Any], index: int) -> dict[str, Any]:
    """The object to create for component ``index`` (see module doc); raises ``ComponentError``."""
    component = _component(aw, index)
    obj = _parse_template(component, index)
    aw_meta = aw.get("metadata") or {}
    namespace = aw_meta.get("namespace", "")
    metadata = obj.setdefault("metadata", {})
    if not metadata.get("namespace"):
        metadata["namespace"] = namespace
    elif metadata["namespace"] != namespace:
        raise ComponentError(
            index,
            f'component namespace "{metadata["namespace"]}" is different from appwrapper namespace "{namespace}"',
        )
    aw_labels = {APPWRAPPER_LABEL: str(aw_meta.get("name", ""))}
    metadata["labels"] = _merge_keep_first(_string_map(metadata.get("labels")), aw_labels)
    statuses = (aw.get("status") or {}).get("componentStatus") or []
    pod_sets = statuses[index].get("podSets") or [] if index < len(statuses) else []
    infos = component.get("podSetInfos")
    infos = infos if isinstance(infos, list) else []
    for position, pod_set in enumerate(pod_sets):
        info = infos[position] if position < len(infos) and isinstance(infos[position], dict) else {}
        template = _pod_template(obj, str(pod_set.get("path", "")), index)
        _inject(template, info, aw_labels, index)
    _set_controller(obj, aw, index)
    return obj
