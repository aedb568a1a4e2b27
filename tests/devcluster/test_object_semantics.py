"""Conformance: server-owned metadata, validation, conflicts, dry run, status isolation, finalizers."""

from __future__ import annotations

import re

from tests.devcluster.conftest import KubeTarget
from tests.devcluster.helpers import configmap, job_manifest, status_of

JOBS = "/apis/batch/v1/namespaces/{ns}/jobs"
CMS = "/api/v1/namespaces/{ns}/configmaps"


def test_create_sets_uid_timestamp_and_increasing_resource_versions(kube: KubeTarget, namespace: str) -> None:
    versions = []
    for index in range(3):
        created = kube.client.post(CMS.format(ns=namespace), json=configmap(f"cm{index}")).json()
        assert re.fullmatch(r"[0-9a-f-]{36}", created["metadata"]["uid"])
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", created["metadata"]["creationTimestamp"])
        versions.append(int(created["metadata"]["resourceVersion"]))
    assert versions == sorted(versions) and len(set(versions)) == 3


def test_generate_name_appends_five_random_characters(kube: KubeTarget, namespace: str) -> None:
    body = configmap("")
    body["metadata"] = {"generateName": "gen-"}
    names = {
        kube.client.post(CMS.format(ns=namespace), json=body).json()["metadata"]["name"] for _ in range(3)
    }
    assert len(names) == 3
    assert all(re.fullmatch(r"gen-[a-z0-9]{5}", name) for name in names)


def test_create_with_resource_version_is_rejected(kube: KubeTarget, namespace: str) -> None:
    response = kube.client.post(CMS.format(ns=namespace), json=configmap("rv", resourceVersion="5"))
    assert response.status_code in {400, 500}
    assert "resourceVersion should not be set on objects to be created" in status_of(response)["message"]


def test_generation_bumps_on_spec_changes_only(kube: KubeTarget, namespace: str) -> None:
    url = JOBS.format(ns=namespace)
    created = kube.client.post(url, json=job_manifest("gen", suspend=True)).json()
    assert created["metadata"]["generation"] == 1
    merge = {"content-type": "application/merge-patch+json"}
    labelled = kube.client.patch(
        f"{url}/gen", json={"metadata": {"labels": {"x": "y"}}}, headers=merge
    ).json()
    assert labelled["metadata"]["generation"] == 1
    status = kube.client.patch(f"{url}/gen/status", json={"status": {"active": 0}}, headers=merge).json()
    assert status["metadata"]["generation"] == 1
    spec = kube.client.patch(f"{url}/gen", json={"spec": {"suspend": False}}, headers=merge).json()
    assert spec["metadata"]["generation"] == 2


def test_invalid_name_is_422_with_kube_message(kube: KubeTarget, namespace: str) -> None:
    response = kube.client.post(CMS.format(ns=namespace), json=configmap("Bad_Name"))
    assert response.status_code == 422
    status = status_of(response)
    assert status["reason"] == "Invalid"
    assert status["message"].startswith(
        'ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": '
        "a lowercase RFC 1123 subdomain must consist of"
    )
    assert status["details"]["causes"][0]["field"] == "metadata.name"
    assert status["details"]["causes"][0]["reason"] == "FieldValueInvalid"
    assert status["details"]["kind"] == "ConfigMap"


def test_invalid_labels_and_annotations_are_422(kube: KubeTarget, namespace: str) -> None:
    body = configmap("labels", labels={"bad key": "v", "ok": "bad value!"}, annotations={"no/t/valid": "x"})
    response = kube.client.post(CMS.format(ns=namespace), json=body)
    assert response.status_code == 422
    status = status_of(response)
    fields = [cause["field"] for cause in status["details"]["causes"]]
    assert fields == ["metadata.labels", "metadata.labels", "metadata.annotations"]
    # ValidateLabels ranges over a Go map: kube-apiserver lists the two label errors in either order
    values = [cause["message"].split(": ")[1] for cause in status["details"]["causes"][:2]]
    assert sorted(values) == ['"bad key"', '"bad value!"']
    assert status["message"].startswith(
        'ConfigMap "labels" is invalid: [metadata.labels: Invalid value: "bad '
    )


def test_invalid_namespace_name_uses_label_rule(kube: KubeTarget) -> None:
    response = kube.client.post("/api/v1/namespaces", json={"metadata": {"name": "a.b"}})
    assert response.status_code == 422
    # a valid subdomain but not a valid label: apimachinery's IsDNS1123Label says exactly this
    assert status_of(response)["message"].endswith(
        'metadata.name: Invalid value: "a.b": must not contain dots'
    )


def test_create_in_missing_namespace_is_404(kube: KubeTarget) -> None:
    response = kube.client.post(JOBS.format(ns="no-such-ns"), json=job_manifest("x"))
    assert response.status_code == 404
    status = status_of(response)
    assert status["message"] == 'namespaces "no-such-ns" not found'
    assert status["details"] == {"name": "no-such-ns", "kind": "namespaces"}


def test_get_missing_object_is_404_with_qualified_resource(kube: KubeTarget, namespace: str) -> None:
    response = kube.client.get(f"{JOBS.format(ns=namespace)}/missing")
    assert response.status_code == 404
    assert status_of(response)["message"] == 'jobs.batch "missing" not found'


def test_stale_update_is_409_conflict_with_real_message(kube: KubeTarget, namespace: str) -> None:
    url = JOBS.format(ns=namespace)
    stale = kube.client.post(url, json=job_manifest("x", suspend=True)).json()
    fresh = dict(stale, metadata={**stale["metadata"], "labels": {"a": "1"}})
    assert kube.client.put(f"{url}/x", json=fresh).status_code == 200
    stale["metadata"]["labels"] = {"a": "2"}
    response = kube.client.put(f"{url}/x", json=stale)
    assert response.status_code == 409
    status = status_of(response)
    assert status["reason"] == "Conflict"
    assert status["message"] == (
        'Operation cannot be fulfilled on jobs.batch "x": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )


def test_update_without_resource_version_is_unconditional(kube: KubeTarget, namespace: str) -> None:
    url = CMS.format(ns=namespace)
    kube.client.post(url, json=configmap("u"))
    body = configmap("u")
    body["data"] = {"k": "changed"}
    assert kube.client.put(f"{url}/u", json=body).json()["data"] == {"k": "changed"}


def test_update_of_missing_object_is_404(kube: KubeTarget, namespace: str) -> None:
    response = kube.client.put(f"{CMS.format(ns=namespace)}/nope", json=configmap("nope"))
    assert response.status_code == 404


def test_update_with_mismatched_name_is_400(kube: KubeTarget, namespace: str) -> None:
    url = CMS.format(ns=namespace)
    kube.client.post(url, json=configmap("a"))
    response = kube.client.put(f"{url}/a", json=configmap("b"))
    assert response.status_code == 400
    assert status_of(response)["reason"] == "BadRequest"


def test_create_existing_name_is_409_already_exists(kube: KubeTarget, namespace: str) -> None:
    url = JOBS.format(ns=namespace)
    assert kube.client.post(url, json=job_manifest("dup")).status_code == 201
    response = kube.client.post(url, json=job_manifest("dup"))
    assert response.status_code == 409
    status = status_of(response)
    assert status["reason"] == "AlreadyExists"
    assert status["message"] == 'jobs.batch "dup" already exists'
    assert status["details"] == {"name": "dup", "group": "batch", "kind": "jobs"}


def test_no_op_update_keeps_resource_version(kube: KubeTarget, namespace: str) -> None:
    url = CMS.format(ns=namespace)
    created = kube.client.post(url, json=configmap("same")).json()
    again = kube.client.put(f"{url}/same", json=created).json()
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_dry_run_writes_nothing(kube: KubeTarget, namespace: str) -> None:
    url = CMS.format(ns=namespace)
    response = kube.client.post(url, params={"dryRun": "All"}, json=configmap("dry"))
    assert response.status_code == 201
    assert response.json()["metadata"]["uid"]
    assert kube.client.get(f"{url}/dry").status_code == 404
    kube.client.post(url, json=configmap("wet"))
    merge = {"content-type": "application/merge-patch+json"}
    patched = kube.client.patch(
        f"{url}/wet", params={"dryRun": "All"}, json={"data": {"k": "x"}}, headers=merge
    )
    assert patched.json()["data"] == {"k": "x"}
    assert kube.client.get(f"{url}/wet").json()["data"] == {"k": "v"}
    assert kube.client.delete(f"{url}/wet", params={"dryRun": "All"}).status_code == 200
    assert kube.client.get(f"{url}/wet").status_code == 200


def test_status_subresource_isolates_spec_and_status(kube: KubeTarget, namespace: str) -> None:
    url = JOBS.format(ns=namespace)
    created = kube.client.post(url, json=job_manifest("iso", suspend=True)).json()
    assert created["status"] == {}
    main = dict(created, status={"active": 3})
    main["metadata"] = {**created["metadata"], "labels": {"via": "main"}}
    updated = kube.client.put(f"{url}/iso", json=main).json()
    assert updated["status"] == {}
    assert updated["metadata"]["labels"] == {"via": "main"}
    via_status = dict(updated, status={"active": 2}, spec={**updated["spec"], "parallelism": 7})
    via_status["metadata"] = {**updated["metadata"], "labels": {"via": "status"}}
    result = kube.client.put(f"{url}/iso/status", json=via_status).json()
    assert result["status"] == {"active": 2}
    assert result["spec"]["parallelism"] == 1
    # a built-in kind's status strategy resets the spec only: metadata written here is kept
    assert result["metadata"]["labels"] == {"via": "status"}
    assert kube.client.get(f"{url}/iso/status").json()["status"] == {"active": 2}


def test_finalizers_keep_a_deleted_object_until_removed(kube: KubeTarget, namespace: str) -> None:
    url = CMS.format(ns=namespace)
    kube.client.post(url, json=configmap("fin", finalizers=["example.com/hold"]))
    deleting = kube.client.delete(f"{url}/fin")
    assert deleting.status_code == 200
    body = deleting.json()
    assert body["metadata"]["deletionTimestamp"]
    assert body["metadata"]["deletionGracePeriodSeconds"] == 0
    current = kube.client.get(f"{url}/fin").json()
    assert current["metadata"]["deletionTimestamp"]
    current["metadata"]["finalizers"] = ["example.com/hold", "example.com/new"]
    refused = kube.client.put(f"{url}/fin", json=current)
    assert refused.status_code == 422
    current["metadata"]["finalizers"] = []
    assert kube.client.put(f"{url}/fin", json=current).status_code == 200
    assert kube.client.get(f"{url}/fin").status_code == 404


def test_delete_returns_success_status_and_precondition_conflicts(kube: KubeTarget, namespace: str) -> None:
    url = CMS.format(ns=namespace)
    created = kube.client.post(url, json=configmap("del")).json()
    mismatch = kube.client.request("DELETE", f"{url}/del", json={"preconditions": {"uid": "other"}})
    assert mismatch.status_code == 409
    gone = kube.client.delete(f"{url}/del")
    assert gone.status_code == 200
    body = gone.json()
    assert body["kind"] == "Status" and body["status"] == "Success"
    assert body["details"] == {"name": "del", "kind": "configmaps", "uid": created["metadata"]["uid"]}
    assert kube.client.delete(f"{url}/del").status_code == 404


def test_creating_in_a_terminating_namespace_is_forbidden(kube: KubeTarget, namespace: str) -> None:
    url = CMS.format(ns=namespace)
    kube.client.post(url, json=configmap("holder", finalizers=["example.com/hold"]))
    kube.client.delete(f"/api/v1/namespaces/{namespace}")
    response = kube.client.post(url, json=configmap("late"))
    assert response.status_code == 403
    status = status_of(response)
    assert status["reason"] == "Forbidden"
    assert "because it is being terminated" in status["message"]
    holder = kube.client.get(f"{url}/holder").json()
    holder["metadata"]["finalizers"] = []
    kube.client.put(f"{url}/holder", json=holder)
