"""Authentication by bearer token, and SubjectAccessReview answers from a static policy and RBAC.

As kube-apiserver with its default ``--anonymous-auth=true``: a request with a bearer token the
server does not know is 401 ``Unauthorized``; one without credentials is the user
``system:anonymous`` (group ``system:unauthenticated``), whom nothing but the public health and
version endpoints (``system:public-info-viewer``) and what stored RBAC grants is allowed: 403
``Forbidden`` with kube's message, e.g. ``namespaces is forbidden: User "system:anonymous" cannot
list resource "namespaces" in API group "" at the cluster scope``, or ``forbidden: User
"system:anonymous" cannot get path "/api"`` for a non-resource path.
Authenticated users may do anything: the devcluster does not enforce RBAC on their requests.
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

from devcluster.apiserver.auth.rbac import RbacLister, rbac_decision
from devcluster.apiserver.errors import StatusError, forbidden
from devcluster.apiserver.options import ADMIN_USER, ServerOptions

__all__ = [
    "ANONYMOUS_USER",
    "PUBLIC_PATHS",
    "authenticate",
    "authorize_anonymous",
    "forbidden_request",
    "request_attributes",
    "review_access",
]

PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version", "/version/"})
ANONYMOUS_USER: dict[str, Any] = {"username": "system:anonymous", "groups": ["system:unauthenticated"]}
_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
#: ``/namespaces/{name}/{these}`` are subresources of the namespace, not namespaced resources
_NAMESPACE_SUBRESOURCES = frozenset({"status", "finalize"})


def authenticate(headers: dict[bytes, bytes], options: ServerOptions) -> dict[str, Any] | None:
    """The user of the request: the token's, :data:`ANONYMOUS_USER` without credentials (no
    ``Authorization: Bearer <token>``, or an empty token), None for an unknown token (401)."""
    raw = headers.get(b"authorization", b"")
    scheme, _, rest = raw.partition(b" ")
    if scheme.lower() != b"bearer":
        return ANONYMOUS_USER
    token = rest.decode("latin-1").strip()
    if not token:
        return ANONYMOUS_USER
    if hmac.compare_digest(token.encode(), options.token.encode()):
        return ADMIN_USER
    return options.extra_tokens.get(token)


def request_attributes(method: str, path: str, params: dict[str, str]) -> dict[str, Any]:
    """The authorizer's view of a request (kube's ``RequestInfoFactory``), as the ``spec`` of a
    SubjectAccessReview without user: ``resourceAttributes`` for ``/api/v1/...`` and
    ``/apis/<group>/<version>/...`` with a resource, ``nonResourceAttributes`` for anything else."""
    parts = [p for p in path.split("/") if p]
    if parts[:1] == ["api"] and len(parts) >= 3:
        group, version, rest = "", parts[1], parts[2:]
    elif parts[:1] == ["apis"] and len(parts) >= 4:
        group, version, rest = parts[1], parts[2], parts[3:]
    else:
        return {"nonResourceAttributes": {"path": path, "verb": method.lower()}}
    verb = _VERBS.get(method, "get")
    if rest[0] == "watch":
        verb, rest = "watch", rest[1:]
    namespace = ""
    if len(rest) >= 2 and rest[0] == "namespaces":
        namespace = rest[1]
        if len(rest) > 2 and rest[2] not in _NAMESPACE_SUBRESOURCES:
            rest = rest[2:]
    resource = rest[0] if rest else ""
    name = rest[1] if len(rest) > 1 else ""
    subresource = rest[2] if len(rest) > 2 else ""
    if not name:
        if verb == "get":
            verb = "watch" if params.get("watch") in {"true", "1"} else "list"
        elif verb == "delete":
            verb = "deletecollection"
    attributes = {
        "verb": verb,
        "group": group,
        "version": version,
        "resource": resource,
        "subresource": subresource,
        "name": name,
        "namespace": namespace,
    }
    return {
        "resourceAttributes": {key: value for key, value in attributes.items() if value or key == "group"}
    }


def forbidden_request(attributes: dict[str, Any], user: str) -> StatusError:
    """kube's authorization filter answer: ``forbiddenMessage`` inside ``NewForbidden``."""
    resource = attributes.get("resourceAttributes")
    if resource is None:
        non_resource = attributes["nonResourceAttributes"]
        why = f'User "{user}" cannot {non_resource["verb"]} path "{non_resource["path"]}"'
        return StatusError(403, "Forbidden", f"forbidden: {why}", {})
    shown = resource.get("resource", "")
    if resource.get("subresource"):
        shown = f"{shown}/{resource['subresource']}"
    scope = (
        f'in the namespace "{resource["namespace"]}"' if resource.get("namespace") else "at the cluster scope"
    )
    why = f'User "{user}" cannot {resource["verb"]} resource "{shown}" in API group "{resource["group"]}" {scope}'
    return forbidden(
        group=resource["group"], plural=resource.get("resource", ""), name=resource.get("name", ""), why=why
    )


def authorize_anonymous(
    attributes: dict[str, Any], options: ServerOptions, rbac: RbacLister | None = None
) -> None:
    """Raise kube's 403 unless the static policy or stored RBAC allows ``system:anonymous`` this."""
    spec = {**attributes, "user": ANONYMOUS_USER["username"], "groups": ANONYMOUS_USER["groups"]}
    if not review_access(spec, options, rbac).get("allowed"):
        raise forbidden_request(attributes, ANONYMOUS_USER["username"])


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
