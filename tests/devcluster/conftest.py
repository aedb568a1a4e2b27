"""Fixtures for tests that need a Kubernetes API server.

* ``devcluster``: one in-process devcluster (own event loop, own thread, free port) per test, with
  ``.url``, ``.token``, ``.ca_file``, ``.kubeconfig_path`` and ``.server_options``.
* ``devcluster_factory``: ``factory(**ServerOptions fields)`` starts more (MultiKueue tests need a
  manager and two workers); all are stopped at teardown.
* ``kube``: an HTTP client for the conformance suite. It targets the ``devcluster`` unless
  ``KUEUE_BRIDGE_TEST_KUBECONFIG`` names a kubeconfig (bearer-token user), in which case the same
  tests run against that real cluster; tests that need devcluster-only knobs use the factory and
  are skipped there.
* ``namespace``: a fresh namespace in the ``kube`` target, deleted afterwards. On a real cluster
  without kube-controller-manager the fixture does what its controllers would do to a new namespace
  (the ``default`` ServiceAccount, the ``kube-root-ca.crt`` ConfigMap), so tests see what they would
  see on a full cluster; the devcluster does that itself.
* ``needs_controller_manager(kube, what)``: skip on a real cluster, naming the controller the test
  needs (the kit's cluster runs kube-apiserver alone).
"""

from __future__ import annotations

import base64
import os
import secrets
import ssl
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from devcluster.apiserver.options import ServerOptions
from devcluster.server import ThreadedDevCluster

REAL_KUBECONFIG = os.environ.get("KUEUE_BRIDGE_TEST_KUBECONFIG")


@pytest.fixture
def devcluster_factory() -> Iterator[Callable[..., ThreadedDevCluster]]:
    started: list[ThreadedDevCluster] = []

    def _start(**option_fields: Any) -> ThreadedDevCluster:
        cluster = ThreadedDevCluster(options=ServerOptions(**option_fields)).start()
        started.append(cluster)
        return cluster

    yield _start
    for cluster in reversed(started):
        cluster.stop()


@pytest.fixture
def devcluster(devcluster_factory: Callable[..., ThreadedDevCluster]) -> ThreadedDevCluster:
    return devcluster_factory()


class KubeTarget:
    """Where the conformance suite sends requests: ``client`` is an httpx.Client with auth and CA."""

    def __init__(self, *, url: str, token: str, ca_file: Path, is_devcluster: bool) -> None:
        self.url = url
        self.token = token
        self.ca_file = ca_file
        self.is_devcluster = is_devcluster
        self.client = httpx.Client(
            base_url=url,
            verify=ssl.create_default_context(cafile=str(ca_file)),
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )

    def close(self) -> None:
        self.client.close()


def _target_from_kubeconfig(path: Path, tmp: Path) -> KubeTarget:
    config = yaml.safe_load(path.read_text())
    context_name = config.get("current-context")
    context = next(c["context"] for c in config["contexts"] if c["name"] == context_name)
    cluster = next(c["cluster"] for c in config["clusters"] if c["name"] == context["cluster"])
    user = next(u["user"] for u in config["users"] if u["name"] == context["user"])
    if "token" not in user:
        pytest.skip("KUEUE_BRIDGE_TEST_KUBECONFIG must use a bearer-token user")
    ca_file = tmp / "ca.crt"
    if "certificate-authority-data" in cluster:
        ca_file.write_bytes(base64.b64decode(cluster["certificate-authority-data"]))
    else:
        ca_file = Path(cluster["certificate-authority"])
    return KubeTarget(url=cluster["server"], token=user["token"], ca_file=ca_file, is_devcluster=False)


@pytest.fixture
def kube(request: pytest.FixtureRequest) -> Iterator[KubeTarget]:
    if REAL_KUBECONFIG:
        with tempfile.TemporaryDirectory() as tmp:
            target = _target_from_kubeconfig(Path(REAL_KUBECONFIG), Path(tmp))
            yield target
            target.close()
        return
    cluster: ThreadedDevCluster = request.getfixturevalue("devcluster")
    target = KubeTarget(url=cluster.url, token=cluster.token, ca_file=cluster.ca_file, is_devcluster=True)
    yield target
    target.close()


#: what kube-controller-manager's root-ca-cert-publisher writes on the ConfigMap it creates
ROOT_CA_DESCRIPTION = (
    "Contains a CA bundle that can be used to verify the kube-apiserver when using internal "
    "endpoints such as the internal service IP or kubernetes.default.svc. No other usage is "
    "guaranteed across distributions of Kubernetes clusters."
)


def populate_like_the_controllers(kube: KubeTarget, namespace: str) -> None:
    """What the serviceaccount and root-ca-cert-publisher controllers do to a new namespace.

    Without the ``default`` ServiceAccount kube-apiserver's ServiceAccount admission forbids every Pod.
    A 409 is fine: a controller may have been quicker.
    """
    client = kube.client
    account = client.post(
        f"/api/v1/namespaces/{namespace}/serviceaccounts", json={"metadata": {"name": "default"}}
    )
    assert account.status_code in (201, 409), account.text
    root_ca = {
        "metadata": {
            "name": "kube-root-ca.crt",
            "annotations": {"kubernetes.io/description": ROOT_CA_DESCRIPTION},
        },
        "data": {"ca.crt": kube.ca_file.read_text()},
    }
    published = client.post(f"/api/v1/namespaces/{namespace}/configmaps", json=root_ca)
    assert published.status_code in (201, 409), published.text


def has_controller_manager(kube: KubeTarget) -> bool:
    """Whether controllers run: the devcluster's own, or kube-controller-manager's (seen by the
    ``default`` ServiceAccount it gives every namespace, ``default`` included)."""
    if kube.is_devcluster:
        return True
    return kube.client.get("/api/v1/namespaces/default/serviceaccounts/default").status_code == 200


def needs_controller_manager(kube: KubeTarget, what: str) -> None:
    """Skip on a real cluster without kube-controller-manager (the kit runs kube-apiserver alone)."""
    if not has_controller_manager(kube):
        pytest.skip(f"needs kube-controller-manager ({what}), which the test cluster does not run")


@pytest.fixture
def namespace(kube: KubeTarget) -> Iterator[str]:
    name = f"conf-{secrets.token_hex(4)}"
    response = kube.client.post("/api/v1/namespaces", json={"metadata": {"name": name}})
    assert response.status_code == 201, response.text
    if not has_controller_manager(kube):
        populate_like_the_controllers(kube, name)
    yield name
    kube.client.delete(f"/api/v1/namespaces/{name}")


@pytest.fixture
def devcluster_only(kube: KubeTarget) -> None:
    if not kube.is_devcluster:
        pytest.skip("needs a devcluster-only server option")
