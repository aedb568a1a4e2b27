"""The queue position of ``explain``: Kueue's visibility API when served, else Kueue's order, estimated."""

from __future__ import annotations

from typing import Any

import httpx

from bridge_tools.explain.cluster_view import LOCAL_QUEUE, WORKLOAD, ClusterView
from bridge_tools.explain.queue_position import (
    QueueOrdering,
    is_queued,
    kueue_queue_order,
    queue_order_timestamp,
    queue_position,
)
from shared.config import parse_config
from shared.kube import HttpxTransport, KubeClient
from tests.unit.tools.fake_view import FakeView


def workload(
    name: str,
    *,
    priority: int = 0,
    created: str = "2026-01-01T00:00:00Z",
    queue: str = "q",
    namespace: str = "ns",
    conditions: list[dict[str, Any]] | None = None,
    annotations: dict[str, str] | None = None,
) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "creationTimestamp": created,
            "annotations": annotations or {},
        },
        "spec": {"priority": priority, "queueName": queue},
        "status": {"conditions": conditions or []},
    }


def evicted(reason: str, at: str, *, requeued: bool = True) -> list[dict[str, Any]]:
    conditions = [{"type": "Evicted", "status": "True", "reason": reason, "lastTransitionTime": at}]
    if requeued:
        conditions.append(
            {"type": "Requeued", "status": "True", "reason": "BackoffFinished", "lastTransitionTime": at}
        )
    return conditions


def names(items: list[dict[str, Any]]) -> list[str]:
    return [item["metadata"]["name"] for item in items]


def test_kueues_order_priority_then_creation_or_eviction_time_then_uid() -> None:
    items = [
        workload("new", created="2026-01-03T00:00:00Z"),
        workload(
            "timed-out",
            created="2026-01-01T00:00:00Z",
            conditions=evicted("PodsReadyTimeout", "2026-01-04T00:00:00Z"),
        ),
        workload(
            "check",
            created="2026-01-01T00:00:00Z",
            conditions=evicted("AdmissionCheck", "2026-01-02T00:00:00Z"),
        ),
        workload(
            "preempted",
            created="2026-01-01T00:00:00Z",
            conditions=evicted("Preempted", "2026-01-05T00:00:00Z"),
        ),
        workload("urgent", priority=100, created="2026-01-09T00:00:00Z"),
        workload("b-same", created="2026-01-03T00:00:00Z"),
    ]
    ordered = names(kueue_queue_order(items, ordering=QueueOrdering()))
    # a PodsReady timeout and an admission check eviction go to the back of their time; a
    # preemption keeps the creation time (Kueue's GetQueueOrderTimestamp); equal times: by UID
    assert ordered == ["urgent", "preempted", "check", "b-same", "new", "timed-out"]
    creation = QueueOrdering(eviction_timestamp=False)
    assert names(kueue_queue_order(items, ordering=creation))[1:3] == ["preempted", "timed-out"]
    assert queue_order_timestamp(items[1], ordering=creation).isoformat().startswith("2026-01-01")


def test_priority_boost_counts_only_with_its_gate() -> None:
    boosted = workload(
        "boosted", created="2026-01-02T00:00:00Z", annotations={"kueue.x-k8s.io/priority-boost": "5"}
    )
    plain = workload("plain", created="2026-01-01T00:00:00Z")
    assert names(kueue_queue_order([plain, boosted], ordering=QueueOrdering())) == ["plain", "boosted"]
    assert names(kueue_queue_order([plain, boosted], ordering=QueueOrdering(priority_boost=True))) == [
        "boosted",
        "plain",
    ]
    config = parse_config(
        "apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\nfeatureGates: {PriorityBoost: true}\n"
        "waitForPodsReady: {requeuingStrategy: {timestamp: Creation}}\n",
        source="t",
    )
    assert QueueOrdering.from_config(config) == QueueOrdering(eviction_timestamp=False, priority_boost=True)


def test_only_what_kueues_queue_holds_is_queued() -> None:
    assert is_queued(workload("w"))
    assert not is_queued(workload("w", conditions=[{"type": "QuotaReserved", "status": "True"}]))
    assert not is_queued(workload("w", conditions=[{"type": "Finished", "status": "True"}]))
    assert not is_queued(
        workload("w", conditions=evicted("PodsReadyTimeout", "2026-01-01T00:00:00Z", requeued=False))
    )
    inactive = workload("w")
    inactive["spec"]["active"] = False
    assert not is_queued(inactive)


def local_queues(*pairs: tuple[str, str]) -> list[dict[str, Any]]:
    return [
        {"metadata": {"namespace": ns, "name": name}, "spec": {"clusterQueue": "cq"}} for ns, name in pairs
    ]


async def test_estimated_position_in_the_cluster_queue_and_the_local_queue() -> None:
    view = FakeView(
        {
            LOCAL_QUEUE: local_queues(("ns", "q"), ("other", "q")),
            WORKLOAD: [
                workload("first", created="2026-01-01T00:00:00Z", namespace="other"),
                workload("second", created="2026-01-02T00:00:00Z"),
                workload("mine", created="2026-01-03T00:00:00Z"),
                workload("admitted", conditions=[{"type": "QuotaReserved", "status": "True"}]),
            ],
        }
    )
    position = await queue_position(
        view, cluster_queue="cq", namespace="ns", local_queue="q", name="mine", ordering=QueueOrdering()
    )
    assert position is not None and position.estimated
    assert position.summary() == "3 of 3 pending in the ClusterQueue, 2 of 2 in LocalQueue ns/q"
    assert position.source.startswith(
        "estimated (Kueue's visibility API is not served) in Kueue's order: priority"
    )
    missing = await queue_position(
        view, cluster_queue="cq", namespace="ns", local_queue="q", name="admitted", ordering=QueueOrdering()
    )
    assert missing is None


def visibility_server(
    *, cq: list[dict[str, Any]] | None, lq: list[dict[str, Any]] | None, cq_status: int = 200
) -> tuple[HttpxTransport, list[str]]:
    seen: list[str] = []

    def serve(request: httpx.Request) -> httpx.Response:
        seen.append(f"{request.url.path}?{request.url.query.decode()}")
        path = request.url.path
        if path.startswith("/apis/visibility.kueue.x-k8s.io/v1beta2/clusterqueues/cq/pendingworkloads"):
            if cq_status != 200:
                return httpx.Response(
                    cq_status, json={"kind": "Status", "code": cq_status, "reason": "Forbidden"}
                )
            offset = int(request.url.params.get("offset", "0"))
            limit = int(request.url.params.get("limit", "1000"))
            return httpx.Response(200, json={"items": (cq or [])[offset : offset + limit]})
        if (
            path == "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/ns/localqueues/q/pendingworkloads"
            and lq is not None
        ):
            return httpx.Response(200, json={"items": lq})
        return httpx.Response(404, json={"kind": "Status", "code": 404, "reason": "NotFound"})

    return HttpxTransport(httpx.MockTransport(serve)), seen


def pending_item(name: str, cq: int, lq: int) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "ns"},
        "positionInClusterQueue": cq,
        "positionInLocalQueue": lq,
    }


async def test_the_visibility_api_answers_with_both_positions_reading_page_after_page() -> None:
    items = [pending_item(f"w{i}", i, i) for i in range(1500)]
    transport, seen = visibility_server(cq=items, lq=None)
    async with KubeClient(server="https://fake.invalid", transport=transport) as client:
        position = await queue_position(
            ClusterView(client),
            cluster_queue="cq",
            namespace="ns",
            local_queue="q",
            name="w1200",
            ordering=QueueOrdering(),
        )
    assert position is not None and not position.estimated
    assert position.summary() == "1201 of 1500 pending in the ClusterQueue, 1201 in LocalQueue ns/q"
    assert position.source == "Kueue's visibility API"
    assert [s.split("?")[1] for s in seen] == ["limit=1000&offset=0", "limit=1000&offset=1000"]


async def test_a_user_without_cluster_queue_access_gets_the_local_queue_view() -> None:
    transport, _ = visibility_server(
        cq=None, lq=[pending_item("other", 4, 0), pending_item("mine", 7, 1)], cq_status=403
    )
    async with KubeClient(server="https://fake.invalid", transport=transport) as client:
        position = await queue_position(
            ClusterView(client),
            cluster_queue="cq",
            namespace="ns",
            local_queue="q",
            name="mine",
            ordering=QueueOrdering(),
        )
    assert position is not None and not position.estimated
    assert position.summary() == "8 pending in the ClusterQueue, 2 of 2 in LocalQueue ns/q"
    assert position.source == "Kueue's visibility API (LocalQueue)"


async def test_forbidden_everywhere_falls_back_to_the_estimate_and_says_why() -> None:
    transport, _ = visibility_server(cq=None, lq=None, cq_status=403)
    async with KubeClient(server="https://fake.invalid", transport=transport) as client:
        view = ClusterView(client)
        assert await view.pending_workloads("cq") is None
        assert view.visibility_problem("cq") == "you may not read Kueue's visibility API"
