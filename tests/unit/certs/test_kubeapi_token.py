"""internalCertManagement's API client authenticates with the kubeconfig's bearer token.

The kubernetes library keeps a kubeconfig's (and an in-cluster ServiceAccount's) token under the
``BearerToken`` key; the certificate rotator once read only ``authorization``, sent no token and was
refused (anonymous: 403) on the real kube-apiserver of the kit (tests/real/test_manifests.py). It
now runs on the process's ``shared.kube`` client, so the token reaches it through the one
connection loader: this test loads a token kubeconfig and watches the rotator's Secret read.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from certs.kubeapi import KubeAPI
from shared.kube import ClientSettings, GroupVersionKind, HttpxTransport, KubeClient, load_connection
from shared.kube.discovery import ResourceInfo
from tests.unit.kube.fakeapi import FakeApi


async def test_the_token_of_a_kubeconfig_is_sent(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [
                    {
                        "name": "c",
                        "cluster": {"server": "https://127.0.0.1:6443", "insecure-skip-tls-verify": True},
                    }
                ],
                "users": [{"name": "u", "user": {"token": "sa-token"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    verbs = frozenset({"get", "list", "create", "update"})
    server = FakeApi([ResourceInfo(GroupVersionKind("", "v1", "Secret"), "secrets", True, verbs)])
    connection = load_connection(kubeconfig=kubeconfig)
    async with KubeClient.from_connection(
        connection, settings=ClientSettings(qps=0), transport=HttpxTransport(server.transport())
    ) as client:
        assert await KubeAPI(client=client).read_secret(namespace="ns", name="s") is None
    reads = [r for r in server.requests if r.path == "/api/v1/namespaces/ns/secrets/s"]
    assert reads and all(r.headers.get("authorization") == "Bearer sa-token" for r in reads)
