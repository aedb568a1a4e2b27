"""``make dev`` end to end: ``kueue-bridge dev`` as a user runs it, in a scratch working directory.

What is asserted is what ``make dev`` promises (docs/local-development.md), seen from outside the
process:

* ``--exit-when-done`` exits 0 and its last table shows every sample of ``examples/dev/jobs.yaml``
  ``Finished(Succeeded)`` with a Workload in the sample ClusterQueue;
* the webhook suspended every sample on create (the runner prints the API server's answer);
* the cluster state it leaves in ``.dev/data``, served again by ``kueue-bridge devcluster``, holds
  one finished Workload per sample, owned by it, with the sample's queue;
* Ctrl-C (SIGINT) in the middle of a run exits 0, and no process started by the run survives
  (checked by the run's working directory in every process's command line, and by pid);
* without ``../shared`` the runner says so and uses the project's minimal Kueue CRDs.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from shared.kube import GroupVersionKind
from tests.e2e.conftest import kube_client

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
SAMPLES = [doc for doc in yaml.safe_load_all((REPO / "examples/dev/jobs.yaml").read_text()) if doc]
WORKLOAD = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "Workload")
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
DEV = [sys.executable, "-m", "kueue_bridge.cli", "dev", "--port", "0", "--no-tty"]


def sample_keys() -> set[tuple[str, str]]:
    return {(doc["kind"], f"{doc['metadata']['namespace']}/{doc['metadata']['name']}") for doc in SAMPLES}


def last_table(output: str) -> dict[tuple[str, str], list[str]]:
    """Rows of the last table printed: (KIND, NAMESPACE/NAME) -> the other cells."""
    lines = output.splitlines()
    start = max(i for i, line in enumerate(lines) if line.startswith("KIND "))
    rows: dict[tuple[str, str], list[str]] = {}
    for line in lines[start + 1 :]:
        cells = line.split()
        if len(cells) != 6 or (cells[0], cells[1]) not in sample_keys():
            break
        rows[(cells[0], cells[1])] = cells[2:]
    return rows


def processes_mentioning(text: str) -> list[str]:
    """Command lines of live processes that contain ``text`` (this test's scratch directory)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        with contextlib.suppress(OSError):
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            status = (entry / "status").read_text()
            if text in cmdline and "State:\tZ" not in status:
                found.append(f"{entry.name}: {cmdline}")
    return found


def assert_nothing_left(workdir: Path, output: str) -> None:
    assert processes_mentioning(str(workdir)) == []
    for pid in re.findall(r"\bpid (\d+)", output):
        with pytest.raises(ProcessLookupError):
            os.kill(int(pid), 0)


def env_for(workdir: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), **extra}
    env.pop("KUBECONFIG", None)
    return env


@contextlib.asynccontextmanager
async def served_again(data_dir: Path, kubeconfig: Path) -> AsyncIterator[None]:
    """``kueue-bridge devcluster`` on the data a finished run left behind."""
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kueue_bridge.cli",
        "devcluster",
        "--port",
        "0",
        "--data-dir",
        str(data_dir),
        "--kubeconfig-out",
        str(kubeconfig),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        env=env_for(data_dir),
    )
    assert process.stdout is not None
    try:
        line = await asyncio.wait_for(process.stdout.readline(), timeout=30)
        assert b"devcluster serving at" in line, line
        yield
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        await asyncio.wait_for(process.communicate(), timeout=30)


async def test_exit_when_done_runs_every_sample_to_finished(tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        *DEV,
        "--exit-when-done",
        "--timeout",
        "50",
        cwd=tmp_path,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env_for(tmp_path),
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=110)
    output = stdout.decode()
    assert process.returncode == 0, f"{output}\n{stderr.decode()}"

    rows = last_table(output)
    assert set(rows) == sample_keys(), output
    for key, (state, workload_name, cluster_queue, _age) in rows.items():
        assert state == "Finished(Succeeded)", (key, output)
        assert workload_name != "-", (key, output)
        assert cluster_queue == "dev-cluster-queue", (key, output)
    for kind, name in sample_keys():
        assert f"created         {kind} {name}: suspended by the webhook" in output, output
    # the quota fits two samples: the others wait, and the WHY column (explain's reason) says why
    waiting = [line for line in output.splitlines() if re.search(r"^(Job|SampleJob) .* Pending ", line)]
    assert any(
        re.search(
            r"ClusterQueue dev-cluster-queue has [\d.m]+/2 cpu in use in flavor default-flavor; this job needs",
            line,
        )
        for line in waiting
    ), output
    kubeconfig = (tmp_path / ".dev" / "kubeconfig").resolve()
    assert f"kubectl --kubeconfig {kubeconfig} get workloads -A" in output
    assert "stopped (exit 0)" in output
    for log in ("webhook.log", "reconciler.log", "devcluster.log"):
        assert (tmp_path / ".dev" / "logs" / log).is_file()
    assert_nothing_left(tmp_path, output)

    async with (
        served_again(tmp_path / ".dev" / "data", tmp_path / "again.kubeconfig"),
        kube_client(tmp_path / "again.kubeconfig") as client,
    ):
        workloads: list[dict[str, Any]] = (await client.list_all(WORKLOAD, namespace="team-a")).items
        for doc in SAMPLES:
            gvk = GroupVersionKind.of(doc)
            job = await client.get(gvk, doc["metadata"]["name"], namespace="team-a")
            owned = [
                w
                for w in workloads
                if any(
                    o.get("uid") == job["metadata"]["uid"] for o in w["metadata"].get("ownerReferences") or []
                )
            ]
            assert len(owned) == 1, (doc["metadata"]["name"], workloads)
            workload = owned[0]
            assert workload["spec"]["queueName"] == job["metadata"]["labels"][QUEUE_LABEL] == "team-a"
            assert workload["status"]["admission"]["clusterQueue"] == "dev-cluster-queue"
            finished = [c for c in workload["status"]["conditions"] if c["type"] == "Finished"]
            assert finished and finished[0]["status"] == "True", workload
            assert job["spec"]["suspend"] is False  # started by the reconciler once admitted


async def test_ctrl_c_stops_everything_and_exits_0_without_shared_crds(tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        *DEV,
        cwd=tmp_path,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=env_for(tmp_path, KUEUE_BRIDGE_SHARED_DIR=str(tmp_path / "no-shared")),
    )
    assert process.stdout is not None
    seen: list[str] = []
    try:

        async def until_table() -> None:
            assert process.stdout is not None
            while not any(line.startswith("KIND ") for line in seen):
                line = (await process.stdout.readline()).decode()
                assert line, "".join(seen)
                seen.append(line)

        await asyncio.wait_for(until_table(), timeout=60)
        process.send_signal(signal.SIGINT)
        rest, stderr = await asyncio.wait_for(process.communicate(), timeout=30)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    output = "".join(seen) + rest.decode()
    assert process.returncode == 0, f"{output}\n{stderr.decode()}"
    assert "using the minimal Kueue CRDs" in output
    assert "stopped (exit 0)" in output
    assert_nothing_left(tmp_path, output)
