"""The ``authorizer`` variable of admission CEL expressions (kube's ``library.Authz``).

A webhook ``matchConditions`` entry may ask the API server's authorizer about the requesting user,
e.g. ``authorizer.group('').resource('configmaps').namespace('x').check('delete').allowed()`` or
``authorizer.requestResource.check('update').allowed()``. The chain of kube's typed values is
modelled with plain maps tagged by :data:`TAG` (the CEL binding passes maps to and from Python
functions) and receiver-style functions registered on a :class:`cel.Context`:

* ``authorizer``: ``path(p)`` -> path check; ``group(g)`` -> group check; ``serviceAccount(ns, n)``
  -> an authorizer for that ServiceAccount (groups ``system:serviceaccounts[:ns]``,
  ``system:authenticated``); field ``requestResource`` -> a resource check of the request's group,
  resource, subresource, namespace and name;
* group check: ``resource(r)``; resource check: ``subresource(s)``, ``namespace(ns)``, ``name(n)``;
  path and resource checks: ``check(verb)`` -> a decision;
* decision: ``allowed()``, ``reason()``, ``errored()``, ``error()``.

Decisions come from ``authorize``, a SubjectAccessReview answer for a spec (the devcluster's
:func:`~devcluster.apiserver.auth.authz.review_access`: ``system:masters``, the static access
rules, then stored RBAC), so a condition sees what a SubjectAccessReview would say. Differences:
the values are maps, so ``authorizer.user``-style misuse that kube's type checker refuses is not
refused here, and the newer ``fieldSelector``/``labelSelector`` resource-check methods are absent.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Final

import cel

__all__ = ["TAG", "Authorize", "authorizer_binder", "authorizer_context"]

Authorize = Callable[[dict[str, Any]], dict[str, Any]]
"""The ``status`` of a SubjectAccessReview for a ``spec`` (user, groups, resource/non-resource)."""

TAG: Final = "@devcluster.authz"
_SERVICE_ACCOUNT_PREFIX: Final = "system:serviceaccount:"


class _Checks:
    """The receiver-style functions, bound to one request's ``authorize``."""

    def __init__(self, authorize: Authorize) -> None:
        self._authorize = authorize

    @staticmethod
    def _expect(value: Any, *kinds: str) -> dict[str, Any]:
        if not isinstance(value, dict) or value.get(TAG) not in kinds:
            raise TypeError("no such overload")
        return value

    def path(self, authorizer: Any, path: str) -> dict[str, Any]:
        base = self._expect(authorizer, "authorizer")
        return {TAG: "path", "user": base["user"], "path": path}

    def group(self, authorizer: Any, group: str) -> dict[str, Any]:
        base = self._expect(authorizer, "authorizer")
        return {TAG: "group", "user": base["user"], "group": group}

    def service_account(self, authorizer: Any, namespace: str, name: str) -> dict[str, Any]:
        self._expect(authorizer, "authorizer")
        return _authorizer_value(
            {
                "username": f"{_SERVICE_ACCOUNT_PREFIX}{namespace}:{name}",
                "groups": [
                    "system:serviceaccounts",
                    f"system:serviceaccounts:{namespace}",
                    "system:authenticated",
                ],
            },
            request_resource=None,
        )

    def resource(self, group_check: Any, resource: str) -> dict[str, Any]:
        base = self._expect(group_check, "group")
        return {TAG: "resource", "user": base["user"], "group": base["group"], "resource": resource}

    def _refined(self, check: Any, key: str, value: str) -> dict[str, Any]:
        return {**self._expect(check, "resource"), key: value}

    def subresource(self, check: Any, value: str) -> dict[str, Any]:
        return self._refined(check, "subresource", value)

    def namespace(self, check: Any, value: str) -> dict[str, Any]:
        return self._refined(check, "namespace", value)

    def name(self, check: Any, value: str) -> dict[str, Any]:
        return self._refined(check, "name", value)

    def check(self, target: Any, verb: str) -> dict[str, Any]:
        base = self._expect(target, "path", "resource")
        user = base["user"]
        spec: dict[str, Any] = {"user": user.get("username", ""), "groups": list(user.get("groups") or [])}
        if base[TAG] == "path":
            spec["nonResourceAttributes"] = {"path": base["path"], "verb": verb}
        else:
            keys = ("group", "resource", "subresource", "namespace", "name")
            spec["resourceAttributes"] = {"verb": verb, **{key: base.get(key, "") for key in keys}}
        status = self._authorize(spec)
        return {
            TAG: "decision",
            "allowed": bool(status.get("allowed")),
            "reason": str(status.get("reason") or ""),
            "error": str(status.get("evaluationError") or ""),
        }

    def allowed(self, decision: Any) -> bool:
        return bool(self._expect(decision, "decision")["allowed"])

    def reason(self, decision: Any) -> str:
        return str(self._expect(decision, "decision")["reason"])

    def errored(self, decision: Any) -> bool:
        return bool(self._expect(decision, "decision")["error"])

    def error(self, decision: Any) -> str:
        return str(self._expect(decision, "decision")["error"])


def _authorizer_value(user: Mapping[str, Any], *, request_resource: dict[str, Any] | None) -> dict[str, Any]:
    shown_user = {"username": str(user.get("username") or ""), "groups": list(user.get("groups") or [])}
    value: dict[str, Any] = {TAG: "authorizer", "user": shown_user}
    if request_resource is not None:
        value["requestResource"] = {TAG: "resource", "user": shown_user, **request_resource}
    return value


def authorizer_context(
    variables: Mapping[str, Any],
    *,
    user: Mapping[str, Any],
    request_resource: dict[str, str],
    authorize: Authorize,
) -> cel.Context:
    """A context with ``variables`` plus ``authorizer`` (for ``user``) and its functions."""
    checks = _Checks(authorize)
    context = cel.Context()
    for name, value in variables.items():
        context.add_variable(name, value)
    context.add_variable("authorizer", _authorizer_value(user, request_resource=request_resource))
    functions: dict[str, Callable[..., Any]] = {
        "path": checks.path,
        "group": checks.group,
        "serviceAccount": checks.service_account,
        "resource": checks.resource,
        "subresource": checks.subresource,
        "namespace": checks.namespace,
        "name": checks.name,
        "check": checks.check,
        "allowed": checks.allowed,
        "reason": checks.reason,
        "errored": checks.errored,
        "error": checks.error,
    }
    for name, function in functions.items():
        context.add_function(name, function)
    return context


def authorizer_binder(
    *, user: Mapping[str, Any], request_resource: dict[str, str], authorize: Authorize | None
) -> Callable[[Mapping[str, Any], bool], Any]:
    """A ``match_conditions.Binder``: the variables as they are, or a context that adds
    ``authorizer`` when an expression uses it (and there is an ``authorize`` to answer it)."""

    def bind(variables: Mapping[str, Any], with_authorizer: bool) -> Any:
        if not with_authorizer or authorize is None:
            return dict(variables)
        return authorizer_context(
            variables, user=user, request_resource=request_resource, authorize=authorize
        )

    return bind
