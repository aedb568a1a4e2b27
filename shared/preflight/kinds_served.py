"""Is every configured kind served, in the configured version, under the configured plural?

A kind kueue-bridge manages (or MultiKueue syncs, on a worker) must be served by the API server in
exactly the version the configuration names (``Kind.version.group``): the webhook rules, the
informers and every write use that version. Discovery answers first; when it does not serve the
kind, the CRD is read to say why (not installed, or installed without that version). A served kind
is also checked against the configuration's plural (``resource``, guessed from the kind when not
given: ``Policy`` -> ``policies``, which a CRD may spell otherwise) and, for an adapter that resets
status fields on stop (``resetOnStop``, batch/v1 Job), for a ``status`` subresource.
"""

from __future__ import annotations

from collections.abc import Iterable

from shared.config import ManagedKind
from shared.frameworks.builtin_kinds import BATCH_JOB
from shared.kube import CRD_GVK, Forbidden, KubeClient, KubeError, NotFound, UnknownKindError
from shared.preflight.findings import Finding, Verdict

__all__ = ["CRD_GVK", "check_kinds_served"]


async def _why_not_served(client: KubeClient, kind: ManagedKind) -> tuple[str, str]:
    """(message, fix) for a kind discovery does not serve."""
    gvk = kind.gvk
    crd = None
    try:
        crd = await client.get(CRD_GVK, f"{kind.resource}.{gvk.group}")
    except NotFound:
        try:
            for candidate in (await client.list_all(CRD_GVK)).items:
                spec = candidate.get("spec") or {}
                if spec.get("group") == gvk.group and (spec.get("names") or {}).get("kind") == gvk.kind:
                    crd = candidate
                    break
        except KubeError:
            crd = None
    except Forbidden:
        return (
            f"{gvk} is not served (this identity may not read CRDs to say why)",
            f"install the CRD of {gvk.kind} ({kind.resource}.{gvk.group}) in a version that serves {gvk.version}",
        )
    except KubeError as exc:
        return (
            f"{gvk} is not served and its CRD cannot be read ({exc})",
            f"install the CRD of {gvk.kind} ({kind.resource}.{gvk.group})",
        )
    if crd is None:
        return (
            f"{gvk} is not served: no CRD defines kind {gvk.kind} in group {gvk.group}",
            f"install the CRD of {gvk.kind} (its operator) before kueue-bridge; the reconciler and the "
            "webhook wait for it",
        )
    name = str((crd.get("metadata") or {}).get("name"))
    served = [
        str(v.get("name"))
        for v in (crd.get("spec") or {}).get("versions") or []
        if isinstance(v, dict) and v.get("served")
    ]
    return (
        f"CRD {name} serves {', '.join(served) or 'no version'}, not {gvk.version}",
        f"name a served version in the configuration ({gvk.kind}.{served[0]}.{gvk.group})"
        if served
        else f"serve a version in CRD {name}",
    )


async def check_kinds_served(
    client: KubeClient, kinds: Iterable[ManagedKind], *, check: str = "kind served"
) -> list[Finding]:
    """One finding per kind: served in its version, under its plural, with status when needed."""
    findings: list[Finding] = []
    for kind in kinds:
        name = kind.gvk.kind_arg
        label = f"{check} {name}"
        try:
            info = await client.mapper.resolve(kind.gvk)
        except UnknownKindError:
            message, fix = await _why_not_served(client, kind)
            findings.append(Finding(label, Verdict.FAIL, message, fix, kinds=(name,)))
            continue
        if info.plural != kind.resource:
            findings.append(
                Finding(
                    label,
                    Verdict.FAIL,
                    f"the API server serves {kind.gvk.kind} as {info.plural}, the configuration says "
                    f"{kind.resource}: webhook rules and API paths would miss it",
                    f"set resource: {info.plural} in integrations.externalFrameworks[{name}]",
                    kinds=(name,),
                )
            )
            continue
        resets = kind.gvk == BATCH_JOB.gvk or bool(kind.adapter is not None and kind.adapter.reset_on_stop)
        if resets and "status" not in info.subresources:
            findings.append(
                Finding(
                    label,
                    Verdict.FAIL,
                    f"{info.resource_label} has no status subresource, but a stop resets status fields "
                    "(resetOnStop)",
                    f"enable subresources.status in the CRD of {kind.gvk.kind}, or drop resetOnStop",
                    kinds=(name,),
                )
            )
            continue
        findings.append(
            Finding(label, Verdict.OK, f"served as {info.resource_label} {kind.gvk.version}", kinds=(name,))
        )
    return findings
