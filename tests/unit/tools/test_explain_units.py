"""``explain``'s parts without a cluster: kind spellings, rendering, quota arithmetic, Kueue's
inactive-ClusterQueue messages, queue order, the visibility API, and the chain on a real-Kueue-like
cluster state (ClusterQueue status written by Kueue) through an in-memory view.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import httpx
import pytest

from bridge_tools.explain.cluster_view import (
    ADMISSION_CHECK,
    CLUSTER_QUEUE,
    COHORT,
    LOCAL_QUEUE,
    MULTIKUEUE_CLUSTER,
    MULTIKUEUE_CONFIG,
    NAMESPACE,
    RESOURCE_FLAVOR,
    WORKLOAD,
    ClusterView,
)
from bridge_tools.explain.diagnosis import ExplainSettings, explain_job
from bridge_tools.explain.queue_position import QueueOrdering, kueue_queue_order
from bridge_tools.explain.queues import cluster_queue_inactive_message
from bridge_tools.explain.verdict import Explanation, Section, State, render_json, render_text
from bridge_tools.kinds import KindError, parse_object_ref, resolve_kind
from bridge_tools.quota import quota_report, reserved_usage
from shared.config import default_config
from shared.frameworks.builtin_kinds import BATCH_JOB
from shared.frameworks.registry import FrameworkRegistry
from shared.kube import HttpxTransport, KubeClient
from shared.models.queue import ClusterQueue
from tests.unit.tools.fake_view import FakeView

NOW = datetime(2026, 3, 1, 12, 0, 0, tzinfo=UTC)
STAMP = "2026-03-01T11:59:00Z"


def registry(*builtin: str) -> FrameworkRegistry:
    return FrameworkRegistry(builtin=builtin or ("batch/job",))


# --- kinds ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["job", "Job", "jobs", "job.batch", "jobs.batch", "Job.v1.batch", "batch/job"]
)
def test_every_kubectl_spelling_of_job(text: str) -> None:
    assert resolve_kind(text, registry()).gvk == BATCH_JOB.gvk


def test_an_unmanaged_kind_lists_the_managed_ones() -> None:
    with pytest.raises(
        KindError, match=r'kind "jobset" is not managed by this configuration \(it manages: Job.v1.batch\)'
    ):
        resolve_kind("jobset", registry())


def test_object_ref_with_a_slash_in_the_kind() -> None:
    reference = parse_object_ref("batch/job/hello", registry())
    assert (reference.framework.gvk, reference.name) == (BATCH_JOB.gvk, "hello")
    with pytest.raises(KindError, match="expected KIND/NAME"):
        parse_object_ref("hello", registry())


# --- rendering --------------------------------------------------------------------------------------


def test_text_is_the_verdict_then_aligned_sections_and_json_says_the_same() -> None:
    explanation = Explanation(
        State.PENDING, "ClusterQueue cq has 1/1 cpu in use in flavor f; this job needs 1 cpu"
    )
    explanation.section("Job").add("name", "ns/j").add("suspended", True)
    explanation.section("Empty")
    quota = explanation.section("Quota")
    quota.columns = ("FLAVOR", "RESOURCE", "USED")
    quota.row("default-flavor", "cpu", "1").row("f", "memory", "512Mi").note("USED: from status")
    assert render_text(explanation) == (
        "Pending: ClusterQueue cq has 1/1 cpu in use in flavor f; this job needs 1 cpu\n"
        "\n"
        "Job\n"
        "  name       ns/j\n"
        "  suspended  true\n"
        "\n"
        "Quota\n"
        "  FLAVOR          RESOURCE  USED\n"
        "  default-flavor  cpu       1\n"
        "  f               memory    512Mi\n"
        "  USED: from status\n"
    )
    document = render_json(explanation)
    assert document["state"] == "Pending" and document["headline"] == "Pending"
    assert [section["title"] for section in document["sections"]] == ["Job", "Quota"]
    assert document["sections"][0]["fields"] == {"name": "ns/j", "suspended": "true"}
    json.dumps(document)  # serialisable as is


def test_headlines() -> None:
    assert Explanation(State.NOT_QUEUED, "x").verdict == "Not queued: x"
    assert Explanation(State.QUOTA_RESERVED, "x").verdict == "Quota reserved: x"
    assert Section("t").empty


# --- quota ------------------------------------------------------------------------------------------


def cluster_queue(
    *flavors: tuple[str, str], cohort: str | None = None, borrowing: str | None = None, **status: Any
) -> ClusterQueue:
    spec: dict[str, Any] = {
        "resourceGroups": [
            {
                "coveredResources": ["cpu"],
                "flavors": [
                    {
                        "name": name,
                        "resources": [
                            {
                                "name": "cpu",
                                "nominalQuota": quota,
                                **({"borrowingLimit": borrowing} if borrowing else {}),
                            }
                        ],
                    }
                    for name, quota in flavors
                ],
            }
        ]
    }
    if cohort:
        spec["cohortName"] = cohort
    return ClusterQueue.model_validate({"metadata": {"name": "cq"}, "spec": spec, "status": status or None})


def reserving(cpu: str, flavor: str = "a", *, cq: str = "cq", finished: bool = False) -> dict[str, Any]:
    conditions = [{"type": "QuotaReserved", "status": "True"}]
    if finished:
        conditions.append({"type": "Finished", "status": "True"})
    return {
        "status": {
            "conditions": conditions,
            "admission": {
                "clusterQueue": cq,
                "podSetAssignments": [
                    {"name": "main", "flavors": {"cpu": flavor}, "resourceUsage": {"cpu": cpu}}
                ],
            },
        }
    }


def test_usage_sums_the_admissions_of_unfinished_reserving_workloads() -> None:
    usage, source = reserved_usage(
        cluster_queue(("a", "4")),
        [reserving("1500m"), reserving("500m"), reserving("2", finished=True), reserving("3", cq="other")],
    )
    assert usage == {("a", "cpu"): Decimal(2)}
    assert source == "sum of the admissions of the Workloads holding quota"


def test_usage_comes_from_kueue_when_it_wrote_the_status() -> None:
    queue = cluster_queue(
        ("a", "4"), flavorsReservation=[{"name": "a", "resources": [{"name": "cpu", "total": "3"}]}]
    )
    usage, source = reserved_usage(queue, [reserving("1")])
    assert usage == {("a", "cpu"): Decimal(3)}
    assert source == "ClusterQueue status.flavorsReservation"


def test_flavors_are_tried_in_order() -> None:
    queue = cluster_queue(("a", "2"), ("b", "2"))
    full_a = {("a", "cpu"): Decimal(2)}
    assert not quota_report(queue, usage=full_a, requests={"cpu": Decimal(1)}).blocked
    report = quota_report(queue, usage={**full_a, ("b", "cpu"): Decimal(2)}, requests={"cpu": Decimal(1)})
    [blocked] = report.blocked
    assert (blocked.flavor, blocked.never) == ("a", False)
    assert [(line.flavor, line.used, line.requested) for line in report.lines] == [
        ("a", Decimal(2), Decimal(1)),
        ("b", Decimal(2), Decimal(1)),
    ]


def test_a_request_beyond_nominal_never_fits_without_a_cohort() -> None:
    [blocked] = quota_report(cluster_queue(("a", "2")), usage={}, requests={"cpu": Decimal(3)}).blocked
    assert blocked.never


def test_in_a_cohort_borrowing_may_cover_the_request() -> None:
    queue = cluster_queue(("a", "2"), cohort="pool")
    report = quota_report(queue, usage={("a", "cpu"): Decimal(2)}, requests={"cpu": Decimal(1)})
    assert (report.blocked, report.may_borrow) == ([], True)
    limited = cluster_queue(("a", "2"), cohort="pool", borrowing="1")
    [blocked] = quota_report(limited, usage={("a", "cpu"): Decimal(2)}, requests={"cpu": Decimal(2)}).blocked
    assert not blocked.never  # 2 + 1 borrowable fits 2 in an empty queue, not on top of 2 in use


def test_uncovered_resources_are_listed() -> None:
    report = quota_report(
        cluster_queue(("a", "2")), usage={}, requests={"cpu": Decimal(1), "nvidia.com/gpu": Decimal(1)}
    )
    assert report.uncovered == ["nvidia.com/gpu"]


# --- Kueue's texts and order -------------------------------------------------------------------------


def test_inactive_messages_are_kueues() -> None:
    queue = ClusterQueue.model_validate(
        {
            "metadata": {"name": "cq"},
            "spec": {
                "stopPolicy": "Hold",
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [{"name": "f1", "resources": []}, {"name": "f2", "resources": []}],
                    }
                ],
                "admissionChecksStrategy": {"admissionChecks": [{"name": "c1"}, {"name": "c2"}]},
            },
        }
    )
    inactive_check = {"status": {"conditions": [{"type": "Active", "status": "False"}]}}
    assert cluster_queue_inactive_message(queue, flavors={"f2"}, checks={"c2": inactive_check}) == (
        "Can't admit new workloads: is stopped, references missing ResourceFlavor(s): f1, "
        "references missing AdmissionCheck(s): c1, references inactive AdmissionCheck(s): c2."
    )
    assert cluster_queue_inactive_message(queue, flavors=set(), checks={}, deleting=True) == (
        "Can't admit new workloads; clusterQueue is terminating"
    )
    healthy = ClusterQueue.model_validate({"metadata": {"name": "cq"}, "spec": {"resourceGroups": []}})
    assert cluster_queue_inactive_message(healthy, flavors=set(), checks={}) is None


def test_pending_order_is_priority_then_age() -> None:
    def workload(name: str, priority: int, created: str) -> dict[str, Any]:
        return {
            "metadata": {"name": name, "namespace": "ns", "creationTimestamp": created},
            "spec": {"priority": priority},
        }

    ordered = kueue_queue_order(
        [
            workload("young-high", 10, "2026-01-02T00:00:00Z"),
            workload("old-low", 0, "2026-01-01T00:00:00Z"),
            workload("old-high", 10, "2026-01-01T00:00:00Z"),
        ],
        ordering=QueueOrdering(),
    )
    assert [w["metadata"]["name"] for w in ordered] == ["old-high", "young-high", "old-low"]


async def test_the_visibility_api_is_read_when_served_and_absent_otherwise() -> None:
    summary = {"items": [{"metadata": {"name": "w1", "namespace": "ns"}, "positionInClusterQueue": 0}]}

    def serve(request: httpx.Request) -> httpx.Response:
        if (
            request.url.path
            == "/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/served/pendingworkloads"
        ):
            return httpx.Response(200, json=summary)
        return httpx.Response(404, json={"kind": "Status", "code": 404, "reason": "NotFound"})

    async with KubeClient(
        server="https://fake.invalid", transport=HttpxTransport(httpx.MockTransport(serve))
    ) as client:
        view = ClusterView(client)
        assert await view.pending_workloads("served") == summary["items"]
        assert await view.pending_workloads("other") is None


# --- the chain on a real-Kueue-like state ------------------------------------------------------------


def job(*, uid: str = "uid-1") -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": "j",
            "namespace": "ns",
            "uid": uid,
            "labels": {"kueue.x-k8s.io/queue-name": "q"},
            "creationTimestamp": STAMP,
        },
        "spec": {
            "suspend": True,
            "template": {
                "spec": {"containers": [{"name": "c", "image": "i", "resources": {"requests": {"cpu": "2"}}}]}
            },
        },
    }


def workload(
    name: str, *, uid: str = "uid-1", conditions: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": "ns",
            "uid": f"w-{name}",
            "creationTimestamp": STAMP,
            "ownerReferences": [
                {"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": uid, "controller": True}
            ],
        },
        "spec": {
            "queueName": "q",
            "priority": 0,
            "podSets": [{"name": "main", "count": 1, "template": job()["spec"]["template"]}],
        },
        "status": {"conditions": conditions or []},
    }


def state(**objects: Any) -> dict[Any, list[dict[str, Any]]]:
    queue = {
        "metadata": {"name": "cq"},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [{"name": "default", "resources": [{"name": "cpu", "nominalQuota": "8"}]}],
                }
            ],
        },
        "status": {
            "conditions": [
                {"type": "Active", "status": "True", "reason": "Ready", "message": "Can admit new workloads"}
            ],
            "flavorsReservation": [{"name": "default", "resources": [{"name": "cpu", "total": "8"}]}],
        },
    }
    return {
        NAMESPACE: [{"metadata": {"name": "ns", "labels": {"kubernetes.io/metadata.name": "ns"}}}],
        LOCAL_QUEUE: [{"metadata": {"name": "q", "namespace": "ns"}, "spec": {"clusterQueue": "cq"}}],
        CLUSTER_QUEUE: [objects.get("cluster_queue", queue)],
        RESOURCE_FLAVOR: [{"metadata": {"name": "default"}}],
        ADMISSION_CHECK: objects.get("checks", []),
        WORKLOAD: objects.get("workloads", []),
    }


async def run_chain(view: FakeView, obj: dict[str, Any] | None = None) -> Explanation:
    settings = ExplainSettings.from_config(default_config())
    framework = settings.registry.framework_for(BATCH_JOB.gvk)
    return await explain_job(view, settings=settings, framework=framework, job=obj or job(), now=NOW)


async def test_quota_verdict_from_kueues_status_and_position_from_the_visibility_api() -> None:
    pending = [
        {
            "type": "QuotaReserved",
            "status": "False",
            "reason": "Pending",
            "message": "couldn't assign flavors",
            "lastTransitionTime": STAMP,
        }
    ]
    view = FakeView(
        state(workloads=[workload("job-j-1", conditions=pending)]),
        pending={
            "cq": [
                {"metadata": {"name": "other", "namespace": "ns"}, "positionInClusterQueue": 0},
                {"metadata": {"name": "job-j-1", "namespace": "ns"}, "positionInClusterQueue": 1},
            ]
        },
    )
    explanation = await run_chain(view)
    assert (
        explanation.verdict
        == "Pending: ClusterQueue cq has 8/8 cpu in use in flavor default; this job needs 2 cpu"
    )
    cq = dict(explanation.section("ClusterQueue").fields)
    assert cq["Active"] == "True (Ready: Can admit new workloads)"
    assert cq["position"] == "2 of 2 pending in the ClusterQueue"
    assert explanation.section("ClusterQueue").notes[:2] == [
        "position: Kueue's visibility API",
        "BestEffortFIFO: a Workload ahead that does not fit does not block this one",
    ]
    assert explanation.section("Quota").notes == ["USED: ClusterQueue status.flavorsReservation"]
    assert dict(explanation.section("Workload").fields)["requests"] == "cpu=2"


async def test_an_inactive_cluster_queue_says_kueues_message() -> None:
    queue = state()[CLUSTER_QUEUE][0]
    queue["status"]["conditions"] = [
        {
            "type": "Active",
            "status": "False",
            "reason": "AdmissionCheckNotFound",
            "message": "Can't admit new workloads: references missing AdmissionCheck(s): mk.",
        }
    ]
    view = FakeView(state(cluster_queue=queue, workloads=[workload("job-j-1")]))
    explanation = await run_chain(view)
    assert explanation.verdict == (
        "Pending: ClusterQueue cq is inactive: Can't admit new workloads: references missing AdmissionCheck(s): mk"
    )


async def test_without_kueue_crds() -> None:
    explanation = await run_chain(FakeView(state(), unserved=frozenset({WORKLOAD})))
    assert explanation.verdict == (
        "Not queued: Kueue's CRDs are not installed (workloads.kueue.x-k8s.io is not served)"
    )


async def test_an_object_its_adapter_cannot_read() -> None:
    broken = job()
    broken["spec"]["parallelism"] = "two"
    explanation = await run_chain(FakeView(state()), broken)
    assert explanation.state is State.NOT_QUEUED
    assert explanation.verdict == (
        "Not queued: kueue-bridge cannot build its Workload: spec.parallelism: expected an integer, got string"
    )


async def test_events_of_the_job_and_its_workload_newest_last() -> None:
    events: list[dict[str, Any]] = [
        {
            "involvedObject": {"uid": "w-job-j-1"},
            "type": "Normal",
            "reason": "Pending",
            "message": "waiting",
            "lastTimestamp": "2026-03-01T11:59:30Z",
        },
        {
            "involvedObject": {"uid": "uid-1"},
            "type": "Normal",
            "reason": "CreatedWorkload",
            "message": "Created Workload: ns/job-j-1",
            "lastTimestamp": "2026-03-01T11:59:10Z",
            "count": 1,
        },
        {"involvedObject": {"uid": "someone-else"}, "type": "Warning", "reason": "X", "message": "not ours"},
    ]
    explanation = await run_chain(FakeView(state(workloads=[workload("job-j-1")]), events=events))
    assert explanation.section("Events").rows == [
        ("50s", "Normal", "CreatedWorkload", "Job/j", "Created Workload: ns/job-j-1"),
        ("30s", "Normal", "Pending", "Workload/job-j-1", "waiting"),
    ]


async def test_events_of_one_second_keep_the_job_before_its_workload() -> None:
    """core/v1 ``lastTimestamp`` has whole seconds and another writer's ``eventTime`` microseconds:
    compared as text, the Workload's event of the same second sorted before the job's event that
    caused it."""
    events: list[dict[str, Any]] = [
        {
            "involvedObject": {"uid": "w-job-j-1"},
            "type": "Warning",
            "reason": "Pending",
            "message": "no quota",
            "eventTime": "2026-03-01T11:59:10.600000Z",
        },
        {
            "involvedObject": {"uid": "uid-1"},
            "type": "Normal",
            "reason": "CreatedWorkload",
            "message": "Created Workload: ns/job-j-1",
            "lastTimestamp": "2026-03-01T11:59:10Z",
        },
    ]
    explanation = await run_chain(FakeView(state(workloads=[workload("job-j-1")]), events=events))
    assert [row[2] for row in explanation.section("Events").rows] == ["CreatedWorkload", "Pending"]


async def test_workload_conditions_read_in_the_same_order_whoever_wrote_first() -> None:
    written = [
        {"type": "QuotaReserved", "status": "False", "reason": "Pending", "lastTransitionTime": STAMP},
        {"type": "PodsReady", "status": "False", "reason": "WaitForStart", "lastTransitionTime": STAMP},
    ]
    orders = []
    for conditions in (written, written[::-1]):
        view = FakeView(state(workloads=[workload("job-j-1", conditions=conditions)]))
        explanation = await run_chain(view)
        orders.append([row[0] for row in explanation.section("Workload").rows])
    assert orders == [["PodsReady", "QuotaReserved"], ["PodsReady", "QuotaReserved"]]


def test_the_explain_cli_reports_a_bad_configuration_and_an_unknown_kind(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from bridge_tools.explain.cli import main

    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nnamespace: 7\n")
    assert main(["job/x", "--config", str(bad)]) == 1
    assert capsys.readouterr().err.startswith(f"{bad}: namespace: ")
    assert main(["jobset/x"]) == 1
    assert capsys.readouterr().err == (
        'kueue-bridge explain: kind "jobset" is not managed by this configuration (it manages: Job.v1.batch)\n'
    )
    assert main([]) == 2


def cohort_state(
    *, sibling_used: str, nominal: str = "8", borrowing: str | None = None, cohorts: list[Any] | None = None
) -> dict[Any, list[dict[str, Any]]]:
    """ClusterQueue cq (full: its 8 cpu reserved) and other (4 cpu, ``sibling_used`` reserved) in cohort pool."""
    objects = state(workloads=[workload("job-j-1")])
    queue = objects[CLUSTER_QUEUE][0]
    queue["spec"]["cohortName"] = "pool"
    quota = queue["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    quota["nominalQuota"] = nominal
    if borrowing is not None:
        quota["borrowingLimit"] = borrowing
    queue["status"]["flavorsReservation"][0]["resources"][0]["total"] = nominal
    sibling = json.loads(json.dumps(state()[CLUSTER_QUEUE][0]))
    sibling["metadata"]["name"] = "other"
    sibling["spec"]["cohortName"] = "pool"
    sibling["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = "4"
    sibling["status"]["flavorsReservation"][0]["resources"][0]["total"] = sibling_used
    objects[CLUSTER_QUEUE].append(sibling)
    objects[COHORT] = cohorts or []
    return objects


async def test_in_a_cohort_a_job_fits_by_borrowing_the_siblings_unused_quota() -> None:
    explanation = await run_chain(FakeView(cohort_state(sibling_used="0")))
    assert explanation.verdict == (
        "Pending: fits by borrowing from cohort pool; waiting for Kueue's scheduler "
        "(position 1 of 1 in ClusterQueue cq, estimated)"
    )
    assert explanation.section("Quota").rows == [("default", "cpu", "8", "8", "-", "-", "4", "2")]
    assert "this job fits only by borrowing from cohort pool" in explanation.section("ClusterQueue").notes


async def test_in_a_cohort_a_job_waits_when_the_cohort_has_too_little_unused_quota() -> None:
    explanation = await run_chain(FakeView(cohort_state(sibling_used="3")))
    assert explanation.verdict == (
        "Pending: ClusterQueue cq has 8/8 cpu in use in flavor default and 1 available with cohort pool's "
        "unused quota; this job needs 2 cpu"
    )


async def test_a_borrowing_limit_caps_what_the_cohort_can_give() -> None:
    explanation = await run_chain(FakeView(cohort_state(sibling_used="0", nominal="1", borrowing="0")))
    assert explanation.verdict == (
        "Pending: this job needs 2 cpu, more than ClusterQueue cq can ever give in flavor default "
        "(1 with what cohort pool can lend it)"
    )


async def test_a_cohort_tree_with_a_cycle_is_not_computed_and_says_so() -> None:
    looped = [
        {"metadata": {"name": "pool"}, "spec": {"parentName": "up"}},
        {"metadata": {"name": "up"}, "spec": {"parentName": "pool"}},
    ]
    explanation = await run_chain(FakeView(cohort_state(sibling_used="4", cohorts=looped)))
    quota = explanation.section("Quota")
    assert "cohort borrowing is not computed: the parentName chain of cohort pool has a cycle" in quota.notes
    assert quota.columns[-1] == "THIS JOB" and "AVAILABLE" not in quota.columns
    assert explanation.verdict == (
        "Pending: fits by borrowing from cohort pool; waiting for Kueue's scheduler "
        "(position 1 of 1 in ClusterQueue cq, estimated)"
    )


def multikueue_state(
    *, check_active: dict[str, Any], workload_status: dict[str, Any]
) -> dict[Any, list[Any]]:
    """cq with the MultiKueue check mk (config cfg: w1, w2), no Active condition (derived from spec)."""
    objects = state(workloads=[{**workload("job-j-1"), "status": workload_status}])
    queue = objects[CLUSTER_QUEUE][0]
    queue["spec"]["admissionChecksStrategy"] = {"admissionChecks": [{"name": "mk"}]}
    del queue["status"]["conditions"]
    objects[ADMISSION_CHECK] = [
        {
            "metadata": {"name": "mk"},
            "spec": {
                "controllerName": "kueue.x-k8s.io/multikueue",
                "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "cfg"},
            },
            "status": {"conditions": [{"type": "Active", **check_active}]},
        }
    ]
    objects[MULTIKUEUE_CONFIG] = [{"metadata": {"name": "cfg"}, "spec": {"clusters": ["w1", "w2"]}}]
    objects[MULTIKUEUE_CLUSTER] = [
        {
            "metadata": {"name": name},
            "status": {
                "conditions": [
                    {
                        "type": "Active",
                        "status": "False",
                        "reason": "ClientConnectionFailed",
                        "message": "refused",
                    }
                    if name == "w2"
                    else {"type": "Active", "status": "True", "reason": "Active", "message": "Connected"}
                ]
            },
        }
        for name in ("w1", "w2")
    ]
    return objects


async def test_a_cluster_queue_inactive_for_its_multikueue_check_says_why_the_check_is() -> None:
    inactive = {"status": "False", "reason": "NoUsableClusters", "message": "Inactive clusters: [w1 w2]"}
    explanation = await run_chain(FakeView(multikueue_state(check_active=inactive, workload_status={})))
    assert explanation.verdict == (
        "Pending: ClusterQueue cq is inactive: Can't admit new workloads: references inactive AdmissionCheck(s): "
        "mk (mk: NoUsableClusters: Inactive clusters: [w1 w2])"
    )
    section = explanation.section("MultiKueue")
    assert dict(section.fields) == {
        "admission check": "mk",
        "MultiKueueConfig": "cfg",
        "clusterName": "- (no worker has admitted it yet)",
        "nominatedClusterNames": "-",
    }
    assert [row[:3] for row in section.rows] == [
        ("w1", "True", "Active"),
        ("w2", "False", "ClientConnectionFailed"),
    ]


async def test_a_kind_kept_pending_runs_on_the_worker_while_its_check_stays_pending() -> None:
    active = {"status": "True", "reason": "SomeActiveClusters", "message": "Inactive clusters: [w2]"}
    status = {
        "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved", "message": "ok"}
        ],
        "admission": {"clusterQueue": "cq", "podSetAssignments": []},
        "admissionChecks": [
            {
                "name": "mk",
                "state": "Pending",
                "message": 'The workload was admitted on "w1"',
                "lastTransitionTime": STAMP,
            }
        ],
        "clusterName": "w1",
    }
    explanation = await run_chain(FakeView(multikueue_state(check_active=active, workload_status=status)))
    assert explanation.verdict == (
        "Running: on worker cluster 'w1' (quota reserved in ClusterQueue cq; admission check 'mk' stays "
        "Pending while it runs there, so the job here stays suspended)"
    )
    assert dict(explanation.section("MultiKueue").fields)["clusterName"] == "w1"
    assert [row[3] for row in explanation.section("MultiKueue").rows] == ["runs here", "-"]


@pytest.mark.parametrize(
    ("check_spec", "config", "shown"),
    [
        ({"controllerName": "kueue.x-k8s.io/multikueue"}, None, "- (missing parameters reference)"),
        (
            {
                "controllerName": "kueue.x-k8s.io/multikueue",
                "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "cfg"},
            },
            None,
            "cfg (does not exist)",
        ),
        (
            {
                "controllerName": "kueue.x-k8s.io/multikueue",
                "parameters": {"apiGroup": "kueue.x-k8s.io", "kind": "MultiKueueConfig", "name": "cfg"},
            },
            {"metadata": {"name": "cfg"}, "spec": {"clusters": "w1"}},
            "cfg",
        ),
    ],
)
async def test_odd_multikueue_objects_are_evidence_not_errors(
    check_spec: dict[str, Any], config: dict[str, Any] | None, shown: str
) -> None:
    objects = multikueue_state(
        check_active={"status": "True", "reason": "Active", "message": "The admission check is active"},
        workload_status={},
    )
    objects[ADMISSION_CHECK][0]["spec"] = check_spec
    objects[MULTIKUEUE_CONFIG] = [config] if config else []
    explanation = await run_chain(FakeView(objects))
    assert dict(explanation.section("MultiKueue").fields)["MultiKueueConfig"] == shown
    assert explanation.section("MultiKueue").rows == []
