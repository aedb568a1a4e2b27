"""The declarative adapter: ``GenericJob`` for any CRD, from a ``DeclarativeAdapterSpec``.

``DeclarativeFramework(spec, gvk=...)`` validates and compiles a spec **once, at start-up**: every
path is parsed and every CEL expression compiled, so a typo fails the process with an
``AdapterConfigError`` naming the configuration field (``...adapter.podSets[0].count.expression``)
instead of failing the first job that happens to need it. Calling the framework with a raw object
returns a ``DeclarativeAdapter`` wrapping that object (cheap: nothing is parsed again).

Invariants:

* **Writes go through paths** (suspend, managedBy, pod templates); reads may use CEL. So the adapter
  patches exactly the fields the spec names and never a field it computed.
* **Pod sets are positional.** Pod-set specs are expanded in order (a ``forEach`` spec yields one pod
  set per list element, in list order), and admission infos are paired with templates by that order,
  as Kueue pairs ``podSetAssignments`` with ``spec.podSets``.
* **Optional interfaces only when configured.** The returned adapter implements ``JobWithManagedBy``
  only if ``managedBy`` is configured, ``JobWithPriorityClass`` only if ``priorityClass`` is and
  ``JobWithCustomStop`` only if ``resetOnStop`` is, so ``isinstance`` checks in the webhook and
  reconciler mean what they say (one adapter class per capability mix, built once).
* **``resetOnStop`` stops in batch/v1 Job's order**: suspend with the ``kueue.x-k8s.io/stopping``
  mark, clear the listed ``status`` fields through ``/status``, then restore the templates and drop
  the mark; while the mark is present the job does not count as suspended, so a stop cut short
  resumes.
* Suspend values compare as JSON values (``true`` is not ``1``); a ``runningValue`` of ``null``
  removes the field (Tekton's ``spec.status``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from shared.constants import STOPPING_ANNOTATION
from shared.frameworks.base import AdapterConfigError, AdapterError, FinishedState, RawObjectAdapter, StopStep
from shared.frameworks.cel import CelExpression, compile_expression
from shared.frameworks.paths import FieldPath, PathSyntaxError, describe_type, parse_path
from shared.frameworks.spec import CountSource, DeclarativeAdapterSpec, NameSource, PodSetSpec
from shared.frameworks.templates import PodSetsAtTemplatePaths, restore_infos, template_copy
from shared.frameworks.topology import build_topology_request
from shared.jsontree import json_tree_copy
from shared.kube import GroupVersionKind
from shared.kueue.podset import PodSetInfo
from shared.merge_patch import apply_merge_patch, create_merge_patch
from shared.models.workload import PodSet

__all__ = ["DeclarativeAdapter", "DeclarativeFramework"]


def _path(text: str, *, field: str) -> FieldPath:
    try:
        return parse_path(text)
    except PathSyntaxError as exc:
        raise AdapterConfigError(field, f"invalid field path {text!r}: {exc.message}") from None


def _tagged(exc: AdapterError, field: str) -> AdapterError:
    """``exc`` naming the adapter field being evaluated, unless a narrower one is already named."""
    if exc.field is None:
        exc.field = field
    return exc


def _json_equal(left: Any, right: Any) -> bool:
    """JSON equality: ``true != 1`` (Python says they are equal)."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    return bool(left == right)


@dataclass(frozen=True)
class _Scope:
    """Where a pod set is evaluated: the whole object, or one ``forEach`` element."""

    base: FieldPath | None
    element: Any = None
    index: int | None = None

    def resolve(self, path: FieldPath) -> FieldPath:
        return path if self.base is None else self.base.join(path)


@dataclass(frozen=True)
class _CompiledCount:
    field: str
    path: FieldPath | None
    expression: CelExpression | None
    default: int

    @classmethod
    def compile(cls, source: CountSource, *, field: str) -> _CompiledCount:
        return cls(
            field=field,
            path=_path(source.path, field=f"{field}.path") if source.path is not None else None,
            expression=(
                compile_expression(source.expression, field=f"{field}.expression")
                if source.expression is not None
                else None
            ),
            default=source.default,
        )

    def evaluate(self, obj: dict[str, Any], scope: _Scope) -> int:
        try:
            if self.expression is not None:
                value = self.expression.evaluate_int(obj, element=scope.element, index=scope.index)
                where = self.expression.field
            else:
                assert self.path is not None  # CountSource guarantees exactly one source
                where = scope.resolve(self.path).text
                value = scope.resolve(self.path).get_typed(obj, int, default=self.default)
        except AdapterError as exc:
            raise _tagged(exc, self.field) from None
        if value < 0:
            raise AdapterError(where, f"pod count must not be negative, got {value}", field=self.field)
        return value


@dataclass(frozen=True)
class _CompiledPodSet:
    field: str
    literal_name: str | None
    name_path: FieldPath | None
    name_expression: CelExpression | None
    for_each: FieldPath | None
    template: FieldPath
    count: _CompiledCount
    min_count: _CompiledCount | None
    pod_index_label: str | None
    sub_group_index_label: str | None
    sub_group_count: _CompiledCount | None

    @classmethod
    def compile(cls, spec: PodSetSpec, *, field: str) -> _CompiledPodSet:
        name = spec.name
        topology = spec.topology_request
        return cls(
            field=field,
            literal_name=name if isinstance(name, str) else None,
            name_path=_name_path(name, field=f"{field}.name"),
            name_expression=(
                compile_expression(name.expression, field=f"{field}.name.expression")
                if isinstance(name, NameSource) and name.expression is not None
                else None
            ),
            for_each=_path(spec.for_each, field=f"{field}.forEach") if spec.for_each is not None else None,
            template=_path(spec.template, field=f"{field}.template"),
            count=_CompiledCount.compile(spec.count, field=f"{field}.count"),
            min_count=(
                _CompiledCount.compile(spec.min_count, field=f"{field}.minCount")
                if spec.min_count is not None
                else None
            ),
            pod_index_label=topology.pod_index_label if topology else None,
            sub_group_index_label=topology.sub_group_index_label if topology else None,
            sub_group_count=(
                _CompiledCount.compile(
                    topology.sub_group_count, field=f"{field}.topologyRequest.subGroupCount"
                )
                if topology is not None and topology.sub_group_count is not None
                else None
            ),
        )

    def scopes(self, obj: dict[str, Any]) -> list[_Scope]:
        if self.for_each is None:
            return [_Scope(base=None)]
        items = self.for_each.get_typed(obj, list, default=[])
        return [
            _Scope(base=self.for_each.index(index), element=item, index=index)
            for index, item in enumerate(items)
        ]

    def name(self, obj: dict[str, Any], scope: _Scope) -> str:
        if self.name_expression is not None:
            return self.name_expression.evaluate_str(obj, element=scope.element, index=scope.index)
        if self.name_path is not None:
            return scope.resolve(self.name_path).get_typed(obj, str)
        assert self.literal_name is not None
        return self.literal_name if scope.index is None else f"{self.literal_name}-{scope.index}"


def _status_path(text: str, *, field: str) -> FieldPath:
    path = _path(text, field=field)
    if not path.text.startswith("status."):
        raise AdapterConfigError(field, f"must be a path under status, got {text!r}")
    return path


def _name_path(name: str | NameSource, *, field: str) -> FieldPath | None:
    if isinstance(name, NameSource) and name.path is not None:
        return _path(name.path, field=f"{field}.path")
    return None


class DeclarativeFramework:
    """A compiled ``DeclarativeAdapterSpec`` for one kind; call it with an object to get its adapter."""

    def __init__(
        self, spec: DeclarativeAdapterSpec, *, gvk: GroupVersionKind, field: str = "adapter"
    ) -> None:
        self.spec = spec
        self.gvk = gvk
        self.field = field
        self.suspend_path = _path(spec.suspend.path, field=f"{field}.suspend.path")
        self.managed_by_path = (
            _path(spec.managed_by.path, field=f"{field}.managedBy.path")
            if spec.managed_by is not None
            else None
        )
        self.pod_sets = tuple(
            _CompiledPodSet.compile(pod_set, field=f"{field}.podSets[{index}]")
            for index, pod_set in enumerate(spec.pod_sets)
        )
        self.finished = compile_expression(spec.finished, field=f"{field}.finished")
        self.succeeded = compile_expression(spec.succeeded, field=f"{field}.succeeded")
        self.message = compile_expression(spec.message, field=f"{field}.message")
        self.active = compile_expression(spec.active, field=f"{field}.active")
        self.pods_ready = compile_expression(spec.pods_ready, field=f"{field}.podsReady")
        self.priority_class = (
            compile_expression(spec.priority_class, field=f"{field}.priorityClass")
            if spec.priority_class is not None
            else None
        )
        self.remote_drop_paths = tuple(
            _path(text, field=f"{field}.remoteDropPaths[{index}]")
            for index, text in enumerate(spec.remote_drop_paths)
        )
        self.reset_on_stop = tuple(
            _status_path(text, field=f"{field}.resetOnStop[{index}]")
            for index, text in enumerate(spec.reset_on_stop)
        )
        capabilities: list[type[DeclarativeAdapter]] = []
        if self.managed_by_path is not None:
            capabilities.append(_WithManagedBy)
        if self.priority_class is not None:
            capabilities.append(_WithPriorityClass)
        if self.reset_on_stop:
            capabilities.append(_WithStopSteps)
        self._adapter_class = _adapter_class(tuple(capabilities))

    def __call__(self, obj: dict[str, Any]) -> DeclarativeAdapter:
        return self._adapter_class(obj, self)


class DeclarativeAdapter(RawObjectAdapter, PodSetsAtTemplatePaths):
    """``GenericJob`` over a raw object, driven by a ``DeclarativeFramework``."""

    def __init__(self, obj: dict[str, Any], framework: DeclarativeFramework) -> None:
        super().__init__(obj)
        self._framework = framework

    @property
    def gvk(self) -> GroupVersionKind:
        return self._framework.gvk

    def is_suspended(self) -> bool:
        try:
            value = self._framework.suspend_path.get(self._obj, default=None)
        except AdapterError as exc:
            raise _tagged(exc, f"{self._framework.field}.suspend.path") from None
        return _json_equal(value, self._framework.spec.suspend.suspended_value)

    def suspend(self) -> None:
        self._framework.suspend_path.set(self._obj, self._framework.spec.suspend.suspended_value)

    def _unsuspend(self) -> None:
        running = self._framework.spec.suspend.running_value
        if running is None:
            self._framework.suspend_path.delete(self._obj)
        else:
            self._framework.suspend_path.set(self._obj, running)

    def _expanded(self) -> list[tuple[_CompiledPodSet, _Scope]]:
        expanded: list[tuple[_CompiledPodSet, _Scope]] = []
        for pod_set in self._framework.pod_sets:
            try:
                scopes = pod_set.scopes(self._obj)
            except AdapterError as exc:
                raise _tagged(exc, f"{pod_set.field}.forEach") from None
            expanded.extend((pod_set, scope) for scope in scopes)
        return expanded

    def _template_paths(self) -> list[FieldPath]:
        return [scope.resolve(pod_set.template) for pod_set, scope in self._expanded()]

    def template_paths(self) -> list[str]:
        return [path.text for path in self._template_paths()]

    def pod_sets(self) -> list[PodSet]:
        out: list[PodSet] = []
        seen: dict[str, str] = {}
        for pod_set, scope in self._expanded():
            try:
                name = pod_set.name(self._obj, scope)
            except AdapterError as exc:
                raise _tagged(exc, f"{pod_set.field}.name") from None
            if name in seen:
                raise AdapterError(
                    f"{pod_set.field}.name", f"pod set name {name!r} is used twice ({seen[name]})"
                )
            template_path = scope.resolve(pod_set.template)
            seen[name] = template_path.text
            try:
                template = template_copy(self._obj, template_path)
            except AdapterError as exc:
                raise _tagged(exc, f"{pod_set.field}.template") from None
            sub_group_count = (
                pod_set.sub_group_count.evaluate(self._obj, scope) if pod_set.sub_group_count else None
            )
            try:
                topology_request = build_topology_request(
                    template,
                    template_path=template_path.text,
                    pod_index_label=pod_set.pod_index_label,
                    sub_group_index_label=pod_set.sub_group_index_label,
                    sub_group_count=sub_group_count,
                )
            except AdapterError as exc:
                raise _tagged(exc, f"{pod_set.field}.template") from None
            out.append(
                PodSet(
                    name=name,
                    template=template,
                    count=pod_set.count.evaluate(self._obj, scope),
                    min_count=pod_set.min_count.evaluate(self._obj, scope) if pod_set.min_count else None,
                    topology_request=topology_request,
                )
            )
        if not out:
            where = next((p.for_each.text for p in self._framework.pod_sets if p.for_each), "podSets")
            raise AdapterError(where, "the object has no pod sets (the list is empty or missing)")
        return out

    def finished(self) -> FinishedState:
        if not self._framework.finished.evaluate_bool(self._obj):
            return FinishedState(finished=False)
        return FinishedState(
            finished=True,
            success=self._framework.succeeded.evaluate_bool(self._obj),
            message=self._framework.message.evaluate_str(self._obj),
        )

    def is_active(self) -> bool:
        return self._framework.active.evaluate_bool(self._obj)

    def pods_ready(self) -> bool:
        return self._framework.pods_ready.evaluate_bool(self._obj)


class _WithManagedBy(DeclarativeAdapter):
    """Adds ``JobWithManagedBy`` when the spec configures ``managedBy``."""

    def _managed_by_path(self) -> FieldPath:
        assert self._framework.managed_by_path is not None
        return self._framework.managed_by_path

    def can_default_managed_by(self) -> bool:
        spec = self._framework.spec.managed_by
        own = spec.controller_name if spec is not None else None
        current = self.managed_by()
        return current is None or (own is not None and current == own)

    def managed_by(self) -> str | None:
        value = self._managed_by_path().get(self._obj, default=None)
        if value is not None and not isinstance(value, str):
            raise AdapterError(self._managed_by_path().text, f"expected a string, got {describe_type(value)}")
        return value

    def set_managed_by(self, value: str | None) -> None:
        if value is None:
            self._managed_by_path().delete(self._obj)
        else:
            self._managed_by_path().set(self._obj, value)


class _WithPriorityClass(DeclarativeAdapter):
    """Adds ``JobWithPriorityClass`` when the spec configures ``priorityClass``."""

    def priority_class(self) -> str | None:
        assert self._framework.priority_class is not None
        return self._framework.priority_class.evaluate_optional_str(self._obj)


class _WithStopSteps(DeclarativeAdapter):
    """Adds ``JobWithCustomStop`` when the spec lists ``resetOnStop`` status fields."""

    def _annotations(self, obj: dict[str, Any]) -> dict[str, Any]:
        annotations = (obj.get("metadata") or {}).get("annotations")
        return annotations if isinstance(annotations, dict) else {}

    def is_suspended(self) -> bool:
        return super().is_suspended() and self._annotations(self._obj).get(STOPPING_ANNOTATION) != "true"

    def stop_steps(self, infos: Sequence[PodSetInfo]) -> list[StopStep]:
        working: dict[str, Any] = json_tree_copy(self._obj)
        steps: list[StopStep] = []
        if not self._framework(working).is_suspended():
            suspended: dict[str, Any] = json_tree_copy(working)
            self._framework.suspend_path.set(suspended, self._framework.spec.suspend.suspended_value)
            suspended.setdefault("metadata", {}).setdefault("annotations", {})[STOPPING_ANNOTATION] = "true"
            steps.append(StopStep(create_merge_patch(working, suspended)))
            working = suspended
        reset: dict[str, Any] = {}
        for path in self._framework.reset_on_stop:
            if path.get(working, default=None) is not None:
                fragment: dict[str, Any] = {}
                path.set(fragment, None)
                reset = apply_merge_patch(reset, fragment) if reset else fragment
        if reset:
            steps.append(StopStep(reset, subresource="status", phase="reset-status"))
            for path in self._framework.reset_on_stop:
                path.delete(working)
        restored: dict[str, Any] = json_tree_copy(working)
        restore_infos(restored, self._framework(restored)._template_paths(), infos)
        annotations = self._annotations(restored)
        annotations.pop(STOPPING_ANNOTATION, None)
        if not annotations and "annotations" in restored.get("metadata", {}):
            del restored["metadata"]["annotations"]
        patch = create_merge_patch(working, restored)
        if patch:
            steps.append(StopStep(patch, phase="restore"))
        return steps


_ADAPTER_CLASSES: dict[tuple[type[DeclarativeAdapter], ...], type[DeclarativeAdapter]] = {}


def _adapter_class(capabilities: tuple[type[DeclarativeAdapter], ...]) -> type[DeclarativeAdapter]:
    """One class per capability mix (so per-class protocol caches stay correct), built once."""
    if not capabilities:
        return DeclarativeAdapter
    if capabilities not in _ADAPTER_CLASSES:
        name = "Declarative" + "".join(c.__name__.removeprefix("_") for c in capabilities)
        _ADAPTER_CLASSES[capabilities] = type(name, capabilities, {})
    return _ADAPTER_CLASSES[capabilities]
