"""The Workload events the Kueue stand-in records, compared with real Kueue's (../shared fixture).

Uses the in-memory fake API of ``test_standin``: events are POSTed to ``events.k8s.io/v1`` and
series are merge-patched, as the stand-in's recorder does through its HTTP client.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from devcluster.standin.client import ApiClient
from devcluster.standin.kueue import CLUSTER_QUEUES, LOCAL_QUEUES, WORKLOADS, KueueStandin
from devcluster.standin.recorder import EVENTS, EventRecorder
from tests.devcluster.test_standin import (
    PREEMPT,
    FakeApi,
    FakeClock,
    _key,
    cluster_queue,
    conditions,
    local_queue,
    prioritised,
    release_quota,
    workload,
)


@pytest.fixture
def api() -> FakeApi:
    return FakeApi.with_flavors()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def client(api: FakeApi) -> AsyncIterator[ApiClient]:
    instance = ApiClient(
        url="https://devcluster.test", token="t", ca_file=None, transport=httpx.MockTransport(api.handle)
    )
    yield instance
    await instance.aclose()


@pytest.fixture
def standin(client: ApiClient, clock: FakeClock) -> KueueStandin:
    return KueueStandin(client=client, clock=clock)


def events(api: FakeApi, *, regarding: str | None = None) -> list[dict[str, Any]]:
    """Recorded events in creation order (by resourceVersion), optionally about one object."""
    found = sorted(
        api.objects.get(_key(EVENTS), {}).values(), key=lambda e: int(e["metadata"]["resourceVersion"])
    )
    return [e for e in found if regarding is None or e["regarding"]["name"] == regarding]


def summary(event: dict[str, Any]) -> tuple[str, str, str, str, str]:
    return (event["type"], event["reason"], event["action"], event["reportingController"], event["note"])


@pytest.fixture
def golden_events(golden_dir: Path) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = yaml.safe_load((golden_dir / "events.yaml").read_text())["items"]
    return items


def golden_summary(event: dict[str, Any]) -> tuple[str, str, str, str, str]:
    """A core/v1 Event of the fixture in the events.k8s.io terms of :func:`summary`."""
    return (event["type"], event["reason"], event["action"], event["reportingComponent"], event["message"])


@pytest.mark.needs_shared
async def test_admission_events_match_real_kueue(
    api: FakeApi, standin: KueueStandin, clock: FakeClock, golden_events: list[dict[str, Any]]
) -> None:
    api.put(CLUSTER_QUEUES, cluster_queue("golden-cq", cpu=10))
    api.put(LOCAL_QUEUES, local_queue("q", "ns", "golden-cq"))
    api.put(WORKLOADS, workload("wl"))  # created at 02:34:03, as the clock
    clock.advance(1.2)

    await standin.reconcile_once()

    recorded = events(api, regarding="wl")
    golden = [e for e in golden_events if e["involvedObject"]["kind"] == "Workload"][:2]
    assert [summary(e) for e in recorded] == [golden_summary(e) for e in golden]
    stored = api.get(WORKLOADS, "wl", "ns")
    for event in recorded:
        assert event["regarding"] == {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "Workload",
            "namespace": "ns",
            "name": "wl",
            "uid": "uid-wl",
            "resourceVersion": stored["metadata"]["resourceVersion"],
        }
        assert event["reportingInstance"].startswith("kueue-admission-")
        assert event["metadata"]["name"].startswith("wl.")
        assert event["eventTime"] == "2026-11-22T02:34:04.200000Z"
    await standin.reconcile_once()
    assert len(events(api)) == 2, "an admitted Workload is not reported again"


@pytest.mark.needs_shared
async def test_deactivation_event_matches_real_kueue(
    api: FakeApi, standin: KueueStandin, golden_events: list[dict[str, Any]]
) -> None:
    api.put(CLUSTER_QUEUES, cluster_queue("cq", cpu=1))
    api.put(LOCAL_QUEUES, local_queue("q", "ns", "cq"))
    api.put(WORKLOADS, workload("wl"))
    await standin.reconcile_once()
    api.get(WORKLOADS, "wl", "ns")["spec"]["active"] = False

    await standin.reconcile_once()
    await standin.reconcile_once()

    [golden] = [e for e in golden_events if e["reason"] == "EvictedDueToDeactivated"]
    assert [summary(e) for e in events(api, regarding="wl")][2:] == [golden_summary(golden)]


async def test_pending_warning_is_recorded_once_per_verdict(api: FakeApi, standin: KueueStandin) -> None:
    """Kueue 0.20's reasons (UnadmittedWorkloadsObservability, on by default): the condition's reason
    is the Warning's reason and action (scheduler ``requeueAndUpdate``)."""
    api.put(CLUSTER_QUEUES, cluster_queue("cq", cpu=1))
    api.put(LOCAL_QUEUES, local_queue("q", "ns", "cq"))
    api.put(WORKLOADS, workload("busy", cpu="1"))
    await standin.reconcile_once()
    api.put(WORKLOADS, workload("waiting", cpu="1"))
    api.put(WORKLOADS, workload("huge", cpu="2"))

    await standin.reconcile_once()
    await standin.reconcile_once()

    waiting = "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor spot, 1 more needed"
    huge = (
        "couldn't assign flavors to pod set main: insufficient quota for cpu in flavor spot, previously considered "
        "podsets requests (0) + current podset request (2) > maximum capacity (1)"
    )
    assert [summary(e) for e in events(api, regarding="waiting")] == [
        ("Warning", "WaitingForQuota", "WaitingForQuota", "kueue-admission", waiting)
    ]
    assert [summary(e) for e in events(api, regarding="huge")] == [
        ("Warning", "ExceedsMaxQuota", "ExceedsMaxQuota", "kueue-admission", huge)
    ]
    assert conditions(api.get(WORKLOADS, "huge", "ns"))["QuotaReserved"] == ("False", "ExceedsMaxQuota", huge)


async def test_preemption_events_name_both_workloads(api: FakeApi, standin: KueueStandin) -> None:
    api.put(CLUSTER_QUEUES, cluster_queue("cq", cpu=1, **PREEMPT))
    api.put(LOCAL_QUEUES, local_queue("q", "ns", "cq"))
    api.put(WORKLOADS, prioritised("low", 0))
    await standin.reconcile_once()
    api.put(WORKLOADS, prioritised("high", 100))

    await standin.reconcile_once()
    release_quota(api, "low")
    await standin.reconcile_once()

    message = (
        "Preempted to accommodate a workload (UID: uid-high, JobUID: job-high) due to prioritization "
        "in the ClusterQueue; preemptor path: /cq; preemptee path: /cq"
    )
    priorities = "preemptor effective priority: 100 (base: 100, boost: 0); preemptee effective priority: 0 (base: 0, boost: 0)"
    assert [summary(e)[1:] for e in events(api, regarding="low")][2:4] == [
        ("EvictedDueToPreempted", "EvictedDueToPreempted", "kueue-admission", message),
        ("Preempted", "Preempted", "kueue-admission", f"{message}; {priorities}"),
    ]
    assert [summary(e)[1:] for e in events(api, regarding="high")][1] == (
        "WaitingForPreemptedWorkloads",
        "WaitingForPreemptedWorkloads",
        "kueue-admission",
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor spot, 1 more needed. "
        "Pending the preemption of 1 workload(s)",
    )
    assert [summary(e)[1] for e in events(api, regarding="high")] == [
        "PreemptedWorkload",
        "WaitingForPreemptedWorkloads",
        "QuotaReserved",
        "Admitted",
    ]
    [preempted] = [e for e in events(api, regarding="high") if e["reason"] == "PreemptedWorkload"]
    assert preempted["note"] == f"Preempted workload ns/low (UID: uid-low) in ClusterQueue cq; {priorities}"


async def test_admission_checks_defer_admitted_to_the_workload_controller(
    api: FakeApi, standin: KueueStandin, clock: FakeClock
) -> None:
    api.put(
        CLUSTER_QUEUES,
        cluster_queue("cq", cpu=3, admissionChecksStrategy={"admissionChecks": [{"name": "prov"}]}),
    )
    api.put(LOCAL_QUEUES, local_queue("q", "ns", "cq"))
    api.put(WORKLOADS, workload("wl"))
    await standin.reconcile_once()
    assert [summary(e)[1] for e in events(api)] == ["QuotaReserved"]

    api.get(WORKLOADS, "wl", "ns")["status"]["admissionChecks"][0]["state"] = "Ready"
    clock.advance(7)
    await standin.reconcile_once()

    assert summary(events(api)[-1]) == (
        "Normal",
        "Admitted",
        "Admitted",
        "kueue-workload-controller",
        "Admitted by ClusterQueue cq, wait time since reservation was 7s",
    )


async def test_a_replaced_slice_gets_kueues_event(api: FakeApi, standin: KueueStandin) -> None:
    api.put(CLUSTER_QUEUES, cluster_queue("cq", cpu=3))
    api.put(LOCAL_QUEUES, local_queue("q", "ns", "cq"))
    old = workload("job-sample-1", count=2)
    old["metadata"]["labels"] = {"kueue.x-k8s.io/job-uid": "job-uid"}
    api.put(WORKLOADS, old)
    await standin.reconcile_once()
    new = workload("job-sample-2", count=3)
    new["metadata"]["labels"] = {"kueue.x-k8s.io/job-uid": "job-uid"}
    new["metadata"]["annotations"] = {"kueue.x-k8s.io/workload-slice-replacement-for": "ns/job-sample-1"}
    api.put(WORKLOADS, new)

    await standin.reconcile_once()

    assert summary(events(api, regarding="job-sample-1")[-1]) == (
        "Normal",
        "WorkloadSliceReplaced",
        "Replaced",
        "kueue-admission",
        "Replaced to accommodate a workload (UID: uid-job-sample-2, JobUID: job-uid) due to workload slice aggregation",
    )


async def test_recorder_aggregates_isomorphic_events_like_client_go(
    api: FakeApi, client: ApiClient, clock: FakeClock
) -> None:
    recorder = EventRecorder(client=client, reporting_controller="ctl", clock=clock, hostname="vm")
    metadata = {"name": "cm", "namespace": "ns", "resourceVersion": "5"}
    subject: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata}
    for note in ("first", "second", "third"):
        await recorder.event(subject, type="Normal", reason="Done", action="Do", note=note)
        clock.advance(1)
    [event] = events(api)
    name = event["metadata"]["name"]
    assert event["note"] == "first", "the note is not part of the key: the first one stays"
    assert event["reportingInstance"] == "ctl-vm"
    assert event["series"] == {"count": 2, "lastObservedTime": "2026-11-22T02:34:04.000000Z"}

    changed = {**subject, "metadata": {**metadata, "resourceVersion": "6"}}
    await recorder.event(changed, type="Normal", reason="Done", action="Do", note="again")
    assert len(events(api)) == 2, "another resourceVersion of the object is another event"

    clock.now += timedelta(minutes=6)
    await recorder.event(changed, type="Warning", reason="Other", action="Do", note="x")
    [series] = [e for e in events(api) if e["metadata"]["name"] == name]
    assert series["series"]["count"] == 3, "a quiet series is written with its final count"


async def test_concurrent_events_finish_each_quiet_series_once(api: FakeApi, clock: FakeClock) -> None:
    """Two concurrent calls that both find the same quiet series to finish write it once between
    them and neither fails."""

    async def handle(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(0)  # answer later, so the two calls interleave at every request
        return api.handle(request)

    client = ApiClient(
        url="https://devcluster.test", token="t", ca_file=None, transport=httpx.MockTransport(handle)
    )
    recorder = EventRecorder(client=client, reporting_controller="ctl", clock=clock, hostname="vm")
    subjects = [
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": "ns", "resourceVersion": "1"},
        }
        for name in ("a", "b", "c", "d")
    ]
    try:
        for subject in subjects[:2]:
            for _ in range(3):  # created, made a series of 2, then a third occurrence not written yet
                await recorder.event(subject, type="Normal", reason="Done", action="Do", note="x")
        clock.now += timedelta(minutes=6)
        await asyncio.gather(
            *(recorder.event(s, type="Normal", reason="Done", action="Do", note="x") for s in subjects[2:])
        )
    finally:
        await client.aclose()
    series = sorted(e["series"]["count"] for e in events(api) if e.get("series"))
    assert series == [3, 3], "each quiet series written once with its final count"
    assert len(events(api)) == 4


async def test_deferred_recorder_writes_nothing_until_flushed_then_in_order(
    api: FakeApi, client: ApiClient, clock: FakeClock
) -> None:
    recorder = EventRecorder(
        client=client, reporting_controller="ctl", clock=clock, hostname="vm", deferred=True
    )
    subject: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "cm", "namespace": "ns", "resourceVersion": "5"},
    }
    for reason in ("First", "Second", "Second"):
        await recorder.event(subject, type="Normal", reason=reason, action="Do", note=reason.lower())
        clock.advance(1)
    assert events(api) == [], "a deferred recorder only queues"
    await recorder.flush()
    first, second = events(api)
    assert (first["reason"], second["reason"]) == ("First", "Second")
    assert first["eventTime"] < second["eventTime"], "each event keeps the time it was recorded at"
    assert second["series"]["count"] == 2, "aggregation works on the queued events as on direct ones"
    await recorder.flush()
    assert len(events(api)) == 2, "a second flush writes nothing again"


async def test_standin_pass_writes_its_events_after_its_admissions(
    api: FakeApi, standin: KueueStandin
) -> None:
    api.put(CLUSTER_QUEUES, cluster_queue("cq", cpu=10))
    api.put(LOCAL_QUEUES, local_queue("q", "ns", "cq"))
    for name in ("a", "b"):
        api.put(WORKLOADS, workload(name, cpu="1"))
    await standin.reconcile_once()
    admitted_at = max(
        int(api.get(WORKLOADS, name, "ns")["metadata"]["resourceVersion"]) for name in ("a", "b")
    )
    written = events(api)
    assert [e["reason"] for e in written] == ["QuotaReserved", "Admitted", "QuotaReserved", "Admitted"]
    assert all(int(e["metadata"]["resourceVersion"]) > admitted_at for e in written), (
        "the pass admits every Workload first, then writes the events"
    )
