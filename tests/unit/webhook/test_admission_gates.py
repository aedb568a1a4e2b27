"""admission-gated-by validation (Kueue §3.2/§3.3) and the batch Job elastic scheduling gate (§3.1 step 5)."""

from __future__ import annotations

from typing import Any

import pytest

from shared.constants import (
    ADMISSION_GATED_BY_ANNOTATION,
    ELASTIC_JOB_ANNOTATION,
    ELASTIC_JOB_SCHEDULING_GATE,
    QUEUE_LABEL,
)
from tests.unit.webhook.helpers import apply, handler, job, ops_of, response, review
from webhook.rules.admission_gates import parse_gates

PATH = f"metadata.annotations[{ADMISSION_GATED_BY_ANNOTATION}]"


def gated(value: str | None, *, suspend: bool | None = None, **extra_annotations: str) -> dict[str, Any]:
    obj = job(labels={QUEUE_LABEL: "q"})
    if suspend is not None:
        obj["spec"]["suspend"] = suspend
    annotations = dict(extra_annotations)
    if value is not None:
        annotations[ADMISSION_GATED_BY_ANNOTATION] = value
    if annotations:
        obj["metadata"]["annotations"] = annotations
    return obj


def validate_create(obj: dict[str, Any]) -> dict[str, Any]:
    return response(handler().validate(review(obj))[1])


def validate_update(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    return response(handler().validate(review(new, operation="UPDATE", old=old))[1])


def test_parse_gates_trims_like_go_and_blank_is_empty() -> None:
    assert parse_gates(" a.io/x ,b.io/y") == ["a.io/x", "b.io/y"]
    assert parse_gates("  ") == []
    assert parse_gates("a.io/x,,") == ["a.io/x", "", ""]
    assert parse_gates("\x1ca.io/x") == ["\x1ca.io/x"]  # not a space for Go's TrimSpace


@pytest.mark.parametrize("value", ["", "example.com/gate", "a.io/x, b.io/y", "kueue.x-k8s.io/multikueue"])
def test_valid_values_are_allowed_on_create(value: str) -> None:
    assert validate_create(gated(value))["allowed"] is True


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("a.io/x,", f'{PATH}: Invalid value: "a.io/x,": cannot contain empty gate names'),
        ("a.io/x, a.io/x", f'{PATH}: Invalid value: "a.io/x, a.io/x": duplicate gate name: a.io/x'),
        ("gate", f'{PATH}: Invalid value: "gate": must be a domain-prefixed path (such as "acme.io/foo")'),
        ("a.io/", f'{PATH}: Invalid value: "a.io/": must be a domain-prefixed path (such as "acme.io/foo")'),
        (
            "Acme.io/x",
            f'{PATH}: Invalid value: "Acme.io": a lowercase RFC 1123 subdomain must consist of lower case '
            "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
            "(e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ),
        (
            "a.io/x y",
            f'{PATH}: Invalid value: "x y": Invalid path (regex used for validation is '
            "'[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')",
        ),
        ("a.io/" + "x" * 60, f"{PATH}: Too long: may not be more than 63 bytes"),
    ],
)
def test_malformed_values_are_denied_with_kueues_message(value: str, message: str) -> None:
    answer = validate_create(gated(value))
    assert answer["allowed"] is False
    assert answer["status"]["code"] == 403
    assert answer["status"]["message"] == message


def test_several_errors_are_aggregated_once() -> None:
    answer = validate_create(gated("a.io/x,,a.io/x"))
    assert answer["status"]["message"] == (
        f'[{PATH}: Invalid value: "a.io/x,,a.io/x": cannot contain empty gate names, '
        f'{PATH}: Invalid value: "a.io/x,,a.io/x": duplicate gate name: a.io/x]'
    )


def test_thousands_of_duplicate_names_make_a_bounded_message() -> None:
    """Kueue would quote the whole value once per duplicate: gigabytes for this annotation."""
    names = [f"a.io/gate-{i}" for i in range(15_000)]
    value = ",".join(names + names)  # ~ 270 KB, every name twice
    resp = validate_create(gated(value))
    message = resp["status"]["message"]
    assert resp["status"]["code"] == 403
    assert message.startswith(f"[{PATH}: Invalid value: ")
    assert message.endswith(" more errors]")
    assert len(message) < 3 * len(value)  # two listed errors at most, not 15,000


def test_identical_errors_are_listed_once_however_many() -> None:
    resp = validate_create(gated("," * 100_000))
    assert (
        resp["status"]["message"]
        == f'{PATH}: Invalid value: "{"," * 100_000}": cannot contain empty gate names'
    )


def test_gates_can_be_removed_but_not_added_after_creation() -> None:
    old = gated("a.io/x,b.io/y", suspend=True)
    assert validate_update(old, gated("b.io/y", suspend=True))["allowed"] is True
    assert validate_update(old, gated(None, suspend=True))["allowed"] is True
    assert validate_update(old, gated("", suspend=True))["allowed"] is True
    added = validate_update(old, gated("a.io/x,c.io/z,d.io/w", suspend=True))
    assert added["status"]["message"] == f"{PATH}: Forbidden: can only remove gates, not add new ones"
    for before in (gated(None, suspend=True), gated("", suspend=True)):
        late = validate_update(before, gated("a.io/x", suspend=True))
        assert late["status"]["message"] == f"{PATH}: Forbidden: cannot add admission gate after creation"


def test_update_also_checks_the_new_format() -> None:
    """batch Job re-runs the create checks first (Kueue's order), then the update rules; an empty
    name is also "added" (Kueue's loop compares it with the old names too)."""
    old = gated("a.io/x", suspend=True)
    answer = validate_update(old, gated("a.io/x,", suspend=True))
    assert answer["status"]["message"] == (
        f'[{PATH}: Invalid value: "a.io/x,": cannot contain empty gate names, '
        f"{PATH}: Forbidden: can only remove gates, not add new ones]"
    )


def mutate(obj: dict[str, Any]) -> dict[str, Any]:
    status, payload = handler().mutate(review(obj))
    assert status == 200
    return response(payload)


def test_elastic_batch_job_template_gets_the_scheduling_gate_once() -> None:
    obj = job(labels={QUEUE_LABEL: "q"})
    obj["metadata"]["annotations"] = {ELASTIC_JOB_ANNOTATION: "true"}
    patched = apply(obj, mutate(obj))
    assert patched["spec"]["template"]["spec"]["schedulingGates"] == [{"name": ELASTIC_JOB_SCHEDULING_GATE}]
    assert patched["spec"]["suspend"] is True
    # already gated (and other gates kept): nothing added for the gate
    again = apply(patched, mutate(patched))
    assert again["spec"]["template"]["spec"]["schedulingGates"] == [{"name": ELASTIC_JOB_SCHEDULING_GATE}]
    other = job(labels={QUEUE_LABEL: "q"}, suspend=True)
    other["metadata"]["annotations"] = {ELASTIC_JOB_ANNOTATION: "true"}
    other["spec"]["template"]["spec"]["schedulingGates"] = [{"name": "example.com/mine"}]
    assert apply(other, mutate(other))["spec"]["template"]["spec"]["schedulingGates"] == [
        {"name": "example.com/mine"},
        {"name": ELASTIC_JOB_SCHEDULING_GATE},
    ]
    assert all(op["op"] in ("add", "replace") for op in ops_of(mutate(other)))


@pytest.mark.parametrize("value", ["false", "True", ""])
def test_only_the_exact_true_value_gates(value: str) -> None:
    obj = job(labels={QUEUE_LABEL: "q"}, suspend=True)
    obj["metadata"]["annotations"] = {ELASTIC_JOB_ANNOTATION: value}
    assert "schedulingGates" not in apply(obj, mutate(obj))["spec"]["template"]["spec"]


def test_a_template_of_the_wrong_type_is_a_bad_request_naming_it() -> None:
    obj = job(labels={QUEUE_LABEL: "q"}, suspend=True)
    obj["metadata"]["annotations"] = {ELASTIC_JOB_ANNOTATION: "true"}
    obj["spec"]["template"]["spec"]["schedulingGates"] = "nope"
    answer = mutate(obj)
    assert answer["allowed"] is False
    assert answer["status"]["code"] == 400
    assert answer["status"]["message"] == "spec.template.spec.schedulingGates: must be a list"
