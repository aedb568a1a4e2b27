"""kueue-bridge from its image, installed with its Helm chart, its release manifest and kustomize,
on a one-node cluster where Jobs run real pods, next to Kueue v0.19.2 installed with Kueue's chart.

Figures (create counts during the upgrade, admission latency p50/p99) are printed for the report.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.install.conftest import REPO, Cluster, eventually

pytestmark = [pytest.mark.slow]

NS = "team-a"
OURS = "kueue-bridge-system"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
BUSYBOX = "localhost/real-cluster/busybox:1.35"
HACK = REPO / "hack" / "install"
WEBHOOK_SECRET = "kueue-bridge-webhook-server-cert"
FIGURES: dict[str, Any] = {}


def pod_template(seconds: int = 1) -> dict[str, Any]:
    return {
        "spec": {
            "restartPolicy": "Never",
            "containers": [
                {
                    "name": "main",
                    "image": BUSYBOX,
                    "imagePullPolicy": "IfNotPresent",
                    "command": ["sh", "-c", f"sleep {seconds}"],
                    "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}},
                }
            ],
        }
    }


def job(name: str, *, queue: str | None = "user-queue", parallelism: int = 1) -> dict[str, Any]:
    labels = {QUEUE_LABEL: queue} if queue else {}
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": {"parallelism": parallelism, "completions": parallelism, "template": pod_template()},
    }


def create(cluster: Cluster, *objects: dict[str, Any]) -> list[dict[str, Any]]:
    """Create ``objects``; returns them as the API server stored them (after every webhook)."""
    out = cluster.kubectl(
        "create", "-f", "-", "-o", "json", input_text="\n---\n".join(json.dumps(o) for o in objects)
    )
    # one JSON document per object, one after the other
    decoder, index = json.JSONDecoder(), 0
    stored: list[dict[str, Any]] = []
    while index < len(out.rstrip()):
        document, end = decoder.raw_decode(out, index)
        stored += document["items"] if document.get("kind") == "List" else [document]
        index = end
        while index < len(out) and out[index].isspace():
            index += 1
    return stored


def condition(obj: dict[str, Any], kind: str) -> bool:
    return any(
        c["type"] == kind and c["status"] == "True" for c in (obj.get("status") or {}).get("conditions") or []
    )


def workloads_of(cluster: Cluster, uid: str) -> list[dict[str, Any]]:
    items = cluster.get("workloads.kueue.x-k8s.io", "-n", NS)["items"]
    return [w for w in items if any(ref["uid"] == uid for ref in w["metadata"].get("ownerReferences") or [])]


def wait_job_complete(cluster: Cluster, name: str, *, timeout: float = 300) -> dict[str, Any]:
    def done() -> dict[str, Any] | None:
        found = cluster.kubectl("get", "job", name, "-n", NS, "-o", "json", "--ignore-not-found")
        current: dict[str, Any] = json.loads(found) if found.strip() else {}
        return current if current and condition(current, "Complete") else None

    return eventually(done, what=f"Job {name} Complete", timeout=timeout)  # type: ignore[no-any-return]


def assert_admitted_and_finished_by_us(cluster: Cluster, owner_uid: str) -> None:
    (workload,) = eventually(
        lambda: [w for w in workloads_of(cluster, owner_uid) if condition(w, "Finished")],
        what="its Workload Finished",
        timeout=120,
    )
    assert condition(workload, "Admitted")
    assert workload["status"]["admission"]["clusterQueue"] == "cluster-queue"


def run_queued_job(cluster: Cluster, name: str) -> None:
    (stored,) = create(cluster, job(name, parallelism=2))
    # suspended at create by our webhook (the queue decides when it starts), then started by us
    assert stored["spec"]["suspend"] is True
    finished = wait_job_complete(cluster, name)
    assert finished["status"]["succeeded"] == 2
    assert_admitted_and_finished_by_us(cluster, finished["metadata"]["uid"])


def run_appwrapper(cluster: Cluster, name: str) -> None:
    wrapped = job(f"{name}-job", queue=None, parallelism=2)
    wrapped["metadata"] = {"name": f"{name}-job"}
    create(
        cluster,
        {
            "apiVersion": "workload.codeflare.dev/v1beta2",
            "kind": "AppWrapper",
            "metadata": {"name": name, "namespace": NS, "labels": {QUEUE_LABEL: "user-queue"}},
            "spec": {"components": [{"template": wrapped}]},
        },
    )
    finished = wait_job_complete(cluster, f"{name}-job")
    assert finished["status"]["succeeded"] == 2
    wrapper = cluster.get("appwrapper", name, "-n", NS)
    assert_admitted_and_finished_by_us(cluster, wrapper["metadata"]["uid"])


def run_widget(cluster: Cluster, name: str, kind: str = "Widget") -> None:
    (stored,) = create(
        cluster,
        {
            "apiVersion": "samples.kueue-bridge.dev/v1",
            "kind": kind,
            "metadata": {"name": name, "namespace": NS, "labels": {QUEUE_LABEL: "user-queue"}},
            "spec": {"replicas": 1, "template": pod_template()},
        },
    )
    resource = f"{kind.lower()}s.samples.kueue-bridge.dev"
    assert stored["spec"]["suspend"] is True  # as stored: our webhook suspended it
    started = eventually(
        lambda: (w := cluster.get(resource, name, "-n", NS))["spec"]["suspend"] is False and w,
        what=f"{kind} {name} started",
        timeout=120,
    )
    (workload,) = workloads_of(cluster, started["metadata"]["uid"])
    assert condition(workload, "Admitted")


def leader_of(cluster: Cluster, lease: str) -> str:
    holder = cluster.get("lease", lease, "-n", OURS)["spec"].get("holderIdentity") or ""
    return str(holder)


def ready_replicas(cluster: Cluster) -> dict[str, int]:
    deployments = cluster.get("deployments", "-n", OURS)["items"]
    return {d["metadata"]["name"]: d["status"].get("readyReplicas", 0) for d in deployments}


def assert_installed(cluster: Cluster) -> None:
    assert ready_replicas(cluster) == {
        "kueue-bridge-webhook": 2,
        "kueue-bridge-reconciler": 2,
        "kueue-bridge-multikueue": 2,
        "kueue-bridge-appwrapper": 2,
    }
    endpoints = cluster.get(
        "endpointslices", "-n", OURS, "-l", "kubernetes.io/service-name=kueue-bridge-webhook-service"
    )
    ready = [e for s in endpoints["items"] for e in s.get("endpoints") or [] if e["conditions"].get("ready")]
    assert len(ready) == 2  # both replicas behind the Service
    for component in ("reconciler", "multikueue", "appwrapper"):
        lease = f"kueue-bridge-{component}"
        holder = eventually(partial(leader_of, cluster, lease), what=f"{lease} Lease held")
        assert holder.startswith(f"kueue-bridge-{component}-"), holder
    mutating = cluster.get("mutatingwebhookconfiguration", "kueue-bridge-mutating-webhook-configuration")
    (owner,) = mutating["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"]) == ("ClusterRole", "kueue-bridge-webhook")


def assert_nothing_of_ours_remains(cluster: Cluster) -> None:
    def leftovers() -> list[str]:
        found = []
        for kind in (
            "mutatingwebhookconfigurations",
            "validatingwebhookconfigurations",
            "clusterroles",
            "clusterrolebindings",
        ):
            found += [
                f"{kind}/{n}"
                for n in cluster.kubectl("get", kind, "-o", "name").split()
                if "kueue-bridge" in n
            ]
        found += [
            f"kueue-system/{n}"
            for n in cluster.kubectl("get", "roles,rolebindings", "-n", "kueue-system", "-o", "name").split()
            if "kueue-bridge" in n
        ]
        if cluster.kubectl("get", "namespace", OURS, "--ignore-not-found", "-o", "name").strip():
            found.append(f"namespace/{OURS}")
        return found

    eventually(lambda: not leftovers(), what="nothing of kueue-bridge left", timeout=180)
    # and creating Jobs still works: nobody is called for them, nobody suspends them
    (stored,) = create(cluster, job("after-uninstall", queue="user-queue"))
    assert stored["spec"]["suspend"] is False
    wait_job_complete(cluster, "after-uninstall")
    cluster.kubectl("delete", "job", "after-uninstall", "-n", NS, "--cascade=foreground")


def clean_team(cluster: Cluster) -> None:
    for kind in (
        "jobs",
        "appwrappers",
        "widgets.samples.kueue-bridge.dev",
        "gadgets.samples.kueue-bridge.dev",
    ):
        cluster.kubectl("delete", kind, "--all", "-n", NS, "--ignore-not-found", "--wait=true", check=False)
    cluster.kubectl(
        "delete", "workloads.kueue.x-k8s.io", "--all", "-n", NS, "--ignore-not-found", check=False
    )


def release_manifest(cluster: Cluster, tmp_path: Path) -> Path:
    """``make release-manifests IMAGE=<the test image>``: the AppWrapper flavour."""
    cluster.run("make", "-C", str(REPO), "release-manifests", f"IMAGE={cluster.image}")
    (bundle,) = (REPO / "dist").glob("kueue-bridge-appwrapper-*.yaml")
    documents = [d for d in yaml.safe_load_all(bundle.read_text()) if d]
    for document in documents:
        small_node(document)
    path = tmp_path / bundle.name
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    return path


def small_node(document: dict[str, Any]) -> None:
    """The same values hack/install/small-node.yaml gives the chart: requests that fit a 2-CPU node."""
    if document.get("kind") != "Deployment":
        return
    for container in document["spec"]["template"]["spec"]["containers"]:
        container["imagePullPolicy"] = "Never"
        container["resources"]["requests"] = {"cpu": "20m", "memory": "128Mi"}


def kustomize_overlay(cluster: Cluster, tmp_path: Path) -> Path:
    """deploy/appwrapper with the test image (kustomize ``images``) and the small-node requests."""
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    patches = []
    for component in ("webhook", "reconciler", "multikueue", "appwrapper"):
        patch = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": f"kueue-bridge-{component}", "namespace": OURS},
            "spec": {
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "name": component,
                                "imagePullPolicy": "Never",
                                "resources": {"requests": {"cpu": "20m", "memory": "128Mi"}},
                            }
                        ]
                    }
                }
            },
        }
        (overlay / f"{component}.yaml").write_text(yaml.safe_dump(patch))
        patches.append({"path": f"{component}.yaml"})
    repository, _, tag = cluster.image.rpartition(":")
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": [os.path.relpath(REPO / "deploy" / name, overlay) for name in ("appwrapper", "kueue")],
        "images": [{"name": "kueue-bridge", "newName": repository, "newTag": tag}],
        "patches": patches,
    }
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump(kustomization))
    return overlay


@pytest.mark.parametrize("flavour", ["helm", "release-manifest", "kustomize"])
def test_install_runs_real_pods_and_uninstall_leaves_nothing(
    cluster: Cluster, tmp_path: Path, flavour: str
) -> None:
    if flavour == "helm":
        cluster.step("helm-install")
    elif flavour == "release-manifest":
        manifest = release_manifest(cluster, tmp_path)
        cluster.step("manifest-install", str(manifest))
    else:
        overlay = kustomize_overlay(cluster, tmp_path)
        cluster.step("kustomize-install", str(overlay))
    try:
        assert_installed(cluster)
        run_queued_job(cluster, f"job-{flavour}")
        run_appwrapper(cluster, f"aw-{flavour}")
        if flavour == "helm":  # the chart's configuration has the declarative kind (and its RBAC)
            run_widget(cluster, "widget-helm")
    finally:
        clean_team(cluster)
        if flavour == "helm":
            cluster.step("helm-uninstall")
            # Helm never deletes a namespace; the Leases the controllers made live there
            cluster.kubectl(
                "delete", "namespace", OURS, "--wait=true", "--ignore-not-found", "--timeout=300s"
            )
        elif flavour == "release-manifest":
            cluster.step("manifest-uninstall", str(manifest))
        else:
            cluster.step("kustomize-uninstall", str(overlay))
    assert_nothing_of_ours_remains(cluster)


def webhook_latency(metrics_text: str) -> dict[str, dict[str, float]]:
    """``apiserver_admission_webhook_admission_duration_seconds`` per webhook: cumulative buckets."""
    buckets: dict[str, dict[float, float]] = {}
    counts: dict[str, float] = {}
    pattern = re.compile(
        r"^apiserver_admission_webhook_admission_duration_seconds_(bucket|count)\{(.*)\} (\S+)$"
    )
    for line in metrics_text.splitlines():
        match = pattern.match(line)
        if not match:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', match.group(2)))
        name = labels["name"]
        if match.group(1) == "count":
            counts[name] = counts.get(name, 0.0) + float(match.group(3))
            continue
        bound = float("inf") if labels["le"] == "+Inf" else float(labels["le"])
        per = buckets.setdefault(name, {})
        per[bound] = per.get(bound, 0.0) + float(match.group(3))
    return {
        name: {"count": counts.get(name, 0.0), **{str(b): v for b, v in per.items()}}
        for name, per in buckets.items()
    }


def quantile(cumulative: dict[float, float], q: float) -> float:
    """Prometheus' histogram_quantile: linear within the bucket that holds the q-th observation."""
    bounds = sorted(cumulative)
    total = cumulative[bounds[-1]]
    if total <= 0:
        return float("nan")
    rank, lower, below = q * total, 0.0, 0.0
    for bound in bounds:
        if cumulative[bound] >= rank:
            if bound == float("inf"):
                return lower
            return lower + (bound - lower) * (rank - below) / max(cumulative[bound] - below, 1e-9)
        lower, below = bound, cumulative[bound]
    return lower


def latency_between(before: str, after: str) -> dict[str, dict[str, float]]:
    first, second = webhook_latency(before), webhook_latency(after)
    figures = {}
    for name, buckets in second.items():
        old = first.get(name, {})
        delta = {float(b): v - old.get(b, 0.0) for b, v in buckets.items() if b != "count"}
        calls = buckets["count"] - old.get("count", 0.0)
        if calls > 0:
            figures[name] = {
                "calls": calls,
                "p50_ms": round(quantile(delta, 0.5) * 1000, 1),
                "p99_ms": round(quantile(delta, 0.99) * 1000, 1),
            }
    return figures


def gadget(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "samples.kueue-bridge.dev/v1",
        "kind": "Gadget",
        "metadata": {"name": name, "namespace": NS, "labels": {QUEUE_LABEL: "user-queue"}},
        "spec": {"replicas": 1, "template": pod_template()},
    }


def keep_creating_during(cluster: Cluster, step: Callable[[], object], *, after: int = 10) -> dict[str, Any]:
    """Create a batch Job and a Gadget, one after the other, while ``step`` runs and then at once
    until ``after`` of each were created after it returned; counts per phase: created, failed,
    unsuspended as stored, and for Gadgets ``escaped``: unsuspended after an earlier one was
    suspended (intercepted, then not)."""
    returned = threading.Event()
    stop = threading.Event()

    def phase() -> dict[str, Any]:
        return {
            "jobs": {"created": 0, "unsuspended": 0},
            "gadgets": {"created": 0, "unsuspended": 0, "escaped": 0},
            "failed": [],
        }

    counts = {"during helm upgrade": phase(), "after helm upgrade returned": phase()}
    intercepted_once = False

    def create_one(kind: str, name: str, body: dict[str, Any]) -> None:
        nonlocal intercepted_once
        current = counts["after helm upgrade returned" if returned.is_set() else "during helm upgrade"]
        result = subprocess.run(
            [cluster.env["KUBECTL"], "create", "-f", "-", "-o", "json"],
            env=cluster.env,
            input=json.dumps(body),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        try:
            stored = json.loads(result.stdout)
        except json.JSONDecodeError:
            current["failed"].append(f"{name}: {result.stderr.strip()}")
            return
        current[kind]["created"] += 1
        suspended = stored["spec"].get("suspend") is True
        if not suspended:
            current[kind]["unsuspended"] += 1
            if kind == "gadgets" and intercepted_once:
                current[kind]["escaped"] += 1
        elif kind == "gadgets":
            intercepted_once = True

    def keep_creating() -> None:
        index = 0
        while not stop.is_set():
            create_one("jobs", f"upgrade-job-{index:03d}", job(f"upgrade-job-{index:03d}"))
            create_one("gadgets", f"upgrade-gadget-{index:03d}", gadget(f"upgrade-gadget-{index:03d}"))
            index += 1
            done_after = counts["after helm upgrade returned"]
            if min(done_after["jobs"]["created"], done_after["gadgets"]["created"]) >= after:
                return

    creator = threading.Thread(target=keep_creating)
    creator.start()
    try:
        step()
    except BaseException:
        stop.set()
        raise
    finally:
        returned.set()
        creator.join(timeout=600)
    return counts


def test_failover_upgrade_and_admission_latency_with_the_chart(cluster: Cluster, tmp_path: Path) -> None:
    cluster.step("helm-install")
    try:
        assert_installed(cluster)
        before = cluster.kubectl("get", "--raw", "/metrics")
        # c. the reconciler's leader goes away while 50 Jobs are queued
        names = [f"burst-{i:02d}" for i in range(50)]
        create(cluster, *(job(name) for name in names))
        leader = leader_of(cluster, "kueue-bridge-reconciler")
        leader_pod = leader.split("_")[0]
        cluster.kubectl("delete", "pod", leader_pod, "-n", OURS, "--wait=false")
        for name in names:
            wait_job_complete(cluster, name, timeout=600)
        assert leader_of(cluster, "kueue-bridge-reconciler") != leader
        for name in names:
            uid = cluster.get("job", name, "-n", NS)["metadata"]["uid"]
            (workload,) = workloads_of(cluster, uid)  # one Workload per Job: no duplicate
            assert condition(workload, "Finished") and condition(workload, "Admitted")
        after = cluster.kubectl("get", "--raw", "/metrics")
        FIGURES["admission latency during failover"] = latency_between(before, after)
        ours = {n: f for n, f in FIGURES["admission latency during failover"].items() if "kueue-bridge" in n}
        assert ours, FIGURES  # the API server called our webhook for the 50 creates
        clean_team(cluster)

        # d. helm upgrade to a configuration with one more kind while Jobs are being created
        config = yaml.safe_load((HACK / "kueue-bridge.yaml").read_text())
        gadget_framework = dict(
            config["integrations"]["externalFrameworks"][0],
            name="Gadget.v1.samples.kueue-bridge.dev",
            resource="gadgets",
        )
        config["integrations"]["externalFrameworks"].append(gadget_framework)
        upgraded = tmp_path / "with-gadget.yaml"
        upgraded.write_text(yaml.safe_dump(config, sort_keys=False))
        creates = keep_creating_during(cluster, lambda: cluster.step("helm-upgrade", CONFIG=str(upgraded)))
        FIGURES["creates during and right after helm upgrade"] = creates
        during, after = creates["during helm upgrade"], creates["after helm upgrade returned"]
        for phase in (during, after):
            assert phase["failed"] == [], creates  # no create fails
            assert phase["jobs"]["unsuspended"] == 0, creates  # a configured kind never escapes
        assert during["jobs"]["created"] > 0 and during["gadgets"]["created"] > 0, creates
        # Gadget is not configured before the upgrade: those created before the new rule is registered
        # are rightly not intercepted; once one is, none escapes (no replica of the old configuration
        # serves), and every Gadget created after helm upgrade returned is intercepted
        assert during["gadgets"]["escaped"] == 0, creates
        assert after["gadgets"]["created"] >= 10 and after["gadgets"]["unsuspended"] == 0, creates
        assert after["jobs"]["created"] >= 10, creates
        run_widget(cluster, "gadget-after-upgrade", kind="Gadget")
    finally:
        clean_team(cluster)
        cluster.step("helm-uninstall")
        cluster.kubectl("delete", "namespace", OURS, "--wait=true", "--ignore-not-found", "--timeout=300s")
        print(f"\ntest-install figures: {json.dumps(FIGURES, indent=1)}")
    assert_nothing_of_ours_remains(cluster)


def test_a_webhook_that_cannot_read_its_certificate_never_blocks_creates(
    cluster: Cluster, tmp_path: Path
) -> None:
    """The release manifest with the certificate mounted from its Secret unreadable to the webhook:
    root's, mode 0400, and no fsGroup (which would make it group-readable)."""
    manifest = release_manifest(cluster, tmp_path)
    documents = [d for d in yaml.safe_load_all(manifest.read_text()) if d]
    for document in documents:
        if document["kind"] == "Deployment" and document["metadata"]["name"] == "kueue-bridge-webhook":
            pod = document["spec"]["template"]["spec"]
            del pod["securityContext"]["fsGroup"]
            pod["volumes"] = [v for v in pod["volumes"] if v["name"] != "cert"] + [
                {"name": "cert", "secret": {"secretName": WEBHOOK_SECRET, "defaultMode": 0o400}}
            ]
            for container in pod["containers"]:
                for mount in container["volumeMounts"]:
                    if mount["name"] == "cert":
                        mount["readOnly"] = True
    manifest.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    cluster.kubectl("apply", "--server-side", "-f", str(manifest))
    try:

        def refused() -> bool:
            logs = cluster.kubectl(
                "logs", "-n", OURS, "deploy/kueue-bridge-webhook", "--tail=50", check=False
            )
            return "Permission denied" in logs

        eventually(refused, what="the webhook to fail reading its certificate", timeout=300, interval=3)
        assert (
            cluster.kubectl("get", "mutatingwebhookconfigurations", "-o", "name").count("kueue-bridge") == 0
        )
        (stored,) = create(cluster, job("while-broken"))
        assert stored["spec"]["suspend"] is False
        wait_job_complete(cluster, "while-broken")
    finally:
        clean_team(cluster)
        cluster.step("manifest-uninstall", str(manifest))
    assert_nothing_of_ours_remains(cluster)
