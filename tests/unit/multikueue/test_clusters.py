"""MultiKueueCluster reconciler and worker connections: Kueue's conditions, backoff and reconnects."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import httpx

from multikueue.clusters import ClusterReconciler
from multikueue.remote import RemoteCluster, retry_after
from shared.kube import FakeClock, GroupVersionKind, Result
from tests.unit.kube.fakeapi import status_body
from tests.unit.multikueue.fakes import (
    JOB,
    JOBSET,
    MK_CLUSTER,
    SECRET,
    WORKER_KINDS,
    WORKLOAD,
    FakeCluster,
    kubeconfig_for,
    secret_for,
    worker_factory,
)

WALL = datetime(2026, 1, 1, tzinfo=UTC)


class Harness:
    def __init__(
        self,
        *,
        kinds: tuple[GroupVersionKind, ...] = (JOB.gvk,),
        path_prefix: str = "/nonexistent",
        on_active: Any = lambda name, active: None,
    ) -> None:
        self.clock = FakeClock(wall_start=WALL)
        self.manager = FakeCluster("manager", clock=self.clock)
        self.workers = {"w1": FakeCluster("w1", clock=self.clock, kinds=WORKER_KINDS)}
        self.events: list[tuple[str, str]] = []
        self.lost: list[str] = []
        self.deleted: set[str] = set()
        self.reconciler = ClusterReconciler(
            client=self.manager.client,
            clusters=lambda name: None if name in self.deleted else self.manager.get(MK_CLUSTER, name),
            secrets=lambda name: self.manager.get(SECRET, name, "kueue-system"),
            new_remote=lambda name: RemoteCluster(
                name=name,
                origin="multikueue",
                job_kinds=kinds,
                client_factory=worker_factory(self.workers),
                clock=self.clock,
                on_workload=lambda ns, n: self.events.append((ns, n)),
                on_lost=self.lost.append,
            ),
            now=self.clock.wall,
            path_prefix=path_prefix,
            on_active=on_active,
        )

    def add_cluster(self, name: str = "w1", *, secret: str = "w1-secret") -> None:
        self.manager.put(
            MK_CLUSTER,
            {
                "metadata": {"name": name},
                "spec": {"clusterSource": {"kubeConfig": {"location": secret, "locationType": "Secret"}}},
            },
        )

    def add_secret(self, name: str = "w1-secret", document: Any = None) -> None:
        self.manager.put(SECRET, secret_for(name, document if document is not None else kubeconfig_for("w1")))

    def active(self, name: str = "w1") -> dict[str, Any]:
        obj = self.manager.get(MK_CLUSTER, name)
        assert obj is not None
        [condition] = obj["status"]["conditions"]
        return {key: condition[key] for key in ("type", "status", "reason", "message")}


def test_retry_after_is_kueues_schedule() -> None:
    assert [retry_after(n) for n in range(9)] == [0, 5, 10, 20, 40, 80, 160, 320, 320]


async def test_connects_and_reports_active_then_forwards_watch_events() -> None:
    harness = Harness()
    harness.add_secret()
    harness.add_cluster()
    assert await harness.reconciler.reconcile("w1") == Result.done()
    assert harness.active() == {
        "type": "Active",
        "status": "True",
        "reason": "Active",
        "message": "Connected",
    }
    remote = harness.reconciler.remote("w1")
    assert remote is not None and remote.connected and remote.lost_since is None
    worker = harness.workers["w1"]
    selectors = {r.params.get("labelSelector") for r in worker.api.requests if r.params.get("labelSelector")}
    assert selectors == {"kueue.x-k8s.io/multikueue-origin=multikueue"}
    worker.put(
        WORKLOAD,
        {
            "metadata": {
                "name": "wl",
                "namespace": "ns",
                "labels": {"kueue.x-k8s.io/multikueue-origin": "multikueue"},
            }
        },
    )
    worker.put(WORKLOAD, {"metadata": {"name": "theirs", "namespace": "ns"}})  # not ours: never seen
    worker.put(
        JOB,
        {
            "metadata": {
                "name": "job",
                "namespace": "ns",
                "labels": {"kueue.x-k8s.io/multikueue-origin": "multikueue"},
                "annotations": {"kueue.x-k8s.io/prebuilt-workload-name": "wl"},
            }
        },
    )
    await harness.clock.advance(0)
    assert harness.events == [("ns", "wl"), ("ns", "wl")]
    writes = len([r for r in harness.manager.api.requests if r.method == "PUT"])
    assert await harness.reconciler.reconcile("w1") == Result.done()
    assert len([r for r in harness.manager.api.requests if r.method == "PUT"]) == writes  # nothing changed
    await harness.reconciler.close()


async def test_missing_secret_is_not_retried_and_its_creation_connects() -> None:
    harness = Harness()
    harness.add_cluster()
    assert await harness.reconciler.reconcile("w1") == Result.done()
    assert harness.active() == {
        "type": "Active",
        "status": "False",
        "reason": "BadKubeConfig",
        "message": 'load client config failed: Secret "w1-secret" not found',
    }
    harness.manager.put(SECRET, {"metadata": {"name": "w1-secret", "namespace": "kueue-system"}, "data": {}})
    assert await harness.reconciler.reconcile("w1") == Result.again()
    assert (
        harness.active()["message"]
        == 'load client config failed: key "kubeconfig" not found in secret "w1-secret"'
    )
    harness.add_secret(document=kubeconfig_for("w1", **{"auth-provider": {"name": "gcp"}}))
    await harness.reconciler.reconcile("w1")
    assert harness.active()["reason"] == "InsecureKubeConfig"
    assert harness.active()["message"] == "load client config failed: auth providers are not allowed"
    harness.add_secret()
    assert await harness.reconciler.reconcile("w1") == Result.done()
    assert harness.active()["status"] == "True"
    await harness.reconciler.close()


async def test_unreachable_worker_backs_off_with_kueues_message() -> None:
    harness = Harness()
    harness.add_secret()
    harness.add_cluster()
    worker = harness.workers["w1"]
    rule = worker.api.fail_when(
        lambda r: r.method == "GET",
        lambda r: httpx.Response(500, content=status_body(500, "InternalError", "etcd is down")),
    )
    assert await harness.reconciler.reconcile("w1") == Result.after(5.0)
    condition = harness.active()
    assert (condition["status"], condition["reason"]) == ("False", "ClientConnectionFailed")
    assert condition["message"].endswith(
        "; connection attempts: 1, next connection attempt: 2026-01-01T00:00:05Z"
    )
    assert "etcd is down" in condition["message"]
    requests = len(worker.api.requests)
    await harness.clock.advance(2)
    assert await harness.reconciler.reconcile("w1") == Result.after(3.0)  # inside the window: no attempt
    assert len(worker.api.requests) == requests
    await harness.clock.advance(3)
    assert await harness.reconciler.reconcile("w1") == Result.after(10.0)
    assert harness.active()["message"].endswith(
        "; connection attempts: 2, next connection attempt: 2026-01-01T00:00:15Z"
    )
    worker.api.failures.remove(rule)
    await harness.clock.advance(10)
    assert await harness.reconciler.reconcile("w1") == Result.done()
    assert harness.active()["message"] == "Connected"
    remote = harness.reconciler.remote("w1")
    assert remote is not None and remote.failed_attempts == 0
    await harness.reconciler.close()


async def test_a_lost_watch_disconnects_keeps_the_first_loss_time_and_reconnects() -> None:
    harness = Harness()
    harness.add_secret()
    harness.add_cluster()
    await harness.reconciler.reconcile("w1")
    remote = harness.reconciler.remote("w1")
    assert remote is not None
    worker = harness.workers["w1"]
    await harness.clock.advance(1)  # the watches are open
    assert len(worker.api.watchers) == 2
    worker.api.fail_when(lambda r: r.method == "GET", lambda r: httpx.Response(503, content=b"down"))
    worker.api.disconnect_watches()
    await harness.clock.advance(0)
    await harness.clock.advance(1)
    assert harness.lost == ["w1"]
    assert not remote.connected and remote.lost_since == 1001.0
    await harness.reconciler.reconcile("w1")  # reconnect fails: the loss time stays the first one
    assert remote.lost_since == 1001.0 and harness.active()["reason"] == "ClientConnectionFailed"
    worker.api.failures.clear()
    await harness.clock.advance(5)
    await harness.reconciler.reconcile("w1")
    assert remote.connected and remote.lost_since is None
    await harness.reconciler.close()


async def test_a_kind_missing_on_one_worker_leaves_it_usable_for_the_others() -> None:
    harness = Harness(kinds=(JOB.gvk, JOBSET.gvk))
    harness.workers["w1"] = FakeCluster("w1", clock=harness.clock, kinds=(WORKLOAD, JOB))
    harness.add_secret()
    harness.add_cluster()
    assert await harness.reconciler.reconcile("w1") == Result.done()
    condition = harness.active()
    assert (condition["status"], condition["reason"]) == ("True", "Active")
    assert condition["message"].startswith("Connected; unavailable kinds: JobSet.v1alpha2.jobset.x-k8s.io (")
    remote = harness.reconciler.remote("w1")
    assert remote is not None
    assert remote.usable_for(JOB.gvk) and not remote.usable_for(JOBSET.gvk)
    await harness.reconciler.close()


async def test_deleted_cluster_closes_its_connection() -> None:
    harness = Harness()
    harness.add_secret()
    harness.add_cluster()
    await harness.reconciler.reconcile("w1")
    remote = harness.reconciler.remote("w1")
    harness.manager.api.remove_object(MK_CLUSTER.resource_label, "", "w1")
    assert await harness.reconciler.reconcile("w1") == Result.done()
    assert harness.reconciler.remote("w1") is None
    assert remote is not None and not remote.connected


async def test_a_path_kubeconfig_is_read_again_and_a_change_reconnects(tmp_path: Any) -> None:
    import yaml

    harness = Harness(path_prefix=str(tmp_path))
    path = tmp_path / "w1.yaml"
    path.write_text(yaml.safe_dump(kubeconfig_for("w1")))
    harness.manager.put(
        MK_CLUSTER,
        {
            "metadata": {"name": "w1"},
            "spec": {"clusterSource": {"kubeConfig": {"location": str(path), "locationType": "Path"}}},
        },
    )
    assert await harness.reconciler.reconcile("w1") == Result.after(10.0)
    lists = len([r for r in harness.workers["w1"].api.requests if r.method == "GET"])
    assert await harness.reconciler.reconcile("w1") == Result.after(10.0)
    assert (
        len([r for r in harness.workers["w1"].api.requests if r.method == "GET"]) == lists
    )  # unchanged file
    path.write_text(yaml.safe_dump(kubeconfig_for("w1", token="rotated")))
    await harness.reconciler.reconcile("w1")
    assert len([r for r in harness.workers["w1"].api.requests if r.method == "GET"]) > lists  # reconnected
    assert harness.active()["message"] == "Connected"
    await harness.reconciler.close()
