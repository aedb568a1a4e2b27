"""The AppWrapper operator's admission rules and its SubjectAccessReview per wrapped component."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Mapping
from typing import Any

import orjson
import pytest

from shared.frameworks import builtin_kinds
from shared.frameworks.appwrapper import AppWrapperAdapter
from shared.kube import ServiceUnavailable
from tests.unit.webhook.helpers import BATCH_JOB, apply, response
from webhook.rules.access_review import AccessDecision
from webhook.rules.appwrapper import sanitize_label, validate_appwrapper_create, validate_appwrapper_update
from webhook.rules.fielderrors import to_aggregate
from webhook.rules.lookups import InMemoryLookups
from webhook.rules.settings import Framework, WebhookSettings
from webhook.serving.admission_review import AdmissionHandler
from webhook.serving.metrics import WebhookMetrics

APPWRAPPER = Framework(
    name="workload.codeflare.dev/appwrapper",
    gvk=builtin_kinds.APPWRAPPER.gvk,
    plural="appwrappers",
    adapter=AppWrapperAdapter,
    appwrapper_rules=True,
)
POD_SPEC = {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}
USER = {
    "username": "alice",
    "uid": "u-alice",
    "groups": ["team-a", "system:authenticated"],
    "extra": {"scopes": ["x"]},
}


def job(parallelism: int = 2) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {"parallelism": parallelism, "template": {"spec": POD_SPEC}},
    }


CONFIG_MAP = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {}}


def appwrapper(*components: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "workload.codeflare.dev/v1beta2",
        "kind": "AppWrapper",
        "metadata": {"name": "aw", "namespace": "ns", "labels": {"kueue.x-k8s.io/queue-name": "q"}},
        "spec": {"suspend": True, "components": list(components)},
    }


def review(obj: dict[str, Any], *, operation: str = "CREATE", old: dict[str, Any] | None = None) -> bytes:
    request = {
        "uid": "r-1",
        "kind": {"group": "workload.codeflare.dev", "version": "v1beta2", "kind": "AppWrapper"},
        "namespace": "ns",
        "operation": operation,
        "userInfo": USER,
        "object": obj,
        "oldObject": old,
    }
    return orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})


class FakeReviewer:
    def __init__(
        self,
        *,
        denied: frozenset[str] = frozenset(),
        failing: bool = False,
        unserved: frozenset[str] = frozenset(),
    ) -> None:
        self.denied = denied
        self.failing = failing
        self.unserved = unserved
        self.asked: list[tuple[str, str, str, str]] = []

    async def may_create(
        self, *, user_info: Mapping[str, Any], namespace: str, api_version: str, kind: str
    ) -> AccessDecision:
        self.asked.append((str(user_info["username"]), namespace, api_version, kind))
        if self.failing:
            raise ServiceUnavailable(code=503, message="the server is currently unable to handle the request")
        if kind in self.unserved:
            return AccessDecision(allowed=False, resource="*", served=False)
        resource = {"Job": "jobs", "ConfigMap": "configmaps"}.get(kind, "*")
        return AccessDecision(allowed=kind not in self.denied, resource=resource)


def handler(reviewer: FakeReviewer | None) -> AdmissionHandler:
    return AdmissionHandler(
        settings=WebhookSettings(frameworks=(BATCH_JOB, APPWRAPPER)),
        lookups=InMemoryLookups(),
        metrics=WebhookMetrics(),
        access=reviewer,
    )


def validate(reviewer: FakeReviewer | None, body: bytes) -> dict[str, Any]:
    status, payload = asyncio.run(handler(reviewer).validate_async(body))
    assert status == 200
    return response(payload)


# --- SubjectAccessReviews ------------------------------------------------------------------------


def test_every_wrapped_component_is_reviewed_for_the_requesting_user() -> None:
    reviewer = FakeReviewer()
    assert validate(reviewer, review(appwrapper({"template": job()}, {"template": CONFIG_MAP}))) == {
        "uid": "r-1",
        "allowed": True,
        "status": {"code": 200},
    }
    assert reviewer.asked == [("alice", "ns", "batch/v1", "Job"), ("alice", "ns", "v1", "ConfigMap")]


def test_a_user_who_may_not_create_a_wrapped_kind_is_denied_naming_kind_and_verb() -> None:
    answer = validate(
        FakeReviewer(denied=frozenset({"ConfigMap"})),
        review(appwrapper({"template": job()}, {"template": CONFIG_MAP})),
    )
    assert answer["allowed"] is False
    assert answer["status"] == {
        "code": 403,
        "reason": "Forbidden",
        "message": "spec.components[1].template: Forbidden: User alice is not authorized to create configmaps in ns",
    }


def test_a_wrapped_kind_the_api_server_does_not_serve_is_denied() -> None:
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    answer = validate(
        FakeReviewer(unserved=frozenset({"Widget"})),
        review(appwrapper({"template": job()}, {"template": widget})),
    )
    assert answer["status"]["message"] == (
        'spec.components[1].template.kind: Invalid value: "Widget": no resource is served for '
        "example.com/v1, Kind=Widget; is its CustomResourceDefinition installed?"
    )


def test_a_review_that_cannot_be_answered_denies() -> None:
    answer = validate(FakeReviewer(failing=True), review(appwrapper({"template": job()})))
    assert answer["allowed"] is False
    assert answer["status"]["message"] == (
        "spec.components[0].template: Internal error: the server is currently unable to handle the request"
    )


def test_updates_and_other_kinds_make_no_review() -> None:
    reviewer = FakeReviewer(denied=frozenset({"Job"}))
    aw = appwrapper({"template": job()})
    resumed = copy.deepcopy(aw)
    resumed["spec"]["suspend"] = False
    resumed["spec"]["components"][0]["podSetInfos"] = [{"nodeSelector": {"a": "b"}}]
    assert validate(reviewer, review(resumed, operation="UPDATE", old=aw))["allowed"] is True
    assert reviewer.asked == []


def test_without_a_reviewer_the_sync_path_still_applies_the_other_rules() -> None:
    _status, payload = handler(None).validate(review(appwrapper({"template": CONFIG_MAP})))
    assert response(payload)["status"]["message"].startswith("spec.components: Invalid value: ")


# --- the operator's defaulting -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "label"),
    [
        ("alice", "alice"),
        ("system:serviceaccount:ns:robot", "system_serviceaccount_ns_robot"),
        ("-élan.", "lan"),
        ("a" * 62 + "é", "a" * 62),
        ("x" * 70, "x" * 63),
        ("", ""),
    ],
)
def test_user_names_are_sanitised_as_appwrapper_does(raw: str, label: str) -> None:
    assert sanitize_label(raw) == label


def test_create_stamps_the_requesting_user_over_any_spoofed_label() -> None:
    aw = appwrapper({"template": job()})
    aw["metadata"]["labels"]["workload.codeflare.dev/user"] = "mallory"
    status, payload = handler(FakeReviewer()).mutate(review(aw))
    assert status == 200
    mutated = apply(aw, response(payload))
    assert mutated["metadata"]["labels"] == {
        "kueue.x-k8s.io/queue-name": "q",
        "workload.codeflare.dev/user": "alice",
        "workload.codeflare.dev/userid": "u-alice",
    }
    assert mutated["spec"]["suspend"] is True


# --- the operator's create rules -----------------------------------------------------------------


def message(*components: dict[str, Any]) -> str | None:
    return to_aggregate(validate_appwrapper_create(appwrapper(*components)))


def test_a_job_and_a_config_map_are_valid() -> None:
    assert message({"template": job()}, {"template": CONFIG_MAP}) is None


@pytest.mark.parametrize(
    ("components", "expected"),
    [
        (
            [{"template": {"kind": "Job"}}],
            '[spec.components[0].template: Invalid value: {"kind":"Job"}: failed to decode as JSON, '
            'spec.components: Invalid value: [{"template":{"kind":"Job"}}]: components contains no podspecs]',
        ),
        (
            [{"template": job()}, {"template": {**appwrapper(), "metadata": {"name": "inner"}}}],
            "spec.components[1].template: Forbidden: Nested AppWrappers are forbidden",
        ),
        (
            [{"template": {**job(), "metadata": {"name": "j", "namespace": "other"}}}],
            "spec.components[0].template.metadata.namespace: Forbidden: AppWrappers cannot create objects in other namespaces",
        ),
        (
            [{"template": CONFIG_MAP, "podSets": [{"path": "template.spec.template"}]}],
            'spec.components[0].podSets[0].path: Invalid value: "template.spec.template": '
            "path does not refer to a v1.PodSpecTemplate: at path position 'template.' missing field 'spec'",
        ),
        (
            [{"template": CONFIG_MAP, "podSets": [{"path": ""}]}],
            "[spec.components[0].podSets[0].path: Required value: podspec must specify path, "
            'spec.components[0].podSets[0].path: Invalid value: "": path does not refer to a v1.PodSpecTemplate: '
            "first element of the path must be 'template']",
        ),
        (
            [{"template": job(), "podSets": [{"path": "template.spec.template", "replicas": 3}]}],
            'spec.components[0].podSets: Invalid value: [{"path":"template.spec.template","replicas":3}]: '
            "replica count 3 differs from inferred count 2 for PodSet at path position 'template.spec.template'",
        ),
        (
            [
                {
                    "template": job(),
                    "podSets": [{"path": "template.spec.template"}, {"path": "template.spec.template"}],
                }
            ],
            'spec.components[0].podSets: Invalid value: [{"path":"template.spec.template"},{"path":"template.spec.template"}]: '
            "multiple DeclaredPodSets with path 'template.spec.template'",
        ),
        (
            [{"template": {**job(), "spec": {"parallelism": 1, "template": {"metadata": {}}}}}],
            '[spec.components[0].template: Invalid value: {"apiVersion":"batch/v1",',
        ),
    ],
)
def test_create_rules(components: list[dict[str, Any]], expected: str) -> None:
    got = message(*components)
    assert got is not None
    assert got.startswith(expected), got


def test_an_inferred_path_without_a_pod_spec_is_an_inference_error() -> None:
    broken = {**job(), "spec": {"parallelism": 1, "template": {"metadata": {}}}}
    got = message({"template": broken})
    assert got is not None
    assert (
        ": error inferring PodSets: template.spec.template does not refer to a v1.PodSpecTemplate: "
        "content at template.spec.template does not contain a spec, "
    ) in got


def test_the_pod_set_count_is_limited_to_eight() -> None:
    got = message(*[{"template": job()} for _ in range(9)])
    assert got is not None and got.endswith("components contains 9 podspecs; at most 8 are allowed")


def test_array_paths_walk_lists_as_appwrapper_does() -> None:
    workers = {
        "apiVersion": "example.com/v1",
        "kind": "Trainer",
        "metadata": {"name": "t"},
        "spec": {"groups": [{"template": {"spec": POD_SPEC}}]},
    }
    assert message({"template": workers, "podSets": [{"path": "template.spec.groups[0].template"}]}) is None
    got = message({"template": workers, "podSets": [{"path": "template.spec.groups[1].template"}]})
    assert got is not None and got.endswith("at path position 'template.spec.groups' out of bounds index '1'")


# --- the operator's update rules -----------------------------------------------------------------


def test_what_create_checked_is_immutable() -> None:
    old = appwrapper({"template": job(), "podSets": [{"path": "template.spec.template", "replicas": 2}]})
    new = copy.deepcopy(old)
    new["spec"]["components"][0]["template"]["spec"]["parallelism"] = 4
    new["spec"]["components"][0]["podSets"][0]["replicas"] = 4
    new["metadata"]["labels"]["workload.codeflare.dev/user"] = "mallory"
    new["spec"]["managedBy"] = "someone-else"
    assert to_aggregate(validate_appwrapper_update(old, new)) == (
        "[spec.components[0].template.raw: Forbidden: attempt to change immutable field, "
        "spec.components[0].podsets[0].replicas: Forbidden: attempt to change immutable field, "
        "metadata.labels[workload.codeflare.dev/user]: Forbidden: attempt to change immutable field, "
        "spec.managedBy: Forbidden: attempt to change immutable field]"
    )
    fewer = copy.deepcopy(old)
    fewer["spec"]["components"] = []
    assert to_aggregate(validate_appwrapper_update(old, fewer)) == (
        "spec.components: Forbidden: attempt to change immutable field"
    )
