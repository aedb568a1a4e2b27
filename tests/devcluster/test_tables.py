"""Conformance: server-side printing, the ``meta.k8s.io`` Tables ``kubectl get`` asks for.

Column descriptions are not compared (kubectl never shows them; see devcluster.apiserver.output.printers);
names, types, formats, priorities, cells and the row objects are.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.devcluster.conftest import KubeTarget
from tests.devcluster.helpers import CRDS, crd_established, create_job, eventually, patch_job, status_of

TABLE = "application/json;as=Table;v=v1;g=meta.k8s.io"
KUBECTL_ACCEPT = f"{TABLE},application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
AGE = re.compile(r"^\d+s$")


def table(kube: KubeTarget, path: str, accept: str = KUBECTL_ACCEPT, **params: str) -> dict[str, Any]:
    response = kube.client.get(path, params=params, headers={"Accept": accept})
    assert response.status_code == 200, response.text[:500]
    body: dict[str, Any] = response.json()
    assert body["kind"] == "Table", body
    return body


def columns(body: dict[str, Any]) -> list[tuple[str, str, str, int]]:
    return [(c["name"], c["type"], c["format"], c["priority"]) for c in body["columnDefinitions"]]


def rows_by_name(body: dict[str, Any]) -> dict[str, list[Any]]:
    return {row["object"]["metadata"]["name"]: row["cells"] for row in body["rows"]}


def _gadget_crd() -> dict[str, Any]:
    schema = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    printer_columns = [
        {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
        {"name": "Size", "type": "integer", "jsonPath": ".spec.size", "description": "how big"},
        {"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio"},
        {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
        {"name": "Enabled", "type": "boolean", "jsonPath": ".spec.enabled", "priority": 1},
        {"name": "Tags", "type": "string", "jsonPath": ".spec.tags"},
        {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
    ]
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.tables.example.com"},
        "spec": {
            "group": "tables.example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": schema},
                    "additionalPrinterColumns": printer_columns,
                },
                {"name": "v2", "served": True, "storage": False, "schema": {"openAPIV3Schema": schema}},
            ],
        },
    }


@pytest.fixture
def gadgets(kube: KubeTarget, namespace: str) -> Iterator[str]:
    response = kube.client.post(CRDS, json=_gadget_crd())
    assert response.status_code in {201, 409}, response.text[:500]
    eventually(lambda: crd_established(kube.client, "gadgets.tables.example.com"))
    path = f"/apis/tables.example.com/v1/namespaces/{namespace}/gadgets"
    eventually(lambda: kube.client.get(path).status_code == 200)
    yield path
    kube.client.delete(f"{CRDS}/gadgets.tables.example.com")


def _gadget(name: str, spec: dict[str, Any], status: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "tables.example.com/v1",
        "kind": "Gadget",
        "metadata": {"name": name},
        "spec": spec,
    }
    if status is not None:
        body["status"] = status
    return body


def test_custom_resource_columns_follow_additional_printer_columns(kube: KubeTarget, gadgets: str) -> None:
    conditions = [{"type": "Other", "status": "False"}, {"type": "Ready", "status": "True"}]
    full = {"color": "red", "size": 3, "ratio": 1.5, "enabled": True, "tags": {"b": "<2>", "a": 1}}
    for body in (
        _gadget("full", full, {"conditions": conditions}),
        _gadget("odd", {"color": 7, "size": 2.9, "ratio": 2, "enabled": "yes"}),
        _gadget("bare", {}),
    ):
        assert kube.client.post(gadgets, json=body).status_code == 201
    body = table(kube, gadgets)
    assert columns(body) == [
        ("Name", "string", "name", 0),
        ("Color", "string", "", 0),
        ("Size", "integer", "", 0),
        ("Ratio", "number", "", 0),
        ("Ready", "string", "", 0),
        ("Enabled", "boolean", "", 1),
        ("Tags", "string", "", 0),
        ("Age", "date", "", 0),
    ]
    descriptions = {c["name"]: c["description"] for c in body["columnDefinitions"]}
    assert descriptions["Size"] == "how big"
    assert descriptions["Color"] == "Custom resource definition column (in JSONPath format): .spec.color"
    rows = rows_by_name(body)
    assert rows["full"][:7] == ["full", "red", 3, 1.5, "True", True, '{"a":1,"b":"\\u003c2\\u003e"}']
    # a string column prints any JSON value; the typed columns keep only values of their type
    assert rows["odd"][:7] == ["odd", "7", 2, 2, None, None, None]
    assert rows["bare"][:7] == ["bare", None, None, None, None, None, None]
    assert all(AGE.match(cells[7]) for cells in rows.values())


def test_a_version_without_printer_columns_gets_name_and_age(kube: KubeTarget, gadgets: str) -> None:
    assert kube.client.post(gadgets, json=_gadget("g", {"color": "red"})).status_code == 201
    body = table(kube, gadgets.replace("/v1/", "/v2/"))
    assert columns(body) == [("Name", "string", "name", 0), ("Age", "date", "", 0)]
    [row] = body["rows"]
    assert row["cells"][0] == "g"
    assert AGE.match(row["cells"][1])


def test_include_object_metadata_object_and_none(kube: KubeTarget, gadgets: str) -> None:
    created = kube.client.post(gadgets, json=_gadget("g", {"color": "red"})).json()
    [default] = table(kube, gadgets)["rows"]
    assert default["object"]["kind"] == "PartialObjectMetadata"
    assert default["object"]["apiVersion"] == "meta.k8s.io/v1"
    assert default["object"]["metadata"]["uid"] == created["metadata"]["uid"]
    [full] = table(kube, gadgets, includeObject="Object")["rows"]
    assert full["object"]["apiVersion"] == "tables.example.com/v1"
    assert full["object"]["spec"] == {"color": "red"}
    [bare] = table(kube, gadgets, includeObject="None")["rows"]
    assert bare["object"] is None
    response = kube.client.get(gadgets, params={"includeObject": "All"}, headers={"Accept": KUBECTL_ACCEPT})
    assert response.status_code == 400
    assert status_of(response)["message"] == (
        'Unable to convert to Table as requested: includeObject: Invalid value: "All": '
        "must be 'Metadata', 'Object', 'None', or empty"
    )
    empty = kube.client.get(
        f"{gadgets}?labelSelector=none", params={"includeObject": "All"}, headers={"Accept": KUBECTL_ACCEPT}
    )
    assert empty.status_code == 400, "checked before any row is printed"


def test_single_get_list_metadata_and_negotiation(kube: KubeTarget, gadgets: str) -> None:
    for name in ("a", "b"):
        assert kube.client.post(gadgets, json=_gadget(name, {})).status_code == 201
    single = table(kube, f"{gadgets}/a")
    stored = kube.client.get(f"{gadgets}/a").json()
    assert single["metadata"] == {"resourceVersion": stored["metadata"]["resourceVersion"]}
    assert [row["cells"][0] for row in single["rows"]] == ["a"]
    page = table(kube, gadgets, limit="1")
    assert len(page["rows"]) == 1
    assert page["metadata"]["continue"]
    assert page["metadata"]["remainingItemCount"] == 1
    beta = table(kube, gadgets, accept="application/json;as=Table;v=v1beta1;g=meta.k8s.io")
    assert beta["apiVersion"] == "meta.k8s.io/v1beta1"
    plain = kube.client.get(gadgets, headers={"Accept": "application/json"}).json()
    assert plain["kind"] == "GadgetList"


def test_watch_as_table_sends_headers_once(kube: KubeTarget, gadgets: str) -> None:
    for name in ("a", "b"):
        assert kube.client.post(gadgets, json=_gadget(name, {"color": name})).status_code == 201
    events = []
    params = {"watch": "true", "timeoutSeconds": "1"}
    with kube.client.stream("GET", gadgets, params=params, headers={"Accept": KUBECTL_ACCEPT}) as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if line.strip():
                events.append(json.loads(line))
    assert [(e["type"], e["object"]["kind"]) for e in events] == [("ADDED", "Table"), ("ADDED", "Table")]
    assert columns(events[0]["object"])[1] == ("Color", "string", "", 0)
    assert events[1]["object"]["columnDefinitions"] is None
    assert [e["object"]["rows"][0]["cells"][:2] for e in events] == [["a", "a"], ["b", "b"]]


def test_job_columns(kube: KubeTarget, namespace: str) -> None:
    create_job(kube.client, namespace, "done", completions=2, parallelism=2)
    create_job(kube.client, namespace, "solo", suspend=True)
    create_job(kube.client, namespace, "wide", parallelism=3)
    status = {
        "startTime": "2026-01-01T00:00:00Z",
        "completionTime": "2026-01-01T00:03:02Z",
        "succeeded": 2,
        "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": "2026-01-01T00:03:02Z"},
            {"type": "Complete", "status": "True", "lastTransitionTime": "2026-01-01T00:03:02Z"},
        ],
    }
    response = patch_job(kube.client, namespace, "done", {"status": status}, status=True)
    assert response.status_code == 200, response.text
    body = table(kube, f"/apis/batch/v1/namespaces/{namespace}/jobs")
    assert columns(body) == [
        ("Name", "string", "name", 0),
        ("Status", "string", "", 0),
        ("Completions", "string", "", 0),
        ("Duration", "string", "", 0),
        ("Age", "string", "", 0),
        ("Containers", "string", "", 1),
        ("Images", "string", "", 1),
        ("Selector", "string", "", 1),
    ]
    rows = rows_by_name(body)
    uid = kube.client.get(f"/apis/batch/v1/namespaces/{namespace}/jobs/done").json()["metadata"]["uid"]
    assert rows["done"][:4] == ["done", "Complete", "2/2", "3m2s"]
    assert rows["done"][5:] == ["main", "busybox", f"batch.kubernetes.io/controller-uid={uid}"]
    assert rows["solo"][1:4] == [
        "Running",
        "0/1",
        "",
    ]  # suspended, but without the job controller's condition
    assert rows["wide"][2] == "0/1 of 3"


def test_core_kinds_columns(kube: KubeTarget, namespace: str) -> None:
    ns = table(kube, f"/api/v1/namespaces/{namespace}")
    assert columns(ns) == [
        ("Name", "string", "name", 0),
        ("Status", "string", "", 0),
        ("Age", "string", "", 0),
    ]
    assert ns["rows"][0]["cells"][:2] == [namespace, "Active"]
    cm = {"metadata": {"name": "cm"}, "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}}
    assert kube.client.post(f"/api/v1/namespaces/{namespace}/configmaps", json=cm).status_code == 201
    cms = rows_by_name(table(kube, f"/api/v1/namespaces/{namespace}/configmaps"))
    assert cms["cm"][:2] == ["cm", 3]
    secret = {"metadata": {"name": "s"}, "type": "Opaque", "data": {"k": "dg=="}}
    assert kube.client.post(f"/api/v1/namespaces/{namespace}/secrets", json=secret).status_code == 201
    secrets = table(kube, f"/api/v1/namespaces/{namespace}/secrets/s")
    assert [c[0] for c in columns(secrets)] == ["Name", "Type", "Data", "Age"]
    assert secrets["rows"][0]["cells"][:3] == ["s", "Opaque", 1]


def test_event_columns_for_core_and_events_api(kube: KubeTarget, namespace: str) -> None:
    event = {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": {"name": "e1"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "example.com/ctl",
        "reportingInstance": "ctl-1",
        "action": "Did",
        "reason": "Done",
        "type": "Normal",
        "note": "  it is done  ",
        "regarding": {"kind": "ConfigMap", "namespace": namespace, "name": "cm", "apiVersion": "v1"},
    }
    response = kube.client.post(f"/apis/events.k8s.io/v1/namespaces/{namespace}/events", json=event)
    assert response.status_code == 201, response.text
    expected_columns = [
        ("Last Seen", "string", "", 0),
        ("Type", "string", "", 0),
        ("Reason", "string", "", 0),
        ("Object", "string", "", 0),
        ("Subobject", "string", "", 1),
        ("Source", "string", "", 1),
        ("Message", "string", "", 0),
        ("First Seen", "string", "", 1),
        ("Count", "string", "", 1),
        ("Name", "string", "name", 1),
    ]
    for path in (
        f"/api/v1/namespaces/{namespace}/events",
        f"/apis/events.k8s.io/v1/namespaces/{namespace}/events",
    ):
        body = table(kube, path)
        assert columns(body) == expected_columns
        [row] = body["rows"]
        last, *middle, first, count, name = row["cells"]
        assert middle == ["Normal", "Done", "configmap/cm", "", "example.com/ctl, ctl-1", "it is done"]
        assert (count, name) == (1, "e1")
        assert re.match(r"^\d+(d|y)", last) and last == first


def test_webhook_configuration_and_priority_class_columns(kube: KubeTarget) -> None:
    pc = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "tables-high"},
        "value": 1000,
    }
    response = kube.client.post("/apis/scheduling.k8s.io/v1/priorityclasses", json=pc)
    assert response.status_code == 201, response.text
    try:
        body = table(kube, "/apis/scheduling.k8s.io/v1/priorityclasses/tables-high")
        assert columns(body) == [
            ("Name", "string", "name", 0),
            ("Value", "integer", "", 0),
            ("Global-Default", "boolean", "", 0),
            ("Age", "string", "", 0),
            ("PreemptionPolicy", "string", "", 0),
        ]
        assert body["rows"][0]["cells"][:3] == ["tables-high", 1000, False]
    finally:
        kube.client.delete("/apis/scheduling.k8s.io/v1/priorityclasses/tables-high")
    hooks = table(kube, "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations")
    assert [c[:2] for c in columns(hooks)] == [("Name", "string"), ("Webhooks", "integer"), ("Age", "string")]
    crds = table(kube, CRDS, limit="1")
    assert [c[:2] for c in columns(crds)] == [("Name", "string"), ("Created At", "date")]


def test_pod_columns_of_a_pod_that_never_ran(kube: KubeTarget, namespace: str) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "idle"},
        # bound to a node that does not exist: no kubelet ever runs it, on a real cluster either
        "spec": {"nodeName": "no-such-node", "containers": [{"name": "c", "image": "busybox"}]},
    }
    response = kube.client.post(f"/api/v1/namespaces/{namespace}/pods", json=pod)
    assert response.status_code == 201, response.text
    body = table(kube, f"/api/v1/namespaces/{namespace}/pods/idle")
    assert columns(body) == [
        ("Name", "string", "name", 0),
        ("Ready", "string", "", 0),
        ("Status", "string", "", 0),
        ("Restarts", "string", "", 0),
        ("Age", "string", "", 0),
        ("IP", "string", "", 1),
        ("Node", "string", "", 1),
        ("Nominated Node", "string", "", 1),
        ("Readiness Gates", "string", "", 1),
    ]
    name, ready, status, restarts, _age, ip, node, nominated, gates = body["rows"][0]["cells"]
    assert (name, ready, status, restarts) == ("idle", "0/1", "Pending", "0")
    assert (ip, node, nominated, gates) == ("<none>", "no-such-node", "<none>", "<none>")
