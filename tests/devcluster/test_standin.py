"""Kueue stand-in and job runner against an in-memory fake API (httpx.MockTransport).

The fake implements just the REST verbs the add-ons use (list, get, PUT /status with
resourceVersion checks, merge-PATCH /status, and create / merge-PATCH of the Events they record). Golden objects from real Kueue in ../shared pin the
exact status shapes, reasons and messages.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from devcluster.standin.client import ApiClient, ApiError, Resource
from devcluster.standin.jobrunner import JOBS, DeclarativeCompletion, JobRunner
from devcluster.standin.kueue import (
    CLUSTER_QUEUES,
    LOCAL_QUEUES,
    NAMESPACE_MISMATCH_MESSAGE,
    NAMESPACES,
    RESOURCE_FLAVORS,
    WORKLOADS,
    KueueStandin,
    start_addons,
)

Key = tuple[str, str, str]
APPWRAPPERS = Resource("workload.codeflare.dev", "v1beta2", "appwrappers")


class FakeClock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 22, 2, 34, 3, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def _key(resource: Resource) -> Key:
    return (resource.group, resource.version, resource.plural)


def _merge(target: dict[str, Any], patch: dict[str, Any]) -> None:
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            _merge(target[key], value)
        else:
            target[key] = copy.deepcopy(value)


class FakeApi:
    """Objects by (group, version, plural) then (namespace, name); counts writes per path."""

    def __init__(self) -> None:
        self.objects: dict[Key, dict[tuple[str, str], dict[str, Any]]] = {}
        self.writes: list[str] = []
        #: (path, field manager, force, body) of every server-side apply; the fake merges an apply's
        #: body like a merge patch (no field ownership: what leaving a field out removes is the
        #: devcluster's part, tests/devcluster/test_field_ownership.py and tests/e2e)
        self.applies: list[tuple[str, str, str, dict[str, Any]]] = []
        self.conflict_next_write = False
        self._version = 0

    def put(self, resource: Resource, obj: dict[str, Any]) -> dict[str, Any]:
        self._version += 1
        stored = copy.deepcopy(obj)
        metadata = stored.setdefault("metadata", {})
        metadata["resourceVersion"] = str(self._version)
        metadata.setdefault("generation", 1)
        metadata.setdefault("uid", f"uid-{metadata['name']}")
        metadata.setdefault("creationTimestamp", f"2026-11-22T02:34:{self._version:02d}Z")
        self.objects.setdefault(_key(resource), {})[(metadata.get("namespace", ""), metadata["name"])] = (
            stored
        )
        return stored

    def get(self, resource: Resource, name: str, namespace: str = "") -> dict[str, Any]:
        return self.objects[_key(resource)][(namespace, name)]

    @classmethod
    def with_flavors(cls, *names: str) -> FakeApi:
        """A fake API server that has the ResourceFlavors the tests' queues name (Kueue admits only
        through ClusterQueues whose flavors exist)."""
        api = cls()
        for name in names or ("spot", "golden-spot"):
            flavor = {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "ResourceFlavor",
                "metadata": {"name": name},
            }
            api.put(RESOURCE_FLAVORS, flavor)
        api._version = 0  # the tests' timestamps count their own objects from 02:34:01
        return api

    def handle(self, request: httpx.Request) -> httpx.Response:
        parts = request.url.path.strip("/").split("/")
        if parts[0] == "api":
            group, version, rest = "", parts[1], parts[2:]
        else:
            group, version, rest = parts[1], parts[2], parts[3:]
        namespace = None
        if rest[0] == "namespaces" and len(rest) >= 3:
            namespace, rest = rest[1], rest[2:]
        table = self.objects.get((group, version, rest[0]), {})
        if len(rest) == 1 and request.method == "POST":  # the Events the add-ons record
            self.writes.append(f"POST {request.url.path}")
            if (namespace or "", json.loads(request.content)["metadata"]["name"]) in table:
                return httpx.Response(409, json={"kind": "Status", "code": 409, "reason": "AlreadyExists"})
            created = self.put(Resource(group, version, rest[0]), json.loads(request.content))
            return httpx.Response(201, json=copy.deepcopy(created))
        if len(rest) == 1:
            items = [obj for (ns, _), obj in table.items() if namespace is None or ns == namespace]
            return httpx.Response(200, json={"kind": "List", "items": copy.deepcopy(items)})
        stored = table.get((namespace or "", rest[1]))
        if stored is None:
            return httpx.Response(404, json={"kind": "Status", "code": 404})
        if request.method == "GET":
            return httpx.Response(200, json=copy.deepcopy(stored))
        self.writes.append(f"{request.method} {request.url.path}")
        if self.conflict_next_write:
            self.conflict_next_write = False
            return httpx.Response(409, json={"kind": "Status", "code": 409})
        body = json.loads(request.content)
        if request.headers.get("content-type") == "application/apply-patch+yaml":
            params = request.url.params
            self.applies.append(
                (request.url.path, params.get("fieldManager", ""), params.get("force", ""), body)
            )
            expected = body["metadata"].get("resourceVersion")
            if expected is not None and expected != stored["metadata"]["resourceVersion"]:
                return httpx.Response(409, json={"kind": "Status", "code": 409})
        if request.method == "PUT":
            if body["metadata"].get("resourceVersion") != stored["metadata"]["resourceVersion"]:
                return httpx.Response(409, json={"kind": "Status", "code": 409})
            if rest[-1] == "status":
                stored["status"] = body.get("status", {})
            else:
                stored["spec"] = body.get("spec", {})
                finalizers = body["metadata"].get("finalizers")
                if finalizers:
                    stored["metadata"]["finalizers"] = finalizers
                else:
                    stored["metadata"].pop("finalizers", None)
        elif rest[-1] == "status":
            _merge(stored, {"status": body.get("status", {})})
        else:
            _merge(stored, body)
        self._version += 1
        stored["metadata"]["resourceVersion"] = str(self._version)
        return httpx.Response(200, json=copy.deepcopy(stored))


def assert_evicted_as_kueue(api: FakeApi, path: str) -> None:
    """The last apply is Kueue's eviction of ``path``: forced, as ``kueue-admission``, its body leaving
    out ``clusterName`` and the nominations (so that it removes what that manager set)."""
    [*_, (applied, manager, force, body)] = api.applies
    assert (applied, manager, force) == (path, "kueue-admission", "true")
    assert body["status"]["conditions"][0]["type"] == "QuotaReserved"
    assert any(c["type"] == "Evicted" and c["status"] == "True" for c in body["status"]["conditions"])
    assert body["metadata"]["resourceVersion"], "strict, as Kueue's eviction"
    assert "clusterName" not in body["status"] and "nominatedClusterNames" not in body["status"]
    assert body["status"]["conditions"] and body["status"]["admissionChecks"]


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


def cluster_queue(name: str, *, cpu: Any, memory: Any = "10Gi", **spec: Any) -> dict[str, Any]:
    resources = [{"name": "cpu", "nominalQuota": cpu}, {"name": "memory", "nominalQuota": memory}]
    body = {
        "namespaceSelector": {},
        "resourceGroups": [
            {"coveredResources": ["cpu", "memory"], "flavors": [{"name": "spot", "resources": resources}]}
        ],
    }
    body.update(spec)
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": body,
    }


def local_queue(name: str, namespace: str, cq: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cq},
    }


def workload(
    name: str, *, cpu: str = "1", count: int = 1, queue: str = "q", namespace: str = "ns"
) -> dict[str, Any]:
    container = {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu, "memory": "200Mi"}}}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "active": True,
            "queueName": queue,
            "podSets": [{"name": "main", "count": count, "template": {"spec": {"containers": [container]}}}],
        },
    }


def conditions(obj: dict[str, Any]) -> dict[str, tuple[str, str, str]]:
    return {
        c["type"]: (c["status"], c["reason"], c["message"])
        for c in (obj.get("status") or {}).get("conditions", [])
    }


def _golden(golden_dir: Path, name: str) -> dict[str, Any]:
    document = yaml.safe_load((golden_dir / name).read_text())
    found: dict[str, Any] = document["items"][0] if document.get("kind") == "List" else document
    return found


# --- stand-in: admission ---------------------------------------------------------------------------


@pytest.mark.needs_shared
async def test_admission_matches_real_kueue_golden(
    api: FakeApi, standin: KueueStandin, golden_dir: Path
) -> None:
    golden = _golden(golden_dir, "workload-admitted.yaml")
    api.put(CLUSTER_QUEUES, cluster_queue("golden-cq", cpu=10))
    api.objects[_key(CLUSTER_QUEUES)][("", "golden-cq")]["spec"]["resourceGroups"][0]["flavors"][0][
        "name"
    ] = "golden-spot"
    api.put(LOCAL_QUEUES, local_queue("golden-q", "golden", "golden-cq"))
    pending = {
        "apiVersion": golden["apiVersion"],
        "kind": "Workload",
        "metadata": {"name": "wl", "namespace": "golden"},
    }
    pending["spec"] = copy.deepcopy(golden["spec"])
    api.put(WORKLOADS, pending)

    await standin.reconcile_once()

    admitted = api.get(WORKLOADS, "wl", "golden")
    assert admitted["status"]["admission"] == golden["status"]["admission"]
    expected = conditions(golden)
    actual = conditions(admitted)
    for condition_type in ("QuotaReserved", "Admitted"):
        assert actual[condition_type] == expected[condition_type]
    for condition in admitted["status"]["conditions"]:
        assert condition["observedGeneration"] == 1
        assert condition["lastTransitionTime"] == "2026-11-22T02:34:03Z"


async def test_fifo_within_nominal_quota_best_effort(api: FakeApi, standin: KueueStandin) -> None:
    api.put(CLUSTER_QUEUES, cluster_queue("cq", cpu=3))
    api.put(LOCAL_QUEUES, local_queue("q", "ns", "cq"))
    api.put(WORKLOADS, workload("first", cpu="2"))
    api.put(WORKLOADS, workload("second", cpu="2"))
    api.put(WORKLOADS, workload("third", cpu="500m", count=2))

    await standin.reconcile_once()

    assert conditions(api.get(WORKLOADS, "first", "ns"))["Admitted"][0] == "True"
    assert conditions(api.get(WORKLOADS, "second", "ns"))["QuotaReserved"] == (
        "False",
        "WaitingForQuota",  # UnadmittedWorkloadsObservability (default on): the deprecated "Pending" when off
        "couldn't assign flavors to pod set main: insufficient unused quota for cpu in flavor spot, 1 more needed",
    )
    third = api.get(WORKLOADS, "third", "ns")
    assert third["status"]["admission"]["podSetAssignments"][0]["resourceUsage"] == {
        "cpu": "1",
        "memory": "400Mi",
    }

    first = api.get(WORKLOADS, "first", "ns")
    first["status"]["conditions"].append(
        {"type": "Finished", "status": "True", "reason": "Succeeded", "message": ""}
    )
    await standin.reconcile_once()

    assert "admission" in api.get(WORKLOADS, "second", "ns")["status"]


async def test_replacement_slice_takes_over_the_quota_of_the_slice_it_replaces(
    api: FakeApi, standin: KueueStandin
) -> None:
    """Kueue's scheduler with elastic slices: the replaced slice's usage counts as free, and once the
    replacement is admitted the old slice is finished ``WorkloadSliceReplaced`` with its message."""
    api.put(CLUSTER_QUEUES, cluster_queue("cq", cpu=3))
    api.put(LOCAL_QUEUES, local_queue("q", "ns", "cq"))
    old = workload("job-sample-1", count=2)
    old["metadata"]["labels"] = {"kueue.x-k8s.io/job-uid": "job-uid"}
    api.put(WORKLOADS, old)
    await standin.reconcile_once()
    assert conditions(api.get(WORKLOADS, "job-sample-1", "ns"))["Admitted"][0] == "True"

    new = workload("job-sample-2", count=3)  # 3 more CPUs would not fit beside the old slice's 2
    new["metadata"]["labels"] = {"kueue.x-k8s.io/job-uid": "job-uid"}
    new["metadata"]["annotations"] = {"kueue.x-k8s.io/workload-slice-replacement-for": "ns/job-sample-1"}
    api.put(WORKLOADS, new)
    stranger = workload("other", count=1)  # no replacement: does not fit while the slices hold 3
    api.put(WORKLOADS, stranger)
    await standin.reconcile_once()

    assert conditions(api.get(WORKLOADS, "job-sample-2", "ns"))["Admitted"][0] == "True"
    assert conditions(api.get(WORKLOADS, "job-sample-1", "ns"))["Finished"] == (
        "True",
        "WorkloadSliceReplaced",
        "Replaced to accommodate a workload (UID: uid-job-sample-2, JobUID: job-uid) due to workload slice aggregation",
    )
    assert "admission" not in api.get(WORKLOADS, "other", "ns").get("status", {})


async def test_a_replacement_for_a_slice_without_quota_is_an_ordinary_workload(
    api: FakeApi, standin: KueueStandin
) -> None:
    api.put(CLUSTER_QUEUES, cluster_queue("cq", cpu=3))
    api.put(LOCAL_QUEUES, local_queue("q", "ns", "cq"))
    api.put(WORKLOADS, workload("busy", count=2))
    await standin.reconcile_once()
    new = workload("job-sample-2", count=3)
    new["metadata"]["annotations"] = {"kueue.x-k8s.io/workload-slice-replacement-for": "ns/missing"}
    api.put(WORKLOADS, new)
    await standin.reconcile_once()
    assert conditions(api.get(WORKLOADS, "job-sample-2", "ns"))["QuotaReserved"][:2] == (
        "False",
        "WaitingForQuota",
    )
    assert "Finished" not in conditions(api.get(WORKLOADS, "busy", "ns"))


async def test_strict_fifo_blocks_later_workloads(api: FakeApi, standin: KueueStandin) -> None:
    api.put(CLUSTER_QUEUES, cluster_queue("cq", cpu=3, queueingStrategy="StrictFIFO"))
    api.put(LOCAL_QUEUES, local_queue("q", "ns", "cq"))
    api.put(WORKLOADS, workload("big", cpu="4"))
    api.put(WORKLOADS, workload("small", cpu="1"))

    await standin.reconcile_once()

    assert "admission" not in api.get(WORKLOADS, "small", "ns").get("status", {})


async def test_missing_queues_make_the_workload_misconfigured(api: FakeApi, standin: KueueStandin) -> None:
    api.put(LOCAL_QUEUES, local_queue("orphan", "ns", "nowhere"))
    api.put(WORKLOADS, workload("no-lq", queue="absent"))
    api.put(WORKLOADS, workload("no-cq", queue="orphan"))

    await standin.reconcile_once()
    writes = len(api.writes)
    await standin.reconcile_once()

    assert conditions(api.get(WORKLOADS, "no-lq", "ns"))["QuotaReserved"] == (
        "False",
        "Misconfigured",  # getQueueBlocker; "Inadmissible" with UnadmittedWorkloadsObservability off
        "LocalQueue absent doesn't exist",
    )
    assert conditions(api.get(WORKLOADS, "no-cq", "ns"))["QuotaReserved"] == (
        "False",
        "Misconfigured",
        "ClusterQueue nowhere doesn't exist",
    )
    assert len(api.writes) == writes, "an unchanged verdict is not written again"


async def test_a_cluster_queue_admits_only_the_namespaces_it_selects(
    api: FakeApi, standin: KueueStandin
) -> None:
    """Kueue's scheduler: a namespace the ClusterQueue's ``namespaceSelector`` does not select stays
    pending (``Misconfigured``, Kueue's message, the pending Warning); no selector selects nothing."""
    for name, labels in (("ml", {"team": "ml"}), ("web", {"team": "web"})):
        api.put(
            NAMESPACES,
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}},
        )
    api.put(
        CLUSTER_QUEUES, cluster_queue("cq-ml", cpu="4", namespaceSelector={"matchLabels": {"team": "ml"}})
    )
    closed = cluster_queue("cq-closed", cpu="4")
    del closed["spec"]["namespaceSelector"]
    api.put(CLUSTER_QUEUES, closed)
    for namespace in ("ml", "web"):
        api.put(LOCAL_QUEUES, local_queue("q", namespace, "cq-ml"))
        api.put(LOCAL_QUEUES, local_queue("closed", namespace, "cq-closed"))
        api.put(WORKLOADS, workload("w", namespace=namespace))
        api.put(WORKLOADS, workload("c", namespace=namespace, queue="closed"))

    await standin.reconcile_once()

    assert conditions(api.get(WORKLOADS, "w", "ml"))["QuotaReserved"][0] == "True"
    refused = ("False", "Misconfigured", NAMESPACE_MISMATCH_MESSAGE)
    assert conditions(api.get(WORKLOADS, "w", "web"))["QuotaReserved"] == refused
    assert conditions(api.get(WORKLOADS, "c", "ml"))["QuotaReserved"] == refused
    assert conditions(api.get(WORKLOADS, "c", "web"))["QuotaReserved"] == refused
    warnings = [
        (event["reason"], event["note"], event["regarding"]["namespace"])
        for event in api.objects.get(("events.k8s.io", "v1", "events"), {}).values()
        if event["regarding"]["name"] == "w"
    ]
    assert ("Misconfigured", NAMESPACE_MISMATCH_MESSAGE, "web") in warnings


async def test_admission_checks_gate_admitted(api: FakeApi, standin: KueueStandin) -> None:
    api.put(
        CLUSTER_QUEUES,
        cluster_queue("cq", cpu=3, admissionChecksStrategy={"admissionChecks": [{"name": "prov"}]}),
    )
    api.put(LOCAL_QUEUES, local_queue("q", "ns", "cq"))
    api.put(WORKLOADS, workload("wl"))

    await standin.reconcile_once()
    wl = api.get(WORKLOADS, "wl", "ns")
    assert conditions(wl)["QuotaReserved"][0] == "True"
    assert conditions(wl)["Admitted"] == (
        "False",
        "UnsatisfiedAdmissionChecks",
        "The workload has not all checks ready",
    )
    assert [check["state"] for check in wl["status"]["admissionChecks"]] == ["Pending"]

    wl["status"]["admissionChecks"][0]["state"] = "Ready"
    await standin.reconcile_once()
    assert conditions(api.get(WORKLOADS, "wl", "ns"))["Admitted"] == (
        "True",
        "Admitted",
        "The workload is admitted",
    )


async def test_conflicting_write_is_retried_on_the_next_pass(api: FakeApi, standin: KueueStandin) -> None:
    api.put(CLUSTER_QUEUES, cluster_queue("cq", cpu=1))
    api.put(LOCAL_QUEUES, local_queue("q", "ns", "cq"))
    api.put(WORKLOADS, workload("wl"))
    api.conflict_next_write = True

    await standin.reconcile_once()
    assert "status" not in api.get(WORKLOADS, "wl", "ns")

    await standin.reconcile_once()
    assert conditions(api.get(WORKLOADS, "wl", "ns"))["QuotaReserved"][0] == "True"


# --- stand-in: deactivation and reactivation ---------------------------------------------------------


def _release_like_the_job_reconciler(wl: dict[str, Any]) -> None:
    """What kueue-bridge's job reconciler does once the stopped job has no active pods."""
    wl["status"].pop("admission")
    by_type = {c["type"]: c for c in wl["status"]["conditions"]}
    by_type["QuotaReserved"].update(
        status="False", reason="PendingEvaluation", message="The workload is deactivated"
    )
    by_type["Admitted"].update(
        status="False", reason="NoReservation", message="The workload has no reservation"
    )
    wl["status"]["conditions"].append(
        {
            "type": "Requeued",
            "status": "False",
            "reason": "Deactivated",
            "message": "The workload is deactivated",
        }
    )


@pytest.mark.needs_shared
async def test_deactivation_and_reactivation_follow_real_kueue(
    api: FakeApi, standin: KueueStandin, clock: FakeClock, golden_dir: Path
) -> None:
    after_deactivation = conditions(_golden(golden_dir, "workload-after-deactivation.yaml"))
    after_reactivation = conditions(_golden(golden_dir, "workload-finished.yaml"))
    api.put(CLUSTER_QUEUES, cluster_queue("golden-cq", cpu=1))
    api.put(LOCAL_QUEUES, local_queue("q", "ns", "golden-cq"))
    api.put(WORKLOADS, workload("wl"))
    api.put(WORKLOADS, workload("waiting"))
    await standin.reconcile_once()
    wl = api.get(WORKLOADS, "wl", "ns")
    wl["spec"]["active"] = False
    wl["metadata"]["generation"] = 2

    clock.advance(11)
    await standin.reconcile_once()
    wl = api.get(WORKLOADS, "wl", "ns")
    assert conditions(wl)["Evicted"] == after_deactivation["Evicted"]
    assert conditions(wl)["QuotaReserved"][0] == "True", "only the job reconciler releases the reservation"
    assert wl["status"]["schedulingStats"] == {
        "evictions": [{"reason": "Deactivated", "underlyingCause": "", "count": 1}]
    }
    assert "admission" not in api.get(WORKLOADS, "waiting", "ns").get("status", {})

    _release_like_the_job_reconciler(wl)
    await standin.reconcile_once()
    wl = api.get(WORKLOADS, "wl", "ns")
    assert conditions(wl) == {
        key: after_deactivation[key] for key in ("QuotaReserved", "Evicted", "Admitted", "Requeued")
    }
    assert "admission" in api.get(WORKLOADS, "waiting", "ns")["status"], (
        "released quota goes to the next in line"
    )

    waiting = api.get(WORKLOADS, "waiting", "ns")
    waiting["status"]["conditions"].append(
        {"type": "Finished", "status": "True", "reason": "Succeeded", "message": ""}
    )
    wl["spec"]["active"] = True
    wl["metadata"]["generation"] = 3
    clock.advance(4)
    await standin.reconcile_once()
    assert conditions(api.get(WORKLOADS, "wl", "ns"))["Requeued"] == after_reactivation["Requeued"]

    await standin.reconcile_once()
    wl = api.get(WORKLOADS, "wl", "ns")
    assert conditions(wl) == {
        key: after_reactivation[key] for key in ("QuotaReserved", "Evicted", "Admitted", "Requeued")
    }
    assert all(c["observedGeneration"] == 3 for c in wl["status"]["conditions"])


def _check_workload(api: FakeApi, standin_cq: str = "cq") -> None:
    api.put(
        CLUSTER_QUEUES,
        cluster_queue(standin_cq, cpu=3, admissionChecksStrategy={"admissionChecks": [{"name": "mk"}]}),
    )
    api.put(LOCAL_QUEUES, local_queue("q", "ns", standin_cq))
    api.put(WORKLOADS, workload("wl"))


async def test_a_retry_check_evicts_resets_the_checks_and_requeues(
    api: FakeApi, standin: KueueStandin, clock: FakeClock
) -> None:
    _check_workload(api)
    await standin.reconcile_once()
    wl = api.get(WORKLOADS, "wl", "ns")
    wl["status"]["admissionChecks"][0].update(state="Ready", message='The workload was admitted on "w1"')
    wl["status"]["clusterName"] = "w1"
    await standin.reconcile_once()
    assert conditions(api.get(WORKLOADS, "wl", "ns"))["Admitted"][0] == "True"
    wl = api.get(WORKLOADS, "wl", "ns")
    wl["status"]["admissionChecks"][0].update(state="Retry", message="Admitting remote lost")
    clock.advance(5)
    await standin.reconcile_once()
    wl = api.get(WORKLOADS, "wl", "ns")
    assert conditions(wl)["Evicted"] == (
        "True",
        "AdmissionCheck",
        'Evicted due to AdmissionCheck in Retry state: "mk" (Admitting remote lost)',
    )
    [check] = wl["status"]["admissionChecks"]
    assert (check["state"], check["message"], check["retryCount"]) == (
        "Pending",
        "Reset to Pending after eviction. Previously: Retry",
        1,
    )
    assert_evicted_as_kueue(api, "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/wl/status")
    assert conditions(wl)["QuotaReserved"][0] == "True", "only the job reconciler releases the reservation"
    _release_like_the_job_reconciler(wl)
    wl["status"]["conditions"][-1].update(reason="AdmissionCheck", message="Evicted due to ...")
    await standin.reconcile_once()
    assert conditions(api.get(WORKLOADS, "wl", "ns"))["Requeued"] == (
        "True",
        "BackoffFinished",
        "The workload backoff was finished",
    )
    await standin.reconcile_once()
    wl = api.get(WORKLOADS, "wl", "ns")
    assert conditions(wl)["QuotaReserved"][0] == "True", "admitted again"
    assert conditions(wl)["Evicted"][0] == "False"


async def test_a_rejected_check_or_a_deactivation_target_deactivates(
    api: FakeApi, standin: KueueStandin
) -> None:
    _check_workload(api)
    await standin.reconcile_once()
    api.get(WORKLOADS, "wl", "ns")["status"]["admissionChecks"][0].update(
        state="Rejected", message="No adapter"
    )
    await standin.reconcile_once()
    message = 'AdmissionCheck in Rejected state: "mk" (No adapter)'
    assert conditions(api.get(WORKLOADS, "wl", "ns"))["DeactivationTarget"] == (
        "True",
        "AdmissionCheck",
        message,
    )
    await standin.reconcile_once()
    assert api.get(WORKLOADS, "wl", "ns")["spec"]["active"] is False
    await standin.reconcile_once()
    wl = api.get(WORKLOADS, "wl", "ns")
    assert conditions(wl)["Evicted"] == (
        "True",
        "DeactivatedDueToAdmissionCheck",
        f"The workload is deactivated due to {message}",
    )
    assert "DeactivationTarget" not in conditions(wl)
    assert wl["status"]["schedulingStats"] == {
        "evictions": [{"reason": "Deactivated", "underlyingCause": "AdmissionCheck", "count": 1}]
    }


async def test_a_deactivation_evicts_as_every_eviction_checks_reset_cluster_forgotten(
    api: FakeApi, standin: KueueStandin
) -> None:
    """Kueue's deactivation is ``workloadevict.Evict`` too: a Workload dispatched by MultiKueue loses
    its cluster and Ready check, or it could never be dispatched again once reactivated."""
    _check_workload(api)
    await standin.reconcile_once()
    wl = api.get(WORKLOADS, "wl", "ns")
    wl["status"]["admissionChecks"][0].update(state="Ready", message='The workload was admitted on "w1"')
    wl["status"]["clusterName"] = "w1"
    await standin.reconcile_once()
    api.get(WORKLOADS, "wl", "ns")["spec"]["active"] = False
    await standin.reconcile_once()
    wl = api.get(WORKLOADS, "wl", "ns")
    assert conditions(wl)["Evicted"] == ("True", "Deactivated", "The workload is deactivated")
    [check] = wl["status"]["admissionChecks"]
    assert (check["state"], check["message"]) == (
        "Pending",
        "Reset to Pending after eviction. Previously: Ready",
    )
    assert_evicted_as_kueue(api, "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/wl/status")


# --- job runner --------------------------------------------------------------------------------------


def batch_job(name: str, *, suspend: bool, run_seconds: str | None = None, **spec: Any) -> dict[str, Any]:
    annotations = {"kueue-bridge.dev/run-seconds": run_seconds} if run_seconds is not None else {}
    body = {"parallelism": 2, "completions": 4, "suspend": suspend, "template": {"spec": {"containers": []}}}
    body.update(spec)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "ns", "annotations": annotations},
        "spec": body,
    }


@pytest.fixture
def runner(client: ApiClient, clock: FakeClock) -> JobRunner:
    completion = DeclarativeCompletion(resource=APPWRAPPERS, status_patch={"phase": "Succeeded"})
    return JobRunner(client=client, clock=clock, default_run_seconds=2.0, declarative=[completion])


async def test_job_runs_to_completion_like_the_job_controller(
    api: FakeApi, runner: JobRunner, clock: FakeClock
) -> None:
    api.put(JOBS, batch_job("sample", suspend=False))

    await runner.reconcile_once()
    status = api.get(JOBS, "sample", "ns")["status"]
    assert status == {"startTime": "2026-11-22T02:34:03Z", "active": 2, "ready": 2}

    clock.advance(1)
    await runner.reconcile_once()
    assert "completionTime" not in api.get(JOBS, "sample", "ns")["status"]

    clock.advance(1)
    await runner.reconcile_once()
    status = api.get(JOBS, "sample", "ns")["status"]
    assert status["succeeded"] == 4
    assert "active" not in status
    assert status["ready"] == 0
    assert status["completionTime"] == "2026-11-22T02:34:05Z"
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in status["conditions"]] == [
        ("SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of succeeded pods"),
        ("Complete", "True", "CompletionsReached", "Reached expected number of succeeded pods"),
    ]

    writes = len(api.writes)
    clock.advance(5)
    await runner.reconcile_once()
    assert len(api.writes) == writes, "a finished job is left alone"


async def test_a_job_annotated_to_fail_fails_like_one_past_its_backoff_limit(
    api: FakeApi, runner: JobRunner, clock: FakeClock
) -> None:
    job = batch_job("doomed", suspend=False, backoffLimit=1)
    job["metadata"]["annotations"]["kueue-bridge.dev/outcome"] = "Failed"
    api.put(JOBS, job)
    await runner.reconcile_once()
    clock.advance(2)
    await runner.reconcile_once()
    status = api.get(JOBS, "doomed", "ns")["status"]
    assert (status["failed"], status["ready"], "active" in status, "completionTime" in status) == (
        2,
        0,
        False,
        False,
    )
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in status["conditions"]] == [
        ("FailureTarget", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
        ("Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
    ]
    writes = len(api.writes)
    clock.advance(5)
    await runner.reconcile_once()
    assert len(api.writes) == writes, "a failed job is left alone"


async def test_suspending_a_running_job_clears_its_start_time_like_the_1_36_job_controller(
    api: FakeApi, runner: JobRunner, clock: FakeClock
) -> None:
    api.put(JOBS, batch_job("stopped", suspend=False, run_seconds="10"))
    await runner.reconcile_once()
    assert api.get(JOBS, "stopped", "ns")["status"]["startTime"] == "2026-11-22T02:34:03Z"

    api.get(JOBS, "stopped", "ns")["spec"]["suspend"] = True
    clock.advance(1)
    await runner.reconcile_once()
    status = api.get(JOBS, "stopped", "ns")["status"]
    assert "startTime" not in status, "cleared in the write that sets Suspended=True"
    assert (status["active"], status["ready"]) == (0, 0)
    assert conditions(api.get(JOBS, "stopped", "ns"))["Suspended"] == (
        "True",
        "JobSuspended",
        "Job suspended",
    )


async def test_job_managed_by_another_controller_is_left_alone(api: FakeApi, runner: JobRunner) -> None:
    api.put(JOBS, batch_job("remote", suspend=False, managedBy="kueue.x-k8s.io/multikueue"))
    api.put(JOBS, batch_job("local", suspend=False, managedBy="kubernetes.io/job-controller"))
    await runner.reconcile_once()
    assert "status" not in api.get(JOBS, "remote", "ns")
    assert api.get(JOBS, "local", "ns")["status"]["active"] == 2


async def test_suspended_job_is_marked_and_resumed_with_a_new_start_time(
    api: FakeApi, runner: JobRunner, clock: FakeClock
) -> None:
    api.put(JOBS, batch_job("held", suspend=True, run_seconds="10"))
    await runner.reconcile_once()
    assert conditions(api.get(JOBS, "held", "ns"))["Suspended"] == ("True", "JobSuspended", "Job suspended")

    api.get(JOBS, "held", "ns")["spec"]["suspend"] = False
    clock.advance(3)
    await runner.reconcile_once()
    job = api.get(JOBS, "held", "ns")
    assert conditions(job)["Suspended"] == ("False", "JobResumed", "Job resumed")
    assert job["status"]["startTime"] == "2026-11-22T02:34:06Z"
    assert job["status"]["active"] == 2

    clock.advance(9)
    await runner.reconcile_once()
    assert "completionTime" not in api.get(JOBS, "held", "ns")["status"], "run-seconds annotation is honoured"
    clock.advance(1)
    await runner.reconcile_once()
    assert conditions(api.get(JOBS, "held", "ns"))["Complete"][0] == "True"


async def test_declarative_crd_gets_its_completion_patch_once(
    api: FakeApi, runner: JobRunner, clock: FakeClock
) -> None:
    wrapper = {
        "apiVersion": "workload.codeflare.dev/v1beta2",
        "kind": "AppWrapper",
        "metadata": {"name": "aw", "namespace": "ns"},
    }
    api.put(APPWRAPPERS, {**wrapper, "spec": {"suspend": False}})
    api.put(
        APPWRAPPERS, {**wrapper, "metadata": {"name": "held", "namespace": "ns"}, "spec": {"suspend": True}}
    )

    await runner.reconcile_once()
    clock.advance(2)
    await runner.reconcile_once()
    await runner.reconcile_once()

    assert api.get(APPWRAPPERS, "aw", "ns")["status"] == {"phase": "Succeeded"}
    assert "status" not in api.get(APPWRAPPERS, "held", "ns")
    assert [w for w in api.writes if "appwrappers" in w] == [
        "PATCH /apis/workload.codeflare.dev/v1beta2/namespaces/ns/appwrappers/aw/status"
    ]


# --- entry point -------------------------------------------------------------------------------------


async def test_runner_leaves_jobs_of_other_controllers_alone(
    api: FakeApi, runner: JobRunner, clock: FakeClock
) -> None:
    api.put(JOBS, batch_job("mk", suspend=False, managedBy="kueue.x-k8s.io/multikueue"))
    api.put(JOBS, batch_job("own", suspend=False, managedBy="kubernetes.io/job-controller"))
    api.put(
        APPWRAPPERS,
        {"metadata": {"name": "aw", "namespace": "ns"}, "spec": {"suspend": False, "managedBy": "x"}},
    )
    await runner.reconcile_once()
    clock.advance(3)
    await runner.reconcile_once()
    assert "status" not in api.get(JOBS, "mk", "ns")
    assert conditions(api.get(JOBS, "own", "ns"))["Complete"][0] == "True"
    assert "status" not in api.get(APPWRAPPERS, "aw", "ns")


class GatedStatusWrites(httpx.AsyncBaseTransport):
    """The fake API behind a gate for status writes: each waits until ``release`` is set, so a test
    sees how many are in flight at once; the write to ``fail`` (a job name) answers 500."""

    def __init__(self, api: FakeApi, *, fail: str | None = None) -> None:
        self._api = api
        self._fail = fail
        self.in_flight = 0
        self.most_in_flight = 0
        self.started: list[str] = []
        self.release = asyncio.Event()

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.method == "PUT" and request.url.path.endswith("/status"):
            name = request.url.path.split("/")[-2]
            self.started.append(name)
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            try:
                await self.release.wait()
            finally:
                self.in_flight -= 1
            if name == self._fail:
                return httpx.Response(500, json={"kind": "Status", "code": 500}, request=request)
        await request.aread()
        response = self._api.handle(request)
        response.request = request
        return response


async def _pass_with(transport: GatedStatusWrites, *, concurrency: int, clock: FakeClock) -> None:
    """One job runner pass through ``transport``, its gate opened once the writes stop starting."""
    client = ApiClient(url="https://devcluster.test", token="t", ca_file=None, transport=transport)
    runner = JobRunner(client=client, clock=clock, concurrency=concurrency)
    one_pass = asyncio.create_task(runner.reconcile_once())
    try:
        while True:  # the workers start writes until each holds one; then nothing moves until release
            seen = len(transport.started)
            for _ in range(20):
                await asyncio.sleep(0)
            if len(transport.started) == seen:
                break
        transport.release.set()
        await one_pass
    finally:
        one_pass.cancel()
        await client.aclose()


async def test_runner_writes_at_most_its_concurrency_at_once_and_every_job_once(
    api: FakeApi, clock: FakeClock
) -> None:
    for n in range(7):
        api.put(JOBS, batch_job(f"job-{n}", suspend=False))
    transport = GatedStatusWrites(api)
    await _pass_with(transport, concurrency=3, clock=clock)
    assert transport.most_in_flight == 3
    assert sorted(transport.started) == [f"job-{n}" for n in range(7)]
    assert all(api.get(JOBS, f"job-{n}", "ns")["status"]["active"] == 2 for n in range(7))


async def test_runner_one_at_a_time_writes_in_order(api: FakeApi, clock: FakeClock) -> None:
    for n in range(4):
        api.put(JOBS, batch_job(f"job-{n}", suspend=False))
    transport = GatedStatusWrites(api)
    await _pass_with(transport, concurrency=1, clock=clock)
    assert transport.most_in_flight == 1
    assert transport.started == [f"job-{n}" for n in range(4)]


async def test_a_failed_write_ends_a_concurrent_pass_after_the_writes_in_flight(
    api: FakeApi, clock: FakeClock
) -> None:
    for n in range(6):
        api.put(JOBS, batch_job(f"job-{n}", suspend=False))
    transport = GatedStatusWrites(api, fail="job-0")
    with pytest.raises(ApiError) as failed:
        await _pass_with(transport, concurrency=2, clock=clock)
    assert failed.value.status_code == 500
    # job-0 and job-1 were in flight together; job-1's write is kept, nothing after it is started
    assert transport.started == ["job-0", "job-1"]
    assert "status" not in api.get(JOBS, "job-0", "ns")
    assert api.get(JOBS, "job-1", "ns")["status"]["active"] == 2
    assert all("status" not in api.get(JOBS, f"job-{n}", "ns") for n in range(2, 6))


def test_runner_concurrency_below_one_is_refused(client: ApiClient) -> None:
    with pytest.raises(ValueError, match="concurrency must be >= 1, got 0"):
        JobRunner(client=client, concurrency=0)


async def test_start_addons_runs_both_until_the_stack_closes(api: FakeApi) -> None:
    api.put(CLUSTER_QUEUES, cluster_queue("cq", cpu=1))
    api.put(LOCAL_QUEUES, local_queue("q", "ns", "cq"))
    api.put(WORKLOADS, workload("wl"))
    api.put(JOBS, batch_job("quick", suspend=False, run_seconds="0"))
    stack = await start_addons(
        url="https://devcluster.test",
        token="t",
        ca_file="",
        kueue_standin=True,
        job_runner=True,
        poll_interval=0.01,
        transport=httpx.MockTransport(api.handle),
        watch=False,  # the fake API serves no watches
    )
    try:
        deadline = asyncio.get_running_loop().time() + 10
        while not (
            "admission" in api.get(WORKLOADS, "wl", "ns").get("status", {})
            and "completionTime" in api.get(JOBS, "quick", "ns").get("status", {})
        ):
            assert asyncio.get_running_loop().time() < deadline, "add-ons made no progress"
            await asyncio.sleep(0.01)
    finally:
        await stack.aclose()
    writes = len(api.writes)
    await asyncio.sleep(0)
    assert len(api.writes) == writes


# --- stand-in: priority order and in-ClusterQueue preemption (standin_preemption) -------------------

PREEMPT = {"preemption": {"withinClusterQueue": "LowerPriority"}}


def prioritised(name: str, priority: int, **kwargs: Any) -> dict[str, Any]:
    obj = workload(name, **kwargs)
    obj["spec"]["priority"] = priority
    obj["metadata"]["labels"] = {"kueue.x-k8s.io/job-uid": f"job-{name}"}
    return obj


def release_quota(api: FakeApi, name: str) -> None:
    """What kueue-bridge's reconciler does once the preempted job has no active pods."""
    stored = api.get(WORKLOADS, name, "ns")
    stored["status"].pop("admission")
    for condition in stored["status"]["conditions"]:
        if condition["type"] == "QuotaReserved":
            condition.update(status="False", reason="Pending", message="Preempted")
    stored["status"]["conditions"].append(
        {"type": "Requeued", "status": "True", "reason": "Preempted", "message": "Preempted"}
    )


async def test_higher_priority_is_admitted_first(api: FakeApi, standin: KueueStandin) -> None:
    api.put(CLUSTER_QUEUES, cluster_queue("cq", cpu=1))
    api.put(LOCAL_QUEUES, local_queue("q", "ns", "cq"))
    api.put(WORKLOADS, prioritised("old-low", 0))
    api.put(WORKLOADS, prioritised("new-high", 100))

    await standin.reconcile_once()

    assert conditions(api.get(WORKLOADS, "new-high", "ns"))["QuotaReserved"][0] == "True"
    assert conditions(api.get(WORKLOADS, "old-low", "ns"))["QuotaReserved"][0] == "False"


async def test_a_higher_priority_workload_preempts_and_is_admitted_once_quota_is_released(
    api: FakeApi, standin: KueueStandin
) -> None:
    api.put(CLUSTER_QUEUES, cluster_queue("cq", cpu=1, **PREEMPT))
    api.put(LOCAL_QUEUES, local_queue("q", "ns", "cq"))
    api.put(WORKLOADS, prioritised("low", 0))
    await standin.reconcile_once()
    api.put(WORKLOADS, prioritised("high", 100))

    await standin.reconcile_once()

    low = conditions(api.get(WORKLOADS, "low", "ns"))
    message = (
        "Preempted to accommodate a workload (UID: uid-high, JobUID: job-high) due to prioritization "
        "in the ClusterQueue; preemptor path: /cq; preemptee path: /cq"
    )
    assert low["Evicted"] == ("True", "Preempted", message)
    assert low["Preempted"] == ("True", "InClusterQueue", message)
    assert low["QuotaReserved"][0] == "True", "the victim keeps its quota until its job is idle"
    assert api.get(WORKLOADS, "low", "ns")["status"]["schedulingStats"]["evictions"] == [
        {"reason": "Preempted", "underlyingCause": "", "count": 1}
    ]
    assert conditions(api.get(WORKLOADS, "high", "ns"))["QuotaReserved"][0] == "False"

    writes = len(api.writes)
    await standin.reconcile_once()
    assert not any("/low/" in w for w in api.writes[writes:]), "a preemption under way is not repeated"

    release_quota(api, "low")
    await standin.reconcile_once()
    assert conditions(api.get(WORKLOADS, "high", "ns"))["QuotaReserved"][0] == "True"
    assert conditions(api.get(WORKLOADS, "low", "ns"))["QuotaReserved"][0] == "False"


async def test_a_preempted_workload_is_evicted_as_every_eviction_is_checks_reset_cluster_forgotten(
    api: FakeApi, standin: KueueStandin
) -> None:
    """Kueue's preemption evicts through ``prepareForEviction``: a victim dispatched by MultiKueue must
    not keep a Ready check and its cluster, or it is admitted again on the strength of a copy that
    MultiKueue removes once the quota is released ("Admitting remote no longer exists")."""
    api.put(
        CLUSTER_QUEUES,
        cluster_queue("cq", cpu=1, admissionChecksStrategy={"admissionChecks": [{"name": "mk"}]}, **PREEMPT),
    )
    api.put(LOCAL_QUEUES, local_queue("q", "ns", "cq"))
    api.put(WORKLOADS, prioritised("low", 0))
    await standin.reconcile_once()
    low = api.get(WORKLOADS, "low", "ns")
    low["status"]["admissionChecks"][0].update(state="Ready", message='The workload was admitted on "w1"')
    low["status"]["clusterName"] = "w1"
    await standin.reconcile_once()
    assert conditions(api.get(WORKLOADS, "low", "ns"))["Admitted"][0] == "True"
    api.put(WORKLOADS, prioritised("high", 100))

    await standin.reconcile_once()

    low = api.get(WORKLOADS, "low", "ns")
    assert conditions(low)["Evicted"][:2] == ("True", "Preempted")
    [check] = low["status"]["admissionChecks"]
    assert (check["state"], check["message"]) == (
        "Pending",
        "Reset to Pending after eviction. Previously: Ready",
    )
    assert "retryCount" not in check
    assert_evicted_as_kueue(api, "/apis/kueue.x-k8s.io/v1beta2/namespaces/ns/workloads/low/status")
    assert conditions(low)["QuotaReserved"][0] == "True", "the victim keeps its quota until its job is idle"


async def test_no_preemption_without_the_policy_or_of_equal_priority(
    api: FakeApi, standin: KueueStandin
) -> None:
    api.put(CLUSTER_QUEUES, cluster_queue("never", cpu=1))
    api.put(CLUSTER_QUEUES, cluster_queue("lower", cpu=1, **PREEMPT))
    api.put(LOCAL_QUEUES, local_queue("q", "ns", "never"))
    api.put(LOCAL_QUEUES, local_queue("q2", "ns", "lower"))
    api.put(WORKLOADS, prioritised("a", 0))
    api.put(WORKLOADS, prioritised("b", 0, queue="q2"))
    await standin.reconcile_once()
    api.put(WORKLOADS, prioritised("a-high", 100))
    api.put(WORKLOADS, prioritised("b-equal", 0, queue="q2"))

    await standin.reconcile_once()

    assert "Evicted" not in conditions(api.get(WORKLOADS, "a", "ns")), "withinClusterQueue defaults to Never"
    assert "Evicted" not in conditions(api.get(WORKLOADS, "b", "ns")), "LowerPriority spares equal priority"
