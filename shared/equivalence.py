"""Kueue's job <-> Workload equivalence (``EquivalentToWorkload``, ``equality.ComparePodSetSlices``).

The reconciler keeps a job's Workload only while the two are *equivalent*; otherwise the Workload is
deleted (or updated in place for a suspended job) and the job is stopped. Deciding differently from
Kueue means either thrashing Workloads (too strict) or running pods that do not match their
admission (too lax), so the rules are Kueue's:

1. the Workload's controller owner has the job's name and (``FinishOrphanedWorkloads``, on) UID;
2. ``spec.maximumExecutionTimeSeconds`` equals the job's max-exec-time label (absent == absent);
3. pod sets compare **positionally**: ``count``, ``minCount`` (absent == -1), ``initContainers`` and
   ``containers`` (semantic deep-equal), and ``tolerations`` unless the Workload is Admitted. Names,
   node selectors, labels, annotations and priority are *not* compared;
4. job pod sets are sanitised first (duplicate env vars collapsed, keeping the last value at the
   position of the first) and lose ``minCount`` when ``PartialAdmission`` is off;
5. when the Workload has quota reserved the job is compared with the *expected running* pod sets
   (spec pod sets with the admission merged in and, for partial admission, the admitted count); if
   that fails a **suspended** job is compared with the plain spec instead.

Semantic deep-equal on raw JSON (Go compares typed structs with ``equality.Semantic``): an absent
field, ``null``, ``""``, ``[]`` and ``{}`` are all equal (Go's zero values and nil-vs-empty rule);
resource quantities (``resources.requests``/``limits``, ``divisor``) compare by value, so ``"1"`` ==
``"1000m"`` and ``"1Ki"`` == ``"1024"``. Limitation of working without the Go types: ``false``/``0``
are *not* treated as equal to absent, and a pointer to an empty struct is treated as absent.

Invariant: pure functions; nothing passed in is modified.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation, localcontext
from functools import lru_cache
from typing import Any, Final

from shared.constants import Condition as ConditionType
from shared.jsontree import json_tree_copy
from shared.kube.conditions import conditions_of, find_condition_view, is_true
from shared.kube.conditions import is_condition_true as is_object_condition_true_in
from shared.models.meta import controller_owner
from shared.models.workload import PodSet, Workload
from shared.podset import (
    DEFAULT_GATES,
    FlavorData,
    PodSetGates,
    PodSetInfoError,
    UnknownFlavorError,
    merge_into_template,
    pod_set_infos_from_admission,
)

__all__ = [
    "can_be_partially_admitted",
    "compare_pod_set_slices",
    "compare_pod_sets",
    "equivalent_on_the_wire",
    "equivalent_to_workload",
    "expected_running_pod_sets",
    "parse_quantity",
    "sanitize_pod_sets",
    "semantically_equal",
]

_QUANTITY = re.compile(
    r"(?P<number>[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(?P<suffix>[eE][+-]?[0-9]+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?",
    re.ASCII,
)
_BINARY_SUFFIXES = {"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_QUANTITY_MAP_KEYS = frozenset({"requests", "limits"})


def parse_quantity(value: object) -> Decimal | None:
    """The exact value of a Kubernetes ``resource.Quantity`` string (or JSON number), else ``None``."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        value = str(value)
    if not isinstance(value, str):
        return None
    return _parse_quantity_text(value)


@lru_cache(maxsize=1024)
def _parse_quantity_text(value: str) -> Decimal | None:
    """``parse_quantity`` of a string; cached, since a few distinct quantities recur in every job
    (``Decimal`` is immutable, so sharing a result is safe)."""
    match = _QUANTITY.fullmatch(value)
    if match is None:
        return None
    suffix = match.group("suffix") or ""
    with localcontext() as context:
        context.prec = 200  # exact for every valid quantity: no rounding, ever
        try:
            number = Decimal(match.group("number"))
            if suffix in _BINARY_SUFFIXES:
                return number * (Decimal(1024) ** _BINARY_SUFFIXES[suffix])
            if suffix in _DECIMAL_SUFFIXES:
                return number.scaleb(_DECIMAL_SUFFIXES[suffix])
            if suffix:
                return number.scaleb(int(suffix[1:]))
            return number
        except (InvalidOperation, ValueError):
            return None


class _Quantity:
    """A quantity compared by value; an unparsable one keeps its text (and equals only itself)."""

    __slots__ = ("raw", "value")

    def __init__(self, raw: object) -> None:
        self.raw = raw
        self.value = parse_quantity(raw)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, _Quantity):
            return NotImplemented
        if self.value is not None and other.value is not None:
            return self.value == other.value
        return self.raw == other.raw

    def __hash__(self) -> int:
        return hash(self.value)

    def __repr__(self) -> str:
        return f"Quantity({self.raw!r})"


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, str | list | dict) and not value)


_SCALARS: Final = (str, int, float, bool, type(None))


def _normalize(value: Any, key: str = "") -> Any:
    kind = type(value)
    if kind in _SCALARS:  # most leaves; skips the ABC ``Mapping`` check below (hot path)
        return value
    if kind is dict or isinstance(value, Mapping):
        normalized: dict[str, Any] = {}
        for child_key, child in value.items():
            if key == "resources" and child_key in _QUANTITY_MAP_KEYS and isinstance(child, Mapping):
                item: Any = {name: _Quantity(amount) for name, amount in child.items()}
            elif child_key == "divisor":
                item = None if _is_empty(child) else _Quantity(child)
            else:
                item = _normalize(child, str(child_key))
            if not _is_empty(item):
                normalized[str(child_key)] = item
        return normalized
    if kind is list or isinstance(value, list):
        return [_normalize(item, key) for item in value]
    return value


def semantically_equal(first: Any, second: Any) -> bool:
    """Kubernetes' ``equality.Semantic.DeepEqual`` approximated on raw JSON (see module docstring).

    Plain equality first: normalising maps equal inputs to equal outputs, so equal JSON is always
    semantically equal, and a job compared with the Workload made from it usually is equal JSON
    (the normalising walk was a fifth of a no-op reconcile)."""
    return first == second or bool(_normalize(first) == _normalize(second))


def _pod_spec(pod_set: PodSet) -> Mapping[str, Any]:
    spec = pod_set.template.get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _same_pod_set(
    first: tuple[int, int | None, Mapping[str, Any]],
    second: tuple[int, int | None, Mapping[str, Any]],
    *,
    ignore_tolerations: bool,
) -> bool:
    """``equality.ComparePodSets`` on ``(count, minCount, pod spec)`` of two pod sets."""
    if first[0] != second[0]:
        return False
    if (first[1] if first[1] is not None else -1) != (second[1] if second[1] is not None else -1):
        return False
    first_spec, second_spec = first[2], second[2]
    keys = (
        ("initContainers", "containers")
        if ignore_tolerations
        else ("tolerations", "initContainers", "containers")
    )
    return all(semantically_equal(first_spec.get(key), second_spec.get(key)) for key in keys)


def _compared(pod_set: PodSet) -> tuple[int, int | None, Mapping[str, Any]]:
    return pod_set.count, pod_set.min_count, _pod_spec(pod_set)


def compare_pod_sets(first: PodSet, second: PodSet, *, ignore_tolerations: bool = False) -> bool:
    """``equality.ComparePodSets``: count, minCount (absent == -1), containers, tolerations."""
    return _same_pod_set(_compared(first), _compared(second), ignore_tolerations=ignore_tolerations)


def compare_pod_set_slices(
    first: Sequence[PodSet], second: Sequence[PodSet], *, ignore_tolerations: bool = False
) -> bool:
    """``equality.ComparePodSetSlices``: same length and pairwise equal by position."""
    return len(first) == len(second) and all(
        compare_pod_sets(a, b, ignore_tolerations=ignore_tolerations)
        for a, b in zip(first, second, strict=True)
    )


def _dedup_env(container: Any) -> Any:
    if not isinstance(container, Mapping) or not isinstance(container.get("env"), list):
        return container
    latest: dict[Any, Any] = {}
    for variable in container["env"]:
        name = variable.get("name") if isinstance(variable, Mapping) else None
        latest[name] = variable  # dict keeps the first position, the assignment keeps the last value
    return {**container, "env": list(latest.values())}


def _deep_copy(pod_set: PodSet) -> PodSet:
    """``pod_set.model_copy(deep=True)``, with the JSON trees copied by ``json_tree_copy`` (several
    times faster than pydantic's ``deepcopy``; a create pass spent a third of its time there)."""
    update: dict[str, Any] = {"template": json_tree_copy(pod_set.template)}
    if pod_set.topology_request is not None:
        update["topology_request"] = json_tree_copy(pod_set.topology_request)
    copied = pod_set.model_copy(update=update)
    if pod_set.model_extra:
        copied.__pydantic_extra__ = json_tree_copy(dict(pod_set.model_extra))
    return copied


def sanitize_pod_sets(pod_sets: Sequence[PodSet]) -> list[PodSet]:
    """``SanitizePodSets``: copies with duplicate env vars collapsed in every (init) container."""
    sanitized: list[PodSet] = []
    for pod_set in pod_sets:
        copied = _deep_copy(pod_set)
        spec = copied.template.get("spec")
        if isinstance(spec, dict):
            for key in ("containers", "initContainers"):
                if isinstance(spec.get(key), list):
                    spec[key] = [_dedup_env(container) for container in spec[key]]
        sanitized.append(copied)
    return sanitized


def _sanitized_views(pod_sets: Sequence[PodSet]) -> list[PodSet]:
    """What ``sanitize_pod_sets`` returns, for read-only use, without deep-copying each pod set.

    Shallow model copies whose template (and its spec) are new dicts with the sanitised container
    lists; everything else is shared with ``pod_sets``, so callers may only read the result or
    assign top-level fields of a pod set (as ``equivalent_to_workload`` does with ``min_count``).
    """
    views: list[PodSet] = []
    for pod_set in pod_sets:
        template = pod_set.template
        if isinstance(template.get("spec"), dict):
            template = {**template, "spec": _sanitized_spec(pod_set)}
        views.append(pod_set.model_copy(update={"template": template}))
    return views


def _sanitized_spec(pod_set: PodSet) -> Mapping[str, Any]:
    """The pod spec of ``pod_set`` as ``sanitize_pod_sets`` leaves it, for reading: a new dict with
    the sanitised container lists, everything else shared."""
    spec = pod_set.template.get("spec")
    if not isinstance(spec, dict):
        return spec if isinstance(spec, Mapping) else {}
    spec = dict(spec)
    for key in ("containers", "initContainers"):
        if isinstance(spec.get(key), list):
            spec[key] = [_dedup_env(container) for container in spec[key]]
    return spec


def can_be_partially_admitted(workload: Workload) -> bool:
    """``workload.CanBePartiallyAdmitted``: some pod set has ``count > minCount``."""
    return any(
        pod_set.min_count is not None and pod_set.count > pod_set.min_count
        for pod_set in workload.spec.pod_sets
    )


def _conditions(workload: Workload) -> list[Any] | None:
    return workload.status.conditions if workload.status is not None else None


def expected_running_pod_sets(
    *,
    workload: Workload,
    flavors: Mapping[str, FlavorData],
    gates: PodSetGates = DEFAULT_GATES,
) -> list[PodSet] | None:
    """``expectedRunningPodSets``: the spec pod sets as they look once started, or ``None``.

    ``None`` when the Workload has no quota reservation, the admission cannot be turned into pod
    set infos (unknown flavor, conflicting updates, missing pod set), or a merge conflicts.
    """
    if not is_true(find_condition_view(_conditions(workload), ConditionType.QUOTA_RESERVED)):
        return None
    try:
        infos = pod_set_infos_from_admission(workload=workload, flavors=flavors, gates=gates)
    except (PodSetInfoError, UnknownFlavorError):
        return None
    by_name = {info.name: info for info in infos}
    partial = can_be_partially_admitted(workload)
    running: list[PodSet] = []
    for pod_set in workload.spec.pod_sets:
        info = by_name.get(pod_set.name)
        if info is None:
            return None
        copied = _deep_copy(pod_set)
        try:
            merge_into_template(copied.template, info, elastic_workload_slices=gates.elastic_workload_slices)
        except PodSetInfoError:
            return None
        if partial and copied.min_count is not None:
            copied.count = info.count
        running.append(copied)
    return running or None


def equivalent_to_workload(
    *,
    job_pod_sets: Sequence[PodSet],
    job_name: str,
    job_uid: str,
    max_exec_seconds: int | None,
    workload: Workload,
    job_suspended: bool = False,
    flavors: Mapping[str, FlavorData] | None = None,
    finish_orphaned_workloads: bool = True,
    partial_admission: bool = True,
    gates: PodSetGates = DEFAULT_GATES,
) -> bool:
    """``EquivalentToWorkload``: whether ``workload`` still describes the job.

    ``job_pod_sets`` are the adapter's ``pod_sets()`` (unsanitised: this function sanitises a
    copy). ``flavors`` is needed only when the Workload has quota reserved; a flavor missing from
    it makes the comparison fall back to the plain spec, as Kueue does when a flavor ``Get`` fails.
    """
    owner = controller_owner(workload.metadata)
    if owner is None or owner.name != job_name:
        return False
    if finish_orphaned_workloads and owner.uid != job_uid:
        return False
    workload_max_exec = workload.spec.maximum_execution_time_seconds
    if (workload_max_exec if workload_max_exec is not None else -1) != (
        max_exec_seconds if max_exec_seconds is not None else -1
    ):
        return False
    job_sets = _sanitized_views(job_pod_sets)
    if not partial_admission:
        for pod_set in job_sets:
            pod_set.min_count = None
    ignore_tolerations = is_true(find_condition_view(_conditions(workload), ConditionType.ADMITTED))
    running = expected_running_pod_sets(workload=workload, flavors=flavors or {}, gates=gates)
    if running is not None:
        if compare_pod_set_slices(job_sets, running, ignore_tolerations=ignore_tolerations):
            return True
        # Admitted but the job is suspended: compare with the not-yet-running spec.
        return job_suspended and compare_pod_set_slices(
            job_sets, workload.spec.pod_sets, ignore_tolerations=ignore_tolerations
        )
    return compare_pod_set_slices(job_sets, workload.spec.pod_sets, ignore_tolerations=ignore_tolerations)


def _wire_pod_sets(spec: Mapping[str, Any]) -> list[tuple[int, int | None, Mapping[str, Any]]] | None:
    """``(count, minCount, pod spec)`` of each ``spec.podSets`` entry, defaulted as ``Workload``'s
    model defaults them, or ``None`` when an entry is not shaped as the model requires."""
    pod_sets = spec.get("podSets", [])
    if not isinstance(pod_sets, list):
        return None
    found: list[tuple[int, int | None, Mapping[str, Any]]] = []
    for pod_set in pod_sets:
        if not isinstance(pod_set, dict):
            return None
        count, min_count = pod_set.get("count", 1), pod_set.get("minCount")
        template = pod_set.get("template", {})
        if (
            type(count) is not int
            or (min_count is not None and type(min_count) is not int)
            or not isinstance(pod_set.get("name", ""), str)
            or not isinstance(template, dict)
        ):
            return None
        pod_spec = template.get("spec")
        found.append((count, min_count, pod_spec if isinstance(pod_spec, Mapping) else {}))
    return found


def _wire_controller_owner(metadata: Mapping[str, Any]) -> tuple[bool, Mapping[str, Any] | None]:
    """``(readable, controller reference)`` of a Workload's wire metadata; not readable when an
    owner reference is not shaped as the model requires (strings, a boolean ``controller``)."""
    references = metadata.get("ownerReferences")
    if references is None:
        return True, None
    if not isinstance(references, list):
        return False, None
    owner: Mapping[str, Any] | None = None
    for reference in references:
        if not isinstance(reference, dict) or reference.get("controller") not in (True, False, None):
            return False, None
        if not all(isinstance(reference.get(key), str) for key in ("apiVersion", "kind", "name", "uid")):
            return False, None
        if owner is None and reference.get("controller"):
            owner = reference
    return True, owner


def equivalent_on_the_wire(
    *,
    job_pod_sets: Sequence[PodSet],
    job_name: str,
    job_uid: str,
    max_exec_seconds: int | None,
    workload: Mapping[str, Any],
    finish_orphaned_workloads: bool = True,
    partial_admission: bool = True,
) -> bool | None:
    """``equivalent_to_workload``'s answer read off the Workload's JSON, when that needs no expected
    running pod sets; ``None`` otherwise (the caller parses the Workload and asks it).

    Why it is the same answer: the running pod sets differ from the spec's only where the admission
    is merged in -- template labels, annotations, node selector, tolerations, scheduling gates -- and,
    for a Workload that can be partially admitted, in ``count``. The comparison reads ``count``,
    ``minCount``, containers, init containers and, unless the Workload is ``Admitted``, tolerations.
    So without ``QuotaReserved`` (no running pod sets) and with ``Admitted`` and no partial
    admission, every branch of ``equivalent_to_workload`` compares the job with the spec pod sets
    (a failed running comparison equals the spec comparison, and so does the suspended fallback):
    that comparison is this answer. ``QuotaReserved`` without ``Admitted`` (tolerations with the
    flavors' merged in) and partial admission are left to the caller, and so is any Workload part
    this reads that is not shaped as ``Workload``'s model requires (the model then says why).
    """
    metadata, spec = workload.get("metadata"), workload.get("spec", {})
    if not isinstance(metadata, Mapping) or not isinstance(spec, Mapping):
        return None
    pod_sets = _wire_pod_sets(spec)
    readable, owner = _wire_controller_owner(metadata)
    workload_max_exec = spec.get("maximumExecutionTimeSeconds")
    if (
        pod_sets is None
        or not readable
        or (workload_max_exec is not None and type(workload_max_exec) is not int)
    ):
        return None
    conditions = conditions_of(workload)
    admitted = is_object_condition_true_in(conditions, ConditionType.ADMITTED)
    if is_object_condition_true_in(conditions, ConditionType.QUOTA_RESERVED):
        partial = any(min_count is not None and count > min_count for count, min_count, _ in pod_sets)
        if not admitted or partial:
            return None
    if owner is None or owner["name"] != job_name:
        return False
    if finish_orphaned_workloads and owner["uid"] != job_uid:
        return False
    if (workload_max_exec if workload_max_exec is not None else -1) != (
        max_exec_seconds if max_exec_seconds is not None else -1
    ):
        return False
    job_sets = [
        (pod_set.count, pod_set.min_count if partial_admission else None, _sanitized_spec(pod_set))
        for pod_set in job_pod_sets
    ]
    return len(job_sets) == len(pod_sets) and all(
        _same_pod_set(job_set, pod_set, ignore_tolerations=admitted)
        for job_set, pod_set in zip(job_sets, pod_sets, strict=True)
    )
