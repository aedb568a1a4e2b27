"""User impersonation (``Impersonate-User``/``-Group``/``-Uid``/``-Extra-<key>`` headers).

kube-apiserver lets a user with the ``impersonate`` verb act as another user; admission then sees
the impersonated user (``request.userInfo`` of webhooks and of their ``matchConditions``), which is
how the conformance suite makes requests "as someone else" on both servers. As in kube's
``WithImpersonation`` filter: the groups are the ``Impersonate-Group`` values (a ServiceAccount user
``system:serviceaccount:<ns>:<name>`` given none gets ``system:serviceaccounts`` and
``system:serviceaccounts:<ns>``), then ``system:authenticated`` is added unless the user is
``system:anonymous``; ``uid`` only when ``Impersonate-Uid`` is given; ``extra`` keys are the header
suffixes, lower-cased and percent-decoded.

Authorization: the devcluster lets every authenticated user do anything (:mod:`.authz`), so they
may impersonate; ``system:anonymous`` may not: kube 1.36 (constrained impersonation) answers
``configmaps is forbidden: User "system:anonymous" cannot impersonate-on:user-info:list resource
"configmaps" in API group "" in the namespace "default"``, and so does the devcluster. Headers that name groups, uid or
extras without ``Impersonate-User`` are ignored here (kube refuses them; nothing we test sends them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from devcluster.apiserver.auth.authz import forbidden_request

__all__ = ["impersonated_user"]

_SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
_EXTRA_PREFIX = "impersonate-extra-"


def impersonated_user(
    raw_headers: list[tuple[bytes, bytes]],
    user: dict[str, Any],
    *,
    attributes: Callable[[], dict[str, Any]],
) -> dict[str, Any]:
    """The user the request acts as: ``user`` itself without an ``Impersonate-User`` header.
    ``attributes`` gives the request's authorizer view (only needed to refuse anonymous callers)."""
    name = ""
    groups: list[str] = []
    uid = ""
    extra: dict[str, list[str]] = {}
    for raw_key, raw_value in raw_headers:
        key, value = raw_key.decode("latin-1").lower(), raw_value.decode("latin-1")
        if key == "impersonate-user":
            name = value
        elif key == "impersonate-group":
            groups.append(value)
        elif key == "impersonate-uid":
            uid = value
        elif key.startswith(_EXTRA_PREFIX):
            extra.setdefault(unquote(key[len(_EXTRA_PREFIX) :]), []).append(value)
    if not name:
        return user
    if user.get("username") == "system:anonymous":
        refused = attributes()
        for kind in ("resourceAttributes", "nonResourceAttributes"):
            if kind in refused:  # kube 1.36's constrained impersonation: the verb it was denied
                verb = refused[kind]["verb"]
                refused = {kind: {**refused[kind], "verb": f"impersonate-on:user-info:{verb}"}}
        raise forbidden_request(refused, "system:anonymous")
    if not groups and name.startswith(_SERVICE_ACCOUNT_PREFIX):
        namespace = name[len(_SERVICE_ACCOUNT_PREFIX) :].split(":", 1)[0]
        groups = ["system:serviceaccounts", f"system:serviceaccounts:{namespace}"]
    if name != "system:anonymous" and "system:authenticated" not in groups:
        groups.append("system:authenticated")
    impersonated: dict[str, Any] = {"username": name}
    if uid:
        impersonated["uid"] = uid
    impersonated["groups"] = groups
    if extra:
        impersonated["extra"] = extra
    return impersonated
