"""User impersonation (``Impersonate-User``/``-Group``/``-Uid``/``-Extra-<key>`` headers), authorized.

kube-apiserver lets a caller act as another user only when the authorizer allows it; admission then
sees the impersonated user (``request.userInfo`` of webhooks and of their ``matchConditions``), which
is how the conformance suite makes requests "as someone else" on both servers.

Authorization is kube 1.36's ``WithConstrainedImpersonation`` filter (KEP-5284), checked against a
real 1.36.2 server. The modes are tried in order and the request goes through with the first that
allows everything; otherwise the answer is the *first* refusal met (403, kube's forbidden text). As
kube does, the mode that last succeeded for the same caller (user name) is tried first, so after a
legacy success its refusals are the ones reported; the other modes follow in this order:

* a constrained mode -- ``arbitrary-node`` (``system:node:<name>``, username only), ``serviceaccount``
  (``system:serviceaccount:<ns>:<name>``, username only) or ``user-info`` (any other user name, with
  any groups/uid/extras) -- first needs ``impersonate-on:<mode>:<verb>`` on the request itself
  (``configmaps is forbidden: User "X" cannot impersonate-on:user-info:list resource "configmaps" in
  API group "" in the namespace "default"``), then ``impersonate:<mode>`` on each identity part in
  API group ``authentication.k8s.io``;
* legacy: verb ``impersonate`` on ``users``/``serviceaccounts`` and ``groups`` in the core group,
  ``uids`` and ``userextras/<key>`` in ``authentication.k8s.io`` (``groups "g1" is forbidden: User
  "X" cannot impersonate resource "groups" in API group "" at the cluster scope``).

Identity parts are checked username, uid, groups, extras. So a caller with no impersonation right at
all gets the ``impersonate-on:`` text, and one allowed (legacy) to impersonate the user but not a
group gets the ``impersonate-on:`` text until a legacy impersonation of theirs succeeded, then the
group's. Members of ``system:masters`` may do anything (kube's privileged-group authorizer). Not
reproduced: kube's 10 s caches of successful checks (a revoked right may still work that long
there), the ``associated-node`` mode (a pod's ServiceAccount acting as its node), and the
constrained modes' extra refusals (``system:masters`` or empty groups, malformed extra keys).

Groups, uid or extras without ``Impersonate-User`` are a 400 naming them as Go prints them. The
impersonated user's groups are the ``Impersonate-Group`` values (a ServiceAccount user given none
gets ``system:serviceaccounts`` and ``system:serviceaccounts:<ns>``; a node in a constrained mode
gets ``system:nodes``), then ``system:authenticated`` (``system:unauthenticated`` for
``system:anonymous``); ``uid`` only when given; ``extra`` keys are the header suffixes,
lower-cased and percent-decoded.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from devcluster.apiserver.auth.authz import forbidden_request
from devcluster.apiserver.errors import StatusError, bad_request

__all__ = ["impersonated_user"]

_SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
_NODE_PREFIX = "system:node:"
_EXTRA_PREFIX = "impersonate-extra-"
_AUTHENTICATION_GROUP = "authentication.k8s.io"

#: may(spec) -- a SubjectAccessReview ``spec`` (caller's user and groups included) is allowed
AccessCheck = Callable[[dict[str, Any]], bool]


def _go_strings(values: list[str]) -> str:
    return "[]string{" + ", ".join(json.dumps(v) for v in values) + "}"


def _unnamed_request(groups: list[str], uid: str, extra: dict[str, list[str]]) -> StatusError:
    """``processImpersonationHeaders``: the wanted user printed with Go's ``%#v``."""
    shown_groups = _go_strings(groups) if groups else "[]string(nil)"
    if extra:
        entries = ", ".join(f"{json.dumps(k)}:{_go_strings(v)}" for k, v in sorted(extra.items()))
        shown_extra = "map[string][]string{" + entries + "}"
    else:
        shown_extra = "map[string][]string(nil)"
    return bad_request(
        f'requested &user.DefaultInfo{{Name:"", UID:{json.dumps(uid)}, Groups:{shown_groups}, '
        f"Extra:{shown_extra}}} without impersonating a user name"
    )


def _service_account(name: str) -> tuple[str, str] | None:
    if not name.startswith(_SERVICE_ACCOUNT_PREFIX):
        return None
    namespace, _, account = name[len(_SERVICE_ACCOUNT_PREFIX) :].partition(":")
    return (namespace, account) if namespace and account and ":" not in account else None


def _node(name: str) -> str | None:
    node = name[len(_NODE_PREFIX) :] if name.startswith(_NODE_PREFIX) else ""
    return node or None


def _identity_checks(
    *, verb: str, constrained: bool, name: str, uid: str, groups: list[str], extra: dict[str, list[str]]
) -> list[dict[str, str]]:
    """The resource attributes one mode authorizes, in kube's order: username, uid, groups, extras."""
    core = _AUTHENTICATION_GROUP if constrained else ""
    user_check = {"verb": verb, "group": core, "resource": "users", "name": name}
    node, account = _node(name), _service_account(name)
    if constrained and node is not None:
        user_check = {**user_check, "resource": "nodes", "name": node}
    if account is not None:
        user_check = {
            **user_check,
            "resource": "serviceaccounts",
            "namespace": account[0],
            "name": account[1],
        }
    checks = [user_check]
    if uid:
        checks.append({"verb": verb, "group": _AUTHENTICATION_GROUP, "resource": "uids", "name": uid})
    checks += [{"verb": verb, "group": core, "resource": "groups", "name": group} for group in groups]
    for key, values in extra.items():
        checks += [
            {
                "verb": verb,
                "group": _AUTHENTICATION_GROUP,
                "resource": "userextras",
                "subresource": key,
                "name": value,
            }
            for value in values
        ]
    return checks


#: kube's modes in the order it tries them (``associated-node`` is not reproduced)
_MODES = ("arbitrary-node", "serviceaccount", "user-info", "legacy")
_REMEMBERED_CALLERS = 10_000


def _applies(mode: str, name: str, *, only_username: bool) -> bool:
    """A constrained mode's filter: whether it may impersonate ``name`` at all (legacy always may)."""
    if mode == "arbitrary-node":
        return only_username and _node(name) is not None
    if mode == "serviceaccount":
        return only_username and _service_account(name) is not None
    if mode == "user-info":
        return _node(name) is None and _service_account(name) is None
    return True


def _refusal(
    *,
    mode: str,
    name: str,
    uid: str,
    groups: list[str],
    extra: dict[str, list[str]],
    request: dict[str, Any],
    caller: dict[str, Any],
    may: AccessCheck,
) -> StatusError | None:
    """Why ``mode`` (``legacy`` or a constrained one) does not let ``caller`` make ``request`` as the wanted user."""
    who = {"user": caller.get("username", ""), "groups": list(caller.get("groups") or [])}
    constrained = mode != "legacy"
    if constrained:
        kind = "resourceAttributes" if "resourceAttributes" in request else "nonResourceAttributes"
        action = {kind: {**request[kind], "verb": f"impersonate-on:{mode}:{request[kind]['verb']}"}}
        if not may({**action, **who}):
            return forbidden_request(action, who["user"])
    verb = f"impersonate:{mode}" if constrained else "impersonate"
    for check in _identity_checks(
        verb=verb, constrained=constrained, name=name, uid=uid, groups=groups, extra=extra
    ):
        attributes = {"resourceAttributes": check}
        if not may({**attributes, **who}):
            return forbidden_request(attributes, who["user"])
    return None


def impersonated_user(
    raw_headers: list[tuple[bytes, bytes]],
    user: dict[str, Any],
    *,
    attributes: Callable[[], dict[str, Any]],
    may: AccessCheck,
    last_mode: dict[str, str],
) -> dict[str, Any]:
    """The user the request acts as: ``user`` itself without impersonation headers. ``attributes``
    gives the request's authorizer view, ``may`` answers access reviews, ``last_mode`` (the server's,
    updated here) remembers each caller's last successful mode (module docstring)."""
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
        if groups or uid or extra:
            raise _unnamed_request(groups, uid, extra)
        return user
    only_username = not (groups or uid or extra)
    caller = str(user.get("username", ""))
    remembered = last_mode.get(caller)
    order = ([remembered] if remembered else []) + [m for m in _MODES if m != remembered]
    request = attributes()
    first: StatusError | None = None
    for mode in order:
        if not _applies(mode, name, only_username=only_username):
            continue
        refusal = _refusal(
            mode=mode, name=name, uid=uid, groups=groups, extra=extra, request=request, caller=user, may=may
        )
        if refusal is None:
            if len(last_mode) >= _REMEMBERED_CALLERS and caller not in last_mode:
                last_mode.clear()  # kube keeps an LRU of this size; forgetting only reorders the modes
            last_mode[caller] = mode
            return _acting_user(
                name=name, uid=uid, groups=groups, extra=extra, node_mode=mode == "arbitrary-node"
            )
        first = first or refusal
    assert first is not None  # legacy always applies
    raise first


def _acting_user(
    *, name: str, uid: str, groups: list[str], extra: dict[str, list[str]], node_mode: bool
) -> dict[str, Any]:
    groups = list(groups)
    account = _service_account(name)
    if node_mode:
        groups = ["system:nodes"]
    elif not groups and account is not None:
        groups = ["system:serviceaccounts", f"system:serviceaccounts:{account[0]}"]
    if name == "system:anonymous":
        if "system:unauthenticated" not in groups:
            groups.append("system:unauthenticated")
    elif "system:unauthenticated" not in groups and "system:authenticated" not in groups:
        groups.append("system:authenticated")
    impersonated: dict[str, Any] = {"username": name}
    if uid:
        impersonated["uid"] = uid
    impersonated["groups"] = groups
    if extra:
        impersonated["extra"] = extra
    return impersonated
