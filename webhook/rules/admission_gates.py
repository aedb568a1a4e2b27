"""``kueue.x-k8s.io/admission-gated-by``: Kueue's validation of the admission-gate annotation.

The annotation holds a comma-separated list of gates (controller names); while it is non-empty the
job's Workload is not admitted. Kueue's rules (``pkg/util/webhook/validation_admissiongatedby.go``,
feature gate ``AdmissionGatedBy``, Beta and on by default since 0.19), with its field path and messages:

* **format** (create, and the new value on update): names are split on ``,`` and trimmed of
  surrounding whitespace (``csv.Parse``); an empty name is Invalid "cannot contain empty gate names",
  a repeated one Invalid "duplicate gate name: <name>" (reported once per repeat, then skipped), each
  name must be a domain-prefixed path (``acme.io/foo``: a DNS-1123 subdomain, ``/``, HTTP path
  characters - apimachinery's ``IsDomainPrefixedPath``, the rule Kubernetes applies to a Job's
  ``spec.managedBy``) and at most 63 bytes (TooLong). Bad values are reported as the whole
  annotation value (format errors) or as the offending host/path part (``IsDomainPrefixedPath``),
  exactly as Kueue does.
* **update**: a gate cannot be added after creation (old absent or empty, new non-empty: Forbidden
  "cannot add admission gate after creation"), and gates can only be removed (a new name not in the
  old list: Forbidden "can only remove gates, not add new ones", reported once).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from shared.constants import ADMISSION_GATED_BY_ANNOTATION
from shared.frameworks.base import FORBIDDEN, INVALID, REQUIRED, TOO_LONG, FieldError
from shared.kueue.jobmeta import annotation_value
from shared.validation_k8s import byte_length, is_domain_prefixed_path

__all__ = [
    "ADMISSION_GATED_BY_PATH",
    "MAX_GATE_NAME_LENGTH",
    "domain_prefixed_path_errors",
    "parse_gates",
    "validate_admission_gated_by_on_create",
    "validate_admission_gated_by_on_update",
]

ADMISSION_GATED_BY_PATH: Final = f"metadata.annotations[{ADMISSION_GATED_BY_ANNOTATION}]"
#: the limit Kubernetes puts on a Job's ``spec.managedBy``
MAX_GATE_NAME_LENGTH: Final = 63
#: what Go's ``strings.TrimSpace`` removes (``unicode.IsSpace``); Python's ``str.strip`` removes more
_GO_SPACE: Final = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"


def parse_gates(value: str) -> list[str]:
    """Kueue's ``csv.Parse``: split on commas, trim each name; blank input is no names."""
    if not value.strip(_GO_SPACE):
        return []
    return [part.strip(_GO_SPACE) for part in value.split(",")]


def domain_prefixed_path_errors(path: str, value: str) -> list[FieldError]:
    """apimachinery's ``IsDomainPrefixedPath`` (e.g. ``acme.io/foo``) as field errors on ``path``."""
    return [
        FieldError(path, REQUIRED, "")
        if problem.required
        else FieldError(path, INVALID, problem.detail, problem.value)
        for problem in is_domain_prefixed_path(value)
    ]


def _validate_format(value: str) -> list[FieldError]:
    errors: list[FieldError] = []
    if not value:
        return errors
    seen: set[str] = set()
    for gate in parse_gates(value):
        if not gate:
            errors.append(
                FieldError(ADMISSION_GATED_BY_PATH, INVALID, "cannot contain empty gate names", value)
            )
            continue
        if gate in seen:
            errors.append(FieldError(ADMISSION_GATED_BY_PATH, INVALID, f"duplicate gate name: {gate}", value))
            continue
        seen.add(gate)
        errors += domain_prefixed_path_errors(ADMISSION_GATED_BY_PATH, gate)
        if byte_length(gate) > MAX_GATE_NAME_LENGTH:
            errors.append(
                FieldError(
                    ADMISSION_GATED_BY_PATH, TOO_LONG, f"may not be more than {MAX_GATE_NAME_LENGTH} bytes"
                )
            )
    return errors


def validate_admission_gated_by_on_create(obj: Mapping[str, Any]) -> list[FieldError]:
    return _validate_format(annotation_value(obj, ADMISSION_GATED_BY_ANNOTATION) or "")


def validate_admission_gated_by_on_update(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[FieldError]:
    old_value = annotation_value(old, ADMISSION_GATED_BY_ANNOTATION) or ""
    new_value = annotation_value(new, ADMISSION_GATED_BY_ANNOTATION) or ""
    errors: list[FieldError] = []
    if not old_value and new_value:
        errors.append(
            FieldError(ADMISSION_GATED_BY_PATH, FORBIDDEN, "cannot add admission gate after creation")
        )
    if old_value and new_value:
        old_gates = parse_gates(old_value)
        if any(gate not in old_gates for gate in parse_gates(new_value)):
            errors.append(
                FieldError(ADMISSION_GATED_BY_PATH, FORBIDDEN, "can only remove gates, not add new ones")
            )
    return errors + _validate_format(new_value)
