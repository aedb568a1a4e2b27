"""The ``kueue-bridge dev`` table without processes: states from job + Workload, layout, redraws.

The states are what a user reads to follow a job, so each is pinned to the API objects that make
it: no Workload yet -> Suspended; Workload without reservation -> Pending; reserved but the job
still suspended -> Admitted; job unsuspended -> Running; Workload ``Finished=True`` -> Finished
with the condition's reason, even if the job itself finished earlier (the Workload is the proof the
reconciler did its part).
"""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from devrun.progress import JobRow, TableDisplay, cluster_of, job_row, render_table
from shared.kube.times import human_duration

NOW = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)


def job(*, suspend: bool | None, uid: str = "u1", kind: str = "Job") -> dict[str, Any]:
    spec: dict[str, Any] = {} if suspend is None else {"suspend": suspend}
    created = (NOW - timedelta(seconds=75)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {
        "kind": kind,
        "metadata": {"name": "hello", "namespace": "team-a", "uid": uid, "creationTimestamp": created},
        "spec": spec,
    }


def workload(
    *conditions: tuple[str, str, str], owner: str = "u1", admitted_to: str | None = None
) -> dict[str, Any]:
    status: dict[str, Any] = {
        "conditions": [{"type": t, "status": s, "reason": r} for t, s, r in conditions],
    }
    if admitted_to:
        status["admission"] = {"clusterQueue": admitted_to}
    return {
        "metadata": {"name": "job-hello-1a2b3", "namespace": "team-a", "ownerReferences": [{"uid": owner}]},
        "status": status,
    }


def row_for(obj: dict[str, Any], *workloads: dict[str, Any]) -> JobRow:
    return job_row(job=obj, suspend_path=("spec", "suspend"), workloads=list(workloads), now=NOW)


@pytest.mark.parametrize(
    ("suspend", "workloads", "state"),
    [
        (True, [], "Suspended"),
        (True, [workload(owner="someone-else")], "Suspended"),
        (True, [workload(("QuotaReserved", "False", "Pending"))], "Pending"),
        (True, [workload(("QuotaReserved", "True", "QuotaReserved"), admitted_to="cq")], "Admitted"),
        (False, [workload(("QuotaReserved", "True", "QuotaReserved"), admitted_to="cq")], "Running"),
        (None, [], "Running"),
        (False, [workload(("Finished", "True", "Succeeded"), admitted_to="cq")], "Finished(Succeeded)"),
        (True, [workload(("Finished", "True", "Failed"))], "Finished(Failed)"),
    ],
)
def test_state_follows_the_job_and_its_workload(
    suspend: bool | None, workloads: list[dict[str, Any]], state: str
) -> None:
    row = row_for(job(suspend=suspend), *workloads)
    assert row.state == state
    assert row.finished is state.startswith("Finished")


def test_row_names_the_workload_its_cluster_queue_and_age() -> None:
    row = row_for(
        job(suspend=False), workload(("QuotaReserved", "True", "x"), admitted_to="dev-cluster-queue")
    )
    assert row.cells() == (
        "Job",
        "team-a/hello",
        "Running",
        "job-hello-1a2b3",
        "dev-cluster-queue",
        "",  # CLUSTER: only in a fleet
        "75s",
        "",
    )
    assert row_for(job(suspend=True)).cells()[3:5] == ("-", "-")
    assert "CLUSTER" not in render_table([row_for(job(suspend=False))])[0].split()


def test_why_is_the_last_column_and_is_given_by_the_caller() -> None:
    reason = (
        "ClusterQueue dev-cluster-queue has 2/2 cpu in use in flavor default-flavor; this job needs 1 cpu"
    )
    pending = job_row(
        job=job(suspend=True),
        suspend_path=("spec", "suspend"),
        workloads=[workload(("QuotaReserved", "False", "Pending"))],
        now=NOW,
        why=reason,
    )
    running = row_for(job(suspend=False))
    header, first, second = render_table([pending, running])
    assert header.split()[-1] == "WHY"
    assert first.endswith(reason)
    assert first.index(reason) == header.index("WHY")
    assert second.endswith("75s")  # no WHY for a running job: no trailing blanks either


def test_a_declarative_kind_uses_its_own_suspend_path() -> None:
    obj = job(suspend=None, kind="TrainingRun")
    obj["spec"]["paused"] = True
    row = job_row(job=obj, suspend_path=("spec", "paused"), workloads=[], now=NOW)
    assert (row.kind, row.state) == ("TrainingRun", "Suspended")


@pytest.mark.parametrize(
    ("seconds", "text"), [(0, "0s"), (59.9, "59s"), (60, "60s"), (75, "75s"), (3600, "60m"), (3725, "62m")]
)
def test_age_is_what_kubectl_prints(seconds: float, text: str) -> None:
    assert human_duration(seconds) == text


def test_table_columns_are_aligned() -> None:
    rows = [
        JobRow("Job", "team-a/hello", "Pending", "job-hello-1", "-", "3s"),
        JobRow(
            "SampleJob",
            "team-a/train",
            "Finished(Succeeded)",
            "samplejob-train-2",
            "dev-cluster-queue",
            "10s",
        ),
    ]
    lines = render_table(rows)
    assert lines[0].split() == ["KIND", "NAMESPACE/NAME", "STATE", "WORKLOAD", "CLUSTERQUEUE", "AGE", "WHY"]
    starts = [line.index(cell) for line, cell in zip(lines, ("STATE", "Pending", "Finished"), strict=True)]
    assert len(set(starts)) == 1


def test_without_a_tty_tables_are_appended_only_when_a_state_changes() -> None:
    out = io.StringIO()
    display = TableDisplay(out=out, tty=False, clock=lambda: NOW)
    pending = [JobRow("Job", "team-a/hello", "Pending", "w", "-", "1s")]
    display.show(pending)
    display.show([JobRow("Job", "team-a/hello", "Pending", "w", "-", "2s")])  # only the age moved
    display.show([JobRow("Job", "team-a/hello", "Running", "w", "cq", "3s")])
    text = out.getvalue()
    assert "\x1b[" not in text
    assert text.count("KIND") == 2
    assert text.count("--- 12:00:00") == 2
    display.final([JobRow("Job", "team-a/hello", "Running", "w", "cq", "4s")], footer="done")
    assert out.getvalue().count("KIND") == 3
    assert out.getvalue().endswith("done\n")


def test_on_a_tty_the_table_is_redrawn_in_place() -> None:
    out = io.StringIO()
    display = TableDisplay(out=out, tty=True)
    rows = [JobRow("Job", "team-a/hello", "Pending", "w", "-", "1s")]
    display.show(rows, footer="Ctrl-C stops everything")
    first = out.getvalue()
    assert not first.startswith("\x1b[")
    display.show(rows, footer="Ctrl-C stops everything")
    # cursor up over the 3 lines drawn (header, row, footer), clear, draw again
    assert out.getvalue()[len(first) :].startswith("\x1b[3F\x1b[J")


def test_a_narrow_terminal_drops_the_workload_column_first() -> None:
    out = io.StringIO()
    row = JobRow("SampleJob", "team-a/train-small", "Running", "samplejob-train-small-3d9f1", "dev-cq", "4s")
    TableDisplay(out=out, tty=True, width=lambda: 70).show([row])
    header, line = out.getvalue().splitlines()
    assert header.split() == ["KIND", "NAMESPACE/NAME", "STATE", "CLUSTERQUEUE", "AGE", "WHY"]
    assert line.split() == ["SampleJob", "team-a/train-small", "Running", "dev-cq", "4s"]


def test_on_a_tty_lines_are_cut_at_the_terminal_width() -> None:
    out = io.StringIO()
    TableDisplay(out=out, tty=True, width=lambda: 30).show(
        [JobRow("Job", "a/b" * 20, "Pending", "w", "-", "1s")]
    )
    assert max(len(line) for line in out.getvalue().splitlines()) == 29


# --- a MultiKueue fleet (--workers N): the CLUSTER column -----------------------------------------

ADMITTED_ON = 'The workload was admitted on "worker-2"'


def dispatched(*, cluster_name: str | None = None, message: str = "") -> dict[str, Any]:
    wl = workload(("QuotaReserved", "True", "QuotaReserved"), admitted_to="cq")
    if cluster_name is not None:
        wl["status"]["clusterName"] = cluster_name
    wl["status"]["admissionChecks"] = [{"name": "dev-multikueue", "state": "Pending", "message": message}]
    return wl


def fleet_row(obj: dict[str, Any], *workloads: dict[str, Any], copies: dict[str, Any]) -> JobRow:
    return job_row(
        job=obj, suspend_path=("spec", "suspend"), workloads=list(workloads), now=NOW, copies=copies
    )


def test_cluster_is_the_workloads_cluster_name_else_the_admitted_on_message() -> None:
    assert cluster_of(dispatched(cluster_name="worker-1", message=ADMITTED_ON)) == "worker-1"
    assert cluster_of(dispatched(message=ADMITTED_ON)) == "worker-2"  # a kept-pending kind's check
    assert cluster_of(dispatched(message="The workload got reservation on some cluster")) is None
    assert cluster_of(dispatched(cluster_name="")) is None
    assert cluster_of(None) is None


def test_a_fleet_row_names_its_worker_or_a_dash_before_dispatch() -> None:
    waiting = fleet_row(job(suspend=True), dispatched(), copies={"worker-1": None, "worker-2": None})
    assert (waiting.state, waiting.cluster) == ("Admitted", "-")
    running = fleet_row(job(suspend=False), dispatched(cluster_name="worker-1"), copies={"worker-1": None})
    assert (running.state, running.cluster) == ("Running", "worker-1")
    done = fleet_row(
        job(suspend=False),
        {
            **dispatched(cluster_name="worker-1"),
            "status": {
                "clusterName": "worker-1",
                "conditions": [{"type": "Finished", "status": "True", "reason": "Succeeded"}],
            },
        },
        copies={},
    )
    assert (done.state, done.cluster) == ("Finished(Succeeded)", "worker-1")


def test_a_kept_pending_kind_runs_where_its_worker_copy_is_unsuspended() -> None:
    """The manager's copy of a kind without spec.managedBy stays suspended for its whole life."""
    manager_copy = job(suspend=True, kind="SampleJob")
    wl = dispatched(message=ADMITTED_ON)
    on_worker = fleet_row(manager_copy, wl, copies={"worker-2": job(suspend=False, kind="SampleJob")})
    assert (on_worker.state, on_worker.cluster) == ("Running", "worker-2")
    # a copy of the same name on another worker says nothing: only the named worker counts
    elsewhere = fleet_row(manager_copy, wl, copies={"worker-1": job(suspend=False), "worker-2": None})
    assert elsewhere.state == "Admitted"
    still_suspended = fleet_row(manager_copy, wl, copies={"worker-2": job(suspend=True)})
    assert still_suspended.state == "Admitted"


def test_the_cluster_column_sits_before_age_and_keeps_why_last() -> None:
    rows = [
        JobRow("Job", "team-a/hello", "Running", "job-hello-1", "cq", "3s", cluster="worker-1"),
        JobRow("SampleJob", "team-a/train", "Pending", "samplejob-train-2", "-", "3s", "quota", cluster="-"),
    ]
    header, first, second = render_table(rows)
    assert header.split() == [
        "KIND",
        "NAMESPACE/NAME",
        "STATE",
        "WORKLOAD",
        "CLUSTERQUEUE",
        "CLUSTER",
        "AGE",
        "WHY",
    ]
    assert first.split()[5] == "worker-1"
    assert second.split()[5] == "-"
    assert second.endswith("quota")


def test_a_change_of_cluster_alone_appends_a_table() -> None:
    out = io.StringIO()
    display = TableDisplay(out=out, tty=False, clock=lambda: NOW)
    display.show([JobRow("Job", "team-a/hello", "Running", "w", "cq", "1s", cluster="-")])
    display.show([JobRow("Job", "team-a/hello", "Running", "w", "cq", "2s", cluster="worker-1")])
    assert out.getvalue().count("KIND") == 2
