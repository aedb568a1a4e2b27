"""Credentials on the devcluster: a token rotated on disk (kubeconfig ``tokenFile``) is used at once."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from devcluster.server import ThreadedDevCluster
from shared.kube import GroupVersionKind, KubeClient, Unauthorized, load_kubeconfig
from tests.component.kube.conftest import NAMESPACE, UNLIMITED

ADMIN = {"username": "alice", "uid": "alice", "groups": ["system:masters", "system:authenticated"]}
VIEWER = {"username": "bob", "uid": "bob", "groups": ["system:authenticated"]}
SELF_REVIEW = GroupVersionKind("authorization.k8s.io", "v1", "SelfSubjectAccessReview")


async def may_create_namespaces(client: KubeClient) -> bool:
    """Who the server thinks we are, told by what it allows us (the devcluster enforces no RBAC)."""
    review = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": "create", "resource": "namespaces"}},
    }
    answer = await client.create(SELF_REVIEW, review)
    return bool(answer["status"]["allowed"])


def kubeconfig_with_token_file(source: Path, destination: Path, token_file: Path) -> Path:
    document = yaml.safe_load(source.read_text())
    for entry in document["users"]:
        entry["user"] = {"tokenFile": str(token_file)}
    destination.write_text(yaml.safe_dump(document))
    return destination


async def test_a_token_rotated_on_disk_is_picked_up_by_the_next_request(
    devcluster_factory: Callable[..., ThreadedDevCluster], tmp_path: Path
) -> None:
    cluster = devcluster_factory(
        extra_tokens={"token-alice": ADMIN, "token-bob": VIEWER},
        access_rules=[{"users": ["bob"], "verbs": ["get", "list"], "resources": ["namespaces"]}],
    )
    token_file = tmp_path / "token"
    token_file.write_text("token-alice\n")
    kubeconfig = kubeconfig_with_token_file(cluster.kubeconfig_path, tmp_path / "kubeconfig", token_file)
    async with KubeClient.from_connection(load_kubeconfig(kubeconfig), settings=UNLIMITED) as client:
        await client.create(NAMESPACE, {"metadata": {"name": "by-alice"}})
        assert await may_create_namespaces(client)

        token_file.write_text("token-bob\n")  # rotated: the next request is bob's
        assert (await client.get(NAMESPACE, "by-alice"))["metadata"]["name"] == "by-alice"
        assert not await may_create_namespaces(client)

        token_file.write_text("revoked-token\n")
        with pytest.raises(Unauthorized):
            await client.get(NAMESPACE, "by-alice")

        token_file.write_text("token-alice\n")
        assert await may_create_namespaces(client)
