"""The end-to-end half of the webhook checks: a server-side dry-run create of a probe object.

``?dryRun=All`` runs admission and stores nothing. The probe is created in a namespace both our
webhooks' ``namespaceSelector`` and ``managedJobsNamespaceSelector`` select (one with a LocalQueue
first), labelled with a queue name, so every mutating webhook that would see a user's job sees it:

* the API server's answer says ``failed calling webhook "<name>"`` when it cannot reach or trust a
  webhook (ours or Kueue's): a ``fail``;
* a batch Job probe (a valid object) that comes back **unsuspended** means no webhook suspended it:
  such jobs run before Kueue admits them -- a ``fail``;
* any other answer shows the webhooks were reached: a CRD probe is usually invalid and rejected by
  validation, which runs *after* the mutating webhooks; our webhook may also deny it (a denial names
  the webhook that answered).

Forbidden to create the kind is a ``warn`` (preflight runs as someone who may not).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from shared.config import Configuration
from shared.constants import LOCAL_QUEUE_GVK, QUEUE_LABEL
from shared.frameworks.base import AdapterError
from shared.frameworks.builtin_kinds import BATCH_JOB
from shared.frameworks.registry import Framework
from shared.kube import NAMESPACE_GVK, ApiError, Forbidden, KubeClient, KubeError
from shared.labelselector import LabelSelector
from shared.preflight.findings import Finding, Verdict

__all__ = ["dry_run_probe", "local_queue_in", "probe_namespace"]

_PROBE_PREFIX: Final = "kueue-bridge-preflight-"
WireDict = dict[str, Any]


def _short(exc: BaseException) -> str:
    if isinstance(exc, ApiError):
        return exc.message or f"{exc.reason or exc.code}"
    return str(exc) or type(exc).__name__


async def probe_namespace(
    client: KubeClient, config: Configuration, selector: Mapping[str, Any]
) -> str | None:
    """A namespace the webhooks and ``managedJobsNamespaceSelector`` both select, one with a LocalQueue
    first; ``None`` when there is none."""
    try:
        namespaces = (await client.list_all(NAMESPACE_GVK)).items
    except KubeError:
        return None
    try:
        hook_selector = LabelSelector.model_validate(selector or {})
    except ValueError:
        return None
    selected = [
        str(ns["metadata"]["name"])
        for ns in namespaces
        if (labels := (ns.get("metadata") or {}).get("labels") or {}) is not None
        and hook_selector.matches(labels)
        and config.managed_jobs_namespace_selector.matches(labels)
        and not (ns.get("metadata") or {}).get("deletionTimestamp")
    ]
    if not selected:
        return None
    try:
        with_queue = {str(q["metadata"]["namespace"]) for q in (await client.list_all(LOCAL_QUEUE_GVK)).items}
    except KubeError:
        with_queue = set()
    return next(
        (ns for ns in selected if ns in with_queue), "default" if "default" in selected else selected[0]
    )


async def local_queue_in(client: KubeClient, namespace: str) -> str | None:
    try:
        queues = (await client.list_all(LOCAL_QUEUE_GVK, namespace=namespace)).items
    except KubeError:
        return None
    return str(queues[0]["metadata"]["name"]) if queues else None


def _probe_object(framework: Framework, *, namespace: str, queue: str) -> WireDict:
    gvk = framework.gvk
    body: WireDict = {
        "apiVersion": gvk.api_version,
        "kind": gvk.kind,
        "metadata": {"generateName": _PROBE_PREFIX, "namespace": namespace, "labels": {QUEUE_LABEL: queue}},
    }
    if gvk == BATCH_JOB.gvk:
        body["spec"] = {
            "suspend": False,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "probe", "image": "registry.k8s.io/pause:3.10"}],
                }
            },
        }
    return body


async def dry_run_probe(client: KubeClient, framework: Framework, *, namespace: str, queue: str) -> Finding:
    name = framework.gvk.kind_arg
    label = f"webhook dry-run {name}"
    where = f"a server-side dry-run create in namespace {namespace}"
    try:
        created = await client.create(
            framework.gvk, _probe_object(framework, namespace=namespace, queue=queue), dry_run=True
        )
    except Forbidden as exc:
        if "failed calling webhook" in exc.message or "denied the request" in exc.message:
            return _answered(label, name, exc, where)
        return Finding(
            label,
            Verdict.WARN,
            f"cannot probe with {where}: {_short(exc)}",
            f"run preflight as a user who may create {framework.plural} (nothing is stored: dryRun=All)",
            kinds=(name,),
        )
    except ApiError as exc:
        return _answered(label, name, exc, where)
    except KubeError as exc:
        return Finding(label, Verdict.WARN, f"{where} failed: {exc}", "run preflight again", kinds=(name,))
    try:
        suspended = framework.factory(created).is_suspended()
    except AdapterError:
        suspended = None
    if suspended is False:
        return Finding(
            label,
            Verdict.FAIL,
            f"{where} of a {framework.gvk.kind} with queue name {queue} came back unsuspended: no webhook "
            "suspends it, so such jobs run before Kueue admits them",
            "register kueue-bridge's webhooks for this kind (kueue-bridge manifests)",
            kinds=(name,),
        )
    return Finding(label, Verdict.OK, f"{where} was admitted and came back suspended", kinds=(name,))


def _answered(label: str, name: str, exc: ApiError, where: str) -> Finding:
    message = exc.message or str(exc)
    if "failed calling webhook" in message:
        return Finding(
            label,
            Verdict.FAIL,
            f"the API server cannot call a webhook ({where}): {message}",
            "make the webhook reachable from the API server with a certificate its caBundle trusts",
            kinds=(name,),
        )
    return Finding(
        label,
        Verdict.OK,
        f"{where} reached the webhooks (then: {exc.reason or exc.code}, as expected for an empty probe)",
        kinds=(name,),
    )
