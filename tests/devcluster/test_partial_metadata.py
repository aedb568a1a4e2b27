"""Conformance: metadata-only answers (``Accept: ...;as=PartialObjectMetadata;g=meta.k8s.io;v=v1``).

kueue-bridge's writers ask for them when they drop the answer (``KubeClient``, ``decode=False``), so
the server encodes and sends metadata instead of the whole object; client-go's metadata client
asks for them too. What the real kube-apiserver answers is in ``devcluster.apiserver.output.partial``.
"""

from __future__ import annotations

import threading
from typing import Any

import orjson

from tests.devcluster.conftest import KubeTarget
from tests.devcluster.helpers import (
    MERGE_PATCH,
    configmap,
    create_job,
    jobs_url,
    status_of,
)

OBJECT = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
LIST = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
#: what kueue-bridge's client sends: plain JSON stays acceptable for a server without the rendering
WITH_FALLBACK = f"{OBJECT}, application/json"


def assert_partial(body: dict[str, Any], name: str, *, api_version: str = "meta.k8s.io/v1") -> None:
    assert body["kind"] == "PartialObjectMetadata", body
    assert body["apiVersion"] == api_version
    assert set(body) == {"kind", "apiVersion", "metadata"}
    assert body["metadata"]["name"] == name and body["metadata"]["resourceVersion"]


def test_writes_and_reads_answer_with_metadata_only(kube: KubeTarget, namespace: str) -> None:
    headers = {"Accept": WITH_FALLBACK}
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    created = kube.client.post(url, json=configmap("cm"), headers=headers)
    assert created.status_code == 201
    assert_partial(created.json(), "cm")
    assert created.json()["metadata"]["uid"]
    patched = kube.client.patch(f"{url}/cm", json={"data": {"k": "w"}}, headers={**MERGE_PATCH, **headers})
    assert patched.status_code == 200
    assert_partial(patched.json(), "cm")
    assert patched.json()["metadata"]["resourceVersion"] != created.json()["metadata"]["resourceVersion"]
    got = kube.client.get(f"{url}/cm", headers={"Accept": OBJECT})
    assert_partial(got.json(), "cm")
    update = {**configmap("cm"), "metadata": {**got.json()["metadata"]}, "data": {"k": "x"}}
    updated = kube.client.put(f"{url}/cm", json=update, headers=headers)
    assert updated.status_code == 200
    assert_partial(updated.json(), "cm")
    assert kube.client.get(f"{url}/cm").json()["data"] == {"k": "x"}  # the writes were made
    v1beta1 = kube.client.get(f"{url}/cm", headers={"Accept": OBJECT.replace("v=v1", "v=v1beta1")})
    assert_partial(v1beta1.json(), "cm", api_version="meta.k8s.io/v1beta1")


def test_status_writes_and_errors(kube: KubeTarget, namespace: str) -> None:
    create_job(kube.client, namespace, "j", suspend=True)
    headers = {**MERGE_PATCH, "Accept": WITH_FALLBACK}
    status = kube.client.patch(
        jobs_url(namespace, "j", "status"), json={"status": {"active": 0}}, headers=headers
    )
    assert status.status_code == 200
    assert_partial(status.json(), "j")
    missing = kube.client.patch(jobs_url(namespace, "ghost"), json={"spec": {}}, headers=headers)
    assert missing.status_code == 404
    assert status_of(missing)["reason"] == "NotFound"  # errors are Status objects, as always


def test_lists_want_the_list_kind(kube: KubeTarget, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    for name in ("a", "b"):
        assert kube.client.post(url, json=configmap(name, labels={"partial": "yes"})).status_code == 201
    listed = kube.client.get(url, params={"labelSelector": "partial=yes"}, headers={"Accept": LIST})
    assert listed.status_code == 200
    body = listed.json()
    assert (body["kind"], body["apiVersion"]) == ("PartialObjectMetadataList", "meta.k8s.io/v1")
    assert body["metadata"]["resourceVersion"]
    assert sorted(item["metadata"]["name"] for item in body["items"]) == ["a", "b"]
    for item in body["items"]:
        assert_partial(item, item["metadata"]["name"])
    wrong = kube.client.get(url, headers={"Accept": WITH_FALLBACK})
    assert wrong.status_code == 406
    assert status_of(wrong)["reason"] == "NotAcceptable"
    assert status_of(wrong)["message"].startswith(
        "you requested PartialObjectMetadata, but the requested object is a list (*"
    )
    one = kube.client.get(f"{url}/a", headers={"Accept": LIST})
    assert one.status_code == 406
    assert status_of(one)["message"] == (
        "you requested PartialObjectMetadataList, but the requested object is not a list (*core.ConfigMap)"
    )


def test_a_table_or_plain_json_first_wins(kube: KubeTarget, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    assert kube.client.post(url, json=configmap("c")).status_code == 201
    plain = kube.client.get(f"{url}/c", headers={"Accept": f"application/json, {OBJECT}"}).json()
    assert plain["kind"] == "ConfigMap"
    table = "application/json;as=Table;v=v1;g=meta.k8s.io"
    assert kube.client.get(f"{url}/c", headers={"Accept": f"{table}, {OBJECT}"}).json()["kind"] == "Table"
    unknown = f"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v9, {OBJECT}"
    assert_partial(kube.client.get(f"{url}/c", headers={"Accept": unknown}).json(), "c")


def test_a_watch_streams_metadata_only_objects(kube: KubeTarget, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    assert kube.client.post(url, json=configmap("w")).status_code == 201
    version = kube.client.get(url).json()["metadata"]["resourceVersion"]
    events: list[dict[str, Any]] = []

    def follow() -> None:
        params = {"watch": "true", "resourceVersion": version, "timeoutSeconds": "3"}
        with kube.client.stream("GET", url, params=params, headers={"Accept": OBJECT}) as response:
            assert response.status_code == 200
            for line in response.iter_lines():
                if line.strip():
                    events.append(orjson.loads(line))

    watcher = threading.Thread(target=follow)
    watcher.start()  # it starts from ``version``: the patch below is seen however soon it is made
    patch = kube.client.patch(f"{url}/w", json={"data": {"k": "z"}}, headers=MERGE_PATCH)
    assert patch.status_code == 200
    watcher.join(10)
    assert [event["type"] for event in events] == ["MODIFIED"]
    assert_partial(events[0]["object"], "w")
