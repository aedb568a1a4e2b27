"""The declarative adapter format: make any CRD queueable from configuration alone.

An entry of ``integrations.externalFrameworks`` names a kind as Kueue does (``Kind.version.group``)
and describes, with field paths and CEL expressions, everything ``GenericJob`` needs:

.. code-block:: yaml

    integrations:
      externalFrameworks:
      - name: TrainingRun.v1alpha1.ml.example.com
        adapter:
          suspend: {path: spec.suspend}               # bool field, true = suspended
          managedBy: {path: spec.managedBy}
          podSets:
          - name: main
            template: spec.template                  # path to a PodTemplateSpec
            count: {path: spec.replicas, default: 1}
          finished: "has(object.status) && has(object.status.phase) && object.status.phase in ['Succeeded', 'Failed']"
          succeeded: "object.status.phase == 'Succeeded'"
          message: "has(object.status.message) ? object.status.message : ''"
          active: "has(object.status) && has(object.status.active) && object.status.active > 0"
          podsReady: "has(object.status) && has(object.status.ready) && object.status.ready >= object.spec.replicas"

Invariants: **writes go through paths** (suspend, managedBy, templates, counts) so we patch exactly
the fields we own; **reads may use CEL** (``object`` is the whole job; inside a ``forEach`` pod set
``element`` is the list item and ``index`` its position). Paths are dotted with ``[N]`` indexes,
e.g. ``spec.replicatedJobs[0].template``; a path in a ``forEach`` pod set is relative to the element.
CEL's ``has()`` tests only the last field: write ``has(object.status) && has(object.status.phase)``,
since a new object has no ``status`` at all. ``succeeded`` and ``message`` are evaluated only once
``finished`` is true.
"""

from __future__ import annotations

from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

__all__ = [
    "CountSource",
    "DeclarativeAdapterSpec",
    "ManagedBySpec",
    "NameSource",
    "PodSetSpec",
    "SuspendSpec",
    "TopologyRequestSpec",
]


class _Strict(BaseModel):
    """Configuration models reject unknown fields (a typo must not be silently ignored)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class SuspendSpec(_Strict):
    path: str = Field(description="Field that suspends the job, e.g. spec.suspend or spec.status")
    suspended_value: Any = Field(
        default=True, alias="suspendedValue", description="Value meaning suspended (true, PipelineRunPending)"
    )
    running_value: Any = Field(
        default=False,
        alias="runningValue",
        description="Value written to start the job; null removes the field (Tekton's spec.status)",
    )


class ManagedBySpec(_Strict):
    path: str = Field(description="Field naming the controller that manages the job, e.g. spec.managedBy")
    controller_name: str | None = Field(
        default=None,
        alias="controllerName",
        description="The kind's own controller name; like an empty field, MultiKueue may replace it",
    )


class _PathOrExpression(_Strict):
    """A value read from a field or computed by CEL: exactly one of the two is set."""

    path: str | None = None
    expression: str | None = None

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.path is None) == (self.expression is None):
            raise ValueError("set exactly one of 'path' or 'expression'")
        return self


class CountSource(_PathOrExpression):
    path: str | None = Field(default=None, description="Integer field holding the pod count")
    expression: str | None = Field(default=None, description="CEL expression giving the pod count")
    default: int = Field(default=1, ge=0, description="Count when the path is absent")


class NameSource(_PathOrExpression):
    path: str | None = Field(default=None, description="Field (relative to the element) holding the name")
    expression: str | None = Field(default=None, description="CEL expression giving the name")


class TopologyRequestSpec(_Strict):
    """Index labels for Topology Aware Scheduling (Kueue adds them to the pod set's topologyRequest)."""

    pod_index_label: str | None = Field(
        default=None, alias="podIndexLabel", description="Pod label holding the pod's index in the pod set"
    )
    sub_group_index_label: str | None = Field(
        default=None,
        alias="subGroupIndexLabel",
        description="Pod label holding the sub-group (replica) index",
    )
    sub_group_count: CountSource | None = Field(
        default=None, alias="subGroupCount", description="Number of sub-groups (e.g. a JobSet's replicas)"
    )


class PodSetSpec(_Strict):
    name: str | NameSource = Field(
        default="main", description="Literal pod-set name, or where to read it (forEach pod sets)"
    )
    for_each: str | None = Field(
        default=None, alias="forEach", description="List field: one pod set per element (JobSet-style)"
    )
    template: str = Field(description="Path to the PodTemplateSpec (relative to the element in forEach)")
    count: CountSource = Field(default_factory=lambda: CountSource(expression="1"))
    min_count: CountSource | None = Field(default=None, alias="minCount")
    topology_request: TopologyRequestSpec | None = Field(
        default=None,
        alias="topologyRequest",
        description="Index labels for TAS; topology annotations on the template are always read",
    )


class DeclarativeAdapterSpec(_Strict):
    suspend: SuspendSpec
    managed_by: ManagedBySpec | None = Field(default=None, alias="managedBy")
    pod_sets: list[PodSetSpec] = Field(alias="podSets", min_length=1)
    finished: str = Field(description="CEL: true when the job reached a terminal state")
    succeeded: str = Field(default="true", description="CEL: true when the finished job succeeded")
    message: str = Field(default="''", description="CEL: human-readable finish message")
    active: str = Field(default="false", description="CEL: true while any pod may still be running")
    pods_ready: str = Field(
        default="true", alias="podsReady", description="CEL: true when all required pods are ready"
    )
    priority_class: str | None = Field(
        default=None, alias="priorityClass", description="CEL: pod PriorityClass name, if not in templates"
    )
    remote_drop_paths: list[str] = Field(
        default_factory=list,
        alias="remoteDropPaths",
        description="Fields MultiKueue leaves out of the worker's copy (e.g. a TTL that deletes it when finished)",
    )
    reset_on_stop: list[str] = Field(
        default_factory=list,
        alias="resetOnStop",
        description=(
            "status paths cleared through /status between suspending and restoring the templates, "
            "for kinds whose API server (like batch/v1 Job's startTime) refuses template changes "
            "until they are gone"
        ),
    )
