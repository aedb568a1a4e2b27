"""Authentication by bearer token, and SubjectAccessReview answers from a static policy and RBAC.

Every API request needs ``Authorization: Bearer <token>`` (401 ``Unauthorized`` otherwise), except
the public health and version endpoints, which kube-apiserver also serves to anonymous users.
Authenticated users may do anything: the devcluster does not enforce RBAC on its own requests.
What it does do is answer ``SubjectAccessReview`` / ``SelfSubjectAccessReview`` /
``LocalSubjectAccessReview``, so code that *asks* the API server "may user X do Y" (the AppWrapper
webhook checking the creator of every wrapped object, for instance) can be tested against both
answers. In order: members of ``system:masters`` are always allowed (kube's privileged-group
authorizer); then :attr:`ServerOptions.access_rules`, a static list; then the Roles, ClusterRoles,
RoleBindings and ClusterRoleBindings stored in the cluster (:mod:`.rbac`, kube's RBAC authorizer).
"""

from __future__ import annotations

import hmac
from typing import Any

from devcluster.apiserver.options import ADMIN_USER, ServerOptions
from devcluster.apiserver.rbac import RbacLister, rbac_decision

__all__ = ["PUBLIC_PATHS", "authenticate", "review_access"]

PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version", "/version/"})


def authenticate(headers: dict[bytes, bytes], options: ServerOptions) -> dict[str, Any] | None:
    """The user for the request's bearer token, or None."""
    raw = headers.get(b"authorization", b"")
    if not raw.startswith(b"Bearer "):
        return None
    token = raw[7:].decode("latin-1").strip()
    if hmac.compare_digest(token.encode(), options.token.encode()):
        return ADMIN_USER
    return options.extra_tokens.get(token)


def _matches(values: list[str] | None, value: str) -> bool:
    return values is None or "*" in values or value in values


def review_access(
    spec: dict[str, Any], options: ServerOptions, rbac: RbacLister | None = None
) -> dict[str, Any]:
    """The ``status`` of a SubjectAccessReview with this ``spec`` (``rbac`` lists stored RBAC objects)."""
    user = str(spec.get("user") or "")
    groups = [str(g) for g in spec.get("groups") or []]
    if "system:masters" in groups:
        return {"allowed": True}
    resource = spec.get("resourceAttributes") or {}
    non_resource = spec.get("nonResourceAttributes") or {}
    verb = str(resource.get("verb") or non_resource.get("verb") or "")
    for rule in options.access_rules:
        users, rule_groups = rule.get("users"), rule.get("groups")
        if users is None and rule_groups is None:
            continue
        if not (
            (users is not None and _matches(users, user))
            or (rule_groups is not None and any(_matches(rule_groups, g) for g in groups))
        ):
            continue
        if not _matches(rule.get("verbs"), verb):
            continue
        if resource:
            plural = str(resource.get("resource") or "")
            if resource.get("subresource"):
                plural = f"{plural}/{resource['subresource']}"
            if not _matches(rule.get("resources"), plural):
                continue
            if not _matches(rule.get("apiGroups"), str(resource.get("group") or "")):
                continue
            namespace = str(resource.get("namespace") or "")
            if namespace and not _matches(rule.get("namespaces"), namespace):
                continue
        elif not _matches(rule.get("nonResourceURLs"), str(non_resource.get("path") or "")):
            continue
        return {
            "allowed": True,
            "reason": f"allowed by devcluster access rule {rule.get('name', '')}".strip(),
        }
    return rbac_decision(spec, rbac) if rbac is not None else {"allowed": False}
