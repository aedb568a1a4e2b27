"""The admission.k8s.io/v1 AdmissionReview envelope: strict where it matters, lossless elsewhere."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from shared.models import AdmissionRequest, AdmissionResponse, AdmissionReview, RequestGroupVersionKind


def _fixture(shared_dir: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(
        (shared_dir / "fixtures" / "admissionreview-job-create.json").read_text()
    )
    return loaded


def _minimal_review() -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "u-1",
            "kind": {"group": "batch", "version": "v1", "kind": "Job"},
            "resource": {"group": "batch", "version": "v1", "resource": "jobs"},
            "operation": "CREATE",
            "userInfo": {"username": "admin"},
            "object": {"kind": "Job", "spec": {"suspend": False}},
        },
    }


def _error_locations(wire: Any) -> list[tuple[str | int, ...]]:
    with pytest.raises(ValidationError) as error:
        AdmissionReview.from_wire(wire)
    return [tuple(item["loc"]) for item in error.value.errors()]


@pytest.mark.needs_shared
def test_the_captured_kube_apiserver_review_parses(shared_dir: Path) -> None:
    wire = _fixture(shared_dir)
    review = AdmissionReview.from_wire(wire)
    request = review.request
    assert request is not None
    assert request.uid == "adb22d9f-ebfd-45d9-83c9-ed91f0801b2d"
    assert request.kind == RequestGroupVersionKind(group="batch", version="v1", kind="Job")
    assert request.resource is not None
    assert request.resource.resource == "jobs"
    assert request.request_kind == request.kind
    assert (request.name, request.namespace, request.operation) == ("labeled-job", "wh-test", "CREATE")
    assert request.user_info.groups == ["system:masters", "system:authenticated"]
    assert request.object is not None
    assert request.object["spec"]["template"]["spec"]["containers"][0]["command"] == ["sh", "-c", "echo hi"]
    assert request.old_object is None
    assert request.dry_run is False
    assert request.options == {
        "kind": "CreateOptions",
        "apiVersion": "meta.k8s.io/v1",
        "fieldManager": "kubectl-create",
        "fieldValidation": "Strict",
    }


@pytest.mark.needs_shared
def test_the_captured_review_round_trips_except_for_nulls(shared_dir: Path) -> None:
    wire = _fixture(shared_dir)
    expected = {
        **wire,
        "request": {key: value for key, value in wire["request"].items() if value is not None},
    }
    assert AdmissionReview.from_wire(wire).to_wire() == expected


def test_unknown_request_fields_are_kept() -> None:
    wire = _minimal_review()
    wire["request"]["futureField"] = {"a": 1}
    assert AdmissionReview.from_wire(wire).to_wire()["request"]["futureField"] == {"a": 1}


@pytest.mark.parametrize(
    ("mutate", "location"),
    [
        (lambda w: w.update(apiVersion="admission.k8s.io/v1beta1"), ("apiVersion",)),
        (lambda w: w.update(kind="AdmissionResponse"), ("kind",)),
        (lambda w: w.pop("request"), ("request",)),
        (lambda w: w.update(request=None), ("request",)),
        (lambda w: w["request"].pop("uid"), ("request", "uid")),
        (lambda w: w["request"].pop("kind"), ("request", "kind")),
        (lambda w: w["request"]["kind"].pop("version"), ("request", "kind", "version")),
        (lambda w: w["request"].pop("operation"), ("request", "operation")),
        (lambda w: w["request"].update(operation="PATCH"), ("request", "operation")),
        (lambda w: w["request"].update(object=[1]), ("request", "object")),
    ],
)
def test_a_malformed_envelope_is_a_validation_error_naming_the_field(
    mutate: Any, location: tuple[str | int, ...]
) -> None:
    wire = _minimal_review()
    mutate(wire)
    assert _error_locations(wire) == [location]


def test_an_empty_body_or_non_object_names_the_request() -> None:
    assert _error_locations({}) == [("request",)]
    assert _error_locations([]) == [()]


def test_several_errors_are_reported_together() -> None:
    wire = _minimal_review()
    del wire["request"]["uid"]
    del wire["request"]["operation"]
    assert _error_locations(wire) == [("request", "uid"), ("request", "operation")]


def test_a_built_request_review_needs_no_explicit_api_version() -> None:
    request = AdmissionRequest.from_wire(_minimal_review()["request"])
    review = AdmissionReview(request=request)
    assert AdmissionReview.from_wire(review.to_wire()) == review


def test_allow_with_a_patch_encodes_json_patch_in_base64() -> None:
    operations = [{"op": "replace", "path": "/spec/suspend", "value": True}]
    response = AdmissionResponse.allow("u-1", patch_operations=operations, warnings=["queue-name defaulted"])
    wire = AdmissionReview(response=response).to_wire()
    assert wire == {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {
            "uid": "u-1",
            "allowed": True,
            "patch": wire["response"]["patch"],
            "patchType": "JSONPatch",
            "warnings": ["queue-name defaulted"],
        },
    }
    assert json.loads(base64.b64decode(wire["response"]["patch"])) == operations
    assert response.patch_operations() == operations


def test_allow_without_changes_sends_no_patch() -> None:
    response = AdmissionResponse.allow("u-1", patch_operations=[])
    assert response.to_wire() == {"uid": "u-1", "allowed": True}
    assert response.patch_operations() == []


def test_deny_carries_a_status() -> None:
    response = AdmissionResponse.deny("u-1", message="spec.x: Invalid value", reason="Invalid", code=422)
    assert response.to_wire() == {
        "uid": "u-1",
        "allowed": False,
        "status": {"code": 422, "message": "spec.x: Invalid value", "reason": "Invalid"},
    }


def test_a_reply_review_parses_without_a_request() -> None:
    reply = {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "response": {"uid": "u", "allowed": True},
    }
    review = AdmissionReview.from_wire(reply)
    assert review.request is None
    assert review.response == AdmissionResponse(uid="u", allowed=True)
