"""Conformance: server-side apply and field ownership (``metadata.managedFields``).

Every expectation here was read from a real kube-apiserver 1.36.2 (the kit in
``../shared/real-cluster``) and the same tests pass there (``KUEUE_BRIDGE_TEST_KUBECONFIG``). Entries
are compared as (manager, operation, apiVersion, subresource, has a time, fieldsV1), sorted, because
the real server orders entries by their time in seconds and a test may straddle a second.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.devcluster.conftest import KubeTarget
from tests.devcluster.helpers import CONFORMANCE_MANAGER, eventually, status_of

APPLY = {"content-type": "application/apply-patch+yaml"}
MERGE = {"content-type": "application/merge-patch+json"}
JSON_PATCH = {"content-type": "application/json-patch+json"}
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
WORKLOADS_CRD = "workloads.kueue.x-k8s.io"
T0 = "2026-01-01T00:00:00Z"

Entry = tuple[str, str, str, str, bool, dict[str, Any]]


def entries(obj: dict[str, Any]) -> list[Entry]:
    """managedFields without timestamps: (manager, operation, apiVersion, subresource, timed, fieldsV1)."""
    return sorted(
        (
            (
                e["manager"],
                e["operation"],
                e["apiVersion"],
                e.get("subresource", ""),
                "time" in e,
                e["fieldsV1"],
            )
            for e in obj["metadata"].get("managedFields") or []
        ),
        key=lambda e: e[:4],
    )


def times(obj: dict[str, Any]) -> dict[str, str | None]:
    return {e["manager"]: e.get("time") for e in obj["metadata"].get("managedFields") or []}


def apply(
    kube: KubeTarget, url: str, body: dict[str, Any], manager: str, *, force: bool = False
) -> httpx.Response:
    params = {"fieldManager": manager}
    if force:
        params["force"] = "true"
    # JSON is YAML; it also spares the test YAML 1.1's booleans (the real server reads `y:` as true)
    return kube.client.patch(url, params=params, content=json.dumps(body).encode(), headers=APPLY)


def ok(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code in {200, 201}, response.text[:2000]
    body: dict[str, Any] = response.json()
    return body


def configmap(name: str, data: dict[str, str] | None = None, **meta: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}}
    if data is not None:
        body["data"] = data
    return body


def cm_url(namespace: str, name: str = "") -> str:
    return f"/api/v1/namespaces/{namespace}/configmaps" + (f"/{name}" if name else "")


# -- apply on a built-in kind ---------------------------------------------------------------------
def test_apply_creates_the_object_with_exactly_the_applied_fields_owned(
    kube: KubeTarget, namespace: str
) -> None:
    created = apply(
        kube, cm_url(namespace, "a"), configmap("a", {"x": "1", "y": "2"}, labels={"l": "1"}), "one"
    )
    assert created.status_code == 201, created.text
    obj = created.json()
    assert obj["data"] == {"x": "1", "y": "2"}
    assert entries(obj) == [
        (
            "one",
            "Apply",
            "v1",
            "",
            True,
            {"f:data": {"f:x": {}, "f:y": {}}, "f:metadata": {"f:labels": {"f:l": {}}}},
        )
    ]
    # the real server's serialisation order: fields sorted, Go's entry field order
    entry = obj["metadata"]["managedFields"][0]
    assert list(entry) == ["manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1"]
    assert list(entry["fieldsV1"]) == ["f:data", "f:metadata"]
    again = apply(
        kube, cm_url(namespace, "a"), configmap("a", {"x": "1", "y": "2"}, labels={"l": "1"}), "one"
    )
    assert again.status_code == 200
    assert again.json()["metadata"]["resourceVersion"] == obj["metadata"]["resourceVersion"]


def test_apply_removes_the_fields_its_manager_stopped_sending(kube: KubeTarget, namespace: str) -> None:
    url = cm_url(namespace, "r")
    ok(apply(kube, url, configmap("r", {"x": "1", "y": "2"}, labels={"l": "1"}), "one"))
    obj = ok(apply(kube, url, configmap("r", {"x": "1"}), "one"))
    assert obj["data"] == {"x": "1"}
    assert "labels" not in obj["metadata"]
    assert entries(obj) == [("one", "Apply", "v1", "", True, {"f:data": {"f:x": {}}})]
    obj = ok(apply(kube, url, configmap("r"), "one"))
    assert "data" not in obj
    assert "managedFields" not in obj["metadata"]  # an entry whose set became empty is dropped


def test_a_field_two_appliers_own_survives_until_both_drop_it(kube: KubeTarget, namespace: str) -> None:
    url = cm_url(namespace, "s")
    first = ok(apply(kube, url, configmap("s", {"a": "1", "b": "2"}), "one"))
    shared = ok(apply(kube, url, configmap("s", {"a": "1"}), "two"))
    # nothing changed in the object: "two" now co-owns a, its entry has no time, "one" keeps its own
    assert shared["metadata"]["resourceVersion"] != first["metadata"]["resourceVersion"]
    assert entries(shared) == [
        ("one", "Apply", "v1", "", True, {"f:data": {"f:a": {}, "f:b": {}}}),
        ("two", "Apply", "v1", "", False, {"f:data": {"f:a": {}}}),
    ]
    assert [e["manager"] for e in shared["metadata"]["managedFields"]] == ["two", "one"]
    assert times(shared)["one"] == times(first)["one"]
    dropped = ok(apply(kube, url, configmap("s", {}), "one"))
    assert dropped["data"] == {"a": "1"}  # b was one's alone; a is still two's
    assert entries(dropped) == [
        ("one", "Apply", "v1", "", True, {"f:data": {}}),
        ("two", "Apply", "v1", "", False, {"f:data": {"f:a": {}}}),
    ]
    gone = ok(apply(kube, url, configmap("s"), "two"))
    assert "data" not in gone  # emptied: a built-in object omits the empty map, though one owns it
    assert entries(gone) == [("one", "Apply", "v1", "", True, {"f:data": {}})]


def test_apply_conflict_answers_409_naming_each_field_and_manager(kube: KubeTarget, namespace: str) -> None:
    url = cm_url(namespace, "c")
    ok(apply(kube, url, configmap("c", {"a": "1", "b": "2"}), "one"))
    ok(apply(kube, url, configmap("c", {"a": "1"}), "two"))
    single = apply(kube, url, configmap("c", {"b": "9"}), "three")
    assert single.status_code == 409
    body = status_of(single)
    assert (body["reason"], body["message"]) == (
        "Conflict",
        'Apply failed with 1 conflict: conflict with "one": .data.b',
    )
    assert body["details"] == {
        "causes": [{"reason": "FieldManagerConflict", "message": 'conflict with "one"', "field": ".data.b"}]
    }
    several = status_of(apply(kube, url, configmap("c", {"a": "9", "b": "8"}), "three"))
    assert several["message"] == (
        'Apply failed with 3 conflicts: conflicts with "one":\n- .data.a\n- .data.b\n'
        'conflicts with "two":\n- .data.a'
    )
    causes = sorted((c["message"], c["field"], c["reason"]) for c in several["details"]["causes"])
    assert causes == [
        ('conflict with "one"', ".data.a", "FieldManagerConflict"),
        ('conflict with "one"', ".data.b", "FieldManagerConflict"),
        ('conflict with "two"', ".data.a", "FieldManagerConflict"),
    ]
    assert kube.client.get(url).json()["data"] == {"a": "1", "b": "2"}


def test_forced_apply_takes_the_fields_from_their_owners(kube: KubeTarget, namespace: str) -> None:
    url = cm_url(namespace, "f")
    ok(apply(kube, url, configmap("f", {"a": "1", "b": "2"}), "one"))
    ok(apply(kube, url, configmap("f", {"a": "1"}), "two"))
    forced = ok(apply(kube, url, configmap("f", {"a": "9"}), "three", force=True))
    assert forced["data"] == {"a": "9", "b": "2"}
    assert entries(forced) == [
        ("one", "Apply", "v1", "", True, {"f:data": {"f:b": {}}}),
        ("three", "Apply", "v1", "", True, {"f:data": {"f:a": {}}}),
    ]
    # "one" no longer owns a: dropping it from its configuration leaves it to "three"
    assert ok(apply(kube, url, configmap("f", {"b": "2"}), "one"))["data"] == {"a": "9", "b": "2"}


def test_updates_take_ownership_without_conflicts(kube: KubeTarget, namespace: str) -> None:
    url = cm_url(namespace, "u")
    ok(apply(kube, url, configmap("u", {"a": "1", "b": "2"}), "one"))
    patched = ok(
        kube.client.patch(
            url, params={"fieldManager": "editor"}, json={"data": {"a": "5", "z": "1"}}, headers=MERGE
        )
    )
    assert entries(patched) == [
        ("editor", "Update", "v1", "", True, {"f:data": {"f:a": {}, "f:z": {}}}),
        ("one", "Apply", "v1", "", True, {"f:data": {"f:b": {}}}),
    ]
    # an update that changes nothing records nothing and writes nothing
    same = ok(
        kube.client.patch(url, params={"fieldManager": "idle"}, json={"data": {"a": "5"}}, headers=MERGE)
    )
    assert same["metadata"]["resourceVersion"] == patched["metadata"]["resourceVersion"]
    assert same["metadata"]["managedFields"] == patched["metadata"]["managedFields"]
    # without fieldManager the manager is the user-agent's first segment
    ops = [{"op": "replace", "path": "/data/b", "value": "7"}]
    by_agent = ok(
        kube.client.patch(url, json=ops, headers={**JSON_PATCH, "user-agent": "agent-x/1.2 (linux)"})
    )
    assert ("agent-x", "Update", "v1", "", True, {"f:data": {"f:b": {}}}) in entries(by_agent)
    assert "one" not in {e[0] for e in entries(by_agent)}  # its last field went to agent-x
    conflict = status_of(apply(kube, url, configmap("u", {"a": "6"}), "one"))
    assert conflict["message"] == 'Apply failed with 1 conflict: conflict with "editor" using v1: .data.a'
    # a strategic merge patch takes what it changes the same way
    strategic = {"content-type": "application/strategic-merge-patch+json"}
    smp = ok(
        kube.client.patch(url, params={"fieldManager": "smp"}, json={"data": {"z": "2"}}, headers=strategic)
    )
    assert ("smp", "Update", "v1", "", True, {"f:data": {"f:z": {}}}) in entries(smp)
    # a full update (PUT) of a field takes it too, and removing a field removes it from every set
    current = kube.client.get(url).json()
    current["data"] = {"a": "5", "b": "8"}
    put = ok(kube.client.put(url, params={"fieldManager": "putter"}, json=current))
    assert entries(put) == [
        ("editor", "Update", "v1", "", True, {"f:data": {"f:a": {}}}),
        ("putter", "Update", "v1", "", True, {"f:data": {"f:b": {}}}),
    ]


def test_create_records_the_creator_with_the_maps_it_added(kube: KubeTarget, namespace: str) -> None:
    body = configmap("m", {"a": "1"}, labels={"l": "1"}, annotations={"n": "v"})
    created = ok(kube.client.post(cm_url(namespace), params={"fieldManager": "creator"}, json=body))
    assert entries(created) == [
        (
            "creator",
            "Update",
            "v1",
            "",
            True,
            {
                "f:data": {".": {}, "f:a": {}},
                "f:metadata": {"f:annotations": {".": {}, "f:n": {}}, "f:labels": {".": {}, "f:l": {}}},
            },
        )
    ]
    assert list(created["metadata"]["managedFields"][0]["fieldsV1"]["f:data"]) == [".", "f:a"]


def test_objects_without_managed_fields_start_tracking_at_the_first_apply(
    kube: KubeTarget, namespace: str
) -> None:
    url = cm_url(namespace, "b")
    created = ok(kube.client.post(cm_url(namespace), json=configmap("b")))
    assert "managedFields" not in created["metadata"]  # the creator set nothing that can be owned
    untracked = ok(kube.client.patch(url, json={"data": {"k": "v"}}, headers=MERGE))
    assert "managedFields" not in untracked["metadata"]  # updates never start tracking
    applied = ok(apply(kube, url, configmap("b", {"x": "1"}), "applier"))
    assert entries(applied) == [
        ("applier", "Apply", "v1", "", True, {"f:data": {"f:x": {}}}),
        ("before-first-apply", "Update", "v1", "", True, {"f:data": {".": {}, "f:k": {}}}),
    ]
    conflict = status_of(apply(kube, url, configmap("b", {"k": "2"}), "applier"))
    assert conflict["message"] == (
        'Apply failed with 1 conflict: conflict with "before-first-apply" using v1: .data.k'
    )


def test_managed_fields_can_be_cleared_or_rewritten_by_an_update(kube: KubeTarget, namespace: str) -> None:
    url = cm_url(namespace, "w")
    created = ok(
        kube.client.post(cm_url(namespace), params={"fieldManager": "a"}, json=configmap("w", {"k": "v"}))
    )
    created["metadata"]["managedFields"] = [{}]
    created["data"]["k2"] = "x"
    cleared = ok(kube.client.put(url, params={"fieldManager": "b"}, json=created))
    assert "managedFields" not in cleared["metadata"]
    chosen = {
        "manager": "chosen",
        "operation": "Update",
        "apiVersion": "v1",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:data": {"f:k": {}}},
    }
    cleared["metadata"]["managedFields"] = [chosen]
    rewritten = ok(kube.client.put(url, params={"fieldManager": "b"}, json=cleared))
    assert rewritten["metadata"]["managedFields"] == [chosen]
    rewritten["metadata"]["managedFields"] = [{"manager": "bad", "operation": "Sideways"}]
    kept = ok(kube.client.put(url, params={"fieldManager": "b"}, json=rewritten))
    assert kept["metadata"]["managedFields"] == [chosen]  # undecodable: the stored ones stay


def test_update_managers_beyond_ten_fold_into_ancient_changes(kube: KubeTarget, namespace: str) -> None:
    url = cm_url(namespace, "cap")
    ok(
        kube.client.post(
            cm_url(namespace), params={"fieldManager": "m00"}, json=configmap("cap", {"k00": "v"})
        )
    )
    for index in range(1, 12):
        obj = ok(
            kube.client.patch(
                url,
                params={"fieldManager": f"m{index:02d}"},
                json={"data": {f"k{index:02d}": "v"}},
                headers=MERGE,
            )
        )
    managers = {e[0]: e[5]["f:data"] for e in entries(obj)}
    assert len(managers) == 10
    # the 11th folded the two oldest into the bucket, the 12th the next oldest into it
    assert managers["ancient-changes"] == {".": {}, "f:k00": {}, "f:k01": {}, "f:k02": {}}
    assert set(managers) == {"ancient-changes", *(f"m{i:02d}" for i in range(3, 12))}


def test_apply_request_errors(kube: KubeTarget, namespace: str) -> None:
    url = cm_url(namespace, "e")
    cases = [
        ({"apiVersion": "v1", "metadata": {"name": "e"}}, 400, "invalid object type: /v1, Kind="),
        ({"kind": "ConfigMap", "metadata": {"name": "e"}}, 400, "invalid object type: /, Kind=ConfigMap"),
        (configmap("e") | {"apiVersion": "v2"}, 400, "invalid object type: /v2, Kind=ConfigMap"),
        (configmap("e", managedFields=[{"manager": "x"}]), 400, "metadata.managedFields must be nil"),
        (configmap("other"), 400, "the name of the object (other) does not match the name on the URL (e)"),
        (
            configmap("e") | {"bogus": 1},
            500,
            "failed to create typed patch object (/e; /v1, Kind=ConfigMap): .bogus: field not declared in schema",
        ),
    ]
    for body, code, message in cases:
        response = apply(kube, url, body, "m")
        assert (response.status_code, status_of(response)["message"]) == (code, message), body
    listed = kube.client.patch(url, params={"fieldManager": "m"}, content=b"- a\n", headers=APPLY)
    assert status_of(listed)["message"] == (
        "error decoding YAML: error unmarshaling JSON: while decoding JSON: json: cannot unmarshal array "
        "into Go value of type map[string]interface {}"
    )
    forced_merge = kube.client.patch(url, params={"force": "false"}, json={}, headers=MERGE)
    assert forced_merge.status_code == 422
    assert status_of(forced_merge)["message"] == (
        'PatchOptions.meta.k8s.io "" is invalid: force: Forbidden: may not be specified for non-apply patch'
    )
    long_name = apply(kube, url, configmap("e"), "x" * 129)
    assert status_of(long_name)["details"]["causes"] == [
        {
            "reason": "FieldValueTooLong",
            "message": "Too long: may not be more than 128 bytes",
            "field": "fieldManager",
        }
    ]
    put = kube.client.put(url, params={"fieldManager": "y" * 129}, json=configmap("e"))
    assert status_of(put)["message"].startswith(
        'UpdateOptions.meta.k8s.io "" is invalid: fieldManager: Too long'
    )
    missing_status = apply(kube, f"{url}/status", configmap("e"), "m")
    assert missing_status.status_code == 404
    uid = apply(kube, cm_url(namespace, "e2"), configmap("e2", uid="nope"), "m")
    assert uid.status_code == 409
    assert status_of(uid)["message"].endswith(
        "uid mismatch: the provided object specified uid nope, and no existing object was found"
    )
    assert kube.client.get(url).status_code == 404  # nothing was created by any of these


# -- list types of a built-in kind (a Job: no kube-controller-manager needed) ----------------------
def _job(name: str, containers: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "managedBy": CONFORMANCE_MANAGER,
            "suspend": True,
            "template": {"spec": {"restartPolicy": "Never", "containers": containers}},
            **spec,
        },
    }


def test_apply_merges_containers_env_and_ports_by_their_keys(kube: KubeTarget, namespace: str) -> None:
    url = f"/apis/batch/v1/namespaces/{namespace}/jobs/lm"
    container = {
        "name": "c",
        "image": "busybox",
        "ports": [{"containerPort": 80}],
        "env": [{"name": "A", "value": "1"}],
    }
    created = ok(apply(kube, url, _job("lm", [container]), "one"))
    assert entries(created) == [
        (
            "one",
            "Apply",
            "batch/v1",
            "",
            True,
            {
                "f:spec": {
                    "f:managedBy": {},
                    "f:suspend": {},
                    "f:template": {
                        "f:spec": {
                            "f:containers": {
                                'k:{"name":"c"}': {
                                    ".": {},
                                    "f:env": {'k:{"name":"A"}': {".": {}, "f:name": {}, "f:value": {}}},
                                    "f:image": {},
                                    "f:name": {},
                                    "f:ports": {
                                        'k:{"containerPort":80,"protocol":"TCP"}': {
                                            ".": {},
                                            "f:containerPort": {},
                                        }
                                    },
                                }
                            },
                            "f:restartPolicy": {},
                        }
                    },
                }
            },
        )
    ]
    # a second manager adds a finalizer (a set: v:) and an owner reference (a map by uid, atomic items)
    owner = {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": "0000-1"}
    meta = {"name": "lm", "finalizers": ["example.com/keep"], "ownerReferences": [owner]}
    second = ok(apply(kube, url, {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta}, "two"))
    assert second["metadata"]["finalizers"] == ["example.com/keep"]
    two = next(e for e in entries(second) if e[0] == "two")
    assert two[5] == {
        "f:metadata": {
            "f:finalizers": {'v:"example.com/keep"': {}},
            "f:ownerReferences": {'k:{"uid":"0000-1"}': {}},
        }
    }
    released = ok(
        apply(kube, url, {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "lm"}}, "two")
    )
    assert "finalizers" not in released["metadata"]
    assert "ownerReferences" not in released["metadata"]
    assert "two" not in {e[0] for e in entries(released)}


def test_job_status_conditions_are_an_atomic_list(kube: KubeTarget, namespace: str) -> None:
    url = f"/apis/batch/v1/namespaces/{namespace}/jobs/atomic"
    ok(apply(kube, url, _job("atomic", [{"name": "c", "image": "busybox"}]), "creator"))
    condition = {"type": "Suspended", "status": "True", "reason": "JobSuspended", "message": "m"}
    condition |= {"lastProbeTime": T0, "lastTransitionTime": T0}
    body = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "atomic"},
        "status": {"conditions": [condition]},
    }
    status = ok(apply(kube, f"{url}/status", body, "status-writer"))
    assert status["status"]["conditions"][0]["type"] == "Suspended"
    writer = next(e for e in entries(status) if e[0] == "status-writer")
    assert writer == (
        "status-writer",
        "Apply",
        "batch/v1",
        "status",
        True,
        {"f:status": {"f:conditions": {}}},
    )


# -- a custom resource: Kueue's Workload ----------------------------------------------------------
@pytest.fixture
def workloads(kube: KubeTarget, shared_dir: Path, namespace: str) -> str:
    """The Workload CRD installed (or already there, on a real cluster); the namespace's workloads URL."""
    crd = yaml.safe_load((shared_dir / "crds" / "kueue" / "kueue.x-k8s.io_workloads.yaml").read_text())
    response = kube.client.post(CRDS, json=crd)
    assert response.status_code in {201, 409}, response.text[:500]

    def established() -> bool:
        status = kube.client.get(f"{CRDS}/{WORKLOADS_CRD}").json().get("status") or {}
        return any(
            c["type"] == "Established" and c["status"] == "True" for c in status.get("conditions") or []
        )

    eventually(established)
    return f"/apis/kueue.x-k8s.io/v1beta2/namespaces/{namespace}/workloads"


def _workload(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name},
        "spec": {
            "queueName": "q",
            "podSets": [
                {
                    "name": "main",
                    "count": 1,
                    "template": {"spec": {"containers": [{"name": "c", "image": "busybox"}]}},
                }
            ],
        },
    }


def _status(name: str, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name},
        "status": status,
    }


def _condition(kind: str, status: str = "True") -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": "R", "message": "m", "lastTransitionTime": T0}


def _check(state: str, message: str = "") -> dict[str, Any]:
    return {"name": "mk", "state": state, "lastTransitionTime": T0, "message": message}


_CONDITION_FIELDS: dict[str, Any] = {
    ".": {},
    "f:lastTransitionTime": {},
    "f:message": {},
    "f:reason": {},
    "f:status": {},
    "f:type": {},
}
_CREATED_SPEC: dict[str, Any] = {
    "f:spec": {
        ".": {},
        "f:active": {},
        "f:podSets": {
            ".": {},
            'k:{"name":"main"}': {
                ".": {},
                "f:count": {},
                "f:name": {},
                "f:template": {
                    ".": {},
                    "f:spec": {
                        ".": {},
                        "f:containers": {
                            ".": {},
                            'k:{"name":"c"}': {".": {}, "f:image": {}, "f:name": {}},
                        },
                    },
                },
            },
        },
        "f:queueName": {},
    }
}


@pytest.mark.needs_shared
def test_workload_create_records_its_defaults_and_list_map_items(kube: KubeTarget, workloads: str) -> None:
    created = ok(kube.client.post(workloads, params={"fieldManager": "creator"}, json=_workload("w")))
    assert created["spec"]["active"] is True  # a schema default, decoded before ownership is recorded
    assert entries(created) == [("creator", "Update", "kueue.x-k8s.io/v1beta2", "", True, _CREATED_SPEC)]


@pytest.mark.needs_shared
def test_workload_status_conditions_merge_by_type_through_apply_to_status(
    kube: KubeTarget, workloads: str
) -> None:
    ok(kube.client.post(workloads, json=_workload("c")))
    url = f"{workloads}/c/status"
    ok(apply(kube, url, _status("c", conditions=[_condition("QuotaReserved")]), "m1"))
    both = ok(apply(kube, url, _status("c", conditions=[_condition("Admitted")]), "m2"))
    assert [c["type"] for c in both["status"]["conditions"]] == ["QuotaReserved", "Admitted"]
    reordered = ok(
        apply(kube, url, _status("c", conditions=[_condition("Finished"), _condition("QuotaReserved")]), "m1")
    )
    assert [c["type"] for c in reordered["status"]["conditions"]] == ["Finished", "QuotaReserved", "Admitted"]
    status_entries = [e for e in entries(reordered) if e[3] == "status"]
    assert status_entries == [
        (
            "m1",
            "Apply",
            "kueue.x-k8s.io/v1beta2",
            "status",
            True,
            {
                "f:status": {
                    "f:conditions": {
                        'k:{"type":"Finished"}': _CONDITION_FIELDS,
                        'k:{"type":"QuotaReserved"}': _CONDITION_FIELDS,
                    }
                }
            },
        ),
        (
            "m2",
            "Apply",
            "kueue.x-k8s.io/v1beta2",
            "status",
            True,
            {"f:status": {"f:conditions": {'k:{"type":"Admitted"}': _CONDITION_FIELDS}}},
        ),
    ]
    conflict = status_of(apply(kube, url, _status("c", conditions=[_condition("Admitted", "False")]), "m1"))
    assert conflict["message"] == (
        'Apply failed with 1 conflict: conflict with "m2" with subresource "status": '
        '.status.conditions[type="Admitted"].status'
    )
    dropped = ok(apply(kube, url, _status("c", conditions=[_condition("Finished")]), "m1"))
    assert [c["type"] for c in dropped["status"]["conditions"]] == ["Finished", "Admitted"]


@pytest.mark.needs_shared
def test_apply_to_status_only_touches_status(kube: KubeTarget, workloads: str) -> None:
    ok(apply(kube, f"{workloads}/s", _workload("s"), "creator"))
    body = _workload("s") | {"status": {"clusterName": "w1"}}
    body["metadata"]["labels"] = {"x": "y"}
    body["spec"]["queueName"] = "other"
    applied = ok(apply(kube, f"{workloads}/s/status", body, "st"))
    assert applied["spec"]["queueName"] == "q"
    assert "labels" not in applied["metadata"]
    assert applied["status"] == {"clusterName": "w1"}
    assert (
        "st",
        "Apply",
        "kueue.x-k8s.io/v1beta2",
        "status",
        True,
        {"f:status": {"f:clusterName": {}}},
    ) in entries(applied)
    # and the main endpoint ignores status: the creator does not own it, nobody conflicts
    main = ok(apply(kube, f"{workloads}/s", _workload("s") | {"status": {"clusterName": "w2"}}, "creator"))
    assert main["status"] == {"clusterName": "w1"}


@pytest.mark.needs_shared
def test_multikueue_full_status_update_then_forced_apply_keeps_cluster_name(
    kube: KubeTarget, workloads: str
) -> None:
    """The MultiKueue bug: a field written by an Update manager survives an applier that omits it.

    Our dispatcher wrote ``status.clusterName`` and the check state with a full ``/status`` update;
    Kueue evicts with a forced apply of ``/status`` as ``kueue-admission``, which cannot remove a
    field it never owned: clusterName stays set, and the check only changes where the applier says.
    """
    created = ok(kube.client.post(workloads, json=_workload("mk")))
    created["status"] = {"clusterName": "worker1", "admissionChecks": [_check("Ready", "m")]}
    put = ok(kube.client.put(f"{workloads}/mk/status", params={"fieldManager": "dispatcher"}, json=created))
    assert entries(put)[0] == (
        "dispatcher",
        "Update",
        "kueue.x-k8s.io/v1beta2",
        "status",
        True,
        {
            "f:status": {
                ".": {},
                "f:admissionChecks": {
                    ".": {},
                    'k:{"name":"mk"}': {
                        ".": {},
                        "f:lastTransitionTime": {},
                        "f:message": {},
                        "f:name": {},
                        "f:state": {},
                    },
                },
                "f:clusterName": {},
            }
        },
    )
    evicted = _status("mk", conditions=[_condition("Evicted")], admissionChecks=[_check("Pending")])
    after = ok(apply(kube, f"{workloads}/mk/status", evicted, "kueue-admission", force=True))
    assert after["status"]["clusterName"] == "worker1"
    assert after["status"]["admissionChecks"] == [_check("Pending")]
    assert [c["type"] for c in after["status"]["conditions"]] == ["Evicted"]
    by_manager = {e[0]: e for e in entries(after)}
    assert by_manager["dispatcher"][5] == {
        "f:status": {
            ".": {},
            "f:admissionChecks": {
                ".": {},
                'k:{"name":"mk"}': {".": {}, "f:lastTransitionTime": {}, "f:name": {}},
            },
            "f:clusterName": {},
        }
    }
    assert by_manager["kueue-admission"][1:] == (
        "Apply",
        "kueue.x-k8s.io/v1beta2",
        "status",
        True,
        {
            "f:status": {
                "f:admissionChecks": {
                    'k:{"name":"mk"}': {
                        ".": {},
                        "f:lastTransitionTime": {},
                        "f:message": {},
                        "f:name": {},
                        "f:state": {},
                    }
                },
                "f:conditions": {'k:{"type":"Evicted"}': _CONDITION_FIELDS},
            }
        },
    )


@pytest.mark.needs_shared
def test_multikueue_fields_written_by_the_applier_go_when_it_drops_them(
    kube: KubeTarget, workloads: str
) -> None:
    """The fix: write clusterName and the check state as ``kueue-admission`` (forced apply); Kueue's
    later apply without them then removes clusterName and leaves only what it sends."""
    ok(kube.client.post(workloads, json=_workload("fix")))
    url = f"{workloads}/fix/status"
    dispatched = _status("fix", clusterName="worker1", admissionChecks=[_check("Ready", "m")])
    ok(apply(kube, url, dispatched, "kueue-admission", force=True))
    evicted = _status("fix", conditions=[_condition("Evicted")], admissionChecks=[_check("Pending")])
    after = ok(apply(kube, url, evicted, "kueue-admission", force=True))
    assert "clusterName" not in after["status"]
    assert after["status"]["admissionChecks"] == [_check("Pending")]
    assert [e[0] for e in entries(after) if e[3] == "status"] == ["kueue-admission"]
