"""The rendered and the release manifests apply on the real cluster, and the components work with them.

On a cluster of the kit (Kueue in external-framework mode for the kinds of
``deploy/appwrapper/config.yaml``: batch Jobs and AppWrappers):

1. ``kueue-bridge manifests --config deploy/appwrapper/config.yaml`` and the three bundles of
   ``make release-manifests`` are clean under ``kubectl apply --server-side --dry-run=server``;
2. the rendered manifests are applied for real, and every component runs as a process **with the
   identity the manifests grant it**: a ServiceAccount token (TokenRequest) in its kubeconfig, so
   the real RBAC authorizer decides every request. There are no pods here (no kubelet), so this is
   as close to the Deployments as the kit goes: the same configuration (only addresses and the
   certificate folder made local), the same ServiceAccounts, the same Roles.

   * the webhook, with internal certificate management, writes its certificate into its Secret,
     registers both webhook configurations with its CA and becomes ready (its informers list
     everything it reads);
   * the reconciler turns a queued Job into a Workload that Kueue admits, and starts the Job;
   * the reconciler and the AppWrapper controller run an AppWrapper: Workload, admission, the
     wrapped ConfigMap created;
   * MultiKueue takes its Lease and becomes ready (its caches list the MultiKueue objects, the
     Workloads, the jobs and its namespace's Secrets);
   * preflight finds every ServiceAccount's rights granted and the webhooks' Service without a
     ready endpoint (no pods here);
   * no component logs a Forbidden answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import re
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import pytest_asyncio
import yaml

from bridge_tools.manifests.cli import dump_documents
from bridge_tools.manifests.release_bundle import build_bundles
from bridge_tools.manifests.render import RenderOptions, render_manifests
from devrun import free_port
from devrun.identities import service_account_kubeconfig, write_kubeconfig
from shared.component_access import service_account_name
from shared.config import load_config
from shared.constants import QUEUE_LABEL
from shared.kube import GroupVersionKind, KubeClient, KubeError, NotFound, load_kubeconfig
from shared.preflight import Verdict, run_preflight
from shared.webhook_configurations import render_webhook_configurations
from testkit.real_cluster import RealCluster
from tests.e2e.conftest import install_crds, wait_served
from tests.polling import eventually
from webhook.settings_from_config import settings_from_config

pytestmark = pytest.mark.asyncio(loop_scope="session")

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "deploy" / "appwrapper" / "config.yaml"
NAMESPACE = "kueue-bridge-system"
JOB = GroupVersionKind("batch", "v1", "Job")
APPWRAPPER = GroupVersionKind("workload.codeflare.dev", "v1beta2", "AppWrapper")
WORKLOAD = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "Workload")
FLAVOR = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "ResourceFlavor")
CLUSTER_QUEUE = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "ClusterQueue")
LOCAL_QUEUE = GroupVersionKind("kueue.x-k8s.io", "v1beta2", "LocalQueue")
SECRET = GroupVersionKind("", "v1", "Secret")
CONFIG_MAP = GroupVersionKind("", "v1", "ConfigMap")
MUTATING = GroupVersionKind("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration")
VALIDATING = GroupVersionKind("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration")
NAMESPACE_GVK = GroupVersionKind("", "v1", "Namespace")
WORK = "manifests-work"


def rendered() -> list[dict[str, Any]]:
    return render_manifests(
        load_config(CONFIG), options=RenderOptions(config_text=CONFIG.read_text(), image="kueue-bridge:0.1.0")
    )


def webhook_configurations() -> list[dict[str, Any]]:
    """What the webhook registers once it serves (``--register-configurations``)."""
    config = load_config(CONFIG)
    return render_webhook_configurations(
        settings_from_config(config).frameworks,
        namespace=config.namespace,
        service=config.internal_cert_management.webhook_service_name,
    )


@dataclass
class Deployed:
    cluster: RealCluster
    client: KubeClient


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def deployed(
    start_real_cluster: Callable[..., RealCluster], kueue_version: str, shared_dir: Path
) -> AsyncIterator[Deployed]:
    cluster = start_real_cluster(
        f"manifests-{kueue_version}",
        kueue_version=kueue_version,
        external_frameworks=("Job.v1.batch", "AppWrapper.v1beta2.workload.codeflare.dev"),
    )
    async with KubeClient.from_connection(load_kubeconfig(cluster.kubeconfig)) as client:
        await install_crds(client, sorted((shared_dir / "crds" / "appwrapper").glob("*.yaml")))
        await wait_served(client, [APPWRAPPER])
        yield Deployed(cluster=cluster, client=client)


def _kubectl_apply(cluster: RealCluster, text: str, *, dry_run: bool) -> str:
    args = ["apply", "--server-side", "--field-manager=manifests-test", "-f", "-"]
    if dry_run:
        args.append("--dry-run=server")
    return cluster.kubectl(*args, input_text=text)


async def test_rendered_and_release_manifests_are_clean_in_a_server_side_dry_run(deployed: Deployed) -> None:
    cluster = deployed.cluster
    # a dry run creates nothing, so the namespaced objects need their namespace to exist already
    await asyncio.to_thread(
        _kubectl_apply,
        cluster,
        dump_documents([o for o in rendered() if o["kind"] == "Namespace"]),
        dry_run=False,
    )
    documents = {"kueue-bridge manifests": dump_documents(rendered())}
    for stem, objects in build_bundles(REPO / "deploy", image="kueue-bridge:0.1.0").items():
        documents[stem] = dump_documents(objects)
    for name, text in documents.items():
        output = await asyncio.to_thread(_kubectl_apply, cluster, text, dry_run=True)
        lines = output.strip().splitlines()
        assert lines and all(line.endswith("serverside-applied (server dry run)") for line in lines), (
            name,
            output,
        )
        assert len(lines) == text.count("\nkind: ") + text.startswith("kind: "), (name, output)


def local_config(folder: Path) -> tuple[Path, int]:
    """The rendered configuration with local addresses and certificate folder; (file, webhook port)."""
    document = yaml.safe_load(CONFIG.read_text())
    port = free_port()
    document["webhook"] = {"host": "127.0.0.1", "port": port, "certDir": str(folder / "certs")}
    document["health"] = {"healthProbeBindAddress": "127.0.0.1:0"}
    document["metrics"] = {"bindAddress": "0"}
    path = folder / "config.yaml"
    path.write_text(yaml.safe_dump(document))
    return path, port


@contextlib.contextmanager
def component(args: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "kueue_bridge.cli", *args], stdout=out, stderr=subprocess.STDOUT
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _log(path: Path) -> str:
    return path.read_text(errors="replace")


def _probe_port(log: Path) -> int | None:
    match = re.search(r'probes and metrics listening.*?\bport"?[=:] ?(\d+)', log.read_text(errors="replace"))
    return int(match.group(1)) if match else None


async def _ok(url: str, *, verify: ssl.SSLContext | bool = True) -> bool:
    try:
        async with httpx.AsyncClient(verify=verify, timeout=5) as http:
            return (await http.get(url)).status_code == 200
    except httpx.HTTPError:
        return False


async def _ready_controller(process: subprocess.Popen[bytes], log: Path) -> None:
    async def ready() -> bool:
        assert process.poll() is None, _log(log)
        port = _probe_port(log)
        return port is not None and await _ok(f"http://127.0.0.1:{port}/readyz")

    try:
        await eventually(ready, what=f"{log.stem} ready", within_seconds=120)
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{_log(log)[-4000:]}") from None


async def _identity(deployed: Deployed, folder: Path, identity: Any) -> Path:
    document = await service_account_kubeconfig(
        deployed.client,
        admin_kubeconfig=deployed.cluster.kubeconfig,
        namespace=NAMESPACE,
        name=service_account_name(identity),
    )
    return write_kubeconfig(folder / f"{identity}.kubeconfig", document)


def _forbidden(log: Path) -> list[str]:
    return [
        line
        for line in log.read_text(errors="replace").splitlines()
        if "Forbidden" in line or "forbidden" in line
    ]


async def test_the_components_work_with_the_identities_the_manifests_grant(
    deployed: Deployed, tmp_path: Path
) -> None:
    client, cluster = deployed.client, deployed.cluster
    await asyncio.to_thread(_kubectl_apply, cluster, dump_documents(rendered()), dry_run=False)
    config, webhook_port = local_config(tmp_path)
    logs = {name: tmp_path / f"{name}.log" for name in ("webhook", "reconciler", "appwrapper", "multikueue")}

    # the webhook: its certificate into its Secret, the caBundle into both configurations, ready
    webhook_kubeconfig = await _identity(deployed, tmp_path, "webhook")
    webhook_args = [
        "webhook",
        "--config",
        str(config),
        "--kubeconfig",
        str(webhook_kubeconfig),
        *("--register-configurations", "--configurations-owner", "kueue-bridge-webhook"),
    ]
    with component(webhook_args, logs["webhook"]) as webhook:

        async def webhook_ready() -> bool:
            assert webhook.poll() is None, _log(logs["webhook"])
            return await _ok(f"https://127.0.0.1:{webhook_port}/readyz", verify=False)

        try:
            await eventually(webhook_ready, what="the webhook ready", within_seconds=120)
        except AssertionError as exc:
            lines = [
                line for line in _log(logs["webhook"]).splitlines() if "waiting for certificate" not in line
            ]
            raise AssertionError(f"{exc}\n" + "\n".join(lines[-60:])) from None
        secret = await client.get(SECRET, "kueue-bridge-webhook-server-cert", namespace=NAMESPACE)
        assert {"tls.crt", "tls.key", "ca.crt"} <= set(secret.get("data") or {})
        # registered by the webhook itself once it serves, with its CA, owned by its ClusterRole
        for gvk, name in (
            (MUTATING, "kueue-bridge-mutating-webhook-configuration"),
            (VALIDATING, "kueue-bridge-validating-webhook-configuration"),
        ):

            async def injected(gvk: GroupVersionKind = gvk, name: str = name) -> bool:
                try:
                    registered = await client.get(gvk, name)
                except NotFound:
                    return False
                (owner,) = registered["metadata"]["ownerReferences"]
                assert (owner["kind"], owner["name"]) == ("ClusterRole", "kueue-bridge-webhook")
                hooks = registered["webhooks"]
                return all(h["clientConfig"].get("caBundle") == secret["data"]["ca.crt"] for h in hooks)

            await eventually(injected, what=f"the caBundle in {name}", within_seconds=60)
    assert not _forbidden(logs["webhook"]), _forbidden(logs["webhook"])
    await _preflight_sees_the_deployment(client)
    # nothing here reaches the webhook's Service (no cluster network): take its configurations out
    # before creating jobs, which then arrive suspended as the webhook would have left them
    await client.delete(MUTATING, "kueue-bridge-mutating-webhook-configuration")
    await client.delete(VALIDATING, "kueue-bridge-validating-webhook-configuration")

    await client.apply(NAMESPACE_GVK, {"metadata": {"name": WORK}}, field_manager="test", force=True)
    await _queues(client)
    kubeconfigs = {
        name: await _identity(deployed, tmp_path, name) for name in ("reconciler", "appwrapper", "multikueue")
    }
    with contextlib.ExitStack() as stack:
        processes = {
            name: stack.enter_context(
                component(
                    [
                        name,
                        "--config",
                        str(config),
                        "--kubeconfig",
                        str(kubeconfigs[name]),
                        "--probe-address",
                        "127.0.0.1:0",
                        "--identity",
                        f"{name}-test",
                    ],
                    logs[name],
                )
            )
            for name in ("reconciler", "appwrapper", "multikueue")
        }
        for name, process in processes.items():
            await _ready_controller(process, logs[name])
        await _a_job_runs(client)
        await _an_appwrapper_runs(client)
        await _the_reconciler_starts_a_job_the_validating_webhook_cannot_see(client)
    for name in ("reconciler", "appwrapper", "multikueue"):
        assert not _forbidden(logs[name]), (name, _forbidden(logs[name]))


async def _preflight_sees_the_deployment(client: KubeClient) -> None:
    """Preflight on what the manifests deployed: every ServiceAccount has its rights (the real RBAC
    authorizer answers), the webhooks cover the kinds, and their Service has no ready endpoint (no
    pods here), which the API server confirms when it cannot call them."""
    report = await run_preflight(client, load_config(CONFIG), now=dt.datetime.now(dt.UTC))
    found = {f.check: f for f in report.findings}
    for identity in ("webhook", "reconciler", "multikueue", "appwrapper"):
        rbac = found[f"rbac {identity} ({NAMESPACE}/kueue-bridge-{identity})"]
        assert rbac.verdict is Verdict.OK, rbac
    for name in (
        "kueue-bridge-mutating-webhook-configuration",
        "kueue-bridge-validating-webhook-configuration",
    ):
        assert found[f"webhooks {name}"].verdict is Verdict.OK, found[f"webhooks {name}"]
    endpoint = found[f"webhook endpoint service:{NAMESPACE}/kueue-bridge-webhook-service:443"]
    assert endpoint.verdict is Verdict.FAIL
    assert endpoint.message == (
        f"Service {NAMESPACE}/kueue-bridge-webhook-service has no ready endpoint: the API server cannot reach the webhook"
    )


async def _queues(client: KubeClient) -> None:
    await client.apply(FLAVOR, {"metadata": {"name": "default-flavor"}}, field_manager="test", force=True)
    await client.apply(
        CLUSTER_QUEUE,
        {
            "metadata": {"name": "manifests-cq"},
            "spec": {
                "namespaceSelector": {},
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [
                            {"name": "default-flavor", "resources": [{"name": "cpu", "nominalQuota": "8"}]}
                        ],
                    }
                ],
            },
        },
        field_manager="test",
        force=True,
    )
    await _local_queue(client, "q")


async def _local_queue(client: KubeClient, name: str) -> None:
    await client.apply(
        LOCAL_QUEUE,
        {"metadata": {"name": name, "namespace": WORK}, "spec": {"clusterQueue": "manifests-cq"}},
        namespace=WORK,
        field_manager="test",
        force=True,
    )


def _container() -> dict[str, Any]:
    return {"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "1"}}}


async def _create_queued_job(client: KubeClient, name: str, *, queue: str) -> None:
    job = {
        "metadata": {"name": name, "labels": {QUEUE_LABEL: queue}},
        "spec": {
            "suspend": True,
            "template": {"spec": {"restartPolicy": "Never", "containers": [_container()]}},
        },
    }
    await client.create(JOB, job, namespace=WORK)


async def _wait_started(client: KubeClient, name: str, *, what: str) -> None:
    async def started() -> bool:
        return (await client.get(JOB, name, namespace=WORK))["spec"].get("suspend") is False

    await eventually(started, what=what, within_seconds=90)


async def _a_job_runs(client: KubeClient) -> None:
    await _create_queued_job(client, "queued", queue="q")
    await _wait_started(client, "queued", what="the reconciler (its ServiceAccount) starts the admitted Job")


async def _the_reconciler_starts_a_job_the_validating_webhook_cannot_see(client: KubeClient) -> None:
    """Our validating webhook configuration back in force, its Service unreachable (no pods here), with
    ``failurePolicy: Fail``: the reconciler still starts an admitted Job, because its own updates are
    left out by the configuration's match condition (``shared.webhook_configurations``), which only
    the API server evaluates; anyone else's update of the Job is refused."""
    # a LocalQueue that does not exist yet: the Workload waits until the configuration is back
    await _create_queued_job(client, "started-unseen", queue="later")
    (validating,) = [d for d in webhook_configurations() if d["kind"] == "ValidatingWebhookConfiguration"]
    await client.create(VALIDATING, validating)
    try:
        await _local_queue(client, "later")
        await _wait_started(
            client, "started-unseen", what="the reconciler starts the Job past the unreachable webhook"
        )
        with pytest.raises(KubeError) as refused:
            await client.patch(
                JOB, "started-unseen", {"metadata": {"labels": {"touched": "yes"}}}, namespace=WORK
            )
        assert 'failed calling webhook "vjob.batch.kueue-bridge.x-k8s.io"' in str(refused.value)
    finally:
        await client.delete(VALIDATING, validating["metadata"]["name"])


async def _an_appwrapper_runs(client: KubeClient) -> None:
    wrapped = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "wrapped"}, "data": {"k": "v"}}
    appwrapper = {
        "metadata": {"name": "wrapper", "labels": {QUEUE_LABEL: "q"}},
        "spec": {
            "suspend": True,
            "components": [
                {"template": wrapped},
                {
                    "template": {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "metadata": {"name": "wrapped-job"},
                        "spec": {
                            "template": {"spec": {"restartPolicy": "Never", "containers": [_container()]}}
                        },
                    }
                },
            ],
        },
    }
    await client.create(APPWRAPPER, appwrapper, namespace=WORK)

    async def created() -> bool:
        try:
            await client.get(CONFIG_MAP, "wrapped", namespace=WORK)
        except NotFound:
            return False
        return True

    await eventually(
        created,
        what="the AppWrapper controller (its ServiceAccount) creates what it wraps",
        within_seconds=90,
    )
