"""The admission envelope: bad input never 500s, never admits by accident; the golden fixture."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from shared.constants import QUEUE_LABEL
from tests.unit.webhook.helpers import apply, handler, job, ops_of, response, review
from webhook.rules.lookups import InMemoryLookups, ObjectKey, OwnerCacheNotReady


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"", "request body is empty"),
        (b"{not json", "request body is not valid JSON"),
        (b"[]", "must be a JSON object"),
        (b'{"apiVersion": "admission.k8s.io/v1beta1", "kind": "AdmissionReview"}', "expected apiVersion"),
        (b'{"apiVersion": "admission.k8s.io/v1", "kind": "Other"}', "expected apiVersion"),
        (b'{"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}', "request: must be an object"),
        (review(job()).replace(b'"uid":"u-1"', b'"uid":""'), "request.uid"),
        (review(job()).replace(b'"uid":"u-1"', b'"uid":7'), "request.uid: must be a non-empty string\n"),
        (review(job()).replace(b'"group":"batch"', b'"group":1'), "request.kind.group: must be a string\n"),
        (
            review(job()).replace(b'"version":"v1",', b""),
            "request.kind.version: must be a non-empty string\n",
        ),
        (
            review(job()).replace(b'"version":"v1"', b'"version":""'),
            "request.kind.version: must be a non-empty string\n",
        ),
        (
            review(job()).replace(b'"kind":"Job"}', b'"kind":["Job"]}'),
            "request.kind.kind: must be a non-empty string\n",
        ),
        (review(None), "request.object: must be an object"),
        (review(job(), operation="PATCH"), "request.operation"),
        (
            review(job(), operation=["CREATE"]),
            'request.operation: must be one of CREATE, UPDATE, DELETE, CONNECT, got ["CREATE"]',
        ),
        (
            review(job(), operation={"op": "CREATE"}),
            'request.operation: must be one of CREATE, UPDATE, DELETE, CONNECT, got {"op":"CREATE"}',
        ),
        (review(job(), operation="x" * 500), 'got "' + "x" * 99 + "..."),
        (
            review(job()).replace(b'"kind":{"group":"batch","version":"v1","kind":"Job"}', b'"kind":"Job"'),
            "request.kind",
        ),
    ],
)
@pytest.mark.parametrize("webhook", ["mutate", "validate"])
def test_bad_envelopes_are_http_400_with_one_line(webhook, body, reason) -> None:
    h = handler()
    status, payload = getattr(h, webhook)(body)
    assert status == 400
    text = payload.decode()
    assert reason in text
    assert text.count("\n") == 1 and text.endswith("\n")
    assert h.metrics.count(webhook=webhook, framework="none", operation="", result="bad_request") == 1


def test_oversized_body_is_refused() -> None:
    h = handler()
    h.max_body_bytes = 100
    status, payload = h.mutate(review(job()))
    assert status == 400 and b"larger than the 100-byte limit" in payload


@pytest.mark.parametrize(
    ("mutate_obj", "message"),
    [
        (
            {"metadata": {"name": "j", "labels": ["a"]}},
            "metadata.labels: Invalid value: null: must be a map of strings",
        ),
        (
            {"metadata": {"name": "j", "labels": {"a": 1}}},
            "metadata.labels[a]: Invalid value: null: must be a string",
        ),
        ({"metadata": "x"}, "metadata: Invalid value: null: must be an object"),
        ({"metadata": {"namespace": 7}}, "metadata.namespace: Invalid value: null: must be a string"),
        (
            {
                "metadata": {
                    "labels": {QUEUE_LABEL: "q"},
                    "ownerReferences": [{"apiVersion": {}, "kind": "Job", "name": "p", "controller": True}],
                }
            },
            "metadata.ownerReferences[0].apiVersion: Invalid value: null: must be a string",
        ),
        (
            {"metadata": {"ownerReferences": [{"apiVersion": "batch/v1", "controller": "yes"}]}},
            "metadata.ownerReferences[0].controller: Invalid value: null: must be a boolean",
        ),
        (
            {"metadata": {"labels": {QUEUE_LABEL: "q"}}, "spec": {"suspend": "yes"}},
            "spec.suspend: expected a boolean",
        ),
        ({"metadata": {"labels": {QUEUE_LABEL: "q"}}, "spec": []}, "spec"),
    ],
)
@pytest.mark.parametrize("webhook", ["mutate", "validate"])
def test_wrong_field_types_are_denied_naming_the_field(webhook, mutate_obj, message) -> None:
    status, payload = getattr(handler(), webhook)(review(mutate_obj))
    assert status == 200
    resp = response(payload)
    assert resp["allowed"] is False
    assert resp["status"]["code"] == 400
    assert message in resp["status"]["message"]


def test_unknown_kind_is_allowed_unchanged_and_counted() -> None:
    h = handler()
    status, payload = h.mutate(review({"metadata": {}}, kind=("example.com", "v1", "Other")))
    assert status == 200
    assert response(payload) == {"allowed": True, "uid": "u-1"}
    assert h.metrics.count(webhook="mutate", framework="unknown", operation="CREATE", result="skipped") == 1


def test_validation_denial_is_forbidden_403_with_kueue_message() -> None:
    h = handler()
    old, new = job(labels={QUEUE_LABEL: "a"}, suspend=False), job(labels={QUEUE_LABEL: "b"}, suspend=False)
    status, payload = h.validate(review(new, operation="UPDATE", old=old))
    assert status == 200
    assert response(payload) == {
        "uid": "u-1",
        "allowed": False,
        "status": {
            "code": 403,
            "reason": "Forbidden",
            "message": f'metadata.labels[{QUEUE_LABEL}]: Invalid value: "b": field is immutable',
        },
    }
    assert (
        h.metrics.count(webhook="validate", framework="batch/job", operation="UPDATE", result="denied") == 1
    )


def test_allowed_validation_carries_status_200() -> None:
    _status, payload = handler().validate(review(job()))
    assert response(payload) == {"uid": "u-1", "allowed": True, "status": {"code": 200}}


def test_update_without_old_object_is_denied() -> None:
    resp = response(handler().validate(review(job(), operation="UPDATE"))[1])
    # controller-runtime's decoder error, answered with admission.Errored(400, err): no reason
    assert resp["allowed"] is False
    assert resp["status"] == {"code": 400, "message": "there is no content to decode"}


def test_delete_is_allowed_and_mutate_ignores_update() -> None:
    h = handler()
    assert response(h.validate(review(None, operation="DELETE"))[1])["allowed"] is True
    resp = response(h.mutate(review(job(labels={QUEUE_LABEL: "q"}), operation="UPDATE", old=job()))[1])
    assert resp == {"allowed": True, "uid": "u-1"}


def test_missing_owner_is_denied_with_the_cached_clients_not_found_status() -> None:
    obj = job(labels={QUEUE_LABEL: "q"})
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "p", "uid": "x", "controller": True}
    ]
    resp = response(handler().mutate(review(obj))[1])
    assert resp["allowed"] is False
    assert resp["status"] == {
        "status": "Failure",
        "message": 'Job.batch "p" not found',
        "reason": "NotFound",
        "details": {"name": "p", "group": "batch", "kind": "Job"},
        "code": 404,
    }


def test_plain_defaulting_error_is_a_forbidden_denial() -> None:
    obj = job("p", labels={QUEUE_LABEL: "q"})
    obj["metadata"]["uid"] = "me"
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "p", "uid": "me", "controller": True}
    ]
    lookups = InMemoryLookups()
    lookups.put_owner(obj)  # the job is its own controller
    resp = response(handler(lookups).mutate(review(obj))[1])
    assert resp["status"] == {"code": 403, "reason": "Forbidden", "message": "cyclic ownership"}


def test_a_bug_in_a_rule_denies_with_500(monkeypatch) -> None:
    import webhook.serving.admission_review as admission

    def boom(*args, **kwargs):
        raise RuntimeError("bug")

    monkeypatch.setattr(admission, "default_job", boom)
    status, payload = handler().mutate(review(job(labels={QUEUE_LABEL: "q"})))
    assert status == 200
    assert response(payload)["allowed"] is False and response(payload)["status"]["code"] == 500


@pytest.mark.needs_shared
def test_real_admission_review_is_patched_like_real_kueue(shared_dir: Path, golden_dir: Path) -> None:
    """The captured kube-apiserver request, relabelled like the golden job, yields Kueue's fields."""
    review_json = json.loads((shared_dir / "fixtures" / "admissionreview-job-create.json").read_text())
    golden = yaml.safe_load((golden_dir / "job-create-response.yaml").read_text())
    obj = review_json["request"]["object"]
    # the captured request has no queue-name and is already suspended; give it the golden job's
    # queue label and Kueue's input (suspend unset) so the rule under test actually fires
    obj["metadata"]["labels"] = dict(golden["metadata"]["labels"])
    del obj["spec"]["suspend"]
    status, payload = handler().mutate(orjson.dumps(review_json))
    assert status == 200
    resp = response(payload)
    assert resp["uid"] == review_json["request"]["uid"]
    assert resp["patchType"] == "JSONPatch"
    assert ops_of(resp) == [{"op": "add", "path": "/spec/suspend", "value": True}]
    patched = apply(obj, resp)
    # the fields Kueue's mutating webhook touches: queue label, suspend, managedBy (absent)
    assert patched["spec"]["suspend"] is golden["spec"]["suspend"] is True
    assert patched["metadata"]["labels"][QUEUE_LABEL] == golden["metadata"]["labels"][QUEUE_LABEL]
    assert patched["spec"].get("managedBy") == golden["spec"].get("managedBy")
    # everything else is untouched
    del patched["spec"]["suspend"]
    assert patched == obj


@pytest.mark.needs_shared
def test_real_admission_review_as_captured_needs_no_patch(shared_dir: Path) -> None:
    body = (shared_dir / "fixtures" / "admissionreview-job-create.json").read_bytes()
    status, payload = handler().mutate(body)
    assert status == 200
    assert response(payload) == {"allowed": True, "uid": "adb22d9f-ebfd-45d9-83c9-ed91f0801b2d"}


class FillingOwnerCache(InMemoryLookups):
    """Owner caches that fill on demand: ``owner`` raises until the wait has seen the kind synced."""

    def __init__(self, *, fills: bool) -> None:
        super().__init__()
        self.fills = fills
        self.synced_kinds: set[tuple[str, str]] = set()
        self.waits: list[tuple[str, str]] = []

    def owner(self, key: ObjectKey) -> Any:
        if (key.api_version, key.kind) not in self.synced_kinds:
            raise OwnerCacheNotReady(api_version=key.api_version, kind=key.kind)
        return super().owner(key)

    async def wait_owner_cache(self, *, api_version: str, kind: str, timeout_seconds: float) -> bool:
        self.waits.append((api_version, kind))
        if self.fills:
            self.synced_kinds.add((api_version, kind))
        return self.fills


def owned_job() -> dict:
    obj = job("child", labels={QUEUE_LABEL: "q"})
    obj["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "parent", "uid": "p-uid", "controller": True}
    ]
    return obj


async def test_a_mutation_waits_for_an_owner_cache_that_fills_on_demand() -> None:
    lookups = FillingOwnerCache(fills=True)
    parent = job("parent", labels={QUEUE_LABEL: "q"})
    parent["metadata"]["uid"] = "p-uid"
    lookups.put_owner(parent)
    webhook = handler(lookups)
    body = review(owned_job())
    assert webhook.mutate_now(body) is None  # the fast path hands it to the async path, uncounted
    assert (
        webhook.metrics.count(webhook="mutate", framework="batch/job", operation="CREATE", result="allowed")
        == 0
    )
    status, payload = await webhook.mutate_async(body)
    # the parent is managed by Kueue (queue-name): the child is not suspended, exactly as with a warm cache
    assert status == 200 and response(payload) == {"allowed": True, "uid": "u-1"}
    assert lookups.waits == [("batch/v1", "Job")]
    assert (
        webhook.metrics.count(webhook="mutate", framework="batch/job", operation="CREATE", result="allowed")
        == 1
    )
    assert webhook.mutate_now(body) == (status, payload)  # from now on answered in place


async def test_an_owner_cache_that_never_syncs_denies_the_mutation() -> None:
    webhook = handler(FillingOwnerCache(fills=False))
    status, payload = await webhook.mutate_async(review(owned_job()))
    assert status == 200
    assert response(payload)["status"] == {
        "code": 403,
        "reason": "Forbidden",
        "message": "failed waiting for the batch/v1, Kind=Job cache to sync",
    }
    assert response(handler(FillingOwnerCache(fills=False)).mutate(review(owned_job()))[1]) == response(
        payload
    )
    assert (
        webhook.metrics.count(webhook="mutate", framework="batch/job", operation="CREATE", result="denied")
        == 1
    )
