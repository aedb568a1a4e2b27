"""Misconfigurations ``kueue-bridge preflight`` must find, each set up, checked and undone.

The same scenarios run on the devcluster (``tests/e2e/test_preflight.py``) and on the real
kube-apiserver with real Kueue of the kit (``tests/real/test_preflight.py``). A :class:`Target` is a
cluster with Kueue's CRDs, the configuration's CRDs and kueue-bridge's webhook running and registered
(URL and caBundle, as ``make dev`` registers it). Every scenario leaves the cluster as it found it.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import sys
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from bridge_tools.manifests.render import (
    RenderOptions,
    kueue_configuration_fragment,
    render_manifests,
    render_worker,
)
from shared.component_access import KUEUE_CONFIG_KEY, KUEUE_CONFIG_MAP
from shared.config import Configuration, parse_config
from shared.jsontree import json_tree_copy
from shared.kube import AlreadyExists, GroupVersionKind, KubeClient, NotFound
from shared.preflight import Finding, PreflightOptions, Verdict, run_preflight
from shared.webhook_configurations import MUTATING_CONFIGURATION_NAME, VALIDATING_CONFIGURATION_NAME

__all__ = [
    "CONFIG_MAP",
    "Target",
    "apply_objects",
    "delete_objects",
    "findings_of",
    "one",
    "publish_kueue_config",
    "rbac_objects",
    "run",
]

CONFIG_MAP = GroupVersionKind("", "v1", "ConfigMap")
NAMESPACE = GroupVersionKind("", "v1", "Namespace")
MUTATING = GroupVersionKind("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration")
VALIDATING = GroupVersionKind("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration")
RBAC_KINDS = (
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "Namespace",
    "Secret",
)


@dataclass
class Target:
    """A cluster with kueue-bridge's webhook registered, and the configuration it runs with."""

    client: KubeClient
    config: Configuration
    config_text: str
    kueue_namespace: str = "kueue-system"

    @property
    def declarative_kind(self) -> str:
        return next(k.gvk.kind_arg for k in self.config.managed_kinds() if k.builtin is None)


async def run(target: Target, config: Configuration | None = None, **options: Any) -> list[Finding]:
    report = await run_preflight(
        target.client,
        config or target.config,
        options=PreflightOptions(kueue_namespace=target.kueue_namespace, **options),
        now=dt.datetime.now(dt.UTC),
    )
    return report.findings


def findings_of(
    findings: Iterable[Finding], check: str, verdict: Verdict | None = None, *, exact: bool = False
) -> list[Finding]:
    """The findings whose check starts with ``check`` (is ``check`` with ``exact``), of ``verdict``."""
    return [
        f
        for f in findings
        if (f.check == check if exact else f.check.startswith(check))
        and (verdict is None or f.verdict is verdict)
    ]


def one(findings: Iterable[Finding], check: str, verdict: Verdict, *, exact: bool = False) -> Finding:
    findings = list(findings)
    found = findings_of(findings, check, verdict, exact=exact)
    assert len(found) == 1, (check, verdict, [f"{f.verdict} {f.check}: {f.message}" for f in findings])
    return found[0]


async def _ensure_namespace(client: KubeClient, name: str) -> None:
    with contextlib.suppress(AlreadyExists):
        await client.create(NAMESPACE, {"metadata": {"name": name}})


async def publish_kueue_config(target: Target, integrations: dict[str, Any] | None) -> None:
    """Kueue's ConfigMap with these ``integrations`` (``None``: delete it)."""
    if integrations is None:
        with contextlib.suppress(NotFound):
            await target.client.delete(CONFIG_MAP, KUEUE_CONFIG_MAP, namespace=target.kueue_namespace)
        return
    await _ensure_namespace(target.client, target.kueue_namespace)
    body = kueue_config_map(target.kueue_namespace, KUEUE_CONFIG_MAP, integrations)
    await target.client.apply(
        CONFIG_MAP, body, namespace=target.kueue_namespace, field_manager="preflight-test", force=True
    )


def chart_deployment(*, release: str, namespace: str, config: bool = True) -> dict[str, Any]:
    """Kueue's manager as its Helm chart (``charts/kueue/templates/manager/manager.yaml``) renders it
    for ``release`` in ``namespace``: fullname ``<release>-kueue``, ``--config`` mounted from the
    ConfigMap ``<fullname>-manager-config`` (``config=False``: a manager run without ``--config``)."""
    fullname = release if "kueue" in release else f"{release}-kueue"
    selector = {
        "app.kubernetes.io/name": "kueue",
        "app.kubernetes.io/instance": release,
        "control-plane": "controller-manager",
    }
    container: dict[str, Any] = {
        "name": "manager",
        "image": "registry.k8s.io/kueue/kueue:v0.19.2",
        "command": ["/manager"],
        "args": ["--config=/controller_manager_config.yaml", "--zap-log-level=2"] if config else [],
        "volumeMounts": [
            {"name": "cert", "mountPath": "/tmp/k8s-webhook-server/serving-certs", "readOnly": True},
            {
                "name": "manager-config",
                "mountPath": "/controller_manager_config.yaml",
                "subPath": "controller_manager_config.yaml",
            },
        ],
    }
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": f"{fullname}-controller-manager",
            "namespace": namespace,
            "labels": {**selector, "app.kubernetes.io/component": "controller"},
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": selector},
                "spec": {
                    "containers": [container],
                    "volumes": [
                        {"name": "cert", "secret": {"secretName": f"{fullname}-webhook-server-cert"}},
                        {"name": "manager-config", "configMap": {"name": f"{fullname}-manager-config"}},
                    ],
                },
            },
        },
        "status": {"readyReplicas": 1},
    }


def kueue_config_map(namespace: str, name: str, integrations: dict[str, Any]) -> dict[str, Any]:
    """Kueue's Configuration with these ``integrations``, as the ConfigMap Kueue's install creates."""
    document = {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "integrations": integrations,
    }
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": namespace},
        "data": {KUEUE_CONFIG_KEY: yaml.safe_dump(document)},
    }


@contextlib.asynccontextmanager
async def kueue_config_restored(target: Target) -> AsyncIterator[None]:
    """Kueue's ConfigMap as it was before the block (the kit publishes its own; the devcluster none)."""
    try:
        saved: dict[str, Any] | None = await target.client.get(
            CONFIG_MAP, KUEUE_CONFIG_MAP, namespace=target.kueue_namespace
        )
    except NotFound:
        saved = None
    try:
        yield
    finally:
        if saved is None:
            await publish_kueue_config(target, None)
        else:
            body = {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {"name": KUEUE_CONFIG_MAP, "namespace": target.kueue_namespace},
                "data": saved.get("data") or {},
            }
            await target.client.apply(
                CONFIG_MAP, body, namespace=target.kueue_namespace, field_manager="preflight-test", force=True
            )


def handed_over(config: Configuration) -> dict[str, Any]:
    """Kueue's integrations when it hands every kind of ``config`` to kueue-bridge."""
    return {"frameworks": ["jobset.x-k8s.io/jobset"], **kueue_configuration_fragment(config)["integrations"]}


@contextlib.asynccontextmanager
async def webhooks_restored(client: KubeClient) -> AsyncIterator[None]:
    """Put our two webhook configurations back as they were after the block."""
    saved = {
        gvk: await client.get(gvk, name)
        for gvk, name in (
            (MUTATING, MUTATING_CONFIGURATION_NAME),
            (VALIDATING, VALIDATING_CONFIGURATION_NAME),
        )
    }
    try:
        yield
    finally:
        for gvk, original in saved.items():
            name = original["metadata"]["name"]
            try:
                current = await client.get(gvk, name)
                body = json_tree_copy(original)
                body["metadata"] = {
                    **body["metadata"],
                    "resourceVersion": current["metadata"]["resourceVersion"],
                }
                await client.update(gvk, body)
            except NotFound:
                body = json_tree_copy(original)
                body["metadata"] = {"name": name, "labels": original["metadata"].get("labels") or {}}
                await client.create(gvk, body)


async def edit_webhooks(client: KubeClient, gvk: GroupVersionKind, name: str, edit: Any) -> None:
    current = await client.get(gvk, name)
    edit(current)
    await client.update(gvk, current)


def rbac_objects(config: Configuration, text: str, *, kueue_namespace: str) -> list[dict[str, Any]]:
    """The ServiceAccounts and RBAC ``kueue-bridge manifests`` renders for ``config``."""
    objects = render_manifests(
        config,
        options=RenderOptions(config_text=text, image="kueue-bridge:test", kueue_namespace=kueue_namespace),
    )
    return [obj for obj in objects if obj["kind"] in RBAC_KINDS]


def _gvk(obj: dict[str, Any]) -> GroupVersionKind:
    group, _, version = obj["apiVersion"].rpartition("/")
    return GroupVersionKind(group, version, obj["kind"])


async def apply_objects(client: KubeClient, objects: Iterable[dict[str, Any]]) -> None:
    for obj in objects:
        namespace = obj["metadata"].get("namespace")
        if namespace:
            await _ensure_namespace(client, namespace)
        await client.apply(_gvk(obj), obj, namespace=namespace, field_manager="preflight-test", force=True)


async def delete_objects(client: KubeClient, objects: Iterable[dict[str, Any]]) -> None:
    for obj in reversed(list(objects)):
        if obj["kind"] == "Namespace":
            continue  # namespaces are never deleted: the kit has no namespace controller
        with contextlib.suppress(NotFound):
            await client.delete(
                _gvk(obj), obj["metadata"]["name"], namespace=obj["metadata"].get("namespace")
            )


# --- the scenarios -----------------------------------------------------------------------------------
async def kueue_configuration_is_read_from_its_configmap(target: Target) -> None:
    """A conflict (Kueue's own integration on) and a kind not handed over, then the fixed setup."""
    job = "Job.v1.batch"
    declarative = target.declarative_kind
    async with kueue_config_restored(target):
        await publish_kueue_config(target, {"frameworks": ["batch/job"], "externalFrameworks": [job]})
        found = await run(target)
        conflict = one(found, f"kueue integration {job}", Verdict.FAIL)
        assert conflict.conflict and "Kueue's own batch/job integration is enabled" in conflict.message
        assert "remove batch/job from Kueue's integrations.frameworks" in conflict.fix
        missing = one(found, f"kueue integration {declarative}", Verdict.FAIL)
        assert "does not list" in missing.message and not missing.conflict
        await publish_kueue_config(target, handed_over(target.config))
        found = await run(target)
        assert not findings_of(found, "kueue integration", Verdict.FAIL)
        assert not findings_of(found, "kueue integration", Verdict.WARN)
        assert "does not enable batch/job" in one(found, f"kueue integration {job}", Verdict.OK).message


async def kind_not_served_in_the_configured_version(target: Target) -> None:
    """The configuration names a version the CRD does not serve, then a wrong plural."""
    kind = next(k for k in target.config.managed_kinds() if k.builtin is None)
    group, version, name = kind.gvk.group, kind.gvk.version, kind.gvk.kind
    text = target.config_text.replace(f"{name}.{version}.{group}", f"{name}.v9.{group}")
    found = await run(target, parse_config(text, source="t"))
    failure = one(found, f"kind served {name}.v9.{group}", Verdict.FAIL)
    assert failure.message == f"CRD {kind.resource}.{group} serves {version}, not v9", failure.message
    assert f"{name}.{version}.{group}" in failure.fix
    plural = target.config_text.replace(f"resource: {kind.resource}", f"resource: {kind.resource}x")
    assert plural != target.config_text
    found = await run(target, parse_config(plural, source="t"))
    failure = one(found, f"kind served {name}.{version}.{group}", Verdict.FAIL)
    assert f"serves {name} as {kind.resource}, the configuration says {kind.resource}x" in failure.message


async def webhooks_missing_slow_untrusted_or_unreachable(target: Target) -> None:
    """Our webhook configurations, broken four ways (and put back)."""
    client = target.client
    declarative = next(k for k in target.config.managed_kinds() if k.builtin is None)
    baseline = await run(target)
    assert not findings_of(baseline, "webhook", Verdict.FAIL), [
        f.message for f in findings_of(baseline, "webhook")
    ]
    assert one(baseline, "webhook dry-run Job.v1.batch", Verdict.OK).message.endswith("came back suspended")
    async with webhooks_restored(client):

        def slow_and_lenient(configuration: dict[str, Any]) -> None:
            hook = configuration["webhooks"][0]
            hook["timeoutSeconds"], hook["failurePolicy"] = 1, "Ignore"

        def without_declarative(configuration: dict[str, Any]) -> None:
            configuration["webhooks"] = [
                h for h in configuration["webhooks"] if declarative.resource not in h["rules"][0]["resources"]
            ]

        await edit_webhooks(client, MUTATING, MUTATING_CONFIGURATION_NAME, slow_and_lenient)
        await edit_webhooks(client, VALIDATING, VALIDATING_CONFIGURATION_NAME, without_declarative)
        found = await run(target)
        warnings = findings_of(found, "webhook m", Verdict.WARN)
        assert {"failurePolicy is Ignore", "timeoutSeconds is 1"} <= {
            w.message.split(" (")[0] for w in warnings
        }
        gap = one(found, f"webhooks {VALIDATING_CONFIGURATION_NAME}", Verdict.FAIL)
        assert f"no webhook covers {declarative.resource}.{declarative.gvk.group}" in gap.message
    async with webhooks_restored(client):

        def untrusted(configuration: dict[str, Any]) -> None:
            for hook in configuration["webhooks"]:
                hook["clientConfig"]["caBundle"] = "bm90IGEgY2VydGlmaWNhdGU="  # "not a certificate"

        await edit_webhooks(client, MUTATING, MUTATING_CONFIGURATION_NAME, untrusted)
        found = await run(target)
        assert "caBundle is not PEM certificates" in one(found, "webhook endpoint", Verdict.FAIL).message
        dry_run = one(found, "webhook dry-run Job.v1.batch", Verdict.FAIL)
        assert "failed calling webhook" in dry_run.message
    async with webhooks_restored(client):

        def unreachable(configuration: dict[str, Any]) -> None:
            for hook in configuration["webhooks"]:
                hook["clientConfig"]["url"] = "https://127.0.0.1:1/mutate"

        await edit_webhooks(client, MUTATING, MUTATING_CONFIGURATION_NAME, unreachable)
        found = await run(target)
        endpoint = one(found, "webhook endpoint https://127.0.0.1:1/mutate", Verdict.FAIL)
        assert "is not reachable" in endpoint.message
        assert "failed calling webhook" in one(found, "webhook dry-run Job.v1.batch", Verdict.FAIL).message
    async with webhooks_restored(client):
        await client.delete(MUTATING, MUTATING_CONFIGURATION_NAME)
        found = await run(target)
        gone = one(found, f"webhooks {MUTATING_CONFIGURATION_NAME}", Verdict.FAIL)
        assert "is not registered: jobs are not suspended on create" in gone.message
    restored = await run(target)
    assert not findings_of(restored, "webhook", Verdict.FAIL)


async def service_accounts_miss_a_right(target: Target) -> None:
    """The rendered RBAC gives every ServiceAccount what it needs; one verb removed is found."""
    objects = rbac_objects(target.config, target.config_text, kueue_namespace=target.kueue_namespace)
    await apply_objects(target.client, objects)
    try:
        found = await run(target)
        for identity in ("webhook", "reconciler", "multikueue"):
            ok = one(found, f"rbac {identity} ", Verdict.OK)
            assert ok.message.startswith("has all "), ok.message
        role = next(
            o
            for o in objects
            if o["kind"] == "ClusterRole" and o["metadata"]["name"] == "kueue-bridge-reconciler"
        )
        trimmed = json_tree_copy(role)
        for rule in trimmed["rules"]:
            if rule["apiGroups"] == ["batch"] and rule["resources"] == ["jobs"]:
                rule["verbs"] = [v for v in rule["verbs"] if v != "patch"]
        await apply_objects(target.client, [trimmed])
        found = await run(target)
        failure = one(found, "rbac reconciler ", Verdict.FAIL)
        assert "may not patch jobs.batch" in failure.message and failure.kinds == ("Job.v1.batch",)
        reader = next(
            o
            for o in objects
            if o["kind"] == "RoleBinding" and o["metadata"]["name"] == "kueue-bridge-webhook-kueue-config"
        )
        await delete_objects(target.client, [reader])
        found = await run(target)
        warning = one(found, "rbac webhook ", Verdict.WARN)
        assert f"may not get configmaps in {target.kueue_namespace}" in warning.message
        assert not warning.conflict
    finally:
        await delete_objects(target.client, objects)


def worker_objects(config: Configuration) -> list[dict[str, Any]]:
    return [obj for obj in render_worker(config) if obj["kind"] in RBAC_KINDS and obj["kind"] != "Secret"]


MK_CLUSTER = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "MultiKueueCluster")
MK_CONFIG = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "MultiKueueConfig")
ADMISSION_CHECK = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "AdmissionCheck")
CLUSTER_QUEUE = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "ClusterQueue")
LOCAL_QUEUE = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "LocalQueue")
SECRET = GroupVersionKind("", "v1", "Secret")


def _secret(name: str, namespace: str, kubeconfig: dict[str, Any]) -> dict[str, Any]:
    import base64

    encoded = base64.b64encode(yaml.safe_dump(kubeconfig).encode()).decode()
    return {"metadata": {"name": name, "namespace": namespace}, "data": {"kubeconfig": encoded}}


async def multikueue_workers_missing_things(
    manager: Target, *, worker: KubeClient, worker_kubeconfig: dict[str, Any], namespace: str
) -> None:
    """Two workers: w2's Secret is missing; w1 lacks a synced kind's CRD, a right and the LocalQueue.

    ``worker`` is an admin client of w1, ``worker_kubeconfig`` a kubeconfig for the worker identity
    of ``kueue-bridge manifests --part worker`` there (its RBAC is applied here), ``namespace`` has a
    LocalQueue on the manager. The worker must serve batch Jobs and Kueue's CRDs but not AppWrappers.
    """
    client, config = manager.client, manager.config
    controller = config.kueue_bridge.multi_kueue.controller_name
    identity = worker_objects(config)
    await apply_objects(worker, identity)
    await _ensure_namespace(client, config.namespace)
    objects: list[tuple[GroupVersionKind, dict[str, Any], str | None]] = [
        (SECRET, _secret("w1-kubeconfig", config.namespace, worker_kubeconfig), config.namespace),
        *(
            (
                MK_CLUSTER,
                {
                    "metadata": {"name": name},
                    "spec": {
                        "clusterSource": {
                            "kubeConfig": {"locationType": "Secret", "location": f"{name}-kubeconfig"}
                        }
                    },
                },
                None,
            )
            for name in ("w1", "w2")
        ),
        (MK_CONFIG, {"metadata": {"name": "preflight-mk"}, "spec": {"clusters": ["w1", "w2"]}}, None),
        (
            ADMISSION_CHECK,
            {
                "metadata": {"name": "preflight-mk"},
                "spec": {
                    "controllerName": controller,
                    "parameters": {
                        "apiGroup": "kueue.x-k8s.io",
                        "kind": "MultiKueueConfig",
                        "name": "preflight-mk",
                    },
                },
            },
            None,
        ),
        (
            CLUSTER_QUEUE,
            {
                "metadata": {"name": "preflight-mk-cq"},
                "spec": {
                    "namespaceSelector": {},
                    "admissionChecksStrategy": {"admissionChecks": [{"name": "preflight-mk"}]},
                },
            },
            None,
        ),
        (
            LOCAL_QUEUE,
            {
                "metadata": {"name": "preflight-mk-lq", "namespace": namespace},
                "spec": {"clusterQueue": "preflight-mk-cq"},
            },
            namespace,
        ),
    ]
    worker_queue = (
        LOCAL_QUEUE,
        {
            "metadata": {"name": "preflight-mk-lq", "namespace": namespace},
            "spec": {"clusterQueue": "preflight-mk-cq"},
        },
        namespace,
    )
    try:
        for gvk, body, ns in objects:
            await client.create(gvk, body, namespace=ns)
        await _ensure_namespace(worker, namespace)
        found = await run(manager)
        w2 = one(found, "multikueue cluster w2", Verdict.FAIL)
        assert w2.message.startswith(
            'BadKubeConfig: load client config failed: Secret "w2-kubeconfig" not found'
        )
        assert w2.admission_checks == ("preflight-mk",) and w2.clusters == ("w2",)
        assert one(found, "multikueue cluster w1", Verdict.OK, exact=True).message.startswith(
            "reachable at https://"
        )
        crd = one(
            found,
            "multikueue cluster w1: kind served AppWrapper.v1beta2.workload.codeflare.dev",
            Verdict.FAIL,
        )
        assert "cannot be dispatched there (kueue #3582)" in crd.message
        assert one(found, "multikueue cluster w1: kind served Job.v1.batch", Verdict.OK)
        assert one(found, "multikueue cluster w1: worker identity", Verdict.OK).message.startswith("has all")
        queues = one(found, "multikueue cluster w1: local queues", Verdict.FAIL)
        assert f"no LocalQueue {namespace}/preflight-mk-lq on the worker" in queues.message
        check = findings_of(found, "multikueue admission check preflight-mk")
        assert check and check[0].verdict is not Verdict.OK  # nothing of ours runs here to make it Active
        # the worker identity loses "create" on Jobs; the worker gets the LocalQueue
        role = next(o for o in identity if o["kind"] == "ClusterRole")
        trimmed = json_tree_copy(role)
        for rule in trimmed["rules"]:
            if rule["apiGroups"] == ["batch"]:
                rule["verbs"] = [v for v in rule["verbs"] if v != "create"]
        await apply_objects(worker, [trimmed])
        gvk, body, ns = worker_queue
        await worker.create(gvk, body, namespace=ns)
        found = await run(manager, all_clusters=True)
        denied = one(found, "multikueue cluster w1: worker identity", Verdict.FAIL)
        assert "may not create jobs.batch" in denied.message
        assert one(found, "multikueue cluster w1: local queues", Verdict.OK)
        assert findings_of(found, "w1: kueue installed"), "--all-clusters runs the worker's own checks"
        assert all(f.clusters[:1] == ("w1",) for f in found if f.check.startswith("w1: "))
    finally:
        for gvk, body, ns in reversed(objects):
            with contextlib.suppress(NotFound):
                await client.delete(gvk, body["metadata"]["name"], namespace=ns)
        with contextlib.suppress(NotFound):
            await worker.delete(LOCAL_QUEUE, "preflight-mk-lq", namespace=namespace)
        await delete_objects(worker, identity)


async def multikueue_controller_name_taken_by_kueue(target: Target) -> None:
    """kueueBridge.multiKueue.controllerName set to Kueue's own MultiKueue: a conflict when Kueue's
    Configuration shows its MultiKueue gate on (by default), a warning when it cannot be read."""
    text = (
        target.config_text + "\nkueueBridge:\n  multiKueue:\n    controllerName: kueue.x-k8s.io/multikueue\n"
    )
    taken = parse_config(text, source="t")
    async with kueue_config_restored(target):
        await publish_kueue_config(target, handed_over(target.config))
        conflict = one(await run(target, taken), "multikueue controller", Verdict.FAIL)
        assert conflict.conflict and "which Kueue's own controller handles" in conflict.message
        assert "its MultiKueue feature gate is on" in conflict.message
        await publish_kueue_config(target, None)
        unknown = one(await run(target, taken), "multikueue controller", Verdict.WARN)
        assert not unknown.conflict and "Kueue's MultiKueue gate is on by default" in unknown.message


async def component_refuses_to_start(
    *, component: str, config_path: Path, kubeconfig: Path, expected: str
) -> None:
    """``kueue-bridge <component>`` exits 1 with one line naming the conflict and its fix."""
    args = [
        sys.executable,
        "-m",
        "kueue_bridge.cli",
        component,
        "--config",
        str(config_path),
        "--kubeconfig",
        str(kubeconfig),
    ]
    if component != "webhook":
        args += ["--probe-address", "127.0.0.1:0"]
    process = await asyncio.create_subprocess_exec(
        *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    stdout, stderr = await asyncio.wait_for(process.communicate(), timeout=120)
    lines = [line for line in stderr.decode().splitlines() if "refusing to start" in line]
    assert process.returncode == 1, (stdout.decode(), stderr.decode())
    assert "Traceback" not in stderr.decode(), stderr.decode()
    assert len(lines) == 1 and lines[0].startswith(f"kueue-bridge {component}: refusing to start: "), (
        stderr.decode()
    )
    assert expected in lines[0] and "; fix: " in lines[0], lines[0]
