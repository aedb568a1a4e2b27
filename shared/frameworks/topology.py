"""The Workload ``podSets[].topologyRequest`` Kueue derives from a pod template (TAS).

Kueue's ``jobframework.NewPodSetTopologyRequest(...).Build()`` (Topology Aware Scheduling is Beta and
on by default) reads the template's ``kueue.x-k8s.io/podset-*-topology`` annotations and adds the
index labels the integration knows (batch Job: the completion index; JobSet: also the job index and
replica count). Real Kueue emits ``topologyRequest: {podIndexLabel: ...}`` even when the template has
no topology annotation at all (see the golden Workload), so the request is ``None`` only when there is
neither an annotation nor any index label.

Invariant: the result must be *the same dict every time* for the same template, because the
reconciler compares job pod sets with the Workload's to decide whether they are still equivalent.
Malformed annotations raise ``AdapterError`` naming the annotation (Kueue returns the parse error).
"""

from __future__ import annotations

import json
from typing import Any

from shared.constants import (
    PODSET_GROUP_NAME_ANNOTATION,
    PODSET_PREFERRED_TOPOLOGY_ANNOTATION,
    PODSET_REQUIRED_TOPOLOGY_ANNOTATION,
    PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION,
    PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS_ANNOTATION,
    PODSET_SLICE_SIZE_ANNOTATION,
    PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION,
)
from shared.frameworks.base import AdapterError
from shared.frameworks.strconv import GoParseError, parse_bool, parse_int32

__all__ = ["build_topology_request"]


def build_topology_request(
    template: dict[str, Any],
    *,
    template_path: str,
    pod_index_label: str | None = None,
    sub_group_index_label: str | None = None,
    sub_group_count: int | None = None,
) -> dict[str, Any] | None:
    """Kueue's topology request for ``template`` (a PodTemplateSpec dict at ``template_path``)."""
    metadata = template.get("metadata")
    raw = metadata.get("annotations") if isinstance(metadata, dict) else None
    annotations: dict[str, Any] = raw if isinstance(raw, dict) else {}

    def where(key: str) -> str:
        return f"{template_path}.metadata.annotations[{key}]"

    request: dict[str, Any] = {}
    required = annotations.get(PODSET_REQUIRED_TOPOLOGY_ANNOTATION)
    preferred = annotations.get(PODSET_PREFERRED_TOPOLOGY_ANNOTATION)
    unconstrained = annotations.get(PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION)
    slice_topology = annotations.get(PODSET_SLICE_REQUIRED_TOPOLOGY_ANNOTATION)
    slice_size = annotations.get(PODSET_SLICE_SIZE_ANNOTATION)
    constraints = annotations.get(PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS_ANNOTATION)
    group_name = annotations.get(PODSET_GROUP_NAME_ANNOTATION)

    if required is not None:
        request["required"] = str(required)
    elif preferred is not None:
        request["preferred"] = str(preferred)
    elif unconstrained is not None:
        try:
            request["unconstrained"] = parse_bool(str(unconstrained))
        except GoParseError as exc:
            raise AdapterError(where(PODSET_UNCONSTRAINED_TOPOLOGY_ANNOTATION), str(exc)) from None
    else:
        has_slice_layer = (slice_topology is not None and slice_size is not None) or constraints is not None
        no_index_labels = (
            pod_index_label is None and sub_group_index_label is None and sub_group_count is None
        )
        if not has_slice_layer and no_index_labels:
            return None

    if constraints is not None:
        request["podsetSliceRequiredTopologyConstraints"] = _parse_constraints(
            constraints, where(PODSET_SLICE_REQUIRED_TOPOLOGY_CONSTRAINTS_ANNOTATION)
        )
    elif slice_topology is not None and slice_size is not None:
        try:
            size = parse_int32(str(slice_size))
        except GoParseError as exc:
            raise AdapterError(where(PODSET_SLICE_SIZE_ANNOTATION), str(exc)) from None
        request["podSetSliceRequiredTopology"] = str(slice_topology)
        request["podSetSliceSize"] = size

    if pod_index_label is not None:
        request["podIndexLabel"] = pod_index_label
    if sub_group_count is not None:
        request["subGroupCount"] = sub_group_count
    if sub_group_index_label is not None:
        request["subGroupIndexLabel"] = sub_group_index_label
    if group_name is not None and (required is not None or preferred is not None):
        request["podSetGroupName"] = str(group_name)
    return request


def _parse_constraints(raw: Any, where: str) -> list[Any]:
    try:
        parsed = json.loads(str(raw))
    except ValueError as exc:
        raise AdapterError(
            where, f"failed to parse multi-layer topology constraints annotation: {exc}"
        ) from None
    if not isinstance(parsed, list):
        raise AdapterError(where, "failed to parse multi-layer topology constraints annotation: not a list")
    if not 1 <= len(parsed) <= 3:
        raise AdapterError(
            where, f"topology constraints must contain between 1 and 3 entries: got {len(parsed)}"
        )
    return parsed
