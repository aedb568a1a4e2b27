"""batch/v1 Job validation on create and on update of the main resource: kube-apiserver 1.36's rules.

What runs when (``pkg/registry/batch/job/strategy.go`` and ``pkg/apis/batch/validation``):

* **create**: the generated selector and its template labels, then the spec rules;
* **update**: the spec rules (twice: kube's ``ValidateJob`` and ``ValidateJobSpecUpdate`` both run
  them, so a cause repeats while the message names it once), then immutability;
* **/status updates**: :mod:`devcluster.apiserver.validation.job_status`.

Immutable on update: ``selector``, ``completionMode``, ``podFailurePolicy``, ``backoffLimitPerIndex``,
``managedBy``, ``successPolicy``, and ``completions``, except that an Indexed Job may change it in
tandem with ``parallelism`` (elastic Indexed Jobs, GA). ``parallelism`` and ``suspend`` are mutable.

The pod template is immutable unless the *stored* Job is **safely suspended**: ``spec.suspend`` is
true, it has no active pods (``status.active`` 0), and either it never started (no
``status.startTime``) or it has ``Suspended=True``. (A suspended Job whose ``startTime`` was cleared
but whose pods are still active may not change its template: measured on kube-apiserver 1.36.2, and
what Kueue meets when it stops a started Job before the job controller has deleted its pods.) Then
(MutableSchedulingDirectivesForSuspendedJobs and MutablePodResourcesForSuspendedJobs,
beta and on by default since 1.36, with the 1.36.x fix that keeps the never-started case) its labels,
annotations, nodeSelector, tolerations, schedulingGates and node affinity, and the ``resources`` of
each container and init container may change; any other change is reported on
``spec.template.spec``. Otherwise any change is reported on ``spec.template``. Because the stored Job
decides, suspending and changing the template in one write is rejected.

Equality is apimachinery's ``Semantic.DeepEqual``: absent, ``null``, ``{}`` and ``[]`` are equal (Go's
nil and empty maps and slices). Without Go types the devcluster applies that everywhere, so a
pointer to an empty struct (``affinity: {}``) equals an absent one here but not in kube.

Not checked: the pod template beyond "has containers" and ``restartPolicy``, the rules inside
``podFailurePolicy`` and ``successPolicy``, and label selector keys and values (only its shape and
operators).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from devcluster.apiserver.errors import Cause
from devcluster.apiserver.selectors import label_selector_matches
from devcluster.apiserver.validation.objectmeta import (
    field_forbidden,
    field_invalid,
    field_not_supported,
    field_required,
    field_too_long,
)
from shared.kube.conditions import is_condition_true
from shared.validation_k8s import byte_length, is_dns1123_label, is_domain_prefixed_path

__all__ = [
    "CONTROLLER_UID_LABEL",
    "IMMUTABLE",
    "JOB_KEY",
    "JOB_NAME_LABEL",
    "LEGACY_CONTROLLER_UID_LABEL",
    "LEGACY_JOB_NAME_LABEL",
    "semantic_equal",
    "template_mutable",
    "validate_job_create",
    "validate_job_update",
]

JOB_KEY: Final = ("batch", "jobs")
CONTROLLER_UID_LABEL: Final = "batch.kubernetes.io/controller-uid"
JOB_NAME_LABEL: Final = "batch.kubernetes.io/job-name"
LEGACY_CONTROLLER_UID_LABEL: Final = "controller-uid"
LEGACY_JOB_NAME_LABEL: Final = "job-name"
#: ``apivalidation.FieldImmutableErrorMsg``
IMMUTABLE: Final = "field is immutable"
NON_NEGATIVE: Final = "must be greater than or equal to 0"

_INDEXED, _NON_INDEXED = "Indexed", "NonIndexed"
_NON_NEGATIVE_FIELDS = (
    "parallelism",
    "completions",
    "activeDeadlineSeconds",
    "backoffLimit",
    "ttlSecondsAfterFinished",
    "backoffLimitPerIndex",
    "maxFailedIndexes",
)
_IMMUTABLE_AFTER_TEMPLATE = (
    "completionMode",
    "podFailurePolicy",
    "backoffLimitPerIndex",
    "managedBy",
    "successPolicy",
)
_MAX_PARALLELISM_INDEXED = 100_000
_MAX_FAILED_INDEXES = 100_000
_COMPLETIONS_SOFT_LIMIT = 100_000
_PARALLELISM_HIGH_COMPLETIONS = 10_000
_MAX_FAILED_INDEXES_HIGH_COMPLETIONS = 10_000
_MAX_MANAGED_BY_LENGTH = 63
_SCHEDULING_DIRECTIVES = ("nodeSelector", "tolerations", "schedulingGates")


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _empty(value: Any) -> bool:
    return value is None or value == {} or value == []


def semantic_equal(a: Any, b: Any) -> bool:
    """``apiequality.Semantic.DeepEqual`` on JSON values (absent == null == {} == [])."""
    if _empty(a) and _empty(b):
        return True
    if isinstance(a, dict) and isinstance(b, dict):
        return all(semantic_equal(a.get(key), b.get(key)) for key in a.keys() | b.keys())
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(semantic_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    return bool(a == b)


def template_mutable(old: Mapping[str, Any]) -> bool:
    """Whether the stored Job is safely suspended (module docstring)."""
    spec, status = _dict(old.get("spec")), _dict(old.get("status"))
    if spec.get("suspend") is not True or _int(status.get("active")):
        return False
    return not status.get("startTime") or is_condition_true(status.get("conditions"), "Suspended")


# -- the spec rules (validateJobSpec + ValidateJobSpec) ------------------------------------------------


def _managed_by_causes(value: Any) -> list[Cause]:
    path = "spec.managedBy"
    if not isinstance(value, str):
        return [field_invalid(path, value, "must be a string")]
    if not value:
        return [field_required(path)]
    causes = [
        field_required(path) if problem.required else field_invalid(path, problem.value, problem.detail)
        for problem in is_domain_prefixed_path(value)
    ]
    if byte_length(value) > _MAX_MANAGED_BY_LENGTH:
        causes.append(field_too_long(path, _MAX_MANAGED_BY_LENGTH))
    return causes


def _indexed_causes(spec: Mapping[str, Any]) -> list[Cause]:
    completions, parallelism = _int(spec.get("completions")), _int(spec.get("parallelism"))
    max_failed, per_index = _int(spec.get("maxFailedIndexes")), spec.get("backoffLimitPerIndex")
    causes: list[Cause] = []
    if spec.get("completions") is None:
        causes.append(field_required("spec.completions", f"when completion mode is {_INDEXED}"))
    if parallelism is not None and parallelism > _MAX_PARALLELISM_INDEXED:
        detail = (
            f"must be less than or equal to {_MAX_PARALLELISM_INDEXED} when completion mode is {_INDEXED}"
        )
        causes.append(field_invalid("spec.parallelism", parallelism, detail))
    if completions is not None and max_failed is not None and max_failed > completions:
        causes.append(
            field_invalid("spec.maxFailedIndexes", max_failed, "must be less than or equal to completions")
        )
    if max_failed is not None and max_failed > _MAX_FAILED_INDEXES:
        detail = f"must be less than or equal to {_MAX_FAILED_INDEXES}"
        causes.append(field_invalid("spec.maxFailedIndexes", max_failed, detail))
    if completions is not None and completions > _COMPLETIONS_SOFT_LIMIT and per_index is not None:
        high = f"when completions are above {_COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index"
        if spec.get("maxFailedIndexes") is None:
            detail = f"must be specified when completions is above {_COMPLETIONS_SOFT_LIMIT}"
            causes.append(field_required("spec.maxFailedIndexes", detail))
        if parallelism is not None and parallelism > _PARALLELISM_HIGH_COMPLETIONS:
            detail = f"must be less than or equal to {_PARALLELISM_HIGH_COMPLETIONS} {high}"
            causes.append(field_invalid("spec.parallelism", parallelism, detail))
        if max_failed is not None and max_failed > _MAX_FAILED_INDEXES_HIGH_COMPLETIONS:
            detail = f"must be less than or equal to {_MAX_FAILED_INDEXES_HIGH_COMPLETIONS} {high}"
            causes.append(field_invalid("spec.maxFailedIndexes", max_failed, detail))
    return causes


def _restart_policy_causes(spec: Mapping[str, Any], pod: Mapping[str, Any]) -> list[Cause]:
    path, policy = "spec.template.spec.restartPolicy", pod.get("restartPolicy")
    if policy in (None, "", "Always"):
        return [field_required(path, 'valid values: "OnFailure", "Never"')]
    if policy not in ("OnFailure", "Never"):
        return [field_not_supported(path, policy, ["OnFailure", "Never"])]
    if spec.get("podFailurePolicy") is not None and policy != "Never":
        return [field_invalid(path, policy, 'only "Never" is supported when podFailurePolicy is specified')]
    return []


def _spec_causes(spec: Mapping[str, Any]) -> list[Cause]:
    causes: list[Cause] = []
    for name in _NON_NEGATIVE_FIELDS:
        value = spec.get(name)
        if value is None:
            continue
        if _int(value) is None:
            causes.append(field_invalid(f"spec.{name}", value, "must be an integer"))
        elif value < 0:
            causes.append(field_invalid(f"spec.{name}", value, NON_NEGATIVE))
        if name == "maxFailedIndexes" and spec.get("backoffLimitPerIndex") is None:
            causes.append(field_required("spec.backoffLimitPerIndex", "when maxFailedIndexes is specified"))
    if spec.get("managedBy") is not None:
        causes.extend(_managed_by_causes(spec["managedBy"]))
    mode = spec.get("completionMode")
    if mode is not None and mode not in (_NON_INDEXED, _INDEXED):
        causes.append(field_not_supported("spec.completionMode", mode, [_NON_INDEXED, _INDEXED]))
    if mode == _INDEXED:
        causes.extend(_indexed_causes(spec))
    else:
        for name in ("backoffLimitPerIndex", "maxFailedIndexes"):
            if spec.get(name) is not None:
                causes.append(field_invalid(f"spec.{name}", spec[name], "requires indexed completion mode"))
    if spec.get("successPolicy") is not None and mode != _INDEXED:
        causes.append(
            field_invalid("spec.successPolicy", spec["successPolicy"], "requires indexed completion mode")
        )
    replacement = spec.get("podReplacementPolicy")
    if replacement is not None:
        allowed = (
            ["Failed"] if spec.get("podFailurePolicy") is not None else ["Failed", "TerminatingOrFailed"]
        )
        if replacement not in allowed:
            causes.append(field_not_supported("spec.podReplacementPolicy", replacement, allowed))
    pod = _dict(_dict(spec.get("template")).get("spec"))
    if not pod.get("containers"):
        causes.append(field_required("spec.template.spec.containers"))
    causes.extend(_restart_policy_causes(spec, pod))
    selector = spec.get("selector")
    if selector is None:
        causes.append(field_required("spec.selector"))
    else:
        causes.extend(_selector_causes(selector))
    labels = _dict(_dict(spec.get("template")).get("metadata")).get("labels")
    matches = label_selector_matches(selector, _dict(labels)) if isinstance(selector, dict) else False
    if matches is False:
        detail = "`selector` does not match template `labels`"
        causes.append(field_invalid("spec.template.metadata.labels", labels, detail))
    return causes


def _selector_causes(selector: Any) -> list[Cause]:
    """The shape of a ``metav1.LabelSelector`` and its operators (keys and values are not checked)."""
    if not isinstance(selector, dict):
        return [field_invalid("spec.selector", selector, "must be an object")]
    match_labels, expressions = selector.get("matchLabels"), selector.get("matchExpressions")
    causes: list[Cause] = []
    if match_labels is not None and not (
        isinstance(match_labels, dict) and all(isinstance(v, str) for v in match_labels.values())
    ):
        causes.append(field_invalid("spec.selector.matchLabels", match_labels, "must be a map of strings"))
    items = [] if expressions is None else expressions if isinstance(expressions, list) else [expressions]
    for index, expression in enumerate(items):
        path = f"spec.selector.matchExpressions[{index}]"
        if not isinstance(expression, dict) or not isinstance(expression.get("key"), str):
            causes.append(field_invalid(path, expression, "must be an object with a string key"))
            continue
        operator, values = expression.get("operator"), expression.get("values")
        if operator in ("In", "NotIn"):
            if not values:
                detail = "must be specified when `operator` is 'In' or 'NotIn'"
                causes.append(field_required(f"{path}.values", detail))
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                detail = "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
                causes.append(field_forbidden(f"{path}.values", detail))
        else:
            causes.append(field_invalid(f"{path}.operator", operator, "not a valid selector operator"))
        if values is not None and not (isinstance(values, list) and all(isinstance(v, str) for v in values)):
            causes.append(field_invalid(f"{path}.values", values, "must be a list of strings"))
    return causes


def _has_label(labels: Any, key: str, expected: str) -> list[Cause]:
    path = f"spec.template.metadata.labels[{key}]"
    actual = _dict(labels).get(key)
    if actual is None:
        return [field_required(path, f"must be '{expected}'")]
    if actual != expected:
        return [field_invalid(path, labels, f"must be '{expected}'")]
    return []


def _generated_selector_causes(job: Mapping[str, Any], *, require_prefixed: bool) -> list[Cause]:
    """``validateGeneratedSelector``: a generated selector must select exactly this Job's pods."""
    spec, meta = _dict(job.get("spec")), _dict(job.get("metadata"))
    if spec.get("manualSelector") is True or spec.get("selector") is None:
        return []
    uid, name = str(meta.get("uid") or ""), str(meta.get("name") or "")
    causes = [] if uid else [field_required("metadata.uid")]
    labels = _dict(_dict(spec.get("template")).get("metadata")).get("labels")
    causes += _has_label(labels, LEGACY_CONTROLLER_UID_LABEL, uid) + _has_label(
        labels, LEGACY_JOB_NAME_LABEL, name
    )
    expected = {LEGACY_CONTROLLER_UID_LABEL: uid, LEGACY_JOB_NAME_LABEL: name}
    if require_prefixed:
        causes += _has_label(labels, CONTROLLER_UID_LABEL, uid) + _has_label(labels, JOB_NAME_LABEL, name)
        expected |= {CONTROLLER_UID_LABEL: uid, JOB_NAME_LABEL: name}
    selector = spec["selector"]
    if isinstance(selector, dict) and label_selector_matches(selector, expected) is False:
        causes.append(field_invalid("spec.selector", selector, "`selector` not auto-generated"))
    return causes


def _validate_job(job: Mapping[str, Any], *, require_prefixed: bool) -> list[Cause]:
    """``ValidateJob`` minus ObjectMeta (the caller validates metadata for every kind)."""
    spec = job.get("spec")
    if not isinstance(spec, dict):
        return [field_required("spec")]
    causes = _generated_selector_causes(job, require_prefixed=require_prefixed) + _spec_causes(spec)
    completions = _int(spec.get("completions"))
    if spec.get("completionMode") == _INDEXED and completions is not None and completions > 0:
        name = str(_dict(job.get("metadata")).get("name") or "")
        hostname = f"{name}-{completions - 1}"
        if is_dns1123_label(hostname):
            detail = f"will not able to create pod with invalid DNS label: {hostname}"
            causes.append(field_invalid("metadata.name", name, detail))
    return causes


def validate_job_create(job: Mapping[str, Any]) -> list[Cause]:
    return _validate_job(job, require_prefixed=True)


# -- update ------------------------------------------------------------------------------------------


def _completions_causes(spec: Mapping[str, Any], old_spec: Mapping[str, Any]) -> list[Cause]:
    """``validateCompletions``: immutable, except Indexed Jobs scaling with parallelism."""
    new, old = spec.get("completions"), old_spec.get("completions")
    if semantic_equal(new, old):
        return []
    if spec.get("completionMode") != _INDEXED:
        return [field_invalid("spec.completions", new, IMMUTABLE)]
    if new is None or new == spec.get("parallelism"):
        return []
    return [field_invalid("spec.completions", new, "can only be modified in tandem with spec.parallelism")]


def _scheduling_directives_allowed(template: Mapping[str, Any], old_template: dict[str, Any]) -> None:
    """Copy the mutable scheduling directives of ``template`` into ``old_template`` (in place)."""
    pod, old_pod = _dict(template.get("spec")), old_template.setdefault("spec", {})
    affinity, old_affinity = pod.get("affinity"), old_pod.get("affinity")
    if isinstance(old_affinity, dict) and not isinstance(affinity, dict):
        rest = {k: v for k, v in old_affinity.items() if k != "nodeAffinity"}
        old_pod["affinity"] = rest or None
    elif isinstance(affinity, dict):
        kept = old_affinity if isinstance(old_affinity, dict) else {}
        old_pod["affinity"] = {**kept, "nodeAffinity": affinity.get("nodeAffinity")}
    for key in _SCHEDULING_DIRECTIVES:
        old_pod[key] = pod.get(key)
    meta, old_meta = _dict(template.get("metadata")), old_template.setdefault("metadata", {})
    for key in ("labels", "annotations"):
        old_meta[key] = meta.get(key)


def _with_resources_of(pod: Mapping[str, Any], old_pod: dict[str, Any]) -> None:
    """``validatePodResourceUpdatesOnly``: take the new resources where the containers line up."""
    for key in ("containers", "initContainers"):
        new_list, old_list = pod.get(key), old_pod.get(key)
        if not isinstance(new_list, list) or not isinstance(old_list, list) or len(new_list) != len(old_list):
            continue
        merged = []
        for new, old in zip(new_list, old_list, strict=True):
            if isinstance(new, dict) and isinstance(old, dict) and new.get("name") == old.get("name"):
                old = {**old, "resources": new.get("resources")}
            merged.append(old)
        old_pod[key] = merged


def _template_causes(spec: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """``validatePodTemplateUpdate`` with 1.36's options (module docstring)."""
    template = _dict(spec.get("template"))
    old_template = _dict(_dict(old.get("spec")).get("template"))
    if not template_mutable(old):
        return (
            []
            if semantic_equal(template, old_template)
            else [field_invalid("spec.template", template, IMMUTABLE)]
        )
    allowed = {**old_template, "spec": dict(_dict(old_template.get("spec")))}
    allowed["metadata"] = dict(_dict(old_template.get("metadata")))
    _scheduling_directives_allowed(template, allowed)
    pod = _dict(template.get("spec"))
    _with_resources_of(pod, allowed["spec"])
    return (
        [] if semantic_equal(pod, allowed["spec"]) else [field_invalid("spec.template.spec", pod, IMMUTABLE)]
    )


def validate_job_update(job: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """``ValidateJob`` + ``ValidateJobUpdate`` (metadata excepted) for the main resource."""
    old_template = _dict(_dict(old.get("spec")).get("template"))
    old_labels = _dict(_dict(old_template.get("metadata")).get("labels"))
    prefixed = CONTROLLER_UID_LABEL in old_labels and JOB_NAME_LABEL in old_labels
    causes = _validate_job(job, require_prefixed=prefixed)
    spec, old_spec = job.get("spec"), _dict(old.get("spec"))
    if not isinstance(spec, dict):
        return causes
    causes += _spec_causes(spec)
    causes += _completions_causes(spec, old_spec)
    if not semantic_equal(spec.get("selector"), old_spec.get("selector")):
        causes.append(field_invalid("spec.selector", spec.get("selector"), IMMUTABLE))
    causes += _template_causes(spec, old)
    for name in _IMMUTABLE_AFTER_TEMPLATE:
        if not semantic_equal(spec.get(name), old_spec.get(name)):
            causes.append(field_invalid(f"spec.{name}", spec.get(name), IMMUTABLE))
    return causes
