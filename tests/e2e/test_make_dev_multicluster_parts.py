"""``kueue-bridge dev --workers N`` without processes: its flag, the manager's objects, the verdict.

* ``--workers`` takes a whole number of worker clusters, 1 to ``MAX_WORKERS``; anything else is an
  argparse error naming the flag and saying what to give (never a traceback, never a run);
* the manager gets ``manager.yaml`` first (its namespaces hold the Secrets), the MultiKueueConfig
  naming exactly the workers started, then per worker a Secret in the configuration's namespace
  with key ``kubeconfig`` and the MultiKueueCluster that points at it (Kueue's v1beta2 fields);
* ``--exit-when-done`` in a fleet succeeds only when every sample finished on a named worker, fails
  at once when one finished without a worker, and fails with a message naming the logs on timeout
  (the live loop run on canned API answers);
* the ports handed to the clusters' components are distinct, even when the kernel offers a
  released port again.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import copy
import io
import re
import socket
from pathlib import Path
from typing import Any, cast

import pytest
import yaml

from devrun import components
from devrun.__main__ import MAX_WORKERS, build_parser
from devrun.cluster import Session
from devrun.multicluster import EXAMPLES_DIR, multikueue_objects, worker_names
from devrun.progress import JobRow
from devrun.samples import load_manifests
from devrun.watch import Watched, verdict, watch
from shared.kube import GroupVersionKind, KubeClient
from shared.kube.verbs import ObjectList


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0", "argument --workers: 0 worker clusters: give 1 to 8 (leave --workers out for one cluster)"),
        ("-1", "argument --workers: -1 worker clusters: give 1 to 8"),
        ("9", "argument --workers: 9 worker clusters: give 1 to 8"),
        ("two", "argument --workers: 'two' is not a whole number; give how many worker clusters"),
        ("1.5", "argument --workers: '1.5' is not a whole number"),
        ("", "argument --workers: '' is not a whole number"),
    ],
)
def test_bad_worker_counts_are_argparse_errors(
    value: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["--workers", value])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert "usage: kueue-bridge dev" in err
    assert message in err
    assert "Traceback" not in err


def test_worker_counts_and_the_single_cluster_default() -> None:
    assert build_parser().parse_args([]).workers is None
    assert build_parser().parse_args(["--workers", "2"]).workers == 2
    assert build_parser().parse_args(["--workers", str(MAX_WORKERS)]).workers == MAX_WORKERS
    assert worker_names(2) == ["worker-1", "worker-2"]


def test_the_manager_gets_its_queues_then_a_secret_and_a_cluster_per_worker() -> None:
    documents = load_manifests(EXAMPLES_DIR / "manager.yaml")
    original = copy.deepcopy(documents)
    kubeconfigs = {"worker-1": "apiVersion: v1\nkind: Config\n# one\n", "worker-2": "# two\n"}
    objects = multikueue_objects(workers=kubeconfigs, namespace="kueue-system", manager_documents=documents)
    assert documents == original  # the loaded documents are not changed

    kinds = [obj["kind"] for obj in objects]
    assert kinds[: len(documents)] == [doc["kind"] for doc in documents]
    assert kinds[len(documents) :] == ["Secret", "MultiKueueCluster"] * 2
    config = next(obj for obj in objects if obj["kind"] == "MultiKueueConfig")
    assert config["spec"]["clusters"] == ["worker-1", "worker-2"]
    check = next(obj for obj in objects if obj["kind"] == "AdmissionCheck")
    assert check["spec"]["controllerName"] == "kueue-bridge.dev/multikueue"
    assert check["spec"]["parameters"] == {
        "apiGroup": "kueue.x-k8s.io",
        "kind": "MultiKueueConfig",
        "name": config["metadata"]["name"],
    }
    queue = next(obj for obj in objects if obj["kind"] == "ClusterQueue")
    assert queue["spec"]["admissionChecksStrategy"]["admissionChecks"] == [
        {"name": check["metadata"]["name"]}
    ]

    for name, kubeconfig in kubeconfigs.items():
        secret = next(obj for obj in objects if obj["metadata"]["name"] == f"{name}-kubeconfig")
        assert secret["metadata"]["namespace"] == "kueue-system"
        assert base64.b64decode(secret["data"]["kubeconfig"]).decode() == kubeconfig
        cluster = next(
            o for o in objects if o["kind"] == "MultiKueueCluster" and o["metadata"]["name"] == name
        )
        assert cluster["apiVersion"] == "kueue.x-k8s.io/v1beta2"
        assert cluster["spec"] == {
            "clusterSource": {"kubeConfig": {"location": f"{name}-kubeconfig", "locationType": "Secret"}}
        }

    one = multikueue_objects(workers={"worker-1": "x"}, namespace="ns", manager_documents=documents)
    assert next(o for o in one if o["kind"] == "MultiKueueConfig")["spec"]["clusters"] == ["worker-1"]


def test_the_secrets_namespace_is_the_configurations() -> None:
    config = yaml.safe_load((EXAMPLES_DIR / "config.yaml").read_text())
    namespaces = {
        doc["metadata"]["name"]
        for doc in load_manifests(EXAMPLES_DIR / "manager.yaml")
        if doc["kind"] == "Namespace"
    }
    assert config["namespace"] in namespaces


def row(state: str, cluster: str | None, name: str = "a") -> JobRow:
    return JobRow("Job", f"team-a/{name}", state, "wl", "cq", "1s", cluster=cluster)


def test_a_fleet_is_done_only_when_every_sample_finished_on_a_worker() -> None:
    done = "Finished(Succeeded)"
    assert verdict([], fleet=True) is None
    assert verdict([row(done, "worker-1"), row("Running", "worker-2", "b")], fleet=True) is None
    assert verdict(
        [row(done, "worker-2"), row("Finished(Failed)", "worker-1", "b"), row(done, "worker-2", "c")],
        fleet=True,
    ) == (
        0,
        "all 3 sample jobs finished on a worker (worker-1: 1, worker-2: 2)",
    )
    assert verdict([row(done, "worker-1"), row(done, "-", "b")], fleet=True) == (
        1,
        "finished without running on a worker: Job team-a/b",
    )
    # one cluster: finished is enough, and there is no CLUSTER to ask for
    assert verdict([row(done, None)], fleet=False) == (0, "all 1 sample jobs finished")


# --- the live phase on canned API answers ---------------------------------------------------------


class FakeClient:
    """``list_all`` answers from a fixed list of objects (kind -> items), like a quiet cluster."""

    def __init__(self, *objects: dict[str, Any]) -> None:
        self.objects = objects

    async def list_all(self, gvk: GroupVersionKind, *, namespace: str | None = None) -> ObjectList:
        items = [
            obj
            for obj in self.objects
            if obj["kind"] == gvk.kind and obj["metadata"].get("namespace") == namespace
        ]
        return ObjectList(items=copy.deepcopy(items), resource_version="1")


def sample(name: str, *, uid: str, suspend: bool, kind: str = "Job") -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1" if kind == "Job" else "samples.kueue-bridge.dev/v1alpha1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "team-a", "uid": uid},
        "spec": {"suspend": suspend},
    }


def finished_workload(owner: str, *, cluster: str | None) -> dict[str, Any]:
    status: dict[str, Any] = {
        "conditions": [{"type": "Finished", "status": "True", "reason": "Succeeded"}],
        "admission": {"clusterQueue": "dev-cluster-queue"},
    }
    if cluster:
        status["clusterName"] = cluster
    return {
        "kind": "Workload",
        "metadata": {"name": f"wl-{owner}", "namespace": "team-a", "ownerReferences": [{"uid": owner}]},
        "status": status,
    }


async def run_watch(
    manager: FakeClient, created: list[dict[str, Any]], *, give_up_after: float
) -> tuple[int, str]:
    out = io.StringIO()
    args = argparse.Namespace(timeout=give_up_after, exit_when_done=True, tty=False)
    session = Session(args=args, out=out, state=Path("."), components=[])
    watched = Watched(
        client=cast(KubeClient, manager),
        created=created,
        config=Path("no-such-config.yaml"),  # no WHY column settings: explain is not asked
        logs=".dev/<cluster>/logs/",
        workers={"worker-1": cast(KubeClient, FakeClient()), "worker-2": cast(KubeClient, FakeClient())},
    )
    code = await asyncio.wait_for(watch(session, watched), timeout=120)  # a safety net against a hang
    return code, out.getvalue()


async def test_a_fleet_run_that_cannot_finish_times_out_with_a_message() -> None:
    hello = sample("hello", uid="u1", suspend=True)
    code, out = await run_watch(FakeClient(hello), [hello], give_up_after=0)
    assert code == 1
    assert out.splitlines()[-1] == (
        "timed out after 0s waiting for every sample to finish on a worker; see .dev/<cluster>/logs/"
    )
    assert re.search(r"^Job +team-a/hello +Suspended +- +- +- ", out, re.M), out


async def test_a_fleet_run_ends_when_every_sample_finished_on_a_worker() -> None:
    hello, train = (
        sample("hello", uid="u1", suspend=False),
        sample("train", uid="u2", suspend=True, kind="SampleJob"),
    )
    manager = FakeClient(
        hello, train, finished_workload("u1", cluster="worker-2"), finished_workload("u2", cluster="worker-1")
    )
    code, out = await run_watch(manager, [hello, train], give_up_after=30)
    assert code == 0
    assert out.splitlines()[-1] == "all 2 sample jobs finished on a worker (worker-1: 1, worker-2: 1)"


async def test_a_sample_finished_without_a_worker_fails_at_once() -> None:
    hello = sample("hello", uid="u1", suspend=False)
    code, out = await run_watch(
        FakeClient(hello, finished_workload("u1", cluster=None)), [hello], give_up_after=30
    )
    assert code == 1
    assert out.splitlines()[-1] == "finished without running on a worker: Job team-a/hello"


def test_the_ports_handed_to_components_are_never_handed_out_twice(monkeypatch: pytest.MonkeyPatch) -> None:
    """Clusters started together are never offered one port twice, even when the kernel reoffers it."""
    offered = iter([41001, 41001, 41002, 41001, 41003])

    class ReofferingSocket:
        def __init__(self, *_: object) -> None:
            self.port = 0

        def __enter__(self) -> ReofferingSocket:
            return self

        def __exit__(self, *_: object) -> None:
            return None

        def bind(self, _: object) -> None:
            self.port = next(offered)

        def getsockname(self) -> tuple[str, int]:
            return ("127.0.0.1", self.port)

    monkeypatch.setattr(components, "_HANDED_OUT", set())
    monkeypatch.setattr(socket, "socket", ReofferingSocket)
    assert [components.free_port() for _ in range(3)] == [41001, 41002, 41003]


def test_real_free_ports_are_distinct_and_bindable() -> None:
    ports = [components.free_port() for _ in range(20)]
    assert len(set(ports)) == 20
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", ports[-1]))
