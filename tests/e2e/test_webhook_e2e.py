"""The admission webhook end to end: the devcluster calls our server exactly as kube-apiserver would.

Our webhook (``webhook.process.build_webhook``, the wiring ``kueue-bridge webhook`` runs) serves on
a free 127.0.0.1 port with a certificate from ``certs``; its informers watch the devcluster. The
Mutating/ValidatingWebhookConfigurations are rendered by ``shared.webhook_configurations`` (url form) with the
CA injected as ``caBundle``; every assertion is made through the API server.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from certs import CertificateAuthority, KeyPair, generate_ca, issue_serving_cert, write_cert_dir
from shared.config import Configuration, parse_config
from shared.constants import (
    ADMISSION_GATED_BY_ANNOTATION,
    ELASTIC_JOB_ANNOTATION,
    ELASTIC_JOB_SCHEDULING_GATE,
    MULTIKUEUE_CONTROLLER_NAME,
    QUEUE_LABEL,
)
from shared.kube import (
    Forbidden,
    GroupVersionKind,
    KubeClient,
    KubeError,
    NotFound,
    WatchSettings,
    static_connection,
)
from shared.webhook_configurations import render_webhook_configurations
from tests.e2e.conftest import eventually, install_crds, kube_client
from webhook.informer_lookups import (
    ADMISSION_CHECK_GVK,
    CLUSTER_QUEUE_GVK,
    LOCAL_QUEUE_GVK,
    NAMESPACE_GVK,
)
from webhook.process import WebhookProcess, build_webhook
from webhook.registration import register_webhook_configurations
from webhook.serving.tls_server import Listener
from webhook.settings_from_config import settings_from_config

pytestmark = [pytest.mark.e2e, pytest.mark.needs_shared]

JOB = GroupVersionKind("batch", "v1", "Job")
WIDGET = GroupVersionKind("e2e.example.com", "v1", "Widget")
APPWRAPPER = GroupVersionKind("workload.codeflare.dev", "v1beta2", "AppWrapper")
KUEUE_CRDS = ("localqueues", "clusterqueues", "admissionchecks", "workloadpriorityclasses", "resourceflavors")
NS = "team"

CONFIG = """
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-bridge-system
integrations:
  frameworks: [batch/job, workload.codeflare.dev/appwrapper]
  externalFrameworks:
  - name: Widget.v1.e2e.example.com
    resource: widgets
    adapter:
      suspend: {path: spec.suspend}
      managedBy: {path: spec.managedBy}
      podSets:
      - name: main
        template: spec.template
        count: {path: spec.replicas, default: 1}
      finished: "has(object.status) && has(object.status.phase)"
"""

WIDGET_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.e2e.example.com"},
    "spec": {
        "group": "e2e.example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "properties": {
                                    "suspend": {"type": "boolean"},
                                    "managedBy": {"type": "string"},
                                    "replicas": {"type": "integer"},
                                    "template": {
                                        "type": "object",
                                        "x-kubernetes-preserve-unknown-fields": True,
                                    },
                                },
                            },
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}

POD_TEMPLATE = {
    "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
}


def job(name: str, *, queue: str | None = None, suspend: bool | None = None) -> dict[str, Any]:
    labels = {QUEUE_LABEL: queue} if queue else {}
    spec: dict[str, Any] = {"parallelism": 1, "completions": 1, "template": POD_TEMPLATE}
    if suspend is not None:
        spec["suspend"] = suspend
    return {"metadata": {"name": name, "namespace": NS, "labels": labels}, "spec": spec}


def widget(name: str, *, queue: str) -> dict[str, Any]:
    return {
        "apiVersion": "e2e.example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": NS, "labels": {QUEUE_LABEL: queue}},
        "spec": {"replicas": 2, "template": POD_TEMPLATE},
    }


def appwrapper(name: str, *, queue: str) -> dict[str, Any]:
    inner_job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": f"{name}-job"},
        "spec": {"parallelism": 2, "completions": 2, "template": POD_TEMPLATE},
    }
    return {
        "apiVersion": "workload.codeflare.dev/v1beta2",
        "kind": "AppWrapper",
        "metadata": {"name": name, "namespace": NS, "labels": {QUEUE_LABEL: queue}},
        "spec": {"components": [{"template": inner_job}]},
    }


def issue(cert_dir: Path, ca: CertificateAuthority) -> KeyPair:
    pair = issue_serving_cert(ca=ca, dns_names=["localhost"], ip_addresses=["127.0.0.1"])
    write_cert_dir(cert_dir, serving=pair, ca_cert_pem=ca.cert_pem)
    return pair


@dataclass
class Stack:
    client: KubeClient
    webhook: WebhookProcess
    ca: CertificateAuthority
    cert_dir: Path
    url: str


@contextlib.asynccontextmanager
async def running_webhook(
    config: Configuration, *, kubeconfig: Path, cert_dir: Path
) -> AsyncIterator[WebhookProcess]:
    """Our webhook with its own client, as a separate process would have."""
    async with kube_client(kubeconfig) as webhook_client:
        process = build_webhook(
            settings=settings_from_config(config),
            client=webhook_client,
            listener=Listener(cert_dir=cert_dir, host="127.0.0.1", port=0, reload_interval=0.05),
            watch_settings=WatchSettings(backoff_initial=0.05, backoff_max=0.5),
        )
        await process.server.start()
        try:
            yield process
        finally:
            await process.server.stop()


async def register(client: KubeClient, config: Configuration, *, url: str, ca_pem: bytes) -> None:
    documents = render_webhook_configurations(
        settings_from_config(config).frameworks, namespace=config.namespace, url=url
    )
    written = await register_webhook_configurations(client, documents, ca_pem=ca_pem)
    assert written == [
        "MutatingWebhookConfiguration/kueue-bridge-mutating-webhook-configuration",
        "ValidatingWebhookConfiguration/kueue-bridge-validating-webhook-configuration",
    ]
    # idempotent: a second registration replaces them
    assert await register_webhook_configurations(client, documents, ca_pem=ca_pem) == written


async def readyz(url: str, ca: CertificateAuthority) -> httpx.Response:
    context = ssl.create_default_context(cadata=ca.cert_pem.decode())
    async with httpx.AsyncClient(base_url=url, verify=context) as http:
        return await http.get("/readyz")


@pytest.fixture
async def stack(devcluster, shared_dir: Path, tmp_path: Path) -> AsyncIterator[Stack]:
    async with open_stack(devcluster, shared_dir, tmp_path) as opened:
        yield opened


@contextlib.asynccontextmanager
async def open_stack(devcluster, shared_dir: Path, tmp_path: Path) -> AsyncIterator[Stack]:
    config = parse_config(CONFIG, source="e2e")
    ca = generate_ca()
    cert_dir = tmp_path / "certs"
    issue(cert_dir, ca)
    async with kube_client(devcluster.kubeconfig_path) as client:
        await install_crds(
            client,
            [shared_dir / "crds" / "kueue" / f"kueue.x-k8s.io_{name}.yaml" for name in KUEUE_CRDS]
            + [shared_dir / "crds" / "appwrapper" / "workload.codeflare.dev_appwrappers.yaml"],
        )
        await client.create(
            GroupVersionKind("apiextensions.k8s.io", "v1", "CustomResourceDefinition"), WIDGET_CRD
        )
        await client.create(NAMESPACE_GVK, {"metadata": {"name": NS}})
        async with running_webhook(
            config, kubeconfig=devcluster.kubeconfig_path, cert_dir=cert_dir
        ) as process:
            url = f"https://127.0.0.1:{process.server.port}"

            async def ready() -> bool:
                return (await readyz(url, ca)).status_code == 200

            await eventually(ready, what="webhook /readyz 200")
            await register(client, config, url=url, ca_pem=ca.cert_pem)
            yield Stack(client=client, webhook=process, ca=ca, cert_dir=cert_dir, url=url)


async def make_queues(stack: Stack) -> None:
    """lq-mk -> cq-mk (MultiKueue check), lq-other -> cq-other (another controller), lq-plain -> cq-plain."""
    client = stack.client
    await client.create(
        ADMISSION_CHECK_GVK,
        {"metadata": {"name": "mk"}, "spec": {"controllerName": MULTIKUEUE_CONTROLLER_NAME}},
    )
    await client.create(
        ADMISSION_CHECK_GVK,
        {"metadata": {"name": "prov"}, "spec": {"controllerName": "example.com/provisioning"}},
    )
    for suffix, checks in (("mk", ["mk"]), ("other", ["prov"]), ("plain", [])):
        spec: dict[str, Any] = {}
        if checks:
            spec["admissionChecksStrategy"] = {"admissionChecks": [{"name": name} for name in checks]}
        await client.create(CLUSTER_QUEUE_GVK, {"metadata": {"name": f"cq-{suffix}"}, "spec": spec})
        await client.create(
            LOCAL_QUEUE_GVK,
            {"metadata": {"name": f"lq-{suffix}", "namespace": NS}, "spec": {"clusterQueue": f"cq-{suffix}"}},
        )
    lookups = stack.webhook.lookups

    async def cached() -> bool:
        return (
            list(lookups.admission_check_controllers("cq-mk")) == [MULTIKUEUE_CONTROLLER_NAME]
            and all(lookups.cluster_queue_for(NS, f"lq-{s}") for s in ("mk", "other", "plain"))
            and bool(lookups.admission_check_controllers("cq-other"))
        )

    await eventually(cached, what="the webhook's informers to see the queues")


async def test_job_with_queue_name_is_stored_suspended(stack: Stack) -> None:
    created = await stack.client.create(JOB, job("queued", queue="lq-plain", suspend=False))
    assert created["spec"]["suspend"] is True
    stored = await stack.client.get(JOB, "queued", namespace=NS)
    assert stored["spec"]["suspend"] is True
    # without a queue name (manageJobsWithoutQueueName is false) the job is left alone
    free = await stack.client.create(JOB, job("free"))
    assert free["spec"].get("suspend") in (None, False)


async def test_managed_by_defaulted_only_behind_a_multikueue_check(stack: Stack) -> None:
    await make_queues(stack)
    behind = await stack.client.create(JOB, job("behind-mk", queue="lq-mk"))
    assert behind["spec"]["managedBy"] == MULTIKUEUE_CONTROLLER_NAME
    for name, queue in (("other-check", "lq-other"), ("no-check", "lq-plain"), ("missing-lq", "nope")):
        created = await stack.client.create(JOB, job(name, queue=queue))
        assert "managedBy" not in created["spec"], name
        assert created["spec"]["suspend"] is True


async def test_queue_name_change_on_running_job_is_denied(stack: Stack) -> None:
    client = stack.client
    await client.create(JOB, job("running", queue="lq-plain"))
    await client.patch(JOB, "running", {"spec": {"suspend": False}}, namespace=NS)  # Kueue admitted it
    with pytest.raises(Forbidden) as denied:
        await client.patch(JOB, "running", {"metadata": {"labels": {QUEUE_LABEL: "lq-other"}}}, namespace=NS)
    assert denied.value.message == (
        'admission webhook "vjob.batch.kueue-bridge.x-k8s.io" denied the request: '
        f'metadata.labels[{QUEUE_LABEL}]: Invalid value: "lq-other": field is immutable'
    )
    stored = await client.get(JOB, "running", namespace=NS)
    assert stored["metadata"]["labels"][QUEUE_LABEL] == "lq-plain"
    # while suspended the queue may change
    await client.create(JOB, job("waiting", queue="lq-plain"))
    moved = await client.patch(
        JOB, "waiting", {"metadata": {"labels": {QUEUE_LABEL: "lq-other"}}}, namespace=NS
    )
    assert moved["metadata"]["labels"][QUEUE_LABEL] == "lq-other"


async def test_job_whose_owner_is_missing_is_denied_like_kueue(stack: Stack) -> None:
    """Kueue's cached client NotFound, passed through as the denial's Status (404, details)."""
    orphan = job("orphan", queue="lq-plain")
    orphan["metadata"]["ownerReferences"] = [
        {"apiVersion": "batch/v1", "kind": "Job", "name": "ghost", "uid": "0000", "controller": True}
    ]
    with pytest.raises(NotFound) as denied:
        await stack.client.create(JOB, orphan)
    assert denied.value.code == 404
    assert denied.value.message == (
        'admission webhook "mjob.batch.kueue-bridge.x-k8s.io" denied the request: Job.batch "ghost" not found'
    )
    assert dict(denied.value.details) == {"name": "ghost", "group": "batch", "kind": "Job"}


async def test_elastic_job_is_gated_and_admission_gates_can_only_be_removed(stack: Stack) -> None:
    client = stack.client
    elastic = job("elastic", queue="lq-plain")
    elastic["metadata"]["annotations"] = {ELASTIC_JOB_ANNOTATION: "true"}
    created = await client.create(JOB, elastic)
    assert created["spec"]["template"]["spec"]["schedulingGates"] == [{"name": ELASTIC_JOB_SCHEDULING_GATE}]

    gated = job("gated", queue="lq-plain")
    gated["metadata"]["annotations"] = {ADMISSION_GATED_BY_ANNOTATION: "example.com/a, example.com/b"}
    await client.create(JOB, gated)
    path = f"metadata.annotations[{ADMISSION_GATED_BY_ANNOTATION}]"
    with pytest.raises(Forbidden) as denied:
        await client.patch(
            JOB,
            "gated",
            {"metadata": {"annotations": {ADMISSION_GATED_BY_ANNOTATION: "example.com/c"}}},
            namespace=NS,
        )
    assert denied.value.message == (
        'admission webhook "vjob.batch.kueue-bridge.x-k8s.io" denied the request: '
        f"{path}: Forbidden: can only remove gates, not add new ones"
    )
    opened = await client.patch(
        JOB,
        "gated",
        {"metadata": {"annotations": {ADMISSION_GATED_BY_ANNOTATION: "example.com/b"}}},
        namespace=NS,
    )
    assert opened["metadata"]["annotations"][ADMISSION_GATED_BY_ANNOTATION] == "example.com/b"
    bad = job("bad-gate", queue="lq-plain")
    bad["metadata"]["annotations"] = {ADMISSION_GATED_BY_ANNOTATION: "no-domain"}
    with pytest.raises(Forbidden) as malformed:
        await client.create(JOB, bad)
    assert "must be a domain-prefixed path" in malformed.value.message


async def test_declarative_crd_is_suspended_defaulted_and_validated(stack: Stack) -> None:
    await make_queues(stack)
    client = stack.client
    plain = await client.create(WIDGET, widget("w-plain", queue="lq-plain"))
    assert plain["spec"]["suspend"] is True
    assert "managedBy" not in plain["spec"]
    behind = await client.create(WIDGET, widget("w-mk", queue="lq-mk"))
    assert behind["spec"] == {**behind["spec"], "suspend": True, "managedBy": MULTIKUEUE_CONTROLLER_NAME}
    await client.patch(WIDGET, "w-plain", {"spec": {"suspend": False}}, namespace=NS)
    with pytest.raises(Forbidden) as denied:
        await client.patch(WIDGET, "w-plain", {"metadata": {"labels": {QUEUE_LABEL: "lq-mk"}}}, namespace=NS)
    assert 'admission webhook "vwidget.e2e.example.com.kueue-bridge.x-k8s.io" denied the request' in str(
        denied.value
    )
    assert "field is immutable" in str(denied.value)


async def test_appwrapper_is_suspended_and_defaulted(stack: Stack) -> None:
    await make_queues(stack)
    client = stack.client
    plain = await client.create(APPWRAPPER, appwrapper("aw-plain", queue="lq-plain"))
    assert plain["spec"]["suspend"] is True
    assert "managedBy" not in plain["spec"]
    behind = await client.create(APPWRAPPER, appwrapper("aw-mk", queue="lq-mk"))
    assert behind["spec"]["suspend"] is True
    assert behind["spec"]["managedBy"] == MULTIKUEUE_CONTROLLER_NAME
    await client.patch(APPWRAPPER, "aw-plain", {"spec": {"suspend": False}}, namespace=NS)
    with pytest.raises(Forbidden) as denied:
        await client.patch(
            APPWRAPPER, "aw-plain", {"metadata": {"labels": {QUEUE_LABEL: "lq-mk"}}}, namespace=NS
        )
    assert "field is immutable" in str(denied.value)


RBAC_GVKS = {
    kind: GroupVersionKind("rbac.authorization.k8s.io", "v1", kind)
    for kind in ("Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding")
}


async def test_appwrapper_wrapping_what_its_creator_may_not_create_is_denied(
    devcluster_factory, shared_dir: Path, tmp_path: Path
) -> None:
    """A SubjectAccessReview per wrapped component, for the user in ``request.userInfo``, answered
    by the devcluster from RBAC: alice may create AppWrappers and Jobs in the namespace, not ConfigMaps."""
    alice = {"username": "alice", "uid": "alice-uid", "groups": ["system:authenticated"]}
    cluster = devcluster_factory(extra_tokens={"alice-token": alice})
    async with open_stack(cluster, shared_dir, tmp_path) as opened:
        admin = opened.client
        await admin.create(
            RBAC_GVKS["Role"],
            {
                "metadata": {"name": "wrapper-user", "namespace": NS},
                "rules": [
                    {
                        "apiGroups": ["workload.codeflare.dev"],
                        "resources": ["appwrappers"],
                        "verbs": ["create"],
                    },
                    {"apiGroups": ["batch"], "resources": ["jobs"], "verbs": ["create"]},
                ],
            },
        )
        await admin.create(
            RBAC_GVKS["RoleBinding"],
            {
                "metadata": {"name": "alice", "namespace": NS},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "wrapper-user"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}],
            },
        )
        context = ssl.create_default_context(cafile=str(cluster.ca_file))
        alice_client = KubeClient.from_connection(
            static_connection(cluster.url, token="alice-token", ssl_context=context)
        )
        try:
            allowed = await alice_client.create(APPWRAPPER, appwrapper("jobs-only", queue="lq-plain"))
            assert allowed["spec"]["suspend"] is True
            labels = allowed["metadata"]["labels"]
            assert (labels["workload.codeflare.dev/user"], labels["workload.codeflare.dev/userid"]) == (
                "alice",
                "alice-uid",
            )
            with_config_map = appwrapper("with-config", queue="lq-plain")
            with_config_map["spec"]["components"].append(
                {
                    "template": {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": "cfg"},
                        "data": {},
                    }
                }
            )
            with pytest.raises(Forbidden) as denied:
                await alice_client.create(APPWRAPPER, with_config_map)
            assert denied.value.message == (
                'admission webhook "vappwrapper.workload.codeflare.dev.kueue-bridge.x-k8s.io" denied the request: spec.components[1].template: '
                "Forbidden: User alice is not authorized to create configmaps in team"
            ), denied.value.message
        finally:
            await alice_client.aclose()
        assert (await admin.create(APPWRAPPER, with_config_map))["metadata"]["name"] == "with-config"
        unserved = appwrapper("unserved", queue="lq-plain")
        unserved["spec"]["components"].append(
            {"template": {"apiVersion": "e2e.example.com/v1", "kind": "Gadget", "metadata": {"name": "g"}}}
        )
        with pytest.raises(KubeError) as refused:
            await admin.create(APPWRAPPER, unserved)
        assert 'spec.components[1].template.kind: Invalid value: "Gadget": no resource is served for ' in str(
            refused.value
        )


async def test_certificate_rotated_mid_run_causes_zero_failed_admissions(stack: Stack) -> None:
    reloader = stack.webhook.server.reloader
    first = reloader.current
    failures: list[str] = []
    created = 0
    stop = asyncio.Event()

    async def create_jobs(worker: int) -> None:
        nonlocal created
        sequence = 0
        while not stop.is_set():
            sequence += 1
            try:
                obj = await stack.client.create(JOB, job(f"rot-{worker}-{sequence}", queue="lq-plain"))
                if obj["spec"].get("suspend") is not True:
                    failures.append(f"{obj['metadata']['name']} not suspended")
            except KubeError as exc:
                failures.append(repr(exc))
            created += 1

    loop = asyncio.get_running_loop()
    workers = [asyncio.create_task(create_jobs(worker)) for worker in range(3)]
    try:
        for _ in range(3):
            before = created
            pair = issue(stack.cert_dir, stack.ca)
            deadline = loop.time() + 20
            while reloader.current != pair:
                assert loop.time() < deadline, "the rotated certificate was not put in service"
                await asyncio.sleep(0.01)
            while created < before + 20:
                assert loop.time() < deadline, "admissions stalled after a rotation"
                await asyncio.sleep(0.01)
    finally:
        stop.set()
        await asyncio.gather(*workers)
    assert reloader.current != first
    assert reloader.reloads == 4
    assert failures == []
    assert created >= 60


async def test_readyz_waits_for_kueue_crds(devcluster, shared_dir: Path, tmp_path: Path) -> None:
    """Kueue not installed yet: the informers retry, /readyz is 503 until the CRDs exist."""
    config = parse_config(CONFIG, source="e2e")
    ca = generate_ca()
    issue(tmp_path, ca)
    async with (
        kube_client(devcluster.kubeconfig_path) as client,
        running_webhook(config, kubeconfig=devcluster.kubeconfig_path, cert_dir=tmp_path) as process,
    ):
        url = f"https://127.0.0.1:{process.server.port}"

        async def namespaces_listed() -> bool:
            return process.lookups.namespaces.has_synced

        await eventually(namespaces_listed, what="the Namespace informer to sync")
        response = await readyz(url, ca)
        assert (response.status_code, response.text) == (503, "not ready: caches")
        assert "kueue.x-k8s.io/v1beta2, Kind=LocalQueue" in process.lookups.unsynced()
        # AppWrapper and Widget CRDs stay absent: no object of them can exist, they do not block
        await install_crds(
            client, [shared_dir / "crds" / "kueue" / f"kueue.x-k8s.io_{name}.yaml" for name in KUEUE_CRDS]
        )

        async def ready() -> bool:
            return (await readyz(url, ca)).status_code == 200

        await eventually(ready, what="/readyz 200 after the Kueue CRDs were installed")
