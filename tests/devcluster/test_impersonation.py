"""Impersonation headers (conformance: devcluster and real kube-apiserver 1.36).

The suite acts "as another user" through ``Impersonate-User``/``Impersonate-Group`` (the admin may;
see ``test_webhook_match_conditions.py`` for the identity admission then sees). Everyone else needs
RBAC for it: kube 1.36 (constrained impersonation) refuses a caller without any impersonation right
with the ``impersonate-on:<mode>:<verb>`` text of the request itself, and one with the legacy
``impersonate`` verb on some identity parts but not all with the first part refused. The
non-admin caller is a ServiceAccount: a TokenRequest token on a real server, a token the
devcluster is given for that user (it has no TokenRequest API).
"""

from __future__ import annotations

import secrets
import ssl
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from tests.devcluster.conftest import KubeTarget
from tests.devcluster.helpers import eventually

RBAC = "/apis/rbac.authorization.k8s.io/v1"


def _forbidden(message: str, details: dict[str, Any]) -> dict[str, Any]:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": "Forbidden",
        "details": details,
        "code": 403,
    }


def _client(kube: KubeTarget, token: str | None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.Client(
        base_url=kube.url,
        verify=ssl.create_default_context(cafile=str(kube.ca_file)),
        headers=headers,
        timeout=30,
    )


@pytest.fixture
def service_account(
    kube: KubeTarget, namespace: str, request: pytest.FixtureRequest
) -> Iterator[tuple[str, httpx.Client]]:
    """A ServiceAccount of ``namespace`` without any RBAC: its user name and a client acting as it."""
    name = f"caller-{secrets.token_hex(3)}"
    created = kube.client.post(
        f"/api/v1/namespaces/{namespace}/serviceaccounts", json={"metadata": {"name": name}}
    )
    assert created.status_code == 201, created.text
    username = f"system:serviceaccount:{namespace}:{name}"
    if kube.is_devcluster:
        token = secrets.token_urlsafe(16)
        request.getfixturevalue("devcluster").server_options.extra_tokens[token] = {
            "username": username,
            "uid": created.json()["metadata"]["uid"],
            "groups": [
                "system:serviceaccounts",
                f"system:serviceaccounts:{namespace}",
                "system:authenticated",
            ],
        }
    else:
        answer = kube.client.post(
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
            json={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}},
        )
        assert answer.status_code == 201, answer.text
        token = answer.json()["status"]["token"]
    with _client(kube, token) as client:
        yield username, client


@pytest.fixture
def cluster_rbac(kube: KubeTarget) -> Iterator[Callable[[str, list[dict[str, Any]]], None]]:
    """grant(subject user, rules): a ClusterRole and its ClusterRoleBinding, deleted afterwards."""
    names: list[str] = []

    def grant(user: str, rules: list[dict[str, Any]]) -> None:
        name = f"conf-imp-{secrets.token_hex(4)}"
        role = kube.client.post(f"{RBAC}/clusterroles", json={"metadata": {"name": name}, "rules": rules})
        assert role.status_code == 201, role.text
        names.append(name)
        binding = {
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": user}],
        }
        bound = kube.client.post(f"{RBAC}/clusterrolebindings", json=binding)
        assert bound.status_code == 201, bound.text

    yield grant
    for name in names:
        kube.client.delete(f"{RBAC}/clusterrolebindings/{name}")
        kube.client.delete(f"{RBAC}/clusterroles/{name}")


def test_an_anonymous_caller_may_not_impersonate(kube: KubeTarget) -> None:
    with _client(kube, None) as anonymous:
        response = anonymous.get(
            "/api/v1/namespaces/default/configmaps", headers={"Impersonate-User": "someone"}
        )
    assert response.status_code == 403, response.text
    assert response.json() == _forbidden(
        'configmaps is forbidden: User "system:anonymous" cannot impersonate-on:user-info:list'
        ' resource "configmaps" in API group "" in the namespace "default"',
        {"kind": "configmaps"},
    )


def test_the_admin_may_impersonate(kube: KubeTarget) -> None:
    response = kube.client.get(
        "/api/v1/namespaces/default/configmaps",
        headers={"Impersonate-User": "someone", "Impersonate-Group": "system:masters"},
    )
    assert response.status_code == 200, response.text


def test_a_caller_without_rbac_is_refused_with_the_constrained_mode_of_the_wanted_user(
    kube: KubeTarget, namespace: str, service_account: tuple[str, httpx.Client]
) -> None:
    username, client = service_account
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    as_user = client.get(path, headers={"Impersonate-User": "someone", "Impersonate-Group": "g1"})
    assert as_user.status_code == 403, as_user.text
    assert as_user.json() == _forbidden(
        f'configmaps is forbidden: User "{username}" cannot impersonate-on:user-info:list resource'
        f' "configmaps" in API group "" in the namespace "{namespace}"',
        {"kind": "configmaps"},
    )
    as_account = client.post(
        path,
        headers={"Impersonate-User": f"system:serviceaccount:{namespace}:other"},
        json={"metadata": {"name": "x"}},
    )
    assert as_account.status_code == 403, as_account.text
    assert as_account.json()["message"] == (
        f'configmaps is forbidden: User "{username}" cannot impersonate-on:serviceaccount:create resource'
        f' "configmaps" in API group "" in the namespace "{namespace}"'
    )
    on_public_path = client.get("/version", headers={"Impersonate-User": "someone"})
    assert on_public_path.status_code == 403, on_public_path.text
    assert on_public_path.json()["message"] == (
        f'forbidden: User "{username}" cannot impersonate-on:user-info:get path "/version"'
    )
    as_node = client.get("/apis", headers={"Impersonate-User": "system:node:n1"})
    assert as_node.status_code == 403, as_node.text
    assert as_node.json() == _forbidden(
        f'forbidden: User "{username}" cannot impersonate-on:arbitrary-node:get path "/apis"', {}
    )


def test_groups_without_a_user_are_a_bad_request(
    kube: KubeTarget, service_account: tuple[str, httpx.Client]
) -> None:
    _, client = service_account
    response = client.get("/api/v1/namespaces/default/configmaps", headers={"Impersonate-Group": "g1"})
    assert response.status_code == 400, response.text
    assert response.json()["message"] == (
        'requested &user.DefaultInfo{Name:"", UID:"", Groups:[]string{"g1"}, '
        "Extra:map[string][]string(nil)} without impersonating a user name"
    )


def test_legacy_rbac_is_checked_for_each_identity_part(
    kube: KubeTarget,
    namespace: str,
    service_account: tuple[str, httpx.Client],
    cluster_rbac: Callable[[str, list[dict[str, Any]]], None],
) -> None:
    username, client = service_account
    cluster_rbac("someone", [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}])
    cluster_rbac(username, [{"apiGroups": [""], "resources": ["users"], "verbs": ["impersonate"]}])
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    # RBAC reaches kube-apiserver's authorizer shortly after the write: poll
    as_user = eventually(lambda: _ok(client.get(path, headers={"Impersonate-User": "someone"})))
    assert as_user.status_code == 200, as_user.text
    with_uid = client.get(path, headers={"Impersonate-User": "someone", "Impersonate-Uid": "u1"})
    assert with_uid.status_code == 403, with_uid.text
    assert with_uid.json()["message"] == (
        f'uids.authentication.k8s.io "u1" is forbidden: User "{username}" cannot impersonate resource'
        ' "uids" in API group "authentication.k8s.io" at the cluster scope'
    )
    with_extra = client.get(path, headers={"Impersonate-User": "someone", "Impersonate-Extra-Scopes": "a"})
    assert with_extra.status_code == 403, with_extra.text
    assert with_extra.json()["message"] == (
        f'userextras.authentication.k8s.io "a" is forbidden: User "{username}" cannot impersonate resource'
        ' "userextras/scopes" in API group "authentication.k8s.io" at the cluster scope'
    )
    with_group = {"Impersonate-User": "someone", "Impersonate-Group": "g1"}
    refused = client.get(path, headers=with_group)
    assert refused.status_code == 403, refused.text
    assert refused.json() == _forbidden(
        f'groups "g1" is forbidden: User "{username}" cannot impersonate resource "groups" in API group ""'
        " at the cluster scope",
        {"name": "g1", "kind": "groups"},
    )
    cluster_rbac(username, [{"apiGroups": [""], "resources": ["groups"], "verbs": ["impersonate"]}])
    eventually(lambda: _ok(client.get(path, headers=with_group)))


def _ok(response: httpx.Response) -> httpx.Response | None:
    return response if response.status_code == 200 else None


def test_impersonating_a_service_account_needs_rights_on_it(
    kube: KubeTarget,
    namespace: str,
    service_account: tuple[str, httpx.Client],
    cluster_rbac: Callable[[str, list[dict[str, Any]]], None],
) -> None:
    username, client = service_account
    wanted = f"system:serviceaccount:{namespace}:other"
    cluster_rbac(wanted, [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"]}])
    cluster_rbac(username, [{"apiGroups": [""], "resources": ["groups"], "verbs": ["impersonate"]}])
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    headers = {"Impersonate-User": wanted, "Impersonate-Group": "g1"}
    expected = _forbidden(
        f'serviceaccounts "other" is forbidden: User "{username}" cannot impersonate resource'
        f' "serviceaccounts" in API group "" in the namespace "{namespace}"',
        {"name": "other", "kind": "serviceaccounts"},
    )
    eventually(lambda: client.get(path, headers=headers).json() == expected)
    cluster_rbac(username, [{"apiGroups": [""], "resources": ["serviceaccounts"], "verbs": ["impersonate"]}])
    eventually(lambda: _ok(client.get(path, headers=headers)))
