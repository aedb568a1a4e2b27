"""Can ``kueue-bridge multikueue`` dispatch to every worker of every AdmissionCheck it handles?

For each AdmissionCheck whose ``controllerName`` is ours (``kueueBridge.multiKueue.controllerName``):

* its ``parameters`` name a MultiKueueConfig that exists, and its ``Active`` condition (written by
  the running controller) is not ``False``;
* the manager's namespaces and LocalQueues in use: those whose ClusterQueue has the check;
* per worker cluster of the config: the MultiKueueCluster exists; its kubeconfig loads and passes
  Kueue's rules (:mod:`shared.multikueue_kubeconfig`, the same code the controller runs: read from a
  Secret of kueue-bridge's namespace; a ``Path`` location is a file on the controller's disk and is
  not checked from here); the worker answers; **every synced kind** is served there (a worker
  without the CRD takes the kind's dispatch down: kueue #3582); the **worker identity** of that
  kubeconfig may do what MultiKueue does there (SelfSubjectAccessReviews on the worker: create,
  watch, delete ... of Workloads and of each synced kind); and the worker has a **LocalQueue of the
  same namespace and name** for every manager LocalQueue in use (a copy queued to a missing
  LocalQueue is never admitted).

With ``all_clusters`` each worker's own single-cluster checks run too (through the same kubeconfig),
their findings prefixed with the cluster's name.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Mapping
from typing import Any, Final

from pydantic import ValidationError

from shared.component_access import access_rules
from shared.config import Configuration
from shared.constants import (
    ADMISSION_CHECK_GVK,
    API_GROUP,
    CLUSTER_QUEUE_GVK,
    LOCAL_QUEUE_GVK,
    MULTIKUEUE_CLUSTER_GVK,
    MULTIKUEUE_CONFIG_GVK,
)
from shared.kube import ConnectionConfig, KubeClient, KubeError, NotFound, UnknownKindError
from shared.kube.conditions import is_true, object_condition
from shared.kube.kinds import SECRET_GVK
from shared.models.multikueue import MultiKueueCluster
from shared.multikueue_kubeconfig import KubeConfigError, connection_for, load_cluster_kubeconfig
from shared.preflight.access_checks import check_own_access, rights_of
from shared.preflight.findings import Finding, Verdict
from shared.preflight.kinds_served import check_kinds_served

__all__ = ["ClientFactory", "ClusterChecks", "check_multikueue"]

ADMISSION_CHECK: Final = ADMISSION_CHECK_GVK
MULTIKUEUE_CONFIG: Final = MULTIKUEUE_CONFIG_GVK
MULTIKUEUE_CLUSTER: Final = MULTIKUEUE_CLUSTER_GVK
CLUSTER_QUEUE: Final = CLUSTER_QUEUE_GVK
LOCAL_QUEUE: Final = LOCAL_QUEUE_GVK
SECRET: Final = SECRET_GVK
WireDict = dict[str, Any]
ClientFactory = Callable[[ConnectionConfig], KubeClient]
#: the single-cluster checks, run on a worker with ``--all-clusters``
ClusterChecks = Callable[[KubeClient], Awaitable[list[Finding]]]


def _short(exc: BaseException) -> str:
    return getattr(exc, "message", "") or str(exc) or type(exc).__name__


def _check_names(cluster_queue: Mapping[str, Any]) -> set[str]:
    spec = cluster_queue.get("spec") or {}
    names = {str(n) for n in spec.get("admissionChecks") or [] if isinstance(n, str)}
    strategy = spec.get("admissionChecksStrategy") or {}
    names |= {str(c.get("name")) for c in strategy.get("admissionChecks") or [] if isinstance(c, dict)}
    return names


async def _queues_in_use(client: KubeClient, check: str) -> list[tuple[str, str]]:
    """(namespace, LocalQueue) on the manager whose ClusterQueue has the admission check ``check``."""
    cluster_queues = {
        str(cq["metadata"]["name"])
        for cq in (await client.list_all(CLUSTER_QUEUE)).items
        if check in _check_names(cq)
    }
    return sorted(
        (str(lq["metadata"]["namespace"]), str(lq["metadata"]["name"]))
        for lq in (await client.list_all(LOCAL_QUEUE)).items
        if (lq.get("spec") or {}).get("clusterQueue") in cluster_queues
    )


async def _secret(client: KubeClient, namespace: str, name: str) -> WireDict | None:
    try:
        return await client.get(SECRET, name, namespace=namespace)
    except NotFound:
        return None


async def _worker(
    client: KubeClient,
    config: Configuration,
    *,
    cluster_name: str,
    check_name: str,
    queues: list[tuple[str, str]],
    make_client: ClientFactory,
    cluster_checks: ClusterChecks | None,
) -> list[Finding]:
    label = f"multikueue cluster {cluster_name}"
    scope: dict[str, Any] = {"clusters": (cluster_name,), "admission_checks": (check_name,)}
    try:
        raw = await client.get(MULTIKUEUE_CLUSTER, cluster_name)
        cluster = MultiKueueCluster.model_validate(raw)
    except NotFound:
        return [
            Finding(
                label,
                Verdict.FAIL,
                f"MultiKueueCluster {cluster_name} (listed by AdmissionCheck {check_name}'s config) does not exist",
                f"create MultiKueueCluster {cluster_name} with the worker's kubeconfig Secret",
                **scope,
            )
        ]
    except ValidationError as exc:
        return [
            Finding(label, Verdict.FAIL, f"cannot be read: {exc.errors()[0]['msg']}", "fix its spec", **scope)
        ]
    source = cluster.spec.cluster_source.kube_config
    if source is not None and source.effective_location_type == "Path":
        return [
            Finding(
                label,
                Verdict.WARN,
                f"its kubeconfig is the file {source.location} on the controller's disk: not checked from here",
                "run preflight where that file is, or use a Secret (locationType: Secret)",
                **scope,
            )
        ]
    secrets: dict[str, WireDict | None] = {}
    if source is not None:
        secrets[source.location] = await _secret(client, config.namespace, source.location)
    try:
        loaded = load_cluster_kubeconfig(cluster, secrets=lambda name: secrets.get(name))
        connection = connection_for(loaded)
    except KubeConfigError as exc:
        return [
            Finding(
                label,
                Verdict.FAIL,
                f"{exc.reason}: {exc.message} (Secret in {config.namespace})",
                f"put a kubeconfig Kueue accepts under key kubeconfig of that Secret in {config.namespace}",
                **scope,
            )
        ]
    except ValueError as exc:
        return [Finding(label, Verdict.FAIL, str(exc), "fix the kubeconfig in the Secret", **scope)]
    findings: list[Finding] = []
    async with make_client(connection) as worker:
        try:
            await worker.mapper.server_groups()
        except KubeError as exc:
            return [
                Finding(
                    label,
                    Verdict.FAIL,
                    f"the worker does not answer with its kubeconfig ({_short(exc)})",
                    "check the server URL, the CA and the token in the kubeconfig Secret",
                    **scope,
                )
            ]
        findings.append(Finding(label, Verdict.OK, f"reachable at {connection.server}", **scope))
        kinds = config.multikueue_kinds()
        served = await check_kinds_served(worker, kinds, check=f"{label}: kind served")
        findings += [
            Finding(
                f.check,
                f.verdict,
                f.message
                + (
                    " on the worker: jobs of this kind cannot be dispatched there (kueue #3582)"
                    if f.verdict is Verdict.FAIL
                    else ""
                ),
                f.fix,
                kinds=f.kinds,
                **scope,
            )
            for f in served
        ]
        rights = rights_of(access_rules(config, "multikueue-worker"), namespace="", kueue_namespace="")
        findings += await check_own_access(
            worker,
            rights,
            check=f"{label}: worker identity",
            fix="apply kueue-bridge manifests --config FILE --part worker on the worker, and use that "
            "ServiceAccount's token in the kubeconfig Secret",
            **scope,
        )
        missing = []
        unreadable = 0
        for namespace, name in queues:
            try:
                await worker.get(LOCAL_QUEUE, name, namespace=namespace)
            except (NotFound, UnknownKindError):
                missing.append(f"{namespace}/{name}")
            except KubeError as exc:
                unreadable += 1
                findings.append(
                    Finding(
                        f"{label}: local queues",
                        Verdict.WARN,
                        f"cannot read LocalQueue {namespace}/{name} there ({_short(exc)})",
                        "grant the worker identity get on localqueues to check",
                        **scope,
                    )
                )
        if missing:
            findings.append(
                Finding(
                    f"{label}: local queues",
                    Verdict.FAIL,
                    f"no LocalQueue {', '.join(missing)} on the worker: Workloads queued there on the manager "
                    "are copied to the same namespace and queue, which must exist on every worker",
                    "create the same namespaces and LocalQueues on the worker",
                    namespaces=tuple(sorted({m.split("/")[0] for m in missing})),
                    **scope,
                )
            )
        elif queues and not unreadable:
            findings.append(
                Finding(
                    f"{label}: local queues",
                    Verdict.OK,
                    f"has all {len(queues)} LocalQueue(s) in use on the manager",
                    **scope,
                )
            )
        if cluster_checks is not None:
            findings += [finding.in_cluster(cluster_name) for finding in await cluster_checks(worker)]
    return findings


async def check_multikueue(
    client: KubeClient,
    config: Configuration,
    *,
    make_client: ClientFactory,
    cluster_checks: ClusterChecks | None = None,
    only_checks: Collection[str] | None = None,
) -> list[Finding]:
    """Every check of the module docstring, for each AdmissionCheck of our controller (of
    ``only_checks`` when given)."""
    ours = config.kueue_bridge.multi_kueue.controller_name
    try:
        checks = [
            c
            for c in (await client.list_all(ADMISSION_CHECK)).items
            if (c.get("spec") or {}).get("controllerName") == ours
        ]
    except KubeError as exc:
        return [
            Finding(
                "multikueue",
                Verdict.WARN,
                f"cannot list AdmissionChecks ({_short(exc)})",
                "grant list on them",
            )
        ]
    if not checks and only_checks is not None:
        return []
    if not checks:
        return [
            Finding(
                "multikueue",
                Verdict.OK,
                f"no AdmissionCheck names controllerName {ours}: nothing to dispatch",
            )
        ]
    findings: list[Finding] = []
    for check in checks:
        name = str(check["metadata"]["name"])
        label = f"multikueue admission check {name}"
        scope: dict[str, Any] = {"admission_checks": (name,)}
        parameters = (check.get("spec") or {}).get("parameters") or {}
        if parameters.get("kind") != "MultiKueueConfig" or parameters.get("apiGroup") != API_GROUP:
            findings.append(
                Finding(
                    label,
                    Verdict.FAIL,
                    f"its parameters do not name a MultiKueueConfig ({parameters or 'none'})",
                    f"set parameters: {{apiGroup: {API_GROUP}, kind: MultiKueueConfig, name: ...}}",
                    **scope,
                )
            )
            continue
        try:
            mk_config = await client.get(MULTIKUEUE_CONFIG, str(parameters.get("name")))
        except NotFound:
            findings.append(
                Finding(
                    label,
                    Verdict.FAIL,
                    f"MultiKueueConfig {parameters.get('name')} does not exist",
                    "create it, listing the worker MultiKueueClusters",
                    **scope,
                )
            )
            continue
        active = object_condition(check, "Active")
        if active is None:
            findings.append(
                Finding(
                    label,
                    Verdict.WARN,
                    "no Active condition: kueue-bridge multikueue has not handled it (is it running, with "
                    f"controllerName {ours}?)",
                    "start kueue-bridge multikueue with this configuration",
                    **scope,
                )
            )
        elif not is_true(active):
            findings.append(
                Finding(
                    label,
                    Verdict.FAIL,
                    f"inactive: {active.get('reason')}: {active.get('message')}",
                    "see the clusters below; every ClusterQueue with this check is inactive until it is Active",
                    **scope,
                )
            )
        else:
            findings.append(Finding(label, Verdict.OK, f"Active ({active.get('reason')})", **scope))
        queues = await _queues_in_use(client, name)
        for cluster_name in (mk_config.get("spec") or {}).get("clusters") or []:
            findings += await _worker(
                client,
                config,
                cluster_name=str(cluster_name),
                check_name=name,
                queues=queues,
                make_client=make_client,
                cluster_checks=cluster_checks,
            )
    return findings
