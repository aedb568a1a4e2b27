"""Do our ServiceAccounts (and Kueue's) have every right kueue-bridge needs? One review per right.

For each identity of :mod:`shared.component_access` the API server is asked, with one
``SubjectAccessReview`` per verb and resource (``spec.user`` the ServiceAccount's username, its
groups, the namespace of a Role's rules, the ``resourceNames`` when the rule has them), whether the
ServiceAccount may do it. The authorizer answers, so aggregation, bindings of other names and
webhook authorizers all count, not just the manifests we rendered.

* a component's ServiceAccount that does not exist is a ``warn`` (kueue-bridge is not deployed yet,
  or under other names) and its rights are not reviewed;
* a missing right is a ``fail``, except the start-up check's reads of Kueue's setup (listing
  Deployments to find Kueue's manager, getting its ConfigMap: a ``warn``, the start-up check then
  says it could not check);
* Kueue's manager (``kueue-controller-manager`` in Kueue's namespace) must be able to read the kinds
  it knows only as ``externalFrameworks``.

:func:`check_own_access` does the same for the caller itself with ``SelfSubjectAccessReview``s (the
components' start-up checks and the worker-identity checks of MultiKueue).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from shared.component_access import (
    KUEUE_NAMESPACE,
    OWN_NAMESPACE,
    AccessRule,
    Identity,
    access_rules,
    service_account_name,
)
from shared.config import Configuration
from shared.kube import KubeClient, KubeError, NotFound
from shared.kube.kinds import SELF_SUBJECT_ACCESS_REVIEW_GVK, SERVICE_ACCOUNT_GVK, SUBJECT_ACCESS_REVIEW_GVK
from shared.preflight.findings import Finding, Verdict

__all__ = [
    "SAR_GVK",
    "SELF_SAR_GVK",
    "SERVICE_ACCOUNT_GVK",
    "Right",
    "check_identity_access",
    "check_own_access",
    "missing_rights",
    "rights_of",
]

SAR_GVK: Final = SUBJECT_ACCESS_REVIEW_GVK
SELF_SAR_GVK: Final = SELF_SUBJECT_ACCESS_REVIEW_GVK
_CONCURRENCY: Final = 8


@dataclass(frozen=True)
class Right:
    """One verb on one resource (``plural`` or ``plural/subresource``), in one namespace (``""``: all)."""

    group: str
    resource: str
    verb: str
    namespace: str = ""
    name: str = ""
    #: a missing right that is only a warning (the start-up check's read of Kueue's ConfigMap)
    optional: bool = False

    def attributes(self) -> dict[str, Any]:
        resource, _, subresource = self.resource.partition("/")
        attributes: dict[str, Any] = {"group": self.group, "resource": resource, "verb": self.verb}
        if subresource:
            attributes["subresource"] = subresource
        if self.namespace:
            attributes["namespace"] = self.namespace
        if self.name:
            attributes["name"] = self.name
        return attributes

    def text(self) -> str:
        resource = f"{self.resource}.{self.group}" if self.group else self.resource
        where = f" in {self.namespace}" if self.namespace else ""
        named = f" {self.name}" if self.name else ""
        return f"{self.verb} {resource}{named}{where}"


def rights_of(rules: Iterable[AccessRule], *, namespace: str, kueue_namespace: str) -> list[Right]:
    found: list[Right] = []
    for rule in rules:
        where = {OWN_NAMESPACE: namespace, KUEUE_NAMESPACE: kueue_namespace}.get(rule.scope, "")
        for resource in rule.resources:
            for verb in rule.verbs:
                for name in rule.resource_names or ("",):
                    found.append(
                        Right(
                            rule.group,
                            resource,
                            verb,
                            namespace=where,
                            name=name,
                            optional=rule.optional,
                        )
                    )
    return found


async def missing_rights(
    client: KubeClient, rights: Sequence[Right], *, user: str | None = None, groups: Sequence[str] = ()
) -> list[Right]:
    """The rights the API server denies to ``user`` (``None``: the caller, by SelfSubjectAccessReview)."""
    limit = asyncio.Semaphore(_CONCURRENCY)

    async def allowed(right: Right) -> bool:
        spec: dict[str, Any] = {"resourceAttributes": right.attributes()}
        gvk = SELF_SAR_GVK
        if user is not None:
            gvk = SAR_GVK
            spec.update(user=user, groups=list(groups))
        async with limit:
            answer = await client.create(gvk, {"apiVersion": gvk.api_version, "kind": gvk.kind, "spec": spec})
        return (answer.get("status") or {}).get("allowed") is True

    answers = await asyncio.gather(*(allowed(right) for right in rights))
    return [right for right, ok in zip(rights, answers, strict=True) if not ok]


def _summary(missing: Sequence[Right], *, limit: int = 6) -> str:
    texts = [right.text() for right in missing]
    shown = "; ".join(texts[:limit])
    return shown + (f"; and {len(texts) - limit} more" if len(texts) > limit else "")


async def check_identity_access(
    client: KubeClient,
    config: Configuration,
    identity: Identity,
    *,
    namespace: str,
    kueue_namespace: str,
    absent_ok: bool = False,
) -> list[Finding]:
    """The ServiceAccount of ``identity`` has every right :func:`access_rules` lists.

    ``absent_ok``: a ServiceAccount that does not exist is no finding at all (``explain``).
    """
    rules = access_rules(config, identity)
    if not rules:
        return []
    account_namespace = kueue_namespace if identity == "kueue" else namespace
    account = service_account_name(identity)
    check = f"rbac {identity} ({account_namespace}/{account})"
    try:
        await client.get(SERVICE_ACCOUNT_GVK, account, namespace=account_namespace)
    except NotFound:
        if absent_ok:
            return []
        if identity == "kueue":
            return [
                Finding(
                    check,
                    Verdict.WARN,
                    "Kueue's manager ServiceAccount is not there: its rights on externalFrameworks kinds "
                    "cannot be checked",
                    "pass --kueue-namespace where Kueue runs",
                )
            ]
        return [
            Finding(
                check,
                Verdict.WARN,
                "ServiceAccount not found: kueue-bridge is not deployed here (or under other names); "
                "its rights are not checked",
                "deploy with kueue-bridge manifests --config FILE | kubectl apply --server-side -f -",
            )
        ]
    except KubeError as exc:
        return [Finding(check, Verdict.WARN, f"cannot read the ServiceAccount ({exc})", "grant get on it")]
    rights = rights_of(rules, namespace=namespace, kueue_namespace=kueue_namespace)
    user = f"system:serviceaccount:{account_namespace}:{account}"
    groups = ["system:serviceaccounts", f"system:serviceaccounts:{account_namespace}", "system:authenticated"]
    try:
        missing = await missing_rights(client, rights, user=user, groups=groups)
    except KubeError as exc:
        return [Finding(check, Verdict.WARN, f"SubjectAccessReviews failed ({exc})", "grant create on them")]
    required = [right for right in missing if not right.optional]
    optional = [right for right in missing if right.optional]
    findings: list[Finding] = []
    fix = (
        "apply the RBAC of kueue-bridge manifests --config FILE"
        if identity != "kueue"
        else "apply the ClusterRole kueue-bridge-kueue-external-frameworks of kueue-bridge manifests"
    )
    if required:
        why = (
            " (Kueue follows a job's owners through its externalFrameworks kinds: kueue #2478)"
            if identity == "kueue"
            else ""
        )
        findings.append(
            Finding(
                check, Verdict.FAIL, f"may not {_summary(required)}{why}", fix, kinds=_kinds(required, config)
            )
        )
    if optional:
        findings.append(
            Finding(
                check,
                Verdict.WARN,
                f"may not {_summary(optional)}: its start-up check for two controllers per kind cannot "
                "read Kueue's Configuration",
                "apply the RBAC of kueue-bridge manifests --config FILE (list deployments.apps in its "
                "ClusterRole; get configmaps in Kueue's namespace: deploy/kueue, the Role ...-kueue-config)",
            )
        )
    if not findings:
        findings.append(Finding(check, Verdict.OK, f"has all {len(rights)} rights it needs"))
    return findings


def _kinds(rights: Sequence[Right], config: Configuration) -> tuple[str, ...]:
    """The managed kinds some of ``rights`` are about (so explain shows the finding for their jobs)."""
    names = []
    for kind in config.managed_kinds():
        if any(
            right.group == kind.gvk.group and right.resource.split("/")[0] == kind.resource
            for right in rights
        ):
            names.append(kind.gvk.kind_arg)
    if len(names) == len(config.managed_kinds()):
        return ()
    return tuple(names)


async def check_own_access(
    client: KubeClient,
    rights: Sequence[Right],
    *,
    check: str,
    fix: str,
    clusters: tuple[str, ...] = (),
    kinds: tuple[str, ...] = (),
    admission_checks: tuple[str, ...] = (),
) -> list[Finding]:
    """The caller has ``rights`` (SelfSubjectAccessReviews)."""

    def finding(verdict: Verdict, message: str) -> Finding:
        return Finding(
            check, verdict, message, fix, clusters=clusters, kinds=kinds, admission_checks=admission_checks
        )

    try:
        missing = await missing_rights(client, rights)
    except KubeError as exc:
        return [finding(Verdict.WARN, f"SelfSubjectAccessReviews failed ({exc})")]
    if missing:
        return [finding(Verdict.FAIL, f"may not {_summary(missing)}")]
    return [finding(Verdict.OK, f"has all {len(rights)} rights it needs")]
