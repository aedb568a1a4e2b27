"""``make dev-multicluster`` end to end: ``kueue-bridge dev --workers 2 --exit-when-done`` as a user runs it.

One run per module, in a scratch working directory, ports 0, with a deadline; then:

* it exits 0 and its last table shows every sample of ``examples/dev-multicluster/jobs.yaml``
  ``Finished(Succeeded)`` with CLUSTER naming a worker (``worker-1`` or ``worker-2``), and the
  footer counts them per worker; every sample was suspended by the manager's webhook on create;
* the three kubeconfigs it prints exist and reach three different API servers;
* no process it started survives it;
* the manager's state it leaves in ``.dev/manager/data``, served again by ``kueue-bridge
  devcluster``, agrees with the table: each sample's Workload is finished with
  ``status.clusterName`` = its CLUSTER cell; the batch Jobs carry ``spec.managedBy:
  kueue.x-k8s.io/multikueue`` and a status mirrored from the worker (the manager's job runner never
  runs such a Job); the SampleJobs stayed suspended on the manager and still got the worker's
  final status (Kueue's former KeepAdmissionCheckPending contract); both MultiKueueClusters and
  the AdmissionCheck are ``Active``;
* the "Several clusters" output block of docs/local-development.md is this output (paths, ages, name hashes and which
  worker won aside; ``...`` stands for any lines).
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from shared.kube import GroupVersionKind
from tests.e2e.conftest import kube_client
from tests.e2e.test_make_dev import assert_nothing_left, env_for, served_again

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
LOCAL_DEVELOPMENT = (REPO / "docs" / "local-development.md").read_text()
SAMPLES = [
    doc for doc in yaml.safe_load_all((REPO / "examples/dev-multicluster/jobs.yaml").read_text()) if doc
]
WORKERS = {"worker-1", "worker-2"}
WORKLOAD = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "Workload")
MK_CLUSTER = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "MultiKueueCluster")
ADMISSION_CHECK = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "AdmissionCheck")
COMMAND = [sys.executable, "-m", "kueue_bridge.cli", "dev", "--workers", "2", "--port", "0", "--no-tty"]


@dataclass(frozen=True)
class FleetRun:
    workdir: Path
    returncode: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return f"{self.stdout}\n--- stderr\n{self.stderr}"


@pytest.fixture(scope="module")
def fleet_run(tmp_path_factory: pytest.TempPathFactory) -> FleetRun:
    workdir = tmp_path_factory.mktemp("dev-multicluster")
    done = subprocess.run(
        [*COMMAND, "--exit-when-done", "--timeout", "300"],  # a safety net, not a speed bound
        cwd=workdir,
        env=env_for(workdir),
        capture_output=True,
        text=True,
        timeout=420,
    )
    return FleetRun(workdir, done.returncode, done.stdout, done.stderr)


def sample_keys() -> set[tuple[str, str]]:
    return {(doc["kind"], f"{doc['metadata']['namespace']}/{doc['metadata']['name']}") for doc in SAMPLES}


def last_table(output: str) -> tuple[list[str], dict[tuple[str, str], list[str]]]:
    """The header cells and rows of the last table printed: (KIND, NAMESPACE/NAME) -> other cells."""
    lines = output.splitlines()
    start = max(i for i, line in enumerate(lines) if line.startswith("KIND "))
    rows: dict[tuple[str, str], list[str]] = {}
    for line in lines[start + 1 :]:
        cells = line.split()
        if len(cells) < 2 or (cells[0], cells[1]) not in sample_keys():
            break
        rows[(cells[0], cells[1])] = cells[2:]
    return lines[start].split(), rows


def test_every_sample_finishes_on_a_worker(fleet_run: FleetRun) -> None:
    assert fleet_run.returncode == 0, fleet_run.output
    header, rows = last_table(fleet_run.stdout)
    assert header == ["KIND", "NAMESPACE/NAME", "STATE", "WORKLOAD", "CLUSTERQUEUE", "CLUSTER", "AGE", "WHY"]
    assert set(rows) == sample_keys(), fleet_run.output
    per_worker: dict[str, int] = {}
    for key, (state, workload, cluster_queue, cluster, _age) in rows.items():
        assert state == "Finished(Succeeded)", (key, fleet_run.output)
        assert workload != "-", (key, fleet_run.output)
        assert cluster_queue == "dev-cluster-queue", (key, fleet_run.output)
        assert cluster in WORKERS, (key, fleet_run.output)
        per_worker[cluster] = per_worker.get(cluster, 0) + 1
    counts = ", ".join(f"{name}: {count}" for name, count in sorted(per_worker.items()))
    assert f"all {len(SAMPLES)} sample jobs finished on a worker ({counts})" in fleet_run.stdout
    for kind, name in sample_keys():
        assert f"manager   created         {kind} {name}: suspended by the webhook" in fleet_run.stdout
    # before a sample is dispatched its CLUSTER is "-": some earlier table shows one waiting
    assert re.search(
        r"^(Job|SampleJob) +team-a/\S+ +(Pending|Admitted) +\S+ +\S+ +- ", fleet_run.stdout, re.M
    )
    assert "stopped (exit 0)" in fleet_run.stdout
    assert_nothing_left(fleet_run.workdir, fleet_run.stdout)


def test_the_three_kubeconfigs_are_printed_and_reach_three_api_servers(fleet_run: FleetRun) -> None:
    servers = set()
    for name in ("manager", "worker-1", "worker-2"):
        path = (fleet_run.workdir / ".dev" / name / "kubeconfig").resolve()
        assert re.search(rf"^  {name} +{re.escape(str(path))}$", fleet_run.stdout, re.M), fleet_run.output
        servers.add(yaml.safe_load(path.read_text())["clusters"][0]["cluster"]["server"])
        for log in ("webhook.log", "reconciler.log"):
            assert (fleet_run.workdir / ".dev" / name / "logs" / log).is_file()
    assert len(servers) == 3
    assert (fleet_run.workdir / ".dev" / "manager" / "logs" / "multikueue.log").is_file()


def _condition(obj: dict[str, Any], condition_type: str) -> dict[str, Any]:
    found = [c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == condition_type]
    assert found, (condition_type, obj)
    return dict(found[0])


async def test_the_managers_state_says_where_each_sample_ran(fleet_run: FleetRun) -> None:
    assert fleet_run.returncode == 0, fleet_run.output
    _, rows = last_table(fleet_run.stdout)
    data = fleet_run.workdir / ".dev" / "manager" / "data"
    async with (
        served_again(data, fleet_run.workdir / "manager-again.kubeconfig"),
        kube_client(fleet_run.workdir / "manager-again.kubeconfig") as client,
    ):
        workloads: list[dict[str, Any]] = (await client.list_all(WORKLOAD, namespace="team-a")).items
        for doc in SAMPLES:
            job = await client.get(GroupVersionKind.of(doc), doc["metadata"]["name"], namespace="team-a")
            owned = [
                w
                for w in workloads
                if any(
                    o.get("uid") == job["metadata"]["uid"] for o in w["metadata"].get("ownerReferences") or []
                )
            ]
            assert len(owned) == 1, (doc["metadata"]["name"], workloads)
            workload = owned[0]
            cluster = rows[(doc["kind"], f"team-a/{doc['metadata']['name']}")][3]
            assert workload["status"]["clusterName"] == cluster
            assert _condition(workload, "Finished")["status"] == "True"
            if doc["kind"] == "Job":
                assert job["spec"]["managedBy"] == "kueue.x-k8s.io/multikueue"
                assert job["status"].get("succeeded", 0) >= 1, job["status"]  # mirrored from the worker
                assert _condition(job, "Complete")["status"] == "True"
            else:
                assert job["spec"]["suspend"] is True  # the manager's copy never ran
                assert job["status"] == {
                    "phase": "Succeeded",
                    "message": "finished by the devcluster job runner",
                }
        for name in sorted(WORKERS):
            active = _condition(await client.get(MK_CLUSTER, name), "Active")
            assert (active["status"], active["reason"]) == ("True", "Active"), active
        check = _condition(await client.get(ADMISSION_CHECK, "dev-multikueue"), "Active")
        assert (check["status"], check["reason"]) == ("True", "Active"), check


# --- the docs' block ------------------------------------------------------------------------------


def _documented_block() -> list[str]:
    start = LOCAL_DEVELOPMENT.index("## Several clusters: `make dev-multicluster`")
    block = re.search(r"```\n(\$ make dev-multicluster .*?)```", LOCAL_DEVELOPMENT[start:], re.S)
    assert block is not None
    return block.group(1).splitlines()


def _normalise(line: str, workdir: Path) -> list[str]:
    line = line.replace(str(workdir.resolve()), "$PWD")
    line = re.sub(r"\((worker-\d+: \d+(, )?)+\)", "(COUNTS)", line)
    line = re.sub(r"\bworker-\d+\b(?=\s+\d)", "WORKER", line)  # the CLUSTER cell, before AGE
    line = re.sub(r"-[0-9a-f]{5}\b", "-HASH", line)
    line = re.sub(r"(?<=\s)\d+[smh](\d+[sm])?$", "AGE", line)
    return line.split()


def test_the_documented_block_is_this_output(fleet_run: FleetRun) -> None:
    assert fleet_run.returncode == 0, fleet_run.output
    command, *expected = _documented_block()
    assert command == "$ make dev-multicluster DEV_ARGS=--exit-when-done"
    actual = [_normalise(line, fleet_run.workdir) for line in fleet_run.stdout.splitlines()]
    chunks: list[list[list[str]]] = [[]]
    for line in expected:
        if line == "...":
            chunks.append([])
        else:
            chunks[-1].append(_normalise(line, fleet_run.workdir))
    position = 0
    for chunk in chunks:
        if not chunk:
            continue
        found = next((i for i in range(position, len(actual)) if actual[i : i + len(chunk)] == chunk), None)
        assert found is not None, (chunk, fleet_run.stdout)
        position = found + len(chunk)
    assert position == len(actual), "the documented block ends where the output ends"
