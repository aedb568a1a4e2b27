"""Conformance: health, version, discovery, authentication, built-in kinds and their defaults."""

from __future__ import annotations

import json
import secrets
import ssl
from pathlib import Path

import httpx
import pytest
import yaml

from tests.devcluster.conftest import KubeTarget
from tests.devcluster.helpers import job_manifest, status_of


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/livez"])
def test_health_endpoints_answer_ok(kube: KubeTarget, path: str) -> None:
    response = kube.client.get(path)
    assert response.status_code == 200
    assert response.text == "ok"


def test_version_reports_a_kubernetes_version(kube: KubeTarget) -> None:
    info = kube.client.get("/version").json()
    assert info["major"] == "1"
    assert info["gitVersion"].startswith("v1.")


def _client_without_token(kube: KubeTarget, **headers: str) -> httpx.Client:
    return httpx.Client(
        base_url=kube.url, verify=ssl.create_default_context(cafile=str(kube.ca_file)), headers=headers
    )


@pytest.mark.parametrize("authorization", ["Bearer not-a-token", "bearer not-a-token"])
def test_requests_with_an_unknown_token_are_unauthorized(kube: KubeTarget, authorization: str) -> None:
    with _client_without_token(kube, Authorization=authorization) as stranger:
        response = stranger.get("/api/v1/namespaces")
    assert response.status_code == 401
    assert (status_of(response)["reason"], status_of(response)["message"]) == ("Unauthorized", "Unauthorized")


@pytest.mark.parametrize(
    ("method", "path", "message", "details"),
    [
        (
            "GET",
            "/api/v1/namespaces",
            'namespaces is forbidden: User "system:anonymous" cannot list resource "namespaces" in API group "" at the cluster scope',
            {"kind": "namespaces"},
        ),
        (
            "GET",
            "/api/v1/namespaces/default/configmaps/x",
            'configmaps "x" is forbidden: User "system:anonymous" cannot get resource "configmaps" in API group "" in the namespace "default"',
            {"name": "x", "kind": "configmaps"},
        ),
        (
            "GET",
            "/apis/batch/v1/namespaces/default/jobs/j/status",
            'jobs.batch "j" is forbidden: User "system:anonymous" cannot get resource "jobs/status" in API group "batch" in the namespace "default"',
            {"name": "j", "group": "batch", "kind": "jobs"},
        ),
        (
            "GET",
            "/apis/batch/v1/watch/jobs",
            'jobs.batch is forbidden: User "system:anonymous" cannot watch resource "jobs" in API group "batch" at the cluster scope',
            {"group": "batch", "kind": "jobs"},
        ),
        (
            "DELETE",
            "/api/v1/namespaces/default/configmaps",
            'configmaps is forbidden: User "system:anonymous" cannot deletecollection resource "configmaps" in API group "" in the namespace "default"',
            {"kind": "configmaps"},
        ),
        ("GET", "/api", 'forbidden: User "system:anonymous" cannot get path "/api"', {}),
        (
            "GET",
            "/apis/nope.example.com",
            'forbidden: User "system:anonymous" cannot get path "/apis/nope.example.com"',
            {},
        ),
    ],
)
def test_requests_without_credentials_are_anonymous_and_forbidden(
    kube: KubeTarget, method: str, path: str, message: str, details: dict
) -> None:
    """kube-apiserver's default ``--anonymous-auth=true``: no token is ``system:anonymous``, whom
    RBAC allows nothing here (a 403 naming the request), not a 401."""
    for headers in ({}, {"Authorization": "Basic eDp5"}, {"Authorization": "Bearer"}):
        with _client_without_token(kube, **headers) as anonymous:
            response = anonymous.request(method, path)
        assert response.status_code == 403, (headers, response.text)
        body = status_of(response)
        assert (body["reason"], body["message"], body["details"]) == ("Forbidden", message, details)


@pytest.mark.parametrize("path", ["/healthz", "/livez", "/readyz", "/version"])
def test_health_and_version_are_public(kube: KubeTarget, path: str) -> None:
    with _client_without_token(kube) as anonymous:
        assert anonymous.get(path).status_code == 200


def test_core_discovery_lists_resources_with_subresources(kube: KubeTarget) -> None:
    assert "v1" in kube.client.get("/api").json()["versions"]
    resources = {r["name"]: r for r in kube.client.get("/api/v1").json()["resources"]}
    assert resources["namespaces"]["namespaced"] is False
    assert "ns" in resources["namespaces"]["shortNames"]
    assert resources["configmaps"]["shortNames"] == ["cm"]
    assert resources["pods"]["kind"] == "Pod"
    assert "pods/status" in resources
    for name in ("secrets", "serviceaccounts", "events"):
        assert {"create", "get", "list", "watch", "delete", "patch", "update"} <= set(
            resources[name]["verbs"]
        )


def test_group_discovery_lists_every_builtin_group(kube: KubeTarget) -> None:
    groups = {g["name"]: g for g in kube.client.get("/apis").json()["groups"]}
    for group in (
        "batch",
        "coordination.k8s.io",
        "scheduling.k8s.io",
        "admissionregistration.k8s.io",
        "apiextensions.k8s.io",
        "authorization.k8s.io",
        "events.k8s.io",
    ):
        assert groups[group]["preferredVersion"]["version"] == "v1"
    batch = {r["name"]: r for r in kube.client.get("/apis/batch/v1").json()["resources"]}
    assert batch["jobs"]["singularName"] == "job"
    assert batch["jobs/status"]["verbs"] == ["get", "patch", "update"]
    assert kube.client.get("/apis/batch").json()["versions"][0]["groupVersion"] == "batch/v1"


@pytest.mark.parametrize(
    "path",
    [
        "/apis/batch/v1/frobs",
        "/apis/batch/v9",
        "/apis/batch/v1/namespaces/default/frobs",
        "/api/v2",
        "/api/v1/nope",
        "/api/v1/namespaces/default/configmaps/x/y/z",
        "/apis/batch/v1/namespaces/default/jobs/x/nope",
    ],
)
def test_unknown_paths_of_builtin_groups_are_not_found_statuses(kube: KubeTarget, path: str) -> None:
    response = kube.client.get(path)
    assert response.status_code == 404, path
    body = status_of(response)
    assert (body["reason"], body["message"], body["details"]) == (
        "NotFound",
        "the server could not find the requested resource",
        {},
    )


@pytest.mark.parametrize(
    "path",
    [
        "/apis/nope.example.com",
        "/apis/nope.example.com/v1",
        "/apis/nope.example.com/v1/things",
        "/apis/kueue.x-k8s.io/v9",
        "/apis/kueue.x-k8s.io/v1beta2/nopes",
        "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/nopes",
        "/nope",
        "/openapi/v9",
    ],
)
def test_paths_outside_builtin_groups_are_plain_text_404(kube: KubeTarget, path: str) -> None:
    """Unknown groups, and unknown versions or resources of a custom resource group, fall through
    kube-apiserver's handler chain to Go's ``http.NotFound``: plain text, no Status."""
    if path.startswith("/apis/kueue.x-k8s.io"):
        _install_kueue_group_stand_in(kube)
    response = kube.client.get(path)
    assert response.status_code == 404, path
    assert response.headers["content-type"] == "text/plain; charset=utf-8"
    assert response.text == "404 page not found\n"


def _install_kueue_group_stand_in(kube: KubeTarget) -> None:
    """A CRD in kueue.x-k8s.io (the real cluster has Kueue's; the devcluster gets a small one)."""
    if kube.client.get("/apis/kueue.x-k8s.io").status_code == 200:
        return
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "localqueues.kueue.x-k8s.io"},
        "spec": {
            "group": "kueue.x-k8s.io",
            "scope": "Namespaced",
            "names": {"plural": "localqueues", "singular": "localqueue", "kind": "LocalQueue"},
            "versions": [
                {
                    "name": "v1beta2",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    }
    assert (
        kube.client.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd).status_code
        == 201
    )
    from tests.devcluster.helpers import eventually

    eventually(lambda: kube.client.get("/apis/kueue.x-k8s.io/v1beta2").status_code == 200)


def test_initial_namespaces_exist_with_name_label(kube: KubeTarget) -> None:
    for name in ("default", "kube-system", "kube-public"):
        namespace = kube.client.get(f"/api/v1/namespaces/{name}").json()
        assert namespace["metadata"]["labels"]["kubernetes.io/metadata.name"] == name
        assert namespace["status"]["phase"] == "Active"


def test_created_namespace_gets_name_label_and_finalizer(kube: KubeTarget, namespace: str) -> None:
    created = kube.client.get(f"/api/v1/namespaces/{namespace}").json()
    assert created["metadata"]["labels"] == {"kubernetes.io/metadata.name": namespace}
    assert created["spec"] == {"finalizers": ["kubernetes"]}


def _without_server_fields(obj: dict, uid: str) -> dict:
    text = yaml.safe_dump(obj).replace(uid, "UID")
    cleaned: dict = yaml.safe_load(text)
    for field in ("uid", "resourceVersion", "creationTimestamp", "managedFields", "namespace"):
        cleaned["metadata"].pop(field, None)
    return cleaned


def test_job_defaults_match_a_real_server(kube: KubeTarget, namespace: str, golden_dir: Path) -> None:
    request = yaml.safe_load((golden_dir / "job.yaml").read_text())
    expected = yaml.safe_load((golden_dir / "job-create-response.yaml").read_text())
    request["metadata"]["namespace"] = namespace
    response = kube.client.post(f"/apis/batch/v1/namespaces/{namespace}/jobs", json=request)
    assert response.status_code == 201, response.text
    created = response.json()
    # the golden response was captured after Kueue's webhook had suspended the job
    expected["spec"]["suspend"] = False
    assert _without_server_fields(created, created["metadata"]["uid"]) == _without_server_fields(
        expected, expected["metadata"]["uid"]
    )


def test_pod_create_defaults_and_pending_status(kube: KubeTarget, namespace: str) -> None:
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}
    created = kube.client.post(f"/api/v1/namespaces/{namespace}/pods", json=pod).json()
    container = created["spec"]["containers"][0]
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert created["spec"]["restartPolicy"] == "Always"
    assert created["spec"]["serviceAccountName"] == "default"
    assert created["status"]["phase"] == "Pending"
    assert created["status"]["qosClass"] == "BestEffort"


def test_job_with_restart_policy_always_is_invalid(kube: KubeTarget, namespace: str) -> None:
    manifest = job_manifest("bad")
    manifest["spec"]["template"]["spec"]["restartPolicy"] = "Always"
    response = kube.client.post(f"/apis/batch/v1/namespaces/{namespace}/jobs", json=manifest)
    assert response.status_code == 422
    cause = status_of(response)["details"]["causes"][0]
    assert cause["field"] == "spec.template.spec.restartPolicy"
    # kube >= 1.27 reports the defaulted "Always" as a missing choice, not an unsupported one
    assert cause["reason"] == "FieldValueRequired"
    assert cause["message"] == 'Required value: valid values: "OnFailure", "Never"'


@pytest.mark.parametrize(
    ("path", "body"),
    [
        ("/api/v1/namespaces/{ns}/secrets", {"metadata": {"name": "s"}, "stringData": {"a": "b"}}),
        ("/api/v1/namespaces/{ns}/serviceaccounts", {"metadata": {"name": "sa"}}),
        (
            "/api/v1/namespaces/{ns}/events",
            {
                "metadata": {"name": "e"},
                "involvedObject": {"kind": "Job", "name": "j", "namespace": "{ns}"},
                "reason": "Started",
                "message": "m",
                "type": "Normal",
            },
        ),
        (
            "/apis/events.k8s.io/v1/namespaces/{ns}/events",
            {
                "metadata": {"name": "e2"},
                "reason": "Started",
                "eventTime": "2025-01-01T00:00:00.000000Z",
                "reportingController": "x",
                "reportingInstance": "y",
                "action": "Start",
                "type": "Normal",
                "regarding": {"kind": "Job", "name": "j", "namespace": "{ns}"},
            },
        ),
        (
            "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
            {"metadata": {"name": "l"}, "spec": {"holderIdentity": "me"}},
        ),
        ("/apis/scheduling.k8s.io/v1/priorityclasses", {"metadata": {"name": "pc-{ns}"}, "value": 100}),
    ],
)
def test_builtin_kinds_round_trip(kube: KubeTarget, namespace: str, path: str, body: dict) -> None:
    url = path.format(ns=namespace)
    body = json.loads(json.dumps(body).replace("{ns}", namespace))
    created = kube.client.post(url, json=body)
    assert created.status_code == 201, created.text
    fetched = kube.client.get(f"{url}/{body['metadata']['name']}")
    assert fetched.json()["metadata"]["uid"] == created.json()["metadata"]["uid"]
    if "priorityclasses" in url:
        kube.client.delete(f"{url}/{body['metadata']['name']}")


def test_webhook_configuration_defaults(kube: KubeTarget, namespace: str) -> None:
    name = f"hook-{namespace}"
    body = {
        "metadata": {"name": name},
        "webhooks": [
            {
                "name": "x.example.com",
                "admissionReviewVersions": ["v1"],
                "sideEffects": "None",
                "clientConfig": {"service": {"namespace": namespace, "name": "svc", "path": "/mutate"}},
                "rules": [
                    {
                        "operations": ["CREATE"],
                        "apiGroups": ["example.com"],
                        "apiVersions": ["v1"],
                        "resources": ["nothings"],
                    }
                ],
            }
        ],
    }
    url = "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations"
    created = kube.client.post(url, json=body).json()
    try:
        hook = created["webhooks"][0]
        assert hook["failurePolicy"] == "Fail"
        assert hook["matchPolicy"] == "Equivalent"
        assert hook["timeoutSeconds"] == 10
        assert hook["reinvocationPolicy"] == "Never"
        assert hook["clientConfig"]["service"]["port"] == 443
        assert hook["rules"][0]["scope"] == "*"
    finally:
        kube.client.delete(f"{url}/{name}")


def test_subject_access_review_is_answered(kube: KubeTarget) -> None:
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": "someone",
            "groups": ["system:masters"],
            "resourceAttributes": {"verb": "create", "group": "batch", "resource": "jobs"},
        },
    }
    response = kube.client.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", json=review)
    assert response.status_code == 201
    assert response.json()["status"]["allowed"] is True


def test_subject_access_review_follows_the_static_policy(devcluster_factory) -> None:
    cluster = devcluster_factory(
        access_rules=[
            {
                "name": "readers",
                "users": ["alice"],
                "verbs": ["get", "list"],
                "resources": ["jobs"],
                "apiGroups": ["batch"],
            }
        ]
    )
    with httpx.Client(
        base_url=cluster.url,
        verify=ssl.create_default_context(cafile=str(cluster.ca_file)),
        headers={"Authorization": f"Bearer {cluster.token}"},
    ) as client:

        def ask(user: str, verb: str) -> bool:
            review = {
                "spec": {
                    "user": user,
                    "resourceAttributes": {
                        "verb": verb,
                        "group": "batch",
                        "resource": "jobs",
                        "namespace": "x",
                    },
                }
            }
            answer = client.post("/apis/authorization.k8s.io/v1/subjectaccessreviews", json=review)
            return bool(answer.json()["status"]["allowed"])

        assert ask("alice", "list") is True
        assert ask("alice", "delete") is False
        assert ask("bob", "list") is False


def test_namespaces_get_default_service_account_and_root_ca(kube: KubeTarget) -> None:
    from tests.devcluster.conftest import needs_controller_manager
    from tests.devcluster.helpers import eventually

    needs_controller_manager(kube, "the serviceaccount and root-ca-cert-publisher controllers")
    namespace = f"conf-ca-{secrets.token_hex(4)}"  # not the fixture's: it stands in for them
    assert kube.client.post("/api/v1/namespaces", json={"metadata": {"name": namespace}}).status_code == 201
    eventually(
        lambda: kube.client.get(f"/api/v1/namespaces/{namespace}/serviceaccounts/default").status_code == 200
    )
    root_ca = eventually(
        lambda: kube.client.get(f"/api/v1/namespaces/{namespace}/configmaps/kube-root-ca.crt")
    )
    assert root_ca.status_code == 200
    assert root_ca.json()["data"]["ca.crt"].startswith("-----BEGIN CERTIFICATE-----")
    kube.client.delete(f"/api/v1/namespaces/{namespace}")


def test_core_and_events_api_events_are_one_resource(kube: KubeTarget, namespace: str) -> None:
    core_url = f"/api/v1/namespaces/{namespace}/events"
    new_url = f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"
    written = kube.client.post(
        new_url,
        json={
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": "from-new"},
            "eventTime": "2025-01-01T00:00:00.000000Z",
            "reportingController": "example.com/ctl",
            "reportingInstance": "ctl-1",
            "action": "Start",
            "reason": "Started",
            "type": "Normal",
            "note": "hello",
            "regarding": {"kind": "Job", "name": "j", "namespace": namespace},
        },
    )
    assert written.status_code == 201, written.text
    assert written.json()["note"] == "hello"
    as_core = kube.client.get(f"{core_url}/from-new").json()
    assert (as_core["apiVersion"], as_core["message"], as_core["involvedObject"]["name"]) == (
        "v1",
        "hello",
        "j",
    )
    assert as_core["reportingComponent"] == "example.com/ctl"
    kube.client.post(
        core_url,
        json={
            "metadata": {"name": "from-core"},
            "message": "hi",
            "reason": "Created",
            "type": "Normal",
            "involvedObject": {"kind": "Job", "name": "k", "namespace": namespace},
        },
    )
    as_new = kube.client.get(f"{new_url}/from-core").json()
    assert (as_new["apiVersion"], as_new["note"], as_new["regarding"]["name"]) == (
        "events.k8s.io/v1",
        "hi",
        "k",
    )
    selected = kube.client.get(new_url, params={"fieldSelector": "regarding.name=k"}).json()
    assert [e["metadata"]["name"] for e in selected["items"]] == ["from-core"]
    # what an Event says is immutable through events.k8s.io, not through core v1 (old clients)
    refused = kube.client.patch(
        f"{new_url}/from-core",
        json={"note": "changed"},
        headers={"content-type": "application/merge-patch+json"},
    )
    assert refused.status_code == 422
    assert (
        status_of(refused)["message"]
        == 'Event "from-core" is invalid: message: Invalid value: "changed": field is immutable'
    )
    patched = kube.client.patch(
        f"{core_url}/from-core",
        json={"message": "changed"},
        headers={"content-type": "application/merge-patch+json"},
    )
    assert patched.status_code == 200, patched.text
    assert kube.client.get(f"{new_url}/from-core").json()["note"] == "changed"


def test_events_api_watch_serves_converted_objects(kube: KubeTarget, namespace: str) -> None:
    from tests.devcluster.helpers import watch

    core_url = f"/api/v1/namespaces/{namespace}/events"
    start = kube.client.get(core_url).json()["metadata"]["resourceVersion"]
    kube.client.post(
        core_url,
        json={
            "metadata": {"name": "e"},
            "message": "m",
            "reason": "R",
            "type": "Normal",
            "involvedObject": {"kind": "Job", "name": "j", "namespace": namespace},
        },
    )
    events = watch(
        kube.client,
        f"/apis/events.k8s.io/v1/namespaces/{namespace}/events",
        resourceVersion=start,
        timeoutSeconds=1,
    )
    assert [(e["type"], e["object"]["apiVersion"], e["object"]["note"]) for e in events] == [
        ("ADDED", "events.k8s.io/v1", "m")
    ]
