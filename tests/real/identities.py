"""ServiceAccount identities on a real cluster: a token from the TokenRequest API, as a kubeconfig.

The kit's kube-apiserver signs ServiceAccount tokens (``--service-account-signing-key-file``) and
enforces RBAC, so a process given such a kubeconfig has exactly the rights the ServiceAccount's
Roles grant -- what a pod of that ServiceAccount would have.
"""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import yaml

from shared.kube import GroupVersionKind, KubeClient

__all__ = ["service_account_kubeconfig", "write_kubeconfig"]

SERVICE_ACCOUNT = GroupVersionKind("", "v1", "ServiceAccount")


async def service_account_kubeconfig(
    client: KubeClient, *, admin_kubeconfig: Path, namespace: str, name: str, seconds: int = 3600
) -> dict[str, Any]:
    """A kubeconfig of ``admin_kubeconfig``'s cluster authenticating as ServiceAccount ``namespace/name``."""
    info = await client.resource(SERVICE_ACCOUNT)
    path = info.path(namespace=namespace, name=name, subresource="token")
    answer = await client.request(
        "POST",
        path,
        verb="create",
        resource="serviceaccounts/token",
        body={
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": seconds},
        },
    )
    document = copy.deepcopy(yaml.safe_load(await asyncio.to_thread(admin_kubeconfig.read_text)))
    for user in document["users"]:
        user["user"] = {"token": answer["status"]["token"]}
    return dict(document)


def write_kubeconfig(path: Path, document: dict[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document))
    path.chmod(0o600)
    return path
