"""ServiceAccount identities on a real cluster: their RBAC applied, a token from the TokenRequest API,
as a kubeconfig.

The kit's kube-apiserver signs ServiceAccount tokens (``--service-account-signing-key-file``) and
enforces RBAC, so a process given such a kubeconfig has exactly the rights the ServiceAccount's
Roles grant -- what a pod of that ServiceAccount would have -- and the API server knows it by the
user name a pod of it would have (``shared.identities``): our validating webhooks' match conditions
tell the job reconciler's updates apart by it (``shared.webhook_configurations``).
"""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import yaml

from bridge_tools.manifests.render import identity_rbac
from shared.config import Configuration
from shared.identities import Identity, service_account_name
from shared.kube import GroupVersionKind, KubeClient

__all__ = ["run_as", "service_account_kubeconfig", "write_kubeconfig"]

SERVICE_ACCOUNT = GroupVersionKind("", "v1", "ServiceAccount")
NAMESPACE = GroupVersionKind("", "v1", "Namespace")
#: the field manager of what this module applies
FIELD_MANAGER = "kueue-bridge-devrun"


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


async def run_as(
    client: KubeClient,
    identity: Identity,
    *,
    config: Configuration,
    admin_kubeconfig: Path,
    target: Path,
    kueue_namespace: str,
    seconds: int = 3600,
) -> Path:
    """Apply ``identity``'s ServiceAccount, Roles and bindings as ``kueue-bridge manifests`` renders
    them for ``config`` (server-side apply; the namespaces are created when missing), then write to
    ``target`` a kubeconfig with a token of that ServiceAccount valid for ``seconds``."""
    for name in dict.fromkeys((config.namespace, kueue_namespace)):
        await client.apply(NAMESPACE, {"metadata": {"name": name}}, field_manager=FIELD_MANAGER, force=True)
    for obj in identity_rbac(config, identity, namespace=config.namespace, kueue_namespace=kueue_namespace):
        await client.apply(
            GroupVersionKind.of(obj),
            obj,
            field_manager=FIELD_MANAGER,
            force=True,
            namespace=obj["metadata"].get("namespace"),
        )
    document = await service_account_kubeconfig(
        client,
        admin_kubeconfig=admin_kubeconfig,
        namespace=config.namespace,
        name=service_account_name(identity),
        seconds=seconds,
    )
    return write_kubeconfig(target, document)
