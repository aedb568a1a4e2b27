"""Conformance: selectors, pagination, watches (history, 410 Expired, bookmarks, selector transitions)."""

from __future__ import annotations

import pytest

from tests.devcluster.conftest import KubeTarget
from tests.devcluster.helpers import configmap, status_of, watch

MERGE = {"content-type": "application/merge-patch+json"}


@pytest.fixture
def labelled(kube: KubeTarget, namespace: str) -> str:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    for name, labels in (
        ("a", {"env": "prod", "tier": "web", "size": "3"}),
        ("b", {"env": "dev", "size": "12"}),
        ("c", {"tier": "db", "size": "x"}),
        ("d", {}),
    ):
        assert kube.client.post(url, json=configmap(name, labels={**labels, "set": "x"})).status_code == 201
    return url


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("env=prod", ["a"]),
        ("env==prod", ["a"]),
        ("env!=prod", ["b", "c", "d"]),
        ("env in (prod,dev)", ["a", "b"]),
        ("env notin (prod)", ["b", "c", "d"]),
        ("tier", ["a", "c"]),
        ("!tier", ["b", "d"]),
        ("env=prod,tier=web", ["a"]),
        ("size>5", ["b"]),  # an integer comparison ("12" > "5"); a label that is no integer never matches
        ("size<5", ["a"]),
        ("size<5,env notin (dev)", ["a"]),
        # "()" is the set of the empty value: no object here has an empty env label
        ("env in ()", []),
        ("env notin ()", ["a", "b", "c", "d"]),
    ],
)
def test_label_selectors(kube: KubeTarget, labelled: str, selector: str, expected: list[str]) -> None:
    items = kube.client.get(labelled, params={"labelSelector": f"set=x,{selector}"}).json()["items"]
    assert [item["metadata"]["name"] for item in items] == expected


@pytest.mark.parametrize("selector", ["a b c", "size>x", "env in (", "a=b=c"])
def test_invalid_label_selector_is_400(kube: KubeTarget, labelled: str, selector: str) -> None:
    response = kube.client.get(labelled, params={"labelSelector": selector})
    assert response.status_code == 400


def test_field_selectors(kube: KubeTarget, labelled: str, namespace: str) -> None:
    by_name = kube.client.get(labelled, params={"fieldSelector": "metadata.name=b"}).json()["items"]
    assert [i["metadata"]["name"] for i in by_name] == ["b"]
    not_name = kube.client.get(labelled, params={"fieldSelector": "metadata.name!=b", "labelSelector": "set"})
    not_name = not_name.json()["items"]
    assert [i["metadata"]["name"] for i in not_name] == ["a", "c", "d"]
    across = kube.client.get(
        "/api/v1/configmaps", params={"fieldSelector": f"metadata.namespace={namespace}"}
    )
    assert {i["metadata"]["namespace"] for i in across.json()["items"]} == {namespace}
    unsupported = kube.client.get(labelled, params={"fieldSelector": "data.k=v"})
    assert unsupported.status_code == 400
    assert status_of(unsupported)["message"] == (
        '"data.k" is not a known field selector: only "metadata.name", "metadata.namespace"'
    )


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/apis/batch/v1/namespaces/{ns}/jobs", 'field label "spec.x" not supported for Job'),
        ("/api/v1/namespaces/{ns}/pods", "field label not supported: spec.x"),
        ("/api/v1/namespaces/{ns}/secrets", "field label not supported: spec.x"),
        ("/apis/events.k8s.io/v1/namespaces/{ns}/events", "field label not supported: spec.x"),
        (
            "/api/v1/namespaces/{ns}/serviceaccounts",
            '"spec.x" is not a known field selector: only "metadata.name", "metadata.namespace"',
        ),
        (
            "/apis/coordination.k8s.io/v1/namespaces/{ns}/leases",
            '"spec.x" is not a known field selector: only "metadata.name", "metadata.namespace"',
        ),
    ],
)
def test_unknown_field_labels_are_400_with_the_kinds_message(
    kube: KubeTarget, namespace: str, path: str, message: str
) -> None:
    response = kube.client.get(path.format(ns=namespace), params={"fieldSelector": "spec.x=v"})
    assert response.status_code == 400
    assert status_of(response)["message"] == message


def test_pagination_with_limit_and_continue(kube: KubeTarget, labelled: str) -> None:
    first = kube.client.get(labelled, params={"limit": 3, "labelSelector": "set"}).json()
    assert [i["metadata"]["name"] for i in first["items"]] == ["a", "b", "c"]
    token = first["metadata"]["continue"]
    assert "remainingItemCount" not in first["metadata"], "only counted without selectors"
    second = kube.client.get(labelled, params={"limit": 3, "continue": token, "labelSelector": "set"}).json()
    assert [i["metadata"]["name"] for i in second["items"]] == ["d"]
    assert "continue" not in second["metadata"]
    bad = kube.client.get(labelled, params={"limit": 3, "continue": "garbage!"})
    assert bad.status_code == 400


def test_pagination_counts_what_remains_of_an_unfiltered_list(kube: KubeTarget, labelled: str) -> None:
    everything = kube.client.get(labelled).json()["items"]  # a-d and the namespace's kube-root-ca.crt
    first = kube.client.get(labelled, params={"limit": 2}).json()
    assert [i["metadata"]["name"] for i in first["items"]] == ["a", "b"]
    assert first["metadata"]["remainingItemCount"] == len(everything) - 2
    rest = kube.client.get(labelled, params={"continue": first["metadata"]["continue"]}).json()
    assert [i["metadata"]["name"] for i in rest["items"]] == [i["metadata"]["name"] for i in everything[2:]]
    assert "remainingItemCount" not in rest["metadata"]


def test_list_reports_kind_and_resource_version(kube: KubeTarget, labelled: str) -> None:
    listing = kube.client.get(labelled).json()
    assert listing["kind"] == "ConfigMapList"
    assert listing["apiVersion"] == "v1"
    assert int(listing["metadata"]["resourceVersion"]) >= max(
        int(i["metadata"]["resourceVersion"]) for i in listing["items"]
    )


def test_watch_from_resource_version_replays_changes(kube: KubeTarget, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    start = kube.client.get(url).json()["metadata"]["resourceVersion"]
    kube.client.post(url, json=configmap("w"))
    kube.client.patch(f"{url}/w", json={"data": {"k": "2"}}, headers=MERGE)
    kube.client.delete(f"{url}/w")
    events = watch(kube.client, url, resourceVersion=start, timeoutSeconds=1)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
        ("ADDED", "w"),
        ("MODIFIED", "w"),
        ("DELETED", "w"),
    ]
    versions = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert versions == sorted(versions)


def test_watch_without_resource_version_starts_with_current_state(kube: KubeTarget, labelled: str) -> None:
    events = watch(kube.client, labelled, timeoutSeconds=1, labelSelector="env")
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "a"), ("ADDED", "b")]


def test_watch_with_selector_turns_updates_into_added_and_deleted(kube: KubeTarget, labelled: str) -> None:
    start = kube.client.get(labelled).json()["metadata"]["resourceVersion"]
    kube.client.patch(f"{labelled}/d", json={"metadata": {"labels": {"env": "qa"}}}, headers=MERGE)
    kube.client.patch(f"{labelled}/d", json={"metadata": {"labels": {"env": None}}}, headers=MERGE)
    events = watch(kube.client, labelled, resourceVersion=start, labelSelector="env", timeoutSeconds=1)
    assert [e["type"] for e in events] == ["ADDED", "DELETED"]


def test_watch_from_compacted_version_gets_410_error_event(devcluster_only, devcluster_factory) -> None:
    import ssl

    import httpx

    cluster = devcluster_factory(watch_history_size=3)
    with httpx.Client(
        base_url=cluster.url,
        verify=ssl.create_default_context(cafile=str(cluster.ca_file)),
        headers={"Authorization": f"Bearer {cluster.token}"},
    ) as client:
        url = "/api/v1/namespaces/default/configmaps"
        first = client.post(url, json=configmap("c0")).json()["metadata"]["resourceVersion"]
        for index in range(1, 6):
            client.post(url, json=configmap(f"c{index}"))
        events = watch(client, url, resourceVersion=first, timeoutSeconds=5)
    assert len(events) == 1
    event = events[0]
    assert event["type"] == "ERROR"
    status = event["object"]
    assert (status["kind"], status["reason"], status["code"]) == ("Status", "Expired", 410)
    assert status["message"].startswith(f"too old resource version: {first} (")


def test_watch_bookmarks_periodically_and_at_timeout(devcluster_only, devcluster_factory) -> None:
    import ssl

    import httpx

    cluster = devcluster_factory(bookmark_interval=0.2)
    with httpx.Client(
        base_url=cluster.url,
        verify=ssl.create_default_context(cafile=str(cluster.ca_file)),
        headers={"Authorization": f"Bearer {cluster.token}"},
    ) as client:
        rv = client.get("/api/v1/namespaces").json()["metadata"]["resourceVersion"]
        events = watch(
            client, "/api/v1/namespaces", resourceVersion=rv, allowWatchBookmarks=True, timeoutSeconds=1
        )
    bookmarks = [e for e in events if e["type"] == "BOOKMARK"]
    assert len(bookmarks) >= 2
    assert bookmarks[0]["object"]["kind"] == "Namespace"
    assert int(bookmarks[-1]["object"]["metadata"]["resourceVersion"]) >= int(rv)


def skip_without_watch_list(events: list[dict]) -> None:
    """kube-apiserver's watch cache serves a watch that starts with the initial state and allows
    bookmarks (``sendInitialEvents``, and the default of ``resourceVersion`` ""/"0" with bookmarks)
    only on storage with RequestWatchProgress (etcd >= 3.4.31 or 3.5.13); otherwise it answers one
    ERROR event saying so, as on the kit's cluster (Debian's etcd 3.4.23)."""
    if events and events[0]["type"] == "ERROR" and "RequestWatchProgress" in events[0]["object"]["message"]:
        pytest.skip(
            f"needs etcd with RequestWatchProgress, which the test cluster lacks: {events[0]['object']['message']}"
        )


def test_send_initial_events_ends_with_annotated_bookmark(kube: KubeTarget, labelled: str) -> None:
    events = watch(
        kube.client,
        labelled,
        sendInitialEvents=True,
        allowWatchBookmarks=True,
        resourceVersionMatch="NotOlderThan",
        timeoutSeconds=1,
        labelSelector="set",
    )
    skip_without_watch_list(events)
    added = [e for e in events if e["type"] == "ADDED"]
    assert len(added) == 4
    marker = next(e for e in events if e["type"] == "BOOKMARK")
    assert marker["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}


def test_send_initial_events_without_bookmarks_sends_no_marker(kube: KubeTarget, labelled: str) -> None:
    events = watch(
        kube.client,
        labelled,
        sendInitialEvents=True,
        resourceVersion="0",
        resourceVersionMatch="NotOlderThan",
        timeoutSeconds=1,
        labelSelector="set",
    )
    assert [e["type"] for e in events] == ["ADDED"] * 4


def test_watch_fans_out_to_many_watchers(kube: KubeTarget, namespace: str) -> None:
    import concurrent.futures

    url = f"/api/v1/namespaces/{namespace}/configmaps"
    start = kube.client.get(url).json()["metadata"]["resourceVersion"]
    for index in range(5):
        kube.client.post(url, json=configmap(f"f{index}"))
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        results = list(
            pool.map(lambda _: watch(kube.client, url, resourceVersion=start, timeoutSeconds=1), range(4))
        )
    assert all(len(events) == 5 for events in results)


def test_expired_continue_token_is_410_with_a_fresh_token(devcluster_only, devcluster_factory) -> None:
    import ssl

    import httpx

    cluster = devcluster_factory(watch_history_size=2)
    with httpx.Client(
        base_url=cluster.url,
        verify=ssl.create_default_context(cafile=str(cluster.ca_file)),
        headers={"Authorization": f"Bearer {cluster.token}"},
    ) as client:
        url = "/api/v1/namespaces/default/configmaps"
        for index in range(3):
            client.post(url, json=configmap(f"p{index}", labels={"page": "yes"}))
        token = client.get(url, params={"limit": 1, "labelSelector": "page"}).json()["metadata"]["continue"]
        for index in range(3, 6):
            client.post(url, json=configmap(f"p{index}", labels={"page": "yes"}))
        expired = client.get(url, params={"limit": 1, "labelSelector": "page", "continue": token})
        assert expired.status_code == 410
        status = status_of(expired)
        assert status["reason"] == "Expired"
        assert status["message"].startswith("The provided continue parameter is too old")
        rest = client.get(url, params={"labelSelector": "page", "continue": status["metadata"]["continue"]})
        assert [i["metadata"]["name"] for i in rest.json()["items"]] == ["p1", "p2", "p3", "p4", "p5"]
