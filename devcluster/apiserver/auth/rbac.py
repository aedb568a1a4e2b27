"""RBAC evaluation for SubjectAccessReviews: Roles, ClusterRoles and their bindings, as kube's authorizer.

The devcluster does not authorize its own requests (every authenticated user may do anything), but
code under test *asks* the API server whether a user may do something (the AppWrapper webhook's
SubjectAccessReview per wrapped resource). Those answers come from the RBAC objects stored in the
cluster, evaluated as ``plugin/pkg/auth/authorizer/rbac`` does:

* subjects: ``User`` by name, ``Group`` by membership, ``ServiceAccount`` as the user
  ``system:serviceaccount:<namespace>:<name>`` (the namespace defaults to the binding's);
* ClusterRoleBindings grant their ClusterRole everywhere; RoleBindings grant their Role or
  ClusterRole in their own namespace only;
* a rule matches when its verbs, apiGroups, resources (``*``, ``resource/subresource``,
  ``*/subresource``) and resourceNames (empty: any) do, or for a non-resource request its verbs
  and nonResourceURLs (exact, or a prefix ending in ``*``);
* the first match allows, with kube's reason: ``RBAC: allowed by ClusterRoleBinding "b" of
  ClusterRole "r" to User "alice"`` / ``RBAC: allowed by RoleBinding "b/ns" of Role "r" to Group "g"``;
  no match is "no opinion": ``allowed: false`` without a reason.

Not emulated: ClusterRole aggregation (``aggregationRule``), escalation checks when RBAC objects
are written, and the bootstrap roles (``cluster-admin``, ``system:*``), which are not created.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["RBAC_GROUP", "RbacLister", "rbac_decision"]

RBAC_GROUP = "rbac.authorization.k8s.io"
#: (plural, namespace or None for all) -> stored objects
RbacLister = Callable[[str, str | None], list[dict[str, Any]]]


def _strings(value: Any) -> list[str]:
    return [str(item) for item in value] if isinstance(value, list) else []


def _has(values: list[str], wanted: str) -> bool:
    return "*" in values or wanted in values


def _resource_matches(rule: Mapping[str, Any], resource: str, subresource: str) -> bool:
    combined = f"{resource}/{subresource}" if subresource else resource
    for item in _strings(rule.get("resources")):
        if item in ("*", combined):
            return True
        if subresource and item == f"*/{subresource}":
            return True
    return False


def _url_matches(rule: Mapping[str, Any], path: str) -> bool:
    for item in _strings(rule.get("nonResourceURLs")):
        if item in ("*", path) or (item.endswith("*") and path.startswith(item[:-1])):
            return True
    return False


def rule_allows(rule: Mapping[str, Any], attributes: Mapping[str, Any], *, resource_request: bool) -> bool:
    """``RuleAllows``: does one PolicyRule grant the request?"""
    if not _has(_strings(rule.get("verbs")), str(attributes.get("verb") or "")):
        return False
    if not resource_request:
        return _url_matches(rule, str(attributes.get("path") or ""))
    if not _has(_strings(rule.get("apiGroups")), str(attributes.get("group") or "")):
        return False
    if not _resource_matches(
        rule, str(attributes.get("resource") or ""), str(attributes.get("subresource") or "")
    ):
        return False
    names = _strings(rule.get("resourceNames"))
    return not names or str(attributes.get("name") or "") in names


def _describe_subject(subject: Mapping[str, Any], binding_namespace: str) -> str:
    kind, name = str(subject.get("kind", "")), str(subject.get("name", ""))
    if kind == "ServiceAccount":
        return f'{kind} "{name}/{subject.get("namespace") or binding_namespace}"'
    return f'{kind} "{name}"'


def _applies(subject: Mapping[str, Any], *, user: str, groups: list[str], binding_namespace: str) -> bool:
    kind, name = subject.get("kind"), subject.get("name")
    if kind == "User":
        return name == user
    if kind == "Group":
        return name in groups
    if kind == "ServiceAccount":
        namespace = subject.get("namespace") or binding_namespace
        return user == f"system:serviceaccount:{namespace}:{name}"
    return False


def _role_rules(list_objects: RbacLister, ref: Mapping[str, Any], namespace: str) -> list[dict[str, Any]]:
    kind, name = ref.get("kind"), ref.get("name")
    if kind == "ClusterRole":
        candidates = list_objects("clusterroles", None)
    elif kind == "Role":
        candidates = list_objects("roles", namespace)
    else:
        return []
    for role in candidates:
        if (role.get("metadata") or {}).get("name") == name:
            return [rule for rule in role.get("rules") or [] if isinstance(rule, dict)]
    return []


def rbac_decision(spec: Mapping[str, Any], list_objects: RbacLister) -> dict[str, Any]:
    """The SubjectAccessReview ``status`` RBAC gives for ``spec``."""
    user = str(spec.get("user") or "")
    groups = _strings(spec.get("groups"))
    resource = spec.get("resourceAttributes")
    resource_request = isinstance(resource, dict)
    attributes: Mapping[str, Any] = (
        resource if isinstance(resource, dict) else spec.get("nonResourceAttributes") or {}
    )
    namespace = str(attributes.get("namespace") or "") if resource_request else ""
    sources: list[tuple[str, dict[str, Any], str]] = [
        ("ClusterRoleBinding", binding, "") for binding in list_objects("clusterrolebindings", None)
    ]
    if namespace:
        sources += [
            ("RoleBinding", binding, namespace) for binding in list_objects("rolebindings", namespace)
        ]
    for kind, binding, binding_namespace in sources:
        subjects = [s for s in binding.get("subjects") or [] if isinstance(s, dict)]
        subject = next(
            (
                s
                for s in subjects
                if _applies(s, user=user, groups=groups, binding_namespace=binding_namespace)
            ),
            None,
        )
        if subject is None:
            continue
        ref = binding.get("roleRef") or {}
        for rule in _role_rules(list_objects, ref, binding_namespace):
            if rule_allows(rule, attributes, resource_request=resource_request):
                name = str((binding.get("metadata") or {}).get("name", ""))
                shown = f"{name}/{binding_namespace}" if kind == "RoleBinding" else name
                source = (
                    f'{kind} "{shown}" of {ref.get("kind")} "{ref.get("name")}" to '
                    f"{_describe_subject(subject, binding_namespace)}"
                )
                return {"allowed": True, "reason": f"RBAC: allowed by {source}"}
    return {"allowed": False}
