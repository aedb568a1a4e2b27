"""Conformance: resourceVersion semantics of list, get and watch.

A list with no resourceVersion, ``0`` or ``NotOlderThan`` reads the current state;
``resourceVersionMatch=Exact`` reads the past; every page of a paginated list is one snapshot; a
revision too old is 410 Expired, one not reached yet is 504 Timeout. Texts are kube-apiserver 1.36's.
"""

from __future__ import annotations

import time

import httpx
import pytest

from tests.devcluster.conftest import KubeTarget
from tests.devcluster.helpers import MERGE_PATCH, configmap, status_of, watch


def _names_and_values(listing: dict) -> list[tuple[str, str | None]]:
    return [
        (item["metadata"]["name"], (item.get("data") or {}).get("v"))
        for item in listing["items"]
        if item["metadata"]["name"] != "kube-root-ca.crt"
    ]


@pytest.fixture
def history(kube: KubeTarget, namespace: str) -> tuple[str, str, str]:
    """(url, rv after creating a=1, rv after adding b, changing a to 2 and deleting b)."""
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    assert kube.client.post(url, json={**configmap("a"), "data": {"v": "1"}}).status_code == 201
    before = kube.client.get(url).json()["metadata"]["resourceVersion"]
    assert kube.client.post(url, json={**configmap("b"), "data": {"v": "b"}}).status_code == 201
    assert kube.client.patch(f"{url}/a", json={"data": {"v": "2"}}, headers=MERGE_PATCH).status_code == 200
    assert kube.client.delete(f"{url}/b").status_code == 200
    after = kube.client.get(url).json()["metadata"]["resourceVersion"]
    return url, before, after


def test_an_exact_list_reads_the_past(kube: KubeTarget, history: tuple[str, str, str]) -> None:
    url, before, _ = history
    past = kube.client.get(url, params={"resourceVersion": before, "resourceVersionMatch": "Exact"}).json()
    assert past["metadata"]["resourceVersion"] == before
    assert _names_and_values(past) == [("a", "1")]
    paged = kube.client.get(
        url, params={"resourceVersion": before, "resourceVersionMatch": "Exact", "limit": 1}
    ).json()
    assert paged["metadata"]["resourceVersion"] == before


@pytest.mark.parametrize(
    "params",
    [{}, {"resourceVersion": "0"}, {"resourceVersionMatch": "NotOlderThan"}],
    ids=["unset", "zero", "not-older-than"],
)
def test_other_lists_read_the_current_state(
    kube: KubeTarget, history: tuple[str, str, str], params: dict
) -> None:
    """No resourceVersion is a consistent read: the current state at once, at a revision no older
    than the last write. ``0`` and ``NotOlderThan`` may be served from kube-apiserver's watch cache,
    which follows etcd a moment behind and answers with its own revision (etcd's revision is global:
    other writers move it past our last write): they converge on the current state, at a revision
    no older than the one asked for."""
    url, before, after = history
    if "resourceVersionMatch" in params:
        params = {**params, "resourceVersion": before}
    if not params:
        listing = kube.client.get(url, params=params).json()
        assert _names_and_values(listing) == [("a", "2")]
        assert int(listing["metadata"]["resourceVersion"]) >= int(after)
        return
    deadline = time.monotonic() + 10.0
    while _names_and_values(listing := kube.client.get(url, params=params).json()) != [("a", "2")]:
        assert time.monotonic() < deadline, f"the list never showed the last writes: {listing}"
        time.sleep(0.05)
    assert int(listing["metadata"]["resourceVersion"]) >= int(before)


def test_pages_of_one_list_are_one_snapshot(kube: KubeTarget, namespace: str) -> None:
    url = f"/api/v1/namespaces/{namespace}/configmaps"
    for name in ("a", "b", "c"):
        assert kube.client.post(url, json={**configmap(name), "data": {"v": "1"}}).status_code == 201
    first = kube.client.get(url, params={"limit": 1}).json()
    assert [i["metadata"]["name"] for i in first["items"]] == ["a"]
    assert kube.client.patch(f"{url}/b", json={"data": {"v": "2"}}, headers=MERGE_PATCH).status_code == 200
    assert kube.client.delete(f"{url}/c").status_code == 200
    assert kube.client.post(url, json={**configmap("bb"), "data": {"v": "1"}}).status_code == 201
    rest = kube.client.get(url, params={"continue": first["metadata"]["continue"]}).json()
    assert _names_and_values(rest) == [("b", "1"), ("c", "1")]
    assert rest["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]


def test_an_exact_list_older_than_the_history_is_410(kube: KubeTarget, namespace: str) -> None:
    """Revision 1 is older than the history once the server compacted it: at once on the devcluster
    (its history is its watch log); on kube-apiserver at its next etcd compaction after the first
    writes (every --etcd-compaction-interval, 5 min by default; `make test-real` starts its
    apiserver with 60 s), so a fresh real cluster is polled until then."""

    def exact_list_of_revision_one() -> httpx.Response:
        return kube.client.get(
            f"/api/v1/namespaces/{namespace}/configmaps",
            params={"resourceVersion": "1", "resourceVersionMatch": "Exact"},
        )

    response = exact_list_of_revision_one()
    deadline = time.monotonic() + (0 if kube.is_devcluster else 400)
    while response.status_code == 200 and time.monotonic() < deadline:
        time.sleep(2)
        response = exact_list_of_revision_one()
    assert response.status_code == 410
    body = status_of(response)
    assert (body["reason"], body["message"]) == (
        "Expired",
        "The resourceVersion for the provided list is too old.",
    )


def test_a_read_at_a_revision_not_reached_is_504(kube: KubeTarget, history: tuple[str, str, str]) -> None:
    url, _, after = history
    future = str(int(after) + 100_000)
    exact = kube.client.get(url, params={"resourceVersion": future, "resourceVersionMatch": "Exact"})
    assert exact.status_code == 504
    body = status_of(exact)
    assert body["reason"] == "Timeout"
    assert body["message"].startswith(f"Timeout: Too large resource version: {future}, current: ")
    assert body["details"]["causes"] == [
        {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
    ]
    started = time.monotonic()
    waited = kube.client.get(f"{url}/a", params={"resourceVersion": future})
    assert waited.status_code == 504
    assert time.monotonic() - started >= 2.5, "kube waits (3 s) for its cache to catch up before giving up"


def test_a_get_at_an_old_revision_reads_the_current_object(
    kube: KubeTarget, history: tuple[str, str, str]
) -> None:
    url, before, _ = history
    got = kube.client.get(f"{url}/a", params={"resourceVersion": before})
    assert got.status_code == 200
    assert got.json()["data"] == {"v": "2"}


def test_a_watch_from_before_the_history_is_one_410_error_event(kube: KubeTarget, namespace: str) -> None:
    if not kube.is_devcluster:
        # kube-apiserver's watch cache answers 410 only for a revision older than the oldest event it
        # still holds; a fresh cluster whose cache was filled at etcd revision 1 holds it until its
        # buffer wraps and replays revision 1 onward as ADDED events (3 of 4 fresh conformance runs).
        pytest.skip("kube-apiserver may still hold revision 1 in its watch cache on a fresh cluster")
    events = watch(
        kube.client, f"/api/v1/namespaces/{namespace}/configmaps", resourceVersion="1", timeoutSeconds=2
    )
    assert len(events) == 1, events
    status = events[0]["object"]
    assert events[0]["type"] == "ERROR"
    assert (status["kind"], status["reason"], status["code"]) == ("Status", "Expired", 410)
    assert status["message"].startswith("too old resource version: 1 (")


def test_a_watch_from_an_exact_revision_replays_what_followed(
    kube: KubeTarget, history: tuple[str, str, str]
) -> None:
    url, before, _ = history
    events = watch(kube.client, url, resourceVersion=before, timeoutSeconds=1)
    seen = [(e["type"], e["object"]["metadata"]["name"]) for e in events]
    assert seen == [("ADDED", "b"), ("MODIFIED", "a"), ("DELETED", "b")]
    assert int(events[-1]["object"]["metadata"]["resourceVersion"]) > int(before)
