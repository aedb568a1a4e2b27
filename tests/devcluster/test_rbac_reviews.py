"""Conformance: SubjectAccessReviews answered from Roles, ClusterRoles and their bindings.

Runs against a real cluster too (``KUEUE_BRIDGE_TEST_KUBECONFIG``), where kube's RBAC authorizer
gives the same answers and reasons; cluster-scoped objects get unique names and are removed.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.devcluster.conftest import KubeTarget

RBAC = "/apis/rbac.authorization.k8s.io/v1"
SAR = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


@pytest.fixture
def suffix(kube: KubeTarget) -> Iterator[str]:
    value = secrets.token_hex(4)
    yield value
    for plural in ("clusterrolebindings", "clusterroles"):
        kube.client.delete(f"{RBAC}/{plural}/rbac-test-{value}")


def review(
    kube: KubeTarget,
    *,
    user: str,
    verb: str,
    resource: str,
    group: str = "",
    namespace: str = "",
    groups: list[str] | None = None,
    subresource: str = "",
    name: str = "",
) -> dict[str, Any]:
    attributes = {
        "verb": verb,
        "group": group,
        "resource": resource,
        "namespace": namespace,
        "subresource": subresource,
        "name": name,
    }
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SubjectAccessReview",
        "spec": {
            "user": user,
            "groups": groups or [],
            "resourceAttributes": {k: v for k, v in attributes.items() if v},
        },
    }
    response = kube.client.post(SAR, json=body)
    assert response.status_code == 201, response.text
    status: dict[str, Any] = response.json()["status"]
    return status


def granted_once_seen(kube: KubeTarget, **request: Any) -> dict[str, Any]:
    """``review`` polled until allowed: kube-apiserver's RBAC authorizer reads bindings from an
    informer, so a binding just created is granted a moment later (longer on a loaded machine)."""
    deadline = time.monotonic() + 30.0
    while not (status := review(kube, **request)).get("allowed"):
        assert time.monotonic() < deadline, f"never granted: {request} -> {status}"
        time.sleep(0.05)
    return status


def create(kube: KubeTarget, path: str, body: dict[str, Any]) -> None:
    response = kube.client.post(path, json=body)
    assert response.status_code == 201, response.text


def test_a_role_binding_grants_its_role_in_its_namespace_only(kube: KubeTarget, namespace: str) -> None:
    user = f"alice-{secrets.token_hex(3)}"
    create(
        kube,
        f"{RBAC}/namespaces/{namespace}/roles",
        {
            "metadata": {"name": "job-maker"},
            "rules": [{"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create", "get"]}],
        },
    )
    create(
        kube,
        f"{RBAC}/namespaces/{namespace}/rolebindings",
        {
            "metadata": {"name": "alice-jobs"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "job-maker"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
        },
    )
    allowed = granted_once_seen(
        kube, user=user, verb="create", group="batch", resource="jobs", namespace=namespace
    )
    assert allowed == {
        "allowed": True,
        "reason": f'RBAC: allowed by RoleBinding "alice-jobs/{namespace}" of Role "job-maker" to User "{user}"',
    }
    assert (
        review(kube, user=user, verb="delete", group="batch", resource="jobs", namespace=namespace)["allowed"]
        is False
    )
    assert (
        review(kube, user=user, verb="create", resource="configmaps", namespace=namespace)["allowed"] is False
    )
    assert (
        review(kube, user=user, verb="create", group="batch", resource="jobs", namespace="default")["allowed"]
        is False
    )
    assert (
        review(kube, user="bob", verb="create", group="batch", resource="jobs", namespace=namespace)[
            "allowed"
        ]
        is False
    )


def test_a_cluster_role_binding_to_a_group_grants_everywhere(
    kube: KubeTarget, namespace: str, suffix: str
) -> None:
    name = f"rbac-test-{suffix}"
    group = f"team-{suffix}"
    create(
        kube,
        f"{RBAC}/clusterroles",
        {
            "metadata": {"name": name},
            "rules": [
                {
                    "apiGroups": [""],
                    "resources": ["configmaps"],
                    "verbs": ["*"],
                    "resourceNames": ["settings"],
                },
                {"apiGroups": ["*"], "resources": ["*/status"], "verbs": ["get"]},
            ],
        },
    )
    create(
        kube,
        f"{RBAC}/clusterrolebindings",
        {
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}],
        },
    )
    granted = granted_once_seen(
        kube,
        user="carol",
        groups=[group],
        verb="update",
        resource="configmaps",
        namespace=namespace,
        name="settings",
    )
    assert granted == {
        "allowed": True,
        "reason": f'RBAC: allowed by ClusterRoleBinding "{name}" of ClusterRole "{name}" to Group "{group}"',
    }
    assert (
        review(
            kube,
            user="carol",
            groups=[group],
            verb="update",
            resource="configmaps",
            namespace=namespace,
            name="other",
        )["allowed"]
        is False
    )
    status = review(
        kube,
        user="carol",
        groups=[group],
        verb="get",
        group="batch",
        resource="jobs",
        subresource="status",
        namespace=namespace,
    )
    assert status["allowed"] is True
    assert (
        review(
            kube,
            user="carol",
            groups=[group],
            verb="get",
            group="batch",
            resource="jobs",
            namespace=namespace,
        )["allowed"]
        is False
    )


def test_a_service_account_subject_is_its_system_user(kube: KubeTarget, namespace: str) -> None:
    create(
        kube,
        f"{RBAC}/namespaces/{namespace}/roles",
        {
            "metadata": {"name": "reader"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}],
        },
    )
    create(
        kube,
        f"{RBAC}/namespaces/{namespace}/rolebindings",
        {
            "metadata": {"name": "robot"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "robot"}],
        },
    )
    user = f"system:serviceaccount:{namespace}:robot"
    assert review(kube, user=user, verb="list", resource="pods", namespace=namespace) == {
        "allowed": True,
        "reason": f'RBAC: allowed by RoleBinding "robot/{namespace}" of Role "reader" to ServiceAccount "robot/{namespace}"',
    }
