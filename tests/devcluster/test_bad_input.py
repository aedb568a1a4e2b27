"""Conformance: hostile input gets a Kubernetes Status, never a 500, a crash or a partial write."""

from __future__ import annotations

import pytest

from tests.devcluster.conftest import KubeTarget
from tests.devcluster.helpers import configmap, create_job, job_manifest, patch_job, status_of


def _alive(kube: KubeTarget) -> None:
    assert kube.client.get("/api/v1/namespaces/default").status_code == 200


def test_body_over_three_mebibytes_is_413(kube: KubeTarget, namespace: str) -> None:
    body = configmap("huge")
    body["data"] = {"k": "x" * (3 * 1024 * 1024 + 10)}
    response = kube.client.post(f"/api/v1/namespaces/{namespace}/configmaps", json=body)
    assert response.status_code == 413
    assert status_of(response)["reason"] == "RequestEntityTooLarge"
    assert kube.client.get(f"/api/v1/namespaces/{namespace}/configmaps/huge").status_code == 404
    _alive(kube)


@pytest.mark.parametrize(
    ("garbage", "why"),
    [
        (b"{not json", "invalid character 'n' looking for beginning of object key string ({not json)"),
        (b"\xff\xfe\x00", "invalid character '\u00ff' looking for beginning of value (fffe00)"),
        (b'{"a": 1 "b"}', 'invalid character \'"\' after object key:value pair ({"a": 1 "b"})'),
        (b"[1 2]", "invalid character '2' after array element (5b3120325d)"),
        (b'{"a" 1}', "invalid character '1' after object key ({\"a\" 1})"),
        (b"", "unexpected end of JSON input (<empty>)"),
        (
            b"[1, 2, 3]",
            'json: cannot unmarshal array into Go value of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
            'Kind string "json:\\"kind,omitempty\\"" } (5b312c20322c20335d)',
        ),
        (
            b"42",
            'json: cannot unmarshal number into Go value of type struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
            'Kind string "json:\\"kind,omitempty\\"" } (3432)',
        ),
    ],
)
def test_garbage_bodies_are_400(kube: KubeTarget, namespace: str, garbage: bytes, why: str) -> None:
    response = kube.client.post(
        f"/api/v1/namespaces/{namespace}/configmaps",
        content=garbage,
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 400, response.text
    body = status_of(response)
    assert body["reason"] == "BadRequest"
    assert body["message"] == (
        f"the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: {why}"
    )
    _alive(kube)


def test_a_null_body_is_an_empty_object_of_a_builtin_kind(kube: KubeTarget, namespace: str) -> None:
    """Go decodes ``null`` into an empty ConfigMap: the answer is the 422 for its missing name."""
    response = kube.client.post(
        f"/api/v1/namespaces/{namespace}/configmaps",
        content=b"null",
        headers={"content-type": "application/json"},
    )
    assert response.status_code == 422, response.text
    assert status_of(response)["message"] == (
        'ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required'
    )


def test_wrong_content_type_is_415(kube: KubeTarget, namespace: str) -> None:
    response = kube.client.post(
        f"/api/v1/namespaces/{namespace}/configmaps",
        content=b"name=x",
        headers={"content-type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 415
    assert status_of(response)["reason"] == "UnsupportedMediaType"


def test_yaml_bodies_are_accepted(kube: KubeTarget, namespace: str) -> None:
    manifest = b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: from-yaml\ndata:\n  a: b\n"
    response = kube.client.post(
        f"/api/v1/namespaces/{namespace}/configmaps",
        content=manifest,
        headers={"content-type": "application/yaml"},
    )
    assert response.status_code == 201


@pytest.mark.parametrize(
    "body",
    [
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "kind-mismatch"}},
        {"apiVersion": "v2", "kind": "ConfigMap", "metadata": {"name": "version-mismatch"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": "not-an-object"},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "other"}},
    ],
)
def test_mismatched_objects_are_400(kube: KubeTarget, namespace: str, body: dict) -> None:
    response = kube.client.post(f"/api/v1/namespaces/{namespace}/configmaps", json=body)
    assert response.status_code == 400, response.text
    _alive(kube)


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        (
            {"name": ""},
            'ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required',
        ),
        (
            {"name": "ok", "ownerReferences": [{"kind": "X"}]},
            'ConfigMap "ok" is invalid: [metadata.ownerReferences.apiVersion: Invalid value: "": version must not be '
            'empty, metadata.ownerReferences.name: Invalid value: "": must not be empty, '
            'metadata.ownerReferences.uid: Invalid value: "": must not be empty]',
        ),
    ],
)
def test_invalid_metadata_is_422_without_partial_write(
    kube: KubeTarget, namespace: str, metadata: dict, message: str
) -> None:
    response = kube.client.post(
        f"/api/v1/namespaces/{namespace}/configmaps",
        json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata},
    )
    assert response.status_code == 422, response.text
    assert status_of(response)["message"] == message
    listing = kube.client.get(f"/api/v1/namespaces/{namespace}/configmaps").json()["items"]
    assert [item["metadata"]["name"] for item in listing] == ["kube-root-ca.crt"]


@pytest.mark.parametrize(
    ("metadata", "why"),
    [
        (
            {"name": "ok", "labels": {"a": 5}},
            "number into Go struct field ObjectMeta.metadata.labels of type string",
        ),
        (
            {"name": "ok", "labels": ["x"]},
            "array into Go struct field ObjectMeta.metadata.labels of type map[string]string",
        ),
        (
            {"name": "ok", "finalizers": "nope"},
            "string into Go struct field ObjectMeta.metadata.finalizers of type []string",
        ),
        ({"name": 12}, "number into Go struct field ObjectMeta.metadata.name of type string"),
        (
            {"name": "ok", "generation": 1.5},
            "number 1.5 into Go struct field ObjectMeta.metadata.generation of type int64",
        ),
        (
            {"name": "ok", "ownerReferences": [{"kind": 5}]},
            "number into Go struct field OwnerReference.metadata.ownerReferences.kind of type string",
        ),
        ("str", "string into Go struct field ConfigMap.metadata of type v1.ObjectMeta"),
    ],
)
def test_metadata_of_the_wrong_type_is_400_as_go_decodes_it(
    kube: KubeTarget, namespace: str, metadata: object, why: str
) -> None:
    """kube decodes a body into the kind's Go struct before validating: a wrong type is a 400."""
    response = kube.client.post(
        f"/api/v1/namespaces/{namespace}/configmaps",
        json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata},
    )
    assert response.status_code == 400, response.text
    assert status_of(response)["message"] == (
        f'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal {why}'
    )
    listing = kube.client.get(f"/api/v1/namespaces/{namespace}/configmaps").json()["items"]
    assert [item["metadata"]["name"] for item in listing] == ["kube-root-ca.crt"]


def test_null_label_values_decode_as_empty_strings(kube: KubeTarget, namespace: str) -> None:
    response = kube.client.post(
        f"/api/v1/namespaces/{namespace}/configmaps",
        json={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "nulls", "labels": {"a": None}}},
    )
    assert response.status_code == 201, response.text
    assert response.json()["metadata"]["labels"] == {"a": ""}


def test_unsupported_methods_are_405(kube: KubeTarget, namespace: str) -> None:
    response = kube.client.put(f"/api/v1/namespaces/{namespace}/configmaps", json={})
    assert response.status_code == 405
    assert status_of(response)["reason"] == "MethodNotAllowed"


@pytest.mark.parametrize(
    ("method", "suffix", "params", "message"),
    [
        ("GET", "", {"limit": "many"}, 'strconv.ParseInt: parsing "many": invalid syntax'),
        ("GET", "", {"timeoutSeconds": "abc"}, 'strconv.ParseInt: parsing "abc": invalid syntax'),
        (
            "GET",
            "",
            {"resourceVersion": "abc"},
            'invalid resource version: resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax',
        ),
        (
            "GET",
            "",
            {"continue": "garbage!"},
            "invalid continue token: continue key is not valid: illegal base64 data at input byte 7",
        ),
        ("DELETE", "/x", {"gracePeriodSeconds": "x"}, 'strconv.ParseInt: parsing "x": invalid syntax'),
    ],
)
def test_query_parameters_that_do_not_convert_are_400(
    kube: KubeTarget, namespace: str, method: str, suffix: str, params: dict, message: str
) -> None:
    response = kube.client.request(
        method, f"/api/v1/namespaces/{namespace}/configmaps{suffix}", params=params
    )
    assert response.status_code == 400, response.text
    assert (status_of(response)["reason"], status_of(response)["message"]) == ("BadRequest", message)


@pytest.mark.parametrize(
    ("method", "suffix", "params", "kind", "cause"),
    [
        (
            "POST",
            "",
            {"dryRun": "Sometimes"},
            "CreateOptions",
            'dryRun: Unsupported value: ["Sometimes"]: supported values: "All"',
        ),
        (
            "PUT",
            "/held",
            {"dryRun": ""},
            "UpdateOptions",
            'dryRun: Unsupported value: [""]: supported values: "All"',
        ),
        (
            "PATCH",
            "/held",
            {"dryRun": "x"},
            "PatchOptions",
            'dryRun: Unsupported value: ["x"]: supported values: "All"',
        ),
        (
            "DELETE",
            "/held",
            {"dryRun": "x"},
            "DeleteOptions",
            'dryRun: Unsupported value: ["x"]: supported values: "All"',
        ),
        (
            "DELETE",
            "/missing",
            {"propagationPolicy": "Sideways"},
            "DeleteOptions",
            'propagationPolicy: Unsupported value: "Sideways": supported values: "Foreground", "Background", "Orphan", "nil"',
        ),
        (
            "POST",
            "",
            {"fieldManager": "x" * 129},
            "CreateOptions",
            "fieldManager: Too long: may not be more than 128 bytes",
        ),
        (
            "POST",
            "",
            {"fieldValidation": "Loose"},
            "CreateOptions",
            'fieldValidation: Unsupported value: "Loose": supported values: "", "Ignore", "Strict", "Warn"',
        ),
        (
            "GET",
            "",
            {"resourceVersionMatch": "Exact"},
            "ListOptions",
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided",
        ),
        (
            "GET",
            "",
            {"resourceVersionMatch": "Bogus", "resourceVersion": "1"},
            "ListOptions",
            'resourceVersionMatch: Unsupported value: "Bogus": supported values: "Exact", "NotOlderThan", ""',
        ),
        (
            "GET",
            "",
            {"resourceVersionMatch": "Exact", "resourceVersion": "0"},
            "ListOptions",
            'resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"',
        ),
        (
            "GET",
            "",
            {"resourceVersionMatch": "Exact", "resourceVersion": "1", "continue": "x"},
            "ListOptions",
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided",
        ),
    ],
)
def test_invalid_options_are_422_before_anything_else(
    kube: KubeTarget, namespace: str, method: str, suffix: str, params: dict, kind: str, cause: str
) -> None:
    """Options are validated before the body or the object: a DELETE of a missing object with a bad
    policy is a 422, not a 404, and nothing is written."""
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    assert kube.client.post(url, json=configmap("held")).status_code == 201
    body = {"POST": configmap("d"), "PUT": configmap("held"), "PATCH": {"data": {"k": "changed"}}}.get(method)
    headers = {"content-type": "application/merge-patch+json"} if method == "PATCH" else {}
    response = kube.client.request(method, f"{url}{suffix}", params=params, json=body, headers=headers)
    assert response.status_code == 422, response.text
    assert status_of(response)["message"] == f'{kind}.meta.k8s.io "" is invalid: {cause}'
    assert [i["metadata"]["name"] for i in kube.client.get(url).json()["items"]] == [
        "held",
        "kube-root-ca.crt",
    ]
    assert kube.client.get(f"{url}/held").json()["data"] == {"k": "v"}


@pytest.mark.parametrize(
    "spec",
    [
        {"template": "x"},
        {"parallelism": "2"},
        {"selector": [1]},
        {"selector": {"matchExpressions": [{"key": ["a"], "operator": "In", "values": ["b"]}]}},
        {"managedBy": 5},
        {"completionMode": {"a": 1}},
        {"podReplacementPolicy": ["Failed"]},
    ],
)
def test_job_spec_fields_of_the_wrong_shape_are_rejected(
    kube: KubeTarget, namespace: str, spec: dict
) -> None:
    body = job_manifest("odd", suspend=True, **spec)
    response = kube.client.post(f"/apis/batch/v1/namespaces/{namespace}/jobs", json=body)
    assert response.status_code in (400, 422), response.text
    status_of(response)
    _alive(kube)


@pytest.mark.parametrize(
    "status",
    [
        "x",
        {"conditions": 5},
        {"conditions": ["x", 5]},
        {"uncountedTerminatedPods": {"succeeded": [{"a": 1}]}},
        {"startTime": 5},
        {"active": "x"},
        {"completedIndexes": ["0"]},
    ],
)
def test_job_status_of_the_wrong_shape_never_breaks_the_server(
    kube: KubeTarget, namespace: str, status: object
) -> None:
    """Kube refuses these at decoding (400); the devcluster may say 422 or store an ignorable value."""
    create_job(kube.client, namespace, "odd", suspend=True)
    response = patch_job(kube.client, namespace, "odd", {"status": status}, status=True)
    assert response.status_code in (200, 400, 422), response.text
    if response.status_code != 200:
        status_of(response)
    _alive(kube)
    assert kube.client.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/odd").status_code == 200
