"""Impersonation headers (conformance: devcluster and real kube-apiserver).

The suite acts "as another user" through ``Impersonate-User``/``Impersonate-Group`` (the admin may;
see ``test_webhook_match_conditions.py`` for the identity admission then sees). Who may not: an
anonymous caller, refused with kube 1.36's constrained-impersonation text.
"""

from __future__ import annotations

import ssl

import httpx

from tests.devcluster.conftest import KubeTarget


def test_an_anonymous_caller_may_not_impersonate(kube: KubeTarget) -> None:
    with httpx.Client(
        base_url=kube.url, verify=ssl.create_default_context(cafile=str(kube.ca_file)), timeout=30
    ) as anonymous:
        response = anonymous.get(
            "/api/v1/namespaces/default/configmaps", headers={"Impersonate-User": "someone"}
        )
    assert response.status_code == 403, response.text
    assert response.json() == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'configmaps is forbidden: User "system:anonymous" cannot impersonate-on:user-info:list'
        ' resource "configmaps" in API group "" in the namespace "default"',
        "reason": "Forbidden",
        "details": {"kind": "configmaps"},
        "code": 403,
    }


def test_the_admin_may_impersonate(kube: KubeTarget) -> None:
    response = kube.client.get(
        "/api/v1/namespaces/default/configmaps",
        headers={"Impersonate-User": "someone", "Impersonate-Group": "system:masters"},
    )
    assert response.status_code == 200, response.text
