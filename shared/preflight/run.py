"""Run the preflight checks: all of them (``kueue-bridge preflight``), or a component's at start-up.

:func:`run_preflight` runs, in this order, against the cluster of ``client``: Kueue installed
(:mod:`.kueue_setup`), for every managed kind Kueue hands it over and does not manage it itself, our
MultiKueue controller name free, every managed kind served (:mod:`.kinds_served`), our webhooks
(:mod:`.webhook_checks`), the rights of every ServiceAccount (:mod:`.access_checks`) and MultiKueue's
workers (:mod:`.multikueue_checks`). A check that cannot run (an API error it did not expect) is
one ``warn`` naming it; the others still run.

:func:`startup_checks` is the cheap subset a component runs before it starts, with its own
identity: Kueue installed, the two-controllers checks for the kinds (or the AdmissionCheck
controller) it acts on, the kinds served, and its own rights (SelfSubjectAccessReviews). The
component logs every finding that is not ``ok`` and refuses to start on a ``conflict``
(:class:`StartupRefused`, a one-line message with the fix); everything else only warns, because a
missing CRD or right may be fixed while the process runs and is retried.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable, Collection
from dataclasses import dataclass, field
from typing import Final, Literal

from shared.component_access import Identity, access_rules
from shared.config import DEFAULT_NAMESPACE, Configuration
from shared.frameworks.builtin_kinds import APPWRAPPER
from shared.kube import KubeClient, KubeError
from shared.preflight.access_checks import check_identity_access, check_own_access, rights_of
from shared.preflight.findings import Finding, Report, Verdict
from shared.preflight.kinds_served import check_kinds_served
from shared.preflight.kueue_setup import (
    check_integrations,
    check_kueue_installed,
    check_multikueue_controller,
    read_kueue_setup,
)
from shared.preflight.multikueue_checks import ClientFactory, check_multikueue
from shared.preflight.webhook_checks import check_webhooks

__all__ = ["Component", "PreflightOptions", "StartupRefused", "job_checks", "run_preflight", "startup_checks"]

Component = Literal["webhook", "reconciler", "multikueue", "appwrapper"]
_COMPONENTS: Final[tuple[Component, ...]] = ("webhook", "reconciler", "multikueue", "appwrapper")


class StartupRefused(RuntimeError):
    """A component must not start: two controllers would act on the same objects."""


@dataclass(frozen=True)
class PreflightOptions:
    kueue_namespace: str = DEFAULT_NAMESPACE
    all_clusters: bool = False
    make_client: ClientFactory = field(default=KubeClient.from_connection)
    multikueue: bool = True


async def _guarded(name: str, check: Callable[[], Awaitable[list[Finding]]]) -> list[Finding]:
    try:
        return await check()
    except KubeError as exc:
        return [
            Finding(
                name, Verdict.WARN, f"could not run: {exc}", "check access to the API server and run again"
            )
        ]


async def _rbac_checks(
    client: KubeClient,
    config: Configuration,
    identities: list[Identity],
    *,
    kueue_namespace: str,
    absent_ok: bool = False,
) -> list[Finding]:
    """The rights of each identity's ServiceAccount, one guarded check per identity
    (``absent_ok``: a ServiceAccount that does not exist is no finding)."""
    findings: list[Finding] = []
    for identity in identities:
        findings += await _guarded(
            f"rbac {identity}",
            lambda identity=identity: check_identity_access(  # type: ignore[misc]
                client,
                config,
                identity,
                namespace=config.namespace,
                kueue_namespace=kueue_namespace,
                absent_ok=absent_ok,
            ),
        )
    return findings


async def _cluster_checks(
    client: KubeClient, config: Configuration, *, options: PreflightOptions, now: dt.datetime
) -> list[Finding]:
    setup = await read_kueue_setup(client, kueue_namespace=options.kueue_namespace)
    findings = await _guarded(
        "kueue installed",
        lambda: check_kueue_installed(client, kueue_namespace=options.kueue_namespace, setup=setup),
    )
    findings += check_integrations(config.managed_kinds(), setup)
    findings += check_multikueue_controller(config, setup)
    findings += await _guarded("kind served", lambda: check_kinds_served(client, config.managed_kinds()))
    findings += await _guarded("webhooks", lambda: check_webhooks(client, config, now=now))
    findings += await _rbac_checks(
        client, config, [*_COMPONENTS, "kueue"], kueue_namespace=options.kueue_namespace
    )
    return findings


async def run_preflight(
    client: KubeClient,
    config: Configuration,
    *,
    options: PreflightOptions | None = None,
    now: dt.datetime | None = None,
) -> Report:
    """Every check (see the module docstring)."""
    options = options or PreflightOptions()
    now = now or dt.datetime.now(dt.UTC)
    report = Report()
    report.add(await _cluster_checks(client, config, options=options, now=now))
    if options.multikueue:

        async def on_worker(worker: KubeClient) -> list[Finding]:
            return await _cluster_checks(
                worker, config, options=PreflightOptions(kueue_namespace=options.kueue_namespace), now=now
            )

        report.add(
            await _guarded(
                "multikueue",
                lambda: check_multikueue(
                    client,
                    config,
                    make_client=options.make_client,
                    cluster_checks=on_worker if options.all_clusters else None,
                ),
            )
        )
    return report


async def job_checks(
    client: KubeClient,
    config: Configuration,
    *,
    kind: str,
    namespace: str,
    admission_checks: Collection[str],
    options: PreflightOptions | None = None,
    now: dt.datetime | None = None,
) -> list[Finding]:
    """The findings that concern one job (``kueue-bridge explain``): of kind ``kind``
    (``Kind.version.group``) in ``namespace``, behind ``admission_checks``. Only the checks that can
    be about such a job run; ServiceAccounts that do not exist are no finding here."""
    options = options or PreflightOptions()
    now = now or dt.datetime.now(dt.UTC)
    kinds = [k for k in config.managed_kinds() if k.gvk.kind_arg == kind]
    setup = await read_kueue_setup(client, kueue_namespace=options.kueue_namespace)
    findings = check_integrations(kinds, setup)
    findings += await _guarded("kind served", lambda: check_kinds_served(client, kinds))
    findings += await _guarded(
        "webhooks", lambda: check_webhooks(client, config, now=now, only_kind=kind, namespace=namespace)
    )
    findings += await _rbac_checks(
        client,
        config,
        ["webhook", "reconciler", "kueue"],
        kueue_namespace=options.kueue_namespace,
        absent_ok=True,
    )
    if admission_checks:
        findings += await _guarded(
            "multikueue",
            lambda: check_multikueue(
                client, config, make_client=options.make_client, only_checks=admission_checks
            ),
        )
    return [
        finding
        for finding in findings
        if finding.concerns(kind=kind, namespace=namespace, admission_checks=admission_checks)
    ]


async def startup_checks(
    client: KubeClient,
    config: Configuration,
    *,
    component: Component,
    kueue_namespace: str = DEFAULT_NAMESPACE,
) -> list[Finding]:
    """The component's start-up findings; raises :class:`StartupRefused` on a conflict."""
    try:
        setup = await read_kueue_setup(client, kueue_namespace=kueue_namespace)
    except KubeError as exc:
        return [
            Finding(
                "kueue configuration",
                Verdict.WARN,
                f"could not be read ({exc}): two controllers per kind not checked",
                "check access to the API server",
            )
        ]
    findings = await _guarded(
        "kueue installed", lambda: check_kueue_installed(client, kueue_namespace=kueue_namespace, setup=setup)
    )
    kinds = config.managed_kinds()
    if component == "appwrapper":
        kinds = [kind for kind in kinds if kind.gvk == APPWRAPPER.gvk]
    if component == "multikueue":
        findings += check_multikueue_controller(config, setup)
        kinds = config.multikueue_kinds()
    else:
        findings += check_integrations(kinds, setup)
    findings += await _guarded("kind served", lambda: check_kinds_served(client, kinds))
    rights = rights_of(
        access_rules(config, component), namespace=config.namespace, kueue_namespace=kueue_namespace
    )
    findings += await _guarded(
        "rbac",
        lambda: check_own_access(
            client,
            rights,
            check=f"rbac {component}",
            fix=f"apply the RBAC of kueue-bridge manifests --config FILE to the {component}'s ServiceAccount",
        ),
    )
    conflicts = [finding for finding in findings if finding.conflict]
    if conflicts:
        first = conflicts[0]
        more = f" (and {len(conflicts) - 1} more)" if len(conflicts) > 1 else ""
        raise StartupRefused(f"{first.check}: {first.message}{more}; fix: {first.fix}")
    return findings
