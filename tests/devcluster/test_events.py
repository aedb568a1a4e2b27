"""Conformance: Event validation, core v1 (lenient, for old clients) and events.k8s.io/v1 (strict).

kueue-bridge records Events the way Kueue does; an Event the devcluster took but kube-apiserver
refuses would only show up on a real cluster. Texts are kube-apiserver 1.36's.
"""

from __future__ import annotations

import secrets
from typing import Any

import pytest

from tests.devcluster.conftest import KubeTarget
from tests.devcluster.helpers import MERGE_PATCH, status_of

EVENT_TIME = "2025-01-01T00:00:00.000000Z"
QUALIFIED_NAME_ERROR = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)


def _core(namespace: str) -> str:
    return f"/api/v1/namespaces/{namespace}/events"


def _new(namespace: str) -> str:
    return f"/apis/events.k8s.io/v1/namespaces/{namespace}/events"


def _causes(response: Any) -> list[tuple[str, str]]:
    assert response.status_code == 422, response.text
    return [(c["field"], c["message"]) for c in status_of(response)["details"]["causes"]]


def _new_event(name: str, namespace: str, **fields: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "eventTime": EVENT_TIME,
        "reportingController": "example.com/ctl",
        "reportingInstance": "ctl-1",
        "action": "Start",
        "reason": "Started",
        "type": "Normal",
        "note": "n",
        "regarding": {"kind": "Job", "name": "j", "namespace": namespace},
        **fields,
    }


@pytest.mark.parametrize(("involved_namespace", "accepted"), [("{ns}", True), ("other", False), ("", False)])
def test_core_event_must_be_about_its_own_namespace(
    kube: KubeTarget, namespace: str, involved_namespace: str, accepted: bool
) -> None:
    involved = {"kind": "Job", "name": "j", "namespace": involved_namespace.format(ns=namespace)}
    response = kube.client.post(
        _core(namespace), json={"metadata": {"name": "e"}, "involvedObject": involved, "reason": "R"}
    )
    if accepted:
        assert response.status_code == 201, response.text
        return
    shown = involved["namespace"]
    assert _causes(response) == [
        ("involvedObject.namespace", f'Invalid value: "{shown}": does not match event.namespace')
    ]
    assert status_of(response)["message"] == (
        f'Event "e" is invalid: involvedObject.namespace: Invalid value: "{shown}": does not match event.namespace'
    )


def test_core_event_about_a_cluster_object_lives_in_default(kube: KubeTarget) -> None:
    name = f"conf-node-{secrets.token_hex(4)}"
    body = {"metadata": {"name": name}, "involvedObject": {"kind": "Node", "name": "n1"}, "reason": "R"}
    response = kube.client.post(_core("default"), json=body)
    assert response.status_code == 201, response.text
    kube.client.delete(f"{_core('default')}/{name}")


def test_core_event_is_lenient_on_names_and_lengths(kube: KubeTarget, namespace: str) -> None:
    """Without eventTime, core v1 takes what old clients wrote: any path-segment name, any length."""
    body = {
        "metadata": {"name": "Not_A_Subdomain"},
        "involvedObject": {"kind": "Job", "name": "j", "namespace": namespace},
        "reason": "R" * 200,
        "message": "m" * 2000,
        "type": "Whatever",
    }
    response = kube.client.post(_core(namespace), json=body)
    assert response.status_code == 201, response.text
    bad_segment = {**body, "metadata": {"name": "a%b"}}
    assert _causes(kube.client.post(_core(namespace), json=bad_segment)) == [
        ("metadata.name", "Invalid value: \"a%b\": may not contain '%'")
    ]


def test_core_event_with_event_time_needs_the_new_fields(kube: KubeTarget, namespace: str) -> None:
    body = {
        "metadata": {"name": "c"},
        "eventTime": EVENT_TIME,
        "involvedObject": {"kind": "Job", "name": "j"},
    }
    assert _causes(kube.client.post(_core(namespace), json=body)) == [
        ("involvedObject.namespace", 'Invalid value: "": does not match event.namespace'),
        ("reportingComponent", "Required value"),
        ("reportingComponent", 'Invalid value: "": name part must be non-empty'),
        ("reportingComponent", f'Invalid value: "": {QUALIFIED_NAME_ERROR}'),
        ("reportingInstance", "Required value"),
        ("action", "Required value"),
        ("reason", "Required value"),
    ]


def test_events_api_requires_event_time_and_a_known_type(kube: KubeTarget, namespace: str) -> None:
    body = {"metadata": {"name": "e"}, "regarding": {"kind": "Job", "name": "j", "namespace": namespace}}
    assert _causes(kube.client.post(_new(namespace), json=body)) == [
        ("eventTime", "Required value"),
        ("type", 'Invalid value: "": has invalid value: '),
    ]
    bogus = _new_event("g", namespace, type="Bogus")
    assert _causes(kube.client.post(_new(namespace), json=bogus)) == [
        ("type", 'Invalid value: "": has invalid value: Bogus')
    ]
    assert kube.client.post(_new(namespace), json=_new_event("ok", namespace)).status_code == 201


def test_events_api_refuses_deprecated_fields_and_a_bad_series(kube: KubeTarget, namespace: str) -> None:
    body = _new_event(
        "g",
        namespace,
        deprecatedCount=2,
        deprecatedSource={"component": "c"},
        deprecatedFirstTimestamp="2025-01-01T00:00:00Z",
        series={"count": 1},
    )
    assert _causes(kube.client.post(_new(namespace), json=body)) == [
        ("series.count", 'Invalid value: "": should be at least 2'),
        ("series.lastObservedTime", "Required value"),
        ("firstTimestamp", 'Invalid value: "": needs to be unset'),
        ("count", 'Invalid value: "": needs to be unset'),
        ("source", 'Invalid value: "": needs to be unset'),
    ]


def test_events_api_names_are_subdomains_and_notes_short(kube: KubeTarget, namespace: str) -> None:
    body = _new_event("Bad_Name", namespace, note="n" * 1025, reportingController="x/y")
    assert _causes(kube.client.post(_new(namespace), json=body)) == [
        ("message", 'Invalid value: "": can have at most 1024 characters'),
        (
            "metadata.name",
            'Invalid value: "Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case '
            "alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character "
            "(e.g. 'example.com', regex used for validation is "
            "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        ),
    ]


def test_events_api_update_keeps_what_the_event_says(kube: KubeTarget, namespace: str) -> None:
    url = f"{_new(namespace)}/f"
    assert kube.client.post(_new(namespace), json=_new_event("f", namespace)).status_code == 201
    patch = {
        "note": "changed",
        "reason": "S",
        "action": "B",
        "type": "Warning",
        "reportingInstance": "z",
        "regarding": {"name": "o"},
        "deprecatedCount": 3,
    }
    regarding = (
        f'{{"Kind":"Job","Namespace":"{namespace}","Name":"o","UID":"","APIVersion":"",'
        '"ResourceVersion":"","FieldPath":""}'
    )
    assert _causes(kube.client.patch(url, json=patch, headers=MERGE_PATCH)) == [
        ("involvedObject", f"Invalid value: {regarding}: field is immutable"),
        ("reason", 'Invalid value: "S": field is immutable'),
        ("message", 'Invalid value: "changed": field is immutable'),
        ("count", "Invalid value: 3: field is immutable"),
        ("reason", 'Invalid value: "S": field is immutable'),
        ("type", 'Invalid value: "Warning": field is immutable'),
        ("action", 'Invalid value: "B": field is immutable'),
        ("reportingInstance", 'Invalid value: "z": field is immutable'),
    ]
    series = {"series": {"count": 2, "lastObservedTime": EVENT_TIME}}
    updated = kube.client.patch(url, json=series, headers=MERGE_PATCH)
    assert updated.status_code == 200, updated.text
    assert updated.json()["series"] == {"count": 2, "lastObservedTime": EVENT_TIME}
    too_few = kube.client.patch(url, json={"series": {"count": 1}}, headers=MERGE_PATCH)
    assert _causes(too_few) == [("series.count", 'Invalid value: "": should be at least 2')]


def test_core_update_may_change_what_the_event_says(kube: KubeTarget, namespace: str) -> None:
    url = f"{_core(namespace)}/b"
    body = {
        "metadata": {"name": "b"},
        "message": "hi",
        "reason": "Created",
        "type": "Normal",
        "involvedObject": {"kind": "Job", "name": "k", "namespace": namespace},
    }
    assert kube.client.post(_core(namespace), json=body).status_code == 201
    patch = {"message": "again", "reason": "Other", "count": 2, "involvedObject": {"name": "z"}}
    patched = kube.client.patch(url, json=patch, headers=MERGE_PATCH)
    assert patched.status_code == 200, patched.text
    event = patched.json()
    assert (event["message"], event["reason"], event["count"], event["involvedObject"]["name"]) == (
        "again",
        "Other",
        2,
        "z",
    )
    moved = kube.client.patch(url, json={"involvedObject": {"namespace": "other"}}, headers=MERGE_PATCH)
    assert _causes(moved) == [
        ("involvedObject.namespace", 'Invalid value: "other": does not match event.namespace')
    ]
