from __future__ import annotations

import math
import signal
import subprocess
from pathlib import Path
from typing import Any, cast

import pytest

from bench.harness.replicas import LeaseSettings, LogFollower, restart_kube_apiserver
from bench.scale_restarts import (
    Measure,
    Scenario,
    SuspendLedger,
    audit,
    full_lists,
    list_requests,
    main,
    median_and_range,
    pages_per_list,
    synced_seconds,
    usage_summary,
    watch_restarts,
    write_requests,
)
from shared.constants import QUEUE_LABEL
from testkit import RealCluster

NAME = "kueue_bridge_rest_client_requests_total"


def job(
    name: str, *, uid: str, suspend: bool = True, complete: bool = False, queued: bool = True
) -> dict[str, Any]:
    labels = {QUEUE_LABEL: "q"} if queued else {}
    conditions = [{"type": "Complete", "status": "True"}] if complete else []
    return {
        "metadata": {"name": name, "namespace": "ns", "uid": uid, "labels": labels},
        "spec": {"suspend": suspend},
        "status": {"conditions": conditions},
    }


def workload(name: str, *, owner_uid: str, admitted: bool = False, finished: bool = False) -> dict[str, Any]:
    conditions = [
        {"type": kind, "status": "True"}
        for kind, on in (("Admitted", admitted), ("Finished", finished))
        if on
    ]
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "x", "uid": owner_uid, "controller": True}
    return {
        "metadata": {"name": name, "namespace": "ns", "ownerReferences": [owner]},
        "status": {"conditions": conditions},
    }


def test_a_settled_cluster_passes_the_audit() -> None:
    jobs = [
        job("pending", uid="1"),
        job("running", uid="2", suspend=False),
        job("done", uid="3", suspend=False, complete=True),
        job("unqueued", uid="4", queued=False),
    ]
    workloads = [
        workload("w1", owner_uid="1"),
        workload("w2", owner_uid="2", admitted=True),
        workload("w3", owner_uid="3", admitted=True, finished=True),
    ]
    found = audit(jobs, workloads)
    assert found.problems() == {}
    assert (found.jobs, found.workloads, found.admitted, found.finished) == (4, 3, 1, 1)
    assert "0 duplicates, 0 orphans" in found.line()


def test_the_audit_names_every_kind_of_wrong() -> None:
    jobs = [
        job("two", uid="1"),
        job("none", uid="2"),
        job("admitted-but-suspended", uid="3"),
        job("finished-not-marked", uid="4", suspend=False, complete=True),
        job("pending-but-running", uid="5", suspend=False),
    ]
    workloads = [
        workload("a", owner_uid="1"),
        workload("b", owner_uid="1"),
        workload("orphan", owner_uid="gone"),
        workload("c", owner_uid="3", admitted=True),
        workload("d", owner_uid="4", admitted=True),
        workload("e", owner_uid="5"),
    ]
    problems = audit(jobs, workloads).problems()
    assert problems == {
        "duplicate Workloads (Jobs with two)": ["ns/two"],
        "orphan Workloads (Job gone)": ["ns/orphan"],
        "queued Jobs without a Workload": ["ns/none"],
        "admitted Workloads whose Job is suspended": ["ns/admitted-but-suspended"],
        "finished Jobs whose Workload is not Finished": ["ns/finished-not-marked"],
        "pending Workloads whose Job runs": ["ns/pending-but-running"],
    }


def test_pages_and_full_lists_divide_list_requests_by_the_pages_one_list_takes() -> None:
    assert [pages_per_list(n) for n in (0, 1, 500, 501, 10_000)] == [1, 1, 1, 2, 20]
    requests = {"jobs.batch": 40.0, "namespaces": 1.0, "workloads.kueue.x-k8s.io": 0.0}
    assert full_lists(requests, {"jobs.batch": 10_000}) == {"jobs.batch": 2.0, "namespaces": 1.0}


def test_client_metrics_are_read_by_verb_resource_and_reason() -> None:
    samples = {
        (NAME, (("code", "200"), ("resource", "jobs.batch"), ("verb", "list"))): 3.0,
        (NAME, (("code", "500"), ("resource", "jobs.batch"), ("verb", "list"))): 1.0,
        (NAME, (("code", "201"), ("resource", "workloads.kueue.x-k8s.io"), ("verb", "create"))): 2.0,
        (NAME, (("code", "200"), ("resource", "jobs.batch"), ("verb", "get"))): 7.0,
        ("kueue_bridge_watch_restarts_total", (("reason", "gone"), ("resource", "jobs"))): 1.0,
        ("kueue_bridge_watch_restarts_total", (("reason", "gone"), ("resource", "workloads"))): 1.0,
    }
    assert list_requests(samples) == {"jobs.batch": 4.0}
    assert write_requests(samples) == {"create workloads.kueue.x-k8s.io": 2.0}
    assert watch_restarts(samples) == {"gone": 2.0}


def test_the_synced_line_gives_its_seconds() -> None:
    line = "2026-12-07 09:20:01,123 INFO shared.runtime.manager: caches synced informers=6 objects=2107 seconds=3.25"
    assert synced_seconds(line) == 3.25
    assert synced_seconds("2026-12-07 INFO x: probes and metrics listening port=1") is None


def test_the_ledger_tells_a_second_start_and_a_suspend_after_start() -> None:
    ledger = SuspendLedger()
    for key, states in {
        "once": [True, False, False],
        "twice": [True, False, True, False],
        "born": [False],
    }.items():
        for at, suspended in enumerate(states):
            ledger.saw(key, suspended, now=float(at))
    assert ledger.flapping() == (["twice"], ["twice"])
    assert ledger.unsuspended_at == {"once": 1.0, "twice": 3.0, "born": 0.0}
    assert ledger.changes["once"] == [True, False]


def test_a_measure_passes_at_or_below_its_target_and_summarises_rounds() -> None:
    measure = Measure("cold start", "s", 15.0, (10.0, 16.0, 12.0))
    assert measure.verdict(15.0) == "PASS" and measure.verdict(15.5) == "MISS"
    assert (
        "median 12.00 s (range 10.00-16.00 over 3 rounds; target <= 15 s: PASS; 2/3 rounds PASS)"
        in measure.line()
    )
    assert median_and_range([math.nan, 2.0, 4.0]) == (3.0, 2.0, 4.0)
    assert all(math.isnan(value) for value in median_and_range([]))


def test_lease_settings_are_written_as_go_durations() -> None:
    assert LeaseSettings(15, 10, 2).config() == {
        "leaderElect": True,
        "leaseDuration": "15s",
        "renewDeadline": "10s",
        "retryPeriod": "2s",
    }


async def test_the_log_follower_sees_only_lines_written_after_it_started(tmp_path: Path) -> None:
    log = tmp_path / "reconciler.log"
    log.write_text("old caches synced seconds=1\n")
    follower = LogFollower(log, interval=0.01)
    with log.open("a") as out:
        out.write("other\nnew caches synced seconds=2\n")
    line, _ = await follower.wait("caches synced", within=5)
    assert synced_seconds(line) == 2.0
    with pytest.raises(TimeoutError):
        await follower.wait("caches synced", within=0.05)


def test_the_command_wants_real_and_a_backlog(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--jobs", "10"])
    assert "--real is required" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--real", "--jobs", "100", "--admit", "100"])
    assert "backlog" in capsys.readouterr().err


class _KitStandIn:
    """What ``restart_kube_apiserver`` uses of a ``RealCluster``: its state and ``start_apiserver``."""

    def __init__(self, state: Path) -> None:
        self.apiserver_state = state
        self.starts: list[bool] = []

    def start_apiserver(self, *, apply_kueue_crds: bool = True) -> None:
        self.starts.append(apply_kueue_crds)


def _start_time(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19]


def test_the_api_server_restart_stops_only_kube_apiserver_and_keeps_etcd(tmp_path: Path) -> None:
    apiserver = subprocess.Popen(["sleep", "60"])
    etcd = subprocess.Popen(["sleep", "60"])
    try:
        (tmp_path / "pids").write_text(
            f"etcd {etcd.pid} {_start_time(etcd.pid)}\nkube-apiserver {apiserver.pid} {_start_time(apiserver.pid)}\n"
        )
        kit = _KitStandIn(tmp_path)
        stopping, starting = restart_kube_apiserver(cast(RealCluster, kit))
        assert apiserver.wait(timeout=5) == -signal.SIGTERM
        assert etcd.poll() is None, "etcd keeps running"
        assert (tmp_path / "pids").read_text() == f"etcd {etcd.pid} {_start_time(etcd.pid)}\n"
        assert kit.starts == [False], "started again without applying the CRDs a second time"
        assert stopping >= 0 and starting >= 0
    finally:
        for process in (apiserver, etcd):
            process.kill()
            process.wait()


def test_a_reused_pid_is_not_signalled(tmp_path: Path) -> None:
    other = subprocess.Popen(["sleep", "60"])
    try:
        (tmp_path / "pids").write_text(f"kube-apiserver {other.pid} 1\n")  # recorded with another start time
        kit = _KitStandIn(tmp_path)
        restart_kube_apiserver(cast(RealCluster, kit))
        assert other.poll() is None
        assert (tmp_path / "pids").read_text() == ""
        assert kit.starts == [False]
    finally:
        other.kill()
        other.wait()


def test_usage_over_rounds_takes_the_replicas_as_one() -> None:
    first = Scenario(
        "one", cpu={"etcd": 1.0, "reconciler-2": 0.5, "reconciler-3": 0.25}, load="4.00 3.00 2.00"
    )
    first.rss = {"etcd": 100.0, "reconciler-2": 120.0, "reconciler-3": 90.0}
    second = Scenario(
        "two", cpu={"etcd": 3.0, "reconciler-5": 1.25}, rss={"etcd": 100.0, "reconciler-5": 130.0}
    )
    second.load = "6.00 3.00 2.00"
    cpu, rss, load = usage_summary([first, second])
    assert cpu == "CPU s etcd 2.00 (1.00-3.00), reconcilers 1.00 (0.75-1.25)"
    assert rss == "RSS MiB etcd 100.00, reconcilers 125.00 (120.00-130.00)"
    assert load == "load average (1 min) 5.00 (4.00-6.00)"
