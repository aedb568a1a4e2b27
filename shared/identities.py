"""Who kueue-bridge's processes are on the API server: their ServiceAccounts and user names.

Each component runs as its own ServiceAccount (``kueue-bridge manifests``, ``deploy/``), so RBAC can
grant it exactly what it does (``shared.component_access``) and the API server can tell its requests
apart from everyone else's: our validating webhooks are not called for the job reconciler's own
updates (``shared.webhook_configurations``). Both read the names from here, so a renamed
ServiceAccount cannot leave a webhook condition naming a user that no longer exists.

Invariant: :func:`service_account_username` is the user name kube-apiserver's ServiceAccount token
authenticator gives a token of that account (``system:serviceaccount:<namespace>:<name>``); it is
what ``request.userInfo.username`` holds in an admission request.
"""

from __future__ import annotations

from typing import Final, Literal

__all__ = [
    "IDENTITIES",
    "KUEUE_MANAGER_SERVICE_ACCOUNT",
    "Identity",
    "service_account_name",
    "service_account_username",
]

Identity = Literal["webhook", "reconciler", "multikueue", "appwrapper", "multikueue-worker", "kueue"]
IDENTITIES: Final[tuple[Identity, ...]] = (
    "webhook",
    "reconciler",
    "multikueue",
    "appwrapper",
    "multikueue-worker",
    "kueue",
)

#: Kueue's manager's ServiceAccount (Kueue's default manifests).
KUEUE_MANAGER_SERVICE_ACCOUNT: Final = "kueue-controller-manager"


def service_account_name(identity: Identity) -> str:
    """The ServiceAccount ``kueue-bridge manifests`` creates for an identity (Kueue's is Kueue's)."""
    return KUEUE_MANAGER_SERVICE_ACCOUNT if identity == "kueue" else f"kueue-bridge-{identity}"


def service_account_username(identity: Identity, *, namespace: str) -> str:
    """``system:serviceaccount:<namespace>:<name>``: the user an identity's token authenticates as."""
    return f"system:serviceaccount:{namespace}:{service_account_name(identity)}"
